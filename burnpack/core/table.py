"""Tensor descriptors in columns: opening a pack of many tensors without an object per tensor.

A pack's metadata is mostly its ``tensors`` map. When that map is exactly as Burn writes it
(definite lengths, names sorted and distinct, unit or Bool dtypes), one regex pass of the
generated descriptor pattern splits it into columns, numpy decodes the offsets, and a
``TensorDescriptor`` is built only when a tensor is asked for. Anything else returns None and
the reader falls back to the per-entry decoders (``burnpack.core.metadata.decode_metadata``), which
also word the errors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from itertools import repeat
from typing import Any

import numpy as np

from ..codec._cbor import fast_loads, map_header, uints
from ..codec._generated.metadata import (
    METADATA_FIRST_KEY,
    DType,
    Metadata,
    TensorDescriptor,
    DType_SCAN,
    TensorDescriptor_HEAD,
    TensorDescriptor_LITERAL_BYTES,
    TensorDescriptor_OPTIONAL_LITERAL_BYTES,
    TensorDescriptor_RE,
    fast_Metadata,
)
from ..codec._kernels import load_kernel, use_kernel

__all__ = ["KERNEL", "TensorTable", "python_columns", "scan_table"]

_HEADS = bytes(range(TensorDescriptor_HEAD, TensorDescriptor_HEAD + 1 + len(TensorDescriptor_OPTIONAL_LITERAL_BYTES)))
"""The struct heads a descriptor can start with (without and with each optional field)."""


@functools.cache
def _entry_patterns() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """The regexes of :func:`python_columns`, compiled when first needed (the compiled kernel
    needs neither, and compiling them is a measurable part of a command's start):

    ``_ENTRY_RE``: one tensors-map entry per match; names of 256 bytes or more are left to the
    per-entry scanner. ``_PLAIN_ENTRY_RE``: the same for names holding no struct-head byte (every
    ASCII name): the descriptor then starts at the first such byte, found without trying the
    descriptor at every byte of the name. Where it matches, it matches as ``_ENTRY_RE`` does; a
    name it cannot match sends the scan to ``_ENTRY_RE``."""
    entry = re.compile(
        rb"([\x60-\x77]|\x78[\x00-\xff])([\x00-\xff]{0,255}?)"  # the name, checked against its length afterwards
        + TensorDescriptor_RE.pattern
        + rb"|([\x00-\xff]+)"  # anything else ends the run: findall's matches are then back to back
    )
    plain = re.compile(
        rb"([\x60-\x77]|\x78[\x00-\xff])([^" + re.escape(_HEADS) + rb"]{0,255})"  # a name without those bytes
        + TensorDescriptor_RE.pattern
        + rb"|([\x00-\xff]+)"
    )
    return entry, plain


class TensorTable(Mapping[str, TensorDescriptor]):
    """Name → ``TensorDescriptor``, stored as columns; names are sorted, as Burn writes them."""

    __slots__ = ("names", "_dtype_keys", "_shape_keys", "_shapes", "_starts", "_start_column", "_ends", "_end_column", "max_end",
                 "_param_ids", "_index", "_offsets")  # fmt: skip

    def __init__(
        self,
        names: list[str],
        dtype_keys: list[bytes],
        shape_keys: list[bytes],
        shapes: dict[bytes, tuple[int, ...]],
        starts: tuple[bytes, ...] | bytes,
        ends: np.ndarray | bytes,
        param_ids: list[bytes],
        max_end: int,
    ) -> None:
        self.names = names
        self._dtype_keys, self._shape_keys, self._shapes = dtype_keys, shape_keys, shapes
        self._starts: np.ndarray | None = None
        self._start_column = starts
        self._ends: np.ndarray | None = None
        self._end_column = ends
        self.max_end = max_end
        """The largest end offset (0 without tensors)."""
        self._param_ids = param_ids
        self._index: dict[str, int] | None = None
        self._offsets: list[tuple[int, int]] = []

    @property
    def starts(self) -> np.ndarray:
        """Relative start offsets, a read-only ``uint64`` column in name order; made from the
        scan's native values or the CBOR integers it matched when first asked for (an open, or
        a listing of names, needs neither column)."""
        if self._starts is None:
            column = self._start_column
            self._starts = _native_column(column) if isinstance(column, bytes) else _uint_column(column)
            self._starts.flags.writeable = False
            self._start_column = ()
        return self._starts

    @property
    def ends(self) -> np.ndarray:
        """Relative end offsets, a read-only ``uint64`` column in name order."""
        if self._ends is None:
            column = self._end_column
            self._ends = column if isinstance(column, np.ndarray) else _native_column(column)
            self._ends.flags.writeable = False
            self._end_column = b""
        return self._ends

    def __getitem__(self, name: str) -> TensorDescriptor:
        index = self._index
        if index is None:
            index = self._index = dict(zip(self.names, range(len(self.names))))
            self._offsets = list(zip(self.starts.tolist(), self.ends.tolist()))
        i = index[name]
        raw = self._param_ids[i]
        param_id = None if not raw else raw[0] if len(raw) == 1 else int.from_bytes(raw[1:], "big")
        return tuple.__new__(TensorDescriptor, (DType_SCAN[self._dtype_keys[i]], self._shapes[self._shape_keys[i]], self._offsets[i], param_id))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def groups(self) -> list[tuple[DType, tuple[int, ...], np.ndarray]]:
        """(dtype, shape, indices in name order) for each (dtype, shape) the table holds."""
        count = len(self.names)
        dtypes = self._dtype_keys
        if not count:
            return []
        if dtypes.count(dtypes[0]) == count:  # one dtype throughout (most models): the shape tells the group
            keys = self._shape_keys
        else:
            keys = list(map(bytes.__add__, dtypes, self._shape_keys))
        groups = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        if len(groups) == 1:
            members = [np.arange(count)]
        else:
            codes = np.fromiter(map(groups.__getitem__, keys), np.intp, count)
            order = np.argsort(codes, kind="stable")
            members = np.split(order, np.cumsum(np.bincount(codes, minlength=len(groups)))[:-1])
        out = []
        for index in members:
            first = int(index[0])
            out.append((DType_SCAN[self._dtype_keys[first]], self._shapes[self._shape_keys[first]], index))
        return out


_ctable: Any = load_kernel("burnpack.core._ctable")
"""The optional compiled kernel; None when not built: the same columns from the regex scan."""

KERNEL = "python" if _ctable is None else "compiled"
"""Which path :func:`scan_table` takes by default: ``"compiled"`` (``_ctable.c``) or ``"python"``."""


def _text_key(name: str) -> bytes:
    """A struct field's key as Burn writes it: a short definite text string."""
    raw = name.encode()
    return bytes([0x60 + len(raw)]) + raw


_KERNEL_SPEC = (
    TensorDescriptor_HEAD,
    _text_key(TensorDescriptor._fields[0]),
    tuple(DType_SCAN),
    _text_key(TensorDescriptor._fields[1]),
    _text_key(TensorDescriptor._fields[2]) + b"\x82",
    _text_key(TensorDescriptor._fields[3]),
)
"""What ``_ctable.scan_entries`` matches: the struct head, each field's key (data_offsets with its
pair's head) and the dtypes, all from the generated codec."""

Columns = tuple[int, list[str], list[bytes], bytes, list[bytes], tuple[bytes, ...] | bytes, np.ndarray | bytes, list[bytes], int]
"""(end of the entries, names, dtype keys, the shared rank head, shape keys, starts, ends,
param_id bytes, the largest end): starts as the CBOR integers matched or native values, ends
as an array or native values."""


def scan_table(buf: bytes | bytearray | memoryview, *, compiled: bool | None = None) -> Metadata | None:
    """The metadata with its tensors as a ``TensorTable``, or None if the map is not as Burn writes it.

    ``compiled``: the compiled scan (:data:`KERNEL`; an error when it is not built), the regex scan
    (False), or the compiled scan when built (None). Both give the same table or both None."""
    kernel = use_kernel(_ctable, "burnpack.core._ctable", compiled)
    buf = bytes(buf)  # a Source may answer with any bytes-like object (no copy for bytes)
    fields = buf[0] - 0xA0 if buf else 0
    if not 1 <= fields <= 3 or not buf.startswith(METADATA_FIRST_KEY, 1):
        return None
    try:
        count, pos = map_header(buf, 1 + len(METADATA_FIRST_KEY))
    except Exception:
        return None
    if not count:
        end, table = pos, TensorTable([], [], [], {}, (), b"", [], 0)
    else:
        columns: Columns | None = None
        if kernel and count <= len(buf):  # a larger claim cannot fit
            columns = _ctable.scan_entries(buf, pos, count, _KERNEL_SPEC)
        if columns is None:
            columns = python_columns(buf, pos, count)
        if columns is None:
            return None
        end, names, dtypes, rank_head, shape_keys, starts, ends, param_ids, max_end = columns
        shapes = {}
        for key in dict.fromkeys(shape_keys):
            full = rank_head + key
            head_len = 1 if full[0] < 0x98 else 2 if full[0] == 0x98 else 3
            shape = uints(full[:head_len], full[head_len:])
            if shape is None:
                return None
            shapes[key] = shape
        table = TensorTable(names, dtypes, shape_keys, shapes, starts, ends, param_ids, max_end)
    if fields == 1 and end == len(buf):  # the tensors map alone, as Burn writes a pack without metadata or scalars
        return Metadata(table, {}, {})  # type: ignore[arg-type]  # a read-only Mapping where the type says dict
    try:
        rest_map = fast_loads(bytes([0xA0 + fields - 1]) + buf[end:])
        if type(rest_map) is not dict or "tensors" in rest_map:
            return None
        others = fast_Metadata({"tensors": {}, **rest_map})
    except Exception:
        return None
    return others._replace(tensors=table)  # type: ignore[arg-type]  # a read-only Mapping where the type says dict


def python_columns(buf: bytes, pos: int, count: int) -> Columns | None:
    """The ``count`` (at least one) entries from ``pos`` split into columns by the regex scan, or
    None if one is not as Burn writes it; ``_ctable.scan_entries`` is the same in C."""
    entry_re, plain_entry_re = _entry_patterns()
    rows = plain_entry_re.findall(buf, pos)  # back to back from pos to the end of buf
    if len(rows) < count or rows[count - 1][-1]:  # an entry it could not match
        rows = entry_re.findall(buf, pos)
    if len(rows) < count:
        return None
    end = len(buf) - sum(map(_row_length, rows[count:]))
    name_heads, names_raw, heads, dtypes, shape_heads, shape_bodies, starts_raw, ends_raw, param_ids, _ = zip(*rows[:count])
    struct_heads = b"".join(heads)
    if len(struct_heads) != count:
        return None  # some entry is not as Burn writes it
    if not (struct_heads.count(TensorDescriptor_HEAD) == param_ids.count(b"") in (0, count)):
        has_param = np.fromiter(map(len, param_ids), np.intp, count) > 0
        if (np.frombuffer(struct_heads, np.uint8) - TensorDescriptor_HEAD != has_param).any():
            return None  # the struct's entry count disagrees with the fields present
    declared = np.frombuffer(b"".join(name_heads), np.uint8).astype(np.intp)
    if len(declared) == count:  # every name shorter than 24 bytes: the head holds the length
        lengths = declared - 0x60
    elif len(declared) == 2 * count:  # every name longer: 0x78 and a length byte
        lengths = declared[1::2]
    else:
        widths = np.fromiter(map(len, name_heads), np.intp, count)
        last = declared[np.cumsum(widths) - 1]
        lengths = np.where(widths == 1, last - 0x60, last)
    if (lengths != np.fromiter(map(len, names_raw), np.intp, count)).any():
        return None
    try:
        names = b"\x00".join(names_raw).decode().split("\x00")
    except UnicodeDecodeError:
        return None
    if len(names) != count or not all(map(str.__lt__, names, names[1:])):
        return None  # a NUL in a name, or not sorted and distinct: the per-entry scanner decides
    if shape_heads.count(shape_heads[0]) == count:  # one rank throughout: a shape's body tells it apart
        rank_head, shape_keys = shape_heads[0], list(shape_bodies)
    else:
        rank_head, shape_keys = b"", list(map(bytes.__add__, shape_heads, shape_bodies))
    ends = _uint_column(ends_raw)
    return end, names, list(dtypes), rank_head, shape_keys, starts_raw, ends, list(param_ids), int(ends.max())


def _row_length(row: tuple[bytes, ...]) -> int:
    """Bytes one findall match spans: its captures plus, for an entry, the literal keys."""
    captured = sum(map(len, row))
    if row[-1]:
        return captured
    return captured + TensorDescriptor_LITERAL_BYTES + (TensorDescriptor_OPTIONAL_LITERAL_BYTES["param_id"] if row[-2] else 0)


def _native_column(column: bytes) -> np.ndarray:
    """The compiled scan's native ``uint64`` values as a read-only array (no copy)."""
    return np.frombuffer(column, np.uint64)


_SMALL_COLUMN = 512
"""Up to this many values, ``_uint_column`` pads each value to nine bytes instead."""
_PADDED = np.dtype([("pad", "u1"), ("value", ">u8")])
"""A value right-justified in nine bytes: its head and argument in the low bytes of ``value``."""
_ARGUMENT_MASKS = np.array([0, 0xFF, 0xFF, 0xFFFF, 0, 0xFFFF_FFFF, 0, 0, 0, 0xFFFF_FFFF_FFFF_FFFF], np.uint64)
"""By a value's width in bytes: the bits of its argument (a one-byte value is its head)."""


def _uint_column(column: tuple[bytes, ...]) -> np.ndarray:
    """CBOR unsigned integers (head and argument bytes each) as a ``uint64`` array."""
    joined = b"".join(column)
    raw = np.frombuffer(joined, np.uint8)
    if len(joined) == len(column):  # every value below 24: the head is the value
        return raw.astype(np.uint64)
    if len(column) <= _SMALL_COLUMN:  # a few values: padded to one record each beats a numpy pass per width
        padded = np.frombuffer(b"".join(map(bytes.rjust, column, repeat(9), repeat(b"\0"))), _PADDED)
        return padded["value"] & _ARGUMENT_MASKS[np.fromiter(map(len, column), np.intp, len(column))]
    widths = np.fromiter(map(len, column), np.intp, len(column))
    at = np.cumsum(widths) - widths
    out = raw[at].astype(np.uint64)
    for width in (2, 3, 5, 9):
        chosen = np.flatnonzero(widths == width)
        if chosen.size:
            value = np.zeros(chosen.size, np.uint64)
            for k in range(1, width):
                value = (value << np.uint64(8)) | raw[at[chosen] + k].astype(np.uint64)
            out[chosen] = value
    return out

