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
from typing import BinaryIO, Protocol

from .errors import IoError

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


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a regular file for reading; refuse FIFOs, devices, sockets and directories.

    Reading a FIFO blocks forever and a device never ends, so the kind is checked before the file
    is opened, and again on the open descriptor (the path could be swapped in between); the open
    itself is non-blocking, so even a FIFO swapped in cannot hang it.
    """
    _refuse_irregular(os.stat(path).st_mode, path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _refuse_irregular(os.fstat(fd).st_mode, path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class Source(Protocol):
    """A readable, fixed-size run of bytes (``buffer`` is optional)."""

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


class FileSource:
    """A file, memory-mapped read-only: tensor bytes are paged in only when touched."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        with open_regular(path) as file:
            self._size = os.fstat(file.fileno()).st_size
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self._size else None

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if self._map is None:
            return b""
        return self._map[offset : offset + length]

    def buffer(self) -> memoryview | None:
        return memoryview(self._map) if self._map is not None else memoryview(b"")

    def close(self) -> None:
        """Unmap the file; arrays still viewing it keep the mapping alive until they are freed."""
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # exported numpy views still use it; the GC unmaps it later
                pass
