"""Element types: Burn's ``DType`` ↔ numpy / torch / safetensors, element sizes, Debug rendering and the
short names people read (``F32``, ``QFloat(Q8S block 32 F16)``).

Every table here is derived from the generated ``DTYPE_INFO`` / ``BOOL_STORE_INFO``
(``schema/metadata.toml``); torch is imported only by the torch functions, and ``ml_dtypes``
(whose extension takes about a second to load) only when an array of one of its types (bf16) is
made or met.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np

from ..codec._generated.metadata import BOOL_STORE_INFO, DTYPE_INFO, NUMPY_EXTENSION_TYPES, BoolStore, DType, QuantMode, QuantScheme, ScaleDtype, debug_DType

if TYPE_CHECKING:  # torch is an extra: its types name what goes in and out; its module is imported when used
    import torch
    from numpy.typing import ArrayLike

    TorchTensor: TypeAlias = torch.Tensor
    TorchDType: TypeAlias = torch.dtype
    ArrayData: TypeAlias = ArrayLike | torch.Tensor
    """Elements a caller hands over: a numpy array, anything ``np.asarray`` takes, or a torch tensor."""
else:
    TorchTensor = TorchDType = ArrayData = Any

__all__ = [
    "EXTENSION_DTYPES",
    "NATIVE_BOOL",
    "UNIT_SIZES",
    "UNIT_VIEW_SPECS",
    "ResolvedTable",
    "debug",
    "describe",
    "dtype_label",
    "dtype_from_numpy",
    "dtype_from_safetensors",
    "dtype_from_torch",
    "element_size",
    "is_extension_type",
    "is_float_array",
    "numpy_dtype",
    "numpy_dtype_named",
    "safetensors_code",
    "torch_dtype",
    "unconstructible",
    "view_bytes_as",
]

_BIG_ENDIAN_HOST = sys.byteorder == "big"


@functools.cache
def numpy_dtype_named(name: str) -> np.dtype:
    """The numpy dtype of a table's numpy name (``<f4``, ``bfloat16``).

    Imports ``ml_dtypes`` only for the names numpy itself lacks (the generated ``NUMPY_EXTENSION_TYPES``).

    Args:
        name: The numpy name, as the dtype tables give it.

    Returns:
        The numpy dtype.
    """
    if name in NUMPY_EXTENSION_TYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def is_extension_type(dt: np.dtype) -> bool:
    """Whether ``dt`` is one of the tables' ml_dtypes types (bf16): native-endian only, and no type
    torch hands to numpy directly (without importing ml_dtypes: no such array can exist before).

    Args:
        dt: A numpy dtype.

    Returns:
        True for an ml_dtypes type of the tables.
    """
    return "ml_dtypes" in sys.modules and dt.name in NUMPY_EXTENSION_TYPES and dt == numpy_dtype_named(dt.name)


def is_float_array(array: np.ndarray) -> bool:
    """Whether ``array`` holds floats: numpy's own or an ml_dtypes float type (bf16).

    Args:
        array: A numpy array.

    Returns:
        True for a float array.
    """
    return array.dtype.kind == "f" or is_extension_type(array.dtype)  # the tables' ml_dtypes types are floats


_K = TypeVar("_K")
_V = TypeVar("_V")


class ResolvedTable(Mapping[_K, _V]):
    """A read-only mapping whose values are computed from their description on first access.

    Args:
        described: Each key's description.
        resolve: Computes a value from its description (once per key).
    """

    def __init__(self, described: dict[_K, Any], resolve: Callable[[Any], _V]) -> None:
        self._described, self._resolve = described, resolve
        self._done: dict[_K, _V] = {}

    def __getitem__(self, key: _K) -> _V:
        try:
            return self._done[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._done[key] = self._resolve(self._described[key])
            return value  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._described)

    def __len__(self) -> int:
        return len(self._described)


_UNIT_NUMPY: Mapping[str, np.dtype] = ResolvedTable({n: i.numpy for n, i in DTYPE_INFO.items() if i.numpy is not None}, numpy_dtype_named)
_BOOL_NUMPY: Mapping[str, np.dtype] = ResolvedTable({n: i.numpy for n, i in BOOL_STORE_INFO.items() if i.numpy is not None}, numpy_dtype_named)
_QFLOAT_NUMPY = np.dtype("u1")
UNIT_SIZES: dict[str, int | None] = {name: info.size for name, info in DTYPE_INFO.items()}
"""DType variant → element size (None for Bool and QFloat, whose size depends on the payload)."""
_BOOL_SIZES = {name: info.size for name, info in BOOL_STORE_INFO.items()}
NATIVE_BOOL = DType.Bool(BoolStore.Native)
"""What a bool array of numpy or torch becomes."""


def element_size(dtype: DType) -> int | None:
    """Bytes per element.

    Args:
        dtype: A Burn dtype.

    Returns:
        The element size, or None for QFloat (bit-packed values plus inline scales).
    """
    size = UNIT_SIZES[dtype.variant]
    if size is None and isinstance(dtype.value, BoolStore):
        return _BOOL_SIZES[dtype.value.value]
    return size


def unconstructible(dtype: DType) -> str | None:
    """Why no Burn writer can construct ``dtype`` though Burn's reader decodes it.

    A QFloat block size comes only from cubecl's ``BlockSize::new``: leading 1s stripped, at
    most 5 dims kept, unused storage slots 1 (format.md §3.1); deserialization keeps any value.

    Args:
        dtype: A Burn dtype.

    Returns:
        The reason, or None when a Burn writer can construct it.
    """
    block = getattr(dtype.value, "block", None) if dtype.is_quantized else None
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

    Args:
        dtype: A Burn dtype.

    Returns:
        The numpy dtype.
    """
    if dtype.value is None:
        return _UNIT_NUMPY[dtype.variant]
    if isinstance(dtype.value, BoolStore):
        return _BOOL_NUMPY[dtype.value.value]
    return _QFLOAT_NUMPY


def _first_by(key: str) -> dict[Any, DType]:
    """Library name → the first unit DType with that name (F32 before Flex32)."""
    out: dict[Any, DType] = {}
    for name, info in DTYPE_INFO.items():
        value = getattr(info, key)
        if value is not None and name in DType.UNIT_VARIANTS:
            out.setdefault(value, getattr(DType, name))
    return out


EXTENSION_DTYPES: tuple[DType, ...] = tuple(
    getattr(DType, name) for name, info in DTYPE_INFO.items() if info.numpy in NUMPY_EXTENSION_TYPES and name in DType.UNIT_VARIANTS
)
"""The dtypes whose numpy type comes from ml_dtypes (BF16): a ``.npy`` file holds them as raw items."""

_FROM_NUMPY: dict[Any, DType] = {numpy_dtype_named(k): v for k, v in _first_by("numpy").items() if k not in NUMPY_EXTENSION_TYPES}
_FROM_NUMPY[np.dtype("?")] = NATIVE_BOOL
_FROM_ML_DTYPES = {k: v for k, v in _first_by("numpy").items() if k in NUMPY_EXTENSION_TYPES}
_FROM_SAFETENSORS = {**_first_by("safetensors"), DTYPE_INFO[NATIVE_BOOL.variant].safetensors: NATIVE_BOOL}
_FROM_TORCH_NAME = {**_first_by("torch"), DTYPE_INFO[NATIVE_BOOL.variant].torch: NATIVE_BOOL}


def dtype_from_numpy(dt: np.dtype) -> DType:
    """The Burn dtype for a numpy dtype of either byte order.

    Args:
        dt: A numpy dtype.

    Returns:
        The Burn dtype.

    Raises:
        ValueError: No Burn dtype fits.
    """
    little = dt.newbyteorder("<") if dt.byteorder == ">" else dt
    try:
        return _FROM_NUMPY[little]
    except KeyError:
        if dt.name in _FROM_ML_DTYPES and is_extension_type(dt):
            return _FROM_ML_DTYPES[dt.name]
        raise ValueError(f"numpy dtype {dt} has no burnpack equivalent") from None


def safetensors_code(dtype: DType) -> str | None:
    """The safetensors dtype code a tensor of ``dtype`` is written as.

    Args:
        dtype: A Burn dtype.

    Returns:
        The code (``F32``, ``BF16``, …), or None when safetensors has none.
    """
    return DTYPE_INFO[dtype.variant].safetensors


def dtype_from_safetensors(code: str) -> DType:
    """The Burn dtype for a safetensors dtype code.

    Args:
        code: A safetensors dtype code (``F32``, ``BF16``, …).

    Returns:
        The Burn dtype.

    Raises:
        ValueError: No Burn dtype fits.
    """
    try:
        return _FROM_SAFETENSORS[code]
    except KeyError:
        raise ValueError(f"safetensors dtype {code} has no burnpack equivalent") from None


def torch_dtype(dtype: DType) -> TorchDType:
    """The torch dtype a tensor of ``dtype`` becomes (any Bool store: ``torch.bool``).

    Args:
        dtype: A Burn dtype.

    Returns:
        The torch dtype.

    Raises:
        ValueError: The dtype is QFloat, or the installed torch lacks it (old torch: uint16-64).
    """
    import torch

    name = DTYPE_INFO[dtype.variant].torch
    if name is None or not hasattr(torch, name):
        raise ValueError(f"torch {torch.__version__} has no dtype for {debug(dtype)}")
    torch_type: TorchDType = getattr(torch, name)
    return torch_type


def dtype_from_torch(dtype: TorchDType | str) -> DType:
    """The Burn dtype for a torch dtype, or for its name.

    Args:
        dtype: A torch dtype, or its name (``"torch.float32"``).

    Returns:
        The Burn dtype.

    Raises:
        ValueError: No Burn dtype fits.
    """
    name = str(dtype).removeprefix("torch.")
    try:
        return _FROM_TORCH_NAME[name]
    except KeyError:
        raise ValueError(f"torch dtype {dtype} has no Burn equivalent") from None


debug = debug_DType
"""Rust's ``{:?}`` of a DType, as in Burn's error messages (``F32``, ``Bool(U32)``)."""


UNIT_VIEW_SPECS: Mapping[str, tuple[int, np.dtype]] = ResolvedTable(
    {
        name: (size, DTYPE_INFO[name].numpy)
        for name, size in UNIT_SIZES.items()
        if size is not None and not (_BIG_ENDIAN_HOST and DTYPE_INFO[name].numpy in NUMPY_EXTENSION_TYPES)
    },  # ml_dtypes' types are native-endian only
    lambda spec: (spec[0], numpy_dtype_named(spec[1])),
)
"""Unit dtypes whose bytes numpy views in place: variant → (element size, numpy dtype)."""


def view_bytes_as(buffer: memoryview | bytes | bytearray | np.ndarray, offset: int, count: int, dtype: np.dtype) -> np.ndarray:
    """A zero-copy 1-D view of ``count`` elements at ``offset`` (ml_dtypes types such as bf16 are
    byte-swapped on big-endian hosts).

    Args:
        buffer: Any buffer.
        offset: The first element's byte offset.
        count: How many elements.
        dtype: Their numpy dtype.

    Returns:
        The 1-D array.
    """
    if _BIG_ENDIAN_HOST and dtype.itemsize > 1 and is_extension_type(dtype):
        return np.frombuffer(buffer, f"<u{dtype.itemsize}", count, offset).astype(f"=u{dtype.itemsize}").view(dtype)
    return np.frombuffer(buffer, dtype, count, offset)


def describe(scheme: QuantScheme) -> str:
    """A short human form of a scheme: ``Q8S block 32 F16``, ``Q4S packed u32 block 4x32 UE4M3 + tensor F32``.

    Also exported by ``burnpack.quant``, where QFloat users look for it.

    Args:
        scheme: The quantization scheme.

    Returns:
        The description.
    """
    parts = [scheme.value.name]
    store = scheme.store
    if store.is_packed_u32:
        parts.append("packed u32" + (f" dim {store.value}" if store.value else ""))
    elif store.is_packed_native:
        parts.append("packed native" + (f" dim {store.value}" if store.value else ""))
    if scheme.mode is QuantMode.Lookup:
        parts.append("lookup")
    if scheme.block is not None:
        size = scheme.block.size
        dims = list(size.storage[: size.len]) if size.len <= len(size.storage) else list(size.storage)
        parts.append(f"block {'x'.join(map(str, dims))} {scheme.block.dtype.name}")
        if scheme.tensor is not None:
            parts.append(f"+ tensor {scheme.tensor.name}")
    else:
        parts.append(f"tensor {(scheme.tensor or ScaleDtype.F32).name}")
    return " ".join(parts)


def dtype_label(dtype: DType) -> str:
    """A dtype's short human name: ``F32``, ``Bool(U8)`` (its ``debug``), ``QFloat(Q8S block 32 F16)``.

    Also exported by ``burnpack.quant``.

    Args:
        dtype: The dtype.

    Returns:
        The name.
    """
    if isinstance(dtype.value, QuantScheme):
        return f"QFloat({describe(dtype.value)})"
    return debug(dtype)
