"""The statistics' two paths agree: numpy's (always tested) and the optional compiled kernel's.

Counts, min, max, the histogram and its edges are identical; mean and std agree within ``REL``
of themselves or of the largest magnitude among the values (both sum float64 values pairwise, in
different orders: where values of opposite signs cancel, the rounding of the largest remains). Without the kernel, only the numpy path is checked against numpy
over the whole array."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from burnpack.errors import OptionError
from burnpack.view import stats
from burnpack.view.stats import BINS, value_stats

REL = 1e-12
EXACT = ("count", "finite", "zeros", "nan", "posinf", "neginf", "min", "max", "hist", "edges", "no_histogram")
kernel = pytest.mark.skipif(stats._cstats is None, reason="the compiled kernel is not built")

FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
INTEGERS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
DTYPES = [np.dtype(t) for t in FLOATS + INTEGERS + [np.bool_]]


@pytest.fixture(params=["avx2", "portable"] if stats._cstats is not None else ["portable"])
def simd(request):
    """Each of the kernel's float32 code paths (AVX2 only where the processor has it)."""
    if stats._cstats is None:
        yield False
        return
    on = stats._cstats.simd(request.param == "avx2")
    if request.param == "avx2" and not on:
        stats._cstats.simd(True)
        pytest.skip("the processor has no AVX2")
    try:
        yield on
    finally:
        stats._cstats.simd(True)


def _reference(values: np.ndarray) -> dict:
    """numpy over the whole array, as the page describes its statistics."""
    wide = values.astype(np.float64).reshape(-1)
    finite = wide[np.isfinite(wide)]
    out = {"count": wide.size, "finite": finite.size, "zeros": int((finite == 0).sum()), "nan": int(np.isnan(wide).sum()),
           "posinf": int((wide == np.inf).sum()), "neginf": int((wide == -np.inf).sum())}  # fmt: skip
    if finite.size:
        out.update(min=finite.min(), max=finite.max())
        with np.errstate(all="ignore"):
            try:
                out["hist"] = np.histogram(finite, bins=BINS, range=(finite.min(), finite.max()))[0].tolist()
            except ValueError:
                out["hist"] = []
    return out


def _agree(values: np.ndarray, chunk_elements: int) -> None:
    by_numpy = value_stats(stats._Array(values), chunk_elements=chunk_elements, compiled=False)
    reference = _reference(values)
    assert by_numpy is not None
    assert {k: by_numpy[k] for k in reference} == reference
    if stats._cstats is None:
        return
    compiled = value_stats(stats._Array(values), chunk_elements=chunk_elements, compiled=True)
    assert compiled is not None
    assert {k: compiled.get(k) for k in EXACT} == {k: by_numpy.get(k) for k in EXACT}
    for key in ("mean", "std"):
        if by_numpy[key] is None:
            assert compiled[key] is None
        else:
            magnitude = max(abs(by_numpy["min"]), abs(by_numpy["max"]))
            assert compiled[key] == pytest.approx(by_numpy[key], rel=REL, abs=REL * magnitude)


def _edge_values(dtype: np.dtype) -> list:
    if dtype.kind == "b":
        return [True, False]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.min + 1, info.max - 1]
    info = ml_dtypes.finfo(dtype)
    return [np.nan, np.inf, -np.inf, -0.0, 0.0, float(info.smallest_subnormal), -float(info.smallest_subnormal),
            float(info.tiny), float(info.max), -float(info.max), 1.0, -1.0, float(info.eps)]  # fmt: skip


EDGE_CASES = {
    "empty": lambda dt: np.array([], dt),
    "all equal": lambda dt: np.full(300, 1, dt),
    "NaN and infinities only": lambda dt: np.array([np.nan, np.inf, -np.inf] * 50, dt),
    "signed zeros": lambda dt: np.array([0.0, -0.0] * 150, dt),
    "subnormals": lambda dt: np.array([ml_dtypes.finfo(dt).smallest_subnormal * k for k in range(300)], dt),
    "huge range": lambda dt: np.array([-ml_dtypes.finfo(dt).max, ml_dtypes.finfo(dt).max, 0, 1] * 75, dt),
    "huge range with NaN": lambda dt: np.array([-ml_dtypes.finfo(dt).max, ml_dtypes.finfo(dt).max, np.nan, 1] * 75, dt),
    "one finite among NaN": lambda dt: np.array([np.nan] * 299 + [2.5], dt),
    "edges and their neighbours": lambda dt: _beside_edges(dt),
}


def _beside_edges(dtype: np.dtype) -> np.ndarray:
    """Every histogram edge of -3.1..7.3 in ``dtype`` and its three neighbours each side."""
    low, high = dtype.type(-3.1), dtype.type(7.3)
    bits = np.linspace(float(low), float(high), BINS + 1).astype(dtype).view(f"u{dtype.itemsize}")
    near = np.concatenate([(bits.astype(np.int64) + k).astype(bits.dtype).view(dtype) for k in range(-3, 4)])
    values = np.clip(np.concatenate([[low, high], near]), low, high).astype(dtype)
    return np.random.default_rng(3).permutation(np.tile(values, 3))


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in FLOATS], ids=str)
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_float_edge_cases_give_the_same_statistics_by_numpy_and_by_the_kernel(simd, dtype, case):
    values = EDGE_CASES[case](dtype)
    for chunk_elements in (7, 128, 1 << 16):
        _agree(values, chunk_elements)


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in INTEGERS + [np.bool_]], ids=str)
def test_integer_extremes_give_the_same_statistics_by_numpy_and_by_the_kernel(simd, dtype):
    values = np.array(_edge_values(dtype) * 40, dtype)
    for chunk_elements in (5, 1 << 16):
        _agree(values, chunk_elements)


@st.composite
def _arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = draw(st.sampled_from(DTYPES))
    size = draw(st.integers(0, 700))
    if dtype.kind in "biu":
        return draw(hnp.arrays(dtype, size))
    edge = st.sampled_from(_edge_values(dtype))
    width = 16 if dtype == np.float16 else 32 if dtype != np.float64 else 64
    body = st.floats(width=width, allow_nan=True, allow_infinity=True)
    scale = draw(st.sampled_from([1.0, 1e-30, 1e30]))
    normal = st.floats(-4, 4).map(lambda v: v * scale)
    values = draw(st.lists(st.one_of(normal, normal, edge, body), min_size=size, max_size=size))
    with np.errstate(over="ignore"):
        return np.array(values, np.float64).astype(dtype)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=_arrays(), chunk_elements=st.sampled_from([1, 3, 64, 129, 256, 1000]))
def test_generated_chunks_give_the_same_statistics_by_numpy_and_by_the_kernel(simd, values, chunk_elements):
    _agree(values, chunk_elements)


@kernel
@pytest.mark.parametrize("dtype", ["<f4", ">f4", ">f2"])
def test_byte_swapped_and_reversed_tensors_give_the_same_statistics_with_the_kernel(dtype):
    values = np.linspace(-50, 250, 3001).astype(dtype)[::-1]  # chunks of a reversed view are not contiguous
    _agree(values, 64)


def test_asking_for_the_kernel_when_it_is_not_built_is_an_error(monkeypatch):
    monkeypatch.setattr(stats, "_cstats", None)
    with pytest.raises(OptionError, match="not built"):
        value_stats(stats._Array(np.ones(3, np.float32)), compiled=True)
    assert value_stats(stats._Array(np.ones(3, np.float32)))["count"] == 3


def test_without_the_kernel_statistics_are_computed_by_numpy():
    import json
    import subprocess
    import sys

    script = (
        "import sys, json; sys.modules['burnpack.view._cstats'] = None  # as when the optional build failed\n"
        "import numpy as np; from burnpack.view import stats\n"
        "values = np.array([-2.0, 0.0, 0.0, 3.5, np.nan, np.inf], np.float32)\n"
        "out = stats.value_stats(stats._Array(values))\n"
        "print(json.dumps([stats.KERNEL, out['count'], out['zeros'], out['nan'], out['min'], out['max']]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == ["numpy", 6, 2, 1, -2.0, 3.5]


@kernel
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda k: k.moments(b"\0" * 6, "f4", None), "whole number"),
        (lambda k: k.moments(b"", "f3", None), "unknown value kind"),
        (lambda k: k.moments(b"", "t2", np.zeros(256)), "table of 65536"),
        (lambda k: k.moments(b"", "f4", np.zeros(256)), "takes no table"),
        (lambda k: k.histogram(b"", "f4", None, 0.0, 1.0, 32.0, 1e-6, np.zeros(33), np.zeros(31, np.int64)), "edges"),
        (lambda k: k.histogram(b"", "f4", None, 1.0, 1.0, 32.0, 1e-6, np.zeros(33), np.zeros(32, np.int64)), "range"),
        (lambda k: k.histogram(b"", "f4", None, 0.0, math.inf, 0.0, 1e-6, np.zeros(33), np.zeros(32, np.int64)), "range"),
    ],
    ids=["partial value", "unknown kind", "short table", "table not taken", "edges and counts", "empty range", "infinite range"],
)
def test_the_kernel_refuses_inputs_it_cannot_read(call, message):
    with pytest.raises(ValueError, match=message):
        call(stats._cstats)


@kernel
def test_the_kernel_histogram_cannot_write_into_read_only_counts():
    with pytest.raises(BufferError):
        stats._cstats.histogram(b"", "f4", None, 0.0, 1.0, 32.0, 1e-6, np.zeros(33), bytes(256))
