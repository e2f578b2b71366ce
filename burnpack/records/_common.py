"""Pieces every record kind shares: tensors, param ids, scalar conversions, Rust renderings."""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._cbor import rust_debug_str
from .._generated.types import DType, Scalar
from ..dtypes import dtype_from_numpy, element_size, numpy_dtype, view_bytes_as
from ..errors import ValidationError
from ..frameworks import as_numpy
from ..reader import Pack, PathLike, load
from ..writer import Tensor

from .._generated.layout import I64_MAX, I64_MIN, U64_MAX

# Rust integer types → (min, max); what `TryFrom<Scalar>` accepts (burn-pack base.rs:203-229).
INT_RANGES: dict[str, tuple[int, int]] = {
    "u8": (0, (1 << 8) - 1),
    "u16": (0, (1 << 16) - 1),
    "u32": (0, (1 << 32) - 1),
    "u64": (0, U64_MAX),
    "usize": (0, U64_MAX),
    "i8": (-(1 << 7), (1 << 7) - 1),
    "i16": (-(1 << 15), (1 << 15) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1),
    "i64": (I64_MIN, I64_MAX),
    "isize": (I64_MIN, I64_MAX),
}
"""Rust's ``usize``/``isize`` are 64-bit here, as on every platform Burn trains on."""


def new_param_id(taken: set[int] | None = None) -> int:
    """A random u64, as Burn's ``ParamId::new`` draws one; never one of ``taken``."""
    while True:
        value = secrets.randbits(64)
        if taken is None or value not in taken:
            if taken is not None:
                taken.add(value)
            return value


def parse_u64(text: str) -> int | None:
    """Rust's ``text.parse::<u64>()``: optional ``+``, ASCII digits only, no overflow; else None."""
    digits = text[1:] if text.startswith("+") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(digits)
    return value if value <= U64_MAX else None


def scalar_for(rust_type: str, value: Any) -> Scalar:
    """The ``Scalar`` Burn writes for a field of ``rust_type`` (``From<T> for Scalar``)."""
    if rust_type == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise ValidationError(f"{value!r} is not a bool")
        return Scalar.Bool(bool(value))
    if rust_type in ("f32", "f64"):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValidationError(f"{value!r} is not a number")
        number = float(value)
        if rust_type == "f32":
            number = float(np.float32(number))
        return Scalar.Float(number)
    lo, hi = INT_RANGES[rust_type]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ValidationError(f"{value!r} does not fit the Rust type {rust_type}")
    return Scalar.UInt(int(value)) if rust_type.startswith("u") else Scalar.Int(int(value))


def scalar_value(rust_type: str, scalar: Scalar | None) -> Any:
    """Burn's ``TryFrom<Scalar>`` for ``rust_type``: the value, or None where Burn gets an error.

    Integers accept ``Int`` and ``UInt`` in range; ``f64``/``f32`` accept ``Float``, ``Int`` and
    ``UInt``; ``bool`` only ``Bool``.
    """
    if scalar is None:
        return None
    value = scalar.value
    if rust_type == "bool":
        return value if scalar.is_bool else None
    integer = scalar.is_int or scalar.is_uint
    if rust_type in ("f32", "f64"):
        if not (scalar.is_float or integer):
            return None
        number = float(value)
        return float(np.float32(number)) if rust_type == "f32" else number
    if not integer:
        return None
    lo, hi = INT_RANGES[rust_type]
    return value if lo <= value <= hi else None


def rust_debug_list(items: Iterable[str]) -> str:
    """Rust's ``{:?}`` of a ``Vec<String>``: ``["a", "b"]``."""
    return "[" + ", ".join(rust_debug_str(item) for item in items) + "]"


def shape_debug(shape: Iterable[int]) -> str:
    """Burn's ``{:?}`` of a ``Shape`` (cubecl-zspace derives Debug): ``Shape { dims: [2, 3] }``."""
    return "Shape { dims: [" + ", ".join(str(d) for d in shape) + "] }"


class RecordTensor:
    """One tensor of a record: its name, ``param_id``, dtype, shape and data.

    Data read from a file stays a zero-copy view of the file until asked for; data given as an
    array keeps that array. ``numpy()`` returns the elements (QFloat: its raw ``uint8`` bytes).
    """

    __slots__ = ("name", "param_id", "dtype", "shape", "_array", "_raw")

    def __init__(
        self,
        name: str,
        dtype: DType,
        shape: Iterable[int],
        data: np.ndarray | memoryview | bytes,
        *,
        param_id: int | None = None,
    ) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)
        self.param_id = None if param_id is None else int(param_id)
        if isinstance(data, np.ndarray):
            self._array, self._raw = data, None
        else:
            self._array, self._raw = None, memoryview(data).cast("B")

    @classmethod
    def from_array(cls, name: str, array: Any, *, param_id: int | None = None, dtype: DType | None = None) -> RecordTensor:
        """A tensor from an array-like; the dtype follows numpy unless given (Flex32, Bool(U8), ...)."""
        array = as_numpy(array)
        if dtype is not None and element_size(dtype) is None:
            raise ValidationError(
                f"tensor '{name}': give QFloat data as a RecordTensor (its bytes do not have its logical shape)"
            )
        if dtype is None:
            try:
                dtype = dtype_from_numpy(array.dtype)
            except ValueError as exc:
                raise ValidationError(f"tensor '{name}': {exc}") from None
        else:
            want = numpy_dtype(dtype)
            if element_size(dtype) is not None and array.dtype != want:
                array = array.astype(want)
        return cls(name, dtype, array.shape, array, param_id=param_id)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def with_name(self, name: str, *, param_id: int | None = None) -> RecordTensor:
        """The same data under another name (and id, when given)."""
        twin = RecordTensor.__new__(RecordTensor)
        twin.name, twin.dtype, twin.shape = name, self.dtype, self.shape
        twin.param_id = self.param_id if param_id is None else int(param_id)
        twin._array, twin._raw = self._array, self._raw
        return twin

    def __repr__(self) -> str:
        return f"RecordTensor({self.name!r}, {self.dtype!r}, shape={list(self.shape)}, param_id={self.param_id})"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def byte_len(self) -> int:
        if self._raw is not None:
            return self._raw.nbytes
        size = element_size(self.dtype)
        return self._array.nbytes if size is None else self.numel * size

    def numpy(self) -> np.ndarray:
        """The elements as an array of this tensor's shape (no copy for file data)."""
        if self._array is not None:
            return self._array
        np_dtype = numpy_dtype(self.dtype)
        size = element_size(self.dtype)
        if size is None:
            return view_bytes_as(self._raw, 0, self._raw.nbytes, np_dtype)
        if self._raw.nbytes != self.numel * size:
            raise ValidationError(
                f"tensor '{self.name}' holds {self._raw.nbytes} bytes but its shape {list(self.shape)} and dtype "
                f"{self.dtype.variant} need {self.numel * size}"
            )
        return view_bytes_as(self._raw, 0, self.numel, np_dtype).reshape(self.shape)

    def tobytes(self) -> bytes:
        """The little-endian bytes as written to a file."""
        if self._raw is not None:
            return bytes(self._raw)
        return self.writer_tensor().tobytes()

    def writer_tensor(self) -> Tensor:
        """This tensor as the format layer's ``Tensor`` (bytes are not copied)."""
        if self._raw is not None:
            return Tensor(self.name, self.dtype, self.shape, self._raw, param_id=self.param_id)
        if element_size(self.dtype) is None:  # QFloat: raw bytes, logical shape
            return Tensor(self.name, self.dtype, self.shape, self._array.reshape(-1).view(np.uint8), param_id=self.param_id)
        array = self._array
        if array.dtype != numpy_dtype(self.dtype):
            array = array.astype(numpy_dtype(self.dtype))
        return Tensor(self.name, self.dtype, self.shape, array, param_id=self.param_id)

    def same_content(self, other: RecordTensor) -> bool:
        """Equal name, id, dtype, shape and bytes."""
        return (
            self.name == other.name
            and self.param_id == other.param_id
            and self.dtype == other.dtype
            and self.shape == other.shape
            and self.tobytes() == other.tobytes()
        )


def pack_tensors_in_data_order(pack: Pack) -> list[RecordTensor]:
    """Every tensor of ``pack`` (Burn's ``into_tensors`` checks), in the order of its data.

    Burn returns them by name; keeping the data order instead is what lets a loaded record
    re-save byte for byte (the MNIST file's data follows the module's field order).
    """
    views = pack.tensors()
    views.sort(key=lambda v: (v.data_offsets[0], v.data_offsets[1]))
    return [RecordTensor(v.name, v.dtype, v.shape, v.memoryview(), param_id=v.param_id) for v in views]


def open_pack(source: PathLike | bytes | bytearray | memoryview) -> Pack:
    """Open a record source: a path (``.bpk`` appended as Burn's reader does) or bytes."""
    return load(source)

