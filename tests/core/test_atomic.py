"""Atomic output: the destination gets all of the new bytes or keeps what it had."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from burnpack.core.atomic import atomic_file
from burnpack.errors import DestinationExists


def test_the_bytes_land_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "out.bin"
    with atomic_file(target) as stream:
        stream.write(b"new")
        assert not target.exists()
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failing_block_keeps_the_old_file_and_removes_the_scratch(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as stream:
            stream.write(b"partial")
            raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_without_replace_a_destination_that_appears_meanwhile_is_kept(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(DestinationExists):
        with atomic_file(target, replace=False) as stream:
            stream.write(b"new")
            target.write_bytes(b"someone else's")
    assert target.read_bytes() == b"someone else's"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_file_exists_error_from_the_callers_block_is_not_taken_for_a_collision(tmp_path):
    with pytest.raises(FileExistsError) as info:
        with atomic_file(tmp_path / "out.bin", replace=False):
            raise FileExistsError("the caller's own")
    assert not isinstance(info.value, DestinationExists)


# -- faults: a killed writer, mapped readers, symlinks, modes --------------------------------------
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402

import burnpack  # noqa: E402
from burnpack.core import atomic  # noqa: E402
from burnpack.interop.formats import atomic_output  # noqa: E402

# A child that reports on a pipe once part of the file is written, then blocks: the parent kills it
# exactly while the scratch file holds those bytes and nothing is renamed. Three write paths: a
# pack with a deferred tensor (``save``), a conversion (its progress callback) and a checkpoint
# save (the record's writer stream, wrapped).
_BLOCKED_WRITER = """
import os, sys, time
import numpy as np
import burnpack
from burnpack.core import atomic
from burnpack.codec._generated.metadata import DType
target, ready_fd, how, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
if how == "named":  # a platform without O_TMPFILE
    atomic._O_TMPFILE = None
def block(*_):
    os.write(ready_fd, b"ready")
    while True:
        time.sleep(60)
big = np.ones(1 << 20, np.uint8)
if path == "save":
    burnpack.Writer([burnpack.Tensor.from_numpy("big", big), burnpack.Tensor.deferred("late", DType.U8, (1,), 1, block)]).write_atomic(target)
elif path == "convert":
    from burnpack.interop import convert
    import tempfile
    source = os.path.join(tempfile.mkdtemp(), "src.npz")
    np.savez(source, big=big, other=big)
    calls = []
    convert(source, target, overwrite=True, progress=lambda n: calls.append(n) or (len(calls) > 1 and block()))
elif path == "checkpoint":
    from burnpack import ModuleRecord
    from burnpack.records import Checkpoints
    write_stream = burnpack.Writer.write_stream
    def half_then_block(self, stream):
        stream.write(b"x" * (1 << 20))
        stream.flush()
        block()
    burnpack.Writer.write_stream = half_then_block
    Checkpoints.at(os.path.dirname(target)).save_epoch(1, model=ModuleRecord.from_module({"w": big}))
"""


def _kill_mid_write(target, how, path="save", sig=signal.SIGKILL):
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_BLOCKED_WRITER), str(target), str(write_end), how, path],
        pass_fds=(write_end,),
    )
    os.close(write_end)
    try:
        assert os.read(read_end, 5) == b"ready"
    finally:
        os.close(read_end)
        child.send_signal(sig)
        child.wait()
    return child.pid


WRITE_PATHS = {"save": "m.bpk", "convert": "m.bpk", "checkpoint": "checkpoint/model-1.bpk"}


def _target(tmp_path, path):
    target = tmp_path / WRITE_PATHS[path]
    target.parent.mkdir(exist_ok=True)
    return target


def _others(directory, *keep):
    return sorted(p.name for p in directory.iterdir() if p.name not in keep)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("path", sorted(WRITE_PATHS))
def test_a_writer_killed_mid_write_leaves_no_file_where_unnamed_files_exist(tmp_path, path, sig):
    if atomic._open_unnamed(tmp_path) is None:
        pytest.skip("this file system has no O_TMPFILE + linkat")
    target = _target(tmp_path, path)
    target.write_bytes(b"old")
    _kill_mid_write(target, "unnamed", path, sig)
    assert target.read_bytes() == b"old"
    assert _others(target.parent, target.name, "retention.json") == []


@pytest.mark.parametrize("path", sorted(WRITE_PATHS))
def test_the_next_write_into_the_directory_removes_a_killed_writers_scratch_file(tmp_path, path):
    target = _target(tmp_path, path)
    target.write_bytes(b"old")
    pid = _kill_mid_write(target, "named", path)
    left = _others(target.parent, target.name, "retention.json")
    assert len(left) == 1 and f"-{pid}-" in left[0] and (target.parent / left[0]).stat().st_size >= 1 << 20
    assert target.read_bytes() == b"old"
    burnpack.save({"x": np.zeros(2, np.float32)}, target.parent / "other.bpk")
    assert _others(target.parent, target.name, "retention.json") == ["other.bpk"]


def test_a_scratch_file_of_a_live_writer_is_left_alone(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        scratch = tmp_path / f".m.bpk.{atomic._HOST}-{live.pid}-0{atomic.SCRATCH_SUFFIX}"
        scratch.write_bytes(b"in progress")
        burnpack.save({"x": np.zeros(2, np.float32)}, tmp_path / "other.bpk")
        assert scratch.exists()
    finally:
        live.communicate(b"")
    assert atomic.sweep_stale_scratch(tmp_path) == [scratch]


def test_files_that_only_look_like_scratch_files_are_never_removed(tmp_path):
    other_host = "00000000" if atomic._HOST != "00000000" else "11111111"
    kept = [
        tmp_path / f".m.bpk.{other_host}-999999999-0{atomic.SCRATCH_SUFFIX}",
        tmp_path / "m.bpk.999999999-0.tmp",
        tmp_path / f"m.bpk.{atomic._HOST}-999999999-0{atomic.SCRATCH_SUFFIX}",
    ]
    for path in kept:
        path.write_bytes(b"x")
    assert atomic.sweep_stale_scratch(tmp_path) == []
    assert all(p.exists() for p in kept)


_MAPPED_READER = """
import sys
import numpy as np
import burnpack
path = sys.argv[1]
pack = burnpack.load(path)
before = pack["a"].numpy()
burnpack.Writer([burnpack.Tensor.from_numpy("a", np.zeros(4, np.float32))]).write(path)
burnpack.Writer([burnpack.Tensor.from_numpy("b", np.zeros(4, np.float32))]).write(path)
assert pack["a"].numpy().tolist() == [1.0, 2.0, 3.0, 4.0], pack["a"].numpy()
print("alive")
"""


@pytest.mark.parametrize("how", ["write", "write_atomic"])
def test_a_reader_with_the_file_mapped_survives_a_rewrite(tmp_path, how):
    path = tmp_path / "m.bpk"
    getattr(burnpack.Writer([burnpack.Tensor.from_numpy("a", np.arange(1, 5, dtype=np.float32))]), how)(path)
    inode = path.stat().st_ino
    done = subprocess.run([sys.executable, "-c", _MAPPED_READER, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # -7 would be SIGBUS
    assert done.stdout == "alive\n"
    assert path.stat().st_ino != inode


def _writers():
    tensors = {"x": np.arange(3, dtype=np.float32)}

    def overwrite_convert(path):
        with atomic_output(path, overwrite=True) as stream:
            burnpack.Writer(burnpack.core.writer._as_tensors(tensors)).write_stream(stream)

    return {
        "Writer.write": lambda path: burnpack.Writer(burnpack.core.writer._as_tensors(tensors)).write(path),
        "Writer.write_atomic": lambda path: burnpack.Writer(burnpack.core.writer._as_tensors(tensors)).write_atomic(path),
        "save": lambda path: burnpack.save(tensors, path),
        "atomic_output": overwrite_convert,
    }


@pytest.mark.parametrize("writer", sorted(_writers()))
def test_every_writer_replaces_a_symlinks_target_and_keeps_the_link(tmp_path, writer):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "m.bpk"
    target.write_bytes(b"old")
    link = tmp_path / "link.bpk"
    link.symlink_to(Path("real") / "m.bpk")
    _writers()[writer](link)
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "m.bpk")
    assert burnpack.load(target).names == ["x"]
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["m.bpk"]


@pytest.mark.parametrize("writer", sorted(_writers()))
def test_every_writer_creates_the_target_of_a_dangling_symlink(tmp_path, writer):
    link = tmp_path / "link.bpk"
    link.symlink_to(tmp_path / "new.bpk")
    _writers()[writer](link)
    assert link.is_symlink() and burnpack.load(tmp_path / "new.bpk").names == ["x"]


def test_a_dangling_symlink_into_a_missing_directory_names_that_directory(tmp_path):
    link = tmp_path / "link.bpk"
    link.symlink_to(tmp_path / "gone" / "new.bpk")
    with pytest.raises(burnpack.IoError, match=r"gone.*symbolic link"):
        burnpack.save({"x": np.zeros(1, np.float32)}, link)


def test_a_symlink_cycle_is_an_io_error(tmp_path):
    (tmp_path / "a.bpk").symlink_to(tmp_path / "b.bpk")
    (tmp_path / "b.bpk").symlink_to(tmp_path / "a.bpk")
    with pytest.raises(burnpack.IoError, match="symbolic links"):
        burnpack.save({"x": np.zeros(1, np.float32)}, tmp_path / "a.bpk")


@pytest.mark.parametrize("writer", sorted(_writers()))
def test_every_writer_keeps_the_mode_of_the_file_it_replaces(tmp_path, writer):
    target = tmp_path / "m.bpk"
    target.write_bytes(b"old")
    target.chmod(0o600)
    _writers()[writer](target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        burnpack.save({"x": np.zeros(1, np.float32)}, tmp_path / "m.bpk")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.bpk").stat().st_mode) == 0o640


@pytest.mark.parametrize(
    "how, message",
    [("write", "cannot create '{}': Is a directory (os error 21)"), ("write_atomic", "cannot write to '{}': not a file path")],
)
def test_a_writer_path_ending_in_dotdot_fails_with_burns_message(tmp_path, how, message):
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / ".."
    with pytest.raises(burnpack.IoError) as raised:
        getattr(burnpack.Writer(), how)(path)
    assert str(raised.value) == message.format(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_write_safetensors_replaces_the_file_and_keeps_its_mode(tmp_path):
    from burnpack.interop.safetensors import read_safetensors, write_safetensors

    target = tmp_path / "m.safetensors"
    target.write_bytes(b"old")
    target.chmod(0o600)
    inode = target.stat().st_ino
    write_safetensors({"x": np.arange(3, dtype=np.float32)}, target)
    assert target.stat().st_ino != inode and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert list(read_safetensors(target)[0]) == ["x"]


import threading  # noqa: E402


def _record_writeback(monkeypatch) -> tuple[list[int], threading.Event]:
    """Replace sync_file_range with a recorder; the event is set at its first call."""
    calls: list[int] = []
    asked = threading.Event()

    def fake(fd, offset, nbytes, flags):
        calls.append(flags)
        asked.set()
        return 0

    monkeypatch.setattr(atomic, "_sync_file_range", fake)
    monkeypatch.setattr(atomic, "WRITEBACK_INTERVAL", 0.001)
    return calls, asked


def _waiting_for(asked: threading.Event) -> burnpack.Tensor:
    """A deferred tensor produced only once the disk was asked to start writing (or after 10 s)."""

    def produce() -> bytes:
        asked.wait(10)
        return bytes(4)

    return burnpack.Tensor.deferred("w", burnpack.DType.F32, (1,), 4, produce)


def test_a_durable_write_starts_the_disk_writing_while_it_runs(tmp_path, monkeypatch):
    calls, asked = _record_writeback(monkeypatch)
    burnpack.Writer([_waiting_for(asked)]).write_atomic(tmp_path / "a.bpk")
    assert asked.is_set() and set(calls) == {atomic._SYNC_FILE_RANGE_WRITE}  # start writing; never wait
    assert not any(t.name == "burnpack-writeback" for t in threading.enumerate())


def test_a_write_that_is_not_durable_leaves_the_writing_back_to_the_kernel(tmp_path, monkeypatch):
    calls, asked = _record_writeback(monkeypatch)
    with atomic_file(tmp_path / "a.bin", durable=False) as stream:
        stream.write(b"x")
        assert not any(t.name == "burnpack-writeback" for t in threading.enumerate())
    assert calls == [] and not asked.is_set()


def test_a_write_that_fails_stops_asking_for_writeback(tmp_path, monkeypatch):
    calls, asked = _record_writeback(monkeypatch)
    with pytest.raises(RuntimeError):
        with atomic_file(tmp_path / "a.bin") as stream:
            stream.write(b"x")
            asked.wait(10)
            raise RuntimeError("producer failed")
    assert not any(t.name == "burnpack-writeback" for t in threading.enumerate())
    assert not (tmp_path / "a.bin").exists()


# -- the guarantee of each mode ------------------------------------------------------------------
@pytest.mark.parametrize("how", ["write", "write_atomic"])
def test_a_write_renames_the_new_file_over_the_old_one(tmp_path, monkeypatch, how):
    """A rename over an existing file is what ext4's auto_da_alloc keys on: it starts writing the new
    file's blocks, so a write that is not fsynced leaves the old file or the new one after a power
    cut. Exchanging the names and unlinking the old file skips that."""
    target = tmp_path / "m.bpk"
    target.write_bytes(b"old")
    old_inode = target.stat().st_ino
    renames: list[tuple[str, int | None]] = []
    real_replace = os.replace

    def recording(src, dst):
        renames.append((os.fspath(dst), os.stat(dst).st_ino if os.path.exists(dst) else None))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", recording)
    getattr(burnpack.Writer([burnpack.Tensor.from_numpy("x", np.zeros(4, np.float32))]), how)(target)
    assert renames == [(str(target), old_inode)]
    assert burnpack.load(target).names == ["x"] and os.listdir(tmp_path) == ["m.bpk"]


@pytest.mark.parametrize("how", ["write", "write_atomic"])
def test_an_error_names_the_writers_path_never_a_scratch_file(tmp_path, how):
    target = tmp_path / "m.bpk"
    target.mkdir()  # the rename of the complete scratch file over it fails
    with pytest.raises(burnpack.IoError) as raised:
        getattr(burnpack.Writer([burnpack.Tensor.from_numpy("x", np.zeros(4, np.float32))]), how)(target)
    assert raised.value.filename == str(target)
    assert atomic.SCRATCH_SUFFIX not in str(raised.value) and os.listdir(tmp_path) == ["m.bpk"]


def test_write_safetensors_errors_name_its_path_never_a_scratch_file(tmp_path):
    from burnpack.interop.safetensors import write_safetensors

    target = tmp_path / "m.safetensors"
    target.mkdir()
    with pytest.raises(OSError) as raised:
        write_safetensors({"x": np.zeros(2, np.float32)}, target)
    assert raised.value.filename == str(target) and atomic.SCRATCH_SUFFIX not in str(raised.value)


# -- folders: built beside, put in place as a whole ---------------------------------------------------
def _tree(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_folder_appears_whole_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "out"
    with atomic.atomic_folder(target) as scratch:
        (scratch / "a").write_bytes(b"1")
        assert not target.exists()
    assert _tree(target) == {"a": b"1"} and [p.name for p in tmp_path.iterdir()] == ["out"]
    with pytest.raises(RuntimeError):
        with atomic.atomic_folder(tmp_path / "other") as scratch:
            (scratch / "a").write_bytes(b"1")
            raise RuntimeError("boom")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_folder_replaces_another_only_with_replace_keeping_its_mode(tmp_path):
    target = tmp_path / "out"
    target.mkdir(mode=0o750)
    (target / "old").write_bytes(b"old")
    with pytest.raises(DestinationExists):
        with atomic.atomic_folder(target) as scratch:
            (scratch / "new").write_bytes(b"new")
    assert _tree(target) == {"old": b"old"}
    with atomic.atomic_folder(target, replace=True) as scratch:
        (scratch / "new").write_bytes(b"new")
    assert _tree(target) == {"new": b"new"} and stat.S_IMODE(target.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_merged_files_join_the_folders_others_and_replace_only_with_replace(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "config.json").write_bytes(b"{}")
    (target / "part-3").write_bytes(b"stale")
    with atomic.atomic_folder(target, merge=True) as scratch:
        (scratch / "part-1").write_bytes(b"1")
    assert _tree(target) == {"config.json": b"{}", "part-1": b"1", "part-3": b"stale"}
    with pytest.raises(DestinationExists):
        with atomic.atomic_folder(target, merge=True) as scratch:
            (scratch / "part-1").write_bytes(b"2")
            (scratch / "part-2").write_bytes(b"2")
    assert _tree(target) == {"config.json": b"{}", "part-1": b"1", "part-3": b"stale"}
    with atomic.atomic_folder(target, merge=True, replace=True, obsolete=lambda name: name.startswith("part-")) as scratch:
        (scratch / "part-1").write_bytes(b"2")
    assert _tree(target) == {"config.json": b"{}", "part-1": b"2"}


def test_the_next_write_removes_a_killed_writers_scratch_folder(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    scratch = tmp_path / f".out.{atomic._HOST}-{int(dead.stdout)}-0{atomic.SCRATCH_SUFFIX}"
    (scratch / "inner").mkdir(parents=True)
    (scratch / "inner" / "shard").write_bytes(b"partial")
    burnpack.save({"x": np.zeros(2, np.float32)}, tmp_path / "other.bpk")
    assert [p.name for p in tmp_path.iterdir()] == ["other.bpk"]
