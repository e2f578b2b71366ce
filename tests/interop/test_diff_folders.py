"""``burnpack diff`` reads the folders ``convert`` reads: a DCP checkpoint and HF shards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import burnpack
from burnpack.cli.main import main
from burnpack.interop.dcp import write_dcp
from burnpack.interop.registry import read_tensors, write_tensors

ARRAYS = {"a.weight": np.ones((4, 4), np.float32), "b.weight": np.arange(6, dtype=np.float32)}


def test_diff_compares_a_dcp_folder_with_a_pack(tmp_path, capsys):
    write_dcp(read_tensors(ARRAYS), tmp_path / "dcp")
    burnpack.save({**ARRAYS, "b.weight": ARRAYS["b.weight"] + 1}, tmp_path / "m.bpk")
    assert main(["diff", str(tmp_path / "dcp"), str(tmp_path / "m.bpk"), "--json"]) == 1
    assert [c["name"] for c in json.loads(capsys.readouterr().out)["changed"]] == ["b.weight"]


def test_diff_compares_a_folder_of_shards_with_a_pack(tmp_path, capsys):
    write_tensors(read_tensors(ARRAYS), Path(tmp_path / "shards"), "safetensors-shards", max_shard_size=80)
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    main(["diff", str(tmp_path / "shards"), str(tmp_path / "m.bpk"), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert (result["changed"], result["added"], result["removed"]) == ([], [], [])
