"""Read and write ``.safetensors`` files with full validation, using nothing beyond numpy.

Layout: an 8-byte little-endian header length ``N``; ``N`` bytes of UTF-8 JSON (an object,
space-padded to a multiple of 8 by writers); then the data buffer. Each header entry maps a
tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}``, offsets relative to the
buffer; the optional ``__metadata__`` entry is a string-to-string map.

The reader refuses everything the ``safetensors`` library refuses, and also what the format's
README forbids but the library lets through (repeated JSON keys, a header not starting with
``{``, ``BOOL`` bytes other than 0 and 1), so a file it accepts loads everywhere.
The writer produces the library's exact bytes: entries ordered by descending dtype alignment
then name, compact JSON, space padding.
"""

from __future__ import annotations

import contextlib
import json
import math
import mmap
import os
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..codec._generated.metadata import SAFETENSORS_CODE_ORDER
from ..core.atomic import atomic_file
from ..core.dtypes import ResolvedTable, dtype_from_numpy, dtype_from_safetensors, numpy_dtype, safetensors_code
from ..errors import SafetensorsError, excerpt
from ..core.sidefile import parse_json
from ..core.source import open_regular
from ..core.tensor import NUMPY_MAX_DIMS

__all__ = [
    "build_header",
    "map_safetensors",
    "parse_safetensors",
    "read_safetensors",
    "serialize_safetensors",
    "write_safetensors",
]

# safetensors' own bound (MAX_HEADER_SIZE): a larger header is refused before it is read.
_MAX_HEADER = 100_000_000
# The writer lays tensors out from the end of safetensors' code order (by increasing alignment).
_DTYPES: Mapping[str, np.dtype] = ResolvedTable({code: dtype_from_safetensors(code) for code in SAFETENSORS_CODE_ORDER}, numpy_dtype)
_ALIGNMENT_RANK = {code: rank for rank, code in enumerate(_DTYPES)}


def read_safetensors(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read a ``.safetensors`` file without copying tensor data.

    The file is memory-mapped and every array is a read-only view of the mapping, so a
    multi-gigabyte file costs no memory until its pages are touched.

    Args:
        path: The file.

    Returns:
        ``(tensors, metadata)``: the arrays by name in file order, and the ``__metadata__`` strings.

    Raises:
        SafetensorsError: The file is not a valid safetensors file.
        OSError: The file cannot be opened.
    """
    with open_regular(path) as file:
        _, tensors, metadata = map_safetensors(file)
    return tensors, metadata


def map_safetensors(file: BinaryIO) -> tuple[mmap.mmap, dict[str, np.ndarray], dict[str, str]]:
    """Memory-map an open ``.safetensors`` file and parse it: ``(mapping, tensors, metadata)``,
    the arrays read-only views of the mapping (each at its byte offset in the file)."""
    size = os.fstat(file.fileno()).st_size
    if size < 8:
        raise SafetensorsError(f"file is {size} bytes, too short for the 8-byte header length")
    buffer = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        tensors, metadata = _parse(buffer)
    except BaseException:
        with contextlib.suppress(BufferError):  # views the parser made may not be gone yet
            buffer.close()
        raise
    return buffer, tensors, metadata


def parse_safetensors(
    data: bytes | bytearray | memoryview,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Parse safetensors bytes already in memory (downloads, archive members).

    Arrays are read-only views of ``data``, which must stay unmodified while they are in use.

    Args:
        data: The file's bytes.

    Returns:
        ``(tensors, metadata)``: the arrays by name in file order, and the ``__metadata__`` strings.

    Raises:
        SafetensorsError: The bytes are not a valid safetensors file.
    """
    return _parse(memoryview(data).cast("B"))


def _parse(
    buffer: bytes | bytearray | memoryview | mmap.mmap,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    if len(buffer) < 8:
        raise SafetensorsError(f"{len(buffer)} bytes is too short for the 8-byte header length")
    (header_size,) = struct.unpack_from("<Q", buffer)
    if header_size > _MAX_HEADER:
        raise SafetensorsError(f"header length {header_size} exceeds the {_MAX_HEADER}-byte limit")
    data_start = 8 + header_size
    if data_start > len(buffer):
        raise SafetensorsError(
            f"header length {header_size} runs past the end of the {len(buffer)} bytes"
        )
    header = _parse_header(bytes(buffer[8:data_start]))
    metadata = _metadata(header.pop("__metadata__", None))
    entries = sorted(
        (_entry(name, info, len(buffer) - data_start) for name, info in header.items()),
        key=lambda entry: entry[3],
    )
    end = 0
    for name, _, _, (begin, stop) in entries:
        if begin != end:
            defect = "overlap" if begin < end else "gap"
            raise SafetensorsError(
                f"tensor {excerpt(name)} starts at data byte {begin} but the previous data ends at "
                f"{end} ({defect})"
            )
        end = stop
    if end != len(buffer) - data_start:
        raise SafetensorsError(
            f"tensors cover {end} bytes but the data buffer holds {len(buffer) - data_start}"
        )
    tensors = {}
    for name, dtype, shape, (begin, _) in entries:
        tensors[name] = _view(buffer, name, dtype, shape, data_start + begin)
    return tensors, metadata


def _parse_header(raw: bytes) -> dict[str, object]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafetensorsError(f"header is not valid UTF-8: {exc}") from exc
    if not text.startswith("{"):
        raise SafetensorsError("header must be a JSON object starting with '{'")
    return parse_json(text, SafetensorsError, "header", object_pairs_hook=_json_object, parse_constant=_no_constant)


def _json_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object, refusing repeated keys (``json`` silently keeps the last) and strings
    escaping lone surrogates (``json`` decodes them; they are not UTF-8 and serde_json, which
    the safetensors library uses, refuses them)."""
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise SafetensorsError(f"header repeats the key {excerpt(key)}")
        result[key] = value
    for text in [key for key, _ in pairs] + [value for _, value in pairs if isinstance(value, str)]:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SafetensorsError(f"header string {excerpt(text)} is not valid Unicode") from exc
    return result


def _no_constant(name: str) -> object:
    raise SafetensorsError(f"header holds {name}, which is not JSON")


def _metadata(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise SafetensorsError("__metadata__ must map strings to strings")
    return value


def _entry(
    name: str, info: object, buffer_size: int
) -> tuple[str, np.dtype, tuple[int, ...], tuple[int, int]]:
    """Validate one header entry into ``(name, dtype, shape, (begin, end))``."""
    if not isinstance(info, dict):
        raise SafetensorsError(f"entry {excerpt(name)} is not an object")
    missing = [field for field in ("dtype", "shape", "data_offsets") if field not in info]
    if missing:
        raise SafetensorsError(f"tensor {excerpt(name)} lacks {', '.join(missing)}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(code, str) or code not in _DTYPES:
        raise SafetensorsError(
            f"tensor {excerpt(name)} has unsupported dtype {excerpt(code) if isinstance(code, str) else type(code).__name__}; supported: {', '.join(_DTYPES)}"
        )
    if not _ints(shape) or len(shape) > NUMPY_MAX_DIMS:
        raise SafetensorsError(
            f"tensor {excerpt(name)} shape must be a list of at most {NUMPY_MAX_DIMS} non-negative ints"
        )
    if not (_ints(offsets) and len(offsets) == 2 and offsets[0] <= offsets[1]):
        raise SafetensorsError(
            f"tensor {excerpt(name)} data_offsets must be [begin, end] with begin <= end"
        )
    dtype = _DTYPES[code]
    nbytes = math.prod(shape) * dtype.itemsize
    span = offsets[1] - offsets[0]
    if nbytes > buffer_size:
        raise SafetensorsError(f"tensor {excerpt(name)} of shape {shape} does not fit in the data buffer")
    if nbytes != span:
        raise SafetensorsError(
            f"tensor {excerpt(name)} is {shape} x {code} = {nbytes} bytes, but its offsets span {span}"
        )
    return name, dtype, tuple(shape), (offsets[0], offsets[1])


def _ints(value: object) -> bool:
    return isinstance(value, list) and all(type(item) is int and item >= 0 for item in value)


def _view(
    buffer: bytes | bytearray | memoryview | mmap.mmap,
    name: str,
    dtype: np.dtype,
    shape: tuple[int, ...],
    offset: int,
) -> np.ndarray:
    count = math.prod(shape)
    if dtype == np.bool_ and np.any(np.frombuffer(buffer, np.uint8, count, offset) > 1):
        raise SafetensorsError(f"BOOL tensor {excerpt(name)} holds bytes other than 0 and 1")
    try:
        array = np.frombuffer(buffer, dtype, count, offset).reshape(shape)
    except (ValueError, OverflowError) as exc:  # a zero-sized shape numpy cannot represent
        raise SafetensorsError(f"tensor {excerpt(name)} of shape {list(shape)}: {exc}") from exc
    array.flags.writeable = False
    return array


def serialize_safetensors(
    tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None
) -> bytes:
    """The safetensors bytes for ``tensors``, identical to ``safetensors.numpy.save``.

    Arrays may be strided, Fortran-ordered or big-endian: the file always holds C-order
    little-endian data. With more than one metadata entry, the keys are written sorted, where
    the library writes them in hash order.

    Args:
        tensors: The arrays by name.
        metadata: The ``__metadata__`` strings.

    Returns:
        The file's bytes.

    Raises:
        SafetensorsError: An array's dtype has no safetensors code.
    """
    header, arrays = _prepare(tensors, metadata)
    return header + b"".join(_little_endian_bytes(array) for array in arrays)


def write_safetensors(
    tensors: Mapping[str, np.ndarray],
    path: str | os.PathLike[str],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write ``tensors`` to ``path`` as ``serialize_safetensors`` lays them out, streaming one tensor
    at a time rather than building the file in memory.

    The file is replaced, never truncated in place (readers may have it mapped).

    Args:
        tensors: The arrays by name.
        path: The output path.
        metadata: The ``__metadata__`` strings.

    Raises:
        SafetensorsError: An array's dtype has no safetensors code.
        OSError: The file cannot be written.
    """
    header, arrays = _prepare(tensors, metadata)
    with atomic_file(Path(path), durable=False) as file:
        file.write(header)
        for array in arrays:
            file.write(_little_endian_bytes(array))


def _prepare(
    tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None
) -> tuple[bytes, list[np.ndarray]]:
    """The length-prefixed header and the arrays in file order."""
    specs = []
    for name, array in tensors.items():
        if not isinstance(array, np.ndarray):
            raise SafetensorsError(
                f"tensor {name!r} is a {type(array).__name__}, not a numpy array"
            )
        specs.append((name, _code(name, array.dtype), array.shape, array.nbytes))
    header, order = build_header(specs, metadata)
    arrays = list(tensors.values())
    return header, [arrays[i] for i in order]


def build_header(
    specs: Sequence[tuple[str, str, Sequence[int], int]], metadata: Mapping[str, str] | None
) -> tuple[bytes, list[int]]:
    """The length-prefixed header for tensors given as ``(name, dtype code, shape, nbytes)``,
    and the order (indices into ``specs``) in which their data must follow it.

    The layout is the ``safetensors`` library's: descending dtype alignment, then name.
    Lets a caller stream tensor data it has not produced yet.
    """
    entries = []
    for index, (name, code, shape, nbytes) in enumerate(specs):
        if not isinstance(name, str) or name == "__metadata__":
            raise SafetensorsError(f"tensor name {name!r} is not allowed")
        if code not in _ALIGNMENT_RANK:
            raise SafetensorsError(f"tensor {name!r} has unsupported dtype code {code!r}")
        entries.append((code, name, tuple(shape), nbytes, index))
    entries.sort(key=lambda entry: (-_ALIGNMENT_RANK[entry[0]], entry[1]))
    header: dict[str, object] = {}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("metadata must map strings to strings")
        header["__metadata__"] = dict(sorted(metadata.items()))
    offset = 0
    for code, name, shape, nbytes, _ in entries:
        if name in header:
            raise SafetensorsError(f"tensor name {name!r} appears twice")
        header[name] = {
            "dtype": code,
            "shape": list(shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    try:
        raw = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SafetensorsError(
            f"a name or metadata string is not encodable as UTF-8: {exc}"
        ) from exc
    raw += b" " * (-len(raw) % 8)
    if len(raw) > _MAX_HEADER:
        raise SafetensorsError(f"header of {len(raw)} bytes exceeds the {_MAX_HEADER}-byte limit")
    return struct.pack("<Q", len(raw)) + raw, [entry[4] for entry in entries]


def _code(name: str, dtype: np.dtype) -> str:
    try:
        code = safetensors_code(dtype_from_numpy(dtype))
    except ValueError:
        code = None
    if code is not None and _DTYPES[code] == dtype.newbyteorder("<"):
        return code
    raise SafetensorsError(f"tensor {name!r} has dtype {dtype}, which safetensors cannot hold here")


def _little_endian_bytes(array: np.ndarray) -> memoryview:
    """C-order little-endian bytes of ``array`` whatever its strides or byte order (copying
    only when it is not already so)."""
    contiguous = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return contiguous.reshape(-1).view(np.uint8).data
