"""``quant.dequantize``'s two paths agree bit for bit: numpy's (always tested, against a reference
written from quant.md's formulas) and the optional compiled kernel's (``burnpack/core/_cquant.c``,
tested when it is built), on random value bytes and scale bytes (NaN, infinite, subnormal and
extreme scales among them), every integer value width, both stores the kernel covers and one it
does not, per-tensor and per-block scales, partial last blocks and packed lines."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnpack import BurnpackError, InvalidQuantizedData, QuantizedTensor, QuantStore, QuantValue, ScaleDtype
from burnpack.core import quant
from burnpack.errors import OptionError
from burnpack.core.quant import decode, dequantize, kernel_covers, parse_scheme, quantize, quantized_data_len
from tests.conftest import peak_bytes

kernel = pytest.mark.skipif(quant._cquant is None, reason="the compiled kernel is not built")

VALUES = [QuantValue.Q8S, QuantValue.Q4S, QuantValue.Q2S, QuantValue.Q8F, QuantValue.Q4F, QuantValue.Q2F]
SCALES = [ScaleDtype.F32, ScaleDtype.F16, ScaleDtype.BF16, ScaleDtype.UE4M3]
COVERED_STORES = [QuantStore.Native, QuantStore.PackedU32(0)]

# Scale bit patterns worth meeting, per width: zeros of both signs, infinities, quiet, signalling
# and payload-carrying NaNs, the largest finite and the smallest subnormal, a plain one.
_SPECIAL = {
    4: ["00000000", "00000080", "0000807f", "000080ff", "0000c07f", "0100807f", "ffffffff", "ffff7f7f", "01000000", "0000803f"],
    2: ["0000", "0080", "007c", "00fc", "007e", "017c", "ffff", "ff7b", "0100", "803f", "7f7f", "807f"],
    1: ["00", "80", "7f", "ff", "7e", "01", "38"],
}


@st.composite
def payloads(draw: st.DrawFn, stores: list[QuantStore] = COVERED_STORES) -> tuple[bytes, object, tuple[int, ...]]:
    """A scheme, a shape and a payload of the right length: random value bytes, scales drawn from
    the special patterns and random bytes."""
    value = draw(st.sampled_from(VALUES))
    store = draw(st.sampled_from(stores))
    min_rank = 2 if store.is_packed_u32 and store.value else 0  # PackedU32(1) packs along the second-last axis
    shape = tuple(draw(st.lists(st.integers(1, 37), min_size=min_rank, max_size=4).filter(lambda s: math.prod(s) <= 3000)))
    block = draw(st.none() | st.lists(st.integers(1, 40), min_size=1, max_size=3))
    two_level = block is not None and draw(st.booleans())
    dtype = draw(st.sampled_from(SCALES[:2] if two_level else SCALES))
    scheme = parse_scheme(value, block=block, scale_dtype=dtype, global_scale=two_level, store=store)
    layout = quant._layout(scheme, shape)
    values = draw(st.binary(min_size=layout.value_bytes, max_size=layout.value_bytes))
    width = quant.SCALE_SIZE[dtype]
    scale = st.sampled_from(_SPECIAL[width]).map(bytes.fromhex) | st.binary(min_size=width, max_size=width)
    scales = b"".join(draw(st.lists(scale, min_size=layout.scale_bytes // width, max_size=layout.scale_bytes // width)))
    tail = b"".join(draw(st.lists(st.sampled_from(_SPECIAL[4]).map(bytes.fromhex) | st.binary(min_size=4, max_size=4),
                                  min_size=layout.global_bytes // 4, max_size=layout.global_bytes // 4)))
    payload = values + scales + tail
    assert len(payload) == quantized_data_len(scheme, shape)
    return payload, scheme, shape


def reference(payload: bytes, scheme, shape: tuple[int, ...]) -> np.ndarray:
    """quant.md's ``fl32(S·q)`` element by element: each field read from its word by shifts, the
    scale of its block found by integer division of its index."""
    bits = quant.VALUE_BITS[scheme.value]
    numel = math.prod(shape)
    cols = shape[-1] if shape else 1
    rows = numel // cols
    if scheme.store == QuantStore.Native:
        q = np.frombuffer(payload, np.int8, count=numel).astype(np.int64)
        used = numel
    else:
        per_word, row_words = 32 // bits, -(-cols // (32 // bits))
        words = np.frombuffer(payload, "<u4", count=rows * row_words).reshape(rows, row_words).astype(np.int64)
        j = np.arange(cols)
        fields = (words[:, j // per_word] >> (bits * (j % per_word))) & ((1 << bits) - 1)
        q = np.where(fields >= 1 << (bits - 1), fields - (1 << bits), fields).reshape(-1)
        used = rows * row_words * 4
    rank = len(shape)
    if scheme.block is None:
        block, grid = (), (1,)
        dtype = scheme.tensor or ScaleDtype.F32
    else:
        size = scheme.block.size
        dims = tuple(size.storage[: min(rank, size.len)])
        block = (1,) * (rank - len(dims)) + dims
        grid = tuple(-(-d // b) for d, b in zip(shape, block))
        dtype = scheme.block.dtype
    count = math.prod(grid)
    width = quant.SCALE_SIZE[dtype]
    scales = np.frombuffer(payload[used : used + count * width], quant._SCALE_NUMPY[dtype]).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        if scheme.block is not None and scheme.tensor is not None:
            scales = np.float32(np.frombuffer(payload[used + count * width :], np.float32)[0]) * scales
    if scheme.block is None or not rank:
        at = np.zeros(numel, np.intp)
    else:
        index = np.indices(shape).reshape(rank, -1)
        at = np.ravel_multi_index(tuple(index[a] // block[a] for a in range(rank)), grid)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.multiply(q.astype(np.float32), scales.reshape(-1)[at]).reshape(shape)


def _paths(payload: bytes, scheme, shape: tuple[int, ...]) -> dict[str, bytes]:
    out = {"numpy": dequantize(payload, scheme, shape, compiled=False).tobytes()}
    with mock.patch.object(quant, "_cquant", None):
        out["decoded-numpy"] = decode(payload, scheme, shape).dequantize().tobytes()
    if quant._cquant is not None:
        out["decoded"] = decode(payload, scheme, shape).dequantize().tobytes()
        out["default"] = dequantize(payload, scheme, shape).tobytes()
        if kernel_covers(scheme, shape):
            out["compiled"] = dequantize(payload, scheme, shape, compiled=True).tobytes()
    return out


@settings(max_examples=400, deadline=None)
@given(payloads())
def test_every_path_gives_the_reference_bits_on_covered_stores(case):
    payload, scheme, shape = case
    expected = reference(payload, scheme, shape).tobytes()
    for path, got in _paths(payload, scheme, shape).items():
        assert got == expected, path


@settings(max_examples=100, deadline=None)
@given(payloads(), st.integers(1, 7))
def test_a_payload_at_any_alignment_gives_the_same_bits(case, offset):
    """A tensor's bytes may start anywhere (a slice of a file, a caller's buffer): values and
    scales are read bytewise and with memcpy (UBSan checks it in CI's sanitizer run)."""
    payload, scheme, shape = case
    shifted = memoryview(bytearray(offset) + payload)[offset:]
    for compiled in [False] + [True] * kernel_covers(scheme, shape) * (quant._cquant is not None):
        assert dequantize(shifted, scheme, shape, compiled=compiled).tobytes() == dequantize(payload, scheme, shape, compiled=False).tobytes()


@settings(max_examples=100, deadline=None)
@given(payloads(stores=[QuantStore.PackedU32(1)]))
def test_a_store_the_kernel_does_not_cover_goes_through_numpy(case):
    payload, scheme, shape = case
    assert not kernel_covers(scheme, shape)
    try:
        expected = dequantize(payload, scheme, shape, compiled=False).tobytes()
    except BurnpackError as exc:
        with pytest.raises(type(exc)):
            dequantize(payload, scheme, shape)
        return
    assert dequantize(payload, scheme, shape).tobytes() == expected


@pytest.mark.parametrize("value", ["q8s", "q4s", "q2s"])
@pytest.mark.parametrize("store", COVERED_STORES, ids=["native", "packed"])
@pytest.mark.parametrize("block", [None, 32, (4, 32), (3, 5)])
def test_burns_quantized_bytes_dequantize_alike_on_every_path(value, store, block):
    x = np.random.default_rng(7).standard_normal((12, 96)).astype(np.float32)
    scheme = parse_scheme(value, block=block, store=store)
    q = quantize(x, scheme)
    payload = q.tobytes()
    expected = q.dequantize().tobytes()
    assert reference(payload, scheme, x.shape).tobytes() == expected
    assert kernel_covers(scheme, x.shape) == (store == QuantStore.PackedU32(0) and value != "q8s")
    assert set(_paths(payload, scheme, x.shape).values()) == {expected}


def test_a_large_packed_tensor_dequantizes_alike_through_the_numpy_bands_and_the_kernel():
    x = np.random.default_rng(3).standard_normal((1100, 512)).astype(np.float32)  # more than two numpy bands
    scheme = parse_scheme("q4s", block=32, store=QuantStore.PackedU32(0))
    q = quantize(x, scheme)
    payload = q.tobytes()
    assert quant._band_rows(scheme, x.shape, quant._layout(scheme, x.shape)) is not None
    assert set(_paths(payload, scheme, x.shape).values()) == {q.dequantize().tobytes()}


@kernel
@pytest.mark.parametrize("value, store", [("q4s", QuantStore.PackedU32(0)), ("q2s", QuantStore.PackedU32(0))])
def test_dequantize_allocates_only_the_output_and_the_scales(value, store):
    """One pass: no int8 or float32 intermediate of the values (numpy's path unpacks them first)."""
    shape = (1024, 512)
    scheme = parse_scheme(value, block=32, store=store)
    payload = quantize(np.random.default_rng(1).standard_normal(shape).astype(np.float32), scheme).tobytes()
    output, scales = math.prod(shape) * 4, math.prod(shape) // 32 * 4
    assert peak_bytes(lambda: dequantize(payload, scheme, shape)) <= output + scales + (16 << 10)


def test_a_quantized_tensor_whose_scales_do_not_fit_its_blocks_is_invalid():
    q = QuantizedTensor(parse_scheme("q8s", block=32), np.zeros((4, 64), np.int8), np.ones(3, np.float32))
    with pytest.raises(InvalidQuantizedData, match="3 scales for the \\[4, 2\\] blocks"):
        q.dequantize()


def test_a_quantized_tensor_with_one_scale_per_tensor_uses_its_first_scale():
    q = QuantizedTensor(parse_scheme("q8s"), np.full((2, 3), 3, np.int8), np.array([2, 5], np.float32))
    assert q.dequantize().tolist() == [[6, 6, 6], [6, 6, 6]]


@pytest.mark.parametrize("compiled", [None, False])
@pytest.mark.parametrize("shape", [(4, 64), (1100, 512)], ids=["one-pass", "numpy-bands"])
def test_infinite_and_nan_scales_dequantize_without_warnings(compiled, shape):
    scheme = parse_scheme("q4s", block=32, scale_dtype="f16", global_scale=True, store=QuantStore.PackedU32(0))
    layout = quant._layout(scheme, shape)
    count = layout.scale_bytes // 2
    scales = np.array([np.inf, np.nan, 60000, -np.inf] * (count // 4), np.float16).tobytes()
    values = np.random.default_rng(2).integers(0, 256, layout.value_bytes, np.uint8).tobytes()
    payload = values + scales + np.float32(1e30).tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = dequantize(payload, scheme, shape, compiled=compiled)
    assert np.isnan(values).any() and np.isinf(values).any()


def test_the_kernel_covers_sub_byte_values_packed_in_u32_0_stores_with_blocks_on_the_last_two_axes():
    """Where numpy meets the target without it (8-bit values: one multiply), numpy dequantizes."""
    packed = dict(store=QuantStore.PackedU32(0))
    assert kernel_covers(parse_scheme("q4s", block=32, **packed), (4, 64))
    assert kernel_covers(parse_scheme("q2s", **packed), ())
    assert kernel_covers(parse_scheme("q2f", block=(3, 5), scale_dtype="bf16", **packed), (2, 6, 10))
    assert not kernel_covers(parse_scheme("q8s"), (4, 64))  # 8-bit values: numpy
    assert not kernel_covers(parse_scheme("q8s", **packed), (4, 64))
    assert not kernel_covers(parse_scheme("q4s", block=32), (4, 64))  # a Native store holds a byte per value
    assert not kernel_covers(parse_scheme("q4s", block=(2, 1, 4), **packed), (4, 6, 8))  # a block over a third axis
    assert not kernel_covers(parse_scheme("q4s", store=QuantStore.PackedU32(1)), (8, 8))
    assert not kernel_covers(parse_scheme("q4s", block=32, **packed), (0, 64))  # nothing to compute
    assert not kernel_covers(parse_scheme("e4m3", block=32), (4, 64))  # refused by dequantize itself
    assert not kernel_covers(parse_scheme("q8s", block=32, scale_dtype="ue8m0"), (4, 64))


@kernel
def test_compiled_true_is_an_error_where_the_kernel_does_not_cover_the_scheme():
    scheme = parse_scheme("q8s", block=(2, 1, 4))
    payload = quantize(np.ones((4, 6, 8), np.float32), scheme).tobytes()
    with pytest.raises(OptionError, match="does not cover"):
        dequantize(payload, scheme, (4, 6, 8), compiled=True)


def test_compiled_true_is_an_error_when_the_kernel_is_not_built():
    scheme = parse_scheme("q8s")
    payload = quantize(np.ones(8, np.float32), scheme).tobytes()
    with mock.patch.object(quant, "_cquant", None), pytest.raises(OptionError, match="not built"):
        dequantize(payload, scheme, (8,), compiled=True)


@kernel
def test_dequantize_uses_the_kernel_by_default_when_it_is_built():
    scheme = parse_scheme("q4s", block=32, store=QuantStore.PackedU32(0))
    payload = quantize(np.ones((2, 64), np.float32), scheme).tobytes()
    with mock.patch.object(quant._cquant, "dequantize", wraps=quant._cquant.dequantize) as spy:
        dequantize(payload, scheme, (2, 64))
    assert quant.KERNEL == "compiled" and spy.call_count == 1


def test_without_the_kernel_dequantize_takes_the_numpy_path():
    x = np.random.default_rng(5).standard_normal((6, 64)).astype(np.float32)
    scheme = parse_scheme("q4s", block=32, store=QuantStore.PackedU32(0))
    q = quantize(x, scheme)
    script = (
        "import sys; sys.modules['burnpack.core._cquant'] = None  # as when the optional build failed\n"
        "from burnpack import QuantStore; from burnpack.core import quant; from burnpack.errors import OptionError\n"
        "scheme = quant.parse_scheme('q4s', block=32, store=QuantStore.PackedU32(0))\n"
        "print(quant.KERNEL, quant.dequantize(bytes.fromhex(sys.argv[1]), scheme, (6, 64)).tobytes().hex())\n"
        "try:\n"
        "    quant.dequantize(bytes.fromhex(sys.argv[1]), scheme, (6, 64), compiled=True)\n"
        "except OptionError as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", script, q.tobytes().hex()], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["numpy", q.dequantize().tobytes().hex(), "OptionError"]


# -- the kernel's own refusals: an error, never a crash or a write outside the output -------------


def _args(**change):
    """A valid call for 2x8 Q4 values packed in u32 words, blocks of 1x4, then ``change``."""
    args = dict(values=bytes(8), bits=4, outer=1, rows=2, cols=8, block_rows=1, block_cols=4,
                scales=np.ones(4, np.float32), out=np.zeros(16, np.float32))  # fmt: skip
    args.update(change)
    return list(args.values())


@kernel
def test_the_kernel_accepts_the_valid_call_the_refusals_start_from():
    out = np.full(16, np.nan, np.float32)
    assert quant._cquant.dequantize(*_args(values=bytes([0x21, 0x43, 0x65, 0xF7] * 2), out=out)) is None
    assert out.tolist() == [1, 2, 3, 4, 5, 6, 7, -1] * 2


@kernel
@pytest.mark.parametrize("change, message", [
    (dict(bits=3), "bits must be 2 or 4"),
    (dict(bits=8), "bits must be 2 or 4"),
    (dict(rows=-1), "non-negative"),
    (dict(block_cols=0), "at least 1"),
    (dict(block_rows=-5), "at least 1"),
    (dict(values=bytes(7)), "buffers of 7 value"),
    (dict(bits=2, values=bytes(16)), "buffers of 16 value, 16 scale and 64 output bytes, expected 8"),  # 16 2-bit fields a word
    (dict(scales=np.ones(3, np.float32)), "12 scale"),
    (dict(out=np.zeros(15, np.float32)), "60 output"),
    (dict(out=np.zeros(16, np.float64)), "128 output"),
    (dict(outer=1 << 62, rows=1 << 62), "overflow"),
    (dict(cols=(1 << 63) - 1, block_cols=1), "overflow"),
    (dict(out=np.zeros(17, np.float32).view(np.uint8)[1:65]), "not float32-aligned"),
], ids=lambda v: v if isinstance(v, str) else ",".join(v))  # fmt: skip
def test_the_kernel_refuses_bad_arguments_with_a_value_error(change, message):
    out = change.get("out", np.zeros(16, np.float32))
    before = out.tobytes()
    with pytest.raises(ValueError, match=message):
        quant._cquant.dequantize(*_args(**change))
    assert out.tobytes() == before


@kernel
def test_the_kernel_refuses_an_output_overlapping_its_inputs():
    shared = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="overlaps"):
        quant._cquant.dequantize(*_args(values=shared.view(np.uint8)[:8], out=shared))
    with pytest.raises(ValueError, match="overlaps"):
        quant._cquant.dequantize(*_args(scales=shared[:4], out=shared))


@kernel
@pytest.mark.parametrize("change, error", [
    (dict(out=bytes(64)), TypeError),  # read-only
    (dict(out=np.zeros((4, 8), np.float32)[:, ::2]), TypeError),  # not contiguous
    (dict(values="x" * 8), TypeError),
    (dict(scales=None), TypeError),
    (dict(bits="4"), TypeError),
], ids=["readonly", "strided", "str-values", "no-scales", "str-bits"])  # fmt: skip
def test_the_kernel_refuses_what_is_not_a_buffer_of_the_right_kind(change, error):
    with pytest.raises(error):
        quant._cquant.dequantize(*_args(**change))
