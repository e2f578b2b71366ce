"""The vector generators: every case of the corpus, built from the spec, deterministically.

Each reader vector is a file plus the *declared* meaning of its CBOR metadata item (format.md
§2.6: what ciborium + serde make of it, or that they reject it); ``conformance.rules`` turns that
into the expected outcome at both levels and the expected ``dump --json`` object. Files that
Burn's writer would produce are built by ``model.PackSpec.build`` (this package's own encoder
and layout code) and double as writer vectors: the spec JSON plus these exact bytes.

``build_corpus()`` returns the cases; ``conformance.corpus`` writes them out with a manifest.
Run ``burnpack-conformance generate`` to regenerate ``conformance/vectors`` (``--check`` verifies
the checked-in copy is up to date).
"""

from __future__ import annotations

import copy
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import cbor
from .cbor import UNDEFINED, Array, Bytes, Float, Int, Map, Raw, Simple, Tag, Text, bignum
from .model import (
    U64_MAX,
    Content,
    Desc,
    PackSpec,
    T,
    assemble,
    header,
    qfloat,
    scalar,
)


@dataclass
class ReaderCase:
    id: str  # "category/name"
    description: str
    build: Callable[[], tuple[bytes, Content | None]]  # file bytes, declared decode (None: CBOR rejected)
    runtime: bool = False  # too big to check in: generated when the corpus is loaded
    writer_spec: dict | None = None  # set when the file is a Burn writer's output for this spec

    @property
    def category(self) -> str:
        return self.id.split("/", 1)[0]


@dataclass
class WriterCase:
    id: str
    description: str
    spec: dict
    expected_reader: str | None = None  # id of the reader vector holding the exact expected bytes
    refusal: str | None = None  # the error kind when the writer must refuse

    @property
    def category(self) -> str:
        return self.id.split("/", 1)[0]


@dataclass
class Corpus:
    readers: list[ReaderCase] = field(default_factory=list)
    writers: list[WriterCase] = field(default_factory=list)

    def raw(self, id: str, description: str, data: bytes, content: Content | None, *, runtime: bool = False) -> None:
        self.readers.append(ReaderCase(id, description, lambda: (data, content), runtime))

    def lazy(self, id: str, description: str, build: Callable[[], tuple[bytes, Content | None]]) -> None:
        self.readers.append(ReaderCase(id, description, build, runtime=True))

    def pack(self, id: str, description: str, spec: PackSpec, *, writer: bool = True, runtime: bool = False) -> None:
        """A file exactly as Burn's writer produces it, and (by default) the writer vector for it."""
        content, _ = spec.plan()
        data = spec.build()
        self.readers.append(ReaderCase(id, description, lambda: (data, content), runtime, writer_spec=spec.to_json()))
        if writer:
            self.writers.append(WriterCase(id, description, spec.to_json(), expected_reader=id))

    def refuse(self, id: str, description: str, spec: PackSpec | dict, kind: str = "ValidationError") -> None:
        self.writers.append(WriterCase(id, description, spec if isinstance(spec, dict) else spec.to_json(), refusal=kind))


# -- what descriptions claim ---------------------------------------------------------------------
_COUNT_WORDS = {"one": 1, "single": 1, "two": 2, "three": 3}


def _metadata_end(data: bytes, content: Content | None) -> int:
    return 10 + struct.unpack_from("<I", data, 6)[0]


_CLAIMS: list[tuple[re.Pattern[str], str, Callable[[bytes, Content | None], int | None]]] = [
    (re.compile(r"10 \+ M (?:=|is) (\d+)"), "10 + M", _metadata_end),
    (re.compile(r"(?:file (?:is|=) |: )(\d+) bytes(?=[,;)]|$)"), "file length", lambda data, content: len(data)),
    (re.compile(r"the first (\d+) bytes of"), "file length", lambda data, content: len(data)),
    (re.compile(r"\b(\d+|one|single|two|three) tensors?\b"), "tensor count",
     lambda data, content: None if content is None else len(content.tensors)),
    (re.compile(r"\b(\d+) entries\b"), "metadata entries", lambda data, content: None if content is None else len(content.metadata)),
]


def check_claims(id: str, description: str, data: bytes, content: Content | None) -> None:
    """Fail when a vector's description states a number its file does not have.

    Recognised claims: ``10 + M = N`` (metadata end), ``file is N bytes`` / ``: N bytes,``,
    ``the first N bytes of``, ``N tensors`` and ``N entries`` (metadata entries).
    """
    for pattern, what, measure in _CLAIMS:
        for match in pattern.finditer(description):
            word = match.group(1)
            claimed = _COUNT_WORDS[word] if word in _COUNT_WORDS else int(word)
            actual = measure(data, content)
            if actual is not None and actual != claimed:
                raise AssertionError(f"vector {id}: the description says {what} {claimed} ({match.group(0)!r}), the file has {actual}")


# -- byte helpers ---------------------------------------------------------------------------------
def le(fmt: str, values: list) -> bytes:
    return np.array(values, dtype=np.dtype(fmt)).tobytes()


def bits(fmt: str, values: list[int]) -> bytes:
    """Raw little-endian words (floats given by their bit patterns, e.g. NaN payloads)."""
    return b"".join(v.to_bytes(struct.calcsize(fmt), "little") for v in values)


def f32(*values: float) -> bytes:
    return le("<f4", list(values))


def bf16(*values: float) -> bytes:
    return b"".join((struct.unpack("<I", struct.pack("<f", v))[0] >> 16).to_bytes(2, "little") for v in values)


def ramp(n: int, seed: int = 0) -> bytes:
    """n deterministic pseudo-random bytes."""
    out, x = bytearray(), 0x9E3779B9 ^ seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


def one(name: str, dtype: Any, shape: list[int], data: bytes, param_id: int | None = None, **kw) -> PackSpec:
    return PackSpec([T(name, dtype, shape, data, param_id)], **kw)


# -- the base pack the corrupt and CBOR vectors are derived from ----------------------------------
def base_spec() -> PackSpec:
    """weight F32 [2,2] id 7 then bias U8 [3]: data order differs from name order; one metadata
    entry and one scalar, so every part of the format is present."""
    return PackSpec(
        [T("weight", "F32", [2, 2], f32(1.0, 2.0, 3.0, 4.0), 7), T("bias", "U8", [3], b"\x01\x02\x03")],
        {"producer": "conformance"},
        {"step": scalar("UInt", 3)},
    )


BASE = base_spec()
BASE_CONTENT, _BASE_STARTS = BASE.plan()
BASE_PLACED = [(s, t.data) for s, t in zip(_BASE_STARTS, BASE.tensors)]
BASE_FILE = BASE.build()
BASE_M = int.from_bytes(BASE_FILE[6:10], "little")


def base_tree() -> dict:
    """The canonical CBOR tree of the base pack, to be edited into a deviation."""
    return copy.deepcopy(BASE_CONTENT.cbor_tree())


def with_blob(blob: bytes, **kw) -> bytes:
    """The base pack's data section behind another metadata blob (D recomputed from its length)."""
    return assemble(blob, BASE_PLACED, **kw)


def content_with(**changes) -> Content:
    """The base content with some descriptor fields changed: name=dict(field=value) / None to drop."""
    c = copy.deepcopy(BASE_CONTENT)
    for name, change in changes.items():
        if change is None:
            del c.tensors[name]
        else:
            for key, value in change.items():
                setattr(c.tensors[name], key, value)
    return c


# ==================================================================================================
def build_corpus() -> Corpus:
    c = Corpus()
    _dtypes(c)
    _shapes(c)
    _names(c)
    _param_ids(c)
    _metadata(c)
    _scalars(c)
    _layout(c)
    _header(c)
    _truncation(c)
    _offsets(c)
    _cbor(c)
    _legacy(c)
    _check_order(c)
    _limits(c)
    _writer_refusals(c)
    ids = [r.id for r in c.readers] + ["writer:" + w.id for w in c.writers]
    assert len(ids) == len(set(ids)), "duplicate vector ids"
    return c


# -- dtype ----------------------------------------------------------------------------------------
F64_EDGE = [0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0x7FEFFFFFFFFFFFFF, 0x0010000000000000,
            0x0000000000000001, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000001]
F32_EDGE = [0x00000000, 0x80000000, 0x3F800000, 0x7F7FFFFF, 0x00800000, 0x00000001, 0x7F800000, 0xFF800000,
            0x7FC00000, 0xFFC00001]
F16_EDGE = [0x0000, 0x8000, 0x3C00, 0x7BFF, 0x0400, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0xFE01]
BF16_EDGE = [0x0000, 0x8000, 0x3F80, 0x7F7F, 0x0080, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1]


def _dtypes(c: Corpus) -> None:
    cases = {
        "f64": ("F64", [2, 5], bits("<Q", F64_EDGE), "F64 [2,5]: ±0, 1, max, min normal, min subnormal, ±inf, NaN, -NaN payload"),
        "f32": ("F32", [10], bits("<I", F32_EDGE), "F32 [10]: ±0, 1, max, min normal/subnormal, ±inf, NaNs"),
        "flex32": ("Flex32", [10], bits("<I", F32_EDGE), "Flex32 [10] (f32 bytes)"),
        "f16": ("F16", [5, 2], bits("<H", F16_EDGE), "F16 [5,2]: ±0, 1, 65504, min normal/subnormal, ±inf, NaNs"),
        "bf16": ("BF16", [10], bits("<H", BF16_EDGE), "BF16 [10]: ±0, 1, max, min normal/subnormal, ±inf, NaNs"),
        "i64": ("I64", [4], le("<i8", [-(1 << 63), -1, 0, (1 << 63) - 1]), "I64 [4]: min, -1, 0, max"),
        "i32": ("I32", [2, 2], le("<i4", [-(1 << 31), -1, 0, (1 << 31) - 1]), "I32 [2,2]: min, -1, 0, max"),
        "i16": ("I16", [4], le("<i2", [-(1 << 15), -1, 0, (1 << 15) - 1]), "I16 [4]"),
        "i8": ("I8", [4], le("i1", [-128, -1, 0, 127]), "I8 [4]"),
        "u64": ("U64", [3], le("<u8", [0, 1 << 63, U64_MAX]), "U64 [3]: 0, 2^63, max"),
        "u32": ("U32", [3], le("<u4", [0, 1 << 31, 0xFFFFFFFF]), "U32 [3]"),
        "u16": ("U16", [3], le("<u2", [0, 1 << 15, 0xFFFF]), "U16 [3]"),
        "u8": ("U8", [2, 3], bytes([0, 1, 127, 128, 254, 255]), "U8 [2,3]"),
        "bool_native": ({"Bool": "Native"}, [5], bytes([1, 0, 1, 1, 0]), "Bool(Native) [5], one byte per value"),
        "bool_u8": ({"Bool": "U8"}, [2, 2], bytes([0, 1, 1, 0]), "Bool(U8) [2,2]"),
        "bool_u32": ({"Bool": "U32"}, [3], le("<u4", [1, 0, 1]), "Bool(U32) [3], four bytes per value"),
        "bool_native_nonzero_bytes": ({"Bool": "Native"}, [3], bytes([2, 255, 0]),
                                      "Bool(Native) with bytes 2 and 255: the container does not normalise bools"),
    }
    for name, (dtype, shape, data, desc) in cases.items():
        c.pack(f"dtype/{name}", desc, one("t", dtype, shape, data, 1))
    schemes = {
        "qfloat_default_q8f": (qfloat("Q8F"), [4], ramp(8), "QFloat default scheme: Q8F, PackedU32(0), tensor/block null"),
        "qfloat_q8s_native_per_tensor": (qfloat("Q8S", "Native", tensor="F32"), [8], ramp(12, 1),
                                         "QFloat Q8S Native store, per-tensor F32 scale (8 values + 4-byte scale)"),
        "qfloat_q4s_packed_u32_two_level": (qfloat("Q4S", {"PackedU32": 0}, tensor="F32", block=([32], "F16")), [2, 32],
                                            ramp(16 + 4 + 4, 2), "QFloat Q4S PackedU32(0), block [32] F16 scales + per-tensor F32"),
        "qfloat_e2m1_packed_native_block16": (qfloat("E2M1", {"PackedNative": 0}, tensor="F32", block=([16], "UE4M3")),
                                              [2, 32], ramp(40, 3), "QFloat E2M1 PackedNative(0), block [16] UE4M3, tensor F32"),
        "qfloat_q2s_lookup_bf16": (qfloat("Q2S", {"PackedU32": 1}, "Lookup", tensor="BF16"), [4, 16], ramp(18, 4),
                                   "QFloat Q2S PackedU32(1), Lookup mode, BF16 per-tensor scale"),
        "qfloat_e4m3_block_4x32_ue8m0": (qfloat("E4M3", "Native", block=([1, 4, 32], "UE8M0")), [8, 64], ramp(512 + 4, 5),
                                         "QFloat E4M3, block [1,4,32] (leading 1 stripped → len 2) UE8M0 scales"),
        "qfloat_e5m2_block_rank5": (qfloat("E5M2", {"PackedNative": 2}, block=([2, 2, 2, 2, 2], "BF16")), [2, 2, 2, 2, 2],
                                    ramp(34, 6), "QFloat E5M2 PackedNative(2), a full 5-dim block"),
        "qfloat_q4f_block_only": (qfloat("Q4F", {"PackedU32": 0}, block=([64], "F32")), [64], ramp(36, 7),
                                  "QFloat Q4F: block scales only (tensor null)"),
        "qfloat_q2f_tensor_only": (qfloat("Q2F", {"PackedU32": 0}, tensor="UE4M3"), [32], ramp(9, 8),
                                   "QFloat Q2F: per-tensor UE4M3 scale only (block null)"),
        "qfloat_length_unchecked": (qfloat("Q8S", "Native", tensor="F32"), [1000], ramp(3, 9),
                                    "QFloat bytes are opaque: 3 bytes for 1000 values are written and read as-is"),
    }
    for name, (dtype, shape, data, desc) in schemes.items():
        c.pack(f"dtype/{name}", desc, one("q", dtype, shape, data, 2))
    # Block sizes BlockSize::new never makes: Burn's reader keeps them as written (deserialization does
    # not canonicalise) and its writer writes such a dtype back byte for byte; strict mode rejects them.
    written_as_read = {
        "qfloat_block_leading_one_kept": ([1, 32, 1, 1, 1], 2, "a leading 1 kept (BlockSize::new strips it)"),
        "qfloat_block_unused_slots_zero": ([32, 0, 0, 0, 0], 1, "unused slots 0 (BlockSize::new fills them with 1)"),
        "qfloat_block_len_over_storage": ([32, 1, 1, 1, 1], 6, "len 6 over 5 storage slots"),
    }
    for name, (storage, length, desc) in written_as_read.items():
        dtype = qfloat("Q8S", "Native", tensor="F32")
        dtype["QFloat"]["block"] = {"size": {"storage": storage, "len": length}, "dtype": "F16"}
        c.pack(f"dtype/{name}", f"QFloat block size {storage} len {length}: {desc}; Burn's writer writes it as read",
               one("q", dtype, [64], ramp(68, 10), 2))
    mixed = PackSpec()
    for i, (name, (dtype, shape, data, _)) in enumerate(list(cases.items()) + list(schemes.items())):
        mixed.tensors.append(T(f"{i:02d}.{name}", dtype, shape, data, i))
    c.pack("dtype/all_in_one_file", "every dtype in one file, odd sizes so every start needs padding", mixed)


# -- shape ----------------------------------------------------------------------------------------
def _shapes(c: Corpus) -> None:
    c.pack("shape/scalar_0d", "0-d tensor (shape []) holding one F32 value (numel of [] is 1)", one("s", "F32", [], f32(-7.25)))
    c.pack("shape/scalar_0d_i64", "0-d I64", one("s", "I64", [], le("<i8", [-5])))
    c.pack("shape/zero_size_1d", "shape [0]: no bytes, data_offsets (0, 0)", one("e", "F32", [0], b""))
    c.pack("shape/zero_size_2d", "shape [3, 0] I64: no bytes", one("e", "I64", [3, 0], b""))
    c.pack("shape/zero_dim_2_pow_32", "shape [0, 2^32] U8: zero elements, a dimension needing a 4-byte head",
           one("e", "U8", [0, 1 << 32], b""))
    c.pack("shape/zero_dim_u64_max", "shape [u64::MAX, 0]: a readers computing numel in u64 must not overflow",
           one("e", "F32", [U64_MAX, 0], b""))
    c.pack("shape/head_width_boundaries", "zero-size shape whose dims hit every CBOR head width: 23, 24, 255, 256, 65535, 65536, 2^32",
           one("e", "U8", [23, 24, 255, 256, 65535, 65536, 1 << 32, 0], b""))
    c.pack("shape/rank_8", "rank-8 [1]*8 F32", one("r", "F32", [1] * 8, f32(1.0)))
    c.pack("shape/rank_24", "rank 24 (array length head 0x98 0x18)", one("r", "U8", [1] * 23 + [2], b"\x07\x08"))
    c.pack("shape/dim_over_65535", "U8 [70000]: a dim > 65535 and a tensor > 64 KiB", one("big", "U8", [70000], ramp(70000, 10)))
    c.pack("shape/empty_first", "empty tensor first: (0,0), the next tensor starts at 0 too",
           PackSpec([T("e", "F32", [0], b""), T("a", "U8", [1], b"\x09")]))
    c.pack("shape/empty_middle", "empty tensor between two: aligned start shared with the next tensor",
           PackSpec([T("z", "F32", [3], f32(1, 2, 3)), T("e", "F32", [0, 4], b"", 1), T("a", "I64", [], le("<i8", [9]))]))
    c.pack("shape/empty_last", "empty tensor last: the file ends with padding up to its aligned start",
           PackSpec([T("a", "F32", [3], f32(1, 2, 3)), T("z", "U8", [0], b"")]))
    c.pack("shape/empty_only", "a single empty tensor: (0,0), file = 256 bytes", one("e", "F32", [0], b""))
    c.pack("shape/empty_consecutive", "three empty tensors after data: all share one aligned start",
           PackSpec([T("d", "U8", [5], b"12345"), T("e1", "F32", [0], b""), T("e2", "F32", [0], b""), T("e3", "U8", [0, 0], b"")]))


# -- names ----------------------------------------------------------------------------------------
def _names(c: Corpus) -> None:
    def named(names: list[str]) -> PackSpec:
        return PackSpec([T(n, "U8", [1], bytes([i])) for i, n in enumerate(names)])

    c.pack("names/unicode", "CJK, Cyrillic, emoji, accented names", named(["权重", "вес", "🔥.weight", "é.w", "naïve"]))
    c.pack("names/dotted_digits", "dotted names with numbers: layer.10 sorts before layer.2",
           named([f"layers.{i}.attn.w" for i in (0, 1, 2, 10, 11, 100)]))
    c.pack("names/long_300", "a 300-character name (text head 0x79)", named(["n" * 300]))
    c.pack("names/long_5000", "a 5000-byte name: map keys are strings, not struct identifiers (no 4096 limit)",
           named(["x" * 5000, "y"]))
    c.pack("names/length_23_24", "names of 23 and 24 bytes (text head 0x77 vs 0x78 0x18)", named(["a" * 23, "b" * 24]))
    c.pack("names/case_order", "byte-wise order: uppercase before lowercase", named(["alpha", "Alpha", "ALPHA", "_a", "a"]))
    c.pack("names/prefix_order", "a prefix sorts first: w < w.b < w_ < wa", named(["wa", "w_", "w.b", "w"]))
    c.pack("names/non_ascii_after_ascii", "non-ASCII sorts after ASCII: zeta < é.w", named(["é.w", "zeta"]))
    c.pack("names/astral_vs_bmp", "code point (UTF-8) order, not UTF-16: U+FF61 < U+1F600",
           named(["\U0001F600", "\uff61", "\u00e9", "\U00010000"]))
    c.pack("names/combining_vs_precomposed", "e + U+0301 and U+00E9 are different names (no normalisation)",
           named(["e\u0301", "\u00e9"]))
    c.pack("names/empty_name", "the empty string is a valid name", named(["", "a"]))
    c.pack("names/control_and_space", "names with space, tab, newline, NUL, slash and quotes",
           named(["a b", "a\tb", "a\nb", "a\x00b", "a/b", 'a"b', "a\\b"]))
    c.pack("names/digit_order", "digits sort before letters and '.' before digits", named(["1", "10", "2", "a", ".x"]))
    # Decoder conveniences a reader must not have: every name is its exact code points.
    c.pack("names/leading_bom", "a name starting with U+FEFF (a byte-order mark) is kept whole: a decoder that strips a "
           "leading BOM renames the tensor", named(["\ufeffweight"]))
    c.pack("names/leading_bom_beside_plain", "'\\ufeffweight', 'weight' and a name that is only U+FEFF: three tensors, "
           "which a BOM-stripping decoder merges or renames", named(["\ufeffweight", "weight", "\ufeff"]))
    c.pack("names/normalization_forms", "Å as U+00C5, as A + U+030A and as U+212B; Ω as U+2126 and U+03A9; U+FB01 and 'fi': "
           "seven names (NFC, NFD or NFKC would merge some)", named(["\u00c5", "A\u030a", "\u212b", "\u2126", "\u03a9", "\ufb01", "fi"]))
    c.pack("names/line_breaks", "names holding CR LF, CR, LF, U+2028, U+2029, NEL, VT, FF and U+001C: no line-ending "
           "conversion, and each answer stays one line in batch mode", named(["a\r\nb", "a\rb", "a\nb", "a\u2028b", "a\u2029b",
                                                                                 "a\x85b", "a\x0bb", "a\x0cb", "a\x1cb"]))
    c.pack("names/surrounding_whitespace", "names with a leading or trailing space, tab, U+00A0, U+3000 or U+200B: never trimmed",
           named([" w", "w ", "w", "\tw", "\u00a0w", "w\u3000", "\u200bw"]))


# -- param ids ------------------------------------------------------------------------------------
def _param_ids(c: Corpus) -> None:
    ids = [None, 0, 1, 23, 24, 255, 256, 65535, 65536, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, U64_MAX]
    spec = PackSpec([T(f"p{i:02d}", "U8", [1], bytes([i]), pid) for i, pid in enumerate(ids)])
    c.pack("param_id/boundaries", "param_id absent, 0 and every head-width boundary up to u64::MAX (> 2^63)", spec)
    c.pack("param_id/absent", "no param_id key at all", one("t", "F32", [1], f32(1)))
    c.pack("param_id/zero", "param_id 0 is present (not absent)", one("t", "F32", [1], f32(1), 0))
    c.pack("param_id/u64_max", "param_id u64::MAX (1b ffffffffffffffff)", one("t", "F32", [1], f32(1), U64_MAX))
    c.pack("param_id/above_i64_max", "param_id 2^63: a reader using i64 must not go negative", one("t", "F32", [1], f32(1), 1 << 63))


# -- metadata -------------------------------------------------------------------------------------
def _metadata(c: Corpus) -> None:
    t = [T("w", "F32", [1], f32(1))]
    c.pack("metadata/basic", "ascii, empty value, unicode key/value, JSON-looking value",
           PackSpec(t, {"producer": "burn", "empty": "", "ключ": "значение ✓", "json": '{"a": [1, 2]}'}))
    c.pack("metadata/key_order", "metadata keys sorted byte-wise (B < a < é < 😀)", PackSpec(t, {"😀": "4", "é": "3", "a": "2", "B": "1"}))
    c.pack("metadata/empty_key", "the empty string as a key", PackSpec(t, {"": "empty key"}))
    c.pack("metadata/long_value", "a 6000-byte value: values are strings, no 4096 limit", PackSpec(t, {"blob": "v" * 6000}))
    c.pack("metadata/many_entries", "300 entries: the map length needs a 2-byte head", PackSpec(t, {f"k{i:03d}": str(i) for i in range(300)}))
    c.pack("metadata/nul_and_newlines", "values holding NUL, newlines and tabs", PackSpec(t, {"k": "a\x00b\nc\td"}))
    c.pack("metadata/burn_store_keys", "the three keys BurnpackStore adds", PackSpec(t, {"format": "burnpack", "producer": "burn", "version": "0.22.0-pre.2"}))
    c.pack("metadata/leading_bom", "keys and values starting with U+FEFF beside the same text without it: kept whole",
           PackSpec(t, {"\ufeffproducer": "\ufeffburn", "producer": "burn", "bom": "\ufeff"}))
    c.pack("metadata/normalization_forms", "keys U+00E9 and e + U+0301, values U+212B, A + U+030A and U+FB01: no normalisation",
           PackSpec(t, {"\u00e9": "\u212b", "e\u0301": "A\u030a", "k": "\ufb01"}))
    c.pack("metadata/line_breaks", "values holding CR LF, U+2028, U+2029 and NEL, and a key ending in U+2028: kept as they are",
           PackSpec(t, {"crlf": "a\r\nb", "ls": "a\u2028b", "ps": "a\u2029b", "nel": "a\x85b", "k\u2028": "v"}))
    c.pack("metadata/only_metadata", "metadata and no tensors (no padding is skipped: file is 256 bytes)", PackSpec([], {"k": "v"}))


# -- scalars --------------------------------------------------------------------------------------
NAN = 0x7FF8000000000000


def _scalars(c: Corpus) -> None:
    t = [T("w", "U8", [1], b"\x01")]

    def sc(pairs: dict[str, tuple[str, Any]]) -> dict:
        return {k: scalar(kind, v) for k, (kind, v) in pairs.items()}

    c.pack("scalars/int", "Int: 0, ±head-width boundaries, i64 min/max",
           PackSpec(t, scalars=sc({f"i{n}": ("Int", v) for n, v in enumerate(
               [0, 1, 23, 24, -1, -24, -25, -256, -257, 65535, -65537, (1 << 32), -(1 << 32) - 1, (1 << 63) - 1, -(1 << 63)])})))
    c.pack("scalars/uint", "UInt: 0, 23, 24, 2^32, 2^63, u64::MAX",
           PackSpec(t, scalars=sc({f"u{n}": ("UInt", v) for n, v in enumerate([0, 23, 24, 1 << 32, 1 << 63, U64_MAX])})))
    c.pack("scalars/int_uint_same_bytes", "Int(5) and UInt(5): same integer bytes, only the variant differs",
           PackSpec(t, scalars=sc({"i": ("Int", 5), "u": ("UInt", 5)})))
    c.pack("scalars/bool", "Bool true and false", PackSpec(t, scalars=sc({"t": ("Bool", True), "f": ("Bool", False)})))
    c.pack("scalars/float_f16_width", "floats exact in f16 (f9): 0.5, 1.0, 65504, -2.0",
           PackSpec(t, scalars=sc({"a": ("Float", 0.5), "b": ("Float", 1.0), "c": ("Float", 65504.0), "d": ("Float", -2.0)})))
    c.pack("scalars/float_f32_width", "floats exact in f32 only (fa): 65505, 100000, 0.1f32",
           PackSpec(t, scalars=sc({"a": ("Float", 65505.0), "b": ("Float", 100000.0), "c": ("Float", struct.unpack("<f", struct.pack("<f", 0.1))[0])})))
    c.pack("scalars/float_f64_width", "floats needing f64 (fb): 0.1, 0.001, 1e300, 1e-7, f64::MIN_POSITIVE",
           PackSpec(t, scalars=sc({"a": ("Float", 0.1), "b": ("Float", 0.001), "c": ("Float", 1e300), "d": ("Float", 1e-7),
                                   "e": ("Float", 2.2250738585072014e-308)})))
    c.pack("scalars/float_zero_signs", "0.0 (f9 0000) and -0.0 (f9 8000): the sign of zero is kept",
           PackSpec(t, scalars=sc({"pos": ("Float", 0.0), "neg": ("Float", -0.0)})))
    c.pack("scalars/float_infinities", "+inf (f9 7c00) and -inf (f9 fc00)",
           PackSpec(t, scalars=sc({"pinf": ("Float", float("inf")), "ninf": ("Float", float("-inf"))})))
    nans = {
        "canonical": NAN,  # f9 7e00
        "negative": 0xFFF8000000000000,  # f9 fe00
        "payload_f16": 0x7FF8400000000000,  # f9 7e10
        "payload_f32": 0x7FF8000020000000,  # fa 7fc00001
        "payload_f64": 0x7FF8000000000001,  # fb
        "signalling": 0x7FF0000000000001,  # fb (widening would set the quiet bit)
        "signalling_high": 0x7FF4000000000000,  # fb
        "negative_payload": 0xFFFFFFFFFFFFFFFF,  # fb
    }
    c.pack("scalars/nan_payloads", "NaNs: sign and payload kept, width chosen on the exact bits",
           PackSpec(t, scalars=sc({k: ("Float", ("bits", v)) for k, v in nans.items()})))
    c.pack("scalars/float_subnormals", "subnormals: f16 min (f9 0001), f16 max, f32 min (fa 00000001), f64 min (fb), negative",
           PackSpec(t, scalars=sc({"h_min": ("Float", 2.0**-24), "h_max": ("Float", 1023 * 2.0**-24), "s_min": ("Float", 2.0**-149),
                                   "d_min": ("Float", 5e-324), "neg_h": ("Float", -(2.0**-24))})))
    c.pack("scalars/only_scalars", "scalars and no tensors (the second top-level key is 'scalars')",
           PackSpec([], scalars=sc({"epoch": ("UInt", 3)})))
    c.pack("scalars/with_metadata", "metadata and scalars together: top-level keys tensors, metadata, scalars",
           PackSpec(t, {"k": "v"}, sc({"s": ("Int", -3), "lr": ("Float", 0.001)})))
    c.pack("scalars/leading_bom_name", "scalar names U+FEFF 'step' and 'step': two scalars, names kept whole",
           PackSpec(t, scalars=sc({"\ufeffstep": ("UInt", 1), "step": ("UInt", 2)})))
    c.pack("scalars/name_order", "scalar names sorted byte-wise", PackSpec(t, scalars=sc({"b": ("Bool", True), "B": ("Int", 1), "é": ("UInt", 2)})))


# -- layout ---------------------------------------------------------------------------------------
def _meta_len_spec(target: int, tensors: list[T] | None = None) -> PackSpec:
    """A pack whose metadata item is exactly ``target`` bytes (grown through a metadata value)."""
    base = PackSpec(tensors if tensors is not None else [T("a", "F32", [3], f32(1, 2, 3)), T("b", "U8", [1], b"\x05")], {"pad": ""})
    empty = len(base.plan()[0].canonical_cbor())
    # A text value of n bytes costs n + head(n); search the n that lands exactly.
    for n in range(0, target):
        base.metadata["pad"] = "p" * n
        if len(base.plan()[0].canonical_cbor()) == target:
            return base
    raise AssertionError(f"cannot reach metadata length {target} from {empty}")


def _layout(c: Corpus) -> None:
    # The only files of their kind, so byte-identical with Burn's own fixtures: built at load time,
    # never checked in (Burn's fixtures stay in Burn's repository).
    c.pack("layout/empty_pack", "no tensors, no metadata, no scalars: 256 bytes, padding still written", PackSpec(), runtime=True)
    c.pack("layout/data_order_reversed", "written z, m, a: data in write order, map in name order",
           PackSpec([T("z", "F32", [5], f32(1, 2, 3, 4, 5)), T("m", "F32", [3], f32(6, 7, 8)), T("a", "F32", [7], f32(*range(7)))]))
    c.pack("layout/data_order_interleaved", "names interleaved with sizes so sorted-name layout gives different offsets",
           PackSpec([T(n, "U8", [k], ramp(k, k)) for n, k in [("c", 300), ("a", 5), ("d", 1), ("b", 600)]]))
    c.pack("layout/exact_multiples", "tensors of exactly 256 and 512 bytes: no inter-tensor padding",
           PackSpec([T("x", "F32", [64], ramp(256, 1)), T("y", "U8", [512], ramp(512, 2)), T("z", "U8", [1], b"z")]))
    for target, why in [(246, "10 + M = 256: no padding before the data section"), (502, "10 + M = 512"),
                        (245, "10 + M = 255: one byte of padding"), (247, "10 + M = 257: 255 bytes of padding")]:
        c.pack(f"layout/metadata_end_{10 + target}", why, _meta_len_spec(target))
    c.pack("layout/many_tensors_300", "300 tensors inserted in numeric order; sorted order is lexicographic",
           PackSpec([T(f"layer{i}.weight", "F32", [2], f32(i, -i), i) for i in range(300)]))
    c.pack("layout/all_empty", "only empty tensors: every offset (0,0), file is just the preamble",
           PackSpec([T("a", "F32", [0], b""), T("b", "U8", [0], b"")]))


# -- corrupt header -------------------------------------------------------------------------------
def _patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]


def _header(c: Corpus) -> None:
    b, content = BASE_FILE, BASE_CONTENT
    c.raw("header/empty_file", "zero-byte file", b"", None, runtime=True)
    for n in (1, 4, 9):
        c.raw(f"header/only_{n}_bytes", f"the first {n} bytes of a valid file", b[:n], None)
    c.raw("header/bad_magic_first_byte", "magic 'XRUB'", _patch(b, 0, b"X"), None)
    c.raw("header/bad_magic_last_byte", "magic 'NRUb' (case matters)", _patch(b, 3, b"b"), None)
    c.raw("header/magic_big_endian", "magic written big-endian: bytes 'BURN' instead of 'NRUB'", _patch(b, 0, b"BURN"), None)
    c.raw("header/magic_zero", "magic 00000000", _patch(b, 0, bytes(4)), None)
    c.raw("header/version_0", "version 0: Burn only rejects versions > 1 (strict: Burn writes 1)", _patch(b, 4, b"\x00\x00"), content)
    c.raw("header/version_2", "version 2 (newer than supported)", _patch(b, 4, b"\x02\x00"), content)
    c.raw("header/version_256", "version bytes 00 01 (= 256 LE; a big-endian reader sees 1)", _patch(b, 4, b"\x00\x01"), content)
    c.raw("header/version_65535", "version 0xFFFF", _patch(b, 4, b"\xff\xff"), content)
    c.raw("header/version_2_bad_magic", "bad magic and bad version: magic is checked first", _patch(b, 0, b"XRUB\x02\x00"), None)
    c.raw("header/metadata_size_zero", "metadata_size 0 and nothing else: the CBOR item is empty", header(0), None, runtime=True)
    c.raw("header/metadata_size_zero_with_body", "metadata_size 0 in front of a full file", _patch(b, 6, bytes(4)), None)
    c.raw("header/metadata_size_beyond_file", "metadata_size past the end of the file",
          _patch(b, 6, (len(b)).to_bytes(4, "little")), None)
    c.raw("header/metadata_size_at_limit", "metadata_size exactly 100 MiB (allowed) but the file is short",
          _patch(b, 6, (100 << 20).to_bytes(4, "little")), None)
    c.raw("header/metadata_size_over_limit", "metadata_size 100 MiB + 1: rejected before reading it",
          _patch(b, 6, ((100 << 20) + 1).to_bytes(4, "little")), None)
    c.raw("header/metadata_size_u32_max", "metadata_size 0xFFFFFFFF", _patch(b, 6, b"\xff" * 4), None)
    c.raw("header/metadata_size_big_endian", "metadata_size written big-endian (a huge LE value)",
          _patch(b, 6, BASE_M.to_bytes(4, "big")), None)
    c.raw("header/metadata_size_short_by_1", "metadata_size one byte short of the CBOR item: it is cut",
          _patch(b, 6, (BASE_M - 1).to_bytes(4, "little")), None)
    c.raw("header/metadata_size_short_by_10", "metadata_size 10 bytes short", _patch(b, 6, (BASE_M - 10).to_bytes(4, "little")), None)
    blob = BASE_CONTENT.canonical_cbor()
    c.raw("header/metadata_size_covers_junk", "metadata_size covers the CBOR item plus 3 junk bytes, never parsed (strict: no)",
          with_blob(blob + b"\xde\xad\x00"), content)
    c.raw("header/metadata_size_covers_zeros", "metadata_size covers the item plus zero bytes up to 10 + M = 256",
          with_blob(blob + bytes(246 - len(blob))), content)


# -- truncation -----------------------------------------------------------------------------------
def _truncation(c: Corpus) -> None:
    b, content = BASE_FILE, BASE_CONTENT
    m_end = 10 + BASE_M
    d = 256
    gap = d - m_end
    max_end = 259
    c.raw("truncation/inside_metadata", "file cut in the middle of the CBOR item", b[: 10 + BASE_M // 2], None)
    c.raw("truncation/at_metadata_end", "file cut right after the CBOR item", b[:m_end], content)
    c.raw("truncation/inside_padding_gap", "file cut inside the zero padding before the data section", b[: m_end + gap // 2], content)
    c.raw("truncation/at_data_start", "file cut exactly at the data section start", b[:d], content)
    c.raw("truncation/inside_first_tensor", "file cut inside the first tensor's bytes", b[: d + 8], content)
    c.raw("truncation/inside_tensor_padding", "file cut in the padding between the two tensors", b[: d + 100], content)
    c.raw("truncation/last_byte", "last byte removed: the open check (10 + M + max end) passes, tensor access fails",
          b[:-1], content)
    c.raw("truncation/by_gap_exactly", "file cut to exactly 10 + M + max end: opens, fails on tensor access",
          b[: m_end + max_end], content)
    c.raw("truncation/by_gap_plus_one", "file cut to 10 + M + max end - 1: rejected on open", b[: m_end + max_end - 1], content)
    empty = PackSpec().build()
    c.raw("truncation/empty_pack_no_padding", "empty pack without its padding (20 bytes): no tensors, no size check (strict: no)",
          empty[:20], Content())
    c.raw("truncation/empty_pack_inside_metadata", "empty pack cut inside its metadata", empty[:15], None)
    # The metadata item ends (metadata_size) where an argument still runs on: ciborium hits EOF.
    for head, width in ((b"\xb8", 1), (b"\xb9", 2), (b"\xba", 4), (b"\xbb", 8)):
        for present in sorted({0, width - 1}):
            blob = b"\xa1\x67tensors" + head + b"\x00" * present
            c.raw(f"truncation/tensors_map_length_cut_{width}_{present}",
                  f"metadata ends inside the tensors map's {width}-byte length ({present} present): rejected on open "
                  "(UnexpectedEof), not an empty pack", with_blob(blob), None)
    name = cbor.enc("w")
    c.raw("truncation/name_length_cut", "metadata ends inside a tensor name's 2-byte length: rejected on open",
          with_blob(b"\xa1\x67tensors\xa1\x79\x00"), None)
    c.raw("truncation/name_cut", "metadata ends inside a tensor name: rejected on open",
          with_blob(b"\xa1\x67tensors\xa1" + name[:1]), None)
    only_empty = PackSpec([T("a", "F32", [0], b""), T("b", "U8", [2, 0], b"")])
    c.raw("truncation/all_empty_data_start_past_eof", "only empty tensors, the file cut inside the padding before the data "
          "section: each range (256,256) starts past EOF, which into_tensors refuses (Bytes::view: end > len)",
          only_empty.build()[:-100], only_empty.plan()[0])
    last = PackSpec([T("a", "F32", [3], f32(1, 2, 3)), T("z", "U8", [0], b"")])
    c.raw("truncation/empty_last_padding_cut", "empty tensor last, the trailing padding cut: its range (256,256) ends past EOF",
          last.build()[:-1], last.plan()[0])


# -- offsets --------------------------------------------------------------------------------------
def _offsets_case(c: Corpus, id: str, desc: str, changes: dict, placed=None, extra: bytes = b"") -> None:
    content = content_with(**changes)
    blob = content.canonical_cbor()
    c.raw(id, desc, with_blob(blob) + extra if placed is None else assemble(blob, placed) + extra, content)


def _offsets(c: Corpus) -> None:
    _offsets_case(c, "offsets/end_before_start", "weight (16, 0): end < start — opens, fails on access",
                  {"weight": {"data_offsets": (16, 0)}})
    _offsets_case(c, "offsets/start_overflow", "weight (u64::MAX, 0): D + start overflows u64 on access",
                  {"weight": {"data_offsets": (U64_MAX, 0)}})
    _offsets_case(c, "offsets/end_u64_max", "bias end u64::MAX: 10 + M + max end overflows on open",
                  {"bias": {"data_offsets": (256, U64_MAX)}})
    _offsets_case(c, "offsets/end_near_u64_max", "bias end u64::MAX - 300: the open check's sum overflows u64",
                  {"bias": {"data_offsets": (256, U64_MAX - 300)}})
    _offsets_case(c, "offsets/beyond_file", "bias end 100000, far past the end: rejected on open",
                  {"bias": {"data_offsets": (256, 100000)}})
    slack = 256 - 10 - BASE_M  # the open check adds max end to 10 + M, not to D
    _offsets_case(c, "offsets/past_eof_within_slack", f"bias moved {slack} bytes on: past EOF but within the open check's slack",
                  {"bias": {"data_offsets": (256 + slack, 259 + slack)}})
    _offsets_case(c, "offsets/overlapping", "bias (0, 3) inside weight's bytes: accepted (strict: no)",
                  {"bias": {"data_offsets": (0, 3)}})
    _offsets_case(c, "offsets/identical_ranges", "two tensors with the same range (strict: no)",
                  {"bias": {"data_offsets": (0, 16), "dtype": "U8", "shape": [16]}})
    _offsets_case(c, "offsets/unaligned_start", "bias starts at 16 (not 256-aligned): accepted (strict: no)",
                  {"bias": {"data_offsets": (16, 19)}}, placed=[(0, BASE.tensors[0].data), (16, b"\x01\x02\x03")])
    _offsets_case(c, "offsets/extra_gap", "bias starts at 512 instead of 256 (strict: no)",
                  {"bias": {"data_offsets": (512, 515)}}, placed=[(0, BASE.tensors[0].data), (512, b"\x01\x02\x03")])
    _offsets_case(c, "offsets/length_shorter_than_shape", "weight F32 [3,3] (36 bytes) spans 16: the reader does not check",
                  {"weight": {"shape": [3, 3]}})
    _offsets_case(c, "offsets/length_longer_than_shape", "weight F32 [2] (8 bytes) spans 16 (strict: no)",
                  {"weight": {"shape": [2]}})
    _offsets_case(c, "offsets/huge_shape_small_data", "weight F32 [2^32, 2^32] spans 16 bytes: never allocate from the shape",
                  {"weight": {"shape": [1 << 32, 1 << 32]}})
    _offsets_case(c, "offsets/zero_length_nonempty_shape", "weight F32 [2,2] with range (0,0) (strict: no)",
                  {"weight": {"data_offsets": (0, 0)}, "bias": {"data_offsets": (0, 3)}})
    _offsets_case(c, "offsets/bool_u32_length_mismatch", "Bool(U32) [3] spanning 3 bytes (needs 12) (strict: no)",
                  {"bias": {"dtype": {"Bool": "U32"}}})
    q = Content({"a": Desc("U8", [5], (0, 5)), "q": Desc(qfloat("Q8S", "Native", tensor="F32"), [4], (256, 10))})
    c.raw("offsets/qfloat_end_before_start", "QFloat 'q' at (256, 10) after 'a' at (0, 5), file ending at D + 10: fails on "
          "tensor access; strict: rejected on open (no writer ends a tensor before its start, though a QFloat length is never "
          "checked)", assemble(q.canonical_cbor(), [(0, b"\x01\x02\x03\x04\x05"), (5, bytes(5))]), q)
    wrapped = Content({"a": Desc("F32", [1 << 32, 1 << 32], (0, 0))})
    c.raw("offsets/byte_size_wraps_to_zero", "F32 [2^32, 2^32] with range (0, 0), as Burn's release writer writes it (the "
          "byte size wraps to 0 modulo 2^64): accepted; strict: rejected, no shape may need 2^64 bytes or more",
          assemble(wrapped.canonical_cbor(), []), wrapped)
    c.raw("offsets/trailing_bytes", "bytes appended after the last tensor: accepted (strict: no)", BASE_FILE + b"\x00junk", BASE_CONTENT)
    c.raw("offsets/nonzero_padding", "padding bytes 0xAB instead of 0: accepted (strict: no)",
          assemble(BASE_CONTENT.canonical_cbor(), BASE_PLACED, pad_byte=0xAB), BASE_CONTENT)
    c.raw("offsets/nonzero_metadata_padding_only", "only the gap before the data section is non-zero",
          _patch(BASE_FILE, 255, b"\x01"), BASE_CONTENT)
    c.raw("offsets/tensors_empty_with_data", "no tensors, but a data section follows: data ignored (strict: no)",
          assemble(Content().canonical_cbor(), BASE_PLACED), Content())
    c.raw("offsets/relative_to_metadata_end", "offsets counted from 10 + M (not D) with the data placed there",
          assemble(BASE_CONTENT.canonical_cbor(), BASE_PLACED, data_start=10 + BASE_M), BASE_CONTENT)


# -- CBOR-level deviations ------------------------------------------------------------------------
def _cbor(c: Corpus) -> None:  # noqa: C901 - a table of cases
    def case(id: str, desc: str, tree_or_blob: Any, content: Content | None) -> None:
        blob = tree_or_blob if isinstance(tree_or_blob, bytes) else cbor.enc(tree_or_blob)
        c.raw(f"cbor/{id}", desc, with_blob(blob), content)

    base = BASE_CONTENT
    ok = copy.deepcopy(base)

    def edit(fn: Callable[[dict], Any]) -> dict:
        """The base tree changed in place by ``fn``."""
        tree = base_tree()
        fn(tree)
        return tree

    def remake(fn: Callable[[dict], Any]) -> Any:
        """A new top-level item made by ``fn`` from the base tree."""
        return fn(base_tree())

    def w(tree: dict) -> dict:
        return tree["tensors"]["weight"]

    def replace(d: dict, key: str, new_key: str) -> Map:
        return Map([(new_key if k == key else k, v) for k, v in d.items()])

    # -- malformed / not a map
    case("random_bytes", "metadata region is pseudo-random bytes", ramp(BASE_M, 42), None)
    case("all_ff", "metadata bytes all 0xFF (a stray break)", b"\xff" * BASE_M, None)
    case("reserved_additional_info", "initial byte 0x1c (reserved additional info)", b"\x1c" + cbor.enc(base_tree()), None)
    case("top_level_array", "the top-level item is an array holding the map", [base_tree()], None)
    case("top_level_text", "the top-level item is a text string", "tensors", None)
    case("top_level_null", "the top-level item is null", b"\xf6", None)
    case("truncated_item", "the CBOR item ends early (metadata_size matches the short blob)", cbor.enc(base_tree())[:-5], None)
    case("trailing_bytes_in_region", "metadata_size covers the item plus two bytes that are never parsed",
         cbor.enc(base_tree()) + b"\xde\xad", ok)
    case("trailing_second_item", "a second complete CBOR item after the first, inside metadata_size",
         cbor.enc(base_tree()) + cbor.enc({"tensors": {}}), ok)
    # -- wrong types
    case("tensors_is_array", "'tensors' is an array", edit(lambda t: t.__setitem__("tensors", [])), None)
    case("tensors_is_null", "'tensors' is null", edit(lambda t: t.__setitem__("tensors", None)), None)
    case("dtype_int", "dtype is the integer 5", edit(lambda t: w(t).__setitem__("dtype", 5)), None)
    case("dtype_lowercase", "dtype 'f32' (variant names are case-sensitive)", edit(lambda t: w(t).__setitem__("dtype", "f32")), None)
    case("dtype_unknown_variant", "dtype 'F128'", edit(lambda t: w(t).__setitem__("dtype", "F128")), None)
    case("dtype_unit_as_map_null", "unit variant written {'F32': null}: the null misaligns the parse",
         edit(lambda t: w(t).__setitem__("dtype", {"F32": None})), None)
    case("dtype_two_entry_map", "dtype as a 2-entry map", edit(lambda t: w(t).__setitem__("dtype", {"F32": 1, "F64": 2})), None)
    case("dtype_bool_bad_store", "dtype {'Bool': 'U16'}", edit(lambda t: w(t).__setitem__("dtype", {"Bool": "U16"})), None)
    case("dtype_indefinite_enum_map", "dtype {'Bool': 'U8'} as an indefinite-length map (enums need Map(Some(1)))",
         edit(lambda t: w(t).__setitem__("dtype", Map([("Bool", "U8")], indefinite=True))), None)
    case("shape_text", "shape is the text '2x2'", edit(lambda t: w(t).__setitem__("shape", "2x2")), None)
    case("shape_float", "shape [2.0, 2.0]", edit(lambda t: w(t).__setitem__("shape", [2.0, 2.0])), None)
    case("shape_negative", "shape [-2, 2]", edit(lambda t: w(t).__setitem__("shape", [-2, 2])), None)
    case("shape_null", "shape is null", edit(lambda t: w(t).__setitem__("shape", None)), None)
    case("shape_bytes", "shape as the byte string h'0202': read as [2, 2]", edit(lambda t: w(t).__setitem__("shape", b"\x02\x02")), ok)
    case("shape_bignum_element", "shape element as bignum c2 41 02", edit(lambda t: w(t).__setitem__("shape", [bignum(2), 2])), ok)
    case("offsets_float", "data_offsets [0.0, 16.0]", edit(lambda t: w(t).__setitem__("data_offsets", [0.0, 16.0])), None)
    case("offsets_negative", "data_offsets [-1, 16]", edit(lambda t: w(t).__setitem__("data_offsets", [-1, 16])), None)
    case("offsets_one_element", "data_offsets [16]", edit(lambda t: w(t).__setitem__("data_offsets", [16])), None)
    case("offsets_empty", "data_offsets []", edit(lambda t: w(t).__setitem__("data_offsets", [])), None)
    case("offsets_bytes", "data_offsets as bytes h'0010' (bytes read as a sequence of u8)",
         edit(lambda t: w(t).__setitem__("data_offsets", b"\x00\x10")), ok)
    # A 3-element tuple leaves the third element unread: fine as the very last value of the item...
    # A tuple reads exactly two elements and leaves the rest unread: harmless only when nothing
    # follows (weight is the last tensor by name; drop its param_id and the later top-level keys).
    def as_last_value(offsets: Any) -> dict:
        tree = base_tree()
        del tree["tensors"]["weight"]["param_id"], tree["metadata"], tree["scalars"]
        tree["tensors"]["weight"]["data_offsets"] = offsets
        return tree

    last_c = content_with(weight={"param_id": None})
    last_c.metadata, last_c.scalars = {}, {}
    case("offsets_three_elements_last", "data_offsets [0, 16, 7] as the item's last value: the extra element is never read",
         as_last_value([0, 16, 7]), last_c)
    case("offsets_indefinite_last", "data_offsets as an indefinite array, the item's last value: its break is never read",
         as_last_value(Array([0, 16], indefinite=True)), last_c)
    case("offsets_three_elements_mid", "data_offsets [0, 16, 7] mid-map: the stray element misaligns the parse",
         edit(lambda t: t["tensors"]["bias"].__setitem__("data_offsets", [256, 259, 7])), None)
    case("param_id_text", "param_id is the text '7'", edit(lambda t: w(t).__setitem__("param_id", "7")), None)
    case("param_id_float", "param_id 7.0", edit(lambda t: w(t).__setitem__("param_id", 7.0)), None)
    case("param_id_negative", "param_id -7", edit(lambda t: w(t).__setitem__("param_id", -7)), None)
    none_c = content_with(weight={"param_id": None})
    case("param_id_null", "param_id null: read as absent (strict: Burn omits the key)", edit(lambda t: w(t).__setitem__("param_id", None)), none_c)
    case("param_id_undefined", "param_id undefined (f7): read as absent", edit(lambda t: w(t).__setitem__("param_id", UNDEFINED)), none_c)
    case("param_id_bool", "param_id true", edit(lambda t: w(t).__setitem__("param_id", True)), None)
    case("metadata_null", "'metadata': null (a map is required once the key is there)", edit(lambda t: t.__setitem__("metadata", None)), None)
    case("metadata_value_int", "metadata value is an integer", edit(lambda t: t.__setitem__("metadata", {"producer": 1})), None)
    case("metadata_value_bytes", "metadata value is a byte string", edit(lambda t: t.__setitem__("metadata", {"producer": b"x"})), None)
    case("metadata_key_int", "metadata key is an integer", edit(lambda t: t.__setitem__("metadata", {1: "x"})), None)
    empty_maps = copy.deepcopy(base)
    empty_maps.metadata, empty_maps.scalars = {}, {}
    case("empty_metadata_and_scalars_maps", "'metadata': {} and 'scalars': {} present (Burn omits them)",
         edit(lambda t: t.update(metadata={}, scalars={})), empty_maps)
    case("tensor_name_bytes", "a tensor name given as a byte string", edit(lambda t: t.__setitem__(
        "tensors", Map([(b"bias", t["tensors"]["bias"]), ("weight", t["tensors"]["weight"])]))), None)
    case("tensor_name_int", "a tensor name given as an integer", edit(lambda t: t.__setitem__(
        "tensors", Map([(1, t["tensors"]["bias"]), ("weight", t["tensors"]["weight"])]))), None)
    # -- scalars
    def sc(value: Any) -> dict:
        return edit(lambda t: t.__setitem__("scalars", {"step": value}))

    case("scalar_float_given_int", "scalar {'Float': 1}", sc({"Float": 1}), None)
    case("scalar_int_given_float", "scalar {'Int': 1.0}", sc({"Int": 1.0}), None)
    case("scalar_uint_negative", "scalar {'UInt': -1}", sc({"UInt": -1}), None)
    case("scalar_int_too_large", "scalar {'Int': 2^63}", sc({"Int": 1 << 63}), None)
    case("scalar_bool_given_int", "scalar {'Bool': 1}", sc({"Bool": 1}), None)
    case("scalar_unknown_variant", "scalar {'Complex': 1}", sc({"Complex": 1}), None)
    case("scalar_bare_text", "scalar written as the bare text 'Int'", sc("Int"), None)
    case("scalar_int_bignum_negative", "scalar {'Int': c3 41 05} = -6", sc({"Int": bignum(-6)}), _with_scalar(base, "step", scalar("Int", -6)))
    case("scalar_uint_bignum_max", "scalar {'UInt': tag 2, 8 bytes ff} = u64::MAX", sc({"UInt": bignum(U64_MAX)}),
         _with_scalar(base, "step", scalar("UInt", U64_MAX)))
    case("scalar_uint_bignum_too_large", "scalar {'UInt': 2^64 as a bignum}", sc({"UInt": bignum(1 << 64)}), None)
    case("scalar_float_f64_for_half", "scalar Float 0.5 as an 8-byte double: accepted exactly (strict: no)",
         sc({"Float": Float(0x3FE0000000000000, 8)}), _with_scalar(base, "step", scalar("Float", 0.5)))
    case("scalar_float_f32_for_half", "scalar Float 1.5 as f32", sc({"Float": Float(0x3FC00000, 4)}), _with_scalar(base, "step", scalar("Float", 1.5)))
    case("scalar_nan_f32_payload_wide", "NaN with an f16-sized payload written as f32 (fa 7fc20000): widened exactly",
         sc({"Float": Float(0x7FC20000, 4)}), _with_scalar(base, "step", scalar("Float", ("bits", 0x7FF8400000000000))))
    case("scalar_signalling_nan_f16", "signalling NaN written as f16 (f9 7c01): widening quiets it (0x7ff8040000000000)",
         sc({"Float": Float(0x7C01, 2)}), _with_scalar(base, "step", scalar("Float", ("bits", 0x7FF8040000000000))))
    case("scalar_signalling_nan_f32", "signalling NaN written as f32 (fa 7f800001): widening quiets it (0x7ff8000020000000)",
         sc({"Float": Float(0x7F800001, 4)}), _with_scalar(base, "step", scalar("Float", ("bits", 0x7FF8000020000000))))
    case("scalar_negative_zero_f64", "-0.0 as f64 (fb 8000000000000000)", sc({"Float": Float(0x8000000000000000, 8)}),
         _with_scalar(base, "step", scalar("Float", -0.0)))
    # -- missing keys
    case("missing_tensors", "no 'tensors' key", edit(lambda t: t.pop("tensors")), None)
    case("tensors_key_capitalised", "key 'Tensors' instead of 'tensors'", remake(lambda t: replace(t, "tensors", new_key="Tensors")), None)
    case("missing_dtype", "descriptor without 'dtype'", edit(lambda t: w(t).pop("dtype")), None)
    case("missing_shape", "descriptor without 'shape'", edit(lambda t: w(t).pop("shape")), None)
    case("missing_data_offsets", "descriptor without 'data_offsets'", edit(lambda t: w(t).pop("data_offsets")), None)
    case("missing_param_id", "descriptor without 'param_id' (= absent)", edit(lambda t: w(t).pop("param_id")), none_c)
    no_meta = copy.deepcopy(base)
    no_meta.metadata = {}
    case("missing_metadata", "no 'metadata' key (= empty)", edit(lambda t: t.pop("metadata")), no_meta)
    # -- unknown keys
    case("unknown_key_top_level", "extra top-level keys 'format_version' and 'extra' (nested): ignored (strict: no)",
         edit(lambda t: t.update(format_version=2, extra={"a": [1, 2, {"b": None}]})), ok)
    case("unknown_key_first", "an unknown key before 'tensors'", remake(lambda t: {"zz": 1, **t}), ok)
    case("unknown_key_descriptor", "descriptor keys 'strides' and 'foo': ignored", edit(lambda t: w(t).update(strides=[2, 1], foo="bar")), ok)
    case("unknown_key_exotic_value", "unknown key whose value uses tags, bignums, undefined, f16, indefinite items",
         edit(lambda t: t.__setitem__("x", [Tag(1, 0), bignum(1 << 100), bignum(-(1 << 100)), UNDEFINED, Float(0x3C00, 2),
                                            Text("ab", chunks=[1]), Bytes(b"xyz", chunks=[2]), Array([1], indefinite=True),
                                            Map([("k", "v")], indefinite=True), Simple(20), Simple(22)])), ok)
    case("unknown_key_simple_value", "unknown key whose value is simple(16) (f0): rejected", edit(lambda t: t.__setitem__("x", Simple(16))), None)
    case("unknown_key_simple_value_1byte", "unknown key whose value is simple(32) (f8 20): rejected", edit(lambda t: t.__setitem__("x", Simple(32))), None)
    case("unknown_key_long_text_value", "unknown key whose value is a 5000-byte text: skipped", edit(lambda t: t.__setitem__("x", "v" * 5000)), ok)
    case("unknown_key_longer_than_4096", "a 5000-byte unknown struct key: longer than ciborium's identifier buffer",
         edit(lambda t: t.__setitem__("k" * 5000, 1)), None)
    case("unknown_key_4096", "a 4096-byte unknown struct key: just fits", edit(lambda t: t.__setitem__("k" * 4096, 1)), ok)
    case("struct_key_int", "an integer struct key (0: 1) in the descriptor", edit(lambda t: t["tensors"].__setitem__(
        "weight", Map(list(w(t).items()) + [(0, 1)]))), None)
    case("struct_key_bytes", "struct keys as byte strings (h'7368617065' = shape): accepted as field names",
         edit(lambda t: t["tensors"].__setitem__("weight", Map([(k.encode() if k == "shape" else k, v) for k, v in w(t).items()]))), ok)
    case("struct_key_chunked", "an indefinite-length (chunked) struct key: rejected",
         edit(lambda t: t["tensors"].__setitem__("weight", Map([(Text(k, chunks=[2]) if k == "shape" else k, v) for k, v in w(t).items()]))), None)
    case("unknown_key_qfloat", "QFloat scheme with an extra key", _qfloat_tree(extra=[("extra", 1)]), _qfloat_content())
    case("qfloat_missing_mode", "QFloat scheme without 'mode'", _qfloat_tree(drop="mode"), None)
    case("qfloat_missing_tensor_block", "QFloat scheme without 'tensor' and 'block': both read as None (strict: Burn writes null)",
         _qfloat_tree(drop="tensor", drop2="block"), _qfloat_content(tensor=None, block=None))
    case("qfloat_store_unknown", "QFloat store {'PackedU64': 0}", _qfloat_tree(store={"PackedU64": 0}), None)
    case("qfloat_blocksize_short_storage", "block size storage of 4 entries (needs 5)",
         _qfloat_tree(block={"size": {"storage": [32, 1, 1, 1], "len": 1}, "dtype": "F16"}), None)
    case("qfloat_blocksize_long_storage", "block size storage of 6 entries: the 6th is left unread and misaligns the parse",
         _qfloat_tree(block={"size": {"storage": [32, 1, 1, 1, 1, 1], "len": 1}, "dtype": "F16"}), None)
    case("qfloat_blocksize_u8_overflow", "block size storage entry 256 (a u8)",
         _qfloat_tree(block={"size": {"storage": [256, 1, 1, 1, 1], "len": 1}, "dtype": "F16"}), None)
    case("qfloat_blocksize_noncanonical", "block size [1,32,1,1,1] len 2: read as written (no canonicalisation); strict: "
         "rejected, BlockSize::new strips the leading 1",
         _qfloat_tree(block={"size": {"storage": [1, 32, 1, 1, 1], "len": 2}, "dtype": "F16"}),
         _qfloat_content(block={"size": {"storage": [1, 32, 1, 1, 1], "len": 2}, "dtype": "F16"}))
    case("qfloat_blocksize_len_over_storage", "block size len 6 over 5 storage slots: read as written; strict: rejected, "
         "no Burn writer can construct it",
         _qfloat_tree(block={"size": {"storage": [32, 1, 1, 1, 1], "len": 6}, "dtype": "F16"}),
         _qfloat_content(block={"size": {"storage": [32, 1, 1, 1, 1], "len": 6}, "dtype": "F16"}))
    case("qfloat_blocksize_unused_slots_zero", "block size [32,0,0,0,0] len 1: read as written; strict: rejected, "
         "BlockSize::new fills unused slots with 1",
         _qfloat_tree(block={"size": {"storage": [32, 0, 0, 0, 0], "len": 1}, "dtype": "F16"}),
         _qfloat_content(block={"size": {"storage": [32, 0, 0, 0, 0], "len": 1}, "dtype": "F16"}))
    case("qfloat_explicit_nulls_default", "the default scheme with explicit nulls (what Burn writes)",
         _qfloat_tree(tensor=None, block=None), _qfloat_content(tensor=None, block=None))
    # -- duplicate keys
    case("dup_tensor_name", "the tensors map holds 'weight' twice: the last one wins",
         edit(lambda t: t.__setitem__("tensors", Map([("bias", t["tensors"]["bias"]),
                                                      ("weight", {"dtype": "U8", "shape": [3], "data_offsets": [256, 259]}),
                                                      ("weight", t["tensors"]["weight"])]))), ok)
    dup_last = content_with(weight={"dtype": "U8", "shape": [3], "data_offsets": (256, 259), "param_id": None})
    case("dup_tensor_name_last_differs", "'weight' twice, the second entry pointing at bias's bytes: the second wins",
         edit(lambda t: t.__setitem__("tensors", Map([("bias", t["tensors"]["bias"]), ("weight", t["tensors"]["weight"]),
                                                      ("weight", {"dtype": "U8", "shape": [3], "data_offsets": [256, 259]})]))), dup_last)
    dup_meta = copy.deepcopy(base)
    dup_meta.metadata = {"producer": "second"}
    case("dup_metadata_key", "metadata holds 'producer' twice: the last value wins",
         edit(lambda t: t.__setitem__("metadata", Map([("producer", "first"), ("producer", "second")]))), dup_meta)
    case("dup_scalar_name", "scalars hold 'step' twice: the last one wins",
         edit(lambda t: t.__setitem__("scalars", Map([("step", {"UInt": 9}), ("step", {"UInt": 3})]))), ok)
    case("dup_descriptor_field", "descriptor holds 'dtype' twice: duplicate struct field, rejected",
         edit(lambda t: t["tensors"].__setitem__("weight", Map([("dtype", "F32")] + list(w(t).items())))), None)
    case("dup_param_id_field", "descriptor holds 'param_id' twice", edit(lambda t: t["tensors"].__setitem__(
        "weight", Map(list(w(t).items()) + [("param_id", 7)]))), None)
    case("dup_top_level_field", "top-level map holds 'tensors' twice", remake(lambda t: Map(list(t.items()) + [("tensors", {})])), None)
    case("dup_qfloat_field", "QFloat scheme holds 'value' twice", _qfloat_tree(extra=[("value", "Q8S")]), None)
    # -- indefinite lengths
    case("indefinite_top_and_tensors", "top-level map and 'tensors' map with indefinite length: accepted (strict: no)",
         remake(lambda t: Map([("tensors", Map(list(t["tensors"].items()), indefinite=True)), ("metadata", t["metadata"]),
                             ("scalars", t["scalars"])], indefinite=True)), ok)
    case("indefinite_descriptor_and_shape", "descriptor map and shape array with indefinite length",
         edit(lambda t: t["tensors"].__setitem__("weight", Map([(k, Array(v, indefinite=True) if k == "shape" else v)
                                                               for k, v in w(t).items()], indefinite=True))), ok)
    case("indefinite_offsets_mid", "data_offsets as an indefinite array mid-map: the tuple leaves its break unread, "
         "the next key read meets it", edit(lambda t: w(t).__setitem__("data_offsets", Array([0, 16], indefinite=True))), None)
    case("indefinite_text_name_and_value", "a tensor name and a metadata value as chunked text",
         edit(lambda t: t.update(tensors=Map([(Text("bias", chunks=[1, 2]), t["tensors"]["bias"]), ("weight", t["tensors"]["weight"])]),
                                 metadata=Map([("producer", Text("conformance", chunks=[4, 0, 3]))]))), ok)
    case("indefinite_text_utf8_split", "chunked text splitting a multi-byte UTF-8 character across chunks: each chunk must be valid",
         edit(lambda t: t.__setitem__("metadata", Map([("producer", Text("é", chunks=[1]))]))), None)
    case("indefinite_text_wrong_chunk_type", "chunked text whose chunk is a byte string",
         edit(lambda t: t.__setitem__("metadata", Map([("producer", Raw(b"\x7f\x41a\xff"))]))), None)
    case("indefinite_array_unterminated", "an indefinite array never closed (the item runs to the end of metadata)",
         edit(lambda t: w(t).__setitem__("shape", Raw(b"\x9f\x02\x02"))), None)
    # -- tags
    case("tag_self_describe", "self-describe tag 55799 (d9d9f7) on the top-level map: ignored", remake(lambda t: Tag(55799, t)), ok)
    case("tag_on_dtype", "tag 100 on the dtype text: ignored", edit(lambda t: w(t).__setitem__("dtype", Tag(100, "F32"))), ok)
    case("tag_on_param_id", "tag 100 (cbor2: epoch date) on param_id: ignored", edit(lambda t: w(t).__setitem__("param_id", Tag(100, 7))), ok)
    case("tag_on_shape_element", "tag 1 on a shape element", edit(lambda t: w(t).__setitem__("shape", [Tag(1, 2), 2])), ok)
    case("tag_on_tensor_name", "tag 32 (URI) on a tensor name key", edit(lambda t: t.__setitem__(
        "tensors", Map([(Tag(32, "bias"), t["tensors"]["bias"]), ("weight", t["tensors"]["weight"])]))), ok)
    case("tag_on_struct_key", "tag 0 on the 'dtype' struct key", edit(lambda t: t["tensors"].__setitem__(
        "weight", Map([(Tag(0, k) if k == "dtype" else k, v) for k, v in w(t).items()]))), ok)
    case("tag_nested", "two nested tags on the scalar value", sc({"UInt": Tag(5, Tag(6, 3))}), ok)
    case("tag_on_float", "tag 1 on a Float scalar", sc({"Float": Tag(1, 0.5)}), _with_scalar(base, "step", scalar("Float", 0.5)))
    # -- bignums
    case("bignum_param_id", "param_id as bignum c2 41 07", edit(lambda t: w(t).__setitem__("param_id", bignum(7))), ok)
    case("bignum_leading_zeros", "param_id as bignum with leading zero bytes (c2 43 000007)",
         edit(lambda t: w(t).__setitem__("param_id", Tag(2, b"\x00\x00\x07"))), ok)
    case("bignum_empty", "param_id as an empty bignum (c2 40) = 0", edit(lambda t: w(t).__setitem__("param_id", Tag(2, b""))),
         content_with(weight={"param_id": 0}))
    case("bignum_too_large_for_u64", "param_id 2^64 as a bignum", edit(lambda t: w(t).__setitem__("param_id", bignum(1 << 64))), None)
    case("bignum_17_bytes", "a 17-byte bignum", edit(lambda t: w(t).__setitem__("param_id", Tag(2, b"\x01" * 17))), None)
    case("bignum_negative_for_u64", "param_id as a negative bignum", edit(lambda t: w(t).__setitem__("param_id", bignum(-1))), None)
    case("bignum_not_bytes", "tag 2 on a text", edit(lambda t: w(t).__setitem__("param_id", Tag(2, "07"))), None)
    # -- non-shortest encodings
    case("nonshortest_ints", "small integers in 8-, 4- and 2-byte forms",
         edit(lambda t: w(t).update(shape=[Int(2, 8), Int(2, 4)], data_offsets=[Int(0, 2), Int(16, 1)], param_id=Int(7, 8))), ok)
    case("nonshortest_lengths", "map, array and text lengths with longer heads than needed",
         edit(lambda t: t["tensors"].__setitem__("weight", Map([(Text(k, length_width=2), Array(v, length_width=8) if k == "shape" else v)
                                                               for k, v in w(t).items()], length_width=4))), ok)
    case("nonshortest_negative_int", "scalar Int -1 as 3b 0000000000000000", sc({"Int": Int(-1, 8)}), _with_scalar(base, "step", scalar("Int", -1)))
    # -- nesting depth (limit 128 containers, counting the top map)
    def nested(n: int) -> Any:
        v: Any = 0
        for _ in range(n):
            v = [v]
        return v

    case("depth_127_arrays", "unknown top-level key holding 127 nested arrays: 128 levels with the top map, accepted",
         edit(lambda t: t.__setitem__("x", nested(127))), ok)
    case("depth_128_arrays", "unknown top-level key holding 128 nested arrays: past the recursion limit",
         edit(lambda t: t.__setitem__("x", nested(128))), None)
    case("depth_in_descriptor_125", "125 nested arrays in a descriptor's unknown key (top, tensors, descriptor + 125 = 128)",
         edit(lambda t: w(t).__setitem__("x", nested(125))), ok)
    case("depth_in_descriptor_126", "126 nested arrays in a descriptor's unknown key: 129 levels", edit(lambda t: w(t).__setitem__("x", nested(126))), None)
    case("depth_maps_200", "200 nested maps", edit(lambda t: t.__setitem__("x", _nested_maps(200))), None)
    case("depth_tags_200", "200 nested tags on an integer (tags count towards the limit when skipped)",
         edit(lambda t: t.__setitem__("x", Raw(b"\xc1" * 200 + b"\x00"))), None)
    case("depth_tags_127", "unknown top-level key holding 127 nested tags on an integer: 128 levels with the top map, accepted",
         edit(lambda t: t.__setitem__("x", Raw(b"\xc1" * 127 + b"\x00"))), ok)
    case("depth_tags_128", "unknown top-level key holding 128 nested tags on an integer: a skipped tag is a level, past the limit",
         edit(lambda t: t.__setitem__("x", Raw(b"\xc1" * 128 + b"\x00"))), None)
    case("tags_200_on_param_id", "200 nested tags on param_id: tags before a value serde reads are dropped, no level counted",
         edit(lambda t: w(t).__setitem__("param_id", Raw(b"\xc1" * 200 + b"\x07"))), ok)
    # -- invalid UTF-8
    case("utf8_invalid_name", "tensor name holding ff fe", edit(lambda t: t.__setitem__(
        "tensors", Map([(Text(b"bi\xff\xfe"), t["tensors"]["bias"]), ("weight", t["tensors"]["weight"])]))), None)
    case("utf8_overlong", "metadata value holding an overlong encoding (c0 af)", edit(lambda t: t.__setitem__("metadata", Map([("producer", Text(b"\xc0\xaf"))]))), None)
    case("utf8_surrogate", "metadata value holding an encoded surrogate (ed a0 80)", edit(lambda t: t.__setitem__("metadata", Map([("producer", Text(b"\xed\xa0\x80"))]))), None)
    case("utf8_truncated_sequence", "tensor name ending in half a character (e2 82)", edit(lambda t: t.__setitem__(
        "tensors", Map([(Text(b"b\xe2\x82"), t["tensors"]["bias"]), ("weight", t["tensors"]["weight"])]))), None)
    case("utf8_invalid_struct_key", "a struct key with invalid UTF-8", edit(lambda t: t["tensors"].__setitem__(
        "weight", Map(list(w(t).items()) + [(Text(b"\xff"), 1)]))), None)
    case("utf8_invalid_unknown_value", "an unknown key whose short text value is invalid UTF-8", edit(lambda t: t.__setitem__("x", Text(b"\xff"))), None)
    case("utf8_dtype_invalid", "dtype text with invalid UTF-8", edit(lambda t: w(t).__setitem__("dtype", Text(b"F3\xff"))), None)
    case("utf8_cesu8_pair_name", "tensor name U+1F600 as a CESU-8 surrogate pair (ed a0 bd ed b8 80): invalid UTF-8",
         edit(lambda t: t.__setitem__("tensors", Map([(Text(b"\xed\xa0\xbd\xed\xb8\x80"), t["tensors"]["bias"]),
                                                      ("weight", t["tensors"]["weight"])]))), None)
    case("dtype_leading_bom", "dtype U+FEFF 'F32': an unknown variant, rejected (a BOM-stripping decoder reads F32)",
         edit(lambda t: w(t).__setitem__("dtype", "\ufeffF32")), None)
    case("struct_key_leading_bom", "top-level key U+FEFF 'tensors': an unknown key, so 'tensors' is missing",
         remake(lambda t: replace(t, "tensors", new_key="\ufefftensors")), None)
    case("utf8_noncharacter_ok", "U+FFFF and U+10FFFF are valid UTF-8 scalar values",
         edit(lambda t: t.__setitem__("metadata", {"producer": "\uffff\U0010ffff"})), _with_meta(base, {"producer": "\uffff\U0010ffff"}))


def _nested_maps(n: int) -> Any:
    v: Any = 0
    for _ in range(n):
        v = {"k": v}
    return v


def _with_scalar(base: Content, name: str, value: dict) -> Content:
    c = copy.deepcopy(base)
    c.scalars[name] = value
    return c


def _with_meta(base: Content, metadata: dict) -> Content:
    c = copy.deepcopy(base)
    c.metadata = metadata
    return c


QSCHEME = qfloat("Q4S", {"PackedU32": 0}, tensor="F32", block=([32], "F16"))["QFloat"]
QDATA = ramp(24, 99)


def _qfloat_tree(extra=(), drop=None, drop2=None, **fields) -> dict:
    scheme = dict(QSCHEME)
    scheme.update(fields)
    for d in (drop, drop2):
        if d:
            del scheme[d]
    scheme_item: Any = scheme if not extra else Map(list(scheme.items()) + list(extra))
    tree = base_tree()
    tree["tensors"]["weight"] = {"dtype": {"QFloat": scheme_item}, "shape": [2, 2], "data_offsets": [0, 16], "param_id": 7}
    return tree


def _qfloat_content(**fields) -> Content:
    scheme = dict(QSCHEME)
    scheme.update(fields)
    return content_with(weight={"dtype": {"QFloat": scheme}})


# -- legacy files (format.md §7) ------------------------------------------------------------------
def _prealigned(spec: PackSpec, encode: Callable[[Content], bytes] = Content.canonical_cbor, version: int = 1) -> tuple[bytes, Content]:
    """The pre-alignment layout: data right after the metadata, tensors back to back in write order."""
    content = Content(metadata=dict(spec.metadata), scalars=dict(spec.scalars))
    placed, offset = [], 0
    for t in spec.tensors:
        content.tensors[t.name] = Desc(t.dtype, list(t.shape), (offset, offset + len(t.data)), t.param_id)
        placed.append((offset, t.data))
        offset += len(t.data)
    blob = encode(content)
    return assemble(blob, placed, data_start=10 + len(blob), version=version), content


def _legacy(c: Corpus) -> None:
    two = PackSpec([T("weight", "F32", [2, 2], f32(1, 2, 3, 4), 1), T("bias", "F32", [2], f32(5, 6), 2)])
    c.raw("legacy/prealignment_two_tensors", "pre-2025-12-02 layout: data right after the metadata, tensors back to back; "
          "current Burn looks at the aligned start, the last tensor runs past EOF", *_prealigned(two))
    c.raw("legacy/prealignment_single_tensor", "pre-alignment layout with one tensor", *_prealigned(one("w", "U8", [4], b"\x01\x02\x03\x04")))
    near = _meta_len_spec(246)
    c.raw("legacy/prealignment_aligned_by_chance", "pre-alignment file with one tensor and 10 + M = 216 (its metadata "
          "was padded before the second tensor was dropped): current Burn reads the tensor at the aligned start 256, past its end",
          *_prealigned(PackSpec(near.tensors[:1], near.metadata)))
    lucky = _meta_len_spec(246, [T("a", "F32", [3], f32(1, 2, 3))])
    c.raw("legacy/prealignment_metadata_end_256", "pre-alignment file with one tensor whose 10 + M = 256: byte for byte "
          "the current layout, so current Burn reads it as written (both entry points)", *_prealigned(lucky))
    old_bool = base_tree()
    old_bool["tensors"]["bias"]["dtype"] = "Bool"
    c.raw("legacy/old_bool_dtype", "dtype 'Bool' as written before 2026-03-19 (no BoolStore): rejected by current Burn",
          with_blob(cbor.enc(old_bool)), None)

    def old_scheme_file(scheme: Any) -> tuple[bytes, dict]:
        tree = base_tree()
        tree["tensors"]["weight"]["dtype"] = {"QFloat": scheme}
        return with_blob(cbor.enc(tree)), tree

    per_tensor = {"value": "Q8S", "param": "F32", "store": "Native", "level": "Tensor", "mode": "Symmetric"}
    # 'param' and 'level' are unknown now and ignored; 'tensor' and 'block' are missing → None.
    read_as = content_with(weight={"dtype": {"QFloat": {"value": "Q8S", "store": "Native", "mode": "Symmetric", "tensor": None, "block": None}}})
    data, _ = old_scheme_file(per_tensor)
    c.raw("legacy/old_quant_scheme_per_tensor", "QuantScheme {value, param, store, level, mode} (before 2026-08-19): read as the default "
          "per-tensor scheme, 'param'/'level' ignored", data, read_as)
    per_block = {"value": "Q4S", "param": "F16", "store": {"PackedU32": 0},
                 "level": {"Block": {"storage": [32, 1, 1, 1, 1], "len": 1}}, "mode": "Symmetric"}
    read_block = content_with(weight={"dtype": {"QFloat": {"value": "Q4S", "store": {"PackedU32": 0}, "mode": "Symmetric", "tensor": None, "block": None}}})
    data, _ = old_scheme_file(per_block)
    c.raw("legacy/old_quant_scheme_per_block", "old per-block QuantScheme: silently misread as per-tensor (the block level is dropped)", data, read_block)
    block_tensor = {"value": "E2M1", "param": "UE4M3", "store": {"PackedNative": 0},
                    "level": {"BlockTensor": {"block": {"storage": [16, 1, 1, 1, 1], "len": 1}, "global": "F32"}}, "mode": "Symmetric"}
    read_bt = content_with(weight={"dtype": {"QFloat": {"value": "E2M1", "store": {"PackedNative": 0}, "mode": "Symmetric", "tensor": None, "block": None}}})
    data, _ = old_scheme_file(block_tensor)
    c.raw("legacy/old_quant_scheme_block_tensor", "QuantLevel::BlockTensor (2026-08-05 .. 08-19): misread the same way", data, read_bt)
    old_store = dict(per_tensor, store="U32")
    data, _ = old_scheme_file(old_store)
    c.raw("legacy/old_quant_store_u32", "QFloat store 'U32' (before 2026-01-14): unknown variant, rejected", data, None)


# -- check order: files breaking two rules whose error kinds differ (PROTOCOL.md §2) ----------------
def _indefinite(content: Content) -> bytes:
    """The content's metadata with an indefinite-length top-level map: what Burn reads, never writes."""
    return cbor.enc(Map(list(content.cbor_tree().items()), indefinite=True))


def _check_order(c: Corpus) -> None:
    b, content = BASE_FILE, BASE_CONTENT
    cut = 10 + BASE_M + 259 - 1  # one byte short of the open check's 10 + M + max end
    c.raw("check_order/truncated_and_version_0", "version 0 and a file one byte short of the open check: the compatible "
          "open checks come first, so strict says ValidationError too, not InvalidVersion", _patch(b, 4, b"\x00\x00")[:cut], content)
    loose = with_blob(_indefinite(content))
    c.raw("check_order/truncated_and_noncanonical_metadata", "an indefinite-length top map and a file one byte short of the "
          "open check: ValidationError at both levels, not MetadataDeserializationError",
          loose[: 10 + len(_indefinite(content)) + 259 - 1], content)
    c.raw("check_order/version_0_and_noncanonical_metadata", "version 0 and an indefinite-length top map: strict checks the "
          "version first (InvalidVersion)", _patch(loose, 4, b"\x00\x00"), content)
    c.raw("check_order/version_0_and_trailing_bytes", "version 0 and bytes after the last tensor: strict says InvalidVersion",
          _patch(b, 4, b"\x00\x00") + b"junk", content)
    two = PackSpec([T("weight", "F32", [2, 2], f32(1, 2, 3, 4), 1), T("bias", "F32", [2], f32(5, 6), 2)])
    c.raw("check_order/version_0_and_prealignment", "version 0 and the pre-alignment layout: fails on tensor access; strict "
          "says InvalidVersion on open", *_prealigned(two, version=0))
    c.raw("check_order/prealignment_and_noncanonical_metadata", "the pre-alignment layout behind an indefinite-length top "
          "map: strict names the layout first (ValidationError), not the encoding", *_prealigned(two, _indefinite))
    c.raw("check_order/noncanonical_metadata_and_trailing_bytes", "an indefinite-length top map and bytes after the last "
          "tensor: strict checks the encoding before the layout (MetadataDeserializationError)", loose + b"junk", content)
    unaligned = content_with(bias={"data_offsets": (16, 19)})
    c.raw("check_order/noncanonical_metadata_and_unaligned_start", "an indefinite-length top map and a tensor at an "
          "unaligned start: MetadataDeserializationError at strict", assemble(_indefinite(unaligned),
          [(0, BASE.tensors[0].data), (16, b"\x01\x02\x03")]), unaligned)
    block = qfloat("Q8S", "Native", tensor="F32")
    block["QFloat"]["block"] = {"size": {"storage": [1, 32, 1, 1, 1], "len": 2}, "dtype": "F16"}
    odd = Content({"q": Desc(block, [64], (0, 68), 2)})
    c.raw("check_order/noncanonical_metadata_and_block_size", "an indefinite-length top map and a block size BlockSize::new "
          "never makes: strict checks the encoding first (MetadataDeserializationError)",
          assemble(_indefinite(odd), [(0, ramp(68, 10))]), odd)
    c.raw("check_order/noncanonical_metadata_and_tensor_past_eof", "an indefinite-length top map and the last byte cut: "
          "ValidationError on tensor access, but MetadataDeserializationError on open at strict", loose[:-1], content)


# -- limits (generated at run time: too big to check in) -------------------------------------------
def _many_zero_size(n: int) -> tuple[bytes, Content]:
    content = Content()
    for i in range(n):
        content.tensors[f"t{i:06d}"] = Desc("U8", [0], (0, 0))
    return assemble(content.canonical_cbor(), []), content


def _limits(c: Corpus) -> None:
    c.lazy("limits/tensor_count_at_limit", "exactly 100,000 zero-size tensors (MAX_TENSOR_COUNT): accepted",
           lambda: _many_zero_size(100_000))
    c.lazy("limits/tensor_count_over_limit", "100,001 zero-size tensors: rejected after the whole metadata is parsed",
           lambda: _many_zero_size(100_001))


# -- writer refusals ------------------------------------------------------------------------------
def _writer_refusals(c: Corpus) -> None:
    c.refuse("writer_refusal/duplicate_name", "two tensors named 'w'", PackSpec([T("w", "F32", [1], f32(1)), T("w", "F32", [1], f32(2))]))
    c.refuse("writer_refusal/duplicate_name_other_dtype", "'w' twice with different dtypes and an empty one in between",
             PackSpec([T("w", "U8", [1], b"\x01"), T("e", "F32", [0], b""), T("w", "F64", [0], b"")]))
    c.refuse("writer_refusal/length_short", "F32 [2,2] given 12 bytes", one("w", "F32", [2, 2], f32(1, 2, 3)))
    c.refuse("writer_refusal/length_long", "F32 [2,2] given 20 bytes", one("w", "F32", [2, 2], f32(1, 2, 3, 4, 5)))
    c.refuse("writer_refusal/bool_u32_length", "Bool(U32) [3] given 3 bytes (needs 12)", one("m", {"Bool": "U32"}, [3], b"\x01\x00\x01"))
    c.refuse("writer_refusal/zero_size_with_bytes", "shape [0] F32 given 4 bytes", one("e", "F32", [0], f32(1)))
    c.refuse("writer_refusal/scalar_0d_no_bytes", "shape [] (one element) given no bytes", one("s", "F64", [], b""))
    c.refuse("writer_refusal/length_checked_after_first", "the second tensor has the wrong length",
             PackSpec([T("a", "U8", [2], b"\x01\x02"), T("b", "I16", [2], b"\x01\x02\x03")]))
    c.refuse("writer_refusal/scalar_int_out_of_range", "Scalar Int 2^63 (an i64)", PackSpec(scalars={"s": scalar("Int", 1 << 63)}))
    c.refuse("writer_refusal/scalar_uint_negative", "Scalar UInt -1", PackSpec(scalars={"s": scalar("UInt", -1)}))
    c.refuse("writer_refusal/param_id_over_u64", "param_id 2^64", one("w", "U8", [1], b"\x01", 1 << 64))
    c.refuse("writer_refusal/name_lone_surrogate", "a tensor name holding a lone surrogate (\\ud800): not valid Unicode",
             one("\ud800", "U8", [1], b"\x01"))

