"""Replacing file output: the one way every burnpack writer puts bytes on disk.

The destination either keeps its old content or gets the complete new one, and it is always
*replaced* (a new inode), never truncated in place: a reader that has the old file memory-mapped
keeps reading the old bytes instead of dying of SIGBUS. Burn's ``write_to_file`` truncates in
place; its ``write_to_file_atomic`` (burn-pack writer.rs) renames a scratch file as here.

Faults: where the platform supports it (Linux ``O_TMPFILE``) the bytes are written to an unnamed
file that is linked into the directory only once complete, so a killed process leaves nothing.
Elsewhere the scratch file is named ``.<name>.<host>-<pid>-<n>.burnpack-tmp``; every later write
into the same directory removes such files whose writer process (on this host) is gone.

Guarantees per mode. Durable (``durable=True``: ``save``, ``write_atomic``, every command's
output): the file and its directory are fsynced before returning, so after a power cut the name
holds the new file. Fast (``durable=False``: ``Writer.write``, ``write_safetensors``): nothing is fsynced, the scratch
file is renamed over the destination, and after a power cut the name holds the old file or the
new one as a plain rename gives it (on ext4 with ``auto_da_alloc``, the default, the rename
starts writing the new file's blocks; a file system without that can leave it empty).

Durable writes start the disk writing while the bytes are still being produced (Linux
``sync_file_range``, asked every few milliseconds by a helper thread), so that the closing fsync
waits for the tail only rather than for the whole file.

Symbolic links: a destination that is a symlink is followed and its *target* is replaced (the
link stays a link); a dangling link creates its target. A replaced file keeps its permission
bits; a new file gets the usual ``0o666 & ~umask``.

Folders (:func:`atomic_folder`: shard folders, DCP folders, checkpoint epochs): the files are
built in a scratch folder named as a scratch file is, and put in place as a whole once all are
written — the scratch folder renamed to the destination, or (into a folder that holds other
files) its files renamed into it — with SIGINT and SIGTERM held back while they move, so an
interrupt leaves either nothing or the complete output. A failure removes the scratch folder; a
killed process's is removed by the next write into the same directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import itertools
import os
import re
import shutil
import signal
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import DestinationExists

SCRATCH_SUFFIX = ".burnpack-tmp"
_HOST = hashlib.blake2s(socket.gethostname().encode(), digest_size=4).hexdigest()
_SCRATCH = re.compile(r"^\..+\.(?P<host>[0-9a-f]{8})-(?P<pid>[1-9][0-9]*)-[0-9]+" + re.escape(SCRATCH_SUFFIX) + "$")
_O_TMPFILE: int | None = getattr(os, "O_TMPFILE", None)
_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400
_tmpfile_works: dict[int, bool] = {}  # st_dev → whether O_TMPFILE + linkat works there


def destination(path: Path) -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or the final target of a symlink.

    A dangling link names the file to create. Raises ``OSError`` (ELOOP) for a link cycle.
    """
    path = Path(path)
    seen: set[Path] = set()
    while path.is_symlink():
        if path in seen or len(seen) >= 40:
            raise OSError(errno.ELOOP, "Too many levels of symbolic links", str(path))
        seen.add(path)
        path = path.parent / os.readlink(path)
    return path


@contextlib.contextmanager
def atomic_file(path: Path, *, replace: bool = True, durable: bool = True) -> Iterator[BinaryIO]:
    """A stream whose bytes replace ``destination(path)`` only if the ``with`` block succeeds.

    ``durable`` fsyncs the file and its directory before returning. With ``replace=False`` an
    existing destination is never replaced: ``DestinationExists`` if it appeared meanwhile.
    Raises ``OSError``, naming ``path`` where the failing call named a scratch file.
    """
    try:
        with _replacing(path, replace=replace, durable=durable) as stream:
            yield stream
    except OSError as exc:
        if not _names_scratch(exc):
            raise
        raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None


def _names_scratch(exc: OSError) -> bool:
    """Whether ``exc`` names one of our scratch files (a name the user never chose)."""
    return exc.errno is not None and any(
        isinstance(name, (str, bytes, os.PathLike)) and os.fsdecode(name).endswith(SCRATCH_SUFFIX)
        for name in (exc.filename, exc.filename2)
    )


@contextlib.contextmanager
def _replacing(path: Path, *, replace: bool, durable: bool) -> Iterator[BinaryIO]:
    """``atomic_file``, its errors as the system calls raise them."""
    target = destination(path)
    directory = target.parent
    if target.name in ("", ".", ".."):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    if not directory.is_dir():
        how = f" (the symbolic link {path} points into it)" if target != Path(path) else ""
        raise FileNotFoundError(errno.ENOENT, f"No such file or directory: {directory}{how}", str(directory))
    sweep_stale_scratch(directory)
    mode = _kept_mode(target)
    unnamed = _open_unnamed(directory)
    scratch: Path | None = None
    if unnamed is None:
        scratch, fd = _open_named(target)
    else:
        fd = unnamed
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb", closefd=False) as stream, _writing_back(fd if durable else None):
            yield stream
            stream.flush()
        if durable:
            os.fsync(fd)
        if not replace:
            _link_into_place(fd, scratch, target)
        else:
            if scratch is None:  # name the unnamed file beside the target, then rename it over
                scratch = _link_to_new_scratch(fd, target)
            # A plain rename, also when not durable: renaming over an existing file makes ext4
            # allocate and start writing back the new file's blocks (auto_da_alloc), so after a
            # power cut the name holds the old or the new file, not an empty one. Exchanging
            # the names and unlinking the old file would skip that.
            os.replace(scratch, target)
        scratch = None
    finally:
        os.close(fd)
        if scratch is not None:
            with contextlib.suppress(OSError):
                os.unlink(scratch)
    if durable:
        _fsync_dir(directory)


@contextlib.contextmanager
def atomic_folder(
    path: Path, *, replace: bool = False, merge: bool = False, obsolete: Callable[[str], bool] | None = None
) -> Iterator[Path]:
    """A scratch folder to write a folder output in, put in place at ``path`` as a whole only if
    the ``with`` block succeeds, and removed if it fails (Ctrl-C and SIGTERM too, when they raise).

    ``merge=False``: the folder is the output (a DCP checkpoint): it becomes ``path``, which may
    be missing or an empty directory; an existing one is replaced only with ``replace`` (swapped in
    one step where Linux offers ``RENAME_EXCHANGE``), keeping its permission bits.
    ``merge=True``: the files go into the folder ``path`` (created when missing) beside what it
    holds; a file of the same name is replaced only with ``replace``, and then the files
    ``obsolete`` names (the shards of an earlier save) are removed. Raises ``DestinationExists``
    when a name is taken that may not be replaced; nothing is moved then.
    """
    path = Path(path)
    inside = merge and path.is_dir()  # a rename between file systems fails: a mount point is its own
    parent = path if inside else path.parent
    if not parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(parent))
    sweep_stale_scratch(parent)
    scratch = _new_scratch_folder(path, parent)
    moved = False  # the scratch folder became the destination
    try:
        yield scratch
        with _signals_held():
            merged = merge and path.is_dir()
            if merged:
                _merge_into(scratch, path, replace=replace, obsolete=obsolete)
            else:
                _rename_folder(scratch, path, replace=replace)
                moved = True
        _fsync_dir(path if merged else path.parent)
    finally:
        if not moved:
            shutil.rmtree(scratch, ignore_errors=True)


def _new_scratch_folder(path: Path, parent: Path) -> Path:
    for n in itertools.count():
        scratch = parent / _scratch_name(path, n).name
        try:
            os.mkdir(scratch, 0o777)
            return scratch
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is over (main thread, POSIX; elsewhere nothing)."""
    held = {signal.SIGINT, getattr(signal, "SIGTERM", signal.SIGINT)}
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _rename_folder(scratch: Path, path: Path, *, replace: bool) -> None:
    """``scratch`` becomes ``path``: a missing or empty ``path`` is taken, another only with ``replace``."""
    try:
        os.rename(scratch, path)  # POSIX: also over an empty directory, atomically
        return
    except FileExistsError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise
    if not replace or not path.is_dir() or path.is_symlink():
        raise DestinationExists(f"{path} exists")
    with contextlib.suppress(OSError):
        os.chmod(scratch, stat.S_IMODE(os.stat(path).st_mode))
    if _exchange(scratch, path):  # the old folder now has the scratch name
        shutil.rmtree(scratch, ignore_errors=True)
        return
    old = _new_scratch_folder(path, path.parent)
    os.rmdir(old)
    os.rename(path, old)
    try:
        os.rename(scratch, path)
    except BaseException:
        os.rename(old, path)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _merge_into(scratch: Path, folder: Path, *, replace: bool, obsolete: Callable[[str], bool] | None) -> None:
    """Move ``scratch``'s files into ``folder`` (checked first: nothing moves if one may not)."""
    names = sorted(os.listdir(scratch))
    if not replace:
        taken = [name for name in names if os.path.lexists(folder / name)]
        if taken:
            raise DestinationExists(f"{folder / taken[0]} exists")
    stale = [n for n in os.listdir(folder) if replace and obsolete is not None and obsolete(n) and n not in names]
    for name in names:
        if replace:
            os.replace(scratch / name, folder / name)
        else:
            _link_into_place_named(scratch / name, folder / name)
    for name in stale:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(folder / name)


def _link_into_place_named(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target`` unless ``target`` exists (hard link + unlink, never replacing)."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise DestinationExists(f"{target} exists") from None
    except OSError:  # file systems without hard links: a (racy) existence check instead
        if os.path.lexists(target):
            raise DestinationExists(f"{target} exists") from None
        os.rename(source, target)
        return
    os.unlink(source)


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names in one step (Linux ``renameat2``); False where that is unsupported."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def sweep_stale_scratch(directory: Path) -> list[Path]:
    """Remove this host's scratch files and folders in ``directory`` whose writer process is
    gone; returns them."""
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        m = _SCRATCH.match(name)
        if m is None or m["host"] != _HOST or _process_alive(int(m["pid"])):
            continue
        path = Path(directory) / name
        try:
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.unlink(path)
            elif stat.S_ISDIR(mode):
                shutil.rmtree(path)
            else:
                continue
            removed.append(path)
        except OSError:  # another writer swept it first, or not ours to remove
            continue
    return removed


def _process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process here (a process of another user counts as alive)."""
    if pid == os.getpid() or os.name == "nt":  # Windows' os.kill terminates: never probe there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _scratch_name(target: Path, n: int) -> Path:
    return target.with_name(f".{target.name}.{_HOST}-{os.getpid()}-{n}{SCRATCH_SUFFIX}")


def _kept_mode(target: Path) -> int | None:
    try:
        st = os.stat(target)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _open_named(target: Path) -> tuple[Path, int]:
    for n in itertools.count():
        scratch = _scratch_name(target, n)
        try:
            return scratch, os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _link_to_new_scratch(fd: int, target: Path) -> Path:
    """Give the unnamed file ``fd`` a fresh scratch name; returns it (only once it exists)."""
    for n in itertools.count():
        scratch = _scratch_name(target, n)
        try:
            _link_fd(fd, scratch)
            return scratch
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def _open_unnamed(directory: Path) -> int | None:
    """An ``O_TMPFILE`` descriptor in ``directory``, or None where that (or linking it) is unsupported."""
    if _O_TMPFILE is None or _linkat is None:
        return None
    try:
        device = os.stat(directory).st_dev
        works = _tmpfile_works.get(device)
        fd = os.open(directory, _O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError:
        return None
    if works is None:  # probe once per file system: can this descriptor be given a name?
        probe = Path(directory) / f".probe.{_HOST}-{os.getpid()}-0{SCRATCH_SUFFIX}"
        try:
            _link_fd(fd, probe)
            os.unlink(probe)
            works = True
        except OSError:
            works = False
        _tmpfile_works[device] = works
        if works:  # the probe gave this descriptor a name; start again with a fresh one
            os.close(fd)
            return _open_unnamed(directory)
    if not works:
        os.close(fd)
        return None
    return fd


def _libc_function(name: str, argtypes: list[Any]) -> Any:
    """A libc function through ctypes (Linux only here), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = argtypes
    function.restype = ctypes.c_int
    return function


_PATH_ARGS = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
_linkat = _libc_function("linkat", [*_PATH_ARGS, ctypes.c_int]) if _O_TMPFILE is not None else None
_renameat2 = _libc_function("renameat2", [*_PATH_ARGS, ctypes.c_uint])


_sync_file_range = _libc_function("sync_file_range", [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint])
_SYNC_FILE_RANGE_WRITE = 2  # start writing dirty pages back; neither wait nor take the error fsync reports
WRITEBACK_INTERVAL = 0.02
"""Seconds between two requests to start writing back, while a durable write runs."""


@contextlib.contextmanager
def _writing_back(fd: int | None) -> Iterator[None]:
    """While the block runs, keep asking the kernel to start writing ``fd``'s dirty pages to disk.

    A large durable write otherwise first fills the page cache and then waits in fsync for all of
    it; with the disk busy from the start, the two overlap. A writer may copy in the kernel
    (``copy_file_range``) and bypass the stream, so the requests come from a thread rather than
    from the stream's writes. Nothing for ``fd`` None or without ``sync_file_range``.
    """
    if fd is None or _sync_file_range is None:
        yield
        return
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(WRITEBACK_INTERVAL):
            _sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)  # failures show in the closing fsync

    thread = threading.Thread(target=run, name="burnpack-writeback", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


_fallocate = _libc_function("fallocate", [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64])
_FALLOC_FL_KEEP_SIZE = 1  # claim the blocks; the file's size stays what has been written
_NO_ROOM = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name))
"""``fallocate`` errors that say the range cannot be stored: raised. Any other says this file or
file system cannot preallocate (EOPNOTSUPP, ENOSYS, ENODEV, EPERM...): the writes then claim
their blocks as they go, as without the call."""


def preallocate(fd: int, offset: int, length: int) -> None:
    """Claim the disk blocks under ``length`` bytes at ``offset`` of the regular file open at
    ``fd``, before this process writes them itself (Linux ``fallocate``, the file's size unchanged).

    ext4 otherwise reserves every 4 KiB block as a write reaches it (delayed allocation), work the
    writing thread pays for block by block; with the range claimed in one call, each write only
    fills the page cache. A disk without room then fails here, before the range's first byte.
    Not for ranges the kernel copies from another file (``copy_file_range``): a file system that
    shares the source's blocks there (XFS, Btrfs) would claim them for nothing.

    Raises:
        OSError: The range cannot be stored (no room, over quota, too large, an I/O error).
    """
    if _fallocate is None or length <= 0:
        return
    while _fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) != 0:
        code = ctypes.get_errno()
        if code == errno.EINTR:
            continue
        if code in _NO_ROOM:
            raise OSError(code, os.strerror(code))
        return


def _link_fd(fd: int, name: Path) -> None:
    """Give the unnamed file ``fd`` the name ``name`` (``linkat`` through ``/proc/self/fd``)."""
    assert _linkat is not None
    if _linkat(_AT_FDCWD, f"/proc/self/fd/{fd}".encode(), _AT_FDCWD, os.fsencode(name), _AT_SYMLINK_FOLLOW) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(name))


def _link_into_place(fd: int, scratch: Path | None, path: Path) -> None:
    try:
        if scratch is None:
            _link_fd(fd, path)
            return
        os.link(scratch, path)
    except FileExistsError:
        raise DestinationExists(f"{path} exists") from None
    except OSError:  # file systems without hard links: a (racy) existence check instead
        if scratch is None:
            raise
        if os.path.lexists(path):
            raise DestinationExists(f"{path} exists") from None
        os.replace(scratch, path)
    else:
        os.unlink(scratch)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
