"""The one tensor model: a name, a Burn dtype, a shape, an optional param id and the bytes.

A ``Tensor`` is immutable, so that a ``Writer`` that planned it cannot be changed behind its plan
(``with_name`` / ``replace`` give a changed copy that shares the bytes). Its bytes are in memory
(``Tensor(...)``, ``Tensor.from_numpy``), produced on demand by a provider (``Tensor.deferred``),
a byte range of a file (``Tensor.deferred`` with a ``FileRange``: a ``Writer`` writing to a file
copies it in the kernel) or, for ``burnpack.TensorView``, read from an open pack. Every kind
answers the same questions: ``memoryview()`` (zero-copy bytes), ``tobytes()`` (a copy),
``numpy()``, ``numel``, ``rank``.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

import numpy as np

from ..codec._cbor import U64_MAX
from ..codec._generated.metadata import DType
from .dtypes import ArrayData, dtype_from_numpy, element_size, numpy_dtype, view_bytes_as
from ..errors import ValidationError
from .frameworks import as_numpy

BytesLike = bytes | bytearray | memoryview
Provider = Callable[[], "BytesLike | np.ndarray"]
_BIG_ENDIAN_HOST = sys.byteorder == "big"
_T = TypeVar("_T", bound="Tensor")


class HasFileno(Protocol):
    """An open file: a binary file object, or an open pack's ``FileSource``."""

    def fileno(self) -> int: ...


class FileRange:
    """``length`` bytes at ``offset`` of a file: where a tensor's bytes already are, unchanged.

    As a deferred tensor's provider (``Tensor.deferred(..., FileRange(file, offset, length))``)
    it reads them when called; a ``Writer`` writing to a regular file copies them in the kernel
    (``os.copy_file_range``) instead. A file that has become shorter gives fewer bytes, which the
    writer refuses.

    Args:
        file: A path, opened at each use, or an open binary file, whose descriptor is used as it
            is (keep it open until the tensor is written).
        offset: The first byte's offset in the file.
        length: How many bytes.
    """

    __slots__ = ("file", "offset", "length")

    file: str | HasFileno
    offset: int
    length: int

    def __init__(self, file: str | os.PathLike[str] | HasFileno, offset: int, length: int) -> None:
        if isinstance(file, (str, os.PathLike)):
            file = os.fspath(file)
        elif not callable(getattr(file, "fileno", None)):
            raise ValidationError(f"FileRange needs a path or an open binary file, got {type(file).__name__}")
        for what, value in (("offset", offset), ("length", length)):
            if type(value) is not int or value < 0:
                raise ValidationError(f"FileRange {what} must be a non-negative int, got {value!r}")
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "length", length)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FileRange is immutable")

    def __repr__(self) -> str:
        name = self.file if isinstance(self.file, str) else getattr(self.file, "name", self.file)
        return f"FileRange({name!r}, offset={self.offset}, length={self.length})"

    @contextlib.contextmanager
    def descriptor(self) -> Iterator[int]:
        """A descriptor to read the file by offset (opened here for a path, closed after).

        Returns:
            A context manager giving the descriptor.
        """
        if not isinstance(self.file, str):
            yield self.file.fileno()
            return
        fd = os.open(self.file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            yield fd
        finally:
            os.close(fd)

    def __call__(self) -> memoryview:
        """The bytes (fewer when the file ends early), read without moving any file position."""
        with self.descriptor() as fd:
            return read_at(fd, self.offset, self.length)


BAND = 4 << 20
"""The most bytes in one band of a ``Bands`` tensor (but one row, when a row is longer): enough
columns of a transposed weight that it is turned in long strips, few enough that the ``HELD`` a
writer holds are less than a large tensor."""

HELD = 3
"""The most bands a writer into a file holds at once: the one being made and two the writing
thread has yet to write. With one waiting, the writing thread stood idle whenever a band took
longer to make than the one before it took to write (a tensor's first band maps its source);
with two, it has the next at hand (``benchmarks/layouts_bench.py``)."""


class Bands:
    """A computed tensor's elements, made a band of rows at a time into arrays the caller lends.

    For a tensor computed from others (a transpose, a concatenation), so that writing it needs
    no buffer its own size: a ``Writer`` writing to a file makes it band by band into ``HELD``
    small buffers it reuses, writing them from a second thread while the next is made; every other
    output takes it band by band into one. Called as a provider, it makes every band into one
    new array: what a reader of the whole tensor gets.

    Args:
        shape: The tensor's shape (at least one dimension; rows along the first).
        dtype: The elements' numpy dtype.
        begin: Called once each time the tensor is made: takes what the bands are made from and
            returns ``fill(out, row)``, which writes rows ``row : row + len(out)`` into ``out``,
            an array of ``dtype`` shaped ``(k, *shape[1:])``.
    """

    __slots__ = ("shape", "dtype", "begin", "band_rows")

    shape: tuple[int, ...]
    dtype: np.dtype
    begin: Callable[[], Callable[[np.ndarray, int], None]]
    band_rows: int
    """Rows in one band: at most ``BAND`` bytes of them and a ``HELD``-th of the tensor's, at
    least one row (so the bands a writer holds are never more than the tensor, nor than ``HELD``
    times ``BAND``)."""

    def __init__(self, shape: Iterable[int], dtype: Any, begin: Callable[[], Callable[[np.ndarray, int], None]]) -> None:
        dims = tuple(shape)
        if not dims or not all(type(d) is int and d >= 0 for d in dims):
            raise ValidationError(f"Bands needs a shape of at least one non-negative int dimension, got {list(dims)}")
        if not callable(begin):
            raise ValidationError(f"Bands needs a callable begin, got {type(begin).__name__}")
        dtype = np.dtype(dtype)
        row_bytes = math.prod(dims[1:]) * dtype.itemsize
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "begin", begin)
        object.__setattr__(self, "band_rows", max(1, min(BAND // max(row_bytes, 1), -(-dims[0] // HELD))))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Bands is immutable")

    def __repr__(self) -> str:
        return f"Bands({list(self.shape)}, {self.dtype}, {self.band_rows} rows a band)"

    @property
    def nbytes(self) -> int:
        """The tensor's bytes."""
        return math.prod(self.shape) * self.dtype.itemsize

    def __call__(self) -> np.ndarray:
        """Every band, made into one new array of the tensor's shape."""
        out = np.empty(self.shape, self.dtype)
        fill = self.begin()
        for row in range(0, self.shape[0], self.band_rows):
            fill(out[row : row + self.band_rows], row)
        return out


def read_at(fd: int, offset: int, length: int) -> memoryview:
    """Up to ``length`` bytes at ``offset`` of ``fd`` (fewer only at the end of the file)."""
    out = bytearray(length)
    view = memoryview(out)
    got = 0
    while got < length:
        if hasattr(os, "preadv"):
            n = os.preadv(fd, [view[got:]], offset + got)
        else:  # platforms without positioned reads
            os.lseek(fd, offset + got, os.SEEK_SET)
            chunk = os.read(fd, length - got)
            n = len(chunk)
            view[got : got + n] = chunk
        if n == 0:
            break
        got += n
    return view[:got]


class _Fields:
    """A Tensor's fields, writable: a new Tensor is filled in as this, then becomes a Tensor."""

    __slots__ = ("name", "dtype", "shape", "param_id", "byte_len", "_data", "_provider")

    name: str
    dtype: DType
    shape: tuple[int, ...]
    param_id: int | None
    byte_len: int
    _data: memoryview | None
    _provider: Provider | None


class Tensor(_Fields):
    """One tensor: ``name``, ``dtype``, ``shape``, ``param_id`` and ``byte_len`` bytes of data.

    Build it with ``Tensor.from_numpy`` (numpy arrays or torch tensors of any layout and byte
    order; stored C-order little-endian), ``Tensor(name, dtype, shape, data)`` for raw
    little-endian bytes, or ``Tensor.deferred`` for a callable that produces the bytes only when
    they are needed (a writer calls it once, while it writes this tensor).

    Args:
        name: The tensor's name.
        dtype: Its Burn dtype.
        shape: Its shape.
        data: Its little-endian bytes (any bytes-like object, or a C-contiguous array viewed as bytes).
        param_id: Burn's parameter id, if any.
    """

    __slots__ = ()

    def __new__(
        cls: type[_T],
        name: str,
        dtype: DType,
        shape: Iterable[int],
        data: BytesLike | np.ndarray,
        *,
        param_id: int | None = None,
    ) -> _T:
        tensor = _blank(cls)
        _describe(tensor, name, dtype, shape, param_id)
        view = le_c_bytes(data) if isinstance(data, np.ndarray) else memoryview(data).cast("B")
        tensor._data, tensor._provider, tensor.byte_len = view, None, view.nbytes
        return _freeze(tensor, cls)

    @classmethod
    def from_numpy(cls, name: str, array: ArrayData, *, param_id: int | None = None, dtype: DType | None = None) -> Tensor:
        """A tensor from an array-like or a torch tensor, in any layout or byte order (written C-order
        little-endian).

        QFloat data is not an array of its shape: give it as ``Tensor(name, dtype, shape, raw_bytes)``.

        Args:
            name: The tensor's name.
            array: A numpy array, a torch tensor or anything ``numpy.asarray`` takes.
            param_id: Burn's parameter id, if any.
            dtype: The dtype to write (``F16``, ``Flex32``, ``Bool(U8)``, …), converting the elements
                when they differ; by default the array's own.

        Returns:
            The tensor, holding the array's bytes.

        Raises:
            ValidationError: The array's dtype has no Burn dtype, or cannot become the one given.
        """
        if type(array) is not np.ndarray:
            try:
                array = as_numpy(array)
            except ValidationError as exc:
                raise ValidationError(f"tensor {name!r}: {exc}") from None
        if dtype is None:
            try:
                dtype = dtype_from_numpy(array.dtype)
            except ValueError as exc:
                raise ValidationError(f"tensor {name!r}: {exc}") from None
        elif isinstance(dtype, DType) and element_size(dtype) is None:
            raise ValidationError(f"tensor {name!r}: give QFloat data as raw bytes with its logical shape, Tensor(name, dtype, shape, data)")
        elif isinstance(dtype, DType):
            want = numpy_dtype(dtype)
            if array.dtype != want and array.dtype != want.newbyteorder(">"):
                array = array.astype(want)
        tensor = object.__new__(_Fields)  # _blank(Tensor), inlined: the many-tiny-tensors path
        if type(name) is str and name.isascii() and param_id is None and isinstance(dtype, DType):
            tensor.name, tensor.dtype, tensor.shape, tensor.param_id = name, dtype, array.shape, None
        else:  # the checks _describe makes, for whatever the fast test above does not settle
            _describe(tensor, name, dtype, array.shape, param_id, checked_shape=True)
        data = le_c_bytes(array)
        tensor._data, tensor._provider, tensor.byte_len = data, None, data.nbytes
        _set_class(tensor, Tensor)  # _freeze, inlined
        return tensor  # type: ignore[return-value]

    @classmethod
    def deferred(
        cls,
        name: str,
        dtype: DType,
        shape: Iterable[int],
        byte_len: int,
        provider: Provider,
        *,
        param_id: int | None = None,
    ) -> Tensor:
        """A tensor whose bytes come from ``provider()``, called each time they are asked for (while
        written, one tensor at a time).

        Args:
            name: The tensor's name.
            dtype: Its dtype.
            shape: Its shape.
            byte_len: How many bytes the provider gives; the writer refuses any other count.
            provider: A callable returning the bytes, a ``FileRange`` (a byte range of a file
                holding them as they are) or ``Bands`` (elements made a band of rows at a time).
            param_id: Burn's parameter id, if any.

        Returns:
            The deferred tensor.

        Raises:
            ValidationError: ``byte_len`` or the shape is not a valid size.
        """
        tensor = _blank(Tensor)
        _describe(tensor, name, dtype, shape, param_id)
        if type(byte_len) is not int or byte_len < 0:
            raise ValidationError(f"tensor {name!r}: byte_len must be a non-negative int, got {byte_len!r}")
        if not callable(provider):
            raise ValidationError(f"tensor {name!r}: provider must be callable, got {type(provider).__name__}")
        if isinstance(provider, FileRange) and provider.length != byte_len:
            raise ValidationError(f"tensor {name!r}: byte_len {byte_len} but its {provider!r} holds {provider.length}")
        if isinstance(provider, Bands) and provider.nbytes != byte_len:
            raise ValidationError(f"tensor {name!r}: byte_len {byte_len} but its {provider!r} makes {provider.nbytes}")
        tensor.byte_len, tensor._data, tensor._provider = byte_len, None, provider
        return _freeze(tensor, Tensor)

    # -- immutability ------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; use with_name() or replace() for a changed copy")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.name, self.dtype, self.shape, self.tobytes(), self.param_id))

    def replace(self, *, name: str | None = None, param_id: int | None = None, shape: Iterable[int] | None = None) -> Tensor:
        """A copy with a new name, param id or (same-size) shape; the bytes are shared, not copied.

        Args:
            name: The new name; None keeps it.
            param_id: The new param id; None keeps it.
            shape: The new shape, of the same element count; None keeps it.

        Returns:
            The changed copy.

        Raises:
            ValidationError: The new shape has another element count.
        """
        twin = _blank(Tensor)
        _describe(
            twin,
            self.name if name is None else name,
            self.dtype,
            self.shape if shape is None else shape,
            self.param_id if param_id is None else param_id,
        )
        size = element_size(self.dtype)
        if shape is not None and size is not None and math.prod(twin.shape) * size != self.byte_len:
            raise ValidationError(f"tensor {twin.name!r}: shape {list(twin.shape)} does not hold {self.byte_len} bytes of {self.dtype!r}")
        twin.byte_len = self.byte_len
        if self._provider is None and self._data is not None:
            twin._data, twin._provider = self._data, None
        elif self.file_range is not None:  # still the same bytes of the same file
            twin._data, twin._provider = None, self.file_range
        elif self.bands is not None:  # still made band by band
            twin._data, twin._provider = None, self.bands
        else:
            twin._data, twin._provider = None, self.memoryview
        return _freeze(twin, Tensor)

    def with_name(self, name: str, *, param_id: int | None = None) -> Tensor:
        """The same data under another name (and param id, when given).

        Args:
            name: The new name.
            param_id: The new param id; None keeps this one's.

        Returns:
            The renamed copy, sharing the bytes.
        """
        return self.replace(name=name, param_id=param_id)

    # -- content -----------------------------------------------------------------------------
    @property
    def file_range(self) -> FileRange | None:
        """Where in a file the bytes are, unchanged (a writer may copy them in the kernel); else None."""
        provider = self._provider
        return provider if isinstance(provider, FileRange) else None

    @property
    def bands(self) -> Bands | None:
        """How the bytes are made band by band, when they are (a writer makes them into small buffers); else None."""
        provider = self._provider
        return provider if isinstance(provider, Bands) else None

    def __repr__(self) -> str:
        kind = "in a file" if self.file_range is not None else "deferred" if self._provider is not None else "in memory"
        return f"{type(self).__name__}({self.name!r}, {self.dtype!r}, shape={list(self.shape)}, param_id={self.param_id}, {self.byte_len} bytes {kind})"

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def numel(self) -> int:
        """Number of elements the shape holds (1 for a 0-d tensor)."""
        return math.prod(self.shape)

    def memoryview(self) -> memoryview:
        """The tensor's little-endian bytes without copying (a deferred tensor runs its provider).

        Returns:
            A memoryview of the bytes.
        """
        if self._provider is None:
            assert self._data is not None
            return self._data
        data = self._provider()
        return le_c_bytes(data) if isinstance(data, np.ndarray) else memoryview(data).cast("B")

    def tobytes(self) -> bytes:
        """The tensor's bytes as a copy.

        Returns:
            The bytes.
        """
        return bytes(self.memoryview())

    def numpy(self) -> np.ndarray:
        """The elements as an array of this tensor's shape, viewing its bytes (no copy).

        QFloat tensors are their raw ``uint8`` bytes (values and inline scales, see ``dtype``);
        Flex32 is float32; Bool stores are ``bool``, ``uint8`` or ``uint32``.

        Returns:
            The array.
        """
        return _as_array(self, self.memoryview())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def same_content(self, other: Tensor) -> bool:
        """Whether two tensors are equal in name, param id, dtype, shape and bytes.

        Args:
            other: The tensor to compare with.

        Returns:
            True when all five are equal.
        """
        return (
            self.name == other.name
            and self.param_id == other.param_id
            and self.dtype == other.dtype
            and self.shape == other.shape
            and self.memoryview() == other.memoryview()
        )


def _rebuild(name: str, dtype: DType, shape: tuple[int, ...], data: bytes, param_id: int | None) -> Tensor:
    return Tensor(name, dtype, shape, data, param_id=param_id)


_BUILDERS: dict[type, type] = {Tensor: _Fields}


def _blank(cls: type[_T]) -> _T:
    """An unfrozen instance of ``cls`` for ``_freeze`` to turn into a ``cls``.

    For ``Tensor`` (the hot path: many tiny tensors) it is a plain ``_Fields``; a subclass gets a
    builder subclass of itself whose attributes can still be written.
    """
    builder = _BUILDERS.get(cls)
    if builder is None:
        builder = _BUILDERS[cls] = type(f"_{cls.__name__}Builder", (cls,), {"__slots__": (), "__setattr__": object.__setattr__})
    return object.__new__(builder)  # type: ignore[no-any-return]


_set_class = object.__dict__["__class__"].__set__


def _freeze(tensor: _T, cls: type[_T]) -> _T:
    _set_class(tensor, cls)  # same layout: the builder (or _Fields) adds nothing
    return tensor


def _describe(tensor: _Fields, name: Any, dtype: Any, shape: Iterable[Any], param_id: Any, *, checked_shape: bool = False) -> None:
    """Check and set the descriptor fields of an unfrozen tensor."""
    if type(name) is not str:
        raise ValidationError(f"tensor name must be a str, got {type(name).__name__}")
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(f"tensor name {name!r} is not valid Unicode (lone surrogate)") from None
    if not isinstance(dtype, DType):
        raise ValidationError(f"tensor {name!r}: dtype must be a burnpack.DType, got {dtype!r}")
    dims: tuple[Any, ...] = shape if checked_shape else tuple(shape)  # type: ignore[assignment]  # numpy: a tuple already
    if not checked_shape and not all(type(dim) is int and 0 <= dim <= U64_MAX for dim in dims):
        dims = tuple(_u64_dim(name, dims, dim) for dim in dims)
    if param_id is not None:
        if isinstance(param_id, bool) or not isinstance(param_id, (int, np.integer)) or not 0 <= param_id <= U64_MAX:
            raise ValidationError(f"tensor {name!r}: param_id {param_id!r} is not a u64")
        param_id = int(param_id)
    tensor.name, tensor.dtype, tensor.shape, tensor.param_id = name, dtype, dims, param_id


def _u64_dim(name: str, shape: tuple[Any, ...], dim: Any) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise ValidationError(f"tensor {name!r}: shape {list(shape)} must hold ints")
    if not 0 <= dim <= U64_MAX:
        raise ValidationError(f"tensor {name!r}: dimension {dim} is outside 0..2^64-1")
    return int(dim)


def le_c_bytes(array: np.ndarray) -> memoryview:
    """The array's elements as C-order little-endian bytes, without copying when already so."""
    dtype = array.dtype
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and _BIG_ENDIAN_HOST and dtype.itemsize > 1):
        array = array.astype(dtype.newbyteorder("<"))
    try:
        return memoryview(array).cast("B")  # type: ignore[arg-type]  # C-contiguous, buffer-exportable dtypes
    except (TypeError, ValueError, BufferError):
        array = np.ascontiguousarray(array)
        return memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")  # type: ignore[arg-type]


NUMPY_MAX_DIMS = 64
_INTP_MAX = int(np.iinfo(np.intp).max)


def check_numpy_shape(name: str, shape: tuple[int, ...], itemsize: int) -> None:
    """Refuse a shape numpy cannot hold: more than 64 dimensions, or more bytes than it can index.

    Such a file opens (Burn allows any rank and u64 dimensions); only the numpy view is refused.
    """
    if len(shape) > NUMPY_MAX_DIMS:
        raise ValidationError(
            f"tensor {name!r} has {len(shape)} dimensions; numpy arrays have at most {NUMPY_MAX_DIMS}",
            where="numpy()",
        )
    numel = math.prod(shape) or math.prod(dim for dim in shape if dim)  # an empty shape: its other dimensions
    if numel * max(itemsize, 1) > _INTP_MAX:
        raise ValidationError(
            f"tensor {name!r} of shape {list(shape)} holds more elements than numpy can index",
            where="numpy()",
        )


def _as_array(tensor: Tensor, view: memoryview, where: str | None = None) -> np.ndarray:
    np_dtype = numpy_dtype(tensor.dtype)
    size = element_size(tensor.dtype)
    if size is None:
        return view_bytes_as(view, 0, view.nbytes, np_dtype)
    check_numpy_shape(tensor.name, tensor.shape, np_dtype.itemsize)
    numel = tensor.numel
    if view.nbytes != numel * size:
        raise ValidationError(
            f"tensor {tensor.name!r} holds {view.nbytes} bytes but its shape {list(tensor.shape)} and dtype "
            f"{tensor.dtype.variant} need {numel * size}",
            where=where,
        )
    return view_bytes_as(view, 0, numel, np_dtype).reshape(tensor.shape)


class gc_paused:  # noqa: N801 - used as a function: ``with gc_paused():``
    """Pause the cyclic garbage collector while many small acyclic objects are built (one
    ``Tensor`` per array in a save, a table's columns at an open).

    They hold no cycles, so the collections they trigger find nothing, yet cost more than the
    building: 20,000 tiny tensors set off about a hundred young and one full collection, and a
    full one scans the caller's whole heap (all of torch, when it is imported). A class rather
    than a generator-based context manager: an open runs this once, and with cold caches (one
    open in a process that has done other work since) contextlib's machinery is a measurable
    part of a small file's open.
    """

    __slots__ = ("_resume",)

    def __enter__(self) -> None:
        self._resume = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._resume:
            gc.enable()
