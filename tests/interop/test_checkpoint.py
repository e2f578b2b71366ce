"""Training-checkpoint migration without torch: PyTorch-shaped state dicts (numpy arrays) →
Burn Learner checkpoint records → back, checked against Burn's record layouts (records.md
§2, §3, §5)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from burnpack import Scalar
from burnpack.interop.checkpoint import burn_checkpoint_to_pytorch, pytorch_to_burn_checkpoint
from burnpack.errors import ConversionError, OutputExistsError
from burnpack.records import (
    AdamState,
    Checkpoints,
    CosineAnnealingLrScheduler,
    LrSchedulerRecord,
    ModuleLrScheduler,
    ModuleRecord,
    OptimizerRecord,
    SgdState,
)

RNG = np.random.default_rng(5)
U64_MAX = 2**64 - 1
TYPES = {"emb": "Embedding"}  # the one module whose type cannot be inferred


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model_sd():
    return {
        "emb.weight": r(5, 3),
        "fc.weight": r(2, 3),
        "fc.bias": r(2),
        "bn.weight": r(2),
        "bn.bias": r(2),
        "bn.running_mean": r(2),
        "bn.running_var": np.abs(r(2)),
        "bn.num_batches_tracked": np.array(4, np.int64),
        "ln.weight": r(2),
        "ln.bias": r(2),
    }


PARAMS = ["emb.weight", "fc.weight", "fc.bias", "bn.weight", "bn.bias", "ln.weight", "ln.bias"]


def adam_sd(model, steps=4, amsgrad=False):
    state = {}
    for i, name in enumerate(PARAMS):
        s = {"step": np.array(float(steps), np.float32), "exp_avg": r(*model[name].shape), "exp_avg_sq": np.abs(r(*model[name].shape))}
        if amsgrad:
            s["max_exp_avg_sq"] = np.abs(r(*model[name].shape))
        state[i] = s
    group = {"lr": 0.0007, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "amsgrad": amsgrad, "maximize": False,
             "foreach": None, "capturable": False, "differentiable": False, "fused": None, "decoupled_weight_decay": False,
             "initial_lr": 0.001, "params": list(range(len(PARAMS)))}  # fmt: skip
    return {"state": state, "param_groups": [group]}


def cosine_sd(k=4, t_max=10):
    return {"T_max": t_max, "eta_min": 0.0, "base_lrs": [0.001], "last_epoch": k, "_step_count": k + 1, "_is_initial": False,
            "_get_lr_called_within_step": False, "_last_lr": [0.0007]}  # fmt: skip


def checkpoint(**parts):
    model = model_sd()
    ck = {"model": model, "optimizer": adam_sd(model), "scheduler": cosine_sd(), "epoch": 4}
    ck.update(parts)
    return ck


def by_name(ck):
    """The optimizer state keyed by parameter name, as torch's ``get_state_dict`` gives it."""
    names = ck["optimizer"]["param_groups"][0]["params"] = list(PARAMS)
    ck["optimizer"]["state"] = {names[i]: s for i, s in ck["optimizer"]["state"].items()}
    return ck


def same(a, b):
    """Deep equality where arrays must match in dtype, shape and bytes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


def test_checkpoint_becomes_the_three_learner_records(tmp_path):
    report = pytorch_to_burn_checkpoint(checkpoint(), tmp_path / "checkpoint", module_types=TYPES, seed=1)
    assert report.epoch == 4
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == ["model-4.bpk", "optim-4.bpk", "scheduler-4.bpk"]
    assert Checkpoints(tmp_path).latest() == 4


def test_model_record_has_burn_names_layouts_and_ids(tmp_path):
    ck = checkpoint()
    pytorch_to_burn_checkpoint(ck, tmp_path, module_types=TYPES, seed=1)
    model = ModuleRecord.load(tmp_path / "model-4.bpk")
    assert model.paths == ["emb.weight", "fc.weight", "fc.bias", "bn.gamma", "bn.beta", "bn.running_mean", "bn.running_var", "ln.gamma", "ln.beta"]
    np.testing.assert_array_equal(model["fc.weight"].numpy(), ck["model"]["fc.weight"].T)
    np.testing.assert_array_equal(model["emb.weight"].numpy(), ck["model"]["emb.weight"])
    ids = list(model.param_ids.values())
    assert None not in ids and len(set(ids)) == len(ids)


def test_adam_state_maps_to_burns_adaptive_momentum_state(tmp_path):
    ck = checkpoint()
    pytorch_to_burn_checkpoint(ck, tmp_path, module_types=TYPES, seed=1)
    model = ModuleRecord.load(tmp_path / "model-4.bpk")
    optim = OptimizerRecord.load(tmp_path / "optim-4.bpk")
    assert optim.check(model).ok
    ids = model.param_ids
    fc = optim.state(ids["fc.weight"])
    assert isinstance(fc, AdamState) and fc.time == 4 and fc.max_moment_2 is None
    torch_state = ck["optimizer"]["state"][PARAMS.index("fc.weight")]
    np.testing.assert_array_equal(fc.moment_1, torch_state["exp_avg"].T)  # transposed with its Linear weight
    np.testing.assert_array_equal(fc.moment_2, torch_state["exp_avg_sq"].T)
    assert optim.scalars[f"{ids['fc.weight']}.momentum.time"] == Scalar.UInt(4)
    assert optim.scalars[f"{ids['fc.weight']}.__rank"] == Scalar.UInt(2)
    assert optim.paths[ids["bn.gamma"]] == "bn.gamma"
    assert ids["bn.running_mean"] not in optim.param_ids  # buffers have no optimizer state
    assert optim.step == 4


def test_amsgrad_state_keeps_max_moment_2(tmp_path):
    model = model_sd()
    pytorch_to_burn_checkpoint(checkpoint(optimizer=adam_sd(model, amsgrad=True), model=model), tmp_path, module_types=TYPES)
    optim = OptimizerRecord.load(tmp_path / "optim-4.bpk")
    assert all(s.max_moment_2 is not None for s in optim.states().values())


def test_sgd_momentum_buffer_becomes_velocity(tmp_path):
    model = model_sd()
    sgd = {"state": {i: {"momentum_buffer": r(*model[n].shape)} for i, n in enumerate(PARAMS)},
           "param_groups": [{"lr": 0.1, "momentum": 0.9, "dampening": 0, "weight_decay": 0, "nesterov": False, "maximize": False,
                             "foreach": None, "differentiable": False, "fused": None, "params": list(range(len(PARAMS)))}]}  # fmt: skip
    report = pytorch_to_burn_checkpoint(checkpoint(model=model, optimizer=sgd), tmp_path, module_types=TYPES)
    assert report.optimizer == "SGD" and report.step is None
    record = ModuleRecord.load(tmp_path / "model-4.bpk")
    state = OptimizerRecord.load(tmp_path / "optim-4.bpk").state(record.param_ids["fc.weight"])
    assert isinstance(state, SgdState)
    np.testing.assert_array_equal(state.velocity, sgd["state"][1]["momentum_buffer"].T)
    assert "MomentumConfig { momentum: 0.9" in report.burn_configs[0]


def test_sgd_without_momentum_has_no_state_to_carry(tmp_path):
    sgd = {"state": {}, "param_groups": [{"lr": 0.1, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False, "params": list(range(7))}]}
    report = pytorch_to_burn_checkpoint(checkpoint(optimizer=sgd), tmp_path, module_types=TYPES)
    assert report.params_with_state == 0 and OptimizerRecord.load(tmp_path / "optim-4.bpk").is_empty()


@pytest.mark.parametrize(
    "sd, key, value",
    [
        (cosine_sd(k=0), "0.current_iter", Scalar.UInt(U64_MAX)),
        (cosine_sd(k=4), "0.current_iter", Scalar.UInt(3)),
        ({"start_factor": 0.5, "end_factor": 1.0, "total_iters": 5, "base_lrs": [0.1], "last_epoch": 2}, "0.remaining_iters", Scalar.UInt(4)),
        ({"start_factor": 0.5, "end_factor": 1.0, "total_iters": 5, "base_lrs": [0.1], "last_epoch": 9}, "0.remaining_iters", Scalar.UInt(0)),
        ({"step_size": 3, "gamma": 0.5, "base_lrs": [0.1], "last_epoch": 0}, "0.iter_idx", Scalar.Int(-1)),
        ({"step_size": 3, "gamma": 0.5, "base_lrs": [0.1], "last_epoch": 7}, "0.iter_idx", Scalar.Int(6)),
        ({"gamma": 0.9, "base_lrs": [0.1], "last_epoch": 3, "_last_lr": [0.1 * 0.9 * 0.9 * 0.9]}, "0.previous_lr", Scalar.Float(0.1 * 0.9 * 0.9)),
        ({"gamma": 0.9, "base_lrs": [0.1], "last_epoch": 0, "_last_lr": [0.1]}, "0.previous_lr", Scalar.Float(0.1 / 0.9)),
    ],
)
def test_scheduler_position_maps_to_burns_scalar(tmp_path, sd, key, value):
    pytorch_to_burn_checkpoint(checkpoint(scheduler=sd), tmp_path, module_types=TYPES)
    assert LrSchedulerRecord.load(tmp_path / "scheduler-4.bpk").scalars == {key: value}


def test_no_scheduler_is_a_constant_learning_rate(tmp_path):
    ck = checkpoint()
    del ck["scheduler"]
    report = pytorch_to_burn_checkpoint(ck, tmp_path, module_types=TYPES)
    assert (tmp_path / "scheduler-4.bpk").stat().st_size == 256 and report.scheduler == "constant"


def test_round_trip_back_to_pytorch_is_exact(tmp_path):
    ck = checkpoint()
    original = copy.deepcopy(ck)
    pytorch_to_burn_checkpoint(ck, tmp_path, module_types=TYPES)
    state, report = burn_checkpoint_to_pytorch(tmp_path)
    assert same(state.model, original["model"])
    assert list(state.model) == list(original["model"])
    assert same(state.optimizer, original["optimizer"])
    assert same(state.scheduler, original["scheduler"])
    assert state.extra == {"epoch": 4}
    assert not report.warnings


def test_torch_only_settings_live_in_optim_metadata_that_burn_ignores(tmp_path):
    pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES)
    optim = OptimizerRecord.load(tmp_path / "optim-4.bpk")
    extras = {k for k in optim.metadata if not k.isdigit()}
    assert extras == {"torch.format", "torch.model", "torch.optimizer", "torch.scheduler", "torch.extra", "torch.keys"}
    assert json.loads(optim.metadata["torch.model"])["dropped"] == {"bn.num_batches_tracked": {"dtype": "int64", "value": 4}}
    assert set(optim.paths) == set(optim.param_ids)  # numeric keys are exactly Burn's id -> path map


def test_burn_trained_further_converts_back_from_burns_state(tmp_path):
    pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES)
    # Burn trains one more step: times +1, scheduler position +1.
    optim = OptimizerRecord.load(tmp_path / "optim-4.bpk")
    for pid, st in optim.states().items():
        optim.set_state(pid, AdamState(st.time + 1, st.moment_1, st.moment_2))
    optim.save(tmp_path / "optim-4.bpk")
    ModuleLrScheduler.of(CosineAnnealingLrScheduler(4)).to_record().save(tmp_path / "scheduler-4.bpk")
    state, report = burn_checkpoint_to_pytorch(tmp_path)
    assert state.optimizer["state"][0]["step"] == np.float32(5)
    assert state.scheduler["last_epoch"] == 5 and state.scheduler["_step_count"] == 6
    lr = 0.001 * (1 + np.cos(np.pi * 5 / 10)) / 2
    assert state.scheduler["_last_lr"] == pytest.approx([lr], rel=1e-15)
    assert state.optimizer["param_groups"][0]["lr"] == state.scheduler["_last_lr"][0]
    assert any("recomputed in closed form" in w for w in report.warnings)


def test_burn_native_checkpoint_converts_with_given_configs(tmp_path):
    rng = np.random.default_rng(0)
    params = {"fc.weight": rng.standard_normal((3, 2)).astype(np.float32), "fc.bias": np.zeros(2, np.float32),
              "bn.gamma": np.ones(2, np.float32), "bn.beta": np.zeros(2, np.float32),
              "bn.running_mean": np.zeros(2, np.float32), "bn.running_var": np.ones(2, np.float32)}  # fmt: skip
    model = ModuleRecord.from_tensors(params)
    ids = model.param_ids
    optim = OptimizerRecord.from_states(
        {p: AdamState(7, np.full(params[p].shape, 0.5, np.float32), np.full(params[p].shape, 0.25, np.float32))
         for p in ("fc.weight", "fc.bias", "bn.gamma", "bn.beta")}, module=model)  # fmt: skip
    ck = Checkpoints(tmp_path)
    ck.save_epoch(2, model=model, optim=optim, scheduler=ModuleLrScheduler.of(CosineAnnealingLrScheduler(6)).to_record())
    state, report = burn_checkpoint_to_pytorch(
        tmp_path, module_types={"fc": "Linear"},
        optimizer_config={"kind": "adamw", "lr": 0.01, "weight_decay": 0.1},
        scheduler_config={"kind": "cosine", "T_max": 20, "eta_min": 0.0, "base_lrs": [0.01]},
    )  # fmt: skip
    assert list(state.model) == ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    np.testing.assert_array_equal(state.model["fc.weight"], params["fc.weight"].T)
    assert state.model["bn.num_batches_tracked"] == 0 and any("num_batches_tracked set to 0" in w for w in report.warnings)
    group = state.optimizer["param_groups"][0]
    assert group["weight_decay"] == 0.1 and group["decoupled_weight_decay"] is True and group["params"] == [0, 1, 2, 3]
    assert state.optimizer["state"][0]["exp_avg"].shape == (2, 3) and state.optimizer["state"][0]["step"] == 7
    assert state.scheduler["last_epoch"] == 7
    assert ids["fc.weight"] in optim.param_ids


def test_ambiguous_weights_are_refused_not_guessed(tmp_path):
    with pytest.raises(ConversionError, match=r"emb\.weight"):
        pytorch_to_burn_checkpoint(checkpoint(), tmp_path)
    assert not any(tmp_path.iterdir())


def test_existing_checkpoint_files_are_kept_unless_overwrite(tmp_path):
    pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES, seed=1)
    before = (tmp_path / "model-4.bpk").read_bytes()
    with pytest.raises(OutputExistsError):
        pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES, seed=2)
    assert (tmp_path / "model-4.bpk").read_bytes() == before
    pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES, seed=2, overwrite=True)
    assert (tmp_path / "model-4.bpk").read_bytes() != before


def test_seed_makes_param_ids_reproducible(tmp_path):
    ck = checkpoint()
    pytorch_to_burn_checkpoint(ck, tmp_path / "a", module_types=TYPES, seed=3)
    pytorch_to_burn_checkpoint(ck, tmp_path / "b", module_types=TYPES, seed=3)
    for name in ("model-4.bpk", "optim-4.bpk", "scheduler-4.bpk"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_epoch_defaults_and_validation(tmp_path):
    ck = checkpoint()
    del ck["epoch"]
    report = pytorch_to_burn_checkpoint(ck, tmp_path / "a", module_types=TYPES)
    assert report.epoch == 1 and (tmp_path / "a" / "model-1.bpk").exists()
    pytorch_to_burn_checkpoint(checkpoint(), tmp_path / "b", module_types=TYPES, epoch=9)
    assert (tmp_path / "b" / "scheduler-9.bpk").exists()
    with pytest.raises(ConversionError, match="1-based"):
        pytorch_to_burn_checkpoint(checkpoint(), tmp_path / "c", module_types=TYPES, epoch=0)


def test_parts_are_found_under_common_key_names(tmp_path):
    ck = checkpoint()
    renamed = {"model_state_dict": ck["model"], "optimizer_state_dict": ck["optimizer"], "lr_scheduler": ck["scheduler"], "epoch": 4}
    report = pytorch_to_burn_checkpoint(renamed, tmp_path, module_types=TYPES)
    assert report.optimizer == "Adam" and report.scheduler == "CosineAnnealingLR"
    state, _ = burn_checkpoint_to_pytorch(tmp_path)
    assert set(state.keys.values()) == {"model_state_dict", "optimizer_state_dict", "lr_scheduler"}


def test_optimizer_indexing_more_parameters_than_the_model_is_an_error(tmp_path):
    ck = checkpoint()
    ck["optimizer"]["param_groups"][0]["params"] = list(range(9))
    with pytest.raises(ConversionError, match="pass module="):
        pytorch_to_burn_checkpoint(ck, tmp_path, module_types=TYPES)


def test_lightning_style_checkpoint_lists_are_understood(tmp_path):
    ck = checkpoint()
    lightning = {"state_dict": ck["model"], "optimizer_states": [ck["optimizer"]], "lr_schedulers": [ck["scheduler"]], "epoch": 4, "global_step": 40}
    report = pytorch_to_burn_checkpoint(lightning, tmp_path, module_types=TYPES)
    assert report.optimizer == "Adam" and report.scheduler == "CosineAnnealingLR"
    state, _ = burn_checkpoint_to_pytorch(tmp_path)
    assert state.keys == {"model": "state_dict", "optimizer": "optimizer_states[0]", "scheduler": "lr_schedulers[0]"}
    assert state.extra == {"epoch": 4, "global_step": 40}


def test_excluded_model_tensors_take_their_optimizer_state_along(tmp_path):
    report = pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES, exclude=[r"^emb\."])
    record = ModuleRecord.load(tmp_path / "model-4.bpk")
    assert "emb.weight" not in record and report.params_with_state == 6
    assert any("excluded" in n for n in report.not_mapped)


def test_remap_on_the_way_back_renames_burn_paths(tmp_path):
    pytorch_to_burn_checkpoint(checkpoint(), tmp_path, module_types=TYPES, remap=[(r"^fc\.", "dense.")])
    record = ModuleRecord.load(tmp_path / "model-4.bpk")
    assert "dense.weight" in record
    # Without the stored name map (a Burn-native checkpoint), the reverse rule restores them.
    optim = OptimizerRecord.load(tmp_path / "optim-4.bpk")
    optim.metadata = {k: v for k, v in optim.metadata.items() if not k.startswith("torch.")}
    optim.save(tmp_path / "optim-4.bpk")
    state, _ = burn_checkpoint_to_pytorch(tmp_path, module_types={"emb": "Embedding", "dense": "Linear"},
                                          remap=[(r"^dense\.", "fc.")], optimizer_config={"kind": "adam"})  # fmt: skip
    assert "fc.weight" in state.model and state.model["fc.weight"].shape == (2, 3)


def test_optimizer_state_keyed_by_parameter_name_maps_as_keyed_by_index(tmp_path):
    ck = checkpoint()
    pytorch_to_burn_checkpoint(copy.deepcopy(ck), tmp_path / "by_index", module_types=TYPES, seed=3)
    report = pytorch_to_burn_checkpoint(by_name(ck), tmp_path / "by_name", module_types=TYPES, seed=3)
    assert report.params_with_state == len(PARAMS)
    named, indexed = (OptimizerRecord.load(tmp_path / d / "optim-4.bpk") for d in ("by_name", "by_index"))
    assert [(t.name, t.numpy().tobytes()) for t in named.tensors] == [(t.name, t.numpy().tobytes()) for t in indexed.tensors]
    assert named.check(ModuleRecord.load(tmp_path / "by_name" / "model-4.bpk")).ok


def test_optimizer_state_keyed_by_parameter_name_converts_back_keyed_by_name(tmp_path):
    ck = by_name(checkpoint())
    pytorch_to_burn_checkpoint(copy.deepcopy(ck), tmp_path, module_types=TYPES, seed=3)
    state, _ = burn_checkpoint_to_pytorch(tmp_path)
    assert same(state.optimizer, ck["optimizer"])


def test_parts_inside_one_entry_are_found_and_written_back_there(tmp_path):
    pytest.importorskip("torch")  # to_torch
    ck = by_name(checkpoint())
    app = {"model": ck["model"], "optim": ck["optimizer"], "note": "kept"}  # torch's DCP recipe: {"app": AppState}
    report = pytorch_to_burn_checkpoint({"app": app, "scheduler": ck["scheduler"], "epoch": 4}, tmp_path, module_types=TYPES)
    assert report.params_with_state == len(PARAMS) and report.scheduler == "CosineAnnealingLR"
    back = burn_checkpoint_to_pytorch(tmp_path)[0].to_torch()
    assert list(back) == ["app", "scheduler", "epoch"] and list(back["app"]) == ["model", "optim", "note"]
    assert back["app"]["note"] == "kept" and list(back["app"]["optim"]["state"]) == PARAMS


def flattened(optimizer):
    """torch's ``flatten_optimizer_state_dict`` form of a name-keyed optimizer state dict."""
    flat = {f"state.{n}.{k}": v for n, s in optimizer["state"].items() for k, v in s.items()}
    for group in optimizer["param_groups"]:
        flat.update({f"param_groups.{n}.{k}": v for n in group["params"] for k, v in group.items() if k != "params"})
    return flat


def test_a_flattened_optimizer_state_maps_as_the_nested_one(tmp_path):
    ck = by_name(checkpoint())
    pytorch_to_burn_checkpoint(copy.deepcopy(ck), tmp_path / "nested", module_types=TYPES, seed=3)
    flat = flattened(ck["optimizer"])
    report = pytorch_to_burn_checkpoint({**ck, "optimizer": flat}, tmp_path / "flat", module_types=TYPES, seed=3)
    assert report.optimizer == "Adam" and report.params_with_state == len(PARAMS)
    named, nested = (OptimizerRecord.load(tmp_path / d / "optim-4.bpk") for d in ("flat", "nested"))
    assert [(t.name, t.numpy().tobytes()) for t in named.tensors] == [(t.name, t.numpy().tobytes()) for t in nested.tensors]
    state, _ = burn_checkpoint_to_pytorch(tmp_path / "flat")
    assert same(state.optimizer, ck["optimizer"])


def test_a_flattened_optimizer_state_converts_back_flattened(tmp_path):
    pytest.importorskip("torch")  # to_torch
    ck = by_name(checkpoint())
    flat = flattened(ck["optimizer"])
    pytorch_to_burn_checkpoint({**ck, "optimizer": flat}, tmp_path, module_types=TYPES)
    back = burn_checkpoint_to_pytorch(tmp_path)[0].to_torch()["optimizer"]
    assert list(back) == list(flat)
    assert all(same(back[k].numpy(), v) if isinstance(v, np.ndarray) else back[k] == v for k, v in flat.items())


def test_flattened_parameters_with_different_settings_form_separate_groups(tmp_path):
    ck = by_name(checkpoint())
    second = {**ck["optimizer"]["param_groups"][0], "lr": 0.5, "params": PARAMS[5:]}
    ck["optimizer"]["param_groups"] = [{**ck["optimizer"]["param_groups"][0], "params": PARAMS[:5]}, second]
    ck["scheduler"]["base_lrs"], ck["scheduler"]["_last_lr"] = [0.001, 0.5], [0.0007, 0.4]
    pytorch_to_burn_checkpoint({**ck, "optimizer": flattened(ck["optimizer"])}, tmp_path, module_types=TYPES)
    state, _ = burn_checkpoint_to_pytorch(tmp_path)
    assert [g["params"] for g in state.optimizer["param_groups"]] == [PARAMS[:5], PARAMS[5:]]


def test_a_flattened_optimizer_key_without_a_parameter_name_is_a_conversion_error(tmp_path):
    ck = by_name(checkpoint())
    flat = {**flattened(ck["optimizer"]), "state.step": np.array(1.0, np.float32)}
    with pytest.raises(ConversionError, match="'state.step' is not 'state.<parameter name>.<key>'"):
        pytorch_to_burn_checkpoint({**ck, "optimizer": flat}, tmp_path, module_types=TYPES)
