"""torch's documented distributed-checkpoint training workflow through a Burn checkpoint, with
torch's own calls on both sides: ``get_state_dict`` + ``dcp.save`` → ``convert-checkpoint`` → a
Burn Learner checkpoint → ``convert-checkpoint --dcp`` → a fresh model and optimizer, whose
``get_state_dict`` is the template for ``dcp.load``, then ``set_state_dict``: training goes on
bit for bit as if it had never stopped. Single process, no process group."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")
state_dict_api = pytest.importorskip("torch.distributed.checkpoint.state_dict")

from burnpack.cli.main import main  # noqa: E402
from burnpack.interop.checkpoint import burn_checkpoint_to_pytorch, pytorch_to_burn_checkpoint  # noqa: E402
from burnpack.records import ModuleRecord, OptimizerRecord  # noqa: E402

get_state_dict, set_state_dict = state_dict_api.get_state_dict, state_dict_api.set_state_dict
StateDictOptions = state_dict_api.StateDictOptions
Stateful = pytest.importorskip("torch.distributed.checkpoint.stateful").Stateful
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.05),
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1),
    "adamw-two-groups": lambda p: (lambda ps: torch.optim.AdamW([{"params": ps[:2], "lr": 0.02}, {"params": ps[2:]}], lr=0.01))(list(p)),
}
SCHEDULERS = {
    "none": None,
    "cosine": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "step": lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
}


class Run:
    """A model, its optimizer and (maybe) its LR scheduler, built the same way every time, saved
    and loaded as torch documents: at the top level (``{"model": ..., "optim": ...}``), or as
    its DCP recipe does, an ``AppState`` under ``"app"`` (``layout="app"``), optionally with the
    optimizer state flattened (``layout="app-flat"``)."""

    def __init__(self, opt: str, sched: str, seed: int = 0, layout: str = "top") -> None:
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        self.optimizer = OPTIMIZERS[opt](self.model.parameters())
        make = SCHEDULERS[sched]
        self.scheduler = make(self.optimizer) if make is not None else None
        self.layout = layout

    def step(self, batch: int) -> None:
        inputs = torch.randn(16, 4, generator=torch.Generator().manual_seed(batch))
        self.optimizer.zero_grad()
        self.model(inputs).square().mean().backward()
        self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()

    def state_dict(self) -> dict:
        """``get_state_dict``'s model and optimizer state dicts (``Stateful.state_dict``)."""
        options = StateDictOptions(flatten_optimizer_state_dict=self.layout == "app-flat")
        model_sd, optim_sd = get_state_dict(self.model, self.optimizer, options=options)
        return {"model": model_sd, "optim": optim_sd}

    def load_state_dict(self, state: dict) -> None:
        """``set_state_dict`` of what ``dcp.load`` filled in (``Stateful.load_state_dict``)."""
        options = StateDictOptions(flatten_optimizer_state_dict=self.layout == "app-flat")
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"], options=options)

    def app_state(self) -> dict:
        state = {"app": self} if self.layout.startswith("app") else self.state_dict()
        if self.scheduler is not None:
            state["scheduler"] = self.scheduler.state_dict()
        return state

    def save(self, folder) -> None:
        dcp.save(self.app_state(), checkpoint_id=folder, no_dist=True)

    def load(self, folder) -> None:
        """torch's documented resume: template from ``get_state_dict``, ``dcp.load``, ``set_state_dict``."""
        state = self.app_state()
        dcp.load(state, checkpoint_id=folder, no_dist=True)
        if "app" not in state:
            self.load_state_dict(state)
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])

    def same_as(self, other: "Run") -> bool:
        pairs = zip(self.model.state_dict().items(), other.model.state_dict().items())
        return all(na == nb and torch.equal(a, b) for (na, a), (nb, b) in pairs) and [
            g["lr"] for g in self.optimizer.param_groups] == [g["lr"] for g in other.optimizer.param_groups]  # fmt: skip


Stateful.register(Run)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("sched", sorted(SCHEDULERS))
def test_a_get_state_dict_checkpoint_resumes_bit_identically_through_a_burn_checkpoint(tmp_path, opt, sched):
    original = Run(opt, sched)
    for batch in range(3):
        original.step(batch)
    original.save(tmp_path / "dcp")
    assert main(["convert-checkpoint", str(tmp_path / "dcp"), str(tmp_path / "burn"), "--epoch", "3", "-q"]) == 0
    assert main(["convert-checkpoint", str(tmp_path / "burn"), str(tmp_path / "resume"), "--dcp", "-q"]) == 0
    resumed = Run(opt, sched, seed=1)  # fresh weights, fresh (empty) optimizer state
    resumed.load(tmp_path / "resume")
    assert resumed.same_as(original)
    for batch in range(3, 6):
        original.step(batch)
        resumed.step(batch)
    assert resumed.same_as(original)


@pytest.mark.parametrize("layout", ["app", "app-flat"])
@pytest.mark.parametrize("opt", ["adamw", "sgd-momentum", "adamw-two-groups"])
def test_torchs_dcp_recipe_app_state_resumes_bit_identically_through_a_burn_checkpoint(tmp_path, layout, opt):
    original = Run(opt, "cosine", layout=layout)
    for batch in range(3):
        original.step(batch)
    original.save(tmp_path / "dcp")
    report = pytorch_to_burn_checkpoint(tmp_path / "dcp", tmp_path / "burn")
    assert report.params_with_state == 6 and report.scheduler == "CosineAnnealingLR"
    burn_checkpoint_to_pytorch(tmp_path / "burn", tmp_path / "resume", dcp=True)
    resumed = Run(opt, "cosine", seed=1, layout=layout)
    resumed.load(tmp_path / "resume")
    for batch in range(3, 5):
        original.step(batch)
        resumed.step(batch)
    assert resumed.same_as(original)


def test_name_keyed_optimizer_state_maps_as_the_index_keyed_one(tmp_path):
    run = Run("adamw", "cosine")
    for batch in range(3):
        run.step(batch)
    by_index = {"model": run.model.state_dict(), "optim": run.optimizer.state_dict(), "scheduler": run.scheduler.state_dict()}
    pytorch_to_burn_checkpoint(by_index, tmp_path / "by_index", seed=5)
    run.save(tmp_path / "dcp")
    report = pytorch_to_burn_checkpoint(tmp_path / "dcp", tmp_path / "by_name", seed=5)
    assert report.params_with_state == 6 and report.step == 3
    assert (tmp_path / "by_name/model-1.bpk").read_bytes() == (tmp_path / "by_index/model-1.bpk").read_bytes()
    assert (tmp_path / "by_name/scheduler-1.bpk").read_bytes() == (tmp_path / "by_index/scheduler-1.bpk").read_bytes()
    named, indexed = OptimizerRecord.load(tmp_path / "by_name/optim-1.bpk"), OptimizerRecord.load(tmp_path / "by_index/optim-1.bpk")
    assert [(t.name, t.numpy().tobytes()) for t in named.tensors] == [(t.name, t.numpy().tobytes()) for t in indexed.tensors]
    assert named.check(ModuleRecord.load(tmp_path / "by_name/model-1.bpk")).ok


def test_an_index_keyed_checkpoint_is_written_as_dcp_keyed_by_parameter_name(tmp_path):
    original = Run("sgd-momentum", "step")
    for batch in range(2):
        original.step(batch)
    torch.save({"model": original.model.state_dict(), "optim": original.optimizer.state_dict(),
                "scheduler": original.scheduler.state_dict()}, tmp_path / "ck.pt")  # fmt: skip
    pytorch_to_burn_checkpoint(tmp_path / "ck.pt", tmp_path / "burn")
    state, report = burn_checkpoint_to_pytorch(tmp_path / "burn", tmp_path / "resume", dcp=True)
    assert report.files == {"dcp": str(tmp_path / "resume")}
    assert sorted(state.optimizer["state"]) == ["0.bias", "0.weight", "1.bias", "1.weight", "3.bias", "3.weight"]
    assert state.optimizer["param_groups"][0]["params"] == list(dict(original.model.named_parameters()))
    resumed = Run("sgd-momentum", "step", seed=1)
    resumed.load(tmp_path / "resume")
    original.step(2)
    resumed.step(2)
    assert resumed.same_as(original)


def test_a_name_keyed_checkpoint_converts_back_to_pt_keyed_by_name(tmp_path):
    run = Run("adam", "none")
    run.step(0)
    model_sd, optim_sd = get_state_dict(run.model, run.optimizer)
    torch.save({"model": model_sd, "optimizer": optim_sd}, tmp_path / "ck.pt")
    pytorch_to_burn_checkpoint(tmp_path / "ck.pt", tmp_path / "burn")
    burn_checkpoint_to_pytorch(tmp_path / "burn", tmp_path / "back.pt")
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    assert list(back["optimizer"]["state"]) == list(optim_sd["state"])
    assert back["optimizer"]["param_groups"] == optim_sd["param_groups"]
    assert all(torch.equal(back["optimizer"]["state"][n]["exp_avg"], s["exp_avg"]) for n, s in optim_sd["state"].items())


def test_dcp_output_needs_a_folder(tmp_path):
    run = Run("adam", "none")
    run.step(0)
    pytorch_to_burn_checkpoint(model=run.model, optimizer=run.optimizer, out_dir=tmp_path / "burn")
    with pytest.raises(TypeError, match="needs out"):
        burn_checkpoint_to_pytorch(tmp_path / "burn", dcp=True)


def test_an_existing_dcp_folder_is_kept_unless_overwrite(tmp_path):
    run = Run("adam", "none")
    run.step(0)
    pytorch_to_burn_checkpoint(model=run.model, optimizer=run.optimizer, out_dir=tmp_path / "burn")
    (tmp_path / "resume").mkdir()
    assert main(["convert-checkpoint", str(tmp_path / "burn"), str(tmp_path / "resume"), "--dcp", "-q"]) == 1
    assert list((tmp_path / "resume").iterdir()) == []
    assert main(["convert-checkpoint", str(tmp_path / "burn"), str(tmp_path / "resume"), "--dcp", "--overwrite", "-q"]) == 0
    assert (tmp_path / "resume" / ".metadata").is_file()


def test_a_burn_native_checkpoint_is_written_as_dcp_that_get_state_dict_templates_load(tmp_path):
    import numpy as np

    from burnpack.records import AdamState, Checkpoints, CosineAnnealingLrScheduler, ModuleLrScheduler

    run = Run("adam", "cosine")
    burn = {}  # Burn's names and layouts, as a Burn learner saves them (no torch.* metadata)
    for name, tensor in run.model.state_dict().items():
        if not name.endswith("num_batches_tracked"):
            name = name.replace("1.weight", "1.gamma").replace("1.bias", "1.beta")
            burn[name] = tensor.numpy().T.copy() if name in ("0.weight", "3.weight") else tensor.numpy()
    record = ModuleRecord.from_tensors(burn)
    moments = {n: AdamState(5, np.full(a.shape, 0.1, np.float32), np.full(a.shape, 0.01, np.float32)) for n, a in burn.items() if "running" not in n}
    Checkpoints(tmp_path / "run").save_epoch(5, model=record, optim=OptimizerRecord.from_states(moments, module=record),
                                             scheduler=ModuleLrScheduler.of(CosineAnnealingLrScheduler(4)).to_record())  # fmt: skip
    assert main(["convert-checkpoint", str(tmp_path / "run"), str(tmp_path / "resume"), "--dcp", "-q",
                 "--optimizer-config", '{"kind": "adam", "lr": 0.01}',
                 "--scheduler-config", '{"kind": "cosine", "T_max": 7, "eta_min": 0.001, "base_lrs": [0.01]}']) == 0  # fmt: skip
    resumed = Run("adam", "cosine", seed=1)
    model_sd, optim_sd = get_state_dict(resumed.model, resumed.optimizer)
    state = {"model": model_sd, "optimizer": optim_sd, "scheduler": resumed.scheduler.state_dict()}
    dcp.load(state, checkpoint_id=tmp_path / "resume", no_dist=True)  # every key the template asks for is there
    set_state_dict(resumed.model, resumed.optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    resumed.scheduler.load_state_dict(state["scheduler"])
    assert all(torch.equal(a, b) for a, b in zip(resumed.model.parameters(), run.model.parameters()))
    first = resumed.optimizer.state[resumed.model[0].weight]
    assert first["step"].item() == 5 and torch.equal(first["exp_avg"], torch.full((8, 4), 0.1))
    assert resumed.scheduler.last_epoch == 5
