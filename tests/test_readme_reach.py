"""The documentation page on PyTorch, partial reads, remote files, sharded and DCP checkpoints
(docs/reach.md) runs as written, each block in a fresh interpreter and a fresh folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reach.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_has_python_blocks():
    assert len(_blocks()) >= 1


def _line(block: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    return f"line{text[: text.index(block)].count(chr(10)) + 1}"


@pytest.mark.parametrize("block", _blocks(), ids=_line)
def test_each_block_runs_as_written(block, tmp_path):
    if "torch" in block:
        pytest.importorskip("torch")
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{block}\n{result.stderr}"
