"""OptimizerRecord: Burn's exact layout per optimizer, and its reading rules (records.md §2)."""

from __future__ import annotations

import numpy as np
import pytest

import burnpack
from burnpack import OptimizerRecord, Scalar, Tensor, Writer
from burnpack.records import (
    AdaGradState,
    AdamState,
    AdamWState,
    AdanState,
    LBFGSState,
    MissingParamIdError,
    MuonState,
    RmsPropState,
    SgdState,
    StateRankError,
)
from burnpack.records._common import parse_u64
from tests.records.helpers import IDS, two_layer_arrays, two_layer_record

PATHS = list(IDS)


def _moments(path: str, k: float) -> np.ndarray:
    return two_layer_arrays()[path] * k + k


def _expected_file(per_param: dict[str, tuple[list[tuple[str, np.ndarray]], dict[str, Scalar]]]) -> bytes:
    """The file Burn's ModuleOptimizer::to_record writes, assembled by hand with the format layer."""
    tensors, scalars, metadata = [], {}, {}
    for path, (leaves, own_scalars) in per_param.items():
        pid = IDS[path]
        tensors += [Tensor.from_numpy(f"{pid}.{leaf}", array, param_id=pid) for leaf, array in leaves]
        scalars[f"{pid}.__rank"] = Scalar.UInt(two_layer_arrays()[path].ndim)
        scalars.update({f"{pid}.{key}": value for key, value in own_scalars.items()})
        metadata[str(pid)] = path
    return Writer(tensors, metadata=metadata, scalars=scalars).to_bytes()


def _record(states: dict[str, object]) -> OptimizerRecord:
    return OptimizerRecord.from_states(states, module=two_layer_record())


# -- exact layout per optimizer ---------------------------------------------------------------------
def test_adam_record_has_burns_names_ids_kinds_metadata_and_bytes():
    states = {p: AdamState(time=3, moment_1=_moments(p, 1), moment_2=_moments(p, 2)) for p in PATHS}
    expected = _expected_file(
        {p: ([("momentum.moment_1", _moments(p, 1)), ("momentum.moment_2", _moments(p, 2))], {"momentum.time": Scalar.UInt(3)}) for p in PATHS}
    )
    assert _record(states).into_bytes() == expected


def test_adam_amsgrad_adds_max_moment_2():
    state = AdamState(time=1, moment_1=_moments("fc1.bias", 1), moment_2=_moments("fc1.bias", 2), max_moment_2=_moments("fc1.bias", 3))
    record = _record({"fc1.bias": state})
    assert [t.name for t in record.tensors] == [f"{IDS['fc1.bias']}.momentum.{m}" for m in ("moment_1", "moment_2", "max_moment_2")]


def test_adamw_record_is_laid_out_like_adam():
    adam = {p: AdamState(2, _moments(p, 1), _moments(p, 2)) for p in PATHS}
    adamw = {p: AdamWState(2, _moments(p, 1), _moments(p, 2)) for p in PATHS}
    assert _record(adamw).into_bytes() == _record(adam).into_bytes()


def test_sgd_without_momentum_writes_only_ranks_and_paths():
    record = _record({p: SgdState() for p in PATHS})
    assert record.into_bytes() == _expected_file({p: ([], {}) for p in PATHS})
    with burnpack.load(record.into_bytes()) as pack:
        assert len(pack) == 0 and pack.scalars[f"{IDS['fc1.weight']}.__rank"] == Scalar.UInt(2)


def test_sgd_with_momentum_writes_the_velocity():
    record = _record({p: SgdState(velocity=_moments(p, 1)) for p in PATHS})
    assert record.into_bytes() == _expected_file({p: ([("momentum.velocity", _moments(p, 1))], {}) for p in PATHS})


def test_rmsprop_centered_with_momentum_writes_four_tensors_in_field_order():
    states = {p: RmsPropState(_moments(p, 1), _moments(p, 2), grad_avg=_moments(p, 3), momentum_buf=_moments(p, 4)) for p in PATHS}
    leaves = ["square_avg.square_avg", "centered.grad_avg", "centered.avg", "momentum.buf"]
    values = [1, 3, 2, 4]
    expected = _expected_file({p: ([(leaf, _moments(p, k)) for leaf, k in zip(leaves, values)], {}) for p in PATHS})
    assert _record(states).into_bytes() == expected


def test_rmsprop_plain_writes_square_avg_and_avg_only():
    record = _record({"fc2.bias": RmsPropState(_moments("fc2.bias", 1), _moments("fc2.bias", 1))})
    assert [t.name.split(".", 1)[1] for t in record.tensors] == ["square_avg.square_avg", "centered.avg"]
    assert set(record.scalars) == {f"{IDS['fc2.bias']}.__rank"}


def test_adagrad_record_has_lr_decay_sum_and_time():
    states = {p: AdaGradState(time=5, sum=_moments(p, 1)) for p in PATHS}
    expected = _expected_file({p: ([("lr_decay.sum", _moments(p, 1))], {"lr_decay.time": Scalar.UInt(5)}) for p in PATHS})
    assert _record(states).into_bytes() == expected


def test_adan_record_has_four_moments_and_time():
    leaves = ["exp_avg", "exp_avg_sq", "exp_avg_diff", "neg_pre_grad"]
    states = {p: AdanState(7, *(_moments(p, k) for k in range(1, 5))) for p in PATHS}
    expected = _expected_file(
        {p: ([(f"momentum.{leaf}", _moments(p, k)) for k, leaf in enumerate(leaves, 1)], {"momentum.time": Scalar.UInt(7)}) for p in PATHS}
    )
    assert _record(states).into_bytes() == expected


def test_muon_record_has_the_velocity_of_2d_parameters():
    record = _record({"fc1.weight": MuonState(_moments("fc1.weight", 1))})
    assert record.into_bytes() == _expected_file({"fc1.weight": ([("momentum.velocity", _moments("fc1.weight", 1))], {})})


def test_records_md_adam_example_has_its_documented_size_and_offsets():
    ids = {"fc.weight": 10777079075451239370, "fc.bias": 9505838338724798577}
    shapes = {"fc.weight": (2, 3), "fc.bias": (3,)}
    record = OptimizerRecord()
    for path, pid in ids.items():
        zeros = np.zeros(shapes[path], np.float32)
        record.set_state(pid, AdamState(1, zeros, zeros), path=path)
    data = record.into_bytes()
    assert len(data) == 1548
    with burnpack.load(data) as pack:
        offsets = {name: list(pack[name].data_offsets) for name in pack}
        assert pack.metadata == {"10777079075451239370": "fc.weight", "9505838338724798577": "fc.bias"}
        assert pack.scalars["9505838338724798577.momentum.time"] == Scalar.UInt(1)
    assert offsets == {
        "10777079075451239370.momentum.moment_1": [0, 24],
        "10777079075451239370.momentum.moment_2": [256, 280],
        "9505838338724798577.momentum.moment_1": [512, 524],
        "9505838338724798577.momentum.moment_2": [768, 780],
    }


def test_lbfgs_record_is_global_without_ids_or_metadata():
    state = LBFGSState(
        history_s=[np.ones(3, np.float32), np.zeros(3, np.float32)],
        history_y=[np.ones(3, np.float32)],
        d=np.full(3, 2.0, np.float32),
        t=0.5,
        prev_flat_grad=np.full(3, 3.0, np.float32),
        prev_loss=1.25,
        g_iter=4,
    )
    data = OptimizerRecord.from_lbfgs(state).into_bytes()
    expected = Writer(
        [Tensor.from_numpy(n, a) for n, a in [("history_s.0", state.history_s[0]), ("history_s.1", state.history_s[1]), ("history_y.0", state.history_y[0]), ("d", state.d), ("prev_flat_grad", state.prev_flat_grad)]],
        scalars={"history_s.len": Scalar.UInt(2), "history_y.len": Scalar.UInt(1), "t": Scalar.Float(0.5), "prev_loss": Scalar.Float(1.25), "g_iter": Scalar.UInt(4)},
    ).to_bytes()
    assert data == expected
    loaded = OptimizerRecord.from_bytes(data)
    assert loaded.kind == "LBFGS" and loaded.step == 4
    back = loaded.lbfgs()
    assert (back.t, back.prev_loss, back.g_iter, len(back.history_s)) == (0.5, 1.25, 4, 2)


def test_lbfgs_default_state_writes_t_and_empty_histories():
    record = OptimizerRecord.from_lbfgs(LBFGSState())
    assert record.scalars == {"history_s.len": Scalar.UInt(0), "history_y.len": Scalar.UInt(0), "t": Scalar.Float(1.0), "g_iter": Scalar.UInt(0)}
    assert not record.tensors


# -- reading ----------------------------------------------------------------------------------------
@pytest.fixture
def adam_file() -> bytes:
    return _record({p: AdamState(3, _moments(p, 1), _moments(p, 2)) for p in PATHS}).into_bytes()


def test_loaded_record_resaves_byte_identically(adam_file):
    assert OptimizerRecord.from_bytes(adam_file).into_bytes() == adam_file


def test_loaded_record_yields_typed_states_and_its_kind(adam_file):
    record = OptimizerRecord.from_bytes(adam_file)
    assert record.kind == "Adam/AdamW" and record.step == 3
    assert record.paths == {v: k for k, v in IDS.items()}
    state = record.state(IDS["fc1.weight"])
    assert isinstance(state, AdamState) and state.time == 3
    np.testing.assert_array_equal(state.moment_2, _moments("fc1.weight", 2))
    assert set(record.states()) == set(IDS.values())


@pytest.mark.parametrize(
    "state,kind",
    [
        (SgdState(), "SGD"),
        (SgdState(np.ones(3, np.float32)), "SGD/Muon"),
        (RmsPropState(np.ones(3, np.float32), np.ones(3, np.float32)), "RMSProp"),
        (AdaGradState(1, np.ones(3, np.float32)), "AdaGrad"),
        (AdanState(1, *[np.ones(3, np.float32)] * 4), "Adan"),
    ],
)
def test_kind_is_detected_from_the_leaf_names(state, kind):
    record = OptimizerRecord().set_state(1, state, rank=1)
    assert OptimizerRecord.from_bytes(record.into_bytes()).kind == kind


def test_non_numeric_metadata_is_ignored_for_paths(adam_file):
    record = OptimizerRecord.from_bytes(adam_file)
    record.metadata["format"] = "burnpack"
    record.metadata["+7"] = "odd"  # Rust's u64 parser takes a leading '+'
    assert record.paths == {**{v: k for k, v in IDS.items()}, 7: "odd"}


def test_u64_keys_parse_like_rust():
    assert [parse_u64(s) for s in ("42", "+42", "007", "-1", "4 2", "", "18446744073709551616", "٣")] == [42, 42, 7, None, None, None, None, None]


def test_a_tensor_without_param_id_is_an_error_where_burn_panics():
    data = Writer([Tensor.from_numpy("1.momentum.velocity", np.ones(2, np.float32))], scalars={"1.__rank": Scalar.UInt(1)}).to_bytes()
    record = OptimizerRecord.from_bytes(data)  # Burn's OptimizerRecord::load succeeds too
    with pytest.raises(MissingParamIdError, match="should carry a parameter id"):
        record.states()


def test_rank_falls_back_to_the_tensor_rank_without_rank_scalar():
    data = Writer([Tensor.from_numpy("9.momentum.velocity", np.ones((2, 2), np.float32), param_id=9)]).to_bytes()
    assert OptimizerRecord.from_bytes(data).ranks == {9: 2}


def test_a_state_missing_a_required_leaf_is_dropped_and_reported(adam_file):
    record = OptimizerRecord.from_bytes(adam_file)
    pid = IDS["fc2.bias"]
    record.tensors = [t for t in record.tensors if t.name != f"{pid}.momentum.moment_2"]
    assert record.state(pid, AdamState) is None
    assert pid not in record.states(AdamState)
    assert record.missing_leaves(pid, AdamState) == [f"{pid}.momentum.moment_2 (tensor missing)"]


def test_scalar_kinds_follow_burns_leniency(adam_file):
    record = OptimizerRecord.from_bytes(adam_file)
    pid = IDS["fc1.bias"]
    record.scalars[f"{pid}.momentum.time"] = Scalar.Int(4)  # integer fields accept Int in range
    assert record.state(pid).time == 4
    record.scalars[f"{pid}.momentum.time"] = Scalar.Float(4.0)  # but not Float: the state is dropped
    assert record.state(pid, AdamState) is None


def test_a_state_tensor_rank_differing_from_rank_scalar_is_an_error(adam_file):
    record = OptimizerRecord.from_bytes(adam_file)
    record.scalars[f"{IDS['fc1.bias']}.__rank"] = Scalar.UInt(2)
    with pytest.raises(StateRankError):
        record.state(IDS["fc1.bias"])


def test_entries_give_a_generic_view_of_unknown_states():
    data = Writer(
        [Tensor.from_numpy("5.custom.buf", np.ones(2, np.float32), param_id=5)],
        metadata={"5": "x.w"},
        scalars={"5.__rank": Scalar.UInt(1), "5.custom.count": Scalar.Int(-2)},
    ).to_bytes()
    record = OptimizerRecord.from_bytes(data)
    entries = record.entries(5)
    assert (entries.path, entries.rank, list(entries.tensors), entries.scalars) == ("x.w", 1, ["custom.buf"], {"custom.count": Scalar.Int(-2)})
    assert record.kind == "unknown" and record.state(5) is None


# -- editing and checking ----------------------------------------------------------------------------
def test_set_state_edits_a_loaded_record(adam_file):
    record = OptimizerRecord.from_bytes(adam_file)
    pid = IDS["fc1.weight"]
    state = record.state(pid)
    state.time = 10
    record.set_state(pid, state)
    again = OptimizerRecord.from_bytes(record.into_bytes())
    assert again.state(pid).time == 10 and again.paths[pid] == "fc1.weight" and again.ranks[pid] == 2


def test_set_state_needs_a_rank_for_a_state_without_tensors():
    with pytest.raises(ValueError, match="rank"):
        OptimizerRecord().set_state(3, SgdState())


def test_remove_state_drops_tensors_scalars_and_path(adam_file):
    record = OptimizerRecord.from_bytes(adam_file).remove_state(IDS["fc2.weight"])
    assert IDS["fc2.weight"] not in record.ranks and IDS["fc2.weight"] not in record.paths
    assert len(record) == 6


def test_check_finds_a_consistent_pair(adam_file):
    report = OptimizerRecord.from_bytes(adam_file).check(two_layer_record())
    assert report.ok and str(report) == "consistent"


def test_check_reports_ids_on_one_side_and_mismatches(adam_file):
    record = OptimizerRecord.from_bytes(adam_file).remove_state(IDS["fc2.bias"])
    record.set_state(99, SgdState(np.ones(2, np.float32)), path="ghost")
    record.metadata[str(IDS["fc1.bias"])] = "renamed"
    record.scalars[f"{IDS['fc2.weight']}.__rank"] = Scalar.UInt(1)
    report = record.check(two_layer_record())
    assert report.only_in_model == [(IDS["fc2.bias"], "fc2.bias")]
    assert report.only_in_optimizer == [(99, "ghost")]
    assert report.path_mismatches == [(IDS["fc1.bias"], "fc1.bias", "renamed")]
    assert report.rank_mismatches == [(IDS["fc2.weight"], "fc2.weight", 2, 1)]
    assert not report.ok and "matches no model parameter" in str(report)


def test_check_reports_state_shapes_differing_from_the_parameter():
    record = OptimizerRecord().set_state(IDS["fc1.bias"], SgdState(np.ones(4, np.float32)), path="fc1.bias")
    report = record.check(two_layer_record())
    assert report.shape_mismatches == [(IDS["fc1.bias"], f"{IDS['fc1.bias']}.momentum.velocity", (3,), (4,))]
