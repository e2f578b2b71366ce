"""Where a pack's bytes come from.

A reader only ever asks a source for byte ranges, so a remote source (HTTP or object-store range
requests) only has to implement ``size`` and ``read``; sources that can hand out zero-copy
windows (memory, memory-mapped files) also implement ``buffer``.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import sys
from collections.abc import Sequence
from typing import BinaryIO, Protocol

from ..errors import IoError

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _refuse_irregular(mode: int, path: str | os.PathLike[str]) -> None:
    if stat.S_ISDIR(mode):  # what opening it would say, as Burn reports it
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise IoError(f"{os.fspath(path)} is {kind}, not a regular file; only regular files are read")


def open_regular(path: str | os.PathLike[str], *, folder: Folder | None = None) -> BinaryIO:
    """Open a regular file for reading; refuse FIFOs, devices, sockets and directories.

    Reading a FIFO blocks forever and a device never ends, so the kind is checked before the file
    is opened, and again on the open descriptor (the path could be swapped in between); the open
    itself is non-blocking, so even a FIFO swapped in cannot hang it. A file reached through a
    ``folder`` must also lie inside it (:class:`Folder`).
    """
    fd, _ = open_regular_fd(path, folder=folder)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_regular_fd(path: str | os.PathLike[str], *, folder: Folder | None = None) -> tuple[int, int]:
    """``open_regular``'s checks and open, as a bare descriptor the caller closes, and the
    file's size when it was opened."""
    if "\0" in os.fsdecode(path):  # os.stat would raise a bare ValueError
        raise IoError("a path cannot hold a NUL character", where=repr(os.fsdecode(path)))
    _refuse_irregular(os.stat(path).st_mode, path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        opened = os.fstat(fd)
        _refuse_irregular(opened.st_mode, path)
        if folder is not None:
            folder.check(fd, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, opened.st_size


# Kernel file systems whose files are made up when read (statfs ``f_type``, linux/magic.h):
# a link to one of their files must not be read as if it were a shard or a log.
_SYNTHESISED = {
    0x9FA0: "procfs", 0x62656572: "sysfs", 0x64626720: "debugfs", 0x74726163: "tracefs",
    0x73636673: "securityfs", 0x27E0EB: "cgroup", 0x63677270: "cgroup2", 0x62656570: "configfs",
    0xDE5E81E4: "efivarfs", 0x6165676C: "pstore", 0xCAFE4A11: "bpf", 0x1CD1: "devpts",
    0x6E736673: "nsfs", 0xF97CFF8C: "selinuxfs", 0x43415D53: "smackfs", 0x42494E4D: "binfmt_misc",
    0x65735543: "fusectl",
}  # fmt: skip
# Where those are mounted, for a system that cannot say which file system holds a descriptor.
_SYNTHESISED_ROOTS = ("/proc", "/sys", "/dev")


def _file_system_type(fd: int) -> int | None:
    """The ``f_type`` of the file system holding ``fd`` (Linux ``fstatfs``), or None elsewhere.

    ``struct statfs`` begins with ``f_type``, a C ``long`` on every Linux ABI this is meant for
    (x86-64, AArch64, 32-bit ARM and x86; not s390x, where it is 32 bits); ctypes is imported
    only when a folder's file is opened."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(512)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.fstatfs(fd, buffer) != 0:
        return None
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF


def _descriptor_path(fd: int, path: str | os.PathLike[str]) -> str | None:
    """The real path of the file open at ``fd``: the one Linux's ``/proc/self/fd`` gives for the
    descriptor itself; elsewhere (or without ``/proc``) ``path``'s real path if it still names the
    same file (device and inode), so a link swapped after the open is caught; None when neither
    can tell."""
    try:
        named = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        named = ""
    if named.startswith("/") and not named.endswith(" (deleted)"):
        return named
    real = os.path.realpath(path)
    try:
        found, opened = os.stat(real), os.fstat(fd)
    except OSError:
        return None
    return real if (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino) else None


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # one relative, or on another drive
        return False


class Folder:
    """A folder a reader was pointed at, closed: every file reached through it — a shard or an
    ``*.index.json``, a DCP record or ``.metadata``, a checkpoint file, ``retention.json`` or a
    metric log — must resolve inside it and be a regular file on a file system that stores files,
    never procfs, sysfs or another the kernel synthesises (``_SYNTHESISED``). Both are checked on
    the opened descriptor, not on the path before opening: a link cannot be swapped in between.

    The one documented exception is the Hugging Face cache, whose snapshot files are links into
    the repository's ``blobs/`` (``snapshots/<revision>/model.safetensors`` →
    ``../../blobs/<hash>``): a folder inside ``<repository>/snapshots/`` may resolve anywhere
    inside ``<repository>`` (the folder holding ``snapshots/`` and ``blobs/``), and nowhere else.

    Portability: Linux names the descriptor's file (``/proc/self/fd``) and its file system
    (``fstatfs``). Elsewhere the path's real path is taken, and used only while it names the same
    file as the descriptor; the file-system check is then by place (``/proc``, ``/sys``, ``/dev``).
    """

    __slots__ = ("path", "root")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        real = os.path.realpath(path)
        self.path = os.fspath(path)
        """The folder as given (for messages)."""
        self.root = _hugging_face_repository(real) or real
        """Where its files may resolve: its real path, or its Hugging Face cache repository's."""

    def __repr__(self) -> str:
        return f"Folder({self.path!r})"

    def check(self, fd: int, path: str | os.PathLike[str]) -> None:
        """Refuse the file open at ``fd`` (opened as ``path``) unless it lies inside the folder on
        a file system that stores files."""
        real = _descriptor_path(fd, path)
        if real is None:
            raise IoError(f"cannot tell where {os.fspath(path)} resolves to, so whether it lies inside the folder {self.path}")
        kind = _file_system_type(fd)
        synthesised = _SYNTHESISED.get(kind) if kind is not None else next((r for r in _SYNTHESISED_ROOTS if _inside(real, r)), None)
        if synthesised is not None:
            raise IoError(
                f"{os.fspath(path)} is a file of {synthesised} (made up by the kernel when read), not one stored on a disk; "
                "files reached through a folder are read only from file systems that store them"
            )
        if not _inside(real, self.root):
            raise IoError(
                f"{os.fspath(path)} resolves to {real}, outside the folder {self.path}; files reached through a folder "
                "must lie inside it (a Hugging Face cache snapshot's links inside its repository)"
            )


def _hugging_face_repository(real: str) -> str | None:
    """The repository folder of a Hugging Face cache (``models--org--name``, holding ``blobs/``)
    when ``real`` lies in one of its ``snapshots/<revision>`` folders."""
    parts = real.split(os.sep)
    for at in range(len(parts) - 2, 0, -1):
        if parts[at] == "snapshots":
            repository = os.sep.join(parts[:at]) or os.sep
            return repository if os.path.isdir(os.path.join(repository, "blobs")) else None
    return None


class Source(Protocol):
    """A readable, fixed-size run of bytes (``buffer`` is optional).

    Two more methods are optional: ``writable_buffer()``, writable memory a torch tensor may view
    (else tensors get copies), and ``read_ranges(ranges)``, several ``(offset, length)`` ranges at
    once (remote sources coalesce them into fewer requests).
    """

    @property
    def size(self) -> int:
        """Total number of bytes."""

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (fewer only at the end)."""

    def buffer(self) -> memoryview | None:
        """The whole content as a zero-copy buffer, or None if the source cannot provide one."""



class BufferSource:
    """Bytes already in memory (``bytes``, ``bytearray``, ``memoryview``, ``mmap``)."""

    def __init__(self, data: bytes | bytearray | memoryview | mmap.mmap) -> None:
        self._view = memoryview(data).cast("B")

    @property
    def size(self) -> int:
        return self._view.nbytes

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self._view[offset : offset + length])

    def buffer(self) -> memoryview:
        return self._view

    def writable_buffer(self) -> memoryview | None:
        """The caller's buffer when it is writable (torch tensors then share it), else None."""
        return None if self._view.readonly else self._view


class FileSource:
    """A file, memory-mapped read-only: tensor bytes are paged in only when touched.

    ``writable_buffer`` maps it a second time copy-on-write, for consumers that cannot be given
    read-only memory (torch tensors): their writes stay in this process, the file never changes.
    """

    def __init__(self, path: str | os.PathLike[str], *, folder: Folder | None = None) -> None:
        fd, size = open_regular_fd(path, folder=folder)
        try:
            self._map_fd(fd, owned=True, size=size)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def from_fd(cls, fd: int) -> FileSource:
        """Map an open file descriptor (it is duplicated: the caller keeps and closes its own)."""
        source = cls.__new__(cls)
        source._map_fd(fd)
        return source

    def _map_fd(self, fd: int, *, owned: bool = False, size: int | None = None) -> None:
        """Map ``fd`` (of ``size`` bytes, when the caller has just asked); keep it when ``owned``
        (closing it with the source), else keep a duplicate."""
        self._size = os.fstat(fd).st_size if size is None else size
        self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if self._size else None
        self._view = memoryview(self._map) if self._map is not None else memoryview(b"")
        if not self._size and owned:
            os.close(fd)
        self._fds = [fd if owned else os.dup(fd)] if self._size else []
        """The descriptor while open: closing pops it, so it is closed once, also when two
        threads close at once or a copy of this source shares the list."""
        self._owned = owned
        self._private: mmap.mmap | None = None

    @property
    def size(self) -> int:
        return self._size

    def current_size(self) -> int:
        """The file's size now: less than ``size`` once another process has truncated it."""
        try:
            fd = self._fds[0]
            if self._owned:  # our own descriptor, read only by position: seeking it to its end is free to do
                return os.lseek(fd, 0, os.SEEK_END)  # and costs a quarter of an fstat
            return os.fstat(fd).st_size  # a duplicate shares its offset with the caller's file
        except (IndexError, OSError):  # an empty file (nothing mapped) or a closed one
            return self._size

    def fileno(self) -> int:
        """The mapped file's descriptor, for reading by offset (``FileRange``); ValueError once closed."""
        try:
            return self._fds[0]
        except IndexError:
            raise ValueError("the file is closed") from None

    def read(self, offset: int, length: int) -> bytes:
        if self._map is None:
            return b""
        return self._map[offset : offset + length]

    def buffer(self) -> memoryview | None:
        return self._view

    def writable_buffer(self) -> memoryview:
        """The whole file as writable copy-on-write memory (mapped on first use)."""
        if self._map is None:
            return memoryview(bytearray())
        if self._private is None:
            self._private = mmap.mmap(self.fileno(), 0, access=mmap.ACCESS_COPY)
        return memoryview(self._private)

    def close(self) -> None:
        """Unmap the file; arrays still viewing it keep the mapping alive until they are freed."""
        self._close_fd()
        if self._private is not None:
            try:
                self._private.close()
            except BufferError:  # torch tensors still use it
                pass
        try:
            self._view.release()
        except BufferError:  # an array viewing the whole mapping still uses it
            pass
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # exported numpy views still use it; the GC unmaps it later
                pass

    def _close_fd(self) -> None:
        try:
            fd = getattr(self, "_fds", []).pop()  # atomic: one caller gets it
        except IndexError:
            return
        os.close(fd)

    # The descriptor is closed when the source is dropped unclosed; __del__ rather than
    # weakref.finalize, whose bookkeeping is a measurable part of opening a small file once.
    __del__ = _close_fd


FILE_OBJECT_PIECE = 64 << 20
"""The most a ``FileObjectSource`` asks of its file object in one ``read``: what it holds is what
the object answered, never what its size claims."""


class FileObjectSource:
    """A seekable binary file object (``io.BytesIO``, a socket-backed stream, …) from its
    position when given, read range by range: each read seeks, so the object's position moves;
    reads are serialised. A range is asked for :data:`FILE_OBJECT_PIECE` bytes at a time, and an
    answer longer than asked is an ``IoError``: memory follows the bytes the object really gives."""

    def __init__(self, file: BinaryIO) -> None:
        import threading  # (paid by a file-object source, not by every command's start)

        self._file = file
        self._lock = threading.Lock()
        self._base = file.tell()
        self._size = max(0, file.seek(0, os.SEEK_END) - self._base)

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        length = max(0, min(length, self._size - offset))
        parts = []
        with self._lock:
            self._file.seek(self._base + offset)
            while length > 0:
                asked = min(length, FILE_OBJECT_PIECE)
                chunk = self._file.read(asked)
                if not chunk:
                    break
                if not isinstance(chunk, (bytes, bytearray, memoryview)):
                    raise TypeError(f"the file object returned {type(chunk).__name__}, not bytes: open it in binary mode")
                got = memoryview(chunk).nbytes
                if got > asked:
                    raise IoError(f"the file object's read({asked}) returned {got} bytes, more than asked", where=f"offset {offset}")
                parts.append(chunk)
                length -= got
        return b"".join(parts)

    def buffer(self) -> None:
        """File objects are read by range: no zero-copy window."""
        return None


BULK_GAP = 1 << 20
"""Bytes between two ranges below which one request reads both (a pack pads by < 256 bytes)."""
BULK_BLOCK = 64 << 20
"""Largest block a coalesced request asks for (a larger single range is its own request)."""


def coalesce(ranges: Sequence[tuple[int, int]], *, max_gap: int, max_block: int) -> list[tuple[int, int, list[int]]]:
    """Group ``(offset, length)`` ranges into blocks that are each read with one request.

    Ranges are taken in offset order; one joins the current block while the gap before it is at
    most ``max_gap`` and the block stays within ``max_block`` bytes (a larger range is a block of
    its own). Returns ``(block start, block end, indices of its ranges)``.
    """
    blocks: list[tuple[int, int, list[int]]] = []
    block_start = block_end = 0
    members: list[int] = []
    for i in sorted(range(len(ranges)), key=lambda i: ranges[i][0]):
        start, length = ranges[i]
        end = start + length
        if members and start - block_end <= max_gap and max(end, block_end) - block_start <= max_block:
            block_end = max(end, block_end)
            members.append(i)
            continue
        if members:
            blocks.append((block_start, block_end, members))
        block_start, block_end, members = start, end, [i]
    if members:
        blocks.append((block_start, block_end, members))
    return blocks


def read_coalesced(source: Source, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
    """Every ``(offset, length)`` range of ``source`` as writable memory (arrays and torch tensors
    may view it), read in blocks of neighbouring ranges: one ``read`` per block. A source with
    ``read_ranges`` of its own (remote files, several requests at once) answers instead."""
    own = getattr(source, "read_ranges", None)
    if own is not None:
        pieces = own(ranges)
    else:
        pieces = [memoryview(b"")] * len(ranges)
        for block_start, block_end, members in coalesce(ranges, max_gap=BULK_GAP, max_block=BULK_BLOCK):
            block = memoryview(bytearray(source.read(block_start, block_end - block_start)))
            if len(block) != block_end - block_start:
                raise IoError(f"short read: got {len(block)} of {block_end - block_start} bytes at offset {block_start}")
            for i in members:
                start = ranges[i][0] - block_start
                pieces[i] = block[start : start + ranges[i][1]]
    for (offset, length), piece in zip(ranges, pieces):
        if len(piece) != length:
            raise IoError(f"short read: got {len(piece)} of {length} bytes at offset {offset}")
    return pieces
