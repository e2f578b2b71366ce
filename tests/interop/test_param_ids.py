"""Param ids a conversion invents are derived from the tensor paths (the rule of
``burnpack.records.derive_param_ids``, in docs/conversions.md): the same input gives the same
bytes; ids the source already has are kept."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.interop import convert
from burnpack.interop.checkpoint import pytorch_to_burn_checkpoint
from burnpack.records import derive_param_ids

from .test_checkpoint import TYPES, checkpoint


def _blake(key: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def test_an_id_is_the_blake2b_of_its_path_as_documented():
    assert derive_param_ids(["fc.weight", "fc.bias"]) == [_blake(b"burnpack param id\x00fc.weight"), _blake(b"burnpack param id\x00fc.bias")]
    assert derive_param_ids(["fc.weight"], seed=7) == [_blake(b"burnpack param id\x007\x00fc.weight")]


def test_a_taken_id_is_derived_again_with_a_counter():
    first = _blake(b"burnpack param id\x00w")
    assert derive_param_ids(["w"], taken={first}) == [_blake(b"burnpack param id\x00w\x001")]
    assert derive_param_ids(["w", "w"]) == [first, _blake(b"burnpack param id\x00w\x001")]


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_converting_the_same_training_state_twice_gives_the_same_files(tmp_path):
    state = checkpoint()
    for out in ("a", "b"):
        pytorch_to_burn_checkpoint(state, tmp_path / out, module_types=TYPES)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    with burnpack.load(tmp_path / "a" / "model-4.bpk") as pack:
        ids = {name: pack[name].param_id for name in pack.names}
    assert ids == dict(zip(ids, derive_param_ids(ids)))


def test_a_seed_gives_other_ids_the_same_on_every_run(tmp_path):
    state = checkpoint()
    for out, seed in (("a", 1), ("b", 1), ("c", None)):
        pytorch_to_burn_checkpoint(state, tmp_path / out, module_types=TYPES, seed=seed)
    assert _files(tmp_path / "a") == _files(tmp_path / "b") != _files(tmp_path / "c")


def test_convert_checkpoint_twice_on_the_command_line_gives_the_same_files(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    source = tmp_path / "state.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 1}, source)
    for out in ("a", "b"):
        assert main(["convert-checkpoint", "-q", str(source), str(tmp_path / out)]) == 0
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_new_param_ids_are_the_same_on_every_run(tmp_path):
    source = tmp_path / "m.npz"
    np.savez(source, **{"fc.weight": np.ones((2, 3), np.float32), "fc.bias": np.zeros(2, np.float32)})
    for out in ("a.bpk", "b.bpk"):
        convert(source, tmp_path / out, param_ids="new")
    assert (tmp_path / "a.bpk").read_bytes() == (tmp_path / "b.bpk").read_bytes()
    with burnpack.load(tmp_path / "a.bpk") as pack:
        assert [pack[n].param_id for n in pack.names] == derive_param_ids(pack.names)


def test_ids_the_source_has_are_kept(tmp_path):
    source = tmp_path / "in.bpk"
    burnpack.save([burnpack.Tensor.from_numpy("w", np.ones(2, np.float32), param_id=12345)], source)
    assert main(["convert", "-q", str(source), str(tmp_path / "out.bpk")]) == 0
    with burnpack.load(tmp_path / "out.bpk") as pack:
        assert pack["w"].param_id == 12345
