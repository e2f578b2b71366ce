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

import burnpack
from benchmarks.kernel_fuzz import ChangingAnswers
from burnpack.errors import IoError, OptionError
from burnpack.view import stats
from burnpack.view.stats import BINS, value_stats

REL = 1e-12
EDGES = np.linspace(0.0, 1.0, 33)
EXACT = ("count", "finite", "zeros", "nan", "posinf", "neginf", "min", "max", "hist", "edges", "no_histogram")
kernel = pytest.mark.skipif(stats._cstats is None, reason="the compiled kernel is not built")

FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
INTEGERS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
DTYPES = [np.dtype(t) for t in FLOATS + INTEGERS + [np.bool_]]


@pytest.fixture(params=["avx2", "portable"] if stats._cstats is not None else ["portable"])
def simd(request, monkeypatch):
    """Each of the kernel's float32 code paths (AVX2 only where the processor has it)."""
    on = request.param == "avx2"
    if on and not stats._cstats.HAVE_AVX2:
        pytest.skip("the processor has no AVX2")
    monkeypatch.setattr(stats, "SIMD", on)
    return on


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
        (lambda k: k.moments(b"\0" * 6, "f4", None, True), "whole number"),
        (lambda k: k.moments(b"", "f3", None, True), "unknown value kind"),
        (lambda k: k.moments(b"", "t2", np.zeros(256), True), "table of 65536"),
        (lambda k: k.moments(b"", "f4", np.zeros(256), True), "takes no table"),
        (lambda k: k.moments(b"", "t1", np.zeros(257)[1:].view(np.uint8)[4:-4].view(np.float64)[:0], True), "table of 256"),
        (lambda k: k.histogram(b"", "f4", None, 0.0, 1.0, 32.0, 1e-6, EDGES, np.zeros(31, np.int64), True), "edges"),
        (lambda k: k.histogram(b"", "f4", None, 1.0, 1.0, 32.0, 1e-6, EDGES, np.zeros(32, np.int64), True), "range"),
        (lambda k: k.histogram(b"", "f4", None, 0.0, math.inf, 0.0, 1e-6, EDGES, np.zeros(32, np.int64), True), "range"),
    ],
    ids=["partial value", "unknown kind", "short table", "table not taken", "misaligned table", "edges and counts", "empty range",
         "infinite range"],
)
def test_the_kernel_refuses_inputs_it_cannot_read(call, message):
    with pytest.raises(ValueError, match=message):
        call(stats._cstats)


@kernel
def test_the_kernel_histogram_cannot_write_into_read_only_counts():
    with pytest.raises(BufferError):
        stats._cstats.histogram(b"", "f4", None, 0.0, 1.0, 32.0, 1e-6, EDGES, bytes(256), True)


# -- bytes that change under the passes, edge ranges, alignment, threads (issue 26) ------------------
@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=kernel)], ids=["numpy", "kernel"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_values_that_change_between_the_passes_are_an_io_error(simd, compiled, dtype):
    values = np.linspace(0, 100, 3000).astype(dtype)
    changed = values.copy()
    changed[::7] = 1000  # past the first pass's maximum
    if changed.dtype.kind == "f":
        changed[3::11] = np.nan
    first, second = (burnpack.save_bytes({"t": v}) for v in (values, changed))
    with burnpack.load(ChangingAnswers(first, second)) as pack:
        with pytest.raises(IoError, match=r"changed while they were read: 3000 finite in the first pass, \d+ inside"):
            value_stats(pack["t"], chunk_elements=256, compiled=compiled)


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=kernel)], ids=["numpy", "kernel"])
def test_values_that_change_inside_the_range_are_counted_as_they_were_seen(simd, compiled):
    values = np.linspace(0, 100, 3000).astype(np.float32)
    first, second = (burnpack.save_bytes({"t": v}) for v in (values, values[::-1].copy()))
    with burnpack.load(ChangingAnswers(first, second)) as pack:
        out = value_stats(pack["t"], chunk_elements=256, compiled=compiled)
    assert sum(out["hist"]) == 3000 and out["hist"] == np.histogram(values, BINS, range=(0, 100))[0].tolist()


def _isolated(script: str) -> dict:
    """Run ``script`` (which prints one JSON value) in a child process: on the code before issue 26
    these calls wrote outside their buffers or converted NaN to an integer, so a crash there is
    this test's failure, not the whole run's."""
    import json
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, f"the kernel crashed (exit {result.returncode}):\n{result.stderr[-3000:]}"
    return json.loads(result.stdout)


_OUTSIDE = r'''
import json, math, numpy as np
from burnpack.view import stats
k = stats._cstats
kinds = {"f4": np.float32, "f8": np.float64, "i4": np.int32, "i8": np.int64, "u4": np.uint32, "u8": np.uint64}
found = {}
for simd in (True, False):
    for kind, dtype in kinds.items():
        for bins in (1, 7, 32, 64, 65):
            low, high = 10.0, 50.0
            inside = np.linspace(low, high, 200)
            outside = [0, 9, 51, 2**31 - 1] + ([-1e30, 1e30, math.nan, math.inf, -math.inf, -3.4e38, 3.4e38] if dtype(0.5) else [])
            if dtype(0) - dtype(1) > 0:
                outside = [v for v in outside if v >= 0]
            values = np.concatenate([inside, np.repeat(outside, 9)]).astype(dtype)
            np.random.default_rng(bins).shuffle(values)
            guarded = np.zeros(bins + 2, np.int64)
            edges = np.histogram_bin_edges(np.empty(0), bins, range=(low, high))
            span = high - low
            counted = k.histogram(values, kind, None, low, high, bins / span, 1e-6, edges, guarded[1:-1], simd)
            expected = np.histogram(values.astype(np.float64)[np.isfinite(values.astype(np.float64))], bins, range=(low, high))[0]
            found[f"{kind} bins={bins} simd={simd}"] = [int(guarded[0]), int(guarded[-1]), counted == 200, guarded[1:-1].tolist() == expected.tolist()]
print(json.dumps(found))
'''


@kernel
def test_a_histogram_pass_counts_only_values_inside_its_range_and_writes_only_its_counts():
    """Values outside [low, high] — what a value changed since the first pass looks like, NaN and
    the infinities — are not counted, and nothing outside ``counts`` is written (guard cells)."""
    found = _isolated(_OUTSIDE)
    assert found and all(result == [0, 0, True, True] for result in found.values()), {
        case: result for case, result in found.items() if result != [0, 0, True, True]
    }


_EDGES = r'''
import json, math, numpy as np
from burnpack.view import stats
k = stats._cstats
M = float(np.finfo(np.float64).max)
values = np.array([-M, -1.0, 0.0, 1.0, M, math.nan])
cases = {
    "width past float64": (-M, M, np.linspace(-1.0, 1.0, 5) * M),
    "a NaN edge": (0.0, 1.0, np.array([0.0, math.nan, 0.5, 0.75, 1.0])),
    "edges not increasing": (0.0, 1.0, np.array([0.0, 0.5, 0.25, 0.75, 1.0])),
    "edges not from low to high": (0.0, 1.0, np.array([0.0, 0.25, 0.5, 0.75, 2.0])),
    "an infinite edge": (0.0, 1.0, np.array([0.0, 0.25, math.inf, 0.75, 1.0])),
}
found = {}
for name, (low, high, edges) in cases.items():
    for scale, margin in ((4.0, 1e-6), (math.nan, 1e-6), (1e300, 0.1), (4.0, math.nan)):
        try:
            k.histogram(values, "f8", None, low, high, scale, margin, edges, np.zeros(4, np.int64), True)
            found[f"{name} {scale} {margin}"] = "counted"
        except ValueError as exc:
            found[f"{name} {scale} {margin}"] = str(exc)
print(json.dumps(found))
'''


@kernel
def test_a_histogram_refuses_a_range_or_edges_it_cannot_bin_before_reading_a_value():
    found = _isolated(_EDGES)
    assert all("must" in result for result in found.values()), found


@kernel
def test_a_histogram_with_any_scale_and_margin_bins_as_numpy():
    """The position's scale and margin come from the caller: one that is NaN, huge or does not fit
    the range still bins every value in [low, high] into its bins (by numpy's formula)."""
    values = np.linspace(-1.0, 1.0, 999)
    edges = np.histogram_bin_edges(np.empty(0), 8, range=(-1.0, 1.0))
    expected = np.histogram(values, 8, range=(-1.0, 1.0))[0].tolist()
    for scale, margin in ((math.nan, 1e-6), (1e300, 0.1), (-4.0, 0.1), (4.0, math.nan), (0.0, 0.1), (math.inf, 0.1)):
        counts = np.zeros(8, np.int64)
        assert stats._cstats.histogram(values, "f8", None, -1.0, 1.0, scale, margin, edges, counts, True) == 999
        assert counts.tolist() == expected, (scale, margin)


@pytest.mark.parametrize("bins", [1, 2, 63, 64, 65, 1000])
@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.float32, np.float64, np.int16, ml_dtypes.bfloat16)], ids=str)
def test_one_bin_and_many_bins_give_the_same_statistics_by_numpy_and_by_the_kernel(simd, dtype, bins):
    values = np.concatenate([np.linspace(-7, 9, 2000), [np.inf, -np.inf, np.nan] if dtype.kind == "f" else []]).astype(dtype)
    by_numpy = value_stats(stats._Array(values), bins=bins, chunk_elements=300, compiled=False)
    finite = values.astype(np.float64)[np.isfinite(values.astype(np.float64))]
    assert by_numpy["hist"] == np.histogram(finite, bins, range=(finite.min(), finite.max()))[0].tolist()
    if stats._cstats is not None:
        compiled = value_stats(stats._Array(values), bins=bins, chunk_elements=300, compiled=True)
        assert {k: compiled.get(k) for k in EXACT} == {k: by_numpy.get(k) for k in EXACT}


@kernel
@pytest.mark.parametrize("offset", range(1, 8))
@pytest.mark.parametrize("kind, dtype", [("f4", "<f4"), ("f8", "<f8"), ("i4", "<i4"), ("u8", "<u8"), ("t2", "<f2")])
def test_the_kernel_reads_values_at_any_alignment(simd, kind, dtype, offset):
    """A chunk's bytes may start anywhere (a slice of a file, a caller's buffer): the kernel reads
    them with unaligned loads (UBSan checks it in CI's sanitizer run)."""
    values = np.linspace(-5, 1000, 1500).astype(dtype)
    table = stats._kernel_kind(values.dtype)[1]
    raw = bytearray(offset) + bytearray(values.tobytes())
    shifted = memoryview(raw)[offset:]
    assert stats._cstats.moments(shifted, kind, table, simd) == stats._cstats.moments(values, kind, table, simd)
    low, high = float(values.min()), float(values.max())
    edges = np.histogram_bin_edges(np.empty(0), BINS, range=(low, high))
    counts = [np.zeros(BINS, np.int64) for _ in range(2)]
    for data, out in zip((shifted, values), counts):
        assert stats._cstats.histogram(data, kind, table, low, high, BINS / (high - low), 1e-6, edges, out, simd) == values.size
    assert counts[0].tolist() == counts[1].tolist()


@kernel
def test_a_misaligned_counts_buffer_is_refused():
    counts = np.zeros(33, np.int64).view(np.uint8)[4:-4].view(np.int64)  # numpy keeps it, unaligned, as given
    with pytest.raises(ValueError, match="aligned"):
        stats._cstats.histogram(b"", "f4", None, 0.0, 1.0, 32.0, 1e-6, EDGES, counts, True)


@kernel
def test_each_call_chooses_its_own_code_path_so_threads_do_not_change_each_others():
    """No call changes what another runs (the float32 path is an argument, not a setting of the
    module): threads asking for the AVX2 and the portable path at once each get their own sums,
    which differ here (1e20 + 1 - 1e20 summed in different lane orders)."""
    import threading

    values = np.zeros(4096, np.float32)
    values[[0, 4, 16]] = [1e20, 1.0, -1e20]
    portable = stats._cstats.moments(values, "f4", None, False)
    simd = stats._cstats.moments(values, "f4", None, True)
    if not stats._cstats.HAVE_AVX2:
        assert simd == portable
        return
    assert simd[7] != portable[7]
    wrong: list = []

    def hammer(on: bool, expected: tuple) -> None:
        for _ in range(300):
            got = stats._cstats.moments(values, "f4", None, on)
            if got != expected:
                wrong.append((on, got))

    threads = [threading.Thread(target=hammer, args=args) for args in ((True, simd), (False, portable)) * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
