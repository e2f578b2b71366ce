"""Exact statistics and a histogram of a tensor's values, streamed over its bytes.

Two passes over the tensor, each a chunk of values at a time (a mapped file's tensor is viewed in
place; any other source is read a byte range at a time, so only that chunk's bytes are read):

- the first finds the minimum and maximum (NaN and ±inf are counted only in chunks where they
  show up in these), counts zeros, and sums the finite values and their squared deviations from
  the chunk's mean in float64 (chunk moments merged with Chan's formula);
- the second counts the finite values into ``bins`` equal bins between minimum and maximum,
  exactly as ``numpy.histogram(finite, bins, range=(min, max))`` does: each value's bin index is
  computed in the values' own precision (float32 for float32 and narrower types), counted with
  ``numpy.bincount``, and the few values whose computed position lies within the proven rounding
  error of an inner bin edge are placed by comparing them with that edge itself. A range for
  which that error bound is not small (overflowing, subnormal) is binned by ``numpy.histogram``.

Work arrays are allocated once per tensor and reused (``out=``) for every chunk; memory is
bounded by the chunk, not by the tensor. QFloat tensors are dequantized whole (their values only
exist with their scales); their scales get a histogram of their own.

The optional compiled kernel (``_cstats.c``, :data:`KERNEL`) does both passes over a chunk's bytes
in place, for the types :func:`_kernel_kind` names: its chunk moments are merged as numpy's are,
and its bins are the same (values within the same margin of an edge placed as numpy places them).
numpy computes what it does not read, and everything when it is not built.

The bytes may change between the passes (a mapped file rewritten by another process, a server
answering the same range differently): both paths count in the second pass only the values
inside the first pass's [min, max], as ``numpy.histogram`` does, and a count that differs from the
first pass's finite values is an ``IoError`` — never a write outside the counts, never numpy's
own error.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..core.dtypes import describe, is_extension_type, numpy_dtype
from ..errors import IoError, OptionError
from ..codec._kernels import load_kernel, use_kernel
from ..core.reader import TensorView

_cstats: Any = load_kernel("burnpack.view._cstats")  # Any: its functions are untyped C
"""The optional compiled kernel; None when not built: numpy computes everything."""

KERNEL = "numpy" if _cstats is None else "compiled"
"""Which path :func:`value_stats` takes by default: ``"compiled"`` (``_cstats.c``) or ``"numpy"``."""

SIMD = True
"""Whether the compiled kernel's float32 passes use AVX2 where the processor has it (each call is
told; False runs its portable C, which the tests compare with numpy too)."""

BINS = 32
CHUNK_ELEMENTS = 1 << 16
"""Values per chunk. The work arrays take 29 (float32 work) to 41 (float64) bytes a value, 2-3 MiB:
about a core's cache; larger chunks measured slower (``benchmarks/view_stats.py``), smaller ones
pay more per call."""

_F32_EXACT = {np.dtype(t) for t in ("float32", "float16", "int8", "uint8", "int16", "uint16", "bool")}
"""Types every value of which float32 holds exactly (with bfloat16 and the float8 types)."""


def chunks(tensor: Any, chunk_elements: int = CHUNK_ELEMENTS) -> Iterator[np.ndarray]:
    """The tensor's values as flat arrays of ``chunk_elements`` each (the last one shorter), in order.

    A pack's tensor in a mapped file is viewed in place; from any other source it is read one
    chunk's byte range at a time. A converted tensor (from safetensors, ``.pt``...) is viewed
    through the array its reader gives. QFloat: the dequantized values."""
    if chunk_elements < 1:
        raise OptionError(f"chunk_elements must be positive, got {chunk_elements}")
    if isinstance(tensor, TensorView) and not tensor.dtype.is_quantized:
        dtype = numpy_dtype(tensor.dtype)
        count = tensor.numel
        if tensor.file_range is None and tensor.byte_len == count * dtype.itemsize:
            for start in range(0, count, chunk_elements):
                data = tensor.read(start * dtype.itemsize, chunk_elements * dtype.itemsize)
                yield np.frombuffer(data, dtype)
            return
        values = tensor.numpy()  # a mapped file: no copy; bytes that do not fit the shape: Burn's error
    elif isinstance(tensor, TensorView):
        values = tensor.numpy(dequantize=True)
    else:
        values = tensor.numpy()
    flat = np.asarray(values).reshape(-1)
    for start in range(0, flat.size, chunk_elements):
        yield flat[start : start + chunk_elements]


def _work_dtype(dtype: np.dtype) -> np.dtype | None:
    """float32 for types it holds exactly, float64 for other numbers, None for what is not a number."""
    if dtype in _F32_EXACT or is_extension_type(dtype):  # the tables' ml_dtypes floats (bf16) fit in float32
        return np.dtype(np.float32)
    if dtype.kind in "fiu":
        return np.dtype(np.float64)
    return None


_KERNEL_KINDS = {np.dtype(t): t[1:] for t in ("=f4", "=f8", "=i4", "=i8", "=u4", "=u8")}
_TABLES: dict[np.dtype, np.ndarray] = {}


def _kernel_kind(dtype: np.dtype) -> tuple[str, np.ndarray | None] | None:
    """How the compiled kernel reads values of ``dtype``: a native 4- or 8-byte type directly, a 1- or
    2-byte one (float16, bfloat16, small integers, bool) through a table of its codes' float64 values
    computed by numpy; None for what it does not read (other byte orders)."""
    if dtype in _KERNEL_KINDS and dtype.isnative:
        return _KERNEL_KINDS[dtype], None
    if dtype.itemsize in (1, 2) and (dtype.isnative or dtype.itemsize == 1):
        if dtype not in _TABLES:
            with np.errstate(invalid="ignore"):  # NaN codes
                _TABLES[dtype] = np.arange(1 << 8 * dtype.itemsize, dtype=f"=u{dtype.itemsize}").view(dtype).astype(np.float64)
        return f"t{dtype.itemsize}", _TABLES[dtype]
    return None


class _Work:
    """Arrays of one chunk's size, reused for every chunk of a tensor."""

    def __init__(self, size: int, dtype: np.dtype) -> None:
        self.dtype = dtype
        self.values = np.empty(size, dtype)  # the chunk converted to ``dtype`` (unused when it already is)
        self.wide = np.empty(size, np.float64)  # float64 values, then their deviations from the mean
        self.position = np.empty(size, dtype)  # where a value falls among the bins, in bin widths
        self.rounded = np.empty(size, dtype)
        self.index = np.empty(size, np.intp)
        self.mask = np.empty(size, np.bool_)

    def convert(self, chunk: np.ndarray) -> np.ndarray:
        if chunk.dtype == self.dtype:
            return chunk
        out = self.values[: chunk.size]
        np.copyto(out, chunk, casting="unsafe")
        return out


def value_stats(
    tensor: Any, *, bins: int = BINS, chunk_elements: int = CHUNK_ELEMENTS, compiled: bool | None = None
) -> dict[str, Any] | None:
    """``count, min, max, mean, std, zeros, nan, posinf, neginf`` and ``hist`` (``bins`` counts of the
    finite values, ``edges`` their bounds) of a tensor's values; None for values that are not numbers.

    ``min``/``max``/``mean``/``std`` are over the finite values (None when there are none); ``std``
    is the population standard deviation (numpy's ``std()``). ``compiled``: the compiled kernel
    (:data:`KERNEL`; an error when it is not built), numpy (False), or the kernel when built (None);
    both give the same counts and histogram, and moments within a few float64 roundings."""
    kernel = use_kernel(_cstats, "burnpack.view._cstats", compiled)
    count = zeros = nan = posinf = neginf = 0
    finite_n = 0
    mean = m2 = 0.0
    low, high = math.inf, -math.inf
    work: _Work | None = None
    kind: tuple[str, np.ndarray | None] | None = None
    for chunk in chunks(tensor, chunk_elements):  # float64 sums may overflow here: redone scaled below
        if work is None:
            dtype = _work_dtype(chunk.dtype)
            if dtype is None:
                return None
            work = _Work(min(chunk_elements, max(chunk.size, 1)), dtype)
            kind = _kernel_kind(chunk.dtype) if kernel else None
        count += chunk.size
        if kind is not None:
            n, z, c_nan, c_pos, c_neg, lo, hi, total, chunk_m2 = _cstats.moments(np.ascontiguousarray(chunk), *kind, SIMD)
            nan, posinf, neginf = nan + c_nan, posinf + c_pos, neginf + c_neg
            chunk_mean = total / n if n else 0.0
        else:
            n, z, lo, hi, chunk_mean, chunk_m2, specials = _numpy_moments(work, chunk)
            nan, posinf, neginf = nan + specials[0], posinf + specials[1], neginf + specials[2]
        if n == 0:
            continue
        zeros += z
        low, high = min(low, lo), max(high, hi)
        total_n = finite_n + n
        delta = chunk_mean - mean
        mean += delta * n / total_n
        m2 += chunk_m2 + delta * delta * finite_n * n / total_n
        finite_n = total_n
    out: dict[str, Any] = {"count": count, "zeros": zeros, "nan": nan, "posinf": posinf, "neginf": neginf, "finite": finite_n}
    if finite_n == 0 or work is None:
        out.update(min=None, max=None, mean=None, std=None, hist=[], edges=[])
        return out
    special = bool(nan or posinf or neginf)
    if math.isfinite(mean) and math.isfinite(m2):
        std = math.sqrt(m2 / finite_n)
    else:  # sums past float64's range
        mean, std = _scaled_moments(tensor, work, special, chunk_elements, finite_n, max(abs(low), abs(high)))
    try:
        if not math.isfinite(high - low):  # numpy's edges would not be finite: it refuses such a range
            raise ValueError(high - low)
        with np.errstate(all="ignore"):
            edges = np.histogram_bin_edges(np.empty(0), bins=bins, range=(low, high))
    except ValueError:  # numpy cannot divide this range into bins of finite, nonzero width
        out.update(min=low, max=high, mean=mean, std=std, hist=[], edges=[],
                   no_histogram=f"numpy cannot divide {low!r}..{high!r} into {bins} bins")  # fmt: skip
        return out
    if low == high:  # one value: every finite value falls in its bin, no second pass
        counts = np.histogram(np.array([low]), bins=bins, range=(low, high))[0] * finite_n
        out.update(min=low, max=high, mean=mean, std=std, hist=counts.tolist(), edges=edges.tolist())
        return out
    binning = _Binning(work, edges, low, high)
    counts = np.zeros(bins, dtype=np.int64)
    counted = 0
    for chunk in chunks(tensor, chunk_elements):
        if kind is not None:  # the kernel places values by the same margin, the rest as numpy does
            margin = binning.margin if binning.fast else math.inf
            counted += _cstats.histogram(np.ascontiguousarray(chunk), *kind, low, high, binning.scale, margin, edges, counts, SIMD)
        else:
            counted += binning.add(work.convert(chunk), counts)
    if counted != finite_n:
        raise IoError(f"the values changed while they were read: {finite_n} finite in the first pass, "
                      f"{counted} inside its range {low!r}..{high!r} in the second", where=_where(tensor))  # fmt: skip
    out.update(min=low, max=high, mean=mean, std=std, hist=counts.tolist(), edges=edges.tolist())
    return out


def _where(tensor: Any) -> str:
    name = getattr(tensor, "name", None)
    return "the values" if name is None else f"tensor {name!r}"


def _numpy_moments(work: _Work, chunk: np.ndarray) -> tuple[int, int, float, float, float, float, tuple[int, int, int]]:
    """A chunk's finite count, zeros, min, max, mean and sum of squared deviations from that mean
    (float64), and its NaN, +inf and -inf counts, with numpy."""
    values = work.convert(chunk)
    n = values.size
    specials = (0, 0, 0)
    if n == 0:
        return 0, 0, math.inf, -math.inf, 0.0, 0.0, specials
    lo, hi = float(np.minimum.reduce(values)), float(np.maximum.reduce(values))
    if not (math.isfinite(lo) and math.isfinite(hi)):  # a NaN (min and max propagate it) or an infinity
        special = np.isnan(values, out=work.mask[:n])
        nan = int(np.count_nonzero(special))
        posinf = int(np.count_nonzero(np.equal(values, np.inf, out=special)))
        neginf = int(np.count_nonzero(np.equal(values, -np.inf, out=special)))
        specials = (nan, posinf, neginf)
        values = values[np.isfinite(values, out=special)]
        n = values.size
        if n == 0:
            return 0, 0, math.inf, -math.inf, 0.0, 0.0, specials
        lo, hi = float(values.min()), float(values.max())
    zeros = int(np.count_nonzero(np.equal(values, 0, out=work.mask[:n])))
    wide = work.wide[:n]
    if values.dtype != np.float64:
        np.copyto(wide, values)
        values = wide
    with np.errstate(over="ignore", invalid="ignore"):
        chunk_mean = float(np.add.reduce(values)) / n
        np.subtract(values, chunk_mean, out=wide)
        chunk_m2 = float(np.add.reduce(np.square(wide, out=wide)))  # not BLAS dot: its threads stall on a busy machine
    return n, zeros, lo, hi, chunk_mean, chunk_m2, specials


def _scaled_moments(tensor: Any, work: _Work, special: bool, chunk_elements: int, n: int, magnitude: float) -> tuple[float, float]:
    """Mean and population standard deviation of the finite values, summed scaled by a power of
    two (exact) so that no sum leaves float64's range: two more passes, only when the plain sums did."""
    shift = math.frexp(magnitude)[1]
    total = 0.0
    for chunk in chunks(tensor, chunk_elements):
        values = _finite_wide(work, chunk, special)
        total += float(np.add.reduce(np.ldexp(values, -shift, out=values)))
    scaled_mean = total / n
    m2 = 0.0
    for chunk in chunks(tensor, chunk_elements):
        values = _finite_wide(work, chunk, special)
        np.subtract(np.ldexp(values, -shift, out=values), scaled_mean, out=values)
        m2 += float(np.add.reduce(np.square(values, out=values)))
    return math.ldexp(scaled_mean, shift), math.ldexp(math.sqrt(m2 / n), shift)


def _finite_wide(work: _Work, chunk: np.ndarray, special: bool) -> np.ndarray:
    """A chunk's finite values as float64, in the work buffer."""
    values = work.convert(chunk)
    if special:
        values = values[np.isfinite(values, out=work.mask[: values.size])]
    wide = work.wide[: values.size]
    np.copyto(wide, values)
    return wide


class _Binning:
    """``numpy.histogram``'s counts of finite values between ``low`` and ``high``, chunk by chunk.

    A value ``v``'s position ``t = (v - low) * scale`` (``scale = bins / (high - low)``) is computed
    in the work type with at most four roundings (``u`` its unit roundoff), so it is within
    ``4 u bins`` of ``T(v)``, ``T`` the exact affine map with ``T(low) = 0`` and ``T(high) = bins``;
    the edges numpy uses (``linspace``: ``low + j * step`` in float64) lie within
    ``(4 bins + bins M / (high - low)) 2**-53`` of ``T = j``, ``M`` the larger magnitude of low and
    high. A value farther than twice the sum of both bounds (``margin``) from every inner integer
    is in bin ``floor(t)``; a closer one is compared with the edge itself. When the margin is not
    small (ranges near overflow or underflow), ``numpy.histogram`` bins the chunk."""

    def __init__(self, work: _Work, edges: np.ndarray, low: float, high: float) -> None:
        self.work, self.edges, self.low, self.high = work, edges, low, high
        self.bins = bins = edges.size - 1
        info = np.finfo(work.dtype)
        span = high - low
        fits = math.isfinite(span) and span > 0 and float(edges[1] - edges[0]) > 0 and span < float(info.max) / 2
        scale = bins / span if fits else math.inf
        fits = fits and float(info.tiny) < scale < float(info.max)
        self.scale = scale if fits else math.inf
        unit = float(info.eps) / 2
        to_t = 4 * unit * bins + float(info.smallest_subnormal) * 4
        to_edges = (4 * bins + bins * max(abs(low), abs(high)) / span) * 2.0**-53 if fits else math.inf
        self.margin = 2 * (to_t + to_edges)
        self.fast = fits and self.margin < 0.25
        dtype = work.dtype.type
        self.low_w, self.scale_w = dtype(low), dtype(scale if fits else 0)
        self.top, self.half = dtype(bins - 0.5), dtype(0.5)
        self.margin_w = dtype(self.margin)

    def add(self, values: np.ndarray, counts: np.ndarray) -> int:
        """Add the bins of ``values`` inside [low, high] to ``counts``, and say how many: a value
        outside (NaN, an infinity, one changed since the first pass) is not counted, as
        ``numpy.histogram`` does not count it. Checked on the values binned, in float64."""
        if not values.size:
            return 0
        low, high = np.float64(self.low), np.float64(self.high)
        if not (np.minimum.reduce(values) >= low and np.maximum.reduce(values) <= high):  # False for a NaN
            values = values[np.logical_and(np.greater_equal(values, low), np.less_equal(values, high))]
        counts += self._count(values)
        return int(values.size)

    def _count(self, values: np.ndarray) -> np.ndarray:
        n, bins = values.size, self.bins
        if not self.fast:
            return np.histogram(values.astype(np.float64), bins=bins, range=(self.low, self.high))[0]
        w = self.work
        t, r, index, near = w.position[:n], w.rounded[:n], w.index[:n], w.mask[:n]
        np.subtract(values, self.low_w, out=t)
        np.multiply(t, self.scale_w, out=t)
        np.minimum(t, self.top, out=t)  # the top edge belongs to the last bin
        np.copyto(index, t, casting="unsafe")  # t >= 0: truncation is floor
        np.maximum(t, self.half, out=r)  # away from the outer edges 0 and bins, which need no check
        np.rint(r, out=t)  # the nearest inner edge
        np.subtract(r, t, out=r)
        np.less(np.abs(r, out=r), self.margin_w, out=near)
        if np.count_nonzero(near):
            where = np.flatnonzero(near)
            edge = t[where].astype(np.intp)
            index[where] = edge - (values[where].astype(np.float64) < self.edges[edge])
        return np.bincount(index, minlength=bins)


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
