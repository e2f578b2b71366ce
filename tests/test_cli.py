"""The command line: inspect, dump --json, validate and repack."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import burnpack
from burnpack.cli import main


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.bpk"
    burnpack.save({"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}, path, metadata={"producer": "test"}, scalars={"epoch": 3})
    return path


def test_inspect_prints_a_table_metadata_scalars_and_a_summary(model, capsys):
    assert main(["inspect", str(model)]) == 0
    out = capsys.readouterr().out
    assert "w     F32    [2, 3]       6  24 B" in out
    assert "producer = 'test'" in out and "epoch = Int(3)" in out
    assert out.rstrip().splitlines()[-1].startswith("2 tensors, 9 parameters, 36 B of tensor data, 1 metadata entry, 1 scalar;")


def test_dump_json_prints_the_protocol_object(model, capsys):
    assert main(["dump", "--json", str(model)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] and [t["name"] for t in result["tensors"]] == ["b", "w"]
    assert result["tensors"][1]["dtype"] == "F32" and result["tensors"][1]["byte_len"] == 24
    assert result["scalars"] == {"epoch": {"type": "Int", "value": 3}}


def test_dump_json_reports_an_open_failure_with_exit_code_1(tmp_path, capsys):
    bad = tmp_path / "bad.bpk"
    bad.write_bytes(b"BURN" + bytes(20))
    assert main(["dump", "--json", str(bad)]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == {"variant": "InvalidMagicNumber", "stage": "open", "message": json.loads(json.dumps(str(burnpack.InvalidMagicNumber(where="bytes 0..4 are 42 55 52 4e"))))}


def test_validate_exits_0_for_a_valid_file_and_1_for_an_invalid_one(model, tmp_path, capsys):
    assert main(["validate", "--strict", str(model)]) == 0
    broken = tmp_path / "broken.bpk"
    broken.write_bytes(b"NRUB" + model.read_bytes()[4:30])
    assert main(["validate", str(broken)]) == 1
    assert f"burnpack: {broken}: IoError: " in capsys.readouterr().err


def test_plain_validate_says_tensor_access_was_not_checked_and_deep_reads_every_tensor(model, tmp_path, capsys):
    cut = tmp_path / "cut.bpk"
    cut.write_bytes(model.read_bytes()[:-1])  # the last tensor lost a byte: Burn opens it, fails on access
    assert main(["validate", str(cut)]) == 0
    assert "tensor access not checked (use --deep)" in capsys.readouterr().out
    assert main(["validate", "--deep", str(cut)]) == 1
    err = capsys.readouterr().err
    assert f"burnpack: {cut}: ValidationError: " in err and "1 of 2 tensors cannot be read" in err
    assert main(["validate", "--deep", str(model)]) == 0
    assert "all 2 tensors checked" in capsys.readouterr().out


def test_validate_strict_rejects_what_the_default_level_accepts(model, tmp_path):
    padded = tmp_path / "padded.bpk"
    padded.write_bytes(model.read_bytes() + b"\x00")
    assert main(["validate", str(padded)]) == 0
    assert main(["validate", "--strict", str(padded)]) == 1


def test_repack_rewrites_canonically_keeping_data_order(model, tmp_path):
    messy = tmp_path / "messy.bpk"
    messy.write_bytes(model.read_bytes() + b"junk")
    out = tmp_path / "clean.bpk"
    assert main(["repack", str(messy), str(out)]) == 0
    assert out.read_bytes() == model.read_bytes()


def test_python_dash_m_burnpack_runs_the_cli(model):
    result = subprocess.run([sys.executable, "-m", "burnpack", "validate", str(model)], capture_output=True, text=True)
    assert result.returncode == 0 and "valid" in result.stdout


def test_output_piped_into_a_closed_reader_ends_quietly(tmp_path):
    big = tmp_path / "big.bpk"  # a table far larger than a pipe's buffer
    burnpack.save({f"layers.{i}.weight": np.zeros(1, np.float32) for i in range(5000)}, big)
    result = subprocess.run(
        f"{sys.executable} -m burnpack inspect {big} | head -1", shell=True, capture_output=True, text=True
    )
    assert result.stdout.startswith("record kind:")
    assert "Traceback" not in result.stderr


def test_dump_without_a_file_or_batch_says_what_it_needs(capsys):
    assert main(["dump"]) == 2
    assert capsys.readouterr().err == "burnpack: UsageError: dump needs a file (or --batch)\n"


def test_dump_prints_json_without_the_json_flag(model, capsys):
    assert main(["dump", str(model)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
