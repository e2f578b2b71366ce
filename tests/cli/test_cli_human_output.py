"""Human output cannot be forged: names, keys, values and file names from a file are shown with
their control characters, escape sequences and bidi overrides escaped; JSON keeps them exact.

Each test runs the command line as a user would and checks the bytes it printed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import burnpack
from burnpack.core.display import printable

# Clears the screen (CSI), retitles the terminal (OSC ... BEL), returns the cursor, starts a
# forged row, and reverses the rest of the line (RIGHT-TO-LEFT OVERRIDE).
HOSTILE = "w\x1b[2J\x1b]0;owned\x07\r\nforged row\u202e"
SHOWN = "w\\x1b[2J\\x1b]0;owned\\x07\\r\\nforged row\\u202e"
# Any C0 control but the line feed, DEL, C1 controls, bidi embeddings/overrides/isolates (UTF-8).
_TERMINAL_ACTS_ON = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "burnpack", *args], capture_output=True, timeout=300)


def _assert_safe(output: bytes) -> str:
    assert _TERMINAL_ACTS_ON.search(output) is None, output
    text = output.decode()
    assert not any(line.startswith("forged row") for line in text.splitlines()), text
    return text


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "hostile.bpk"
    burnpack.save({HOSTILE: np.ones(2, np.float32), f"layers.{HOSTILE}.b": np.ones(2, np.float32)}, path, metadata={HOSTILE: HOSTILE})
    return path


def test_printable_escapes_controls_escape_sequences_and_bidi_overrides():
    assert printable(HOSTILE) == SHOWN
    assert printable("\t\x00\x7f\x85\u2028\u2066\U000e0001") == "\\t\\x00\\x7f\\x85\\u2028\\u2066\\U000e0001"
    assert printable("encoder.层.weight ü") == "encoder.层.weight ü"  # printable text is left as it is


def test_inspect_table_shows_hostile_names_and_metadata_escaped(hostile):
    result = _run("inspect", str(hostile))
    text = _assert_safe(result.stdout + result.stderr)
    assert result.returncode == 0
    assert f"\n{SHOWN}  " in text and f"\n  {SHOWN} = " in text


def test_inspect_tree_shows_hostile_module_names_escaped(hostile):
    result = _run("inspect", "--tree", str(hostile))
    text = _assert_safe(result.stdout + result.stderr)
    assert f"\n  {SHOWN}/  " in text


def test_inspect_json_keeps_names_exact(hostile):
    result = _run("inspect", "--json", str(hostile))
    report = json.loads(result.stdout)
    assert {t["name"] for t in report["tensors"]} == {HOSTILE, f"layers.{HOSTILE}.b"}
    assert report["metadata"] == {HOSTILE: HOSTILE}


def test_inspect_of_another_format_shows_hostile_names_and_metadata_escaped(tmp_path):
    from safetensors.numpy import save_file

    path = tmp_path / "hostile.safetensors"
    save_file({HOSTILE: np.ones(2, np.float32), f"layers.{HOSTILE}.b": np.ones(2, np.float32)}, path, metadata={HOSTILE: HOSTILE})
    for args in ((), ("--tree",)):
        result = _run("inspect", *args, str(path))
        text = _assert_safe(result.stdout + result.stderr)
        assert result.returncode == 0 and text.startswith("format: safetensors file;") and f"{SHOWN}  " in text


def test_inspect_shows_hostile_skipped_entry_paths_escaped(tmp_path):
    torch = pytest.importorskip("torch")

    torch.save({"w": torch.ones(2), HOSTILE: 3}, tmp_path / "hostile.pt")
    result = _run("inspect", str(tmp_path / "hostile.pt"))
    text = _assert_safe(result.stdout + result.stderr)
    assert result.returncode == 0 and f"\n  {SHOWN}: an int, not a tensor\n" in text


def test_diff_shows_hostile_names_escaped(hostile, tmp_path):
    other = tmp_path / "other.bpk"
    burnpack.save({HOSTILE: np.zeros(2, np.float32), "x": np.ones(1, np.float32)}, other, metadata={HOSTILE: "x"})
    result = _run("diff", "--layout", str(hostile), str(other))
    text = _assert_safe(result.stdout + result.stderr)
    assert result.returncode == 1 and SHOWN in text


def test_validate_shows_a_hostile_file_name_escaped(tmp_path):
    path = tmp_path / f"{HOSTILE}.bpk"
    burnpack.save({"w": np.ones(2, np.float32)}, path)
    result = _run("validate", "--deep", str(path))
    text = _assert_safe(result.stdout + result.stderr)
    assert result.returncode == 0 and f"{SHOWN}.bpk: valid" in text


def test_error_lines_show_a_hostile_path_escaped(tmp_path):
    result = _run("inspect", str(tmp_path / f"{HOSTILE}.bpk"))
    text = _assert_safe(result.stdout + result.stderr)
    assert result.returncode == 1 and f"{SHOWN}.bpk: " in text


def test_convert_summary_shows_hostile_names_escaped(hostile, tmp_path):
    result = _run("convert", str(hostile), str(tmp_path / "out.safetensors"), "--remap", "^layers\\.=blocks.")
    text = _assert_safe(result.stdout + result.stderr)
    assert result.returncode == 0 and f"layers.{SHOWN}.b -> blocks.{SHOWN}.b" in text


def test_checkpoint_inspect_shows_hostile_parameter_paths_escaped(tmp_path):
    from burnpack import OptimizerRecord
    from burnpack.records import Checkpoints, SgdState
    from tests.records.helpers import two_layer_record

    optim = OptimizerRecord().set_state(5, SgdState(np.ones(3, np.float32)), path=HOSTILE)
    Checkpoints(tmp_path).save_epoch(1, model=two_layer_record(), optim=optim)
    result = _run("checkpoint", "inspect", str(tmp_path))
    text = _assert_safe(result.stdout + result.stderr)
    assert f"optimizer state for id 5 ({SHOWN}) matches no model parameter" in text
