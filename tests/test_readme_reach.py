"""The documentation page on PyTorch, partial reads, remote files, sharded and DCP checkpoints
(docs/reach.md) runs as written, block by block in one fresh folder."""

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


def test_readme_blocks_run_in_order(tmp_path):
    pytest.importorskip("torch")
    for block in _blocks():  # later blocks may use files earlier ones wrote
        result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{block}\n{result.stderr}"
