"""An interrupted conversion leaves nothing partial: every folder output (shard folders in both
file formats, DCP folders, checkpoint epochs) is built beside its destination and put in place
as a whole, SIGINT and SIGTERM are one line (exit 130 and 143), and the same command run again
works. A child process runs the command and stops mid-write (after the first shard, the first
record, the DCP files, part of a ``.pt``) until the parent signals it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.core import atomic

_STOPPED_COMMAND = """
import contextlib, json, os, sys, time
ready_fd, where, argv = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])

def stop():
    os.write(ready_fd, b"ready")
    while True:
        time.sleep(60)

def on_second_call(real):
    calls = []
    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            stop()
        return real(*args, **kwargs)
    return wrapper

if where == "second shard":  # the shard families' writers, which the format table calls at each shard
    from burnpack.interop import formats, torch_live
    formats.write_safetensors_file = on_second_call(formats.write_safetensors_file)
    torch_live.write_pytorch = on_second_call(torch_live.write_pytorch)
elif where == "after dcp.save":
    import torch.distributed.checkpoint as dcp
    real_save = dcp.save
    def save(*args, **kwargs):
        real_save(*args, **kwargs)
        stop()
    dcp.save = save
elif where == "second record":
    import burnpack
    burnpack.Writer.write_stream = on_second_call(burnpack.Writer.write_stream)
elif where == "inside torch.save":
    from burnpack.interop import torch_live
    real_output = torch_live.atomic_output
    class Stopping:
        def __init__(self, stream):
            self.stream, self.writes = stream, 0
        def write(self, data):
            self.writes += 1
            if self.writes == 3:
                stop()
            return self.stream.write(data)
        def flush(self):
            self.stream.flush()
    @contextlib.contextmanager
    def output(path, **kwargs):
        with real_output(path, **kwargs) as stream:
            yield Stopping(stream)
    torch_live.atomic_output = output
from burnpack.cli.main import main
sys.exit(main(argv))
"""


def _interrupted(where: str, argv: list[str], sig: int) -> subprocess.CompletedProcess[str]:
    """``burnpack ARGV`` in a child stopped at ``where``, then sent ``sig``."""
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_STOPPED_COMMAND), str(write_end), where, json.dumps(argv)],
        pass_fds=(write_end,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(write_end)
    try:
        assert os.read(read_end, 5) == b"ready", child.communicate()
    finally:
        os.close(read_end)
        child.send_signal(sig)
    out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


SIGNALS = {"SIGINT": (signal.SIGINT, 130, "burnpack: interrupted\n"), "SIGTERM": (signal.SIGTERM, 143, "burnpack: terminated\n")}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "model.bpk"
    path.parent.mkdir()
    burnpack.save({f"layers.{i}.weight": np.full((64, 64), i, np.float32) for i in range(4)}, path)
    return path


def _torch_training_state(path: Path) -> Path:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    model(torch.ones(1, 4)).sum().backward()
    optimizer.step()
    scheduler.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "epoch": 3}, path)
    return path


# Each folder output: how it is asked for, where the child stops, what a complete one holds.
FOLDER_OUTPUTS = {
    "safetensors shards": (["--max-shard-size", "20KB"], "second shard", "model.safetensors.index.json"),
    "pytorch shards": (["--max-shard-size", "20KB", "--to", "pytorch"], "second shard", "pytorch_model.bin.index.json"),
    "dcp folder": (["--to", "dcp"], "after dcp.save", ".metadata"),
}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if atomic.SCRATCH_SUFFIX in p.name)


@pytest.mark.parametrize("signame", sorted(SIGNALS))
@pytest.mark.parametrize("kind", sorted(FOLDER_OUTPUTS))
def test_an_interrupted_conversion_to_a_folder_leaves_nothing_and_runs_again(source, tmp_path, kind, signame):
    if kind != "safetensors shards":
        pytest.importorskip("torch")
    options, where, complete = FOLDER_OUTPUTS[kind]
    sig, code, line = SIGNALS[signame]
    out = tmp_path / "out"
    argv = ["convert", str(source), str(out), *options]
    result = _interrupted(where, argv, sig)
    assert (result.returncode, result.stderr) == (code, line)
    assert not out.exists() and _leftovers(tmp_path) == []
    assert main(argv) == 0
    assert (out / complete).is_file() and _leftovers(tmp_path) == []


def test_an_interrupted_overwrite_of_a_shard_folder_keeps_the_earlier_save_and_the_folders_other_files(source, tmp_path):
    out = tmp_path / "out"
    argv = ["convert", str(source), str(out), "--max-shard-size", "20KB"]
    assert main(argv) == 0
    (out / "config.json").write_text("{}")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = _interrupted("second shard", [*argv, "--overwrite", "--no-stamp"], signal.SIGINT)
    assert result.returncode == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_an_earlier_saves_extra_shards_are_removed_by_an_overwrite_and_refused_without_one(source, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["convert", str(source), str(out), "--max-shard-size", "20KB"]) == 0
    (out / "config.json").write_text("{}")
    assert len(list(out.glob("model-*.safetensors"))) == 4
    assert main(["convert", str(source), str(out), "--max-shard-size", "40KB"]) == 1
    assert "shards of an earlier save); use --overwrite to replace them" in capsys.readouterr().err
    assert main(["convert", str(source), str(out), "--max-shard-size", "40KB", "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json",
    ]  # fmt: skip


@pytest.mark.parametrize("signame", sorted(SIGNALS))
def test_an_interrupted_checkpoint_conversion_writes_no_record_of_the_epoch(tmp_path, signame):
    state = _torch_training_state(tmp_path / "state.pt")
    sig, code, line = SIGNALS[signame]
    out = tmp_path / "artifacts" / "checkpoint"
    out.mkdir(parents=True)
    (out / "model-1.bpk").write_bytes(b"an earlier epoch")
    argv = ["convert-checkpoint", str(state), str(out)]
    result = _interrupted("second record", argv, sig)
    assert (result.returncode, result.stderr) == (code, line)
    assert sorted(p.name for p in out.iterdir()) == ["model-1.bpk"]
    assert main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == ["model-1.bpk", "model-3.bpk", "optim-3.bpk", "scheduler-3.bpk"]


@pytest.mark.parametrize("signame", sorted(SIGNALS))
def test_an_interrupt_while_torch_writes_a_pt_file_is_one_line(source, tmp_path, signame):
    pytest.importorskip("torch")
    sig, code, line = SIGNALS[signame]
    out = tmp_path / "model.pt"
    result = _interrupted("inside torch.save", ["convert", str(source), str(out)], sig)
    assert (result.returncode, result.stderr) == (code, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_a_dcp_folder_gets_the_usual_permissions(source, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    assert main(["convert", str(source), str(out), "--to", "dcp", "-q"]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask
