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


# -- one error style, interruptions, pipes, versions -------------------------------------------------
def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out == f"burnpack {burnpack.__version__}\n"


def test_errors_name_the_path_the_kind_and_the_message_on_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.bpk"
    bad.write_bytes(b"XXXX" + bytes(20))
    assert main(["inspect", str(bad)]) == 1
    assert capsys.readouterr().err == f"burnpack: {bad}: InvalidMagicNumber: {burnpack.InvalidMagicNumber(where='bytes 0..4 are 58 58 58 58')}\n"


def test_a_missing_output_directory_is_blamed_on_the_output(model, tmp_path, capsys):
    assert main(["repack", str(model), str(tmp_path / "no" / "such" / "out.bpk")]) == 1
    assert capsys.readouterr().err == f"burnpack: {tmp_path / 'no' / 'such'}: FileNotFoundError: no such directory for the output\n"


def test_ctrl_c_prints_one_line_exits_130_and_leaves_no_file(model, tmp_path, capsys, monkeypatch):
    def interrupted(self, stream):
        stream.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(burnpack.Writer, "write_stream", interrupted)
    assert main(["repack", str(model), str(tmp_path / "out.bpk")]) == 130
    assert capsys.readouterr().err == "burnpack: interrupted\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bpk"]  # no output, no scratch file


def test_write_failures_never_show_scratch_file_names(model, tmp_path, capsys, monkeypatch):
    def failing(self, stream):
        raise OSError(28, "No space left on device", stream.name)

    monkeypatch.setattr(burnpack.Writer, "write_stream", failing)
    assert main(["repack", str(model), str(tmp_path / "out.bpk")]) == 1
    assert capsys.readouterr().err == f"burnpack: {tmp_path / 'out.bpk'}: OSError: no space left on device\n"


def test_a_missing_optional_dependency_names_the_extra(tmp_path, capsys, monkeypatch):
    src = tmp_path / "m.safetensors"
    from burnpack.interop.safetensors import serialize_safetensors

    src.write_bytes(serialize_safetensors({"w": np.ones(2, np.float32)}))
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["convert", str(src), str(tmp_path / "m.pt")]) == 1
    err = capsys.readouterr().err
    assert err == "burnpack: torch is not installed: pip install 'burnpack[torch]'\n"
    assert not (tmp_path / "m.pt").exists()


# -- writing commands: one rule for existing outputs ------------------------------------------------
@pytest.mark.parametrize("command", ["repack", "pack"])
def test_writing_commands_keep_an_existing_file_unless_overwrite(model, tmp_path, capsys, command):
    source = str(model)
    if command == "pack":
        from burnpack.spec import spec_from_pack

        with burnpack.load(model) as pack:
            (tmp_path / "spec.json").write_text(json.dumps(spec_from_pack(pack)))
        source = str(tmp_path / "spec.json")
    target = tmp_path / "unrelated.bpk"
    target.write_bytes(b"an unrelated model")
    assert main([command, source, str(target)]) == 1
    assert capsys.readouterr().err == f"burnpack: {target}: FileExistsError: exists; use --overwrite to replace it\n"
    assert target.read_bytes() == b"an unrelated model"
    assert main([command, source, str(target), "--overwrite"]) == 0
    assert target.read_bytes() == model.read_bytes()


def test_an_existing_directory_is_not_an_output_file(model, tmp_path, capsys):
    (tmp_path / "dir").mkdir()
    assert main(["repack", str(model), str(tmp_path / "dir")]) == 1
    assert capsys.readouterr().err == f"burnpack: {tmp_path / 'dir'}: IsADirectoryError: is a directory; give the output's file name\n"
    assert not (tmp_path / "dir.bpk").exists()


# -- legacy files -----------------------------------------------------------------------------------
@pytest.fixture
def legacy(tmp_path):
    """A Burn 0.19 file: tensor data right after the metadata, not 256-aligned."""
    import cbor2
    import struct

    metadata = {"tensors": {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "U8", "shape": [3], "data_offsets": [8, 11]}}}
    blob = cbor2.dumps(metadata)
    path = tmp_path / "old.bpk"
    path.write_bytes(b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob + np.array([1.5, 2.5], "<f4").tobytes() + b"\x07\x08\x09")
    return path


def test_repack_legacy_ok_upgrades_an_old_file(legacy, tmp_path, capsys):
    new = tmp_path / "new.bpk"
    assert main(["repack", "--legacy-ok", str(legacy), str(new)]) == 0
    with burnpack.load(new) as pack:
        assert pack["a"].numpy().tolist() == [1.5, 2.5] and pack["b"].tobytes() == b"\x07\x08\x09"


def test_a_legacy_diagnosis_is_one_short_line_with_details_under_verbose(legacy, tmp_path, capsys):
    assert main(["repack", str(legacy), str(tmp_path / "new.bpk")]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("burnpack: warning: ")  # the warning on opening, and the error
    assert lines[1].startswith(f"burnpack: {legacy}: ValidationError: pre-alignment layout of a Burn 0.19 file")
    assert all(len(line) - len(str(legacy)) < 160 for line in lines) and "--legacy-ok" in lines[1]
    assert "272ca0b4a" not in err
    assert main(["--verbose", "repack", str(legacy), str(tmp_path / "new.bpk")]) == 1
    assert "272ca0b4a" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["inspect", "dump", "validate"])
def test_reading_commands_accept_legacy_ok(legacy, capsys, command):
    assert main([command, "--legacy-ok", str(legacy)] + (["--deep"] if command == "validate" else [])) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_legacy_error_carries_its_details_as_attributes(legacy):
    with pytest.warns(burnpack.LegacyFormatWarning) as caught, burnpack.load(legacy) as pack:
        with pytest.raises(burnpack.LegacyFormatError) as info:
            pack.tensors()
    assert "272ca0b4a" in info.value.legacy_details and len(info.value.legacy_summary) < 160
    assert "272ca0b4a" in caught[0].message.legacy_details
