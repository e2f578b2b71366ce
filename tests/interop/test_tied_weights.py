"""Tied weights — one tensor under several names in a ``.pt`` (an embedding and the output layer
that reuses it) — are written once where the target can alias them (a ``.pt``), and reported
where it cannot (a ``.bpk``, safetensors, shards, a Burn checkpoint)."""

from __future__ import annotations

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.interop import convert
from burnpack.interop.checkpoint import pytorch_to_burn_checkpoint

torch = pytest.importorskip("torch")


class TiedModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(64, 16)
        self.head = torch.nn.Linear(16, 64, bias=False)
        self.head.weight = self.emb.weight


@pytest.fixture
def tied_pt(tmp_path):
    path = tmp_path / "tied.pt"
    torch.save(TiedModel().state_dict(), path)
    return path


def _one_storage(path) -> bool:
    state = torch.load(path, weights_only=True)
    return state["emb.weight"].untyped_storage().data_ptr() == state["head.weight"].untyped_storage().data_ptr()


@pytest.mark.parametrize("source", ["file", "module", "state_dict"])
def test_tied_weights_are_written_once_into_a_pt(tied_pt, tmp_path, source):
    given = {"file": tied_pt, "module": TiedModel(), "state_dict": TiedModel().state_dict()}[source]
    report = convert(given, tmp_path / "out.pt")
    assert report.tied == [["emb.weight", "head.weight"]] and not report.warnings
    assert _one_storage(tmp_path / "out.pt")
    assert (tmp_path / "out.pt").stat().st_size < 64 * 16 * 4 * 1.5  # one copy of the 4 KiB tensor


@pytest.mark.parametrize("target", ["out.bpk", "out.safetensors", "out.npz"])
def test_tied_weights_are_reported_where_the_target_cannot_alias_them(tied_pt, tmp_path, capsys, target):
    assert main(["convert", str(tied_pt), str(tmp_path / target)]) == 0
    out = capsys.readouterr().out
    assert "tied weights emb.weight, head.weight (one tensor in the source) written as 2 tensors: a " in out
    assert "has no place for one tensor under several names" in out


def test_tied_weights_split_into_shards_are_reported(tied_pt, tmp_path):
    report = convert(tied_pt, tmp_path / "out", to_format="pytorch", max_shard_size=4096)
    assert report.tied == [] and any(w.startswith("tied weights emb.weight, head.weight") for w in report.warnings)


def test_tied_weights_the_adapter_changes_apart_are_reported_with_the_change(tied_pt, tmp_path):
    report = convert(tied_pt, tmp_path / "out.pt", adapter="pytorch", module_types={"emb": "Embedding", "head": "Linear"})
    assert report.tied == []
    assert report.warnings == [
        "tied weights emb.weight, head.weight (one tensor in the source) written as 2 tensors: the conversion changed them "
        "apart (head.weight: transposed [64, 16] -> [16, 64])"
    ]


def test_a_training_state_with_tied_weights_converts_with_their_optimizer_state_once(tmp_path):
    model = TiedModel()
    optimizer = torch.optim.Adam(model.parameters())
    model.head(model.emb(torch.tensor([1]))).sum().backward()
    optimizer.step()
    source = tmp_path / "state.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 1}, source)
    report = pytorch_to_burn_checkpoint(source, tmp_path / "ck", module_types={"emb": "Embedding", "head": "Linear"})
    assert any(w.startswith("tied weights emb.weight, head.weight (one tensor in the source) written as 2 tensors") for w in report.warnings)
    with burnpack.load(tmp_path / "ck" / "model-1.bpk") as pack:
        assert sorted(pack.names) == ["emb.weight", "head.weight"]
        emb_id = pack["emb.weight"].param_id
    with burnpack.load(tmp_path / "ck" / "optim-1.bpk") as optim:
        assert {name.partition(".")[0] for name in optim.names} == {str(emb_id)}
    np.testing.assert_array_equal(optim_moment(tmp_path, emb_id), optimizer.state[model.emb.weight]["exp_avg"].numpy())


def optim_moment(tmp_path, pid):
    with burnpack.load(tmp_path / "ck" / "optim-1.bpk") as optim:
        return optim[f"{pid}.momentum.moment_1"].numpy().copy()
