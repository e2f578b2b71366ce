"""Side files and JSON text: read whole, within stated bounds, from anywhere in the package.

A side file is a small file read whole beside (or instead of) a pack: a shard folder's
``*.index.json``, a checkpoint's ``retention.json`` and Burn's ``Loss.log`` metric logs, DCP's
``.metadata``, a writer spec. :func:`read_side_file` opens it as packs are opened (regular files
only: a FIFO, device, socket or a symlink to one is refused before it is opened) and reads at most
``max_bytes`` of it. :func:`parse_json` is the one JSON parser for text from files, metadata and
request lines: it refuses text denser in objects and arrays than any listing needs and nesting
deeper than ``max_depth`` before parsing, so no JSON costs more than a small multiple of its size
and none reaches Python's recursion limit; an integer of more than :data:`MAX_INT_DIGITS` digits
is refused before it is converted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, BinaryIO, TypeAlias

from ..errors import BurnpackError, IoError
from .source import Folder, open_regular

__all__ = [
    "JSON", "JSONObject", "JSON_MAX_DEPTH", "MAX_INT_DIGITS", "SIDE_FILE_MAX_BYTES", "is_bounded_int", "parse_json", "read_capped",
    "read_side_file",
]  # fmt: skip

JSON: TypeAlias = Any
"""A JSON value (what ``json.loads`` returns and ``json.dumps`` takes): the one kind of value a
public signature leaves untyped, as its shape is the data's."""
JSONObject: TypeAlias = dict[str, Any]
"""A JSON object."""

SIDE_FILE_MAX_BYTES = 64 << 20
"""Default cap on a side file's size: an index of tensor names or a record of epochs is far smaller."""
JSON_MAX_DEPTH = 128
"""Default nesting limit of JSON objects and arrays: serde_json's (the safetensors library's parser)."""

MAX_INT_DIGITS = 309
"""The most decimal digits of an integer read from any file's text or pickle (JSON side files and
headers, PyTorch and DCP pickles): beyond float64's range and far beyond any count, size, offset,
step or seed, and well within what Python formats (4,300 digits)."""
_INT_BOUND = 10**MAX_INT_DIGITS


def is_bounded_int(value: int) -> bool:
    """Whether ``value`` has at most :data:`MAX_INT_DIGITS` decimal digits."""
    return -_INT_BOUND < value < _INT_BOUND


# A tensor entry (``"a":{"dtype":"U8","shape":[],"data_offsets":[0,0]}``) spends at least 16 bytes
# per JSON object or array; json builds ~60-byte objects for 2-byte ``{}``, so denser text could
# cost 30x its size in memory.
_JSON_BYTES_PER_CONTAINER = 8
_READ_PIECE = 1 << 20
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'[]{}"'))


def read_side_file(
    path: str | os.PathLike[str], *, max_bytes: int = SIDE_FILE_MAX_BYTES, lift: str = "max_bytes", folder: Folder | None = None
) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (default :data:`SIDE_FILE_MAX_BYTES`),
    reached through ``folder`` (then inside it, see :class:`~burnpack.core.source.Folder`) when given.

    Raises ``IoError`` (an ``OSError``; ``FileNotFoundError`` etc. for a missing file) for a file
    that cannot be opened, is not a regular file, or holds more than ``max_bytes`` bytes (the
    refusal names ``lift``, the caller's parameter that raises the cap); no more than
    ``max_bytes + 1`` bytes are read whatever the file claims or grows to.
    """
    where = os.fspath(path)
    try:
        with open_regular(path, folder=folder) as file:
            return read_capped(file, max_bytes=max_bytes, where=where, lift=lift)
    except IoError:
        raise
    except OSError as exc:
        raise IoError.from_os_error(exc, where=where) from None


def read_capped(stream: BinaryIO, *, max_bytes: int, where: str, lift: str = "max_bytes") -> bytes:
    """All of a binary stream (a file, standard input) when it holds at most ``max_bytes``;
    else ``IoError`` after reading ``max_bytes + 1`` bytes, naming ``lift``, the parameter that
    raises the cap."""
    chunks: list[bytes] = []
    total = 0
    while total <= max_bytes:  # by pieces: read(n) would allocate n bytes up front
        asked = min(max_bytes + 1 - total, _READ_PIECE)
        chunk = stream.read(asked)
        if not chunk:
            break
        if len(chunk) > asked:  # kept, such answers could hold any amount past the cap
            raise IoError(f"read({asked}) returned {len(chunk)} bytes, more than asked", where=where)
        chunks.append(chunk)
        total += len(chunk)
    if total > max_bytes:
        raise IoError(f"more than {max_bytes} bytes, the limit for this input ({lift}=...)", where=where)
    return b"".join(chunks)


def json_depth(text: str) -> int:
    """How deeply the objects and arrays of JSON text nest (brackets inside strings not counted).

    Linear and in bulk: escaped backslashes and quotes are dropped, then everything but brackets
    and quotes; a bracket counts when an even number of quotes precede it.
    """
    raw = text.encode("utf-8", "surrogatepass").replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = raw.translate(None, _NOT_STRUCTURE)
    if not kept:
        return 0
    import numpy as np  # only when JSON is parsed: the command line starts without numpy

    codes = np.frombuffer(kept, np.uint8)
    outside = np.bitwise_xor.accumulate((codes == ord('"')).view(np.uint8)) == 0
    opens = ((codes == ord("[")) | (codes == ord("{"))) & outside
    closes = ((codes == ord("]")) | (codes == ord("}"))) & outside
    return int(np.cumsum(opens.view(np.int8) - closes.view(np.int8), dtype=np.int32).max())


class _LongInt(Exception):
    """An integer of JSON text longer than :data:`MAX_INT_DIGITS` digits (its digit count)."""


def _bounded_int(digits: str) -> int:
    length = len(digits) - digits.startswith("-")
    if length > MAX_INT_DIGITS:
        raise _LongInt(length)
    return int(digits)


def parse_json(
    text: str | bytes,
    error: Callable[[str], Exception],
    what: str,
    *,
    max_depth: int = JSON_MAX_DEPTH,
    object_pairs_hook: Callable[[list[tuple[str, JSON]]], JSON] | None = None,
    parse_constant: Callable[[str], JSON] | None = None,
) -> JSON:
    """Parse JSON text (UTF-8 bytes or str) after the density and depth checks.

    Every failure is ``error(message)`` with ``what`` named in the message: bytes that are not
    UTF-8, text that is not JSON, denser than one object or array per 8 characters (brackets in
    strings counted), or nested deeper than ``max_depth`` (default :data:`JSON_MAX_DEPTH`;
    brackets in strings not counted). Both checks run before parsing, in time linear in the
    text's length. So is an integer of more than :data:`MAX_INT_DIGITS` digits, before it is
    converted.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{what} is not UTF-8: {exc}") from None
    containers = text.count("{") + text.count("[")  # strings included: a bound, cheap and copy-free
    if containers * _JSON_BYTES_PER_CONTAINER > len(text) + 64:
        raise error(
            f"{what} holds {containers} JSON objects and arrays in {len(text)} characters, more than "
            f"one per {_JSON_BYTES_PER_CONTAINER}: refused before parsing, as no listing is that dense"
        )
    depth = json_depth(text) if containers > max_depth else 0
    if depth > max_depth:
        raise error(f"{what} nests JSON objects and arrays {depth} deep, more than the limit of {max_depth}")
    options: dict[str, Any] = {"parse_int": _bounded_int}
    if object_pairs_hook is not None:
        options["object_pairs_hook"] = object_pairs_hook
    if parse_constant is not None:
        options["parse_constant"] = parse_constant
    try:
        return json.loads(text, **options)
    except BurnpackError:  # the caller's hooks refused a value
        raise
    except _LongInt as exc:
        raise error(f"{what} holds an integer of {exc.args[0]:,} digits, more than the limit of {MAX_INT_DIGITS}") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise error(f"{what} is not valid JSON: {exc}") from None
