"""Where a pack's bytes come from.

A reader only ever asks a source for byte ranges, so a remote source (HTTP or object-store range
requests) only has to implement ``size`` and ``read``; sources that can hand out zero-copy
windows (memory, memory-mapped files) also implement ``buffer``.
"""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Protocol


class Source(Protocol):
    """A readable, fixed-size run of bytes (``buffer`` is optional)."""

    @property
    def size(self) -> int:
        """Total number of bytes."""

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (fewer only at the end)."""

    def buffer(self) -> memoryview | None:
        """The whole content as a zero-copy buffer, or None if the source cannot provide one."""

    def writable_buffer(self) -> memoryview | None:
        """Optional: writable memory a torch tensor may view, or None (tensors then get copies)."""


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

    def __init__(self, path: str | os.PathLike[str]) -> None:
        with open(path, "rb") as file:
            self._size = os.fstat(file.fileno()).st_size
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if self._size else None
            self._fd = os.dup(file.fileno()) if self._size else -1
        self._release_fd = weakref.finalize(self, os.close, self._fd) if self._fd >= 0 else None
        self._private: mmap.mmap | None = None

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if self._map is None:
            return b""
        return self._map[offset : offset + length]

    def buffer(self) -> memoryview | None:
        return memoryview(self._map) if self._map is not None else memoryview(b"")

    def writable_buffer(self) -> memoryview:
        """The whole file as writable copy-on-write memory (mapped on first use)."""
        if self._map is None:
            return memoryview(bytearray())
        if self._private is None:
            if self._release_fd is None or not self._release_fd.alive:
                raise ValueError("the file is closed")
            self._private = mmap.mmap(self._fd, 0, access=mmap.ACCESS_COPY)
        return memoryview(self._private)

    def close(self) -> None:
        """Unmap the file; arrays still viewing it keep the mapping alive until they are freed."""
        if self._release_fd is not None:
            self._release_fd()
        if self._private is not None:
            try:
                self._private.close()
            except BufferError:  # torch tensors still use it
                pass
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # exported numpy views still use it; the GC unmaps it later
                pass
