"""Writing burnpack files exactly as Burn's ``Writer`` does (crates/burn-pack/src/writer.rs).

Tensor data is laid out in the order the tensors are given, each start rounded up to 256 bytes;
the metadata map is sorted by name. Everything is planned (and every error raised) before the
first byte is written; deferred tensors are produced one at a time while writing.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ._generated.layout import (
    FORMAT_VERSION,
    HEADER,
    MAGIC,
    MAX_METADATA_SIZE,
    MAX_TENSOR_COUNT,
    MAX_TENSOR_SIZE,
    TENSOR_ALIGNMENT,
    data_section_start,
)
from ._generated.types import DTYPE_TABLE, DType, Scalar
from .atomic import atomic_file
from .dtypes import debug, dtype_from_numpy, element_size, unconstructible
from .errors import BurnpackError, IoError, MetadataSerializationError, TensorBytesSizeMismatch, ValidationError
from ._generated.codec import encode_TensorDescriptor_entry
from .metadata import encode_metadata_entries
from .quant import QuantizedTensor
from .reader import has_extension

U64_MAX = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
_ZEROS = bytes(TENSOR_ALIGNMENT)  # every padding run is shorter than the alignment
_BIG_ENDIAN_HOST = sys.byteorder == "big"
_UNIT_SIZES = {name: size for name, (size, _) in DTYPE_TABLE.items()}
_CHUNK = 8 << 20
_SMALL = 64 << 10  # tensors below this size are copied into the current chunk
PathLike = str | os.PathLike[str]
BytesLike = bytes | bytearray | memoryview


class Tensor:
    """One tensor to write: name, dtype, shape, optional param id, and its bytes or a provider.

    Build it with ``Tensor.from_numpy`` (any layout or byte order; written C-order little-endian),
    ``Tensor(name, dtype, shape, data)`` for raw little-endian bytes, or ``Tensor.deferred`` for a
    callable that produces the bytes only when the writer reaches this tensor.
    """

    __slots__ = ("name", "dtype", "shape", "param_id", "byte_len", "_data", "_provider")

    def __init__(
        self,
        name: str,
        dtype: DType,
        shape: Iterable[int],
        data: BytesLike | np.ndarray,
        *,
        param_id: int | None = None,
    ) -> None:
        self._init(name, dtype, shape, param_id)
        if isinstance(data, np.ndarray):
            data = _le_c_bytes(data)
        self._data = memoryview(data).cast("B")
        self._provider = None
        self.byte_len = self._data.nbytes

    @classmethod
    def from_numpy(cls, name: str, array: Any, *, param_id: int | None = None, dtype: DType | None = None) -> Tensor:
        """A tensor from an array-like; the dtype follows numpy unless given (e.g. Flex32, Bool(U8))."""
        array = np.asarray(array)
        if dtype is None:
            try:
                dtype = dtype_from_numpy(array.dtype)
            except ValueError as exc:
                raise ValidationError(f"tensor '{name}': {exc}") from None
        tensor = cls.__new__(cls)
        tensor._init(name, dtype, array.shape, param_id, numpy_shape=True)
        tensor._data = _le_c_bytes(array)
        tensor._provider = None
        tensor.byte_len = tensor._data.nbytes
        return tensor

    @classmethod
    def deferred(
        cls,
        name: str,
        dtype: DType,
        shape: Iterable[int],
        byte_len: int,
        provider: Callable[[], BytesLike | np.ndarray],
        *,
        param_id: int | None = None,
    ) -> Tensor:
        """A tensor whose bytes come from ``provider()``, called once, while its data is written."""
        tensor = cls.__new__(cls)
        tensor._init(name, dtype, shape, param_id)
        if type(byte_len) is not int or byte_len < 0:
            raise ValidationError(f"tensor '{name}': byte_len must be a non-negative int, got {byte_len!r}")
        tensor.byte_len = byte_len
        tensor._data = None
        tensor._provider = provider
        return tensor

    def _init(self, name: str, dtype: DType, shape: Iterable[int], param_id: int | None, *, numpy_shape: bool = False) -> None:
        if type(name) is not str:
            raise ValidationError(f"tensor name must be a str, got {type(name).__name__}")
        if not name.isascii():
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                raise ValidationError(f"tensor name {name!r} is not valid Unicode (lone surrogate)") from None
        if not isinstance(dtype, DType):
            raise ValidationError(f"tensor '{name}': dtype must be a burnpack.DType, got {dtype!r}")
        if not numpy_shape:  # a numpy shape is already a tuple of non-negative ints
            shape = tuple(shape)
            if not all(type(dim) is int and 0 <= dim <= U64_MAX for dim in shape):
                shape = tuple(map(_u64_dim(name, shape), shape))
        if param_id is not None:
            if not isinstance(param_id, (int, np.integer)) or not 0 <= param_id <= U64_MAX:
                raise ValidationError(f"tensor '{name}': param_id {param_id!r} is not a u64")
            param_id = int(param_id)
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.param_id = param_id

    def __repr__(self) -> str:
        kind = "deferred" if self._provider is not None else "resident"
        return f"Tensor({self.name!r}, {self.dtype!r}, shape={list(self.shape)}, {self.byte_len} bytes {kind})"

    def to_bytes(self) -> memoryview:
        """The tensor's bytes (a deferred tensor runs its provider on every call)."""
        if self._provider is None:
            return self._data
        data = self._provider()
        if isinstance(data, np.ndarray):
            data = _le_c_bytes(data)
        return memoryview(data).cast("B")


def _u64_dim(name: str, shape: tuple) -> Callable[[Any], int]:
    def check(dim: Any) -> int:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise ValidationError(f"tensor '{name}': shape {list(shape)} must hold ints")
        if not 0 <= dim <= U64_MAX:
            raise ValidationError(f"tensor '{name}': dimension {dim} is outside 0..2^64-1")
        return int(dim)

    return check


def _le_c_bytes(array: np.ndarray) -> memoryview:
    """The array's elements as C-order little-endian bytes, without copying when already so."""
    dtype = array.dtype
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and _BIG_ENDIAN_HOST and dtype.itemsize > 1):
        array = array.astype(dtype.newbyteorder("<"))
    try:
        return memoryview(array).cast("B")  # C-contiguous arrays of buffer-exportable dtypes
    except (TypeError, ValueError, BufferError):
        array = np.ascontiguousarray(array)
        return memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")


def as_scalar(name: str, value: Any) -> Scalar:
    """A Scalar from a Scalar or a plain bool / float / i64 int, checked to fit its kind."""
    if isinstance(value, Scalar):
        _check_scalar(name, value)
        return value
    if isinstance(value, (bool, np.bool_)):
        return Scalar.Bool(bool(value))
    if isinstance(value, (float, np.floating)):
        return Scalar.Float(float(value))
    if isinstance(value, (int, np.integer)) and I64_MIN <= value <= I64_MAX:
        return Scalar.Int(int(value))
    raise ValidationError(f"scalar '{name}': {value!r} is not a Scalar, bool, float or i64 int (use Scalar.UInt for u64)")


def _check_scalar(name: str, scalar: Scalar) -> None:
    kind, value = scalar.variant, scalar.value
    ok = {
        "Int": lambda: type(value) is int and I64_MIN <= value <= I64_MAX,
        "UInt": lambda: type(value) is int and 0 <= value <= U64_MAX,
        "Float": lambda: type(value) is float,
        "Bool": lambda: type(value) is bool,
    }[kind]()
    if not ok:
        raise ValidationError(f"scalar '{name}': {value!r} does not fit Scalar.{kind}")


class Writer:
    """A planned burnpack: tensors in data order, user metadata and typed scalars.

    ``size()`` is known before anything is produced; ``to_bytes``, ``write_into``, ``write`` and
    ``write_atomic`` all produce the same bytes.
    """

    def __init__(
        self,
        tensors: Iterable[Tensor] = (),
        *,
        metadata: Mapping[str, str] | None = None,
        scalars: Mapping[str, Any] | None = None,
    ) -> None:
        self.tensors = list(tensors)
        self.metadata: dict[str, str] = {}
        self.scalars: dict[str, Scalar] = {}
        self._plan: tuple[bytes, list[int], int] | None = None
        for key, value in (metadata or {}).items():
            self.with_metadata(key, value)
        for key, value in (scalars or {}).items():
            self.with_scalar(key, value)

    def with_metadata(self, key: str, value: str) -> Writer:
        """Add one metadata entry (a later value for the same key wins, as in Burn)."""
        if type(key) is not str or type(value) is not str:
            raise ValidationError(f"metadata entries must be str → str, got {key!r}: {value!r}")
        self.metadata[key] = value
        self._plan = None
        return self

    def with_scalar(self, key: str, value: Any) -> Writer:
        """Add one typed scalar (a later value for the same key wins, as in Burn)."""
        if type(key) is not str:
            raise ValidationError(f"scalar names must be str, got {key!r}")
        self.scalars[key] = as_scalar(key, value)
        self._plan = None
        return self

    # -- planning ----------------------------------------------------------------------------
    def plan(self) -> tuple[bytes, list[int], int]:
        """(metadata bytes, data-section start of each tensor, data-section size); raises before I/O."""
        if self._plan is None:
            # Burn's writer has no limits, but its reader refuses what exceeds them: refuse here.
            if len(self.tensors) > MAX_TENSOR_COUNT:
                raise ValidationError(
                    f"{len(self.tensors)} tensors exceed the maximum of {MAX_TENSOR_COUNT} a reader accepts"
                )
            entries: dict[str, bytes] = {}
            starts: list[int] = []
            offset = 0
            for tensor in self.tensors:
                _check_byte_len(tensor)
                if tensor.byte_len > MAX_TENSOR_SIZE:
                    raise ValidationError(
                        f"tensor '{tensor.name}' of {tensor.byte_len} bytes exceeds the maximum of "
                        f"{MAX_TENSOR_SIZE} bytes a reader accepts"
                    )
                start = -(-offset // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT
                end = start + tensor.byte_len
                if end > U64_MAX:
                    raise IoError(f"Tensor offset overflow: {start} + {tensor.byte_len} exceeds maximum")
                name = tensor.name
                if name in entries:
                    raise ValidationError(f"Duplicate tensor name '{name}'")
                try:
                    entries[name] = encode_TensorDescriptor_entry(name, tensor.dtype, tensor.shape, (start, end), tensor.param_id)
                except (TypeError, ValueError, AttributeError, OverflowError) as exc:
                    raise MetadataSerializationError(f"tensor '{name}': cannot encode its descriptor: {exc}") from None
                starts.append(start)
                offset = end
            blob = encode_metadata_entries(entries, self.metadata, self.scalars)
            if len(blob) > MAX_METADATA_SIZE:
                raise ValidationError(
                    f"Metadata size {len(blob)} exceeds the maximum of {MAX_METADATA_SIZE} bytes a reader accepts"
                )
            self._plan = (blob, starts, offset)
        return self._plan

    def size(self) -> int:
        """Total file size in bytes, without producing any deferred tensor."""
        blob, _, data_size = self.plan()
        return data_section_start(len(blob)) + data_size

    # -- output ------------------------------------------------------------------------------
    def _chunks(self) -> Iterable[BytesLike]:
        """The file's bytes in order; deferred tensors are produced (and dropped) one at a time.

        Small tensors and the padding between them are gathered into one chunk, so that many tiny
        tensors cost one write rather than two each.
        """
        blob, starts, _ = self.plan()
        batch = bytearray(HEADER.pack(MAGIC, FORMAT_VERSION, len(blob)))
        batch += blob
        batch += _ZEROS[: data_section_start(len(blob)) - HEADER.size - len(blob)]
        position = 0
        for tensor, start in zip(self.tensors, starts):
            batch += _ZEROS[: start - position]  # at most 255 bytes between tensors
            if tensor._provider is not None and batch:  # stream what is ready before running a provider
                yield batch
                batch = bytearray()
            data = _produce(tensor)
            if data.nbytes < _SMALL:
                batch += data
            else:
                yield batch
                batch = bytearray()
                for i in range(0, data.nbytes, _CHUNK):
                    yield data[i : i + _CHUNK]
            position = start + data.nbytes
            del data
            if len(batch) >= _CHUNK:
                yield batch
                batch = bytearray()
        yield batch

    def to_bytes(self) -> bytes:
        """The whole file in memory."""
        out = bytearray(self.size())
        self.write_into(out)
        return bytes(out)

    def write_into(self, buffer: bytearray | memoryview) -> int:
        """Write into a caller's buffer of at least ``size()`` bytes; returns the bytes written."""
        need = self.size()
        view = memoryview(buffer).cast("B")
        if view.readonly:
            raise IoError("Buffer is read-only")
        if view.nbytes < need:
            raise IoError(f"Buffer too small: need {need} bytes, got {view.nbytes} bytes")
        position = 0
        for chunk in self._chunks():
            n = len(chunk) if not isinstance(chunk, memoryview) else chunk.nbytes
            view[position : position + n] = chunk
            position += n
            del chunk  # let a finished deferred tensor go before the next one is produced
        return position

    def write_stream(self, stream: BinaryIO) -> int:
        """Write to an open binary stream; returns the bytes written."""
        size = self.size()
        stream.writelines(self._chunks())  # holds one chunk at a time: deferred tensors go as soon as written
        return size

    def write(self, path: PathLike) -> Path:
        """Write to ``path`` (``.bpk`` appended when it has no extension), replacing the file.

        The bytes go to a scratch file that then replaces ``path`` (a new inode): a reader with
        the old file mapped keeps its bytes, and a failure leaves the old file. Burn's
        ``write_to_file`` truncates in place instead. Unlike ``write_atomic`` nothing is fsynced.
        """
        return self._replace(path, durable=False)

    def write_atomic(self, path: PathLike) -> Path:
        """``write``, with the file and its directory fsynced before returning (survives power loss)."""
        return self._replace(path, durable=True)

    def _replace(self, path: PathLike, *, durable: bool) -> Path:
        target = resolve_write_path(path)
        self.plan()
        try:
            with atomic_file(target, durable=durable) as stream:
                self.write_stream(stream)
        except OSError as exc:
            raise IoError(f"{exc.strerror} (os error {exc.errno})", where=str(target)) from None
        return target


def _check_byte_len(tensor: Tensor) -> None:
    dtype = tensor.dtype
    why = unconstructible(dtype)
    if why:
        raise ValidationError(f"tensor '{tensor.name}': {why}")
    size = _UNIT_SIZES[dtype.variant] if dtype.value is None else element_size(dtype)
    if size is None:  # QFloat: bit-packed values plus inline scales, not shape × size
        return
    expected = math.prod(tensor.shape) * size
    if expected > U64_MAX:
        raise ValidationError(
            f"tensor '{tensor.name}': {math.prod(tensor.shape)} elements ({expected} bytes) is 2^64 or more; Burn's "
            "release build wraps the count and writes the file, burnpack refuses it"
        )
    if tensor.byte_len != expected:
        shape = "[" + ", ".join(map(str, tensor.shape)) + "]"
        raise ValidationError(
            f"tensor '{tensor.name}' declares {tensor.byte_len} bytes but its shape {shape} and dtype "
            f"{debug(tensor.dtype)} need {expected}"
        )


def _produce(tensor: Tensor) -> memoryview:
    try:
        data = tensor.to_bytes()
    except BurnpackError:
        raise
    except Exception as exc:
        raise IoError(f"tensor '{tensor.name}': {exc}") from exc
    if data.nbytes != tensor.byte_len:
        raise TensorBytesSizeMismatch(
            f"tensor '{tensor.name}': deferred source has inconsistent length "
            f"(expected {tensor.byte_len}, got {data.nbytes})"
        )
    return data


def resolve_write_path(path: PathLike) -> Path:
    """Burn's writer rule: append ``.bpk`` when the path has no extension (Rust semantics)."""
    p = Path(path)
    if p.name in ("", ".."):  # Rust's file_name() is None: nothing appended, and creating it fails
        return p
    return p if has_extension(p) else p.with_name(p.name + ".bpk")


def save(
    tensors: Mapping[str, Any] | Iterable[Tensor],
    path: PathLike,
    *,
    metadata: Mapping[str, str] | None = None,
    scalars: Mapping[str, Any] | None = None,
) -> Path:
    """Save tensors (a name → array mapping in data order, or ``Tensor`` objects) atomically."""
    return Writer(_as_tensors(tensors), metadata=metadata, scalars=scalars).write_atomic(path)


def save_bytes(
    tensors: Mapping[str, Any] | Iterable[Tensor],
    *,
    metadata: Mapping[str, str] | None = None,
    scalars: Mapping[str, Any] | None = None,
) -> bytes:
    """The file ``save`` would write, as bytes."""
    return Writer(_as_tensors(tensors), metadata=metadata, scalars=scalars).to_bytes()


def _mapping_tensor(name: str, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, QuantizedTensor):  # a QFloat tensor: its payload, in the logical shape
        return Tensor(name, value.dtype, value.shape, value.to_bytes())
    return Tensor.from_numpy(name, value)


def _as_tensors(tensors: Mapping[str, Any] | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(tensors, Mapping):
        return [_mapping_tensor(name, t) for name, t in tensors.items()]
    out = list(tensors)
    for t in out:
        if not isinstance(t, Tensor):
            raise ValidationError(f"expected burnpack.Tensor objects or a name → array mapping, got {type(t).__name__}")
    return out
