"""Public Hypothesis strategies for burnpack: pack contents, valid files, mutated files.

Usable by any Python implementation's tests::

    from hypothesis import given
    from conformance import strategies as bst

    @given(bst.valid_files())
    def test_my_reader_reads_what_burn_writes(case):
        data, spec = case                       # the bytes Burn's writer produces for spec
        assert my_reader(data).names == sorted(t.name for t in spec.tensors)

    @given(bst.mutated_files())
    def test_my_reader_never_crashes(data):
        expected = bst.expected_outcome(data)   # what Burn's reader does (compatible + strict)
        ...

Contents are ``conformance.model`` objects: ``PackSpec`` (tensors in write order, metadata,
scalars in the dump form), ``T`` (one tensor: name, dtype in Burn's serde form, shape, bytes,
param id). Files come from ``PackSpec.build()``, this package's own spec-derived writer.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

from .model import (
    BOOL_STORE_SIZE,
    ELEMENT_SIZE,
    HEADER_SIZE,
    I64_MAX,
    I64_MIN,
    U64_MAX,
    PackSpec,
    T,
    qfloat,
    scalar,
)

QUANT_VALUES = ("Q8F", "E5M2", "E4M3", "Q4F", "E2M1", "Q2F", "Q8S", "Q4S", "Q2S")
SCALE_DTYPES = ("F32", "F16", "BF16", "UE8M0", "UE4M3")

# Names: mostly short ASCII with dots/digits, sometimes anything Unicode (never lone surrogates).
_name_chars = st.characters(codec="utf-8")
_tricky = st.sampled_from(["", "a", "A", "é", "e\u0301", "\uff61", "\U0001F600", "\U00010000", "w", "w.b", "w_", "layer10", "layer2", "\x00"])


def names() -> st.SearchStrategy[str]:
    """Tensor / metadata / scalar names, biased towards ordering traps."""
    return st.one_of(
        st.from_regex(r"[a-z][a-z0-9_]{0,6}(\.[a-z0-9_]{1,6}){0,3}", fullmatch=True),
        _tricky,
        st.text(_name_chars, max_size=12),
        st.lists(_tricky, min_size=1, max_size=3).map("".join),
    )


def qfloat_dtypes() -> st.SearchStrategy[dict]:
    store = st.one_of(st.just("Native"), st.builds(lambda k, n: {k: n}, st.sampled_from(["PackedU32", "PackedNative"]),
                                                     st.integers(0, 4)))
    block = st.none() | st.tuples(st.lists(st.integers(1, 64), min_size=1, max_size=5), st.sampled_from(SCALE_DTYPES))
    return st.builds(
        lambda v, s, m, t, b: qfloat(v, s, m, t, b),
        st.sampled_from(QUANT_VALUES), store, st.sampled_from(["Symmetric", "Lookup"]), st.none() | st.sampled_from(SCALE_DTYPES), block,
    )


def dtypes(*, qfloat: bool = True) -> st.SearchStrategy[Any]:
    """Every DType in Burn's serde form: unit variants, ``{"Bool": store}``, ``{"QFloat": scheme}``."""
    options = [st.sampled_from(sorted(ELEMENT_SIZE)), st.sampled_from(sorted(BOOL_STORE_SIZE)).map(lambda s: {"Bool": s})]
    if qfloat:
        options.append(qfloat_dtypes())
    return st.one_of(*options)


def shapes(max_numel: int = 64) -> st.SearchStrategy[list[int]]:
    """Small shapes: 0-d, zero-size (with huge other dims), up to rank 5."""
    small = st.lists(st.integers(0, 6), max_size=5).filter(lambda s: _prod(s) <= max_numel)
    zero = st.lists(st.integers(0, U64_MAX), max_size=4).map(lambda s: s + [0])
    return st.one_of(small, small, zero)


def _prod(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def param_ids() -> st.SearchStrategy[int | None]:
    return st.one_of(st.none(), st.integers(0, 300), st.integers(0, U64_MAX), st.sampled_from([0, 23, 24, 255, 256, 65536, 1 << 63, U64_MAX]))


def float_bits() -> st.SearchStrategy[int]:
    """f64 bit patterns: ordinary values, every width class, NaN payloads, ±0, ±inf, subnormals."""
    return st.one_of(
        st.floats(allow_nan=False).map(lambda f: struct.unpack("<Q", struct.pack("<d", f))[0]),
        st.floats(width=32, allow_nan=False).map(lambda f: struct.unpack("<Q", struct.pack("<d", f))[0]),
        st.floats(width=16, allow_nan=False).map(lambda f: struct.unpack("<Q", struct.pack("<d", f))[0]),
        st.integers(0, U64_MAX),
        st.builds(lambda sign, payload: (sign << 63) | 0x7FF0000000000000 | payload, st.integers(0, 1), st.integers(1, (1 << 52) - 1)),
        st.sampled_from([0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 1]),
    )


def scalars() -> st.SearchStrategy[dict]:
    """A scalar in the dump form: Int, UInt, Float (any bits), Bool."""
    return st.one_of(
        st.integers(I64_MIN, I64_MAX).map(lambda v: scalar("Int", v)),
        st.integers(0, U64_MAX).map(lambda v: scalar("UInt", v)),
        float_bits().map(lambda b: scalar("Float", ("bits", b))),
        st.booleans().map(lambda v: scalar("Bool", v)),
    )


@st.composite
def tensors(draw: Any, name: str | None = None) -> T:
    """One tensor whose bytes fit its shape and dtype (QFloat: any short byte string)."""
    dtype = draw(dtypes())
    shape = draw(shapes())
    if isinstance(dtype, str):
        size = ELEMENT_SIZE[dtype] * _prod(shape)
    elif "Bool" in dtype:
        size = BOOL_STORE_SIZE[dtype["Bool"]] * _prod(shape)
    else:
        size = draw(st.integers(0, 40))
    data = draw(st.binary(min_size=size, max_size=size))
    return T(name if name is not None else draw(names()), dtype, shape, data, draw(param_ids()))


@st.composite
def pack_specs(draw: Any, max_tensors: int = 6) -> PackSpec:
    """Writer input: unique names in a random write order, metadata, scalars."""
    tensor_names = draw(st.lists(names(), max_size=max_tensors, unique=True))
    ts = [draw(tensors(name=n)) for n in tensor_names]
    metadata = draw(st.dictionaries(names(), st.text(_name_chars, max_size=20), max_size=4))
    scalar_map = draw(st.dictionaries(names(), scalars(), max_size=4))
    return PackSpec(ts, metadata, scalar_map)


def writer_specs(max_tensors: int = 6) -> st.SearchStrategy[dict]:
    """The writer spec JSON (``burnpack pack``'s input) of a valid pack."""
    return pack_specs(max_tensors).map(PackSpec.to_json)


def valid_files(max_tensors: int = 6) -> st.SearchStrategy[tuple[bytes, PackSpec]]:
    """(the exact bytes Burn's writer produces, the spec they come from)."""
    return pack_specs(max_tensors).map(lambda spec: (spec.build(), spec))


# -- mutations ---------------------------------------------------------------------------------------
def _mutate(data: bytes, kind: str, a: int, b: int, payload: bytes) -> bytes:
    n = len(data)
    if n == 0:
        return payload
    i, j = a % n, b % (n + 1)
    if kind == "flip":
        return data[:i] + bytes([data[i] ^ (1 << (b % 8))]) + data[i + 1 :]
    if kind == "set":
        return data[:i] + payload[:4] + data[i + len(payload[:4]) :]
    if kind == "truncate":
        return data[:j]
    if kind == "extend":
        return data + payload
    if kind == "delete":
        return data[:i] + data[i + 1 + b % 8 :]
    if kind == "insert":
        return data[:i] + payload + data[i:]
    if kind == "version":
        return data[:4] + (a % 65536).to_bytes(2, "little") + data[6:]
    if kind == "metadata_size":
        m = int.from_bytes(data[6:10], "little") if n >= 10 else 0
        new = [m + (b % 512) - 256, a % (1 << 32), m ^ (1 << (b % 32)), m + 1, m - 1][b % 5]
        return data[:6] + max(new, 0).to_bytes(4, "little") + data[10:] if n >= 10 else data
    if kind == "cbor":  # a byte of the metadata item
        m = int.from_bytes(data[6:10], "little") if n >= 10 else 0
        if m == 0 or n <= HEADER_SIZE:
            return data
        at = HEADER_SIZE + a % min(m, n - HEADER_SIZE)
        return data[:at] + bytes([payload[0] if payload else b % 256]) + data[at + 1 :]
    return data


MUTATIONS = ("flip", "set", "truncate", "extend", "delete", "insert", "version", "metadata_size", "cbor", "cbor", "cbor")


@st.composite
def mutated_files(draw: Any, base: st.SearchStrategy[bytes] | None = None, max_mutations: int = 4) -> bytes:
    """A valid file changed by a few mutations (bit flips, truncation, header fields, CBOR bytes)."""
    data = draw(base if base is not None else valid_files(4).map(lambda c: c[0]))
    for _ in range(draw(st.integers(1, max_mutations))):
        data = _mutate(data, draw(st.sampled_from(MUTATIONS)), draw(st.integers(0, 1 << 20)), draw(st.integers(0, 1 << 20)),
                       draw(st.binary(min_size=1, max_size=8)))
    return data


def random_files() -> st.SearchStrategy[bytes]:
    """Random bytes, sometimes behind a plausible header (magic, version, a small metadata_size)."""
    header = st.builds(lambda v, m: b"NRUB" + v.to_bytes(2, "little") + m.to_bytes(4, "little"),
                       st.sampled_from([0, 1, 1, 1, 2]), st.integers(0, 300))
    return st.one_of(st.binary(max_size=64), st.builds(lambda h, body: h + body, header, st.binary(max_size=400)))


def hostile_files() -> st.SearchStrategy[bytes]:
    """Small files claiming huge sizes: metadata_size, shapes, offsets, counts near the limits."""
    from .model import Content, Desc, assemble

    huge = st.sampled_from([1 << 32, 1 << 40, (1 << 63) - 1, 1 << 63, U64_MAX - 1, U64_MAX, 100 * 1024 * 1024, 10 * 1024**3 + 1])

    @st.composite
    def build(draw: Any) -> bytes:
        c = Content()
        for i in range(draw(st.integers(1, 3))):
            s = draw(st.one_of(st.integers(0, 600), huge))
            e = draw(st.one_of(st.integers(0, 600), huge, st.just(s)))
            shape = draw(st.lists(st.one_of(st.integers(0, 4), huge), max_size=4))
            c.tensors[f"t{i}"] = Desc(draw(dtypes(qfloat=False)), shape, (s, e), None)
        blob = c.canonical_cbor()
        data = assemble(blob, [(0, bytes(draw(st.integers(0, 600))))])
        if draw(st.booleans()):
            data = data[:6] + draw(st.sampled_from([100 * 1024 * 1024, 100 * 1024 * 1024 + 1, 0xFFFFFFFF])).to_bytes(4, "little") + data[10:]
        return data

    return build()


def expected_outcome(data: bytes) -> Any:
    """What Burn's reader does with ``data`` at both levels (``rules.Expectation``), using the
    reference CBOR decoder: the oracle for differential tests of another reader."""
    from . import rules
    from .reference import decode_content

    return rules.expect(data, decode_content)


__all__ = [
    "dtypes",
    "expected_outcome",
    "float_bits",
    "hostile_files",
    "mutated_files",
    "names",
    "pack_specs",
    "param_ids",
    "qfloat_dtypes",
    "random_files",
    "scalars",
    "shapes",
    "tensors",
    "valid_files",
    "writer_specs",
]
