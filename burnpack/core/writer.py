"""Writing burnpack files exactly as Burn's ``Writer`` does (crates/burn-pack/src/writer.rs).

Tensor data is laid out in the order the tensors are given, each start rounded up to 256 bytes;
the metadata map is sorted by name. Everything is planned (and every error raised) before the
first byte is written; deferred tensors are produced one at a time while writing. A tensor whose
bytes are a ``FileRange`` goes from its file to an output file in the kernel
(``os.copy_file_range``), never through Python; other outputs read it. A tensor made in ``Bands``
is made a band at a time into small reused buffers, never whole; into a file, one band is written
from a second thread while the next is made.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import accumulate, repeat
from operator import add, attrgetter, sub
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from ..codec._cbor import I64_MAX, I64_MIN, U64_MAX
from ..codec._generated.layout import (
    FORMAT_VERSION,
    HEADER,
    MAGIC,
    MAX_METADATA_SIZE,
    MAX_TENSOR_COUNT,
    MAX_TENSOR_SIZE,
    METADATA_SIZE_FIELD_MAX,
    TENSOR_ALIGNMENT,
    data_section_start,
)
from ..codec._generated.metadata import DType, Scalar, TensorDescriptor_layout
from .atomic import atomic_file, preallocate
from .dtypes import UNIT_SIZES, ArrayData, debug, dtype_from_numpy, element_size
from ..errors import BurnpackError, IoError, MetadataSerializationError, TensorBytesSizeMismatch, ValidationError
from .metadata import encode_metadata_columns
from .paths import PathLike, resolve_write_path
from .quant import QuantizedTensor
from .tensor import HELD, Bands, BytesLike, FileRange, Tensor, gc_paused, read_at

__all__ = ["Bands", "FileRange", "Plan", "ScalarLike", "Tensor", "Writer", "as_scalar", "resolve_write_path", "save", "save_bytes"]

ScalarLike = Scalar | bool | int | float
"""A scalar as a caller gives it: a typed ``Scalar``, or a plain bool, float or i64 int."""

_COLUMNS = attrgetter("name", "byte_len", "param_id", "dtype", "shape")
"""The tensor fields a plan reads, as columns."""
_IN_MEMORY = attrgetter("_data")
"""A tensor's bytes when they are in memory (a tensor without a provider), else None."""
_ZEROS = bytes(TENSOR_ALIGNMENT)  # every padding run is shorter than the alignment
_CHUNK = 8 << 20
_SMALL = 64 << 10  # tensors below this size are copied into the current chunk
_PIECE = 64 << 10
"""The most bytes one write into a file takes: what the kernel's own copy (``copy_file_range``,
through a 64 KiB pipe) moves at a time. A larger write has the page cache allocate larger folios,
from the free lists of large blocks; on a virtual machine that hands its free memory back to the
host (free page reporting), those must first be faulted in again by the host, which can make
megabyte writes several times slower than 64 KiB ones (docs/modules.md, "Speed and memory")."""
# copy_file_range cannot serve these files (another file system on old kernels, no support, an
# append-only or non-regular end): the bytes then go through Python.
_NO_KERNEL_COPY = frozenset(
    getattr(errno, name) for name in ("EXDEV", "ENOSYS", "EINVAL", "EOPNOTSUPP", "ENOTSUP", "EBADF", "ETXTBSY") if hasattr(errno, name)
)


def as_scalar(name: str, value: ScalarLike) -> Scalar:
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
    raise ValidationError(f"scalar {name!r}: {value!r} is not a Scalar, bool, float or i64 int (use Scalar.UInt for u64)")


def _check_scalar(name: str, scalar: Scalar) -> None:
    if not scalar.payload_fits():
        raise ValidationError(f"scalar {name!r}: {scalar.value!r} does not fit Scalar.{scalar.variant}")


class Plan(NamedTuple):
    """What a writer decided before writing anything."""

    metadata: bytes
    """The CBOR metadata blob."""
    starts: tuple[int, ...]
    """Each tensor's start in the data section, in data order."""
    data_size: int
    """Bytes from the data section's start to the end of the last tensor."""


class Writer:
    """A planned burnpack: tensors in data order, user metadata and typed scalars.

    ``size()`` is known before anything is produced; ``to_bytes``, ``write_into``, ``write`` and
    ``write_atomic`` all produce the same bytes. What a writer writes changes only through
    ``with_metadata`` / ``with_scalar``, which re-plan: its tensors are an immutable tuple of
    immutable ``Tensor``s, ``metadata`` and ``scalars`` read-only views.

    Args:
        tensors: The tensors, in the order their data is written.
        metadata: User metadata, string to string.
        scalars: Typed scalars (``int``, ``float``, ``bool``, ``str`` or ``Scalar`` values).
    """

    def __init__(
        self,
        tensors: Iterable[Tensor] = (),
        *,
        metadata: Mapping[str, str] | None = None,
        scalars: Mapping[str, ScalarLike] | None = None,
    ) -> None:
        self._tensors: tuple[Tensor, ...] | None = tuple(tensors)
        for tensor in self._tensors:
            if not isinstance(tensor, Tensor):
                raise ValidationError(f"expected burnpack.Tensor objects, got {type(tensor).__name__}")
        self._arrays: _ArrayColumns | None = None
        """For a writer of numpy arrays (``save``): the tensors' fields as columns, the
        ``Tensor`` objects built only when asked for."""
        self._metadata: dict[str, str] = {}
        self._scalars: dict[str, Scalar] = {}
        self._plan: Plan | None = None
        for key, text in (metadata or {}).items():
            self.with_metadata(key, text)
        for key, value in (scalars or {}).items():
            self.with_scalar(key, value)

    @classmethod
    def _of_arrays(cls, arrays: Mapping[str, Any], *, metadata: Mapping[str, str] | None, scalars: Mapping[str, ScalarLike] | None) -> Writer | None:
        """A writer of a name → numpy array mapping that reads its tensors' fields as columns;
        None when some array needs what ``Tensor.from_numpy`` does beyond viewing its bytes."""
        columns = _array_columns(arrays)
        if columns is None:
            return None
        writer = cls(metadata=metadata, scalars=scalars)
        writer._tensors, writer._arrays = None, columns
        return writer

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """The tensors, in data order."""
        if self._tensors is None:
            assert self._arrays is not None
            with gc_paused():
                self._tensors = tuple(map(Tensor.from_numpy, self._arrays.names, self._arrays.arrays))
        return self._tensors

    @property
    def metadata(self) -> Mapping[str, str]:
        """User metadata (read-only: add entries with ``with_metadata``)."""
        return MappingProxyType(self._metadata)

    @property
    def scalars(self) -> Mapping[str, Scalar]:
        """Typed scalars (read-only: add entries with ``with_scalar``)."""
        return MappingProxyType(self._scalars)

    def with_metadata(self, key: str, value: str) -> Writer:
        """Adds a metadata entry to this writer (a later value for the same key wins, as in Burn).

        The writer changes in place: its plan is dropped and worked out again when next asked
        for (``plan()``, ``size()``, any write). A ``Plan`` returned before stays what it was.

        Args:
            key: The entry's key.
            value: Its string value.

        Returns:
            This writer, so that calls chain (``Writer(t).with_metadata(k, v).write(path)``).

        Raises:
            ValidationError: The key or value is not a string.
        """
        if type(key) is not str or type(value) is not str:
            raise ValidationError(f"metadata entries must be str → str, got {key!r}: {value!r}")
        self._metadata[key] = value
        self._plan = None
        return self

    def with_scalar(self, key: str, value: ScalarLike) -> Writer:
        """Adds a typed scalar to this writer (a later value for the same key wins, as in Burn).

        The writer changes in place: its plan is dropped and worked out again when next asked
        for (``plan()``, ``size()``, any write). A ``Plan`` returned before stays what it was.

        Args:
            key: The scalar's name.
            value: An ``int``, ``float``, ``bool``, ``str`` or ``Scalar``.

        Returns:
            This writer, so that calls chain (``Writer(t).with_scalar(k, v).write(path)``).

        Raises:
            ValidationError: The key is not a string or the value has no scalar type.
        """
        if type(key) is not str:
            raise ValidationError(f"scalar names must be str, got {key!r}")
        self._scalars[key] = as_scalar(key, value)
        self._plan = None
        return self

    # -- planning ----------------------------------------------------------------------------
    def plan(self) -> Plan:
        """The layout, worked out before any I/O: metadata bytes, each tensor's data-section start, and
        the data section's size.

        Errors come in the order Burn's writer reports them (per tensor: byte length, offset
        overflow, duplicate name; then the metadata's size). What Burn's writer writes but its
        reader refuses (more than ``MAX_TENSOR_COUNT`` tensors, a tensor over ``MAX_TENSOR_SIZE``,
        metadata over ``MAX_METADATA_SIZE``) is refused too, but only once none of Burn's own
        errors applies. An element count of 2^64 or more is counted modulo 2^64, as Burn's release
        build does: Burn writes such a file and reads it back, so it is written (strict mode
        rejects it).

        Returns:
            The plan (computed once, then kept).

        Raises:
            BurnpackError: Burn's writer, or its reader, would refuse the pack.
        """
        if self._plan is None:
            with gc_paused():  # the columns are many small acyclic objects
                self._plan = self._plan_columns()
        return self._plan

    def _plan_columns(self) -> Plan:
        """The plan, computed column by column: every check over all tensors at once, the tensors
        map encoded in bulk. Where a check fails, ``_raise_first_error`` finds which error Burn
        reports first."""
        refusal: BurnpackError | None = None
        """The first limit Burn's reader enforces that this write breaks (Burn's writer has none)."""
        columns: Sequence[Sequence[Any]]
        if self._arrays is not None:
            columns = self._arrays[:5]
        elif self._tensors:
            columns = list(zip(*map(_COLUMNS, self._tensors)))
        else:
            columns = [()] * 5
        names, byte_lens, param_ids, dtypes, shapes = columns
        count = len(names)
        if count > MAX_TENSOR_COUNT:
            refusal = ValidationError(f"{count} tensors exceed the maximum of {MAX_TENSOR_COUNT} a reader accepts")
        has_param_ids = param_ids.count(None) != count
        # (id of the dtype, shape, has a param id): tensors of one kind share their entry's layout
        # bytes and the byte length their shape and dtype need. Keyed by identity: hashing a DType
        # costs more than encoding it again when two equal dtypes are distinct objects (the
        # tensors keep them alive while this runs).
        keys = list(zip(map(id, dtypes), shapes, [p is not None for p in param_ids] if has_param_ids else repeat(False)))
        try:
            kinds = {key: _kind(names[i], dtypes[i], shapes[i], param_ids[i] is not None) for key, i in dict(zip(keys, range(count))).items()}
        except BurnpackError:
            self._raise_first_error()
            raise
        wanted = {key: kind[2] for key, kind in kinds.items()}
        if None in wanted.values():  # QFloat: no length to check
            wanted_lens = tuple([n if wanted[key] is None else wanted[key] for key, n in zip(keys, byte_lens)])
        else:
            wanted_lens = tuple(map(wanted.__getitem__, keys))
        alignment = TENSOR_ALIGNMENT
        starts = list(accumulate([-(-n // alignment) * alignment for n in byte_lens], initial=0))[: len(byte_lens)]
        data_size = starts[-1] + byte_lens[-1] if count else 0  # ends never decrease: the last is the largest
        if data_size > U64_MAX:
            self._raise_first_error()
        start_column = np.array(starts, dtype=np.uint64)
        end_column = start_column + np.array(byte_lens, dtype=np.uint64)
        if wanted_lens != tuple(byte_lens) or len(set(names)) != count:
            self._raise_first_error()
        if max(byte_lens, default=0) > MAX_TENSOR_SIZE and refusal is None:
            big = next(i for i, n in enumerate(byte_lens) if n > MAX_TENSOR_SIZE)
            refusal = ValidationError(f"tensor {names[big]!r} of {byte_lens[big]} bytes exceeds the maximum of {MAX_TENSOR_SIZE} bytes a reader accepts")
        layout_of = {key: kind[0] for key, kind in kinds.items()}
        layouts = list(map(layout_of.__getitem__, keys))
        blob = encode_metadata_columns(list(names), layouts, start_column, end_column, list(param_ids) if has_param_ids else None, self._metadata, self._scalars)
        if len(blob) > METADATA_SIZE_FIELD_MAX:
            raise IoError(f"Metadata size {len(blob)} exceeds maximum of {METADATA_SIZE_FIELD_MAX} bytes")
        if refusal is not None:
            raise refusal
        if len(blob) > MAX_METADATA_SIZE:
            raise ValidationError(f"Metadata size {len(blob)} exceeds the maximum of {MAX_METADATA_SIZE} bytes a reader accepts")
        return Plan(blob, tuple(starts), data_size)

    def _raise_first_error(self) -> None:
        """Raise the first error Burn's writer reports, walking the tensors in order as it does
        (per tensor: byte length, offset overflow, duplicate name)."""
        seen: set[str] = set()
        offset = 0
        kinds: dict[tuple[int, tuple[int, ...], bool], tuple[bytes, int | None, int | None]] = {}
        for tensor in self.tensors:
            name, byte_len = tensor.name, tensor.byte_len
            key = (id(tensor.dtype), tensor.shape, tensor.param_id is not None)
            kind = kinds.get(key)
            if kind is None:
                kind = kinds[key] = _kind(name, tensor.dtype, tensor.shape, tensor.param_id is not None)
            _, expected, wrapped = kind
            if byte_len != wrapped and wrapped is not None:
                shape = "[" + ", ".join(map(str, tensor.shape)) + "]"
                how = "" if expected == wrapped else f" ({expected} modulo 2^64, as Burn's release build counts)"
                raise ValidationError(
                    f"tensor {name!r} declares {byte_len} bytes but its shape {shape} and dtype "
                    f"{debug(tensor.dtype)} need {wrapped}{how}"
                )
            start = -(-offset // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT
            end = start + byte_len
            if end > U64_MAX:
                raise IoError(f"Tensor offset overflow: {start} + {byte_len} exceeds maximum")
            if name in seen:
                raise ValidationError(f"Duplicate tensor name '{name}'")
            seen.add(name)
            offset = end
        raise AssertionError("a column check failed but no tensor breaks it")

    def size(self) -> int:
        """The file's size, without producing any deferred tensor.

        Returns:
            The total size in bytes.

        Raises:
            BurnpackError: The pack cannot be planned (see ``plan``).
        """
        plan = self.plan()
        return data_section_start(len(plan.metadata)) + plan.data_size

    # -- output ------------------------------------------------------------------------------
    def _chunks(self, *, into_file: bool = False, progress: Callable[[int], None] | None = None) -> Iterable[BytesLike | Tensor]:
        """The file's bytes in order; deferred tensors are produced (and dropped) one at a time.

        Small tensors and the padding between them are gathered into one chunk, so that many tiny
        tensors cost one write rather than two each; when every tensor is in memory and the data
        section is at most one chunk, the whole file is one join, with no step per tensor. A large
        tensor made in ``Bands`` comes a band at a time, in one buffer reused for every band: each
        chunk must be consumed before the next is asked for (as ``write`` promises). With
        ``into_file`` a large tensor backed by a ``FileRange`` or made in ``Bands`` is yielded
        itself, for the caller to copy from its file or make band by band into it. ``progress`` is
        told each tensor's size once its bytes are handed over.
        """
        plan = self.plan()
        blob = plan.metadata
        head = (HEADER.pack(MAGIC, FORMAT_VERSION, len(blob)), blob, _ZEROS[: data_section_start(len(blob)) - HEADER.size - len(blob)])
        if progress is None and plan.data_size <= _CHUNK:
            if self._arrays is not None:
                yield _joined(head, self._arrays.arrays, plan.starts, self._arrays.byte_lens)
                return
            in_memory = list(map(_IN_MEMORY, self.tensors))
            if None not in in_memory:  # every tensor's bytes at hand, and few of them: one chunk of all
                yield _joined(head, in_memory, plan.starts, list(map(len, in_memory)))  # memoryviews of bytes
                return
        batch = bytearray(b"".join(head))
        position = 0
        for tensor, start in zip(self.tensors, plan.starts, strict=True):
            batch += _ZEROS[: start - position]  # at most 255 bytes between tensors
            position = start + tensor.byte_len
            if tensor.byte_len >= _SMALL and (tensor.file_range is not None and into_file or _banded(tensor)):
                yield batch
                batch = bytearray()
                if into_file:
                    yield tensor
                else:
                    yield from _band_views(tensor)
                if progress is not None:
                    progress(tensor.byte_len)
                continue
            if tensor._data is None and batch:  # stream what is ready before producing a lazy tensor
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
            del data
            if progress is not None:
                progress(tensor.byte_len)
            if len(batch) >= _CHUNK:
                yield batch
                batch = bytearray()
        yield batch

    def to_bytes(self) -> bytes:
        """The whole file in memory.

        Returns:
            The file's bytes.

        Raises:
            BurnpackError: The pack cannot be planned, or a deferred tensor gave the wrong byte count.
        """
        out = bytearray(self.size())
        self.write_into(out)
        return bytes(out)

    def write_into(self, buffer: bytearray | memoryview) -> int:
        """Write into a caller's buffer.

        Args:
            buffer: A writable buffer of at least ``size()`` bytes.

        Returns:
            The bytes written.

        Raises:
            IoError: The buffer is smaller than the file.
            BurnpackError: The pack cannot be planned, or a deferred tensor gave the wrong byte count.
        """
        need = self.size()
        view = memoryview(buffer).cast("B")
        if view.readonly:
            raise IoError("Buffer is read-only")
        if view.nbytes < need:
            raise IoError(f"Buffer too small: need {need} bytes, got {view.nbytes} bytes")
        position = 0
        for chunk in self._chunks():
            assert not isinstance(chunk, Tensor)
            n = len(chunk) if not isinstance(chunk, memoryview) else chunk.nbytes
            view[position : position + n] = chunk
            position += n
            del chunk  # let a finished deferred tensor go before the next one is produced
        return position

    def write_stream(self, stream: BinaryIO, *, progress: Callable[[int], None] | None = None) -> int:
        """Write to an open binary stream.

        Into a regular file, tensors backed by a ``FileRange`` are copied in the kernel, and
        tensors made in ``Bands`` are written band by band from a second thread, at the stream's
        position (which then moves past them, as a write would); every write is at most 64 KiB.

        Args:
            stream: A binary stream open for writing.
            progress: Told the bytes of each tensor once written.

        Returns:
            The bytes written.

        Raises:
            BurnpackError: The pack cannot be planned, or a deferred tensor gave the wrong byte count.
            OSError: The stream refuses the write.
        """
        size = self.size()
        fd = _regular_file(stream)
        chunks = self._chunks(into_file=fd is not None, progress=progress)
        if fd is None:
            stream.writelines(chunks)  # type: ignore[arg-type]  # holds one chunk at a time: deferred tensors go as soon as written
            return size
        bands = _BandWriter(fd)
        try:
            for chunk in chunks:
                if isinstance(chunk, Tensor):
                    stream.flush()
                    if chunk.file_range is not None:
                        _copy_file_range(chunk, stream, fd)
                    else:
                        start = stream.tell()
                        bands.write(chunk, start)
                        stream.seek(start + chunk.byte_len)
                else:
                    _write_pieces(stream, chunk)
                del chunk  # let a finished deferred tensor go before the next one is produced
        except BaseException:
            bands.close(quiet=True)
            raise
        bands.close()
        return size

    def write(self, path: PathLike) -> Path:
        """Write to a path, replacing the file.

        The bytes go to a scratch file that then replaces ``path`` (a new inode): a reader with
        the old file mapped keeps its bytes, and a failure leaves the old file. Burn's
        ``write_to_file`` truncates in place instead. Unlike ``write_atomic`` nothing is fsynced:
        after a power cut the path holds what a plain rename gives (on ext4 the old or the new file).

        Args:
            path: Where to write; ``.bpk`` is appended when it has no extension.

        Returns:
            The path written.

        Raises:
            BurnpackError: The pack cannot be planned, or a deferred tensor gave the wrong byte count.
            IoError: The file cannot be written; the scratch file is removed.
        """
        return self._replace(path, durable=False)

    def write_atomic(self, path: PathLike) -> Path:
        """``write``, with the file and its directory fsynced before returning (survives power loss).

        Args:
            path: Where to write; ``.bpk`` is appended when it has no extension.

        Returns:
            The path written.

        Raises:
            BurnpackError: The pack cannot be planned, or a deferred tensor gave the wrong byte count.
            IoError: The file cannot be written; the scratch file is removed.
        """
        return self._replace(path, durable=True)

    def _replace(self, path: PathLike, *, durable: bool) -> Path:
        target = resolve_write_path(path)
        self.plan()
        if target.name in ("", ".."):  # Rust's file_name() is None: Burn's own messages
            if durable:
                raise IoError(f"cannot write to '{target}': not a file path")
            exc = IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
            raise IoError.from_os_error(exc, context=f"cannot create '{target}'")
        try:
            with atomic_file(target, durable=durable) as stream:
                self.write_stream(stream)
        except OSError as exc:
            raise IoError.from_os_error(exc, where=str(target)) from None
        return target


def _kind(name: str, dtype: DType, shape: tuple[int, ...], has_param_id: bool) -> tuple[bytes, int | None, int | None]:
    """The layout bytes of a tensor's metadata entry, the byte length its dtype and shape need,
    and that length modulo 2^64 as Burn's release build computes it (both None for QFloat:
    bit-packed values plus inline scales, not shape × size; Burn's writer checks no length there).

    Any QFloat scheme is written as given, as Burn's writer does: a block size outside
    ``BlockSize::new``'s canonical form comes from a file Burn read, and Burn writes it back byte
    for byte (strict mode is where such a scheme is refused).
    """
    size = UNIT_SIZES[dtype.variant] if dtype.value is None else element_size(dtype)
    try:
        layout = TensorDescriptor_layout(dtype, shape, has_param_id)
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise MetadataSerializationError(f"tensor {name!r}: cannot encode its descriptor: {exc}") from None
    if size is None:
        return layout, None, None
    expected = math.prod(shape) * size
    return layout, expected, expected & U64_MAX


def _joined(head: tuple[bytes, ...], data: Sequence[memoryview | np.ndarray], starts: tuple[int, ...], byte_lens: Sequence[int]) -> bytes:
    """``head``, then each tensor's ``data`` (``byte_lens[i]`` bytes: a C-contiguous buffer) at
    its start (after the header and metadata), the padding between them zeros."""
    ends = [0, *map(add, starts, byte_lens)]
    pieces: list[Any] = [*head, *data, *data]  # the right length; the slots are filled below
    pieces[len(head) :: 2] = map(_PADDING.__getitem__, map(sub, starts, ends))
    pieces[len(head) + 1 :: 2] = data
    return b"".join(pieces)


_PADDING = tuple(bytes(n) for n in range(TENSOR_ALIGNMENT))
"""The zeros between two tensors (fewer than the alignment), by length."""


class _ArrayColumns(NamedTuple):
    """The fields of tensors viewing numpy arrays, column by column (``Writer._of_arrays``)."""

    names: list[str]
    byte_lens: list[int]
    param_ids: list[None]
    dtypes: list[DType]
    shapes: list[tuple[int, ...]]
    arrays: list[np.ndarray]
    """The arrays, whose buffers are the tensors' bytes."""


def _array_columns(mapping: Mapping[str, Any]) -> _ArrayColumns | None:
    """The columns of ``Tensor.from_numpy(name, array)`` for each item, when every name is an
    ASCII str and every array a C-contiguous numpy array of a Burn dtype in the host's byte order
    on a little-endian host (the tensor's bytes are the array's buffer as it is); else None."""
    names, arrays = list(mapping), list(mapping.values())
    if not arrays or set(map(type, arrays)) != {np.ndarray} or set(map(type, names)) != {str} or not "".join(names).isascii():
        return None
    numpy_dtypes = list(map(_DTYPE, arrays))
    burn_dtypes: dict[int, DType] = {}
    for dt in dict(zip(map(id, numpy_dtypes), numpy_dtypes)).values():  # by identity: a few distinct objects
        if _BIG_ENDIAN_HOST or dt.byteorder == ">":
            return None
        try:
            burn_dtypes[id(dt)] = dtype_from_numpy(dt)
            memoryview(np.empty(0, dt))  # type: ignore[arg-type]  # the dtype's arrays export their buffer (not every extension dtype does)
        except (ValueError, TypeError, BufferError):
            return None
    if False in map(_C_CONTIGUOUS, arrays):
        return None
    dtypes = list(map(burn_dtypes.__getitem__, map(id, numpy_dtypes)))
    return _ArrayColumns(names, list(map(_NBYTES, arrays)), [None] * len(names), dtypes, list(map(_SHAPE, arrays)), arrays)


_DTYPE, _SHAPE, _NBYTES, _C_CONTIGUOUS = attrgetter("dtype"), attrgetter("shape"), attrgetter("nbytes"), attrgetter("flags.c_contiguous")
_BIG_ENDIAN_HOST = sys.byteorder == "big"


def _regular_file(stream: BinaryIO) -> int | None:
    """The descriptor of ``stream`` when it is a regular file (a kernel copy can go there)."""
    if not _HAS_COPY_FILE_RANGE:
        return None
    try:
        fd = stream.fileno()
        appending = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND  # positioned writes would append
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) and stream.seekable() and not appending else None
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


_HAS_COPY_FILE_RANGE = hasattr(os, "copy_file_range")  # Linux: and there fcntl is
if _HAS_COPY_FILE_RANGE:
    import fcntl


def _copy_file_range(tensor: Tensor, stream: BinaryIO, fd: int) -> None:
    """Copy the tensor's ``FileRange`` to ``fd`` at the (flushed) stream's position, in the kernel
    where the files allow it, else through a buffer; then move the stream past it."""
    source = tensor.file_range
    assert source is not None
    start = stream.tell()
    copied = 0
    try:
        with source.descriptor() as src:
            kernel = True
            while copied < source.length:
                if kernel:
                    try:
                        n = os.copy_file_range(src, fd, source.length - copied, source.offset + copied, start + copied)
                    except OSError as exc:
                        if exc.errno not in _NO_KERNEL_COPY:
                            raise
                        kernel = False
                        continue
                else:
                    data = read_at(src, source.offset + copied, min(_CHUNK, source.length - copied))
                    n = os.pwrite(fd, data, start + copied) if data.nbytes else 0
                if n == 0:  # the file ends before the range does
                    break
                copied += n
    except (OSError, ValueError) as exc:  # ValueError: a source file object already closed
        raise IoError(f"tensor {tensor.name!r}: {exc}") from exc
    finally:
        stream.seek(start + copied)
    if copied != tensor.byte_len:
        raise TensorBytesSizeMismatch(
            f"tensor {tensor.name!r}: deferred source has inconsistent length "
            f"(expected {tensor.byte_len}, got {copied}: {source!r} ends early)"
        )


@contextlib.contextmanager
def _making(tensor: Tensor) -> Iterator[None]:
    """A deferred tensor's provider failing, as a burnpack error naming the tensor."""
    try:
        yield
    except BurnpackError:
        raise
    except Exception as exc:
        raise IoError(f"tensor {tensor.name!r}: {exc}") from exc


def _produce(tensor: Tensor) -> memoryview:
    with _making(tensor):
        data = tensor.memoryview()
    if data.nbytes != tensor.byte_len:
        raise TensorBytesSizeMismatch(
            f"tensor {tensor.name!r}: deferred source has inconsistent length "
            f"(expected {tensor.byte_len}, got {data.nbytes})"
        )
    return data


def _write_pieces(stream: BinaryIO, chunk: BytesLike) -> None:
    """``chunk`` written to a file's stream ``_PIECE`` bytes at a time."""
    with memoryview(chunk) as view:
        for i in range(0, view.nbytes, _PIECE):
            stream.write(view[i : i + _PIECE])


def _pwrite_all(fd: int, data: np.ndarray, position: int) -> None:
    """All of ``data`` (a ``uint8`` array) into ``fd`` at ``position``, ``_PIECE`` bytes a write."""
    with memoryview(data) as view:  # type: ignore[arg-type]  # a uint8 array exports its buffer
        done = 0
        while done < view.nbytes:
            done += os.pwrite(fd, view[done : done + _PIECE], position + done)


def _banded(tensor: Tensor) -> bool:
    """Whether the tensor is made in ``Bands`` whose elements are its bytes as they are (a
    little-endian host; a big-endian one byte-swaps the whole array as ``memoryview`` does)."""
    bands = tensor.bands
    return bands is not None and not _BIG_ENDIAN_HOST and bands.dtype.byteorder != ">"


def _made_bands(tensor: Tensor, lend: Callable[[int], np.ndarray]) -> Iterator[tuple[int, np.ndarray]]:
    """A ``Bands`` tensor made band by band, each into the ``uint8`` array ``lend(nbytes)`` gives:
    (the band's byte offset in the tensor, that array)."""
    bands = tensor.bands
    assert bands is not None
    row_bytes = math.prod(bands.shape[1:]) * bands.dtype.itemsize
    with _making(tensor):
        fill = bands.begin()
    for row in range(0, bands.shape[0], bands.band_rows):
        k = min(bands.band_rows, bands.shape[0] - row)
        buffer = lend(k * row_bytes)
        with _making(tensor):
            fill(buffer.view(bands.dtype).reshape(k, *bands.shape[1:]), row)
        yield row * row_bytes, buffer


def _band_views(tensor: Tensor) -> Iterator[memoryview]:
    """A ``Bands`` tensor's bytes, band by band, each made into the same buffer."""
    bands = tensor.bands
    assert bands is not None
    buffer = np.empty(min(bands.band_rows, bands.shape[0]) * math.prod(bands.shape[1:]) * bands.dtype.itemsize, np.uint8)
    for _, band in _made_bands(tensor, lambda nbytes: buffer[:nbytes]):
        yield memoryview(band)  # type: ignore[arg-type]  # a uint8 array exports its buffer


class _BandWriter:
    """Writes tensors made in ``Bands`` into a file at their offsets, from a second thread: each
    band is made into one of ``HELD`` reused buffers and handed to the thread, which writes the
    bands in turn (``os.pwrite``) while the next are made. numpy's copy loops and the write both
    release the GIL, so on two CPUs they overlap. A band is made into a buffer only once the band
    made into it before is written, and the bands of one tensor keep coming while the last of the
    one before are written. A tensor's disk blocks are claimed before its first band
    (``preallocate``): the writes then only fill the page cache."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffers: list[np.ndarray] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        """The writes not yet known to be done, oldest first: one per buffer at most."""

    def write(self, tensor: Tensor, position: int) -> None:
        """Make and write ``tensor``'s bands at ``position``; the last may still be in flight."""
        preallocate(self._fd, position, tensor.byte_len)
        for offset, buffer in _made_bands(tensor, self._buffer):
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="burnpack-bands")
            self._pending.append(self._pool.submit(_pwrite_all, self._fd, buffer, position + offset))

    def _buffer(self, size: int) -> np.ndarray:
        """The next buffer of the ring, its band written, with room for ``size`` bytes (its first ``size``)."""
        if len(self._pending) == HELD:
            self._pending.popleft().result()
        if len(self._buffers) < HELD:
            self._buffers.append(np.empty(size, np.uint8))
            return self._buffers[-1]
        buffer = self._buffers.pop(0)
        if buffer.nbytes < size:
            del buffer  # let the smaller one go before its replacement is taken
            buffer = np.empty(size, np.uint8)
        self._buffers.append(buffer)
        return buffer[:size]

    def close(self, *, quiet: bool = False) -> None:
        """Wait for the last writes (raising their error unless ``quiet``: another is on its way)."""
        try:
            while self._pending:
                pending = self._pending.popleft()
                if quiet:
                    with contextlib.suppress(Exception):
                        pending.result()
                else:
                    pending.result()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            self._buffers.clear()


def save(
    tensors: Mapping[str, ArrayData | QuantizedTensor] | Iterable[Tensor],
    path: PathLike,
    *,
    metadata: Mapping[str, str] | None = None,
    scalars: Mapping[str, ScalarLike] | None = None,
) -> Path:
    """Save tensors to a file atomically: planned first, written to a scratch file, fsynced and renamed.

    Args:
        tensors: A name → array mapping (numpy, torch or array-like; data in this order), or
            ``Tensor`` objects.
        path: Where to write; ``.bpk`` is appended when it has no extension, as Burn does.
        metadata: User metadata, string to string.
        scalars: Typed scalars (``int``, ``float``, ``bool``, ``str`` or ``Scalar`` values).

    Returns:
        The path written.

    Raises:
        BurnpackError: Burn's writer would refuse the pack (a byte-length mismatch, a duplicate
            name, a limit), raised before any I/O.
        IoError: The file cannot be written; nothing is left half-written.
    """
    return _planned(tensors, metadata, scalars).write_atomic(path)


def save_bytes(
    tensors: Mapping[str, ArrayData | QuantizedTensor] | Iterable[Tensor],
    *,
    metadata: Mapping[str, str] | None = None,
    scalars: Mapping[str, ScalarLike] | None = None,
) -> bytes:
    """The file ``save`` would write, as bytes.

    Args:
        tensors: A name → array mapping (data in this order), or ``Tensor`` objects.
        metadata: User metadata, string to string.
        scalars: Typed scalars (``int``, ``float``, ``bool``, ``str`` or ``Scalar`` values).

    Returns:
        The whole file.

    Raises:
        BurnpackError: Burn's writer would refuse the pack.
    """
    return _planned(tensors, metadata, scalars).to_bytes()


def _planned(tensors: Mapping[str, ArrayData | QuantizedTensor] | Iterable[Tensor], metadata: Mapping[str, str] | None, scalars: Mapping[str, ScalarLike] | None) -> Writer:
    """A planned ``Writer`` of ``tensors``, the garbage collector paused once for all the small
    objects building the tensors and planning them makes."""
    with gc_paused():
        writer = Writer._of_arrays(tensors, metadata=metadata, scalars=scalars) if isinstance(tensors, Mapping) else None
        if writer is None:
            writer = Writer(_as_tensors(tensors), metadata=metadata, scalars=scalars)
        writer.plan()
    return writer


def _mapping_tensor(name: str, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        if value.name != name:
            raise ValidationError(
                f"the mapping key {name!r} names a Tensor called {value.name!r}; use the same name, "
                "or tensor.with_name(key) to rename it"
            )
        return value
    if isinstance(value, QuantizedTensor):  # a QFloat tensor: its payload, in the logical shape
        return value.to_tensor(name)
    return Tensor.from_numpy(name, value)


def _as_tensors(tensors: Mapping[str, ArrayData | QuantizedTensor] | Iterable[Tensor]) -> list[Tensor]:
    """Tensors from a name → array (or Tensor, or QuantizedTensor) mapping, or from ``Tensor``s."""
    if isinstance(tensors, Mapping):
        with gc_paused():
            return [_mapping_tensor(name, t) for name, t in tensors.items()]
    out = list(tensors)
    for t in out:
        if not isinstance(t, Tensor):
            raise ValidationError(f"expected burnpack.Tensor objects or a name → array mapping, got {type(t).__name__}")
    return out
