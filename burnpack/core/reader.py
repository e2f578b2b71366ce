"""Reading burnpack files: ``load`` and the ``Pack`` it returns.

By default the reader accepts exactly what Burn's ``Reader`` accepts and rejects what it rejects,
at the same stage (opening vs. accessing a tensor) and with the same error kind
(burn@2c06be35 crates/burn-pack/src/reader.rs). ``strict=True`` additionally rejects anything a
Burn writer could not have produced. Opening reads only the header and the metadata.
"""

from __future__ import annotations

import builtins
import io
import os
import stat
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import numpy as np

from . import legacy
from ..codec._cbor import U64_MAX
from ..codec._generated.layout import (
    FORMAT_VERSION,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    MAX_FILE_SIZE,
    data_section_start,
)
from ..codec._generated.metadata import DType, Metadata, Scalar, TensorDescriptor
from .dtypes import TorchTensor, element_size
from ..errors import (
    BurnpackError,
    InvalidHeader,
    InvalidMagicNumber,
    InvalidVersion,
    IoError,
    MetadataDeserializationError,
    OptionError,
    QuantizationError,
    TensorNotFound,
    ValidationError,
)
from .metadata import decode_metadata, decode_metadata_exact
from .limits import LoadLimits
from .plan import ReadPlan
from .frameworks import import_torch, torch_from_buffer, torch_view_dtype
from .paths import PathLike, resolve_read_path
from .remote import FsspecSource, is_url
from .source import BufferSource, FileObjectSource, FileSource, Source, read_coalesced
from .table import TensorTable, scan_table
from .tensor import FileRange, Tensor, _as_array, _blank, _freeze, gc_paused

if TYPE_CHECKING:  # imported where used: opening and listing a pack need neither the QFloat codec nor slicing
    from . import quant
    from .slices import TensorSlice

__all__ = ["Pack", "PathLike", "TensorView", "load"]


class TensorView(Tensor):
    """One tensor of an open pack: a ``Tensor`` whose bytes are read from the pack on demand.

    ``memoryview()`` and ``numpy()`` are zero-copy windows on memory-mapped files; each access
    runs Burn's checks for that tensor (``tensor_data``). Made by the pack (``pack[name]``), not
    constructed directly.

    Args:
        pack: The open pack the tensor is in.
        name: The tensor's name.
        descriptor: Its descriptor from the metadata.
    """

    __slots__ = ("_pack", "data_offsets")

    _pack: Pack
    data_offsets: tuple[int, int]

    def __new__(cls, pack: Pack, name: str, descriptor: TensorDescriptor) -> TensorView:  # type: ignore[misc]
        view = _blank(cls)
        view._pack = pack
        view.name = name
        view.dtype = descriptor.dtype
        view.shape = descriptor.shape
        view.data_offsets = descriptor.data_offsets
        view.param_id = descriptor.param_id
        view.byte_len = descriptor.data_offsets[1] - descriptor.data_offsets[0]
        view._data = view._provider = None
        return _freeze(view, cls)

    def __repr__(self) -> str:
        return f"TensorView({self.name!r}, dtype={self.dtype!r}, shape={list(self.shape)}, param_id={self.param_id})"

    def memoryview(self) -> memoryview:
        """The tensor's bytes without copying.

        Returns:
            A memoryview of the bytes, read-only for files.

        Raises:
            BurnpackError: The bytes do not fit the descriptor (Burn's error for it), or the pack is closed.
        """
        return self._pack._tensor_bytes(self)

    @property
    def file_range(self) -> FileRange | None:
        """Where the bytes are in the pack's file, for a pack opened from a path (a ``Writer``
        copies them from there in the kernel); None for other sources, or a range Burn refuses."""
        source = self._pack._live(self.name)
        if not isinstance(source, FileSource):
            return None
        try:
            start, end = self._pack._tensor_range(self)
        except BurnpackError:
            return None  # memoryview() raises Burn's error for it
        return FileRange(source, start, end - start)

    @property
    def slice(self) -> TensorSlice:
        """``view.slice[i:j]``, ``view.slice[:, 3]``: that part only, reading only its byte ranges."""
        self._pack._live(self.name)
        from .slices import TensorSlice

        return TensorSlice(self)

    def read(self, offset: int = 0, length: int | None = None) -> bytes:
        """A slice of the tensor's bytes, reading only that range from the source.

        Args:
            offset: The first byte, from the tensor's start.
            length: How many bytes; None reads to the tensor's end.

        Returns:
            The bytes (fewer than ``length`` at the tensor's end).

        Raises:
            ValueError: ``offset`` is outside the tensor or ``length`` is negative.
            IoError: The source gave fewer bytes than asked for (it shrank since it was opened).
        """
        start, end = self._pack._tensor_range(self)
        if type(offset) is not int or offset < 0 or offset > end - start:
            raise ValueError(f"offset {offset!r} is outside tensor {self.name!r} of {end - start} bytes")
        if length is not None and (type(length) is not int or length < 0):
            raise ValueError(f"length must be a non-negative int or None, got {length!r}")
        length = end - start - offset if length is None else min(length, end - start - offset)
        data = self._pack._source.read(start + offset, length)
        if len(data) != length:  # the source shrank since it was opened, or answers out of turn
            raise IoError(f"short read: got {len(data)} of {length} bytes at offset {start + offset}", where=f"tensor {self.name!r}")
        return data

    def numpy(self, *, dequantize: bool = False) -> np.ndarray:
        """The tensor as a numpy array viewing the pack's bytes (no copy).

        QFloat tensors are their raw ``uint8`` bytes (values and inline scales, see ``dtype``);
        Flex32 is float32; Bool stores are ``bool``, ``uint8`` or ``uint32``. Arrays viewing a file
        are read-only (numpy refuses writes).

        Args:
            dequantize: Give a QFloat tensor as its float32 values (see ``dequantize``).

        Returns:
            The array, of the tensor's shape.

        Raises:
            BurnpackError: The bytes do not fit the descriptor (Burn's error for it).
        """
        if dequantize and self.dtype.is_quantized:
            return self.dequantize()
        return self._numpy_of(self.memoryview())

    def _numpy_of(self, view: builtins.memoryview) -> np.ndarray:
        return _as_array(self, view, where=f"data_offsets {list(self.data_offsets)}")

    def torch(self) -> TorchTensor:
        """The tensor as a torch tensor sharing the pack's memory (no copy); needs ``burnpack[torch]``.

        bf16, f16, every int torch has (uint16/32/64 included) and Flex32 (float32) map directly;
        Bool stores become ``torch.bool``. Torch has no read-only tensors, so a file is viewed
        through a copy-on-write mapping: writing into the tensor changes this process's copy only,
        never the file. A writable ``bytearray`` source is shared; ``bytes`` and remote sources give
        tensors over a private copy.

        Returns:
            The torch tensor, of the tensor's shape.

        Raises:
            ImportError: torch is not installed.
            TypeError: The tensor is QFloat, which torch cannot hold.
        """
        torch_view_dtype(self.dtype, name=self.name)  # QFloat / a dtype this torch lacks: fail before reading
        start, end = self._pack._tensor_range(self)
        buffer: Any = self._pack._writable_buffer()
        if buffer is None:
            buffer, start, end = bytearray(self._pack._source.read(start, end - start)), 0, end - start
        return self._torch_of(buffer, start, end)

    def _torch_of(self, buffer: Any, start: int, end: int) -> Any:
        self._check_byte_len(end - start)
        return torch_from_buffer(buffer, start, self.shape, self.dtype, name=self.name)

    def _check_byte_len(self, nbytes: int) -> None:
        size = element_size(self.dtype)
        if size is not None and nbytes != self.numel * size:
            raise ValidationError(
                f"tensor {self.name!r} holds {nbytes} bytes but its shape {list(self.shape)} and dtype "
                f"{self.dtype.variant} need {self.numel * size}",
                where=f"data_offsets {list(self.data_offsets)}",
            )

    def quantized(self) -> quant.QuantizedTensor:
        """A QFloat tensor in parts: int8 ``values`` (logical shape), ``scales`` (block grid),
        ``global_scale`` and ``scheme``.

        Returns:
            The tensor's parts.

        Raises:
            QuantizationError: The tensor is not QFloat, or its payload's length does not fit the scheme.
            UnsupportedQuantization: The scheme is one the bytes alone cannot give (an older scheme shape).
        """
        if not self.dtype.is_quantized:
            raise QuantizationError(f"tensor {self.name!r} is {self.dtype.variant}, not a quantized (QFloat) tensor")
        from . import quant

        old = self._pack._old_schemes.get(self.name)
        if old is None:
            return quant.decode(self.memoryview(), self.dtype.value, self.shape, name=self.name)
        if not self._pack._legacy_ok:
            raise quant.UnsupportedQuantization(quant.legacy_refusal(old), where=f"tensor {self.name!r}")
        return quant.decode_legacy(self.memoryview(), old, self.dtype.value, self.shape, name=self.name)

    def dequantize(self) -> np.ndarray:
        """A QFloat tensor's float32 values, ``fl32(S·q)`` bit for bit as Burn's CPU backends compute.

        Returns:
            The float32 array, of the tensor's shape.

        Raises:
            QuantizationError: The tensor is not QFloat, or its bytes do not fit its scheme.
        """
        if self.dtype.is_quantized and self.name not in self._pack._old_schemes:
            from . import quant

            return quant.dequantize(self.memoryview(), self.dtype.value, self.shape, name=self.name)
        return self.quantized().dequantize()


class Pack(Mapping[str, TensorView]):
    """An open burnpack file: a read-only mapping of tensor name → ``TensorView``, sorted by name.

    Made by ``load``, not constructed directly; its arguments are what opening found.

    Args:
        source: Where the bytes are read from.
        version: The header's format version.
        metadata_size: The metadata section's length in bytes.
        meta: The decoded metadata: tensors, metadata strings and scalars.
        data_section_start: The byte offset of the data section.
        legacy_layout: Whether the file has the pre-2025-12-02 layout (data right after the metadata).
        legacy_ok: Whether the file is read as its older writer meant it.
        from_file: Whether the bytes come from a file (mapped or ranged) rather than memory.
        old_schemes: QFloat schemes in a pre-2026-08-19 shape, as written, by tensor name.
        limits: The reader's limits, checked when tensors are read.
    """

    def __init__(
        self,
        *,
        source: Source,
        version: int,
        metadata_size: int,
        meta: Metadata,
        data_section_start: int,
        legacy_layout: bool,
        legacy_ok: bool,
        from_file: bool,
        old_schemes: dict[str, dict] | None = None,
        limits: LoadLimits = LoadLimits(),
    ) -> None:
        self._source = source
        self._closed = False
        self._current_size = source.current_size if isinstance(source, FileSource) else None
        self._buffer: Callable[[], memoryview | None] = getattr(source, "buffer", None) or (lambda: None)
        self._descriptors: Mapping[str, TensorDescriptor] = meta.tensors
        self._plan = ReadPlan(
            meta.tensors,
            base=data_section_start,
            size=source.size,
            limits=limits,
            from_file=from_file,
            diagnose_legacy=legacy_layout and not legacy_ok,
        )
        self._names = self._plan.names
        self.version = version
        self.metadata_size = metadata_size
        self.metadata: dict[str, str] = meta.metadata
        self.scalars: dict[str, Scalar] = meta.scalars
        self.data_section_start = data_section_start
        self.legacy_layout = legacy_layout
        """True when the file has the pre-2025-12-02 layout (data right after the metadata)."""
        self._legacy_ok = legacy_ok
        self._from_file = from_file
        self.framework = "np"
        """What ``get_tensor`` and ``view.slice[...]`` return: ``"np"`` (numpy) or ``"pt"`` (torch)."""
        self._old_schemes: dict[str, dict] = old_schemes or {}
        """QFloat schemes in a pre-2026-08-19 shape, as written (quant.md §5), by tensor name."""

    # -- Mapping ----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> TensorView:
        try:
            descriptor = self._descriptors[name]
        except (KeyError, TypeError):
            raise TensorNotFound(str(name)) from None
        return TensorView(self, name, descriptor)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return self._plan.contains(name)

    def __repr__(self) -> str:
        return f"<burnpack.Pack: {len(self)} tensors, {len(self.metadata)} metadata, {len(self.scalars)} scalars>"

    def __enter__(self) -> Pack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the file mapping (arrays already taken keep it alive until freed); reading a
        tensor of a closed pack raises ``IoError``."""
        self._closed = True
        close = getattr(self._source, "close", None)
        if close is not None:
            close()

    # -- content -----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Tensor names, sorted byte-wise (Burn's ``tensor_names``)."""
        return list(self._names)

    @property
    def file_size(self) -> int:
        """The source's size in bytes."""
        return self._source.size

    def tensors(self) -> list[TensorView]:
        """Every tensor in name order, each checked as Burn's ``into_tensors`` checks it.

        Returns:
            A ``TensorView`` per tensor, sorted by name.

        Raises:
            BurnpackError: A tensor's bytes do not fit its descriptor (Burn's error for it).
        """
        self._live()
        self._plan.ranges()
        return [self[name] for name in self._names]

    def numpy(self, *, dequantize: bool = False) -> dict[str, np.ndarray]:
        """Every tensor as a zero-copy numpy array: the bulk path, without a ``TensorView`` per tensor.

        Checked as ``tensors()`` is.

        Args:
            dequantize: Give QFloat tensors as their float32 values instead of their raw bytes.

        Returns:
            The arrays by name, in sorted order; arrays viewing a file are read-only.

        Raises:
            BurnpackError: A tensor's bytes do not fit its descriptor (Burn's error for it).
        """
        if dequantize:
            arrays = self.numpy()
            arrays.update(self.dequantize())
            return arrays
        buffer = _zero_copy(self._live())
        if self.legacy_layout:
            return {view.name: view.numpy() for view in self.tensors()}
        if buffer is None:
            return self._bulk_ranges(TensorView._numpy_of)
        base = self.data_section_start
        if isinstance(self._descriptors, TensorTable):  # many tensors: a strided window per (dtype, shape)
            bulk = self._plan.table_arrays(self._descriptors, buffer)
            if bulk is not None:
                return dict(zip(self._names, bulk))
        return self._bulk(lambda dtype, np_dtype, count: np.frombuffer(buffer, np_dtype, count, base), TensorView.numpy)

    def torch(self) -> dict[str, TorchTensor]:
        """Every tensor as a torch tensor sharing the pack's memory (see ``TensorView.torch``).

        Returns:
            The torch tensors by name, in sorted order.

        Raises:
            ImportError: torch is not installed (``burnpack[torch]``).
            TypeError: A tensor is QFloat, which torch cannot hold.
        """
        self._live()
        buffer = self._writable_buffer()
        if self.legacy_layout:
            return {view.name: view.torch() for view in self.tensors()}
        if buffer is None:
            return self._bulk_ranges(lambda view, piece: view._torch_of(piece, 0, len(piece)))
        base = self.data_section_start
        return self._bulk(lambda dtype, np_dtype, count: torch_from_buffer(buffer, base, (count,), dtype), TensorView.torch)

    def _bulk_ranges(self, take: Callable[[TensorView, memoryview], Any]) -> dict[str, Any]:
        """Every tensor (checked as ``tensors()`` is) from a source without a buffer, read in
        large blocks of neighbouring tensors (``read_coalesced``): one request per block for
        remote files."""
        self._live()
        ranges = [(start, end - start) for start, end in self._plan.ranges()]
        pieces = read_coalesced(self._source, ranges)
        return {name: take(self[name], piece) for name, piece in zip(self._names, pieces)}

    def get_tensor(self, name: str) -> np.ndarray | TorchTensor:
        """One tensor in this pack's ``framework``, as safetensors' ``get_tensor``.

        Args:
            name: The tensor's name.

        Returns:
            A numpy array (``"np"``) or a torch tensor (``"pt"``).

        Raises:
            TensorNotFound: No tensor has that name (a ``KeyError``).
        """
        view = self[name]
        return view.torch() if self.framework == "pt" else view.numpy()

    def get_slice(self, name: str) -> TensorSlice:
        """A part of one tensor, read on indexing, as safetensors' ``get_slice``: ``pack.get_slice(name)[i:j]``.

        Args:
            name: The tensor's name.

        Returns:
            The tensor's slicer; indexing it reads only the bytes the slice needs.

        Raises:
            TensorNotFound: No tensor has that name (a ``KeyError``).
        """
        return self[name].slice

    def _bulk(self, section_of: Callable[[DType, np.dtype, int], Any], one: Callable[[TensorView], Any]) -> dict[str, Any]:
        """Every tensor, checked as ``tensors()`` is, as a slice of the data section viewed once
        per dtype (``section_of(dtype, numpy dtype, element count)``); ``one(view)`` serves
        tensors that cannot be sliced so (Bool stores, QFloat, or a range Burn rejects)."""
        out = {}
        plan, descriptors = self._plan, self._descriptors
        limit = self._source.size - self.data_section_start
        sections: dict[np.dtype, Any] = {}
        for name in self._names:
            descriptor = descriptors[name]
            size, np_dtype = plan.unit_view(descriptor)
            if not size:
                view = self[name]  # the checked path: Bool stores, QFloat, or raises Burn's error
                self._tensor_range(view, whole_pack=True)
                out[name] = one(view)
                continue
            section = sections.get(np_dtype)
            if section is None:
                section = sections[np_dtype] = section_of(descriptor.dtype, np_dtype, limit // size)
            start, end = descriptor.data_offsets
            out[name] = section[start // size : end // size].reshape(descriptor.shape)
        return out

    def dequantize(self) -> dict[str, np.ndarray]:
        """Every QFloat tensor's float32 values (other tensors are left out).

        Returns:
            The float32 arrays by name.

        Raises:
            QuantizationError: A tensor's quantized bytes do not fit its scheme.
        """
        return {name: self[name].dequantize() for name in self._names if self._descriptors[name].dtype.is_quantized}

    @property
    def descriptors(self) -> dict[str, TensorDescriptor]:
        """Name → descriptor, as decoded (sorted by name)."""
        return {name: self._descriptors[name] for name in self._names}

    # -- data access -------------------------------------------------------------------------
    def _tensor_range(self, view: TensorView, *, whole_pack: bool = False) -> tuple[int, int]:
        """Absolute [start, end) of a tensor of this open pack, checked by the read plan."""
        if self._closed or (self._current_size is not None and self._current_size() < self._source.size):
            self._live(view.name)  # raises
        return self._plan.range(view.name, view.data_offsets, whole_pack=whole_pack)

    def _live(self, name: str | None = None) -> Source:
        """The source, if its bytes can still be read: not after ``close()``, nor once another
        process has truncated a mapped file (touching the lost pages would kill the process)."""
        what = f"tensor {name!r}" if name is not None else "tensors"
        if self._closed:
            raise IoError("the pack is closed", where=f"reading {what} after Pack.close()")
        source = self._source
        if self._current_size is not None:
            now = self._current_size()
            if now < source.size:
                raise IoError(
                    f"the file shrank from {source.size} to {now} bytes while it was open (another process truncated it)",
                    where=f"reading {what} of a memory-mapped file",
                )
        return source

    def _tensor_bytes(self, view: TensorView) -> memoryview:
        start, end = self._tensor_range(view)
        buffer = self._buffer()
        if buffer is None:
            return memoryview(self._source.read(start, end - start))
        return buffer[start:end]

    def _zero_copy_buffer(self) -> memoryview | None:
        return _zero_copy(self._source)

    def _writable_buffer(self) -> memoryview | None:
        writable = getattr(self._source, "writable_buffer", None)
        return writable() if writable is not None else None


def _zero_copy(source: Source) -> memoryview | None:
    buffer = getattr(source, "buffer", None)
    return buffer() if buffer is not None else None


FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt"}
DECODERS = ("auto", "exact")


def load(
    source: PathLike | bytes | bytearray | memoryview | BinaryIO | Source,
    *,
    strict: bool = False,
    legacy_ok: bool = False,
    framework: str = "np",
    storage_options: Mapping[str, Any] | None = None,
    decoder: str = "auto",
    max_metadata_size: int = LoadLimits.max_metadata_size,
    max_tensors: int = LoadLimits.max_tensors,
    max_tensor_size: int = LoadLimits.max_tensor_size,
) -> Pack:
    """Open a burnpack: lazily, reading only the header and metadata until a tensor is asked for.

    A path is memory-mapped (Rust's rule appends ``.bpk`` when a path without an extension does not
    exist). A URL (``https://``, ``s3://``, ``gs://``, ``hf://``, …; needs ``burnpack[remote]``) is
    read with range requests, see ``burnpack.remote``. A binary file object is read from its
    current position (as ``torch.load`` does): a plain file at position 0 is memory-mapped, any
    other seekable one (``io.BytesIO``, an offset file) range by range; gzip/bz2/lzma streams are
    refused. A ``Source`` (an object with ``size`` and ``read(offset, length)``) is read like bytes.

    Args:
        source: A path, a URL, bytes in memory, a binary file object or a ``Source``.
        strict: Also reject files no Burn writer could have produced (see Reading levels).
        legacy_ok: Read files from older Burn versions the way their writer meant them, instead of
            the way current Burn (mis)reads them.
        framework: What ``get_tensor`` and ``view.slice[...]`` return: ``"np"`` (numpy) or
            ``"pt"`` (torch, needs ``burnpack[torch]``), as in safetensors' ``safe_open``.
        storage_options: Options of the URL's fsspec filesystem (credentials, endpoints); only
            for URLs.
        decoder: ``"exact"`` decodes the metadata with the token-by-token ciborium emulation
            only; ``"auto"`` uses the faster tiers that fall back to it. Both give the same pack.
        max_metadata_size: The largest metadata section accepted, in bytes (Burn's limit by
            default, ``burnpack.core.limits.LoadLimits``).
        max_tensors: The most tensors accepted (Burn's limit by default).
        max_tensor_size: The largest tensor accepted, in bytes (Burn's limit by default).

    Returns:
        The open pack; use it as a context manager to release the file when done.

    Raises:
        BurnpackError: The file is not a valid burnpack at the chosen level: its subclass is
            Burn's error variant (``InvalidHeader``, ``MetadataDeserializationError``, …), and a
            refusal by a limit names the keyword that lifts it.
        IoError: The file cannot be read (a ``FileNotFoundError`` when it does not exist).
        OptionError: An option is unknown or does not apply (``storage_options`` without a URL,
            ``decoder`` with ``legacy_ok``), or a limit is not a non-negative int (a ``ValueError``).
        TypeError: ``source`` is none of the accepted kinds.
    """
    if decoder not in DECODERS:
        raise OptionError(f"decoder must be one of {sorted(DECODERS)}, not {decoder!r}")
    if decoder != "auto" and legacy_ok:
        raise OptionError("decoder only applies without legacy_ok (legacy_ok rewrites old descriptors before decoding)")
    limits = LoadLimits(max_metadata_size, max_tensors, max_tensor_size)
    if framework not in FRAMEWORKS:
        raise OptionError(f"framework must be one of {sorted(FRAMEWORKS)}, not {framework!r}")
    if FRAMEWORKS[framework] == "pt":
        import_torch()
    if storage_options is not None and not is_url(source):
        raise OptionError("storage_options only applies to URLs")
    if is_url(source):
        data: Source = FsspecSource(source, storage_options)
        from_file = True
    elif isinstance(source, FsspecSource):  # a URL opened already (its first block cached)
        data = source
        from_file = True
    elif isinstance(source, (str, os.PathLike)):
        path = resolve_read_path(source)
        try:
            data = FileSource(path)
        except OSError as exc:
            raise IoError.from_os_error(exc) from None
        from_file = True
    elif isinstance(source, FileSource):  # a file opened already (through a closed folder)
        data = source
        from_file = True
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = BufferSource(source)
        from_file = False
    elif hasattr(source, "read") and hasattr(source, "size"):
        data = cast(Source, source)  # anything with size and read(offset, length)
        from_file = False
    elif hasattr(source, "read") and hasattr(source, "seek"):
        data = _file_object_source(source)
        from_file = True
    else:
        raise TypeError(f"load() takes a path, a bytes-like object or a Source (or a URL, or a binary file object), not {type(source).__name__}")
    try:
        pack = _open(data, from_file=from_file, legacy_ok=legacy_ok, decoder=decoder, limits=limits)
        pack.framework = FRAMEWORKS[framework]
        if strict:
            from .strict import check_strict

            check_strict(pack, pack._source)
        return pack
    except BaseException:
        close = getattr(data, "close", None)
        if close is not None:
            close()
        raise


def _file_object_source(file: Any) -> Source:
    """A file object's bytes from its current position, as ``torch.load`` and ``np.load`` read
    them: a plain file object (``open(path, "rb")``) of a regular file at position 0 is mapped;
    others are read by range from their position. A compressed stream is refused: seeking in it
    decompresses from the start again."""
    for module, name in _COMPRESSED_STREAMS:
        kind = getattr(sys.modules.get(module), name, None)
        if kind is not None and isinstance(file, kind):
            raise IoError(
                f"a {module}.{name} is a compressed stream, which cannot be read by range",
                where="pass its decompressed bytes instead: load(stream.read())",
            )
    try:
        plain = isinstance(file, (io.FileIO, io.BufferedReader, io.BufferedRandom)) and file.tell() == 0
        fd = file.fileno()
        regular = plain and stat.S_ISREG(os.fstat(fd).st_mode)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        regular = False
    try:
        if regular:
            return FileSource.from_fd(fd)
        return FileObjectSource(file)
    except OSError as exc:
        raise IoError.from_os_error(exc) from None
    except (ValueError, io.UnsupportedOperation) as exc:
        raise IoError(f"the file object cannot be read by range: {exc}") from None


_COMPRESSED_STREAMS = (("gzip", "GzipFile"), ("bz2", "BZ2File"), ("lzma", "LZMAFile"))
"""File objects that hand out the descriptor of their compressed file (looked up only when their
module is loaded: a caller holding one has imported it)."""


def _open(source: Source, *, from_file: bool, legacy_ok: bool, decoder: str = "auto", limits: LoadLimits = LoadLimits()) -> Pack:
    size = source.size
    if from_file and size > MAX_FILE_SIZE:
        raise ValidationError(f"File size {size} bytes exceeds maximum allowed size of {MAX_FILE_SIZE} bytes")
    head = source.read(0, HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        if from_file:
            raise IoError("failed to fill whole buffer", where=f"header: file is {size} bytes, need {HEADER_SIZE}")
        raise InvalidHeader(where=f"header: {size} bytes, need {HEADER_SIZE}")
    magic, version, metadata_size = HEADER.unpack(head)
    if magic != MAGIC:
        raise InvalidMagicNumber(where=f"bytes 0..4 are {head[:4].hex(' ')}")
    if version > FORMAT_VERSION:
        raise InvalidVersion(where=f"header version {version}, this reader supports <= {FORMAT_VERSION}")
    if metadata_size > limits.max_metadata_size:
        raise ValidationError(
            f"Metadata size {metadata_size} exceeds maximum allowed size of {limits.max_metadata_size} bytes "
            "(potential DoS attack)",
            where=limits.lift("max_metadata_size"),
        )
    metadata_end = HEADER_SIZE + metadata_size
    if size < metadata_end:
        where = f"metadata ends at byte {metadata_end}, file is {size} bytes"
        if from_file:
            raise IoError("failed to fill whole buffer", where=where)
        raise InvalidHeader(where=where)
    blob = source.read(HEADER_SIZE, metadata_size)
    try:
        with gc_paused():  # one object per tensor or per column entry, no cycles
            if legacy_ok:
                meta = legacy.decode_legacy(blob)
            elif decoder == "exact":
                meta = decode_metadata_exact(blob)
            else:
                meta = scan_table(blob) or decode_metadata(blob)
    except MetadataDeserializationError as exc:
        raise legacy.explain_rejection(exc, blob) from None
    if len(meta.tensors) > limits.max_tensors:
        raise ValidationError(
            f"File contains {len(meta.tensors)} tensors, exceeding maximum of {limits.max_tensors} (potential DoS attack)",
            where=limits.lift("max_tensors"),
        )
    max_end = _check_total_size(meta, metadata_end, size)
    data_start = data_section_start(metadata_size)
    old_layout = legacy.has_prealignment_layout(meta, metadata_end, max_end, size)
    if old_layout and legacy_ok:
        data_start = metadata_end
    elif old_layout:
        warnings.warn(legacy.legacy_warning(legacy.LAYOUT_DIAGNOSIS, legacy.LAYOUT_DETAILS), stacklevel=3)
    old_schemes: dict[str, dict] = {}
    if not isinstance(meta.tensors, TensorTable):  # a TensorTable holds no QFloat tensor: its scanner does not match them
        if not legacy_ok:
            legacy.warn_misread_schemes(meta, blob)
        old_schemes = legacy.old_qfloat_schemes(meta, blob)
    return Pack(
        source=source,
        version=version,
        metadata_size=metadata_size,
        meta=meta,
        data_section_start=data_start,
        legacy_layout=old_layout,
        legacy_ok=legacy_ok,
        from_file=from_file,
        old_schemes=old_schemes,
        limits=limits,
    )


def _check_total_size(meta: Metadata, metadata_end: int, available: int) -> int:
    """Burn's truncation check: metadata end + largest end offset (not the aligned start).

    Returns the largest end offset (0 without tensors).
    """
    if not meta.tensors:
        return 0
    if isinstance(meta.tensors, TensorTable):
        max_end = meta.tensors.max_end
    else:
        max_end = max(d.data_offsets[1] for d in meta.tensors.values())
    min_size = metadata_end + max_end
    if min_size > U64_MAX:
        raise ValidationError("File size calculation overflow")
    if available < min_size:
        raise ValidationError(f"File truncated: expected at least {min_size} bytes, got {available} bytes")
    return max_end

