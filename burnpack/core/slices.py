"""Partial tensor reads: ``view.slice[i:j]``, ``view.slice[:, 3]`` (like safetensors' ``get_slice``).

A slice is planned as byte ranges of the tensor before anything is read: the trailing dimensions
taken whole form one run per index of the dimension before them, runs that touch are merged,
so a row range is one read and a column costs one range per row. Sources without a zero-copy
buffer (file objects, remote files) are asked for exactly those ranges; memory and mapped files
are indexed in place. The result is always a fresh array (or tensor) of exactly that part.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .dtypes import element_size, numpy_dtype
from .frameworks import torch_from_buffer
from ..errors import IoError


def normalize(shape: tuple[int, ...], index: Any) -> list[int | range]:
    """One int or range per dimension, as numpy's basic indexing reads ``index``."""
    items = list(index) if isinstance(index, tuple) else [index]
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    if len(items) > len(shape):
        raise IndexError(f"too many indices: tensor is {len(shape)}-dimensional, but {len(items)} were indexed")
    items += [slice(None)] * (len(shape) - len(items))
    out: list[int | range] = []
    for dim, (item, size) in enumerate(zip(items, shape)):
        if isinstance(item, slice):
            out.append(range(*item.indices(size)))
        elif isinstance(item, (bool, np.bool_)) or not hasattr(item, "__index__"):
            raise TypeError(f"slices take ints, slices and '...', not {type(item).__name__}")
        else:
            i = operator.index(item)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            out.append(i % size)
    return out


def plan(shape: tuple[int, ...], index: Any) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """``(result shape, run starts, run lengths)`` in elements, in the result's C order, merged."""
    picks = normalize(shape, index)
    out_shape = tuple(len(p) for p in picks if isinstance(p, range))
    if math.prod(out_shape) == 0 or math.prod(shape) == 0:  # nothing to read (and no huge empty dims to walk)
        return out_shape, np.zeros(0, np.int64), np.zeros(0, np.int64)
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    whole = [isinstance(p, range) and p.step == 1 and len(p) == size for p, size in zip(picks, shape)]
    k = max((d for d in range(len(shape)) if not whole[d]), default=-1)  # last dim not taken whole
    inner = strides[k] if k >= 0 else math.prod(shape)
    starts = np.zeros(1, np.int64)
    for d in range(k):
        starts = (starts[:, None] + _positions(picks[d]) * strides[d]).ravel()
    last = picks[k] if k >= 0 else 0
    if k < 0:
        length = inner
    elif isinstance(last, range) and last.step == 1:  # a run over dim k and everything after
        length = len(last) * inner
        starts = starts + last.start * inner if length else starts[:0]
    else:
        length = inner
        starts = (starts[:, None] + _positions(last) * inner).ravel()
    breaks = np.flatnonzero(np.diff(starts) != length) + 1  # runs that touch become one
    first = np.concatenate(([0], breaks))
    counts = np.diff(np.concatenate((first, [starts.size])))
    return out_shape, starts[first], counts * length


def _positions(pick: int | range) -> np.ndarray:
    if isinstance(pick, int):
        return np.array([pick], np.int64)
    return np.arange(pick.start, pick.stop, pick.step, dtype=np.int64)


class TensorSlice:
    """``view.slice[index]``: exactly that part of the tensor, in the pack's framework."""

    __slots__ = ("_view",)

    def __init__(self, view: Any) -> None:
        self._view = view

    def __repr__(self) -> str:
        return f"<slice of {self._view!r}>"

    def get_shape(self) -> list[int]:
        """The whole tensor's shape (safetensors' ``PySafeSlice.get_shape``)."""
        return list(self._view.shape)

    def __getitem__(self, index: Any) -> Any:
        view = self._view
        size = element_size(view.dtype)
        if size is None:
            raise TypeError(f"tensor {view.name!r} is QFloat: its bytes are packed values with inline scales, not elements to slice")
        begin, end = view._pack._tensor_range(view)
        view._check_byte_len(end - begin)  # the shape is backed by real bytes before it is walked
        out_shape, starts, lengths = plan(view.shape, index)
        data = _gather(view, index, begin, starts * size, lengths * size)
        if view._pack.framework == "pt":
            return torch_from_buffer(data, 0, out_shape, view.dtype, name=view.name)
        return np.frombuffer(data, numpy_dtype(view.dtype), math.prod(out_shape)).reshape(out_shape)


def _gather(view: Any, index: Any, begin: int, starts: np.ndarray, lengths: np.ndarray) -> bytearray:
    """The planned byte runs of ``view`` (whose bytes start at ``begin``) concatenated: indexed in
    place for zero-copy sources, otherwise read from the source range by range (``read_ranges``
    when it batches them)."""
    pack = view._pack
    total = int(lengths.sum())
    if pack._zero_copy_buffer() is not None:
        part = np.ascontiguousarray(view.numpy()[index])
        return bytearray(part.reshape(-1).view(np.uint8)) if part.size else bytearray()
    ranges = [(begin + int(s), int(n)) for s, n in zip(starts, lengths)]
    source = pack._source
    batch = getattr(source, "read_ranges", None)
    chunks = batch(ranges) if batch is not None else [source.read(s, n) for s, n in ranges]
    out = bytearray(total)
    position = 0
    for (start, length), chunk in zip(ranges, chunks):
        if len(chunk) != length:
            raise IoError(f"short read: {len(chunk)} of {length} bytes at offset {start}", where=f"tensor {view.name!r}")
        out[position : position + length] = chunk
        position += length
    return out
