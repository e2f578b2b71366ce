"""A source that counts what a reader asks of it."""

from __future__ import annotations


class CountingSource:
    """Bytes served only as ranges (no zero-copy buffer), with every read recorded."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self.reads: list[tuple[int, int]] = []

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self._data[offset : offset + length]

    @property
    def bytes_read(self) -> int:
        return sum(min(length, max(0, self.size - offset)) for offset, length in self.reads)
