"""With torch installed: live state dicts and modules, ``.pt`` output, and the whole-checkpoint
round trip (convert, convert back, one more optimizer step equals the step without the trip)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import burnpack
from burnpack.interop.checkpoint import burn_checkpoint_to_pytorch, pytorch_to_burn_checkpoint
from burnpack.interop.converter import convert
from burnpack.interop.registry import read_tensors
from burnpack.interop.pytorch import read_pytorch
from burnpack.records import LrSchedulerRecord, ModuleRecord, OptimizerRecord

try:
    import torch
except ImportError:  # every test below is collected and skipped, each with the reason
    torch = None
pytestmark = pytest.mark.skipif(torch is None, reason="needs torch (pip install -e '.[torch]')")
nn = torch.nn if torch is not None else None
_Module = nn.Module if nn is not None else object


class Net(_Module):
    """One of each layer kind Burn's adapters care about."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.conv = nn.Conv1d(4, 3, 2)
        self.bn = nn.BatchNorm1d(3)
        self.fc = nn.Linear(6, 5)
        self.ln = nn.LayerNorm(5)
        self.head = nn.Linear(5, 2, bias=False)

    def forward(self, idx):
        x = self.emb(idx).transpose(1, 2)  # [N, 4, L=3]
        x = self.bn(self.conv(x)).relu().flatten(1)  # [N, 6]
        return self.head(self.ln(self.fc(x)))


IDX = torch.tensor([[0, 1, 2], [3, 4, 5], [5, 1, 0]]) if torch is not None else None


def train_step(model, optimizer, scheduler):
    optimizer.zero_grad()
    model(IDX).pow(2).mean().backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()


OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.05),
    "adam-amsgrad": lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True, weight_decay=0.01),
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, nesterov=False),
    "sgd-nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
}
SCHEDULERS = {
    "cosine": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "linear": lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=5),
    "step": lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    "exponential": lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
}


def trained(opt: str, sched: str | None, steps: int = 3, seed: int = 0):
    torch.manual_seed(seed)
    model = Net()
    optimizer = OPTIMIZERS[opt](model.parameters())
    scheduler = SCHEDULERS[sched](optimizer) if sched else None
    for _ in range(steps):
        train_step(model, optimizer, scheduler)
    return model, optimizer, scheduler


def restore(back: dict, opt: str, sched: str | None):
    """PyTorch's resume order: build everything, then load (a scheduler's constructor changes
    the optimizer's lr, which the optimizer's state then restores)."""
    model = Net()
    model.load_state_dict(back["model"])
    optimizer = OPTIMIZERS[opt](model.parameters())
    scheduler = SCHEDULERS[sched](optimizer) if sched else None
    optimizer.load_state_dict(back["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(back["scheduler"])
    return model, optimizer, scheduler


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("sched", sorted(SCHEDULERS))
def test_checkpoint_round_trip_then_one_more_step_matches(tmp_path, opt, sched):
    model, optimizer, scheduler = trained(opt, sched)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "epoch": 3},
               tmp_path / "ck.pt")  # fmt: skip
    pytorch_to_burn_checkpoint(tmp_path / "ck.pt", tmp_path / "checkpoint", module_types={"emb": "Embedding", "head": "Linear"})
    burn_checkpoint_to_pytorch(tmp_path / "checkpoint", tmp_path / "back.pt")
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    model2, optimizer2, scheduler2 = restore(back, opt, sched)
    train_step(model, optimizer, scheduler)
    train_step(model2, optimizer2, scheduler2)
    for (name, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        assert torch.equal(a, b), name
    assert optimizer.param_groups[0]["lr"] == optimizer2.param_groups[0]["lr"]


def test_checkpoint_from_live_objects_uses_the_module_for_types_and_order(tmp_path):
    model, optimizer, scheduler = trained("adam", "cosine")
    report = pytorch_to_burn_checkpoint(model=model, optimizer=optimizer, scheduler=scheduler, out_dir=tmp_path, epoch=2)
    assert sorted(report.transposed) == ["fc.weight", "head.weight"]  # Embedding is not transposed
    record = ModuleRecord.load(tmp_path / "model-2.bpk")
    np.testing.assert_array_equal(record["head.weight"].numpy(), model.head.weight.detach().numpy().T)
    optim = OptimizerRecord.load(tmp_path / "optim-2.bpk")
    assert optim.check(record).ok
    st = optim.state(record.param_ids["fc.weight"])
    np.testing.assert_array_equal(st.moment_1, optimizer.state[model.fc.weight]["exp_avg"].numpy().T)
    assert st.time == 3


def test_custom_parameter_groups_map_through_a_live_optimizer(tmp_path):
    torch.manual_seed(1)
    model = Net()
    groups = [{"params": list(model.fc.parameters()) + list(model.head.parameters()), "lr": 0.02},
              {"params": [p for n, p in model.named_parameters() if not n.startswith(("fc.", "head."))]}]  # fmt: skip
    optimizer = torch.optim.Adam(groups, lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for _ in range(2):
        train_step(model, optimizer, scheduler)
    report = pytorch_to_burn_checkpoint(model=model, optimizer=optimizer, scheduler=scheduler, out_dir=tmp_path)
    record = ModuleRecord.load(tmp_path / "model-1.bpk")
    optim = OptimizerRecord.load(tmp_path / "optim-1.bpk")
    np.testing.assert_array_equal(optim.state(record.param_ids["emb.weight"]).moment_1, optimizer.state[model.emb.weight]["exp_avg"].numpy())
    assert LrSchedulerRecord.load(tmp_path / "scheduler-1.bpk").scalars.keys() == {"0.iter_idx", "1.iter_idx"}
    assert any("parameter groups" in n for n in report.not_mapped)
    state, _ = burn_checkpoint_to_pytorch(tmp_path)
    restored = state.to_torch()
    model2 = Net()
    model2.load_state_dict(restored["model"])
    optimizer2 = torch.optim.Adam([{"params": list(model2.fc.parameters()) + list(model2.head.parameters()), "lr": 0.02},
                                   {"params": [p for n, p in model2.named_parameters() if not n.startswith(("fc.", "head."))]}], lr=0.01)  # fmt: skip
    optimizer2.load_state_dict(restored["optimizer"])
    train_step(model, optimizer, None)
    train_step(model2, optimizer2, None)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values()))


def burn_next_lr(kind: str, scalar: float, config: dict) -> float:
    """One ``step()`` of Burn's scheduler (burn-optim lr_scheduler/*.rs) from its record state."""
    if kind == "cosine":
        it = (int(scalar) + 1) % 2**64
        return config["min"] + 0.5 * (config["initial"] - config["min"]) * (1.0 + math.cos(it / config["n"] * math.pi))
    if kind == "linear":
        remaining = int(scalar) - (int(scalar) != 0)
        step_size = (config["final"] - config["initial"]) / config["n"]
        return config["final"] - step_size * remaining
    if kind == "step":
        return config["initial"] * config["gamma"] ** ((int(scalar) + 1) // config["size"])
    return scalar * config["gamma"]


@pytest.mark.parametrize("sched", sorted(SCHEDULERS))
@pytest.mark.parametrize("steps", [0, 1, 4, 9])
def test_burn_scheduler_state_gives_the_learning_rate_pytorch_uses_next(tmp_path, sched, steps):
    model, optimizer, scheduler = trained("sgd-momentum", sched, steps=steps)
    pytorch_to_burn_checkpoint(model=model, optimizer=optimizer, scheduler=scheduler, out_dir=tmp_path)
    (key, value), = LrSchedulerRecord.load(tmp_path / "scheduler-1.bpk").scalars.items()
    base = 0.05
    config = {
        "cosine": {"initial": base, "min": 0.001, "n": 7},
        "linear": {"initial": base * 0.25, "final": base, "n": 5},
        "step": {"initial": base, "size": 2, "gamma": 0.5},
        "exponential": {"gamma": 0.9},
    }[sched]
    assert burn_next_lr(sched, value.value, config) == pytest.approx(optimizer.param_groups[0]["lr"], rel=1e-12, abs=1e-15)


def test_live_module_reads_with_its_module_types(tmp_path):
    torch.manual_seed(0)
    model = Net()
    tset = read_tensors(model)
    assert tset.module_types["fc"] == "Struct:Linear" and tset.module_types["bn"] == "Struct:BatchNorm"
    report = convert(model, tmp_path / "m.bpk", adapter="pytorch")
    assert sorted(report.transformed) == ["bn.beta", "bn.gamma", "fc.weight", "head.weight", "ln.beta", "ln.gamma"]


def test_live_state_dict_round_trips_through_bpk_and_pt(tmp_path):
    torch.manual_seed(0)
    model = Net()
    convert(model.state_dict(), tmp_path / "m.bpk", adapter="pytorch", module=model)
    convert(tmp_path / "m.bpk", tmp_path / "m.pt", adapter="to-pytorch", module=model)
    model2 = Net()
    model2.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    model.eval(), model2.eval()
    assert torch.equal(model(IDX), model2(IDX))


def test_pt_written_back_holds_every_dtype(tmp_path):
    tensors = {
        "f64": torch.randn(2, dtype=torch.float64), "f32": torch.randn(2, 3), "f16": torch.randn(2).half(),
        "bf16": torch.randn(3).bfloat16(), "i64": torch.arange(3), "i32": torch.arange(3, dtype=torch.int32),
        "i16": torch.arange(3, dtype=torch.int16), "i8": torch.arange(3, dtype=torch.int8), "u8": torch.arange(3, dtype=torch.uint8),
        "bool": torch.tensor([True, False]), "scalar": torch.tensor(2.5),
    }  # fmt: skip
    convert(tensors, tmp_path / "a.bpk")
    with burnpack.load(tmp_path / "a.bpk") as pack:
        assert pack["bool"].dtype == burnpack.DType.Bool(burnpack.BoolStore.U8)
        assert pack["bf16"].dtype == burnpack.DType.BF16
    convert(tmp_path / "a.bpk", tmp_path / "a.pt")
    back = torch.load(tmp_path / "a.pt", weights_only=True)
    assert list(back) == list(tensors)
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t), name


def test_pickle_free_reader_matches_torch_load(tmp_path):
    torch.manual_seed(0)
    model = Net()
    sd = model.state_dict()
    sd["view"] = sd["fc.weight"][:, 1:3]  # a strided view sharing storage
    sd["transposed"] = sd["fc.weight"].t()
    torch.save(sd, tmp_path / "m.pt")
    ours = read_pytorch(tmp_path / "m.pt")
    theirs = torch.load(tmp_path / "m.pt", weights_only=True)
    assert list(ours) == list(theirs)
    for name, t in theirs.items():
        np.testing.assert_array_equal(ours[name], t.numpy(), err_msg=name)


def test_cli_convert_checkpoint_both_ways(tmp_path, capsys):
    from burnpack.cli.main import main

    model, optimizer, scheduler = trained("adamw", "linear")
    torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": 3}, tmp_path / "ck.pt")  # fmt: skip
    assert main(["convert-checkpoint", str(tmp_path / "ck.pt"), str(tmp_path / "run" / "checkpoint"),
                 "--module-type", "emb=Embedding", "--module-type", "head=Linear"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "optimizer: AdamW, state for 10 parameters, step 3" in out and "LinearLrSchedulerConfig::new(" in out
    assert main(["convert-checkpoint", str(tmp_path / "run"), str(tmp_path / "back.pt")]) == 0
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    assert set(back) == {"model_state_dict", "optimizer_state_dict", "scheduler", "epoch"}
    model2, optimizer2, scheduler2 = restore({"model": back["model_state_dict"], "optimizer": back["optimizer_state_dict"],
                                              "scheduler": back["scheduler"]}, "adamw", "linear")  # fmt: skip
    train_step(model, optimizer, scheduler)
    train_step(model2, optimizer2, scheduler2)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values()))
    assert main(["convert-checkpoint", str(tmp_path / "run"), str(tmp_path / "back.pt")]) == 1  # kept without --overwrite
    assert "exists" in capsys.readouterr().err


def test_cli_converts_a_burn_native_checkpoint_with_given_configs(tmp_path, capsys):
    from burnpack.cli.main import main
    from burnpack.records import AdamState, Checkpoints, CosineAnnealingLrScheduler, ModuleLrScheduler

    torch.manual_seed(3)
    model = Net()
    sd = {k: v.numpy() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    burn = {}
    for name, array in sd.items():  # Burn's layout, as a Burn learner would have saved it
        name = name.replace("bn.weight", "bn.gamma").replace("bn.bias", "bn.beta").replace("ln.weight", "ln.gamma").replace("ln.bias", "ln.beta")
        burn[name] = array.T.copy() if name in ("fc.weight", "head.weight") else array
    record = ModuleRecord.from_tensors(burn)
    params = [n for n in burn if "running" not in n]
    optim = OptimizerRecord.from_states({n: AdamState(5, np.full(burn[n].shape, 0.1, np.float32), np.full(burn[n].shape, 0.01, np.float32))
                                         for n in params}, module=record)  # fmt: skip
    Checkpoints(tmp_path / "run").save_epoch(5, model=record, optim=optim, scheduler=ModuleLrScheduler.of(CosineAnnealingLrScheduler(4)).to_record())
    code = main(["convert-checkpoint", str(tmp_path / "run"), str(tmp_path / "out.pt"), "--module-type", "emb=Embedding",
                 "--module-type", "head=Linear", "--optimizer-config", '{"kind": "adam", "lr": 0.01}',
                 "--scheduler-config", '{"kind": "cosine", "T_max": 7, "eta_min": 0.001, "base_lrs": [0.01]}'])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    back = torch.load(tmp_path / "out.pt", weights_only=True)
    model2, optimizer2, scheduler2 = restore(back, "adam", None)
    scheduler2 = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer2, T_max=7, eta_min=0.001)
    optimizer2.load_state_dict(back["optimizer"])
    scheduler2.load_state_dict(back["scheduler"])
    assert torch.equal(model2.fc.weight, model.fc.weight) and scheduler2.last_epoch == 5
    assert optimizer2.state[model2.fc.weight]["step"].item() == 5
    assert optimizer2.param_groups[0]["lr"] == pytest.approx(0.001 + (0.01 - 0.001) * (1 + math.cos(math.pi * 5 / 7)) / 2)
    train_step(model2, optimizer2, scheduler2)  # resumes


def test_unsigned_dtypes_torch_saves_untyped_read_like_torch_load(tmp_path):
    tensors = {"u16": torch.arange(5).to(torch.uint16), "u32": torch.arange(4).to(torch.uint32)[1:],
               "u64": torch.arange(6).to(torch.uint64).reshape(2, 3).t()}  # fmt: skip
    torch.save(tensors, tmp_path / "u.pt")
    ours = read_pytorch(tmp_path / "u.pt")
    for name, t in torch.load(tmp_path / "u.pt", weights_only=True).items():
        np.testing.assert_array_equal(ours[name], t.numpy(), err_msg=name)
        assert ours[name].dtype == t.numpy().dtype


def test_a_live_state_with_lists_converts_under_indexed_names_and_reports_the_rest(tmp_path):
    state = {"layers": [{"w": torch.ones(2)}, (torch.zeros(1),)], "step": 3}
    report = convert(state, tmp_path / "s.bpk")
    with burnpack.load(tmp_path / "s.bpk") as pack:
        assert pack.names == ["layers.0.w", "layers.1.0"]
    assert report.skipped_entries == {"step": "an int, not a tensor"}


def test_diff_reads_a_pt_with_torch_load_so_a_reader_bug_cannot_hide_itself(tmp_path, capsys):
    import json

    from burnpack.cli.main import main

    torch.save({"layers": [{"w": torch.ones(2)}, {"w": torch.zeros(2)}], "head": torch.ones(1)}, tmp_path / "listed.pt")
    burnpack.save({"head": np.ones(1, np.float32)}, tmp_path / "listed.bpk")  # what a reader skipping lists wrote
    assert main(["diff", str(tmp_path / "listed.pt"), str(tmp_path / "listed.bpk"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["removed"]) == ["layers.0.w", "layers.1.w"] and out["readers"] == {"a": "torch.load", "b": "burnpack"}
