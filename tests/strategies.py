"""Hypothesis strategies for pack contents used by the format-layer property tests."""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from burnpack import BoolStore, DType, QuantMode, QuantScheme, QuantStore, QuantValue, Scalar, Tensor
from burnpack.dtypes import element_size, numpy_dtype

UNIT_DTYPES = [getattr(DType, name) for name in ("F64", "F32", "Flex32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8")]
BOOL_DTYPES = [DType.Bool(store) for store in BoolStore]
QFLOAT = DType.QFloat(QuantScheme(QuantValue.Q8S, QuantStore.Native, QuantMode.Symmetric))
ALL_DTYPES = UNIT_DTYPES + BOOL_DTYPES + [QFLOAT]


class PackSpec(NamedTuple):
    tensors: list[Tensor]
    metadata: dict[str, str]
    scalars: dict[str, Scalar]


names = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)
param_ids = st.none() | st.integers(0, 2**64 - 1)


@st.composite
def tensors(draw, name=None):
    dtype = draw(st.sampled_from(ALL_DTYPES))
    shape = draw(shapes)
    size = element_size(dtype)
    numel = math.prod(shape)
    byte_len = numel * size if size is not None else draw(st.integers(0, 40))
    data = draw(st.binary(min_size=byte_len, max_size=byte_len))
    return Tensor(draw(names) if name is None else name, dtype, shape, data, param_id=draw(param_ids))


float_bits = st.one_of(
    st.integers(0, 2**64 - 1),
    st.floats(allow_nan=False).map(lambda f: struct.unpack("<Q", struct.pack("<d", f))[0]),
    st.sampled_from([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF8400000000000, 0x7FF8000020000000, 0x8000000000000000, 1]),
)
scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(Scalar.Int),
    st.integers(0, 2**64 - 1).map(Scalar.UInt),
    float_bits.map(lambda b: Scalar.Float(struct.unpack("<d", struct.pack("<Q", b))[0])),
    st.booleans().map(Scalar.Bool),
)


@st.composite
def packs(draw, max_tensors=6):
    tensor_names = draw(st.lists(names, max_size=max_tensors, unique=True))
    return PackSpec(
        [draw(tensors(name)) for name in tensor_names],
        draw(st.dictionaries(names, names, max_size=3)),
        draw(st.dictionaries(names, scalars, max_size=4)),
    )


@st.composite
def arrays(draw):
    """numpy arrays of every supported dtype, in any layout and byte order."""
    np_dtype = draw(st.sampled_from(["<f8", "<f4", "<f2", "<i8", "<i4", "<i2", "i1", "<u8", "<u4", "<u2", "u1", "?", "bf16"]))
    dtype = np.dtype(ml_dtypes.bfloat16) if np_dtype == "bf16" else np.dtype(np_dtype)
    shape = draw(st.lists(st.integers(0, 5), max_size=3))
    raw = draw(st.binary(min_size=math.prod(shape) * dtype.itemsize, max_size=math.prod(shape) * dtype.itemsize))
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if dtype == np.bool_:
        array = array.view(np.uint8).astype(bool)
    layout = draw(st.sampled_from(["c", "fortran", "strided", "big_endian"]))
    if layout == "fortran":
        array = np.asfortranarray(array)
    elif layout == "strided" and array.ndim:
        array = np.repeat(array, 2, axis=-1)[..., ::2]
    elif layout == "big_endian" and dtype.itemsize > 1 and dtype.kind in "fiu":
        array = array.astype(dtype.newbyteorder(">"))
    return array


__all__ = ["ALL_DTYPES", "PackSpec", "arrays", "numpy_dtype", "packs", "scalars", "tensors"]
