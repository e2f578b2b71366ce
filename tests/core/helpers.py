"""Counting what a reader asks of its source."""

from __future__ import annotations

from .test_reader import CountingSource  # the one range-only test source

__all__ = ["CountingSource", "bytes_read"]


def bytes_read(source: CountingSource) -> int:
    """Bytes actually served (a read past the end gets fewer than it asked for)."""
    size = source.size
    return sum(min(length, max(0, size - offset)) for offset, length in source.reads)
