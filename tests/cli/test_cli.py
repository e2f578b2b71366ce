"""The command line: inspect, dump --json, validate and repack."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main


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
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith(f"burnpack {burnpack.__version__} (")


def _kernels_built(monkeypatch, built):
    """Every kernel as if imported: a current stand-in where ``built(module)``, else not built."""
    import sys
    import types

    from burnpack.codec._kernels import KERNELS

    for module, (_, interface) in KERNELS.items():
        kernel = types.ModuleType(module)
        kernel.INTERFACE = interface
        monkeypatch.setitem(sys.modules, module, kernel if built(module) else None)


def test_version_names_the_kernels_that_are_not_built(monkeypatch):
    from burnpack.cli import main as cli_main

    _kernels_built(monkeypatch, lambda module: "_cquant" not in module)
    assert cli_main.version_text() == (
        f"burnpack {burnpack.__version__} (compiled kernels not built: dequantizing (Python and numpy do that work))"
    )


def test_version_says_when_no_kernel_is_built(monkeypatch):
    from burnpack.cli import main as cli_main

    _kernels_built(monkeypatch, lambda module: False)
    assert cli_main.version_text().endswith("(no compiled kernel built: Python and numpy do all the work)")


def test_errors_name_the_path_the_kind_and_the_message_on_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.bpk"
    bad.write_bytes(b"XXXX" + bytes(20))
    assert main(["inspect", str(bad)]) == 1
    assert capsys.readouterr().err == f"burnpack: {bad}: InvalidMagicNumber: {burnpack.InvalidMagicNumber(where='bytes 0..4 are 58 58 58 58')}\n"


def test_a_missing_output_directory_is_blamed_on_the_output(model, tmp_path, capsys):
    assert main(["repack", str(model), str(tmp_path / "no" / "such" / "out.bpk")]) == 1
    assert capsys.readouterr().err == f"burnpack: {tmp_path / 'no' / 'such'}: FileNotFoundError: no such directory for the output\n"


def test_ctrl_c_prints_one_line_exits_130_and_leaves_no_file(model, tmp_path, capsys, monkeypatch):
    def interrupted(self, stream, progress=None):
        stream.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(burnpack.Writer, "write_stream", interrupted)
    assert main(["repack", str(model), str(tmp_path / "out.bpk")]) == 130
    assert capsys.readouterr().err == "burnpack: interrupted\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bpk"]  # no output, no scratch file


def test_write_failures_never_show_scratch_file_names(model, tmp_path, capsys, monkeypatch):
    def failing(self, stream, progress=None):
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
        from burnpack.core.spec import spec_from_pack

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


# -- inspect ----------------------------------------------------------------------------------------
@pytest.fixture
def layers(tmp_path):
    path = tmp_path / "layers.bpk"
    tensors = {f"layers.{i}.weight": np.ones((4, 4), np.float32) for i in (10, 2, 1)}
    tensors["embed.weight"] = np.ones((8, 2), np.float16)
    burnpack.save(tensors, path)
    return path


def table_names(out: str) -> list[str]:
    lines = out.split("\n\n")[1].splitlines()[2:]
    return [line.split()[0] for line in lines]


def test_inspect_sorts_naturally_by_default_and_by_name_or_file_order_on_request(layers, capsys):
    main(["inspect", str(layers)])
    assert table_names(capsys.readouterr().out) == ["embed.weight", "layers.1.weight", "layers.2.weight", "layers.10.weight"]
    main(["inspect", "--sort", "name", str(layers)])
    assert table_names(capsys.readouterr().out) == ["embed.weight", "layers.1.weight", "layers.10.weight", "layers.2.weight"]
    main(["inspect", "--sort", "file", str(layers)])
    assert table_names(capsys.readouterr().out) == ["layers.10.weight", "layers.2.weight", "layers.1.weight", "embed.weight"]


def test_inspect_shows_human_sizes_totals_per_dtype_and_the_parameter_count(layers, capsys):
    main(["inspect", str(layers)])
    out = capsys.readouterr().out
    assert "  F16: 1 tensor, 16 parameters, 32 B" in out and "  F32: 3 tensors, 48 parameters, 192 B" in out
    assert "4 tensors, 64 parameters, 224 B of tensor data, 0 metadata entries, 0 scalars" in out


def test_inspect_filter_keeps_matching_names_and_says_when_none_match(layers, capsys):
    assert main(["inspect", "--filter", r"layers\.(1|2)\.", str(layers)]) == 0
    out = capsys.readouterr().out
    assert table_names(out) == ["layers.1.weight", "layers.2.weight"] and "2 tensors (of 4)" in out
    assert main(["inspect", "--filter", "nothing", str(layers)]) == 1
    assert "no tensor name matches 'nothing'" in capsys.readouterr().out


def test_inspect_json_is_one_object_with_totals(layers, capsys):
    main(["inspect", "--json", str(layers)])
    result = json.loads(capsys.readouterr().out)
    assert result["totals"]["parameters"] == 64 and result["totals"]["by_dtype"]["F16"]["tensors"] == 1
    assert [t["name"] for t in result["tensors"]][:2] == ["embed.weight", "layers.1.weight"]


def test_inspect_tree_groups_by_module_with_parameter_counts(layers, capsys):
    main(["inspect", "--tree", str(layers)])
    out = capsys.readouterr().out
    assert "layers/  48 parameters\n  1/  16 parameters\n    weight  F32 [4, 4]  16\n  2/" in out
    assert "embed/  16 parameters" in out


def test_inspect_summarizes_qfloat_schemes(tmp_path, capsys):
    from burnpack.quant import parse_scheme, quantize

    q = quantize(np.ones((2, 32), np.float32), parse_scheme("q8s", block=32, scale_dtype="f16"))
    path = burnpack.save({"w": q}, tmp_path / "q.bpk")
    main(["inspect", str(path)])
    out = capsys.readouterr().out
    assert "w     QFloat(Q8S block 32 F16)  [2, 32]" in out and "\n  QFloat: 1 tensor" not in out


def test_inspect_shortens_long_names_in_the_middle_and_aligns_wide_characters(tmp_path, capsys):
    path = tmp_path / "names.bpk"
    long = "encoder." + "block." * 20 + "weight"
    burnpack.save({long: np.ones(1, np.float32), "重み": np.ones(2, np.float32), "w": np.ones(3, np.float32)}, path)
    main(["inspect", str(path)])
    rows = capsys.readouterr().out.split("\n\n")[1].splitlines()
    from burnpack.cli.inspect import display_width

    assert any(row.startswith("encoder.block.") and "…" in row and row.split()[0].endswith(".weight") for row in rows)
    dtype_columns = {display_width(row[: row.index(" F32")]) for row in rows[2:]}
    assert len(dtype_columns) == 1  # the dtype column starts at the same screen column on every row
    assert max(display_width(row.split()[0]) for row in rows[2:]) <= 60


def test_plurals_are_correct_for_one(tmp_path, capsys):
    path = tmp_path / "one.bpk"
    burnpack.save({"w": np.ones(1, np.float32)}, path, metadata={"a": "b"}, scalars={"s": 1})
    main(["inspect", str(path)])
    out = capsys.readouterr().out
    assert "generic pack: 1 tensor and 1 scalar fit" in out
    assert "\n1 tensor, 1 parameter, 4 B of tensor data, 1 metadata entry, 1 scalar;" in out


# -- diff -------------------------------------------------------------------------------------------
def test_diff_compares_a_pack_with_a_safetensors_file_by_content(model, tmp_path, capsys):
    from burnpack.interop.safetensors import serialize_safetensors

    same = tmp_path / "same.safetensors"
    same.write_bytes(serialize_safetensors({"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}, {"producer": "test"}))
    assert main(["diff", str(model), str(same)]) == 1  # the scalar exists only in the pack
    out = capsys.readouterr().out
    assert "- scalar 'epoch'" in out and "tensor" not in out.splitlines()[0]
    other = tmp_path / "other.safetensors"
    other.write_bytes(serialize_safetensors({"w": np.full((2, 3), 2, np.float32), "b": np.zeros(3, np.float32)}))
    main(["diff", str(model), str(other)])
    assert "~ tensor 'w': 6/6 elements differ, max abs diff 1" in capsys.readouterr().out


def test_diff_layout_reports_header_padding_trailing_bytes_and_encoding(model, tmp_path, capsys):
    data = bytearray(model.read_bytes())
    variant = tmp_path / "variant.bpk"
    data[4:6] = (0).to_bytes(2, "little")  # header version 0, which Burn reads as 1
    variant.write_bytes(bytes(data) + b"tail")
    assert main(["diff", str(model), str(variant)]) == 0
    assert capsys.readouterr().out == "identical (same content, different layout: see --layout)\n"
    assert main(["diff", "--layout", str(model), str(variant)]) == 1
    out = capsys.readouterr().out
    assert "~ layout header version: 1 -> 0" in out and "~ layout trailing bytes: 0 -> 4" in out
    padded = bytearray(model.read_bytes())
    padded[10 + burnpack.load(model).metadata_size] = 0xFF  # a non-zero padding byte
    (tmp_path / "padded.bpk").write_bytes(bytes(padded))
    main(["diff", "--layout", str(model), str(tmp_path / "padded.bpk")])
    assert "~ layout nonzero padding bytes: 0 -> 1" in capsys.readouterr().out


def test_diff_layout_sees_a_different_metadata_encoding(model, tmp_path, capsys):
    import cbor2
    import struct

    with burnpack.load(model) as pack:
        blob = model.read_bytes()[10 : 10 + pack.metadata_size]
        start = pack.data_section_start
    reencoded = cbor2.dumps(cbor2.loads(blob), canonical=True)  # same content, other key order and widths
    assert reencoded != blob
    body = model.read_bytes()[start:]
    head = b"NRUB" + struct.pack("<HI", 1, len(reencoded)) + reencoded
    (tmp_path / "re.bpk").write_bytes(head + bytes(start - len(head)) + body)
    assert main(["diff", str(model), str(tmp_path / "re.bpk")]) == 0
    main(["diff", "--layout", str(model), str(tmp_path / "re.bpk")])
    assert "~ layout metadata encoding: sha256" in capsys.readouterr().out


# -- progress ---------------------------------------------------------------------------------------
def test_repack_progress_always_writes_lines_without_a_terminal(model, tmp_path, capsys):
    assert main(["repack", "--progress", "always", str(model), str(tmp_path / "p.bpk")]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "repacking: done (36 B)"
    assert main(["repack", str(model), str(tmp_path / "q.bpk")]) == 0
    assert capsys.readouterr().err == ""  # auto: only on a terminal, for large files


def test_convert_legacy_ok_reads_an_old_file(legacy, tmp_path, capsys):
    assert main(["convert", str(legacy), str(tmp_path / "new.safetensors")]) == 1
    assert "--legacy-ok" in capsys.readouterr().err
    assert main(["convert", "--legacy-ok", "-q", str(legacy), str(tmp_path / "new.safetensors")]) == 0
    from burnpack.interop.safetensors import parse_safetensors

    assert parse_safetensors((tmp_path / "new.safetensors").read_bytes())[0]["a"].tolist() == [1.5, 2.5]


def test_validate_deep_reports_every_tensor_whose_bytes_do_not_fit_its_shape(tmp_path, capsys):
    import cbor2
    import struct

    tensors = {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]},
               "c": {"dtype": "U8", "shape": [2, 2], "data_offsets": [12, 15]}}  # fmt: skip
    blob = cbor2.dumps({"tensors": tensors})
    start = (10 + len(blob) + 255) // 256 * 256
    path = tmp_path / "odd.bpk"
    path.write_bytes((b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob).ljust(start, b"\0") + bytes(15))
    assert main(["validate", str(path)]) == 0
    capsys.readouterr()
    assert main(["validate", "--deep", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[2] for line in err[:2]] == ["ValidationError", "ValidationError"]
    assert "tensor 'a' holds 8 bytes but its shape [3]" in err[0] and "tensor 'c' holds 3 bytes" in err[1]
    assert err[2] == f"{path}: invalid: 2 of 3 tensors cannot be read"
