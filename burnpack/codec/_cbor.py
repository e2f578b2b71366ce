"""CBOR runtime beneath the generated codec.

Two decoders and one encoder helper live here; the generated module
(``burnpack/codec/_generated/metadata.py``) drives them type by type from the schema.

* ``Decoder`` reproduces what Burn's reader does, token for token: ciborium 0.2.2's pull decoder
  and its serde ``Deserializer`` (ciborium@v0.2.2 ciborium/src/de/mod.rs, ciborium-ll/src/
  {dec,hdr,seg}.rs) — tags skipped, indefinite lengths, bignums, the 4096-byte identifier
  scratch, the recursion limit, values left unconsumed where serde leaves them — and renders its
  errors the way Burn prints them (``Semantic(None, "missing field `tensors`")``).
* ``fast_loads`` is the hot path: cbor2's C decoder with every construct that could make it
  disagree with ciborium switched off. The generated fast validators fall back to ``Decoder``
  (raise ``Fallback``) whenever the decoded value is anything but the plain shape Burn writes.
* ``ShortestFloat`` makes cbor2 encode an f64 in the shortest width that keeps its exact bits
  (ciborium-ll hdr.rs:146-160), which neither of cbor2's own modes does.
"""

from __future__ import annotations

import re
import struct
import unicodedata
from collections.abc import Callable, Iterator
from typing import IO, Any, NoReturn, cast

import cbor2

from ._kernels import load_kernel
from ..errors import CborError

# The bounds of the Rust integers ciborium converts CBOR integers into (and Burn's schema uses).
U64_MAX = (1 << 64) - 1
I64_MAX = (1 << 63) - 1
I64_MIN = -(1 << 63)
I128_MAX = (1 << 127) - 1

# Header kinds (ciborium-ll hdr.rs ``Header``).
POS, NEG, FLOAT, SIMPLE, TAG, BREAK, BYTES, TEXT, ARRAY, MAP = range(10)
_FALSE, _TRUE, _NULL, _UNDEFINED = 20, 21, 22, 23
_BIGPOS, _BIGNEG = 2, 3


class Fallback(Exception):
    """The fast metadata decoder met something it cannot prove it reads as Burn does: the exact
    decoder takes over. Control flow inside the codec and the container's decoding tiers; it never
    reaches a caller, so it is no public exception (``burnpack.errors`` holds those)."""


# Other_Grapheme_Extend (Unicode PropList.txt) code points that are not already Mn/Me or
# non-printable (Cf): spacing marks that still extend a grapheme.
_OTHER_GRAPHEME_EXTEND = frozenset(
    [0x09BE, 0x09D7, 0x0B3E, 0x0B57, 0x0BBE, 0x0BD7, 0x0CC2, 0x0CD5, 0x0CD6, 0x0D3E, 0x0D57, 0x0DCF, 0x0DDF,
     0x1B35, 0x302E, 0x302F, 0xFF9E, 0xFF9F, 0x1133E, 0x11357, 0x114B0, 0x114BD, 0x115AF, 0x11930, 0x1D165]
    + list(range(0x1D16E, 0x1D173))
)


def _grapheme_extend(ch: str) -> bool:
    """Unicode Grapheme_Extend (Mn, Me, Other_Grapheme_Extend): Rust's str Debug escapes these."""
    return ord(ch) >= 0x300 and (unicodedata.category(ch) in ("Mn", "Me") or ord(ch) in _OTHER_GRAPHEME_EXTEND)


def rust_debug_str(text: str) -> str:
    """Rust's ``{:?}`` of a ``&str``: quoted, with quotes, backslashes and controls escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        elif not ch.isprintable() or _grapheme_extend(ch):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def semantic(message: str, offset: int | None = None) -> CborError:
    where = "None" if offset is None else f"Some({offset})"
    return CborError(f"Semantic({where}, {rust_debug_str(message)})", offset)


def syntax(offset: int) -> CborError:
    return CborError(f"Syntax({offset})", offset)


def eof(offset: int) -> CborError:
    return CborError('Io(Error { kind: UnexpectedEof, message: "failed to fill whole buffer" })', offset)


def recursion_limit(offset: int) -> CborError:
    return CborError("RecursionLimitExceeded", offset)


def rust_float(value: float) -> str:
    """Rust's ``Display`` of an f64 (never exponent notation), as serde's ``Unexpected::Float``.

    The digits are Rust's shortest round-trip digits (``shortest_digits``), which differ from
    Python's ``repr`` when two shortest forms are equally close: Rust rounds up, Python to even.
    """
    if value != value:
        return "NaN"
    sign = "-" if struct.pack(">d", value)[0] & 0x80 else ""
    if value in (float("inf"), float("-inf")):
        return sign + "inf"
    if value == 0:
        return sign + "0.0"
    digits, k = shortest_digits(abs(value))
    if k <= 0:
        return f"{sign}0.{'0' * -k}{digits}"
    if k < len(digits):
        return f"{sign}{digits[:k]}.{digits[k:]}"
    return f"{sign}{digits}{'0' * (k - len(digits))}.0"


def shortest_digits(value: float) -> tuple[str, int]:
    """Rust's shortest digits ``d`` and exponent ``k`` of a finite positive f64: value ≈ 0.d × 10^k.

    core::num::flt2dec: the value's rounding interval as Rust's ``decode`` states it (inclusive
    when the integer mantissa is even, which subnormals always are; asymmetric below every power
    of two), then Dragon4's free-format digit generation, stopping at the first digit that lies
    inside the interval and rounding the last digit up on a tie.
    """
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    biased, fraction = (bits >> 52) & 0x7FF, bits & ((1 << 52) - 1)
    if biased == 0:  # subnormal: integer_decode doubles the mantissa
        mant, exp = fraction << 1, -1075
        inclusive = True
        minus = plus = 1
    else:
        mant, exp = fraction | (1 << 52), biased - 1075
        inclusive = mant % 2 == 0
        if mant == 1 << 52:  # the lower neighbour is half as far away
            mant, minus, plus, exp = mant << 2, 1, 2, exp - 2
        else:
            mant, minus, plus, exp = mant << 1, 1, 1, exp - 1
    log2_high = (mant + plus).bit_length() - 1 + exp
    scale = 1
    if exp < 0:
        scale <<= -exp
    else:
        mant, minus, plus = mant << exp, minus << exp, plus << exp

    def below(a: int, b: int) -> bool:  # Rust's `a.cmp(&b) < rounding`
        return a <= b if inclusive else a < b

    k = log2_high * 30103 // 100000 - 1  # 10^k < high: counted up to the right exponent below
    while True:  # the smallest k with not (10^k below high)
        if k >= 0:
            s, m, mi, pl = scale * 10**k, mant, minus, plus
        else:
            s, m, mi, pl = scale, mant * 10**-k, minus * 10**-k, plus * 10**-k
        if not below(s, m + pl):
            break
        k += 1
    m, mi, pl = m * 10, mi * 10, pl * 10
    out = []
    while True:
        digit, m = divmod(m, s)
        out.append(digit)
        down = below(m, mi)
        up = below(s, m + pl)
        if down or up:
            break
        m, mi, pl = m * 10, mi * 10, pl * 10
    if up and (not down or 2 * m >= s):
        i = len(out) - 1
        while i >= 0 and out[i] == 9:
            out[i] = 0
            i -= 1
        if i < 0:  # 0.99…9 rounds up to 1.0: one more integer digit
            out = [1]
            k += 1
        else:
            out[i] += 1
    text = "".join(map(str, out)).rstrip("0") or "0"
    return text, k


def one_of(names: tuple[str, ...]) -> str:
    """serde's ``OneOf`` rendering of the expected variants."""
    if not names:
        return "there are no variants"
    if len(names) == 1:
        return f"expected `{names[0]}`"
    if len(names) == 2:
        return f"expected `{names[0]}` or `{names[1]}`"
    return "expected one of " + ", ".join(f"`{n}`" for n in names)


def f16_bits_to_f64_bits(h: int) -> int:
    """The half crate's f16 → f64 conversion, bit for bit (NaNs get the quiet bit set)."""
    sign = (h & 0x8000) << 48
    exp = h & 0x7C00
    man = h & 0x03FF
    if exp == 0x7C00:
        return sign | 0x7FF0000000000000 if man == 0 else sign | 0x7FF8000000000000 | (man << 42)
    return struct.unpack("<Q", struct.pack("<d", struct.unpack("<e", struct.pack("<H", h))[0]))[0]


def f32_bits_to_f64_bits(w: int) -> int:
    """IEEE f32 → f64 widening, bit for bit (NaNs get the quiet bit set, as the hardware does)."""
    if w & 0x7F800000 == 0x7F800000 and w & 0x007FFFFF:
        return ((w & 0x80000000) << 32) | 0x7FF8000000000000 | ((w & 0x007FFFFF) << 29)
    return struct.unpack("<Q", struct.pack("<d", struct.unpack("<f", struct.pack("<I", w))[0]))[0]


def bits_to_float(bits: int) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def float_to_bits(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


def shortest_float(bits: int) -> bytes:
    """CBOR encoding of the f64 with these bits in the shortest width that round-trips them."""
    exp = bits & 0x7FF0000000000000
    man = bits & 0x000FFFFFFFFFFFFF
    sign = bits >> 63
    if exp == 0x7FF0000000000000 and man:  # NaN: only the payload bits decide
        quiet = man & (1 << 51)
        if quiet and not man & ((1 << 42) - 1):
            return b"\xf9" + ((sign << 15) | 0x7C00 | (man >> 42)).to_bytes(2, "big")
        if quiet and not man & ((1 << 29) - 1):
            return b"\xfa" + ((sign << 31) | 0x7F800000 | (man >> 29)).to_bytes(4, "big")
        return b"\xfb" + bits.to_bytes(8, "big")
    value = bits_to_float(bits)
    try:
        half = struct.pack(">e", value)
        if f16_bits_to_f64_bits(int.from_bytes(half, "big")) == bits:
            return b"\xf9" + half
    except OverflowError:
        pass
    try:
        single = struct.pack(">f", value)
        if f32_bits_to_f64_bits(int.from_bytes(single, "big")) == bits:
            return b"\xfa" + single
    except OverflowError:
        pass
    return b"\xfb" + bits.to_bytes(8, "big")


class ShortestFloat:
    """An f64 (by its bits) that ``encode`` writes in the shortest exact CBOR width."""

    __slots__ = ("bits",)

    def __init__(self, bits: int) -> None:
        self.bits = bits


def _encode_default(encoder: cbor2.CBOREncoder, value: Any) -> None:
    if type(value) is ShortestFloat:
        encoder.write(shortest_float(value.bits))
    else:
        raise TypeError(f"cannot encode {type(value).__name__} in burnpack metadata")


def encode(tree: Any) -> bytes:
    """Encode a tree of dicts (in the order given), lists, str, int, bool, None, ShortestFloat.

    cbor2's default mode already writes definite lengths, shortest-form integers and dict keys in
    insertion order, which is what ciborium does for these values.
    """
    return cbor2.dumps(tree, default=_encode_default)


def _refuse_tag(decoder: Any, tag: Any = None) -> NoReturn:
    raise Fallback


# Every tag cbor2 gives a meaning of its own (checked against all tags 0..70000 in the tests).
_SEMANTIC_TAGS = (0, 1, 2, 3, 4, 5, 25, 28, 29, 30, 35, 36, 37, 100, 256, 258, 260, 261, 1004, 43000, 55799)
_REFUSE_ALL_TAGS = {tag: _refuse_tag for tag in _SEMANTIC_TAGS}


_FAST_OPTIONS: dict[str, Any] = {
    "tag_hook": _refuse_tag,
    "semantic_decoders": _REFUSE_ALL_TAGS,
    "allow_indefinite": False,
    "allow_duplicate_keys": False,
}
_FAST_DEPTH = 16
# cbor2 builds a Python object per item, up to ~64 bytes per input byte (an empty list per 0x80),
# so it only ever sees a bounded stretch of the input: a whole blob up to _FAST_LOADS_LIMIT, a
# single map value up to _FAST_WINDOW. Larger input is left to the exact decoder, which builds
# only the values of Burn's schema.
_FAST_LOADS_LIMIT = 1 << 18
_FAST_WINDOW = 1 << 16


class _Window:
    """A read-only file over ``buf`` ending at ``limit``: what cbor2 may read of one item."""

    __slots__ = ("buf", "pos", "limit")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0
        self.limit = len(buf)

    def read(self, size: int = -1) -> bytes:
        end = self.limit if size is None or size < 0 else min(self.limit, self.pos + size)
        data = self.buf[self.pos : end]
        self.pos = max(self.pos, end)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.limit + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True


def fast_loads(blob: bytes | memoryview) -> Any:
    """Decode one CBOR item with cbor2, refusing whatever ciborium could read differently.

    Refused: tags, indefinite lengths, duplicate map keys, nesting past ``_FAST_DEPTH`` (the exact
    decoder, which enforces Burn's recursion limit, reads deeper items), blobs over
    ``_FAST_LOADS_LIMIT``. Whatever else cbor2 returns is checked by the generated validators.
    Raises ``Fallback``.
    """
    if len(blob) > _FAST_LOADS_LIMIT:
        raise Fallback
    try:
        return cbor2.loads(blob, max_depth=_FAST_DEPTH, **_FAST_OPTIONS)
    except Exception as exc:  # any refusal or malformation: let the exact decoder judge
        raise Fallback from exc


def _tag_value(tag: cbor2.CBORTag, immutable: bool = False) -> Any:
    return tag.value


def _semantic_value(value: Any, immutable: bool = False) -> Any:
    return value


# Every tag is read as the item it wraps, as ciborium does: no bignum, rational, decimal,
# shared-reference or set is ever built, so decoding stays linear in the bytes present.
_IGNORE_ALL_TAGS = {tag: _semantic_value for tag in _SEMANTIC_TAGS}


def plain_item(buf: bytes, pos: int) -> tuple[Any, int]:
    """One CBOR item at ``pos`` as plain values, every tag ignored (Burn ignores tags), and the
    position after it.

    For the paths that look at metadata Burn's schema does not describe (legacy encodings, the
    diagnosis of a rejected file). Map keys must be text or bytes (as in every burnpack map), so
    no crafted key can collide hashes; the item must fit in ``_FAST_WINDOW`` bytes, so the objects
    built stay bounded. Raises ``Fallback`` for anything else.
    """
    window = _Window(buf)
    window.pos, window.limit = pos, min(len(buf), pos + _FAST_WINDOW)
    decoder = cbor2.CBORDecoder(
        cast("IO[bytes]", window),
        tag_hook=_tag_value,
        semantic_decoders=_IGNORE_ALL_TAGS,
        strict_hashable_types=True,
        max_depth=_FAST_DEPTH,
        read_size=512,
    )
    try:
        return decoder.decode(), window.tell()
    except Exception as exc:  # malformed, too deep or too long, unhashable keys
        raise Fallback from exc


Header = tuple  # (kind, argument, offset)


def _int_len(n: int) -> int:
    return 1 if n < 24 else 2 if n < 0x100 else 3 if n < 0x10000 else 5 if n < 0x100000000 else 9


def canonical_len(header: Header) -> int:
    """Bytes of ``Title::from(header)``: ciborium's shortest re-encoding of a header (hdr.rs)."""
    kind, arg, _ = header
    if kind == FLOAT:
        return len(shortest_float(arg))
    if kind == SIMPLE:
        return 1 if arg < 24 else 2
    if arg is None:  # break, or an indefinite length
        return 1
    return _int_len(arg)


class Decoder:
    """ciborium's pull decoder + serde ``Deserializer`` over one metadata blob."""

    __slots__ = ("buf", "pos", "end", "pushed", "depth", "scratch", "context", "fast")

    def __init__(self, buf: bytes, *, depth: int, scratch: int) -> None:
        self.buf = buf
        self.pos = 0
        self.end = len(buf)
        self.pushed: Header | None = None
        self.depth = depth
        self.scratch = scratch
        self.context: str | None = None  # the tensor / key being read, for error messages
        self.fast: tuple[_Window, cbor2.CBORDecoder] | None = None

    # -- ciborium-ll Decoder -------------------------------------------------------------
    def offset(self) -> int:
        return self.pushed[2] if self.pushed is not None else self.pos

    def read_exact(self, n: int) -> bytes:
        start = self.pos
        if self.end - start < n:
            self.pos = self.end
            raise eof(start)
        self.pos = start + n
        return self.buf[start : start + n]

    def pull(self) -> Header:
        pushed = self.pushed
        if pushed is not None:
            self.pushed = None
            return pushed
        start = self.pos
        if start >= self.end:
            raise eof(start)
        initial = self.buf[start]
        major, info = initial >> 5, initial & 0x1F
        if info < 24:
            arg: int | None = info
            self.pos = start + 1
        elif info < 28:
            width = 1 << (info - 24)
            self.pos = start + 1
            arg = int.from_bytes(self.read_exact(width), "big")
        elif info == 31:
            arg = None
            self.pos = start + 1
        else:
            self.pos = start + 1
            raise syntax(start)
        if major == 7:
            if arg is None:
                return (BREAK, None, start)
            if info == 25:
                return (FLOAT, f16_bits_to_f64_bits(arg), start)
            if info == 26:
                return (FLOAT, f32_bits_to_f64_bits(arg), start)
            if info == 27:
                return (FLOAT, arg, start)
            return (SIMPLE, arg, start)
        if arg is None and major in (0, 1, 6):
            raise syntax(start)
        return ((POS, NEG, BYTES, TEXT, ARRAY, MAP, TAG)[major], arg, start)

    def push(self, header: Header) -> None:
        """Decoder::push: ciborium re-encodes the header (``Title::from``) and steps its offset back
        by that *shortest* encoding's length, so while a header is pushed back, ``offset()`` is
        ``pos - canonical length`` — not where a wider (non-shortest) header really started."""
        self.pushed = (header[0], header[1], self.pos - canonical_len(header))

    def segments(self, header: Header, chunk: int, text: bool) -> Iterator[Any]:
        """Yield the chunks of a (possibly indefinite) byte/text string (seg.rs Segments)."""
        kind = header[0]
        nested = 0
        finish = False
        # Decoder::bytes/text push the header back first, so the first segment's offset (its
        # Syntax offset) is the pushed-back one (see ``push``).
        h: Header | None = (header[0], header[1], self.pos - canonical_len(header))
        while not finish:
            if h is None:
                h = self.pull()
            if h[0] == BREAK and nested == 1:
                return
            if h[0] == BREAK and nested > 1:
                nested -= 1
            elif h[0] != kind:
                raise syntax(h[2])
            elif h[1] is None:
                nested += 1
            else:
                finish = nested == 0
                yield from self._segment(h[1], h[2], chunk, text)
            h = None

    def _segment(self, length: int, offset: int, chunk: int, text: bool) -> Iterator[Any]:
        stored = b""
        unread = length
        while True:
            if unread == 0:
                if stored:
                    raise syntax(offset)
                return
            size = min(chunk, len(stored) + unread)
            data = self.read_exact(size - len(stored))
            unread -= size - len(stored)
            full = stored + data
            if not text:
                yield full
                continue
            try:
                yield full.decode("utf-8")
                stored = b""
            except UnicodeDecodeError as exc:
                if len(full) - exc.start > 3:
                    raise syntax(offset) from None
                stored = full[exc.start :]
                yield full[: exc.start].decode("utf-8")

    def fast_item(self, validate: Callable[[Any], Any]) -> Any:
        """The next item through cbor2's C decoder and ``validate`` (a generated fast validator),
        or None with nothing consumed when that path cannot prove it reads the item as Burn does.

        The item is read with ``fast_loads``' refusals and at most ``_FAST_DEPTH`` levels deep, so
        it is only tried where the recursion limit is that far away; the validators accept only
        the plain shapes Burn writes, which nest less deeply.
        """
        if self.pushed is not None or self.depth < _FAST_DEPTH:
            return None
        if self.fast is None:  # one C decoder per blob, rebuilt after a refusal left it mid-item
            window = _Window(self.buf)
            decoder = cbor2.CBORDecoder(cast("IO[bytes]", window), max_depth=_FAST_DEPTH, read_size=512, **_FAST_OPTIONS)
            self.fast = (window, decoder)
        window, decoder = self.fast
        window.pos, window.limit = self.pos, min(self.end, self.pos + _FAST_WINDOW)
        try:
            value = validate(decoder.decode())
        except Exception:  # any refusal or malformation: the exact path judges the item
            self.fast = None
            return None
        self.pos = window.tell()
        return value

    def recurse(self, func: Callable[[], Any]) -> Any:
        if self.depth == 0:
            raise recursion_limit(self.offset())
        self.depth -= 1
        try:
            return func()
        finally:
            self.depth += 1

    # -- serde Deserializer methods ------------------------------------------------------
    @staticmethod
    def expected(header: Header, kind: str) -> CborError:
        tag, arg, _ = header
        if tag == POS:
            unexpected = f"integer `{arg}`"
        elif tag == NEG:
            signed = arg if arg <= I64_MAX else arg - (1 << 64)
            unexpected = f"integer `{-1 - signed}`"
        elif tag == FLOAT:
            unexpected = f"floating point `{rust_float(bits_to_float(arg))}`"
        elif tag == SIMPLE:
            unexpected = {
                _FALSE: "boolean `false`",
                _TRUE: "boolean `true`",
                _NULL: "null",
                _UNDEFINED: "undefined",
            }.get(arg, "simple")
        else:
            unexpected = {TAG: "tag", BREAK: "break", BYTES: "bytes", TEXT: "string", ARRAY: "sequence", MAP: "map"}[tag]
        return semantic(f"invalid type: {unexpected}, expected {kind}")

    def integer(self, header: Header | None = None) -> tuple[bool, int]:
        while True:
            h = header if header is not None else self.pull()
            header = None
            tag, arg, _ = h
            if tag == POS:
                return False, arg
            if tag == NEG:
                return True, arg
            if tag == TAG:
                if arg not in (_BIGPOS, _BIGNEG):
                    continue
                negative = arg == _BIGNEG
                break
            raise self.expected(h, "integer")
        h = self.pull()
        if h[0] != BYTES:
            raise self.expected(h, "bytes")
        value = index = 0
        for piece in self.segments(h, 16, text=False):
            for byte in piece:
                if index == 16:
                    raise semantic("bigint too large")
                if index == 0 and byte == 0:
                    continue
                value = (value << 8) | byte
                index += 1
        return negative, value

    def u64(self) -> int:
        negative, raw = self.integer()
        if negative:
            raise semantic("unexpected negative integer")
        if raw > U64_MAX:
            raise semantic("integer too large")
        return raw

    def u8(self) -> int:
        value = self.u64()
        if value > 0xFF:
            raise semantic(f"invalid value: integer `{value}`, expected u8")
        return value

    def i64(self) -> int:
        negative, raw = self.integer()
        if raw > I64_MAX:
            raise semantic("integer too large")
        return -1 - raw if negative else raw

    def f64_bits(self) -> int:
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == FLOAT:
                return h[1]
            raise self.expected(h, "float")

    def boolean(self) -> bool:
        while True:
            offset = self.offset()
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == SIMPLE and h[1] in (_FALSE, _TRUE):
                return h[1] == _TRUE
            raise semantic("expected bool", offset)

    def identifier(self) -> str | bytes:
        """deserialize_identifier: a short definite text (→ str) or bytes (→ bytes)."""
        while True:
            offset = self.offset()
            h = self.pull()
            tag, length, _ = h
            if tag == TAG:
                continue
            if tag in (TEXT, BYTES) and length is not None and length <= self.scratch:
                data = self.read_exact(length)
                if tag == BYTES:
                    return data
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError:
                    raise syntax(offset) from None
            raise self.expected(h, "str or bytes")

    def string(self) -> str:
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == TEXT and h[1] is not None and h[1] <= self.scratch:
                # One segment in one scratch chunk: what ``segments`` does, without generators.
                offset = self.pos - canonical_len(h)
                data = self.read_exact(h[1])
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError:
                    raise syntax(offset) from None
            if h[0] == TEXT:
                return "".join(self.segments(h, self.scratch, text=True))
            raise self.expected(h, "string")

    def _elements(self, length: int | None) -> Iterator[None]:
        """Access::next_element: how many more elements a seq or map has."""
        while True:
            if length is not None:
                if length == 0:
                    return
                length -= 1
            else:
                h = self.pull()
                if h[0] == BREAK:
                    return
                self.push(h)
            yield

    def seq(self, element: Callable[[], Any], byte_element: Callable[[int], Any]) -> list:
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == ARRAY:
                return self.recurse(lambda: [element() for _ in self._elements(h[1])])
            if h[0] == BYTES:
                return [byte_element(b) for b in b"".join(self.segments(h, self.scratch, text=False))]
            raise self.expected(h, "array")

    def fixed(self, n: int, element: Callable[[], Any], byte_element: Callable[[int], Any], expecting: str) -> tuple:
        """A tuple / ``[T; n]``: reads exactly n elements and leaves any extra unread, as serde does."""
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == ARRAY:
                return self.recurse(lambda: self._fixed_items(h[1], n, element, expecting))
            if h[0] == BYTES:
                data = b"".join(self.segments(h, self.scratch, text=False))
                if len(data) < n:
                    raise semantic(f"invalid length {len(data)}, expected {expecting}")
                return tuple(byte_element(b) for b in data[:n])
            raise self.expected(h, "array")

    def _fixed_items(self, length: int | None, n: int, element: Callable[[], Any], expecting: str) -> tuple:
        items = []
        elements = self._elements(length)
        for i in range(n):
            if next(elements, StopIteration) is StopIteration:
                raise semantic(f"invalid length {i}, expected {expecting}")
            items.append(element())
        return tuple(items)

    def map(self, key: Callable[[], Any], value: Callable[[Any], Any]) -> dict:
        """A map; ``value`` gets the key (for error context). Later duplicates win (BTreeMap)."""
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == MAP:
                return self.recurse(lambda: self._map_items(h[1], key, value))
            raise self.expected(h, "map")

    def _map_items(self, length: int | None, key: Callable[[], Any], value: Callable[[Any], Any]) -> dict:
        out = {}
        for _ in self._elements(length):
            k = key()
            out[k] = value(k)
        return out

    def struct(self, fields: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        """A serde-derived struct: a map of known fields, unknown ones skipped, duplicates refused.

        Returns the fields present; the caller applies defaults and reports missing ones.
        """
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == MAP:
                return self.recurse(lambda: self._struct_fields(h[1], fields))
            raise self.expected(h, "map")

    def _struct_fields(self, length: int | None, fields: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for _ in self._elements(length):
            identifier = self.identifier()
            name: str | None = None
            if isinstance(identifier, bytes):
                try:
                    name = identifier.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            else:
                name = identifier
            read = fields.get(name) if name is not None else None
            if read is None or name is None:
                self.skip()
            elif name in seen:
                raise semantic(f"duplicate field `{name}`")
            else:
                seen[name] = read()
        return seen

    def option(self, inner: Callable[[], Any]) -> Any:
        h = self.pull()
        if h[0] == SIMPLE and h[1] in (_NULL, _UNDEFINED):
            return None
        self.push(h)
        return inner()

    def enum(self, variants: tuple[str, ...], payloads: dict[str, Callable[[], Any]]) -> tuple[str, Any]:
        """An externally tagged enum: a text (unit variant) or a one-entry map (newtype)."""
        while True:
            h = self.pull()
            if h[0] == TAG:
                continue
            if h[0] == MAP and h[1] == 1:
                break
            if h[0] == TEXT:
                self.push(h)
                break
            raise self.expected(h, "enum")
        return self.recurse(lambda: self._variant(variants, payloads))

    def _variant(self, variants: tuple[str, ...], payloads: dict[str, Callable[[], Any]]) -> tuple[str, Any]:
        name = self.identifier()
        if isinstance(name, bytes):
            name = name.decode("utf-8", errors="replace")
        if name not in variants:
            raise semantic(f"unknown variant `{name}`, {one_of(variants)}")
        read = payloads.get(name)
        return name, (read() if read is not None else None)

    def skip(self) -> None:
        """serde's IgnoredAny through ``deserialize_any``: consume one item of any kind.

        Iterative: ``stack`` holds what each open container still holds (a count of items, or
        an indefinite marker), so nesting costs no Python recursion, and a run of one-byte
        scalars inside a definite container is consumed by one regex match. Tokens are pulled,
        pushed back and checked in exactly the order of serde's recursive walk, so errors and
        their offsets are the same.
        """
        stack: list[int] = []
        depth = self.depth
        try:
            while True:
                top = stack[-1] if stack else 0
                if top == _IND_SEQ or top == _IND_KEY:  # an indefinite container may end here
                    h = self.pull()
                    if h[0] == BREAK:
                        stack.pop()
                        self.depth += 1
                        if self._finished(stack):
                            return
                        continue
                    self.push(h)
                elif top > 0 and self.pushed is None:
                    before = (self.pos, len(stack))
                    if self._skip_plain(stack):
                        return
                    if (self.pos, len(stack)) != before:
                        continue
                h = self.pull()
                kind, arg, _ = h
                if kind == BYTES:
                    if arg is not None and arg <= self.scratch:
                        self.read_exact(arg)
                    else:
                        for _ in self.segments(h, self.scratch, text=False):
                            pass
                elif kind == TEXT:
                    if arg is not None and arg <= self.scratch:
                        self.push(h)
                        self.identifier()
                    else:
                        for _ in self.segments(h, self.scratch, text=True):
                            pass
                elif kind == ARRAY or kind == MAP:
                    if self.depth == 0:
                        raise recursion_limit(self.offset())
                    self.depth -= 1
                    if arg is None:
                        stack.append(_IND_SEQ if kind == ARRAY else _IND_KEY)
                        continue
                    if arg:
                        stack.append(arg if kind == ARRAY else 2 * arg)
                        continue
                    self.depth += 1  # empty: complete at once
                elif kind == TAG:
                    nxt = self.pull()
                    self.push(nxt)
                    if arg in (_BIGPOS, _BIGNEG) and nxt[0] == BYTES and nxt[1] is not None and nxt[1] <= 16:
                        negative, raw = self.integer(h)
                        if negative and raw > I128_MAX:
                            raise semantic("integer too large")
                    else:
                        if self.depth == 0:
                            raise recursion_limit(self.offset())
                        self.depth -= 1
                        stack.append(1)  # the tagged item
                        continue
                elif kind == SIMPLE:
                    if arg not in (_FALSE, _TRUE, _NULL, _UNDEFINED):
                        raise self.expected(h, "known simple value")
                elif kind == BREAK:
                    raise self.expected(h, "non-break")
                if self._finished(stack):
                    return
        finally:
            self.depth = depth

    def _skip_plain(self, stack: list[int]) -> bool:
        """``skip``'s inner loop for the tokens that cannot fail (``skip_plain``, compiled when
        the kernel is built): True when the outermost item completed."""
        self.pos, self.depth, done = skip_plain(self.buf, self.pos, self.end, self.depth, self.scratch, stack)
        return done

    def _finished(self, stack: list[int]) -> bool:
        """One item is complete: count it off its container (closing those it fills); True when
        it was the outermost item."""
        while stack:
            top = stack[-1]
            if top > 1:
                stack[-1] = top - 1
                return False
            if top == 1:
                stack.pop()
                self.depth += 1
                continue
            if top == _IND_KEY:
                stack[-1] = _IND_VALUE
            elif top == _IND_VALUE:
                stack[-1] = _IND_KEY
            return False
        return True


# Markers of open indefinite containers in ``Decoder.skip``'s stack (definite ones hold counts).
_IND_SEQ, _IND_KEY, _IND_VALUE = -1, -2, -3
# One-byte scalars: small unsigned and negative integers, false, true, null, undefined.
_SCALAR_RUN = re.compile(rb"[\x00-\x17\x20-\x37\xf4-\xf7]*")
_ONE_BYTE_SCALARS = frozenset([*range(0x00, 0x18), *range(0x20, 0x38), *range(0xF4, 0xF8)])
# ... and empty arrays and maps (0x80, 0xa0), one-byte items as long as one more level is allowed.
_ITEM_RUN = re.compile(rb"[\x00-\x17\x20-\x37\xf4-\xf7\x80\xa0]*")
_ONE_BYTE_ITEMS = _ONE_BYTE_SCALARS | {0x80, 0xA0}
# Integers and floats with a 1/2/4/8-byte argument: heads by item width; a run of one width is
# skipped by one regex match (any argument is valid, non-shortest forms included).
_FIXED_HEADS = {2: b"\x18\x38", 3: b"\x19\x39\xf9", 5: b"\x1a\x3a\xfa", 9: b"\x1b\x3b\xfb"}
_FIXED_WIDTH = bytes(next((w for w, heads in _FIXED_HEADS.items() if i in heads), 0) for i in range(256))
_FIXED_OTHER = {width: re.compile(b"[^" + re.escape(heads) + b"]") for width, heads in _FIXED_HEADS.items()}
_FIXED_RUNS = {
    width: re.compile(b"(?:[" + re.escape(heads) + b"][\x00-\xff]{" + str(width - 1).encode() + b"}){0,64}")
    for width, heads in _FIXED_HEADS.items()
}
"""Up to 64 items of one width: a short run costs one regex match; a longer one goes on by searching its heads for another kind."""


def _fixed_run(buf: bytes, pos: int, stop: int, width: int) -> int:
    """How many items of ``width`` bytes, each with a head of that width, follow ``pos`` (ending
    by ``stop``): the first 64 by a regex, then heads checked in chunks that double, so the work
    follows the run's length."""
    run = (_FIXED_RUNS[width].match(buf, pos, stop).end() - pos) // width  # type: ignore[union-attr]  # {0,64} always matches
    if run < 64:
        return run
    other, chunk = _FIXED_OTHER[width], 64
    while True:
        at = pos + run * width
        count = min(chunk, (stop - at) // width)
        if count <= 0:
            return run
        heads = bytes(buf[at : at + count * width : width])  # every width-th byte: the heads
        found = other.search(heads)
        if found is not None:
            return run + found.start()
        run += count
        chunk *= 2


# Atoms: items complete in themselves that serde's skip accepts whatever their argument holds —
# integers and floats of every width, false/true/null/undefined, byte strings and ASCII text up to
# _ATOM_STRING_MAX bytes (length in the head or in one byte). Their heads are disjoint, so a run of
# 2**k atoms is one possessive regex match that never backtracks.
_ATOM_STRING_MAX = 63
_ATOM = b"|".join(
    [rb"[\x00-\x17\x20-\x37\xf4-\xf7]", rb"[\x18\x38][\x00-\xff]", rb"[\x19\x39\xf9][\x00-\xff]{2}",
     rb"[\x1a\x3a\xfa][\x00-\xff]{4}", rb"[\x1b\x3b\xfb][\x00-\xff]{8}"]
    + [rb"\x%02x[\x00-\xff]{%d}" % (0x40 + n, n) for n in range(24)]
    + [rb"\x%02x[\x00-\x7f]{%d}" % (0x60 + n, n) for n in range(24)]
    + [rb"\x58(?:" + b"|".join(rb"\x%02x[\x00-\xff]{%d}" % (n, n) for n in range(24, _ATOM_STRING_MAX + 1)) + b")"]
    + [rb"\x78(?:" + b"|".join(rb"\x%02x[\x00-\x7f]{%d}" % (n, n) for n in range(24, _ATOM_STRING_MAX + 1)) + b")"]
)
_ATOM_RUNS: list[re.Pattern[bytes] | None] = [None] * 13
"""``_atom_run(k)`` matches exactly 2**k atoms (up to 4096), compiled on first use."""
_ATOM_HEADS = frozenset(
    [*range(0x00, 0x1C), *range(0x20, 0x3C), *range(0x40, 0x59), *range(0x60, 0x79), *range(0xF4, 0xF8), *range(0xF9, 0xFC)]
)


def _atom_run(k: int) -> re.Pattern[bytes]:
    pattern = _ATOM_RUNS[k]
    if pattern is None:
        pattern = _ATOM_RUNS[k] = re.compile(b"(?:" + _ATOM + b"){%d}+" % (1 << k))
    return pattern


# Heads of the items ``skip`` consumes by their shape: strings with a length up to 255, arrays
# and maps with up to 255 entries.
_SHAPED_HEADS = frozenset([*range(0x40, 0x59), *range(0x60, 0x79), *range(0x80, 0x99), *range(0xA0, 0xB9)])
_SHAPE_MAX = 512
"""The longest item given a shape: its bytes are walked once in Python, the items after it in bulk."""
_SHAPE_PAYS, _SHAPE_BACKOFF = 8, 64
"""A run of fewer items than this counts as a miss (of a shape, or of atoms): the next attempts wait
1, 2, 4, ... 64 items."""
_NON_ASCII = re.compile(rb"[\x80-\xff]")


Shape = tuple[int, list[int], list[int]]


def _shape(buf: bytes, pos: int, end: int, depth: int, scratch: int) -> Shape | None:
    """The shape of the plain item at ``pos``: its length, the offsets of the bytes every item of
    the same shape repeats (heads, lengths, counts, the non-ASCII bytes of its text) and the
    offsets of its ASCII text bytes; the bytes at no offset are integer and float arguments and
    byte-string contents, which serde's skip accepts whatever they hold.

    None unless the item is at most ``_SHAPE_MAX`` bytes of definite containers (nested less
    deeply than ``depth`` allows), numbers, false/true/null/undefined and strings (text valid
    UTF-8) up to ``scratch`` bytes: an item serde's skip consumes without any possible error.
    Any other item of the same shape is one too — same structure, same lengths, ASCII
    characters in place of ASCII characters — so ``_shape_run`` need only compare bytes.
    """
    fixed: list[int] = []
    ascii_: list[int] = []
    limit = min(end, pos + _SHAPE_MAX)
    at = pos
    open_: list[int] = []  # items each open container still holds
    while True:
        if at >= limit:
            return None
        initial = buf[at]
        major, info = initial >> 5, initial & 0x1F
        if info < 24:
            arg, head = info, 1
        elif info < 28:
            head = 1 + (1 << (info - 24))
            if at + head > limit:
                return None
            arg = int.from_bytes(buf[at + 1 : at + head], "big")
        else:
            return None
        if major <= 1 or (major == 7 and 25 <= info <= 27):  # an integer or float: any argument
            fixed.append(at - pos)
            at += head
        elif major == 7:
            if not 20 <= info <= 23:
                return None
            fixed.append(at - pos)
            at += 1
        elif major <= 3:
            if arg > scratch or at + head + arg > limit:
                return None
            fixed.extend(range(at - pos, at - pos + head))
            at += head
            if major == 3:
                data = buf[at : at + arg]
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    return None
                if data.isascii():
                    ascii_.extend(range(at - pos, at - pos + arg))
                else:
                    for offset, byte in enumerate(data, at - pos):
                        (ascii_ if byte < 0x80 else fixed).append(offset)
            at += arg
        elif major <= 5:
            if len(open_) >= depth:  # the recursion limit: the careful path reports it
                return None
            fixed.extend(range(at - pos, at - pos + head))
            at += head
            items = arg if major == 4 else 2 * arg
            if items:
                open_.append(items)
                continue
        else:  # tags: the careful path
            return None
        while open_:  # the item is complete: count it off, closing the containers it fills
            open_[-1] -= 1
            if open_[-1]:
                break
            open_.pop()
        else:
            return at - pos, fixed, ascii_


def _shape_run(buf: bytes, pos: int, stop: int, shape: Shape) -> int:
    """How many items of ``shape`` follow ``pos`` (the first is the item it was taken from),
    ending by ``stop``: each offset's bytes are compared across a chunk of items at once (one
    strided slice per offset), in chunks that double, so the work follows the run's length."""
    length, fixed, ascii_ = shape
    run, chunk = 0, 4
    while True:
        at = pos + run * length
        good = min(chunk, (stop - at) // length)
        if good <= 0:
            return run
        count = good
        for offset in fixed:
            column = buf[at + offset : at + offset + good * length : length]
            good -= len(column.lstrip(buf[pos + offset : pos + offset + 1]))  # leading equal bytes
            if not good:
                return run
        for offset in ascii_:
            found = _NON_ASCII.search(buf[at + offset : at + offset + good * length : length])
            if found is not None:
                good = found.start()
                if not good:
                    return run
        run += good
        if good < count:
            return run
        chunk *= 2


def python_skip_plain(buf: bytes, pos: int, end: int, depth: int, scratch: int, stack: list[int]) -> tuple[int, int, bool]:
    """``skip``'s inner loop for the tokens that cannot fail: while the innermost open container
    (``stack[-1]``, a count of items still to come or an indefinite marker) is definite, consume
    scalars, short strings, definite containers and non-bignum tags straight from the bytes,
    leaving at the first token that needs the careful path (which then reads it from the same
    state). Returns (pos, depth, done) and updates ``stack`` in place; ``done`` is True when the
    outermost item completed. ``burnpack/codec/_cskip.c`` is the same function compiled."""
    fixed_width, atom_runs = _FIXED_WIDTH, _ATOM_RUNS
    wait, backoff = 0, 1  # shaped-head items left to the token path before the next shape attempt
    atom_wait, atom_backoff = 0, 1  # the same for runs of atoms
    done = False
    while stack and stack[-1] > 0 and pos < end:
        initial = buf[pos]
        if initial in _ONE_BYTE_ITEMS and stack[-1] > 1 and (depth or initial in _ONE_BYTE_SCALARS):
            # Empty arrays and maps only count as plain below the recursion limit.
            match = (_ITEM_RUN if depth else _SCALAR_RUN).match(buf, pos, min(end, pos + stack[-1] - 1))
            run = match.end() - pos if match else 0  # the patterns match the empty run too
            pos += run
            stack[-1] -= run
            continue
        if atom_wait:
            atom_wait -= 1
        elif (initial in _ATOM_HEADS and stack[-1] > 2 and scratch >= _ATOM_STRING_MAX
              and not ((width := fixed_width[initial]) > 1 and pos + width < end and buf[pos + width] == initial)):
            # A run of atoms of any kinds (one width: below): 1, 2, 4, ... 4096 of them per regex
            # match while they last, halving at the run's end, so sre scans every item about 3
            # times at most. A short run counts as a miss: the next attempts wait 1, 2, 4, ... 64
            # items, so content that rarely holds atoms in a row costs what the token path costs.
            remaining, k = stack[-1] - 1, 0
            while True:
                while 1 << k > remaining:
                    k -= 1
                match = (atom_runs[k] or _atom_run(k)).match(buf, pos, end)
                if match is None:
                    if not k:
                        break
                    k -= 1
                    continue
                pos = match.end()
                remaining -= 1 << k
                if not remaining:
                    break
                k = min(k + 1, len(atom_runs) - 1)
            run = stack[-1] - 1 - remaining
            if run >= _SHAPE_PAYS:
                atom_backoff = 1
            else:
                atom_wait, atom_backoff = atom_backoff, min(2 * atom_backoff, _SHAPE_BACKOFF)
            if run:
                stack[-1] = remaining + 1
                continue
        if initial in _SHAPED_HEADS and stack[-1] > 2:
            # A string or small container: consumed by its shape, with the items after it that
            # share it. Walking a shape costs about what the token path costs for the item; where
            # shapes do not repeat, the attempts back off, so mixed content costs what it did.
            if wait:
                wait -= 1
            else:
                shape = _shape(buf, pos, end, depth, scratch)
                if shape is not None:
                    length = shape[0]
                    same = pos + length < end and buf[pos + length] == initial
                    run = _shape_run(buf, pos, min(end, pos + length * (stack[-1] - 1)), shape) if same else 1
                    pos += run * length
                    stack[-1] -= run
                    if run >= _SHAPE_PAYS:
                        backoff = 1
                    else:
                        wait, backoff = backoff, min(2 * backoff, _SHAPE_BACKOFF)
                    continue
                wait, backoff = backoff, min(2 * backoff, _SHAPE_BACKOFF)
        major, info = initial >> 5, initial & 0x1F
        if info < 24:
            arg, head = info, 1
        elif info < 28:
            head = 1 + (1 << (info - 24))
            if pos + head < end and buf[pos + head] == initial and fixed_width[initial] and stack[-1] > 2:
                # a run of integers or floats of one width (two at least): heads checked in bulk
                run = _fixed_run(buf, pos, min(end, pos + head * (stack[-1] - 1)), head)
                pos += run * head  # at least the first
                stack[-1] -= run
                continue
            if pos + head > end:
                break
            arg = int.from_bytes(buf[pos + 1 : pos + head], "big")
        else:
            break
        if major <= 1:
            pos += head
        elif major == 7:
            if not (20 <= info <= 23 or 25 <= info <= 27):
                break
            pos += head
        elif major <= 3:
            if arg > scratch or pos + head + arg > end:
                break
            if major == 3:
                try:
                    buf[pos + head : pos + head + arg].decode("utf-8")
                except UnicodeDecodeError:
                    break
            pos += head + arg
        elif major <= 5:
            if depth == 0:
                break
            pos += head
            items = arg if major == 4 else 2 * arg
            if items:
                depth -= 1
                stack.append(items)
                continue
        else:  # a tag: ignored, its item read next (bignums need the careful path)
            if arg in (_BIGPOS, _BIGNEG) or depth == 0:
                break
            pos += head
            depth -= 1
            stack.append(1)
            continue
        while stack:  # the item is complete: count it off, closing the containers it fills
            top = stack[-1]
            if top > 1:
                stack[-1] = top - 1
                break
            if top == 1:
                stack.pop()
                depth += 1
                continue
            stack[-1] = _IND_VALUE if top == _IND_KEY else _IND_KEY if top == _IND_VALUE else top
            break
        else:
            done = True
            break
    return pos, depth, done


_cskip = load_kernel("burnpack.codec._cskip")  # None when not built: the same walk in Python
_compiled_skip_plain = None if _cskip is None else _cskip.skip_plain

skip_plain: Callable[[bytes, int, int, int, int, list[int]], tuple[int, int, bool]] = _compiled_skip_plain or python_skip_plain
"""What ``Decoder.skip`` runs: the compiled kernel when it is built, else ``python_skip_plain``."""
SKIP_KERNEL = "compiled" if _compiled_skip_plain is not None else "python"
"""Which ``skip_plain`` is active (docs/codec.md)."""


# -- helpers for the generated canonical scanner ---------------------------------------------
def uints(header: bytes, body: bytes) -> tuple[int, ...] | None:
    """The integers of an array (its header and the run of integer tokens), None if the count is off."""
    count = header[0] - 0x80 if len(header) == 1 else int.from_bytes(header[1:], "big")
    if not body or max(body) < 0x18:
        values = tuple(body)
    else:
        items = []
        pos = 0
        while pos < len(body):
            head = body[pos]
            width = 0 if head < 0x18 else 1 << (head - 0x18)
            items.append(head if width == 0 else int.from_bytes(body[pos + 1 : pos + 1 + width], "big"))
            pos += 1 + width
        values = tuple(items)
    return values if len(values) == count else None


def map_header(buf: bytes, pos: int) -> tuple[int, int]:
    """(entry count, position after the header) of a definite map at ``pos``; else Fallback."""
    head = buf[pos]
    if 0xA0 <= head <= 0xB7:
        return head - 0xA0, pos + 1
    if 0xB8 <= head <= 0xBB:
        width = 1 << (head - 0xB8)
        if pos + 1 + width > len(buf):  # the length runs past the end: the exact decoder reports it
            raise Fallback
        return int.from_bytes(buf[pos + 1 : pos + 1 + width], "big"), pos + 1 + width
    raise Fallback


# -- helpers for the generated direct encoder ------------------------------------------------
byte_string = tuple(bytes((i,)) for i in range(256))
"""The one-byte ``bytes`` of each value: indexing beats building one per call on the hot paths."""
_SMALL_UINTS = byte_string[:24]
_ARRAY_HEADS = [bytes((0x80 | i,)) for i in range(24)]


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return byte_string[major | n]
    if n < 0x100:
        return bytes((major | 24, n))
    if n < 0x10000:
        return bytes((major | 25,)) + n.to_bytes(2, "big")
    if n < 0x100000000:
        return bytes((major | 26,)) + n.to_bytes(4, "big")
    return bytes((major | 27,)) + n.to_bytes(8, "big")


_UINT_HEADED = tuple(struct.Struct(f">B{code}").pack for code in "BHIQ")
"""Head byte and a 1, 2, 4 or 8-byte big-endian argument, packed in one call."""


def uint_bytes(n: int) -> bytes:
    """Shortest-form CBOR unsigned integer."""
    if n < 24:
        return _SMALL_UINTS[n]
    if n < 0x100:
        return _UINT_HEADED[0](0x18, n)
    if n < 0x10000:
        return _UINT_HEADED[1](0x19, n)
    if n < 0x100000000:
        return _UINT_HEADED[2](0x1A, n)
    return _UINT_HEADED[3](0x1B, n)


def uint_array(values: tuple[int, ...]) -> bytes:
    """A definite array of shortest-form unsigned integers."""
    n = len(values)
    head = _ARRAY_HEADS[n] if n < 24 else _head(0x80, n)
    if not values or max(values) < 24:
        return head + bytes(values)
    return head + b"".join(map(uint_bytes, values))


def map_head(n: int) -> bytes:
    return _head(0xA0, n)


def text_bytes(text: str) -> bytes:
    """A definite text string: shortest-form length, then UTF-8."""
    data = text.encode("utf-8")
    n = len(data)
    return (byte_string[0x60 | n] if n < 24 else _head(0x60, n)) + data
