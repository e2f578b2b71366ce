"""Smaller things a user meets on the command line: shard sizes, folder outputs, which error comes
first, one error kind for a missing file, a progress bar that leaves no residue, and wording."""

from __future__ import annotations

import io

import numpy as np
import pytest

import burnpack
from burnpack import DType, Tensor
from burnpack.cli.main import main


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.bpk"
    burnpack.save({"a": np.ones((4, 4), np.float32), "b": np.ones((4, 4), np.float32)}, path, metadata={"producer": "test"}, scalars={"epoch": 3})
    return path


# -- --max-shard-size and folder outputs ---------------------------------------------------------
def test_max_shard_size_takes_a_plain_byte_count(model, tmp_path):
    from burnpack.interop.sharded import parse_size

    assert parse_size("1000000") == 1_000_000 and parse_size("5GB") == 5_000_000_000
    out = tmp_path / "shards"
    assert main(["convert", "-q", "--max-shard-size", "64", str(model), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"
    ]  # fmt: skip


@pytest.mark.parametrize("size", ["1.5", "5XB", "0", "-3", "lots"])
def test_a_bad_max_shard_size_is_a_usage_error(model, tmp_path, capsys, size):
    with pytest.raises(SystemExit) as stop:
        main(["convert", "--max-shard-size", size, str(model), str(tmp_path / "shards")])
    assert stop.value.code == 2
    assert "--max-shard-size" in capsys.readouterr().err
    assert not (tmp_path / "shards").exists()


@pytest.mark.parametrize("option", [["--max-shard-size", "5GB"], ["--to", "dcp"]])
def test_a_folder_output_named_like_a_file_is_refused(model, tmp_path, capsys, option):
    out = tmp_path / "model.safetensors"
    assert main(["convert", *option, str(model), str(out)]) == 2
    assert "writes a folder, not a .safetensors file" in capsys.readouterr().err
    assert not out.exists()


# -- errors ---------------------------------------------------------------------------------------
def test_repack_reports_a_missing_input_before_an_existing_output(model, tmp_path, capsys):
    missing = tmp_path / "missing.bpk"
    assert main(["repack", str(missing), str(model)]) == 1
    assert capsys.readouterr().err == f"burnpack: {missing}: FileNotFoundError: no such file or directory\n"


@pytest.mark.parametrize(
    "command",
    [["inspect"], ["validate"], ["validate", "--deep"], ["repack", "{missing}", "{out}"], ["diff", "{model}"],
     ["diff", "{missing}", "{model}"], ["convert", "{missing}", "{out}.safetensors"], ["checkpoint", "inspect"],
     ["pack", "{missing}", "{out}"]],
    ids=lambda c: " ".join(c),
)  # fmt: skip
def test_a_missing_file_is_a_file_not_found_error_in_every_command(model, tmp_path, capsys, command):
    missing = tmp_path / "missing.bpk"
    values = {"missing": missing, "out": tmp_path / "out", "model": model}
    argv = [part.format(**values) for part in command]
    if "{missing}" not in command:
        argv.append(str(missing))
    assert main(argv) == (2 if command[0] == "diff" else 1)
    assert capsys.readouterr().err == f"burnpack: {missing}: FileNotFoundError: no such file or directory\n"


def test_the_bad_magic_message_names_burns_u32_and_the_bytes_on_disk(tmp_path, capsys):
    bad = tmp_path / "bad.bpk"
    bad.write_bytes(b"BURN" + bytes(20))
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "expected the u32 0x4255524E little-endian: bytes 4e 52 55 42 'NRUB'" in err and "are 42 55 52 4e" in err


def test_an_unknown_optimizer_state_lists_the_supported_optimizers():
    from burnpack.errors import ConversionError
    from burnpack.interop.checkpoint.optimizer import optimizer_kind

    with pytest.raises(ConversionError, match=r"supported: torch\.optim\.Adam, torch\.optim\.AdamW, torch\.optim\.SGD$"):
        optimizer_kind({"param_groups": [{"lr": 0.1}], "state": {0: {"square_avg": np.ones(1)}}}, None)


# -- the progress bar -----------------------------------------------------------------------------
class _Terminal(io.StringIO):
    """What a terminal shows of one redrawn line: ``\\r`` returns the cursor, text overwrites."""

    def isatty(self) -> bool:
        return True

    def screen(self) -> str:
        shown: list[str] = []
        column = 0
        for ch in self.getvalue().split("\n")[0]:
            if ch == "\r":
                column = 0
                continue
            shown[column:column + 1] = [ch]
            column += 1
        return "".join(shown)


def test_the_progress_bar_leaves_nothing_of_a_longer_line_it_redraws():
    from burnpack.core.progress import ProgressBar

    terminal = _Terminal()
    bar = ProgressBar(1 << 30, stream=terminal)
    bar((1 << 30) - (1 << 20))  # "1023.0 MiB/1.0 GiB"
    bar(1 << 20)  # "1.0 GiB/1.0 GiB": shorter
    assert terminal.screen().rstrip().endswith("100.0% 1.0 GiB/1.0 GiB")


# -- wording --------------------------------------------------------------------------------------
def test_validate_deep_of_one_tensor_says_its_1_tensor(tmp_path, capsys):
    path = tmp_path / "one.bpk"
    burnpack.save({"w": np.ones(2, np.float32)}, path)
    assert main(["validate", "--deep", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: valid: header, metadata and its 1 tensor checked\n"


def test_pt_output_says_1_metadata_entry_dropped(model, tmp_path, capsys):
    pytest.importorskip("torch")
    assert main(["convert", "--no-stamp", str(model), str(tmp_path / "out.pt")]) == 0
    out = capsys.readouterr().out
    assert "1 metadata entry dropped: a state dict has no place for them" in out
    assert "1 scalar dropped" in out and "2 param ids dropped" not in out


def test_inspect_says_how_many_parameters_are_integer_or_bool_elements(tmp_path, capsys):
    path = tmp_path / "bert.bpk"
    ids = Tensor.from_numpy("embeddings.position_ids", np.arange(512)[None, :], dtype=DType.I64)
    burnpack.save([Tensor.from_numpy("embeddings.word.weight", np.ones((10, 4), np.float32)), ids], path)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  I64: 1 tensor, 512 elements, 4.0 KiB" in out and "  F32: 1 tensor, 40 parameters, 160 B" in out
    assert "\n2 tensors, 552 parameters (512 in integer or bool tensors), " in out
    assert main(["inspect", "--tree", str(path)]) == 0
    assert "embeddings/  552 parameters (512 in integer or bool tensors)" in capsys.readouterr().out
