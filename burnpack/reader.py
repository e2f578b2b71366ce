"""Reading burnpack files: ``load`` and the ``Pack`` it returns.

By default the reader accepts exactly what Burn's ``Reader`` accepts and rejects what it rejects,
at the same stage (opening vs. accessing a tensor) and with the same error kind
(burn@2c06be35 crates/burn-pack/src/reader.rs). ``strict=True`` additionally rejects anything a
Burn writer could not have produced. Opening reads only the header and the metadata.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
import numpy as np

from . import legacy, quant
from ._generated.layout import (
    FORMAT_VERSION,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    MAX_FILE_SIZE,
    MAX_METADATA_SIZE,
    MAX_TENSOR_COUNT,
    MAX_TENSOR_SIZE,
    data_section_start,
)
from ._generated.types import DType, Metadata, Scalar, TensorDescriptor
from .dtypes import UNIT_VIEW_SPECS, element_size, numpy_dtype, view_bytes_as
from .errors import (
    InvalidHeader,
    InvalidMagicNumber,
    InvalidVersion,
    IoError,
    LegacyFormatError,
    LegacyFormatWarning,
    MetadataDeserializationError,
    QuantizationError,
    TensorNotFound,
    ValidationError,
)
from .metadata import decode_metadata
from .source import BufferSource, FileSource, Source

U64_MAX = (1 << 64) - 1
PathLike = str | os.PathLike[str]


def resolve_read_path(path: PathLike) -> Path:
    """Burn's reader rule: an extensionless path that does not exist gets ``.bpk`` appended."""
    p = Path(path)
    if not has_extension(p) and not p.exists():
        return p.with_name(p.name + ".bpk")
    return p


def has_extension(path: Path) -> bool:
    """Rust's ``Path::extension().is_some()``: a dot after the first character of the name.

    Unlike Python's ``suffix``, ``"trail."`` has an (empty) extension and ``".hidden"`` has none.
    """
    name = path.name
    return "." in name[1:] if name not in ("", ".", "..") else False


NUMPY_MAX_DIMS = 64
_INTP_MAX = int(np.iinfo(np.intp).max)


def check_numpy_shape(name: str, shape: tuple[int, ...], itemsize: int) -> None:
    """Refuse a shape numpy cannot hold: more than 64 dimensions, or more bytes than it can index.

    Such a file opens (Burn allows any rank and u64 dimensions); only the numpy view is refused.
    """
    if len(shape) > NUMPY_MAX_DIMS:
        raise ValidationError(
            f"tensor '{name}' has {len(shape)} dimensions; numpy arrays have at most {NUMPY_MAX_DIMS}",
            where="numpy()",
        )
    if math.prod(dim for dim in shape if dim) * max(itemsize, 1) > _INTP_MAX:
        raise ValidationError(
            f"tensor '{name}' of shape {list(shape)} holds more elements than numpy can index",
            where="numpy()",
        )


def _os_error(exc: OSError) -> IoError:
    if exc.errno is not None:
        return IoError(f"{exc.strerror} (os error {exc.errno})", where=str(exc.filename or ""))
    return IoError(str(exc))


class TensorView:
    """One tensor of an open pack: its descriptor, and its bytes on demand (zero-copy)."""

    __slots__ = ("_pack", "name", "dtype", "shape", "data_offsets", "param_id")

    def __init__(self, pack: Pack, name: str, descriptor: TensorDescriptor) -> None:
        self._pack = pack
        self.name = name
        self.dtype: DType = descriptor.dtype
        self.shape: tuple[int, ...] = descriptor.shape
        self.data_offsets: tuple[int, int] = descriptor.data_offsets
        self.param_id: int | None = descriptor.param_id

    def __repr__(self) -> str:
        return f"TensorView({self.name!r}, dtype={self.dtype!r}, shape={list(self.shape)}, param_id={self.param_id})"

    @property
    def byte_len(self) -> int:
        """Bytes the descriptor's offsets span."""
        start, end = self.data_offsets
        return end - start

    @property
    def numel(self) -> int:
        """Number of elements the shape holds (1 for a 0-d tensor)."""
        return math.prod(self.shape)

    def memoryview(self) -> memoryview:
        """The tensor's bytes without copying (read-only for files)."""
        return self._pack._tensor_bytes(self)

    def tobytes(self) -> bytes:
        """The tensor's bytes as a copy (Burn's ``Reader::tensor_data``)."""
        return bytes(self.memoryview())

    def read(self, offset: int = 0, length: int | None = None) -> bytes:
        """A slice of the tensor's bytes, reading only that range from the source."""
        start, end = self._pack._tensor_range(self)
        if offset < 0 or offset > end - start:
            raise ValueError(f"offset {offset} is outside tensor {self.name!r} of {end - start} bytes")
        length = end - start - offset if length is None else min(length, end - start - offset)
        return self._pack._source.read(start + offset, length)

    def numpy(self, *, dequantize: bool = False) -> np.ndarray:
        """The tensor as a numpy array viewing the pack's bytes (no copy).

        QFloat tensors are their raw ``uint8`` bytes (values and inline scales, see ``dtype``),
        or with ``dequantize=True`` their float32 values (see :meth:`dequantize`); Flex32 is
        float32; Bool stores are ``bool``, ``uint8`` or ``uint32``.
        """
        if dequantize and self.dtype.variant == "QFloat":
            return self.dequantize()
        view = self.memoryview()
        np_dtype = numpy_dtype(self.dtype)
        size = element_size(self.dtype)
        if size is None:
            return view_bytes_as(view, 0, view.nbytes, np_dtype)
        check_numpy_shape(self.name, self.shape, np_dtype.itemsize)
        numel = self.numel
        if view.nbytes != numel * size:
            raise ValidationError(
                f"tensor '{self.name}' holds {view.nbytes} bytes but its shape {list(self.shape)} and dtype "
                f"{self.dtype.variant} need {numel * size}",
                where=f"data_offsets {list(self.data_offsets)}",
            )
        return view_bytes_as(view, 0, numel, np_dtype).reshape(self.shape)

    def quantized(self) -> quant.QuantizedTensor:
        """A QFloat tensor in parts: int8 ``values`` (logical shape), ``scales`` (block grid),
        ``global_scale`` and ``scheme``; raises ``QuantizationError`` for other dtypes, schemes
        the bytes alone cannot give, and payloads whose length does not fit the scheme."""
        if self.dtype.variant != "QFloat":
            raise QuantizationError(f"tensor '{self.name}' is {self.dtype.variant}, not a quantized (QFloat) tensor")
        old = self._pack._old_schemes.get(self.name)
        if old is None:
            return quant.decode(self.memoryview(), self.dtype.value, self.shape, name=self.name)
        if not self._pack._legacy_ok:
            raise quant.UnsupportedQuantization(quant.legacy_refusal(old), where=f"tensor '{self.name}'")
        return quant.decode_legacy(self.memoryview(), old, self.dtype.value, self.shape, name=self.name)

    def dequantize(self) -> np.ndarray:
        """A QFloat tensor's float32 values, ``fl32(S·q)`` bit for bit as Burn's CPU backends compute."""
        if self.dtype.variant == "QFloat" and self.name not in self._pack._old_schemes:
            return quant.dequantize(self.memoryview(), self.dtype.value, self.shape, name=self.name)
        return self.quantized().dequantize()


class Pack(Mapping[str, TensorView]):
    """An open burnpack file: a read-only mapping of tensor name → ``TensorView``, sorted by name."""

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
    ) -> None:
        self._source = source
        self._descriptors = meta.tensors
        self._names = sorted(meta.tensors)
        self.version = version
        self.metadata_size = metadata_size
        self.metadata: dict[str, str] = meta.metadata
        self.scalars: dict[str, Scalar] = meta.scalars
        self.data_section_start = data_section_start
        self.legacy_layout = legacy_layout
        """True when the file has the pre-2025-12-02 layout (data right after the metadata)."""
        self._legacy_ok = legacy_ok
        self._from_file = from_file
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
        return name in self._descriptors

    def __repr__(self) -> str:
        return f"<burnpack.Pack: {len(self)} tensors, {len(self.metadata)} metadata, {len(self.scalars)} scalars>"

    def __enter__(self) -> Pack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the file mapping (arrays already taken keep it alive until freed)."""
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
        return self._source.size

    def tensors(self) -> list[TensorView]:
        """Every tensor in name order, each checked as Burn's ``into_tensors`` checks it."""
        views = [self[name] for name in self._names]
        for view in views:
            self._tensor_range(view, whole_pack=True)
        return views

    def numpy(self, *, dequantize: bool = False) -> dict[str, np.ndarray]:
        """Every tensor as a zero-copy numpy array, keyed by name in sorted order.

        Checked as ``tensors()`` is; this is the bulk path, without a ``TensorView`` per tensor.
        ``dequantize=True`` gives QFloat tensors as their float32 values instead of raw bytes.
        """
        if dequantize:
            arrays = self.numpy()
            arrays.update(self.dequantize())
            return arrays
        buffer = _zero_copy(self._source)
        if buffer is None or self.legacy_layout:
            return {view.name: view.numpy() for view in self.tensors()}
        out = {}
        base, descriptors = self.data_section_start, self._descriptors
        limit = self._source.size - base
        sections: dict[np.dtype, np.ndarray] = {}  # the data section viewed once per numpy dtype
        for name in self._names:
            dtype, shape, (start, end), _ = descriptors[name]
            size, np_dtype = UNIT_VIEW_SPECS.get(dtype.variant, (0, None)) if dtype.value is None else (0, None)
            length = end - start
            if (
                not size
                or not 0 <= length <= MAX_TENSOR_SIZE
                or end > limit
                or start % size
                or length != math.prod(shape) * size
                or len(shape) > NUMPY_MAX_DIMS
                or 0 in shape
            ):
                view = self[name]  # the checked path: Bool stores, QFloat, or raises Burn's error
                self._tensor_range(view, whole_pack=True)
                out[name] = view.numpy()
                continue
            section = sections.get(np_dtype)
            if section is None:
                section = sections[np_dtype] = np.frombuffer(buffer, np_dtype, limit // size, base)
            out[name] = section[start // size : end // size].reshape(shape)
        return out

    def dequantize(self) -> dict[str, np.ndarray]:
        """Every QFloat tensor's float32 values, by name (other tensors are left out)."""
        return {name: self[name].dequantize() for name in self._names if self._descriptors[name].dtype.variant == "QFloat"}

    @property
    def descriptors(self) -> dict[str, TensorDescriptor]:
        """Name → descriptor, as decoded (sorted by name)."""
        return {name: self._descriptors[name] for name in self._names}

    # -- data access -------------------------------------------------------------------------
    def _tensor_range(self, view: TensorView, *, whole_pack: bool = False) -> tuple[int, int]:
        """Absolute [start, end) of a tensor, with Burn's ``tensor_range`` checks.

        Burn words an out-of-range tensor differently in ``into_tensors`` (``whole_pack``) and in
        ``tensor_data`` for memory and file sources; the messages follow it.
        """
        name = view.name
        diagnose_legacy = self.legacy_layout and not self._legacy_ok
        start_rel, end_rel = view.data_offsets
        start, end = self.data_section_start + start_rel, self.data_section_start + end_rel
        if start > U64_MAX or end > U64_MAX:
            raise ValidationError(f"Tensor '{name}' has corrupted offset data: overflow")
        if end < start:
            raise ValidationError(f"Tensor '{name}' has corrupted offset data: end {end} < start {start}")
        if end - start > MAX_TENSOR_SIZE:
            raise ValidationError(
                f"Tensor '{name}' size {end - start} exceeds maximum allowed size of {MAX_TENSOR_SIZE} bytes "
                "(potential DoS attack)"
            )
        available = self._source.size
        if end > available:
            if whole_pack:
                message = f"Tensor '{name}' data range {start}..{end} could not be viewed (source is {available} bytes)"
            elif self._from_file:
                message = f"Tensor '{name}' data range {start}..{end} could not be viewed"
            else:
                message = f"Tensor data range {start}..{end} is out of bounds (buffer is {available} bytes)"
            if diagnose_legacy:  # Burn's own error, with the diagnosis beside it
                raise LegacyFormatError(message, where=f"tensor '{name}', file is {available} bytes; {legacy.LAYOUT_DIAGNOSIS}")
            raise ValidationError(message, where=f"tensor '{name}', file is {available} bytes")
        # An in-range tensor of a pre-alignment-looking file is returned as Burn returns it: the
        # layout cannot be told apart from a modern file cut at exactly 10 + M + max_end, whose
        # bytes are right. Opening such a file has already warned (LegacyFormatWarning).
        return start, end

    def _tensor_bytes(self, view: TensorView) -> memoryview:
        start, end = self._tensor_range(view)
        buffer = _zero_copy(self._source)
        if buffer is None:
            return memoryview(self._source.read(start, end - start))
        return buffer[start:end]


def _zero_copy(source: Source) -> memoryview | None:
    buffer = getattr(source, "buffer", None)
    return buffer() if buffer is not None else None


def load(source: PathLike | bytes | bytearray | memoryview | Source, *, strict: bool = False, legacy_ok: bool = False) -> Pack:
    """Open a burnpack from a path (memory-mapped, lazy), bytes in memory, or any ``Source``.

    A ``Source`` (an object with ``size`` and ``read(offset, length)``, e.g. one serving HTTP range
    requests) is read like bytes: opening reads the header and the metadata, and each tensor's
    range only when it is accessed.

    ``strict=True`` also rejects files no Burn writer could have produced (see ``burnpack.strict``).
    ``legacy_ok=True`` reads files from older Burn versions the way their writer meant them
    instead of the way current Burn (mis)reads them.
    """
    if isinstance(source, (str, os.PathLike)):
        path = resolve_read_path(source)
        try:
            data: Source = FileSource(path)
        except OSError as exc:
            raise _os_error(exc) from None
        from_file = True
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = BufferSource(source)
        from_file = False
    elif hasattr(source, "read") and hasattr(source, "size"):
        data = source
        from_file = False
    else:
        raise TypeError(f"load() takes a path, a bytes-like object or a Source, not {type(source).__name__}")
    try:
        pack = _open(data, from_file=from_file, legacy_ok=legacy_ok)
        if strict:
            from .strict import check_strict

            check_strict(pack)
        return pack
    except BaseException:
        close = getattr(data, "close", None)
        if close is not None:
            close()
        raise


def _open(source: Source, *, from_file: bool, legacy_ok: bool) -> Pack:
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
    if metadata_size > MAX_METADATA_SIZE:
        raise ValidationError(
            f"Metadata size {metadata_size} exceeds maximum allowed size of {MAX_METADATA_SIZE} bytes "
            "(potential DoS attack)"
        )
    metadata_end = HEADER_SIZE + metadata_size
    if size < metadata_end:
        where = f"metadata ends at byte {metadata_end}, file is {size} bytes"
        if from_file:
            raise IoError("failed to fill whole buffer", where=where)
        raise InvalidHeader(where=where)
    blob = source.read(HEADER_SIZE, metadata_size)
    try:
        meta = legacy.decode_legacy(blob) if legacy_ok else decode_metadata(blob)
    except MetadataDeserializationError as exc:
        raise legacy.explain_rejection(exc, blob) from None
    if len(meta.tensors) > MAX_TENSOR_COUNT:
        raise ValidationError(
            f"File contains {len(meta.tensors)} tensors, exceeding maximum of {MAX_TENSOR_COUNT} (potential DoS attack)"
        )
    max_end = _check_total_size(meta, metadata_end, size)
    data_start = data_section_start(metadata_size)
    old_layout = legacy.has_prealignment_layout(meta, metadata_end, max_end, size)
    if old_layout and legacy_ok:
        data_start = metadata_end
    elif old_layout:
        warnings.warn(legacy.LAYOUT_DIAGNOSIS, LegacyFormatWarning, stacklevel=3)
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
    )


def _check_total_size(meta: Metadata, metadata_end: int, available: int) -> int:
    """Burn's truncation check: metadata end + largest end offset (not the aligned start).

    Returns the largest end offset (0 without tensors).
    """
    if not meta.tensors:
        return 0
    max_end = max(d.data_offsets[1] for d in meta.tensors.values())
    min_size = metadata_end + max_end
    if min_size > U64_MAX:
        raise ValidationError("File size calculation overflow")
    if available < min_size:
        raise ValidationError(f"File truncated: expected at least {min_size} bytes, got {available} bytes")
    return max_end

