"""What the README promises a plain ``pip install burnpack`` (no extra): every format on disk is
read, inspected and converted — ``.pt`` files and DCP folders without torch — and ``.bpk``,
safetensors and ``.npz`` are written; what needs an extra is one line naming it. A child process
runs the commands with the extras' modules made unimportable."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import burnpack

EXTRAS_MODULES = ["torch", "fsspec", "aiohttp", "s3fs", "safetensors", "hypothesis", "huggingface_hub", "gcsfs"]

_WITHOUT_EXTRAS = """
import contextlib, io, json, sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in MODULES:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

MODULES = set(json.loads(sys.argv[1]))
sys.meta_path.insert(0, NotInstalled())
from burnpack.cli.main import main
results = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def _without_extras(commands: list[list[str]], cwd) -> list[tuple[int, str]]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_WITHOUT_EXTRAS), json.dumps(EXTRAS_MODULES), json.dumps(commands)],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return [tuple(r) for r in json.loads(result.stdout)]


def test_every_format_on_disk_is_read_and_converted_without_any_extra(tmp_path):
    torch = pytest.importorskip("torch")  # to make the inputs a plain install then reads without it
    import torch.distributed.checkpoint as dcp

    model = torch.nn.Linear(3, 2)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    dcp.save({"model": model.state_dict()}, checkpoint_id=str(tmp_path / "m_dcp"), no_dist=True)
    burnpack.save({"w": np.ones((2, 3), np.float32)}, tmp_path / "m.bpk")
    commands = [
        ["convert", "-q", "m.pt", "from_pt.bpk"], ["convert", "-q", "--from", "dcp", "m_dcp", "from_dcp.bpk", "--top-level-key", "model"],
        ["convert", "-q", "m.bpk", "m.safetensors"], ["convert", "-q", "m.safetensors", "m.npz"], ["inspect", "-q", "m.pt"],
        ["inspect", "-q", "--from", "dcp", "m_dcp"], ["diff", "-q", "m.pt", "m.pt"], ["validate", "-q", "from_dcp.bpk"],
        ["view", "-q", "m.bpk"],
    ]  # fmt: skip
    assert _without_extras(commands, tmp_path) == [(0, "")] * len(commands)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["convert", "m.bpk", "out.pt"], "burnpack: torch is not installed: pip install 'burnpack[torch]'\n"),
        (["convert", "m.bpk", "out_dcp", "--to", "dcp"], "burnpack: torch is not installed: pip install 'burnpack[torch]'\n"),
        (["inspect", "https://127.0.0.1:9/m.bpk"], "burnpack: fsspec is not installed: pip install 'burnpack[remote]'\n"),
    ],
)
def test_what_needs_an_extra_says_so_in_one_line(tmp_path, argv, line):
    burnpack.save({"w": np.ones((2, 3), np.float32)}, tmp_path / "m.bpk")
    assert _without_extras([argv], tmp_path) == [(1, line)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bpk"]
