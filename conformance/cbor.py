"""A small CBOR *builder* for the vector generators, written from the spec (format.md §2.2-§2.3).

It is deliberately independent of ``burnpack``'s own encoder: the corpus builds every canonical
file with it, and the generator checks that burnpack's writer produces the same bytes. Beside
the canonical encoding (what ciborium 0.2.2 writes) it can spell every deviation the corpus
needs: indefinite lengths, chunked strings, tags, bignums, non-shortest heads and floats,
duplicate keys, raw bytes.

Values: ``dict`` (keys in the order given), ``list``/``tuple``, ``str``, ``bytes``, ``int``,
``bool``, ``None``, ``float`` (shortest exact width, NaN sign and payload kept), ``F64Bits``
(a float given by its bits), and the ``Item`` subclasses below for everything non-canonical.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any


def head(major: int, arg: int, width: int | None = None) -> bytes:
    """A CBOR head; ``width`` (0, 1, 2, 4, 8 bytes after the initial byte) forces a longer form."""
    if width is None:
        width = 0 if arg < 24 else 1 if arg < 0x100 else 2 if arg < 0x10000 else 4 if arg < 0x100000000 else 8
    if width == 0:
        if arg >= 24:
            raise ValueError(f"{arg} does not fit in the initial byte")
        return bytes([major << 5 | arg])
    info = {1: 24, 2: 25, 4: 26, 8: 27}[width]
    return bytes([major << 5 | info]) + arg.to_bytes(width, "big")


class Item:
    """Something that encodes itself (raw or deliberately non-canonical CBOR)."""

    def encode(self) -> bytes:  # pragma: no cover - interface
        raise NotImplementedError


class Raw(Item):
    """Bytes inserted verbatim."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)

    def encode(self) -> bytes:
        return self.data


class Int(Item):
    """An integer with a forced head width (non-shortest when the width is larger than needed)."""

    def __init__(self, value: int, width: int) -> None:
        self.value, self.width = value, width

    def encode(self) -> bytes:
        if self.value >= 0:
            return head(0, self.value, self.width)
        return head(1, -1 - self.value, self.width)


class F64Bits(Item):
    """An f64 given by its 64 bits, in the shortest width that keeps every bit (ciborium's rule)."""

    def __init__(self, bits: int) -> None:
        self.bits = bits

    def encode(self) -> bytes:
        return shortest_float(self.bits)


class Float(Item):
    """A float in a forced width: 2, 4 or 8 bytes, given by the raw bits of that width."""

    def __init__(self, bits: int, width: int) -> None:
        self.bits, self.width = bits, width

    def encode(self) -> bytes:
        return bytes([{2: 0xF9, 4: 0xFA, 8: 0xFB}[self.width]]) + self.bits.to_bytes(self.width, "big")


class Tag(Item):
    def __init__(self, tag: int, value: Any) -> None:
        self.tag, self.value = tag, value

    def encode(self) -> bytes:
        return head(6, self.tag) + enc(self.value)


class Simple(Item):
    def __init__(self, value: int) -> None:
        self.value = value

    def encode(self) -> bytes:
        return bytes([0xE0 | self.value]) if self.value < 24 else b"\xf8" + bytes([self.value])


UNDEFINED = Simple(23)


class Map(Item):
    """A map from a list of pairs: duplicate keys, any key type, optional indefinite length."""

    def __init__(self, pairs: Iterable[tuple[Any, Any]], *, indefinite: bool = False, length_width: int | None = None):
        self.pairs = list(pairs)
        self.indefinite = indefinite
        self.length_width = length_width

    def encode(self) -> bytes:
        body = b"".join(enc(k) + enc(v) for k, v in self.pairs)
        if self.indefinite:
            return b"\xbf" + body + b"\xff"
        return head(5, len(self.pairs), self.length_width) + body


class Array(Item):
    def __init__(self, items: Iterable[Any], *, indefinite: bool = False, length_width: int | None = None):
        self.items = list(items)
        self.indefinite = indefinite
        self.length_width = length_width

    def encode(self) -> bytes:
        body = b"".join(enc(v) for v in self.items)
        if self.indefinite:
            return b"\x9f" + body + b"\xff"
        return head(4, len(self.items), self.length_width) + body


class Text(Item):
    """A text string: raw UTF-8 (possibly invalid), chunked (indefinite) or with a long head."""

    def __init__(self, data: str | bytes, *, chunks: list[int] | None = None, length_width: int | None = None):
        self.data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self.chunks = chunks
        self.length_width = length_width

    def encode(self) -> bytes:
        return _string(3, self.data, self.chunks, self.length_width)


class Bytes(Item):
    def __init__(self, data: bytes, *, chunks: list[int] | None = None, length_width: int | None = None):
        self.data = bytes(data)
        self.chunks = chunks
        self.length_width = length_width

    def encode(self) -> bytes:
        return _string(2, self.data, self.chunks, self.length_width)


def _string(major: int, data: bytes, chunks: list[int] | None, length_width: int | None) -> bytes:
    if chunks is None:
        return head(major, len(data), length_width) + data
    out = bytes([major << 5 | 31])
    at = 0
    for size in chunks:
        out += head(major, size) + data[at : at + size]
        at += size
    if at != len(data):
        out += head(major, len(data) - at) + data[at:]
    return out + b"\xff"


def bignum(value: int) -> Tag:
    """Tag 2 / tag 3 bignum for ``value`` (big-endian magnitude bytes)."""
    if value >= 0:
        return Tag(2, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))
    n = -1 - value
    return Tag(3, n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big"))


# -- floats ---------------------------------------------------------------------------------------
def _f64(bits: int) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def _bits(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


def _half_to_f64_bits(h: int) -> int:
    sign, exp, man = h >> 15, (h >> 10) & 0x1F, h & 0x3FF
    if exp == 0x1F:
        return (sign << 63) | 0x7FF0000000000000 | (man << 42)
    if exp == 0:
        if man == 0:
            return sign << 63
        value = man * 2.0**-24
        return _bits(-value if sign else value)
    return (sign << 63) | ((exp - 15 + 1023) << 52) | (man << 42)


def shortest_float(bits: int) -> bytes:
    """ciborium-ll hdr.rs:146-160: f16 if f64→f16→f64 keeps all 64 bits, else f32, else f64.

    The f16/f32 candidates are built by truncating the mantissa (round-trip equality makes
    rounding irrelevant); NaNs keep sign and payload because the conversions are done on bits.
    """
    sign = bits >> 63
    exp = (bits >> 52) & 0x7FF
    man = bits & ((1 << 52) - 1)
    # f16 candidate
    if exp == 0x7FF:
        h = (sign << 15) | 0x7C00 | (man >> 42)
        f = (sign << 31) | 0x7F800000 | (man >> 29)
    else:
        h = _to_half_bits(bits)
        f = _to_single_bits(bits)
    # Conversions widen NaNs with the quiet bit set, so a signalling NaN never round-trips
    # through f16/f32 (format.md §2.3: 0x7FF0000000000001 → f64).
    if h is not None and _widen_half(h) == bits:
        return b"\xf9" + h.to_bytes(2, "big")
    if f is not None and _widen_single(f) == bits:
        return b"\xfa" + f.to_bytes(4, "big")
    return b"\xfb" + bits.to_bytes(8, "big")


def _widen_half(h: int) -> int:
    out = _half_to_f64_bits(h)
    if (h & 0x7C00) == 0x7C00 and (h & 0x3FF):
        out |= 1 << 51  # hardware/`half` widening quiets NaNs
    return out


def _widen_single(f: int) -> int:
    sign, exp, man = f >> 31, (f >> 23) & 0xFF, f & 0x7FFFFF
    if exp == 0xFF:
        out = (sign << 63) | 0x7FF0000000000000 | (man << 29)
        return out | (1 << 51) if man else out
    return _bits(struct.unpack("<f", f.to_bytes(4, "little"))[0])


def _to_half_bits(bits: int) -> int | None:
    try:
        return int.from_bytes(struct.pack("<e", _f64(bits)), "little")
    except OverflowError:
        return None


def _to_single_bits(bits: int) -> int | None:
    try:
        return int.from_bytes(struct.pack("<f", _f64(bits)), "little")
    except OverflowError:
        return None


# -- the encoder ----------------------------------------------------------------------------------
def enc(value: Any) -> bytes:
    """Encode ``value`` as ciborium would (definite lengths, shortest heads, dict order kept)."""
    # strings, maps and arrays first: a 100,000-tensor vector encodes millions of them; bools
    # before ints (True is an int)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return head(3, len(data)) + data
    if isinstance(value, dict):
        return head(5, len(value)) + b"".join(enc(k) + enc(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return head(4, len(value)) + b"".join(enc(v) for v in value)
    if isinstance(value, Item):
        return value.encode()
    if value is None:
        return b"\xf6"
    if value is True:
        return b"\xf5"
    if value is False:
        return b"\xf4"
    if isinstance(value, int):
        return head(0, value) if value >= 0 else head(1, -1 - value)
    if isinstance(value, float):
        return shortest_float(_bits(value))
    if isinstance(value, (bytes, bytearray)):
        return head(2, len(value)) + bytes(value)
    raise TypeError(f"cannot encode {type(value).__name__}")
