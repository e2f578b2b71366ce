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
from burnpack.interop.registry import (
    Format,
    ReadOptions,
    WriteOptions,
    detect_format,
    format_table,
    formats,
    register,
    unregister,
)
from burnpack.interop.tensors import Entry, TensorSet

CONVERSIONS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "conversions.md"
ARRAYS = {"fc.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "fc.bias": np.array([1, -2], np.int64)}


# -- a throwaway format: JSON text, one module's worth of reader, writer and sniff -------------------
def _read_json(path: Path, options: ReadOptions) -> TensorSet:
    doc = json.loads(path.read_text())
    entries = [Entry.from_numpy(name, np.array(t["data"], t["dtype"]).reshape(t["shape"])) for name, t in doc["tensors"].items()]
    return TensorSet(entries, doc.get("metadata", {}), format="jsontensors")


def _write_json(tset: TensorSet, path: Path, options: WriteOptions) -> Path:
    tensors = {}
    for entry in tset.entries:
        array = entry.numpy()
        tensors[entry.name] = {"dtype": str(array.dtype), "shape": list(array.shape), "data": array.reshape(-1).tolist()}
    path.write_text(json.dumps({"jsontensors": 1, "metadata": tset.metadata, "tensors": tensors}))
    return path


JSON_FORMAT = Format(
    "jsontensors", _read_json, _write_json, ("jt",), (".jt",), lambda probe: probe.head.startswith(b'{"jsontensors"'),
    "tensors as JSON text (a test format)", remote="fetched",
)  # fmt: skip


@pytest.fixture
def json_format():
    register(JSON_FORMAT)
    yield JSON_FORMAT
    unregister(JSON_FORMAT.name)


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
        register(Format("other", _read_json, aliases=("bpk",)))


def test_two_formats_recognizing_a_file_equally_are_refused_naming_both(tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    twin = register(Format("twin", _read_json, sniff=lambda probe: probe.head[:4] == b"NRUB"))
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
