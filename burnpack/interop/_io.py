"""What every interop reader and writer shares: the conversion errors, atomic output files,
foreign arrays as entries (numpy ``bool`` becomes a Burn ``Bool`` of the chosen store), and the
page releaser of memory-mapped files read tensor by tensor."""

from __future__ import annotations

import contextlib
import mmap
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..codec._generated.metadata import BoolStore, DType
from ..core.atomic import atomic_file
from ..errors import ConversionError, DestinationExists, OutputExistsError
from ..core.dtypes import numpy_dtype
from .tensors import Entry

__all__ = ["PageReleaser", "atomic_output", "bool_dtype", "entries_from_arrays", "entry_from_array", "view_of"]


_BOOL_STORES = {store.name.lower(): store for store in BoolStore}


def bool_dtype(store: str | BoolStore) -> DType:
    if isinstance(store, BoolStore):
        return DType.Bool(store)
    try:
        return DType.Bool(_BOOL_STORES[str(store).strip().lower()])
    except KeyError:
        raise ConversionError(f"unknown bool store {store!r}; expected Native, U8 or U32") from None


def entry_from_array(name: str, array: np.ndarray, bool_store: str | BoolStore) -> Entry:
    """An entry for a foreign array; numpy ``bool`` becomes ``Bool(bool_store)``."""
    if array.dtype == np.bool_:
        dtype = bool_dtype(bool_store)
        if dtype.value == BoolStore.Native:
            return Entry.from_numpy(name, array, dtype=dtype)
        want = numpy_dtype(dtype)
        if want == np.uint8:
            return Entry(name, dtype, array.shape, lambda: array.view(np.uint8))  # same bytes
        return Entry(name, dtype, array.shape, lambda: array.astype(want))
    return Entry.from_numpy(name, array)


def view_of(array: np.ndarray) -> tuple[object, ...] | None:
    """What makes arrays one tensor under several names (tied weights, read from one storage):
    the same elements of the same memory, seen alike. None for an empty array (nothing shared)."""
    if array.nbytes == 0:
        return None
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)


def entries_from_arrays(arrays: Iterable[tuple[str, np.ndarray]], bool_store: str | BoolStore) -> list[Entry]:
    """Entries for foreign arrays (:func:`entry_from_array`); names whose arrays are one view
    (:func:`view_of`: tied weights) are tied (``Entry.tie``: the first such name)."""
    items = [(name, array, view_of(array)) for name, array in arrays]
    names = Counter(view for _, _, view in items if view is not None)
    first: dict[object, str] = {}
    out = []
    for name, array, view in items:
        entry = entry_from_array(name, array, bool_store)
        if view is not None and names[view] > 1:
            entry = entry.replace(tie=first.setdefault(view, name))
        out.append(entry)
    return out


@contextlib.contextmanager
def atomic_output(path: Path, *, overwrite: bool = False) -> Iterator[BinaryIO]:
    """A stream whose bytes land at ``path`` only if the block succeeds.

    The data goes to ``<name>.<pid>-<n>.tmp`` beside ``path``, is fsynced, then renamed over
    ``path`` (``overwrite``) or hard-linked to it, which fails if ``path`` appeared meanwhile.
    """
    path = Path(path)
    if not overwrite and path.exists():
        raise OutputExistsError(path)
    if path.parent and not path.parent.exists():
        raise ConversionError(f"{path.parent}: no such directory")
    try:
        with atomic_file(path, replace=overwrite) as stream:
            yield stream
    except DestinationExists:
        raise OutputExistsError(path, "appeared while converting; nothing was replaced") from None


class PageReleaser:
    """Gives back the pages of the tensor taken before (in whichever mapping it was), so reading
    a large file (or a model's shards) tensor by tensor keeps about one tensor resident."""

    def __init__(self) -> None:
        self._last: tuple[mmap.mmap, int, int] | None = None

    def take(self, mapping: mmap.mmap, start: int, end: int) -> None:
        if self._last is not None:
            previous, first, last = self._last
            first -= first % mmap.PAGESIZE
            if last > first:
                with contextlib.suppress(ValueError):  # its file is already closed
                    previous.madvise(mmap.MADV_DONTNEED, first, last - first)
        self._last = (mapping, start, end)
