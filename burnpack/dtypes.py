"""Element types: Burn's ``DType`` ↔ numpy, element sizes, and Burn's Debug rendering."""

from __future__ import annotations

import math
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


# -- torch -----------------------------------------------------------------------------------
# torch stays optional: nothing here imports it until a caller asks for torch tensors. The
# DType → torch correspondence is not a third table: it is the numpy view type above, as torch
# itself maps numpy dtypes (bf16, which numpy only has through ml_dtypes, is torch.bfloat16).

TORCH_EXTRA_HINT = "torch tensors need PyTorch: pip install 'burnpack[torch]'"


def import_torch() -> Any:
    """The ``torch`` module, or an ImportError naming the ``[torch]`` extra."""
    try:
        import torch
    except ImportError:
        raise ImportError(TORCH_EXTRA_HINT) from None
    return torch


def torch_dtype(dtype: DType, *, name: str = "tensor") -> Any:
    """The torch dtype a tensor's bytes are viewed as (Bool stores: ``bool``, ``uint8``, ``uint32``).

    QFloat has no torch dtype: a TypeError says so (its raw bytes stay available through numpy).
    """
    torch = import_torch()
    if dtype.value is not None and dtype.variant != "Bool":
        raise TypeError(f"tensor {name!r} is {debug(dtype)}, which torch has no dtype for; read its raw bytes with .numpy()")
    np_dtype = numpy_dtype(dtype)
    if np_dtype == _UNIT_NUMPY["BF16"]:
        return torch.bfloat16
    try:
        return torch.from_numpy(np.empty(0, np_dtype)).dtype
    except TypeError:
        raise TypeError(f"tensor {name!r} is {debug(dtype)}, which this torch {torch.__version__} has no dtype for") from None


def torch_from_buffer(buffer: Any, offset: int, shape: tuple[int, ...], dtype: DType, *, name: str = "tensor") -> Any:
    """A torch tensor viewing ``buffer`` at ``offset`` (no copy), typed and shaped as a Burn tensor.

    ``buffer`` must be writable memory the tensor may own a view of (torch has no read-only
    tensors): a copy-on-write file mapping or a fresh copy. Bool stores become ``torch.bool``:
    ``Native``/``U8`` in place when every byte is 0 or 1, otherwise (and for ``U32``) as ``!= 0``.
    """
    torch = import_torch()
    target = torch_dtype(dtype, name=name)
    raw = torch.uint8 if target == torch.bool else target  # a bool's bytes are checked before use
    count = math.prod(shape)
    if count == 0:
        tensor = torch.empty(shape, dtype=raw)
    else:
        if _BIG_ENDIAN_HOST and raw.itemsize > 1:
            raise TypeError("zero-copy torch tensors of little-endian data need a little-endian host")
        tensor = torch.frombuffer(buffer, dtype=raw, count=count, offset=offset).view(shape)
    if dtype.variant != "Bool":
        return tensor
    if raw.itemsize == 1 and (count == 0 or int(tensor.max()) <= 1):
        return tensor.view(torch.bool)
    return tensor != 0


def numpy_from_torch(tensor: Any, *, name: str = "tensor") -> np.ndarray:
    """A CPU numpy view (or copy, for other devices and layouts) of a dense torch tensor;
    bf16 comes back as ``ml_dtypes.bfloat16`` through its bit pattern."""
    torch = import_torch()
    if tensor.layout != torch.strided or tensor.is_quantized:
        raise TypeError(f"tensor {name!r} has layout {tensor.layout}: only dense tensors can be saved")
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(_UNIT_NUMPY["BF16"])
    try:
        return tensor.numpy()
    except TypeError:
        raise TypeError(f"tensor {name!r} has torch dtype {tensor.dtype}, which Burn has no dtype for") from None
