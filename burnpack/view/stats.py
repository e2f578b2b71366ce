"""Exact statistics and a histogram of a tensor's values, streamed over its bytes.

Two passes over the tensor, each reading it chunk by chunk (``view.slice[...]`` along the first
axis for a pack, so only that chunk's bytes are read and converted): the first counts zeros, NaN
and ±inf and finds the finite minimum, maximum, mean and standard deviation (chunk moments merged
with Chan's formula, in float64); the second counts the finite values into ``bins`` equal bins
between minimum and maximum, exactly as ``numpy.histogram(finite, bins, range=(min, max))`` does.
Memory is bounded by the chunk, not by the tensor. QFloat tensors are dequantized whole (their
values only exist with their scales); their scales get a histogram of their own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..dtypes import is_float_array
from ..quant import describe
from ..reader import TensorView

BINS = 32
CHUNK_ELEMENTS = 1 << 17
"""Elements converted to float64 at a time (1 MiB, cache-sized): what the statistics hold in memory."""


def chunks(tensor: Any, chunk_elements: int = CHUNK_ELEMENTS) -> Iterator[np.ndarray]:
    """The tensor's values as flat arrays of about ``chunk_elements`` each, in order.

    A pack's tensor is read row block by row block (only those bytes); a converted tensor (from
    safetensors, ``.pt``...) is viewed through the array its reader gives, a chunk at a time.
    QFloat: the dequantized values."""
    if chunk_elements < 1:
        raise ValueError(f"chunk_elements must be positive, got {chunk_elements}")
    if isinstance(tensor, TensorView) and not tensor.dtype.is_quantized and len(tensor.shape) > 0:
        rows = int(tensor.shape[0])
        per_row = math.prod(tensor.shape[1:])
        if rows == 0 or per_row == 0:
            return
        step = max(1, chunk_elements // per_row)
        for start in range(0, rows, step):
            yield np.asarray(tensor.slice[start : start + step]).reshape(-1)
        return
    if isinstance(tensor, TensorView):
        values = tensor.numpy(dequantize=True)
    else:
        values = tensor.numpy()
    flat = np.asarray(values).reshape(-1)
    for start in range(0, flat.size, chunk_elements):
        yield flat[start : start + chunk_elements]


def _as_float(chunk: np.ndarray) -> np.ndarray | None:
    if chunk.dtype.kind not in "iub" and not is_float_array(chunk):
        return None
    return chunk.astype(np.float64)


def value_stats(tensor: Any, *, bins: int = BINS, chunk_elements: int = CHUNK_ELEMENTS) -> dict[str, Any] | None:
    """``count, min, max, mean, std, zeros, nan, posinf, neginf`` and ``hist`` (``bins`` counts of the
    finite values, ``edges`` their bounds) of a tensor's values; None for values that are not numbers.

    ``min``/``max``/``mean``/``std`` are over the finite values (None when there are none); ``std``
    is the population standard deviation (numpy's ``std()``)."""
    count = zeros = nan = posinf = neginf = 0
    finite_n = 0
    mean = m2 = 0.0
    low, high = math.inf, -math.inf
    for chunk in chunks(tensor, chunk_elements):
        values = _as_float(chunk)
        if values is None:
            return None
        count += values.size
        zeros += values.size - int(np.count_nonzero(values))
        total_sum = float(np.add.reduce(values))
        if math.isfinite(total_sum):  # no NaN or infinity (and no overflow): every value counts
            finite = values
        else:
            isnan = np.isnan(values)
            nan += int(np.count_nonzero(isnan))
            posinf += int(np.count_nonzero(values == np.inf))
            neginf += int(np.count_nonzero(values == -np.inf))
            finite = values[np.isfinite(values)]
            total_sum = float(np.add.reduce(finite))
        if finite.size == 0:
            continue
        low, high = min(low, float(finite.min())), max(high, float(finite.max()))
        n = finite.size
        chunk_mean = total_sum / n
        centered = finite - chunk_mean
        chunk_m2 = float(np.add.reduce(np.square(centered, out=centered)))
        total = finite_n + n
        delta = chunk_mean - mean
        mean += delta * n / total
        m2 += chunk_m2 + delta * delta * finite_n * n / total
        finite_n = total
    out: dict[str, Any] = {"count": count, "zeros": zeros, "nan": nan, "posinf": posinf, "neginf": neginf, "finite": finite_n}
    if finite_n == 0:
        out.update(min=None, max=None, mean=None, std=None, hist=[], edges=[])
        return out
    counts = np.zeros(bins, dtype=np.int64)
    edges = np.histogram_bin_edges(np.empty(0), bins=bins, range=(low, high))
    special = nan or posinf or neginf
    for chunk in chunks(tensor, chunk_elements):
        values = chunk.astype(np.float64)
        counts += np.histogram(values[np.isfinite(values)] if special else values, bins=bins, range=(low, high))[0]
    out.update(min=low, max=high, mean=mean, std=math.sqrt(m2 / finite_n), hist=counts.tolist(), edges=edges.tolist())
    return out


def quantization(view: TensorView, *, bins: int = BINS) -> dict[str, Any]:
    """A QFloat tensor's scheme in words and the distribution of its (effective) scales."""
    quantized = view.quantized()
    scheme = view.dtype.value
    scales = np.asarray(quantized.effective_scales(), dtype=np.float64).reshape(-1)
    stats = value_stats(_Array(scales), bins=bins)
    return {"scheme": describe(scheme), "scales": stats}


class _Array:
    """An in-memory array seen as a tensor by :func:`chunks`."""

    def __init__(self, values: np.ndarray) -> None:
        self._values = values

    def numpy(self) -> np.ndarray:
        return self._values
