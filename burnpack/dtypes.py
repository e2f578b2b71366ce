"""Element types: Burn's ``DType`` ↔ numpy, element sizes, and Burn's Debug rendering."""

from __future__ import annotations

import sys
from typing import Any

import ml_dtypes
import numpy as np

from ._generated.types import BOOL_STORE_TABLE, DTYPE_TABLE, BoolStore, DType

_BIG_ENDIAN_HOST = sys.byteorder == "big"


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


_UNIT_NUMPY = {name: _np_dtype(np_name) for name, (_, np_name) in DTYPE_TABLE.items()}
_BOOL_NUMPY = {name: _np_dtype(np_name) for name, (_, np_name) in BOOL_STORE_TABLE.items()}
_QFLOAT_NUMPY = np.dtype("u1")


def element_size(dtype: DType) -> int | None:
    """Bytes per element, or None for QFloat (bit-packed values plus inline scales)."""
    if dtype.value is None:
        return DTYPE_TABLE[dtype.variant][0]
    if dtype.variant == "Bool":
        return BOOL_STORE_TABLE[dtype.value.value][0]
    return None


def unconstructible(dtype: DType) -> str | None:
    """Why no Burn writer can construct ``dtype`` though Burn's reader decodes it, or None.

    A QFloat block size comes only from cubecl's ``BlockSize::new``: leading 1s stripped, at
    most 5 dims kept, unused storage slots 1 (format.md §3.1); deserialization keeps any value.
    """
    block = getattr(dtype.value, "block", None) if dtype.variant == "QFloat" else None
    if block is None:
        return None
    storage, length = list(block.size.storage), block.size.len
    if length > len(storage):
        return f"QuantScheme block size len {length} exceeds its {len(storage)} storage slots (BlockSize::new keeps at most 5 dims)"
    if any(v != 1 for v in storage[length:]) or (length and storage[0] == 1):
        kept = storage[:length]
        while kept and kept[0] == 1:
            kept.pop(0)
        canonical = kept + [1] * (len(storage) - len(kept))
        return (
            f"QuantScheme block size {{storage: {storage}, len: {length}}} is not in BlockSize::new's canonical form "
            f"(leading 1s stripped, unused slots 1): Burn writes {{storage: {canonical}, len: {len(kept)}}}"
        )
    return None


def numpy_dtype(dtype: DType) -> np.dtype:
    """The numpy dtype a tensor's bytes are viewed as (QFloat: raw ``uint8``; Flex32: float32).

    Multi-byte types are explicitly little-endian, so views are right on big-endian hosts too.
    """
    if dtype.value is None:
        return _UNIT_NUMPY[dtype.variant]
    if dtype.variant == "Bool":
        return _BOOL_NUMPY[dtype.value.value]
    return _QFLOAT_NUMPY


_FROM_NUMPY: dict[Any, DType] = {
    np.dtype("<f8"): DType.F64,
    np.dtype("<f4"): DType.F32,
    np.dtype("<f2"): DType.F16,
    np.dtype(ml_dtypes.bfloat16): DType.BF16,
    np.dtype("<i8"): DType.I64,
    np.dtype("<i4"): DType.I32,
    np.dtype("<i2"): DType.I16,
    np.dtype("i1"): DType.I8,
    np.dtype("<u8"): DType.U64,
    np.dtype("<u4"): DType.U32,
    np.dtype("<u2"): DType.U16,
    np.dtype("u1"): DType.U8,
    np.dtype("?"): DType.Bool(BoolStore.Native),
}


def dtype_from_numpy(dt: np.dtype) -> DType:
    """The Burn dtype for a numpy dtype of either byte order; raises ValueError if none fits."""
    little = dt.newbyteorder("<") if dt.byteorder == ">" else dt
    try:
        return _FROM_NUMPY[little]
    except KeyError:
        raise ValueError(f"numpy dtype {dt} has no burnpack equivalent") from None


def debug(dtype: DType) -> str:
    """Rust's ``{:?}`` of a DType, as in Burn's error messages (``F32``, ``Bool(U32)``)."""
    if dtype.value is None:
        return dtype.variant
    if dtype.variant == "Bool":
        return f"Bool({dtype.value.value})"
    return f"QFloat({dtype.value!r})"


UNIT_VIEW_SPECS: dict[str, tuple[int, np.dtype]] = {
    name: (size, _UNIT_NUMPY[name])
    for name, (size, _) in DTYPE_TABLE.items()
    if not (_BIG_ENDIAN_HOST and name == "BF16")  # ml_dtypes' bfloat16 is native-endian only
}
"""Unit dtypes whose bytes numpy views in place: variant → (element size, numpy dtype)."""


def view_bytes_as(buffer: Any, offset: int, count: int, dtype: np.dtype) -> np.ndarray:
    """A zero-copy 1-D view of ``count`` elements at ``offset`` (bf16 is byte-swapped on BE hosts)."""
    if _BIG_ENDIAN_HOST and dtype == _UNIT_NUMPY["BF16"]:
        return np.frombuffer(buffer, "<u2", count, offset).astype("=u2").view(dtype)
    return np.frombuffer(buffer, dtype, count, offset)
