"""``burnpack inspect`` lists every input ``convert`` reads: a file of any registered format, a
shard folder, a DCP folder (a URL: ``tests/core/test_remote.py``), under a line naming the format
and what it has no place for; ``.bpk``-only options on another format are usage errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main

ARRAYS = {"layers.10.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "layers.2.weight": np.ones((2, 3), np.float32),
          "position_ids": np.arange(4, dtype=np.int64)}  # fmt: skip


def _safetensors(path, arrays=ARRAYS, metadata=None):
    from safetensors.numpy import save_file

    save_file(arrays, path, metadata=metadata)
    return path


def _rows(out: str) -> list[list[str]]:
    """The table's rows (after the header and its rule), split into cells."""
    table = out.split("\n\n")[1].splitlines()
    return [row.split() for row in table[2:]]


def test_inspect_lists_a_safetensors_file_in_natural_order_under_its_format(tmp_path, capsys):
    path = _safetensors(tmp_path / "m.safetensors", metadata={"producer": "hf"})
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: safetensors file; no place for param ids, scalars, Flex32 or Bool stores\n\n")
    assert [row[:3] for row in _rows(out)] == [["layers.2.weight", "F32", "[2,"], ["layers.10.weight", "F32", "[2,"], ["position_ids", "I64", "[4]"]]
    assert "\n  producer = 'hf'\n" in out
    assert out.endswith("\n3 tensors, 16 parameters (4 in integer or bool tensors), 80 B of tensor data, 1 metadata entry\n")


def test_inspect_of_another_format_has_no_param_id_column_and_no_bpk_layout_facts(tmp_path, capsys):
    assert main(["inspect", str(_safetensors(tmp_path / "m.safetensors"))]) == 0
    out = capsys.readouterr().out
    assert "param_id" not in out and "record kind" not in out and "data section" not in out and "version" not in out


def test_inspect_lists_an_npz_file(tmp_path, capsys):
    np.savez(tmp_path / "m.npz", **ARRAYS)
    assert main(["inspect", "--sort", "name", str(tmp_path / "m.npz")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: npz file; no place for param ids or scalars\n\n")
    assert [row[0] for row in _rows(out)] == ["layers.10.weight", "layers.2.weight", "position_ids"]


def test_inspect_lists_a_pt_file_with_the_entries_convert_skips(tmp_path, capsys):
    torch = pytest.importorskip("torch")

    state = {"model": {name: torch.from_numpy(array) for name, array in ARRAYS.items()}, "blocks": [{"w": torch.ones(2)}], "epoch": 3}
    torch.save(state, tmp_path / "m.pt")
    assert main(["inspect", str(tmp_path / "m.pt")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: pytorch file; no place for param ids, scalars, metadata, Flex32 or Bool stores\n\n")
    assert [row[0] for row in _rows(out)] == ["blocks.0.w", "model.layers.2.weight", "model.layers.10.weight", "model.position_ids"]
    assert "\nnot tensors (convert skips them):\n  epoch: an int, not a tensor\n" in out


def test_inspect_lists_a_shard_folder(tmp_path, capsys):
    from safetensors.numpy import save_file

    folder = tmp_path / "model"
    folder.mkdir()
    save_file({"layers.2.weight": ARRAYS["layers.2.weight"]}, folder / "model-00001-of-00002.safetensors")
    save_file({"layers.10.weight": ARRAYS["layers.10.weight"]}, folder / "model-00002-of-00002.safetensors")
    weight_map = {"layers.2.weight": "model-00001-of-00002.safetensors", "layers.10.weight": "model-00002-of-00002.safetensors"}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    assert main(["inspect", "--tree", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: safetensors-shards folder; no place for param ids, scalars, Flex32 or Bool stores\n\n")
    assert "layers/  12 parameters\n  2/  6 parameters\n    weight  F32 [2, 3]  6\n  10/  6 parameters\n" in out


def test_inspect_lists_a_dcp_folder_with_its_non_tensor_entries(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp

    dcp.save({"w": torch.ones(2, 3), "optim": {"step": 7, "m": torch.zeros(3)}}, checkpoint_id=tmp_path / "ck", no_dist=True)
    assert main(["inspect", "--json", str(tmp_path / "ck")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "dcp" and report["lacks"] == ["param ids", "scalars", "metadata", "Flex32", "Bool stores"]
    assert [(t["name"], t["shape"]) for t in report["tensors"]] == [("optim.m", [3]), ("w", [2, 3])]
    assert report["skipped_entries"] == {"optim.step": "an int, not a tensor"}


def test_inspect_json_of_another_format_has_totals_and_no_bpk_layout(tmp_path, capsys):
    assert main(["inspect", "--json", "--filter", "weight", str(_safetensors(tmp_path / "m.safetensors"))]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["tensors"] == 2 and report["totals"]["parameters"] == 12 and report["totals"]["bytes"] == 48
    assert not {"record_kind", "version", "data_section_start", "file_size"} & set(report)
    assert all("data_offsets" not in t and t["param_id"] is None for t in report["tensors"])


def test_inspect_json_of_a_pack_names_its_format(tmp_path, capsys):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    assert main(["inspect", "--json", str(tmp_path / "m.bpk")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["format"], report["lacks"], report["version"]) == ("burnpack", [], 1)


def test_inspect_filter_finding_nothing_in_another_format_exits_1(tmp_path, capsys):
    assert main(["inspect", "--filter", "^nothing", str(_safetensors(tmp_path / "m.safetensors"))]) == 1
    assert "no tensor name matches '^nothing'" in capsys.readouterr().out


def test_inspect_sort_file_of_another_format_is_its_readers_order(tmp_path, capsys):
    from burnpack.interop.registry import read_tensors

    path = _safetensors(tmp_path / "m.safetensors")
    with read_tensors(path) as tset:
        order = tset.names
    assert main(["inspect", "--sort", "file", str(path)]) == 0
    assert [row[0] for row in _rows(capsys.readouterr().out)] == order


def test_inspect_stats_of_another_format(tmp_path, capsys):
    assert main(["inspect", "--stats", "--filter", "10", str(_safetensors(tmp_path / "m.safetensors"))]) == 0
    assert _rows(capsys.readouterr().out) == [["layers.10.weight", "F32", "[2,", "3]", "6", "24", "B", "0", "5", "2.5"]]


def test_inspect_reads_a_file_as_the_format_from_names(tmp_path, capsys):
    path = _safetensors(tmp_path / "weights.dat")
    assert main(["inspect", "--from", "st", str(path)]) == 0
    assert capsys.readouterr().out.startswith("format: safetensors file;")


def test_inspect_from_dcp_reads_a_folder_that_also_holds_shards(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp

    dcp.save({"w": torch.ones(2)}, checkpoint_id=tmp_path / "ck", no_dist=True)
    _safetensors(tmp_path / "ck" / "model.safetensors", {"other": np.zeros(3, np.float32)})
    assert main(["inspect", "--from", "dcp", str(tmp_path / "ck")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: dcp folder;") and [row[0] for row in _rows(out)] == ["w"]


def test_legacy_ok_on_another_format_is_a_usage_error(tmp_path, capsys):
    path = _safetensors(tmp_path / "m.safetensors")
    assert main(["inspect", "--legacy-ok", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"burnpack: {path}: UsageError: --legacy-ok reads .bpk files of older Burn versions, not this safetensors file\n"
    )


@pytest.mark.parametrize("command", [["validate"], ["repack", "{out}"]])
def test_bpk_only_commands_say_how_to_convert_another_format(tmp_path, capsys, command):
    path = _safetensors(tmp_path / "m.safetensors")
    args = [command[0], str(path), *(c.format(out=tmp_path / "out.bpk") for c in command[1:])]
    assert main(args) == 1
    assert capsys.readouterr().err == f"burnpack: {path}: NotBurnpack: safetensors file: use burnpack convert {path} OUT.bpk\n"


def test_validate_of_a_shard_folder_says_how_to_convert_it(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    _safetensors(tmp_path / "m" / "model.safetensors")
    assert main(["validate", str(tmp_path / "m")]) == 1
    assert f"NotBurnpack: safetensors-shards folder: use burnpack convert {tmp_path / 'm'} OUT.bpk" in capsys.readouterr().err
