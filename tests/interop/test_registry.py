"""The one format table: a new format is one module plus one entry, detection follows one
documented precedence, and the documentation (docs/conversions.md) lists exactly the table's formats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.interop import ConversionError, convert
from burnpack.errors import AmbiguousFormatError
from burnpack.interop.format import Format, WriteOptions
from burnpack.interop.registry import (
    detect_format,
    format_table,
    formats,
    read_tensors,
    register,
    unregister,
)
from burnpack.interop.sharded import read_sharded, write_sharded

from . import jsontensors

CONVERSIONS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "conversions.md"
ARRAYS = {"fc.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "fc.bias": np.array([1, -2], np.int64)}


# -- a format added in one module (tests/interop/jsontensors.py) plus one entry ----------------------
@pytest.fixture
def json_format():
    register(jsontensors.FORMAT)
    yield jsontensors.FORMAT
    unregister(jsontensors.FORMAT.name)


def test_a_registered_format_converts_both_ways_through_convert(json_format, tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk", metadata={"k": "v"})
    report = convert(tmp_path / "m.bpk", tmp_path / "m.jt")
    assert report.target_format == "jsontensors"
    assert detect_format(tmp_path / "m.jt") == "jsontensors"
    renamed = tmp_path / "m.data"  # recognized by its sniff, not its extension
    renamed.write_bytes((tmp_path / "m.jt").read_bytes())
    convert(renamed, tmp_path / "back.bpk")
    with burnpack.load(tmp_path / "back.bpk") as pack:
        assert {n: pack[n].numpy().tolist() for n in pack.names} == {n: a.tolist() for n, a in ARRAYS.items()}
        assert pack.metadata["k"] == "v"


def test_a_registered_format_says_what_it_stores_otherwise(json_format, tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk", metadata={"k": "v"})
    report = convert(tmp_path / "m.bpk", tmp_path / "m.jt")
    assert report.warnings == ["fc.weight: written as decimal text"]
    assert read_tensors(tmp_path / "m.jt").metadata == {"k": "v"}  # no producer stamp: it does not ask for one


def test_diff_reads_a_registered_format_with_its_independent_reader(json_format, tmp_path, capsys):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "m.jt")
    assert main(["diff", str(tmp_path / "m.jt"), str(tmp_path / "m.bpk"), "--json"]) == 0
    assert "json.loads" in capsys.readouterr().out
    doc = json.loads((tmp_path / "m.jt").read_text())
    doc["tensors"]["fc.bias"]["data"] = [1, 2]  # what either reader reads, the other must see too
    (tmp_path / "m.jt").write_text(json.dumps(doc))
    assert main(["diff", str(tmp_path / "m.jt"), str(tmp_path / "m.bpk")]) == 1


def test_inspect_reads_a_registered_format(json_format, tmp_path, capsys):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "m.jt")
    assert main(["inspect", str(tmp_path / "m.jt"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "jsontensors"


def test_the_shard_writer_names_and_writes_shards_by_the_format_it_is_given(tmp_path):
    tset = read_tensors(ARRAYS)
    written = write_sharded(tset, tmp_path / "shards", 20, jsontensors.FORMAT, WriteOptions())
    assert [p.name for p in written] == ["tensors-00001-of-00002.jt", "tensors-00002-of-00002.jt", "tensors.jt.index.json"]
    back = read_sharded(tmp_path / "shards", jsontensors.FORMAT, [jsontensors.FORMAT], jsontensors.ReadOptions())
    assert {e.name: e.numpy().tolist() for e in back.entries} == {n: a.tolist() for n, a in ARRAYS.items()}


def test_a_registered_format_is_a_choice_of_from_and_to_on_the_command_line(json_format, tmp_path, capsys):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "m.out"), "--to", "jt", "-q"]) == 0
    assert main(["convert", str(tmp_path / "m.out"), str(tmp_path / "b.bpk"), "--from", "jsontensors", "-q"]) == 0
    assert main(["diff", str(tmp_path / "m.out"), str(tmp_path / "m.bpk")]) == 0


def test_an_unregistered_format_is_not_a_choice(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["convert", "a.bpk", "b.jt", "--to", "jsontensors"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_a_format_name_or_alias_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="taken"):
        register(Format("other", jsontensors.read, aliases=("bpk",)))


def test_two_formats_recognizing_a_file_equally_are_refused_naming_both(tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    twin = register(Format("twin", jsontensors.read, sniff=lambda probe: probe.head[:4] == b"NRUB"))
    try:
        with pytest.raises(AmbiguousFormatError, match="burnpack and twin") as error:
            convert(tmp_path / "m.bpk", tmp_path / "o.safetensors")
        assert error.value.candidates == ["burnpack", "twin"]
        convert(tmp_path / "m.bpk", tmp_path / "o.safetensors", from_format="burnpack")  # an explicit format wins
    finally:
        unregister(twin.name)


def test_the_documentation_lists_exactly_the_registered_formats():
    assert format_table() in CONVERSIONS_PAGE.read_text(encoding="utf-8")
    assert [f.name for f in formats()] == ["burnpack", "safetensors", "pytorch", "npz", "safetensors-shards", "pytorch-shards", "dcp"]


def test_an_option_a_format_does_not_use_is_refused(tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    with pytest.raises(ConversionError, match="compress does not apply to safetensors"):
        convert(tmp_path / "m.bpk", tmp_path / "o.safetensors", compress=True)
    assert not (tmp_path / "o.safetensors").exists()


# -- a folder is not DCP because it holds a .metadata file ----------------------------------------
def _hf_folder_with_hidden_pickle(folder: Path, marker: Path, *, index: bool = True) -> Path:
    import pickle

    from safetensors.numpy import save_file

    class Payload:
        def __reduce__(self):
            import os

            return (os.system, (f"touch {marker}",))

    folder.mkdir()
    if index:
        save_file({"fc.weight": ARRAYS["fc.weight"]}, folder / "model-00001-of-00002.safetensors")
        save_file({"fc.bias": ARRAYS["fc.bias"]}, folder / "model-00002-of-00002.safetensors")
        weight_map = {"fc.weight": "model-00001-of-00002.safetensors", "fc.bias": "model-00002-of-00002.safetensors"}
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    else:
        save_file(ARRAYS, folder / "model.safetensors")
    (folder / ".metadata").write_bytes(pickle.dumps(Payload()))
    return folder


@pytest.mark.parametrize("from_format", [None, "safetensors"])
def test_a_safetensors_folder_with_a_hidden_metadata_pickle_converts_and_runs_nothing(tmp_path, from_format):
    pytest.importorskip("torch")  # the pickle would be run by torch's DCP reader
    marker = tmp_path / "ran"
    folder = _hf_folder_with_hidden_pickle(tmp_path / "model", marker)
    report = convert(folder, tmp_path / "out.bpk", from_format=from_format)
    assert not marker.exists()
    assert report.source_format == "safetensors" and sorted(report.applied) == sorted(ARRAYS)


def test_a_single_file_model_folder_with_a_hidden_metadata_pickle_is_read_as_its_weights(tmp_path):
    pytest.importorskip("torch")
    marker = tmp_path / "ran"
    folder = _hf_folder_with_hidden_pickle(tmp_path / "model", marker, index=False)
    assert main(["convert", str(folder), str(tmp_path / "out.bpk"), "-q"]) == 0
    assert not marker.exists()
    assert burnpack.load(tmp_path / "out.bpk").names == sorted(ARRAYS)


def test_a_folder_with_only_dcp_metadata_is_read_as_dcp(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp

    dcp.save({"w": torch.ones(2)}, checkpoint_id=tmp_path / "ck", no_dist=True)
    assert detect_format(tmp_path / "ck") == "dcp"
    convert(tmp_path / "ck", tmp_path / "out.bpk")
    assert burnpack.load(tmp_path / "out.bpk")["w"].numpy().tolist() == [1.0, 1.0]


def test_from_dcp_reads_a_folder_that_also_holds_shards(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp
    from safetensors.numpy import save_file

    dcp.save({"w": torch.ones(2)}, checkpoint_id=tmp_path / "ck", no_dist=True)
    save_file({"other": np.zeros(3, np.float32)}, tmp_path / "ck" / "model.safetensors")
    assert detect_format(tmp_path / "ck") == "safetensors-shards"
    convert(tmp_path / "ck", tmp_path / "out.bpk", from_format="dcp")
    assert burnpack.load(tmp_path / "out.bpk").names == ["w"]


def test_a_folder_with_safetensors_and_bin_shards_is_read_as_safetensors(tmp_path):
    from safetensors.numpy import save_file

    (tmp_path / "m").mkdir()
    save_file(ARRAYS, tmp_path / "m" / "model.safetensors")
    (tmp_path / "m" / "pytorch_model.bin").write_bytes(b"not read")
    assert detect_format(tmp_path / "m") == "safetensors-shards"


# -- diff and inspect take what convert takes ----------------------------------------------------
def test_diff_takes_a_shard_folder(tmp_path, capsys):
    from safetensors.numpy import save_file

    (tmp_path / "m").mkdir()
    save_file({"fc.weight": ARRAYS["fc.weight"]}, tmp_path / "m" / "model-00001-of-00001.safetensors")
    index = {"metadata": {}, "weight_map": {"fc.weight": "model-00001-of-00001.safetensors"}}
    (tmp_path / "m" / "model.safetensors.index.json").write_text(json.dumps(index))
    burnpack.save({"fc.weight": ARRAYS["fc.weight"]}, tmp_path / "m.bpk")
    assert main(["diff", str(tmp_path / "m"), str(tmp_path / "m.bpk")]) == 0
    assert "identical" in capsys.readouterr().out


def test_inspect_takes_a_shard_folder(tmp_path, capsys):
    from safetensors.numpy import save_file

    (tmp_path / "m").mkdir()
    save_file(ARRAYS, tmp_path / "m" / "model.safetensors")
    assert main(["inspect", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: safetensors-shards folder;") and "fc.weight" in out and "fc.bias" in out
