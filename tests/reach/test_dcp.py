"""``torch.distributed.checkpoint`` folders through torch's own DCP code, single process:
convert to ``.bpk`` tensor by tensor, convert-checkpoint to a Burn checkpoint, and back to a
DCP folder that ``dcp.load`` restores."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")

import burnpack  # noqa: E402
import burnpack.torch  # noqa: E402
from burnpack.cli import main  # noqa: E402
from burnpack.interop import ConversionError, convert  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(6, 4)
        self.head = torch.nn.Linear(4, 3)


def _trained():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    for _ in range(3):
        loss = model.head(model.emb(torch.tensor([0, 1, 2]))).square().sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    return model, optimizer, scheduler


def _save_dcp(folder, state) -> None:
    dcp.save(state, checkpoint_id=folder, no_dist=True)


def test_a_dcp_model_converts_to_bpk(tmp_path):
    model, _, _ = _trained()
    extra = {"mask": torch.tensor([True, False]), "half": torch.arange(4, dtype=torch.bfloat16)}
    _save_dcp(tmp_path / "ck", {"model": model.state_dict(), "extra": extra, "step": 3})
    report = convert(tmp_path / "ck", tmp_path / "m.bpk", top_level_key="model")
    assert report.source_format == "dcp"
    loaded = burnpack.torch.load_file(tmp_path / "m.bpk")
    assert set(loaded) == set(model.state_dict())
    assert all(torch.equal(loaded[n], t) for n, t in model.state_dict().items())
    convert(tmp_path / "ck", tmp_path / "all.bpk")
    everything = burnpack.torch.load_file(tmp_path / "all.bpk")
    assert torch.equal(everything["extra.half"], extra["half"]) and everything["extra.mask"].tolist() == [True, False]
    assert "step" not in everything  # not a tensor


def test_dcp_tensors_are_loaded_one_at_a_time(tmp_path, monkeypatch):
    model, _, _ = _trained()
    _save_dcp(tmp_path / "ck", model.state_dict())
    calls = []
    original = dcp.load

    def counting(state, **kwargs):
        calls.append(list(state))
        return original(state, **kwargs)

    monkeypatch.setattr(dcp, "load", counting)
    convert(tmp_path / "ck", tmp_path / "m.bpk")
    assert sorted(c[0] for c in calls) == sorted(model.state_dict()) and all(len(c) == 1 for c in calls)


def test_bpk_converts_to_a_dcp_folder_that_dcp_load_restores(tmp_path):
    model, _, _ = _trained()
    burnpack.torch.save_file(model.state_dict(), tmp_path / "m.bpk")
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "ck"), "--to", "dcp", "-q"]) == 0
    fresh = Net()
    state = fresh.state_dict()
    dcp.load(state, checkpoint_id=tmp_path / "ck", no_dist=True)
    fresh.load_state_dict(state)
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), model.state_dict().values()))
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "ck"), "--to", "dcp", "-q"]) == 1  # kept


def test_convert_checkpoint_reads_a_dcp_training_state_like_the_same_torch_save(tmp_path):
    model, optimizer, scheduler = _trained()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
    _save_dcp(tmp_path / "dcp", state)
    torch.save(state, tmp_path / "ck.pt")
    args = ["--module-type", "emb=Embedding", "--module-type", "head=Linear", "--seed", "7", "-q"]
    assert main(["convert-checkpoint", str(tmp_path / "dcp"), str(tmp_path / "from_dcp"), *args]) == 0
    assert main(["convert-checkpoint", str(tmp_path / "ck.pt"), str(tmp_path / "from_pt"), *args]) == 0
    written = sorted(p.name for p in (tmp_path / "from_pt").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "from_dcp").iterdir()) and written
    for name in written:
        assert (tmp_path / "from_dcp" / name).read_bytes() == (tmp_path / "from_pt" / name).read_bytes(), name


def test_a_folder_without_dcp_metadata_is_refused_as_dcp(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(ConversionError, match="no .metadata"):
        convert(tmp_path / "x", tmp_path / "m.bpk", from_format="dcp")


def test_a_corrupt_dcp_metadata_is_a_conversion_error(tmp_path):
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / ".metadata").write_bytes(b"not a pickle")
    with pytest.raises(ConversionError, match="cannot read its metadata"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")


def _save_sharded_with_two_gloo_ranks(rank: int, folder: str, init: str) -> None:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        mesh = init_device_mesh("cpu", (2,))
        full = torch.arange(24, dtype=torch.float32).reshape(6, 4)
        state = {"w": distribute_tensor(full, mesh, [Shard(0)]), "b": torch.ones(3)}
        dcp.save(state, checkpoint_id=folder)
    finally:
        dist.destroy_process_group()


def test_a_checkpoint_sharded_by_two_gloo_processes_converts_whole(tmp_path):
    folder = tmp_path / "ck"
    torch.multiprocessing.spawn(_save_sharded_with_two_gloo_ranks, args=(str(folder), f"file://{tmp_path}/pg"), nprocs=2)
    assert len(list(folder.glob("*.distcp"))) == 2  # each rank wrote its own shard
    convert(folder, tmp_path / "m.bpk")
    loaded = burnpack.torch.load_file(tmp_path / "m.bpk")
    assert torch.equal(loaded["w"], torch.arange(24, dtype=torch.float32).reshape(6, 4))
    assert torch.equal(loaded["b"], torch.ones(3))
