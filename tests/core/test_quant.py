"""QFloat tensors (../shared/spec/quant.md): Burn's test vectors, properties, fixtures and refusals."""

from __future__ import annotations

import json
import warnings

import cbor2
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import burnpack
from burnpack import (
    BlockScale,
    BlockSize,
    InvalidQuantizedData,
    QuantizationError,
    QuantizedTensor,
    QuantMode,
    QuantScheme,
    QuantStore,
    QuantValue,
    ScaleDtype,
    UnsupportedQuantization,
)
from burnpack.codec._generated.layout import HEADER, MAGIC, data_section_start
from burnpack.core.quant import decode, describe, parse_scheme, quantize, quantized_data_len, round_up_scale

from tests.conftest import BURN_PACK_FIXTURES, require

F32 = np.float32


def scheme(value: str, store: QuantStore = QuantStore.Native, *, tensor: str | None = None,
           block: tuple[int, ...] | None = None, block_dtype: str = "F32", mode: QuantMode = QuantMode.Symmetric) -> QuantScheme:  # fmt: skip
    """A scheme exactly as written (no canonicalization), for the vectors."""
    blk = None
    if block is not None:
        blk = BlockScale(BlockSize(tuple(block) + (1,) * (5 - len(block)), len(block)), ScaleDtype[block_dtype])
    return QuantScheme(QuantValue[value], store, mode, None if tensor is None else ScaleDtype[tensor], blk)


def words(*values: int) -> bytes:
    return np.array(values, "<u4").tobytes()


def f32_bytes(*values: float) -> bytes:
    return np.array(values, "<f4").tobytes()


def raw_pack(tensors: dict[str, tuple[object, list[int], bytes]]) -> bytes:
    """A .bpk with descriptors exactly as given (dtype in Burn's serde form), for old schemes."""
    descriptors, data, offset = {}, b"", 0
    for name, (dtype, shape, payload) in tensors.items():
        descriptors[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(payload)]}
        data += payload
        offset += len(payload)
    blob = cbor2.dumps({"tensors": descriptors})
    head = HEADER.pack(MAGIC, 1, len(blob)) + blob
    return head + bytes(data_section_start(len(blob)) - len(head)) + data


# -- quant.md §4: Burn's and cubecl's test vectors ------------------------------------------------


def test_vector_1_q8_words_pack_lsb_first():
    q8 = scheme("Q8S", QuantStore.PackedU32(0), tensor="F32")
    packed = QuantizedTensor(q8, np.array([-128, 2, -3, 127], np.int8), np.ones(1, F32)).tobytes()
    assert packed[:4] == words(2147287680) == bytes.fromhex("8002fd7f")


def test_vector_1_a_partial_word_is_zero_padded_and_unpacks_to_its_values():
    q8 = scheme("Q8S", QuantStore.PackedU32(0), tensor="F32")
    packed = QuantizedTensor(q8, np.array([-128, 2, -3, 127, 55], np.int8), np.ones(1, F32)).tobytes()
    assert packed[:8] == words(2147287680, 55)
    assert decode(words(55) + f32_bytes(1.0), q8, [1]).values.tolist() == [55]


def test_vector_2_q4s_words_unpack_low_nibble_first():
    data = words(0, 286331136, 286331153, 572657937, 572662306, 857874978, 858993459, 858993459, 1145324612,
                 1145324612, 1431655748, 1431655765, 1717982549, 1717986918, 2003199590, 2004318071)  # fmt: skip
    values = decode(data + f32_bytes(1.0), scheme("Q4S", QuantStore.PackedU32(0)), [128]).values
    expected = [0] * 10 + [1] * 18 + [2] * 18 + [3] * 18 + [4] * 18 + [5] * 18 + [6] * 18 + [7] * 10
    assert values.tolist() == expected


def test_vector_3_per_tensor_q8s_native_bytes():
    q = QuantizedTensor(scheme("Q8S", tensor="F32"), np.array([[0, 25, 51], [76, 102, 127]], np.int8), np.array([0.03937008], F32))
    assert q.tobytes() == bytes.fromhex("00 19 33 4c 66 7f 85 42 21 3d")
    assert decode(q.tobytes(), q.scheme, [2, 3]).values.tolist() == [[0, 25, 51], [76, 102, 127]]


def test_vector_4_two_level_layout_is_values_block_scales_then_f32_global():
    s = scheme("Q8S", tensor="F32", block=(4,), block_dtype="UE4M3")
    values = np.array([0, 25, 51, 76, 102, 127, -128, -1], np.int8)
    q = QuantizedTensor(s, values, np.array([0.5, 0.125], F32), F32(3.0))
    data = q.tobytes()
    assert len(data) == 8 + 2 + 4 == quantized_data_len(s, [8])
    assert data == bytes.fromhex("00 19 33 4c 66 7f 80 ff 30 20 00 00 40 40")
    back = decode(data, s, [8])
    assert back.values.tolist() == values.tolist()
    assert back.scales.tolist() == [0.5, 0.125] and back.global_scale == 3.0
    assert back.dequantize().tolist() == (F32(3.0) * np.repeat(np.array([0.5, 0.125], F32), 4) * values).tolist()


def test_vector_5_one_level_ue4m3_block_scales():
    s = scheme("Q8S", block=(4,), block_dtype="UE4M3")
    q = QuantizedTensor(s, np.array([0, 25, 51, 76, 102, 127, -128, -1], np.int8), np.array([0.5, 0.125], F32))
    assert q.tobytes()[-2:] == bytes.fromhex("30 20")
    assert decode(q.tobytes(), s, [8]).scales.tolist() == [0.5, 0.125]


@pytest.mark.parametrize("dtype", [ScaleDtype.F32, ScaleDtype.F16, ScaleDtype.BF16, ScaleDtype.UE4M3])
def test_vector_6_scale_round_up_is_never_below_its_input_and_survives_the_codec(dtype):
    inputs = np.array([0.5, 0.3, 1 / 3, 500, 1e-3, 7.7e-4], F32)
    rounded = round_up_scale(inputs, dtype)
    assert (rounded >= np.minimum(inputs, 448 if dtype is ScaleDtype.UE4M3 else np.inf)).all()
    data = burnpack.core.quant._encode_scales(rounded, dtype)
    assert burnpack.core.quant._decode_scales(data, dtype).tolist() == rounded.tolist()


def test_vector_6_derived_roundings():
    ue4m3 = round_up_scale([0.3, 1e-3, 7.7e-4, 500], ScaleDtype.UE4M3)
    assert ue4m3.tolist() == [0.3125, 2.0**-9, 2.0**-9, 448.0]
    assert burnpack.core.quant._encode_scales(ue4m3, ScaleDtype.UE4M3) == bytes([0x2A, 0x01, 0x01, 0x7E])
    assert round_up_scale([1 / 3], ScaleDtype.F16)[0] == F32(0.3334961)
    assert round_up_scale([0.3], ScaleDtype.BF16)[0] == 0.30078125


def test_vector_7_f16_round_up():
    rounded = round_up_scale([1.0, 1.0012, 1.5], ScaleDtype.F16)
    assert rounded.tolist() == [1.0, 1 + 2 / 1024, 1.5]
    assert rounded.astype("<f2").view("<u2")[1] == 0x3C02


def test_vector_8_ndarray_reference_quantize_and_exact_dequantize():
    q = quantize(np.array([-1.8, -1.0, 0.0, 0.5], F32), parse_scheme("q8s"))
    assert q.scales.view("<u4").tolist() == [0x3C6836D4]
    assert q.values.tolist() == [-127, -71, 0, 35]
    assert q.dequantize().tolist() == np.array([-1.8, -1.0062993, 0.0, 0.496063], F32).tolist()
    assert q.tobytes() == bytes.fromhex("81 b9 00 23 d4 36 68 3c")


def test_vector_8_per_block_of_4_gives_the_same_result_twice():
    x = np.array([-1.8, -1.0, 0.0, 0.5] * 2, F32)
    q = quantize(x, parse_scheme("q8s", block=4))
    assert q.values.tolist() == [-127, -71, 0, 35] * 2
    assert q.scales.view("<u4").tolist() == [0x3C6836D4] * 2


def test_vector_8_dequantize_at_scale_point_one():
    q = QuantizedTensor(parse_scheme("q8s"), np.array([-127, -77, -26, 25, 76, 127], np.int8), np.array([0.1], F32))
    np.testing.assert_allclose(q.dequantize(), [-12.7, -7.7, -2.6, 2.5, 7.6, 12.7], rtol=1e-6)


def test_vector_9_quantize_dynamic_q8s():
    q = quantize(np.array([5, 0, 4, -12.7], F32), parse_scheme("q8s"))
    assert q.values.tolist() == [50, 0, 40, -127]
    assert q.scales[0] == F32(0.1)


def test_vector_9_arange_round_trip_times_ten():
    expected = [0.0, 9.76378, 19.52756, 29.29134, 39.05512, 48.818897, 61.02362, 70.7874, 80.551186, 90.31496,
                100.07874, 109.84252, 119.60631, 129.37009, 139.13387, 148.89764, 161.10237, 170.86615, 180.62991,
                190.39369, 200.15749, 209.92126, 219.68504, 229.44882, 239.21262, 248.97638, 261.1811, 270.9449,
                280.70865, 290.47244, 300.23624, 310.0]  # fmt: skip
    result = quantize(np.arange(32, dtype=F32), parse_scheme("q8s")).dequantize() * F32(10)
    np.testing.assert_array_equal(result, np.array(expected, F32))


def test_vector_9_rectangular_blocks_get_one_scale_each():
    m = np.block([[np.full((2, 4), 1.0), np.full((2, 4), 10.0)], [np.full((2, 4), 100.0), np.full((2, 4), 1000.0)]]).astype(F32)
    q = quantize(m, parse_scheme("q8s", block=(2, 4)))
    assert q.scales.shape == (2, 2)
    np.testing.assert_allclose(q.scales.ravel(), np.array([1, 10, 100, 1000]) / 127, rtol=1e-3)


def test_vector_9_per_block_8_int8_data_round_trips_through_bytes():
    s = parse_scheme("q8s", block=8)
    values = np.array([-127, -71, 0, 35, -127, -71, 0, 35, -32, -63, -95, -127, -32, -63, -95, -127], np.int8)
    q = QuantizedTensor(s, values, np.array([0.014173228, 0.00031496], F32))
    back = decode(q.tobytes(), s, [16])
    assert back.values.tolist() == values.tolist() and back.scales.tolist() == q.scales.tolist()


def test_vector_10_q4f_packed_words_decode_to_offset_times_scale():
    q = decode(words(0xFEDCBA98, 0x76543210) + f32_bytes(3.4), scheme("Q4F", QuantStore.PackedU32(0), tensor="F32"), [16])
    assert q.dequantize().tolist() == [F32(i - 8) * F32(3.4) for i in range(16)]


def test_vector_10_two_level_f32_blocks():
    s = scheme("Q4F", QuantStore.PackedU32(0), tensor="F32", block=(8,), block_dtype="F32")
    q = decode(words(0xFEDCBA98, 0x76543210) + f32_bytes(2.0**18, 2.0**19) + f32_bytes(2.0**-20), s, [16])
    expected = [F32(2.0**-20) * F32(2.0 ** (18 + i // 8)) * F32(i - 8) for i in range(16)]
    assert q.dequantize().tolist() == expected


def test_vector_10_two_level_ue4m3_blocks():
    s = scheme("Q4F", QuantStore.PackedU32(0), tensor="F32", block=(8,), block_dtype="UE4M3")
    q = decode(words(0xFEDCBA98, 0x76543210) + bytes([0x3C, 0x1F]) + f32_bytes(2.0**-3), s, [16])
    assert q.scales.tolist() == [1.5, 0.1171875]
    assert q.dequantize().tolist() == [F32(0.125) * F32([1.5, 0.1171875][i // 8]) * F32(i - 8) for i in range(16)]


def test_vector_10_lookup_mode_is_refused_because_the_table_is_not_in_the_bytes():
    s = scheme("Q4F", QuantStore.PackedU32(0), tensor="F32", mode=QuantMode.Lookup)
    with pytest.raises(UnsupportedQuantization, match="table"):
        decode(words(0xFEDCBA98, 0x76543210) + f32_bytes(0.5), s, [16])


@pytest.mark.parametrize("shape, length", [([3, 3], 16), ([2, 5, 9], 84), ([4, 8], 20)])
def test_vector_11_length_formula_pads_each_packed_line(shape, length):
    assert quantized_data_len(scheme("Q4S", QuantStore.PackedU32(0)), shape) == length


def test_length_formula_worked_example_of_section_2_5():
    s = scheme("Q4S", QuantStore.PackedU32(0), tensor="F32", block=(32,), block_dtype="F16")
    assert quantized_data_len(s, [2, 32]) == 40


# -- layouts beyond the vectors ------------------------------------------------------------------


def test_packed_line_padding_is_dropped_per_line():
    values = np.arange(-4, 5, dtype=np.int8).reshape(3, 3)
    s = scheme("Q4S", QuantStore.PackedU32(0))
    data = QuantizedTensor(s, values, np.ones(1, F32)).tobytes()
    assert len(data) == quantized_data_len(s, [3, 3]) == 16
    assert decode(data, s, [3, 3]).values.tolist() == values.tolist()


def test_packing_along_an_outer_dim_keeps_the_logical_order():
    values = np.arange(-8, 16, dtype=np.int8).reshape(3, 8) % 16 - 8
    s = scheme("Q4F", QuantStore.PackedU32(1))
    data = QuantizedTensor(s, values.astype(np.int8), np.ones(1, F32)).tobytes()
    assert len(data) == 8 * 4 + 4  # storage shape [ceil(3/8), 8] words
    assert decode(data, s, [3, 8]).values.tolist() == values.tolist()


@pytest.mark.parametrize("value", ["Q8F", "Q8S", "Q4F", "Q4S", "Q2F", "Q2S"])
def test_native_store_keeps_one_signed_byte_per_value(value):
    lo, hi = burnpack.core.quant.VALUE_RANGE[QuantValue[value]]
    values = np.arange(lo, hi + 1, dtype=np.int8)
    s = scheme(value, tensor="F16")
    data = QuantizedTensor(s, values, np.array([0.5], F32)).tobytes()
    assert data[: values.size] == values.tobytes() and len(data) == values.size + 2
    assert decode(data, s, [values.size]).dequantize().tolist() == (values * F32(0.5)).tolist()


def test_partial_blocks_take_the_scale_of_their_grid_cell():
    s = parse_scheme("q8s", block=(2, 3))
    values = np.ones((3, 5), np.int8)
    scales = np.array([[1, 2], [3, 4]], F32)
    out = QuantizedTensor(s, values, scales).dequantize()
    assert out.tolist() == [[1, 1, 1, 2, 2], [1, 1, 1, 2, 2], [3, 3, 3, 4, 4]]


def test_a_block_shorter_than_the_rank_is_right_aligned():
    s = parse_scheme("q8s", block=4)
    out = QuantizedTensor(s, np.ones((2, 8), np.int8), np.array([[1, 2], [3, 4]], F32)).dequantize()
    assert out.tolist() == [[1] * 4 + [2] * 4, [3] * 4 + [4] * 4]


@pytest.mark.parametrize("dtype", ["F32", "F16", "BF16", "UE4M3"])
def test_every_scale_dtype_round_trips_through_a_pack(dtype, tmp_path):
    x = np.random.default_rng(3).standard_normal((4, 64)).astype(F32)
    q = quantize(x, parse_scheme("q8s", block=32, scale_dtype=dtype))
    path = burnpack.save({"w": q}, tmp_path / "q.bpk")
    with burnpack.load(path) as pack:
        view = pack["w"]
        assert view.dtype == q.dtype and view.tobytes() == q.tobytes()
        assert view.dequantize().tolist() == q.dequantize().tolist()
        assert pack.numpy(dequantize=True)["w"].tolist() == q.dequantize().tolist()
        assert list(pack.dequantize()) == ["w"]


def test_quantized_parts_are_in_the_logical_shape_and_the_block_grid():
    q = quantize(np.ones((6, 70), F32), parse_scheme("q4s", block=32, scale_dtype="bf16"))
    parts = burnpack.load(burnpack.save_bytes({"w": q}))["w"].quantized()
    assert parts.values.shape == (6, 70) and parts.values.dtype == np.int8
    assert parts.scales.shape == (6, 3) and parts.global_scale is None
    assert parts.scheme == q.scheme


# -- quantize: arithmetic ------------------------------------------------------------------------


def test_quantize_returns_read_only_parts():
    q = quantize(np.ones(4, F32), parse_scheme("q8s"))
    with pytest.raises(ValueError):
        q.values[0] = 0


def test_ties_round_half_away_from_zero():
    # scale 1.0 exactly (max 127 → 2·127/254), so x / S is x itself
    x = np.array([127, -127, 0.5, -0.5, 1.5, -1.5, 2.5], F32)
    assert quantize(x, parse_scheme("q8s")).values.tolist() == [127, -127, 1, -1, 2, -2, 3]


def test_q8s_never_produces_minus_128_but_q8f_clamps_at_127():
    x = np.array([-127.5, 127.5], F32)  # Q8F: scale 2·127.5/255 = 1 exactly, so ±max maps to ±127.5
    assert quantize(x, parse_scheme("q8s")).values.tolist() == [-127, 127]
    assert quantize(x, parse_scheme("q8f")).values.tolist() == [-128, 127]


def test_an_all_zero_tensor_stores_scale_zero_on_ndarray_and_min_positive_on_flex():
    assert quantize(np.zeros(4, F32), parse_scheme("q8s")).scales.tolist() == [0.0]
    flex = quantize(np.zeros(4, F32), parse_scheme("q8s"), backend="flex")
    assert flex.scales.tolist() == [float(np.finfo(F32).tiny)] and flex.values.tolist() == [0] * 4


def test_flex_multiplies_by_the_reciprocal_and_can_differ_from_ndarray_by_one_step():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(200_000).astype(F32)
    nd = quantize(x, parse_scheme("q8s")).values.astype(int)
    fx = quantize(x, parse_scheme("q8s"), backend="flex").values.astype(int)
    assert np.abs(nd - fx).max() <= 1


def test_two_level_puts_the_largest_block_scale_on_the_dtype_maximum():
    x = np.concatenate([np.full(16, 0.001), np.full(16, 1000.0)]).astype(F32)
    q = quantize(x, parse_scheme("q8s", block=16, scale_dtype="ue4m3", global_scale=True))
    assert q.scales.max() == 448.0
    assert q.global_scale == F32(F32(F32(2) * F32(1000) / F32(254)) / F32(448))


def test_quantized_tensor_writes_as_the_bytes_burn_stores(tmp_path):
    q = quantize(np.array([[-1.8, -1.0, 0.0, 0.5]], F32), parse_scheme("q8s", block=4, scale_dtype="f16"))
    data = burnpack.save_bytes({"w": q})
    view = burnpack.load(data)["w"]
    assert view.tobytes() == bytes.fromhex("81 b9 00 23") + round_up_scale([F32(3.6) / F32(254)], ScaleDtype.F16).astype("<f2").tobytes()


# -- properties ----------------------------------------------------------------------------------

_SCHEMES = st.builds(
    lambda value, dtype, block: parse_scheme(value, block=block, scale_dtype=dtype),
    st.sampled_from(["q8s", "q4s", "q2s", "q8f", "q4f", "q2f"]),
    st.sampled_from(["f32", "f16", "bf16", "ue4m3"]),
    st.sampled_from([None, 4, (2, 3), 32]),
)
_TWO_LEVEL = st.builds(
    lambda value, dtype, block: parse_scheme(value, block=block, scale_dtype=dtype, global_scale=True),
    st.sampled_from(["q8s", "q4s", "q2s", "q8f", "q4f", "q2f"]),
    st.sampled_from(["f16", "ue4m3"]),
    st.sampled_from([4, (2, 3)]),
)
_FLOATS = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=9),
    elements=st.floats(-1e6, 1e6, width=32, allow_subnormal=False),
)


def _step(q: QuantizedTensor) -> np.ndarray:
    """The effective scale of every element."""
    return QuantizedTensor(q.scheme, np.ones(q.shape, np.int8), q.scales, q.global_scale).dequantize()


@settings(max_examples=300, deadline=None)
@given(_FLOATS, st.one_of(_SCHEMES, _TWO_LEVEL), st.sampled_from(["ndarray", "flex"]))
def test_dequantize_of_quantize_is_within_half_a_step(x, s, backend):
    """Wherever the scale fits its dtype (a saturated scale clips, as in Burn) and is a normal f32
    (a subnormal one has lost precision, and Flex's reciprocal of it overflows)."""
    lo, hi = burnpack.core.quant.VALUE_RANGE[s.value]
    maxrep = burnpack.core.quant.MAX_REPRESENTABLE[s.block.dtype if s.block else s.tensor]
    assume(s.tensor is not None and s.block is not None or 2.0 * float(np.abs(x).max()) / (hi - lo) < maxrep)
    q = quantize(x, s, backend=backend)
    step = _step(q)
    assume(((step >= np.finfo(F32).tiny) | (step == 0)).all())  # 0: an all-zero block (NdArray)
    error = np.abs(q.dequantize().astype(np.float64) - x)
    slack = (np.abs(x) + step * 128) * 2.0**-22  # the f32 roundings of x / S and S · q
    assert (error <= step / 2 + slack).all()


@settings(max_examples=300, deadline=None)
@given(_FLOATS, st.sampled_from(["q8s", "q4s", "q2s"]), st.sampled_from([None, 4, (2, 3)]), st.sampled_from(["ndarray", "flex"]))
def test_quantize_is_idempotent_on_its_own_output(x, value, block, backend):
    """Symmetric values with F32 scales are a fixed point: same values, scales and bytes."""
    s = parse_scheme(value, block=block)
    first = quantize(x, s, backend=backend)
    again = quantize(first.dequantize(), s, backend=backend)
    assert again.tobytes() == first.tobytes()


@settings(max_examples=100, deadline=None)
@given(_FLOATS, st.one_of(_SCHEMES, _TWO_LEVEL))
def test_bytes_decode_to_the_parts_they_were_written_from(x, s):
    q = quantize(x, s)
    back = decode(q.tobytes(), s, q.shape)
    assert back.values.tolist() == q.values.tolist() and back.scales.tolist() == q.scales.tolist()
    assert back.dequantize().tobytes() == q.dequantize().tobytes()


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(["Q8F", "Q8S", "Q4F", "Q4S", "Q2F", "Q2S"]), st.sampled_from(["F32", "F16", "BF16", "UE4M3"]))
def test_the_direct_dequantize_matches_the_parts_bit_for_bit(data, value, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=9))
    lo, hi = burnpack.core.quant.VALUE_RANGE[QuantValue[value]]
    values = data.draw(hnp.arrays(np.int8, shape, elements=st.integers(lo, hi)))
    store = data.draw(st.sampled_from([QuantStore.Native] + [QuantStore.PackedU32(d) for d in range(max(len(shape), 1))]))
    block = data.draw(st.sampled_from([None, (2,), (3, 2)])) if shape else None
    s = scheme(value, store, tensor=None if block else dtype, block=block, block_dtype=dtype)
    grid = burnpack.core.quant._layout(s, shape).grid
    scales = round_up_scale(data.draw(hnp.arrays(np.float32, grid, elements=st.floats(0, 100, width=32))), ScaleDtype[dtype])
    payload = QuantizedTensor(s, values, scales).tobytes()
    direct = burnpack.core.quant.dequantize(payload, s, shape)
    assert direct.tobytes() == decode(payload, s, shape).dequantize().tobytes()
    assert decode(payload, s, shape).values.tolist() == values.tolist()


@pytest.mark.parametrize("value, block", [("Q4S", None), ("Q4F", (3, 32)), ("Q2S", (32,)), ("Q2F", (5, 7))])
def test_a_large_packed_tensor_dequantizes_in_bands_to_the_same_bits(value, block):
    shape = (1031, 601)  # more values than one band, a last dim that pads every packed line
    rng = np.random.default_rng(2)
    lo, hi = burnpack.core.quant.VALUE_RANGE[QuantValue[value]]
    s = scheme(value, QuantStore.PackedU32(0), tensor=None if block else "F32", block=block, block_dtype="F16")
    grid = burnpack.core.quant._layout(s, shape).grid
    q = QuantizedTensor(s, rng.integers(lo, hi + 1, shape).astype(np.int8), round_up_scale(rng.random(grid), ScaleDtype.F16))
    payload = q.tobytes()
    assert burnpack.core.quant._band_rows(s, shape, burnpack.core.quant._layout(s, shape)) is not None
    assert burnpack.core.quant.dequantize(payload, s, shape).tobytes() == q.dequantize().tobytes()


# -- Burn's fixtures -----------------------------------------------------------------------------


def _fixture(name: str) -> tuple[burnpack.Pack, dict]:
    folder = require(BURN_PACK_FIXTURES)
    return burnpack.load(folder / f"{name}.bpk"), json.loads((folder / f"{name}.json").read_text())


def test_fixture_q8s_per_tensor_dequantizes():
    pack, _ = _fixture("qfloat_q8s_per_tensor")
    scale = F32(0.05)
    expected = np.array([1, -1, 127, -127, 0, 2, -2, 64], np.int8) * scale
    assert pack["q"].dequantize().tolist() == expected.tolist()


def test_fixture_q4s_packed_u32_block32_dequantizes():
    pack, sidecar = _fixture("qfloat_q4s_packed_u32_block32")
    data = bytes.fromhex(sidecar["tensors"][0]["data_hex"])
    nibbles = np.array([[b & 0xF, b >> 4] for b in data[:64]]).reshape(2, 64)
    signed = np.where(nibbles >= 8, nibbles - 16, nibbles).astype(F32)
    scales = np.frombuffer(data[64:], "<f4").reshape(2, 2)
    expected = signed * np.repeat(scales, 32, axis=1)
    assert pack["q"].dequantize().tolist() == expected.tolist()


def test_fixture_e2m1_two_level_is_refused_as_an_undeterminable_fp4_payload():
    pack, _ = _fixture("qfloat_e2m1_two_level")
    assert describe(pack["q"].dtype.value) == "E2M1 packed native block 16 UE4M3 + tensor F32"
    with pytest.raises(UnsupportedQuantization, match="E2M1"):
        pack["q"].dequantize()


def test_every_qfloat_fixture_either_dequantizes_or_says_why():
    folder = require(BURN_PACK_FIXTURES)
    seen = 0
    for path in sorted(folder.glob("*qfloat*.bpk")):
        try:
            pack = burnpack.load(path)
        except burnpack.BurnpackError:
            continue
        for view in pack.tensors():
            if view.dtype.variant == "QFloat":
                seen += 1
                try:
                    assert view.dequantize().shape == view.shape
                except QuantizationError as exc:
                    assert str(exc) and isinstance(exc, ValueError)
    assert seen >= 4


def test_complex_fixtures_16_byte_q_is_an_invalid_payload_naming_both_lengths():
    s = scheme("Q4S", QuantStore.PackedU32(0), tensor="F32", block=(32,), block_dtype="F16")
    pack = burnpack.load(burnpack.save_bytes([burnpack.Tensor("q", burnpack.DType.QFloat(s), [2, 32], bytes(16))]))
    assert pack["q"].tobytes() == bytes(16)  # readable as bytes, as Burn reads it
    with pytest.raises(InvalidQuantizedData, match=r"holds 16 bytes .* needs 40"):
        pack["q"].dequantize()


# -- refusals ------------------------------------------------------------------------------------


def test_ue8m0_scales_are_refused():
    with pytest.raises(UnsupportedQuantization, match="UE8M0"):
        decode(bytes(9), scheme("Q8S", block=(8,), block_dtype="UE8M0"), [8])


@pytest.mark.parametrize("value", ["E4M3", "E5M2", "E2M1"])
def test_minifloat_values_are_refused_saying_why(value):
    with pytest.raises(UnsupportedQuantization, match="not determinable"):
        decode(bytes(12), scheme(value, tensor="F32"), [8])


def test_integer_values_in_a_packed_native_store_are_refused():
    with pytest.raises(UnsupportedQuantization, match="PackedNative"):
        decode(bytes(12), scheme("Q8S", QuantStore.PackedNative(0), tensor="F32"), [8])


def test_a_packing_dim_the_tensor_lacks_is_invalid():
    with pytest.raises(InvalidQuantizedData, match="lacks"):
        decode(bytes(8), scheme("Q4S", QuantStore.PackedU32(2)), [8])


def test_a_zero_block_extent_is_invalid():
    with pytest.raises(InvalidQuantizedData, match="zero extent"):
        decode(bytes(8), scheme("Q8S", block=(0,)), [8])


def test_a_block_len_beyond_its_storage_is_invalid():
    bad = QuantScheme(QuantValue.Q8S, QuantStore.Native, QuantMode.Symmetric, None,
                      BlockScale(BlockSize((4, 1, 1, 1, 1), 6), ScaleDtype.F32))  # fmt: skip
    with pytest.raises(InvalidQuantizedData, match="storage slots"):
        decode(bytes(12), bad, [8])


@pytest.mark.parametrize("shape", [[0, 2**62], [2**64 - 1, 0], [0, 2**40, 3]])
def test_an_empty_tensor_with_huge_dims_reads_or_fails_cleanly(shape):
    s = parse_scheme("q4s", block=(4, 32), store=QuantStore.PackedU32(0))
    try:
        out = burnpack.core.quant.dequantize(bytes(quantized_data_len(s, shape)), s, shape)
    except InvalidQuantizedData as exc:
        assert "shape" in str(exc)
    else:
        assert out.size == 0


def test_dequantizing_a_float_tensor_is_an_error():
    pack = burnpack.load(burnpack.save_bytes({"w": np.ones(2, F32)}))
    with pytest.raises(QuantizationError, match="not a quantized"):
        pack["w"].dequantize()


def test_quantize_refuses_what_burns_cpu_backends_refuse():
    x = np.ones((2, 8), F32)
    with pytest.raises(UnsupportedQuantization, match="integer values"):
        quantize(x, scheme("E4M3", tensor="F32"))
    with pytest.raises(UnsupportedQuantization, match="UE8M0"):
        quantize(x, scheme("Q8S", tensor="UE8M0"))
    with pytest.raises(UnsupportedQuantization, match="two-level"):
        quantize(x, scheme("Q8S", tensor="F32", block=(8,), block_dtype="F32"))
    with pytest.raises(UnsupportedQuantization, match="Can't store in u32"):
        quantize(np.ones((2, 6), F32), scheme("Q4S", QuantStore.PackedU32(0)))
    with pytest.raises(QuantizationError, match="overflow"):
        quantize(np.array([3e38], F32), parse_scheme("q8s"))
    with pytest.raises(QuantizationError, match="NaN"):
        quantize(np.array([np.nan], F32), parse_scheme("q8s"))
    with pytest.raises(QuantizationError, match="float"):
        quantize(np.ones(3, np.int32), parse_scheme("q8s"))


def test_packed_u32_quantize_packs_what_native_stores():
    x = np.random.default_rng(5).standard_normal((3, 16)).astype(F32)
    native = quantize(x, parse_scheme("q4s", block=8))
    packed = quantize(x, parse_scheme("q4s", block=8, store=QuantStore.PackedU32(0)))
    assert packed.values.tolist() == native.values.tolist()
    assert len(packed.tobytes()) == 3 * 2 * 4 + 6 * 4
    assert decode(packed.tobytes(), packed.scheme, [3, 16]).values.tolist() == native.values.tolist()


# -- older releases (quant.md §5) ----------------------------------------------------------------

OLD_PER_TENSOR = {"value": "Q8S", "param": "F32", "store": "Native", "level": "Tensor", "mode": "Symmetric"}


def _old_pack(scheme_map: dict, shape: list[int], payload: bytes) -> bytes:
    return raw_pack({"w": ({"QFloat": scheme_map}, shape, payload)})


def test_an_old_scheme_is_refused_naming_the_releases_unless_legacy_ok():
    data = _old_pack(OLD_PER_TENSOR, [4], bytes([1, 2, 3, 4]) + f32_bytes(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", burnpack.LegacyFormatWarning)
        pack = burnpack.load(data)
    with pytest.raises(UnsupportedQuantization, match=r"Burn 0\.19 to 0\.22\.0-pre\.2.*legacy_ok=True"):
        pack["w"].dequantize()


def test_an_old_per_tensor_scheme_reads_as_written_with_legacy_ok():
    data = _old_pack(OLD_PER_TENSOR, [4], bytes([1, 2, 3, 4]) + f32_bytes(0.5))
    assert burnpack.load(data, legacy_ok=True)["w"].dequantize().tolist() == [0.5, 1.0, 1.5, 2.0]


def test_an_old_cpu_file_stores_f32_scales_whatever_its_param():
    old = dict(OLD_PER_TENSOR, param="F16")
    cpu = _old_pack(old, [4], bytes([1, 2, 3, 4]) + f32_bytes(0.5))
    gpu = _old_pack(old, [4], bytes([1, 2, 3, 4]) + np.array([0.25], "<f2").tobytes())
    assert burnpack.load(cpu, legacy_ok=True)["w"].dequantize().tolist() == [0.5, 1.0, 1.5, 2.0]
    assert burnpack.load(gpu, legacy_ok=True)["w"].dequantize().tolist() == [0.25, 0.5, 0.75, 1.0]


def test_an_old_u32_store_from_burn_0_19_is_a_flat_word_stream():
    old = dict(OLD_PER_TENSOR, store="U32", value="Q4S")
    data = _old_pack(old, [3, 3], words(0x07654321, 0x1) + f32_bytes(1.0))  # 9 values, 2 words, no per-line padding
    values = burnpack.load(data, legacy_ok=True)["w"].quantized().values
    assert values.tolist() == [[1, 2, 3], [4, 5, 6], [7, 0, 1]]


def test_an_old_per_block_scheme_reads_where_chunks_and_rectangles_agree():
    old = dict(OLD_PER_TENSOR, level={"Block": {"storage": [4, 1, 1, 1, 1], "len": 1}})
    data = _old_pack(old, [2, 4], bytes(range(1, 9)) + f32_bytes(1.0, 2.0))
    assert burnpack.load(data, legacy_ok=True)["w"].dequantize().tolist() == [[1, 2, 3, 4], [10, 12, 14, 16]]


def test_an_old_per_block_scheme_where_chunks_and_rectangles_differ_is_refused():
    old = dict(OLD_PER_TENSOR, level={"Block": {"storage": [2, 2, 1, 1, 1], "len": 2}})
    data = _old_pack(old, [4, 4], bytes(16) + f32_bytes(1, 1, 1, 1))
    with pytest.raises(UnsupportedQuantization, match="flat chunks"):
        burnpack.load(data, legacy_ok=True)["w"].dequantize()


def test_an_old_two_level_scheme_is_refused_naming_the_release():
    old = dict(OLD_PER_TENSOR, level={"BlockTensor": {"block": {"storage": [4, 1, 1, 1, 1], "len": 1}, "global": "F32"}})
    data = _old_pack(old, [8], bytes(8) + f32_bytes(1, 1, 1))
    with pytest.raises(UnsupportedQuantization, match=r"0\.22\.0-pre\.2"):
        burnpack.load(data, legacy_ok=True)["w"].dequantize()


def test_an_old_payload_of_the_wrong_length_names_both_lengths():
    data = _old_pack(OLD_PER_TENSOR, [4], bytes(5))
    with pytest.raises(InvalidQuantizedData, match=r"holds 5 bytes .* takes 8"):
        burnpack.load(data, legacy_ok=True)["w"].dequantize()


# -- the short form ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "s, text",
    [
        (parse_scheme("q8s", block=32, scale_dtype="f16"), "Q8S block 32 F16"),
        (parse_scheme("q8s"), "Q8S tensor F32"),
        (scheme("Q4S", QuantStore.PackedU32(0), tensor="F32", block=(4, 32), block_dtype="UE4M3"),
         "Q4S packed u32 block 4x32 UE4M3 + tensor F32"),
        (scheme("Q2S", QuantStore.PackedU32(1), tensor="BF16", mode=QuantMode.Lookup), "Q2S packed u32 dim 1 lookup tensor BF16"),
    ],
)  # fmt: skip
def test_describe_gives_the_short_form(s, text):
    assert describe(s) == text


def test_parse_scheme_canonicalizes_the_block_like_burn():
    s = parse_scheme("Q8S", block=(1, 32))
    assert s.block.size == BlockSize((32, 1, 1, 1, 1), 1)
    with pytest.raises(QuantizationError):
        parse_scheme("q9s")
    with pytest.raises(QuantizationError):
        parse_scheme("q8s", block=0)


# -- ModuleRecord --------------------------------------------------------------------------------


def _quantized_record() -> tuple[burnpack.ModuleRecord, np.ndarray]:
    w = np.random.default_rng(0).standard_normal((4, 32)).astype(F32)
    record = burnpack.ModuleRecord.from_module({"fc": {"weight": quantize(w, parse_scheme("q8s", block=32)), "bias": np.zeros(4, F32)}})
    return burnpack.ModuleRecord.from_bytes(record.into_bytes()), w


def test_a_module_record_keeps_quantized_tensors_as_such():
    record, _ = _quantized_record()
    assert record["fc.weight"].dtype.variant == "QFloat"
    assert record.apply({"fc.weight": np.zeros((4, 32), F32), "fc.bias": np.zeros(4, F32)}).params["fc.weight"].dtype.variant == "QFloat"


def test_casting_a_quantized_entry_to_a_float_parameter_is_refused_without_dequantize():
    record, _ = _quantized_record()
    with pytest.raises(burnpack.records.RecordCastError, match="dequantize=True"):
        record.cast_to_module_dtype().apply({"fc.weight": np.zeros((4, 32), F32), "fc.bias": np.zeros(4, F32)})


def test_apply_with_dequantize_loads_the_dequantized_values_in_the_parameter_dtype():
    record, w = _quantized_record()
    result = record.apply({"fc.weight": np.zeros((4, 32), np.float16), "fc.bias": np.zeros(4, F32)}, dequantize=True)
    param = result.params["fc.weight"]
    expected = quantize(w, parse_scheme("q8s", block=32)).dequantize()
    assert param.dtype == burnpack.DType.F16 and param.value.tolist() == expected.astype(np.float16).tolist()
    assert record.numpy(dequantize=True)["fc.weight"].tolist() == expected.tolist()


# -- command line --------------------------------------------------------------------------------


def _model(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    path = tmp_path / "model.safetensors"
    save_file({"fc1.weight": rng.standard_normal((8, 64)).astype(F32), "fc1.bias": np.zeros(8, F32),
               "norm.weight": np.ones(8, F32), "embed.weight": rng.standard_normal((10, 8)).astype(F32)}, str(path))  # fmt: skip
    return path


def test_convert_quantize_selects_weights_and_reports_the_error(tmp_path, capsys):
    from burnpack.cli.main import main

    out = tmp_path / "model.bpk"
    assert main(["convert", str(_model(tmp_path)), str(out), "--quantize", "q8s", "--block", "32", "--scale-dtype", "f16"]) == 0
    printed = capsys.readouterr().out
    assert "fc1.weight: Q8S block 32 F16," in printed
    pack = burnpack.load(out)
    assert {n: describe(pack[n].dtype.value) for n in pack if pack[n].dtype.variant == "QFloat"} == {"fc1.weight": "Q8S block 32 F16"}
    from safetensors.numpy import load_file

    original = load_file(str(tmp_path / "model.safetensors"))["fc1.weight"]
    assert pack["fc1.weight"].dequantize().tolist() == quantize(original, parse_scheme("q8s", block=32, scale_dtype="f16")).dequantize().tolist()


def test_convert_include_selects_by_name_and_an_empty_selection_is_an_error(tmp_path, capsys):
    from burnpack.cli.main import main

    model = _model(tmp_path)
    assert main(["convert", str(model), str(tmp_path / "a.bpk"), "--quantize", "q4s", "--include", r"^embed\."]) == 0
    assert burnpack.load(tmp_path / "a.bpk")["embed.weight"].dtype.variant == "QFloat"
    assert main(["convert", str(model), str(tmp_path / "b.bpk"), "--quantize", "q4s", "--include", "nothing"]) == 1
    assert "selected no float tensor" in capsys.readouterr().err
    assert not (tmp_path / "b.bpk").exists()


def test_quantizing_into_a_format_without_qfloat_is_an_error(tmp_path, capsys):
    from burnpack.cli.main import main

    assert main(["convert", str(_model(tmp_path)), str(tmp_path / "q.safetensors"), "--quantize", "q8s"]) == 1
    assert "cannot hold quantized" in capsys.readouterr().err


def test_convert_dequantize_writes_quantized_tensors_as_their_f32_values(tmp_path):
    from safetensors.numpy import load_file

    from burnpack.cli.main import main

    q = quantize(np.random.default_rng(1).standard_normal((4, 64)).astype(F32), parse_scheme("q4s", block=32, store=QuantStore.PackedU32(0)))
    source = burnpack.save({"w": q, "b": np.ones(4, F32)}, tmp_path / "q.bpk")
    assert main(["convert", str(source), str(tmp_path / "f.safetensors"), "--dequantize"]) == 0
    back = load_file(str(tmp_path / "f.safetensors"))
    assert back["w"].dtype == F32 and back["w"].tobytes() == q.dequantize().tobytes()
    assert back["b"].tolist() == [1.0] * 4


def test_convert_dequantize_without_quantized_tensors_is_an_error(tmp_path, capsys):
    from burnpack.cli.main import main

    assert main(["convert", str(_model(tmp_path)), str(tmp_path / "d.safetensors"), "--dequantize"]) == 1
    assert "no quantized" in capsys.readouterr().err


def test_quantization_flags_without_quantize_are_an_error(tmp_path, capsys):
    from burnpack.cli.main import main

    assert main(["convert", str(_model(tmp_path)), str(tmp_path / "c.bpk"), "--block", "32"]) == 2
    assert "UsageError: --block applies only with --quantize" in capsys.readouterr().err


def test_inspect_shows_the_short_scheme_and_dequantized_statistics(tmp_path, capsys):
    from burnpack.cli.main import main

    q = quantize(np.array([[-1.8, -1.0, 0.0, 0.5]], F32), parse_scheme("q8s", block=4, scale_dtype="f16"))
    path = burnpack.save({"w": q}, tmp_path / "q.bpk")
    assert main(["inspect", "--stats", str(path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("w "))
    values = q.dequantize()
    assert "QFloat(Q8S block 4 F16)" in row
    assert row.split()[-3:] == [f"{v:.6g}" for v in (values.min(), values.max(), values.astype(np.float64).mean())]
