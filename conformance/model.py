"""The spec, as data and small functions: dtypes, layout, canonical metadata, whole files.

Everything here is written from ../shared/spec/format.md, independently of ``burnpack``'s
reader and writer, so the corpus can check them rather than copy them. Content is kept in the
JSON forms of the ``dump --json`` protocol (see PROTOCOL.md): dtypes in Burn's serde form,
scalars as ``{"type", "value", "f64_bits"?}``.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from . import cbor

MAGIC_BYTES = b"NRUB"  # u32 0x4255524E little-endian (§1.1)
FORMAT_VERSION = 1
HEADER_SIZE = 10
ALIGN = 256
MAX_METADATA_SIZE = 100 * 1024 * 1024  # §5.1 step 4 (equal allowed)
MAX_TENSOR_COUNT = 100_000  # §5.1 step 7
MAX_TENSOR_SIZE = 10 * 1024**3  # §5.3 (64-bit hosts)
U64_MAX = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

# §2.1 element sizes; QFloat has none (opaque bytes, §3.3).
ELEMENT_SIZE = {
    "F64": 8, "F32": 4, "Flex32": 4, "F16": 2, "BF16": 2,
    "I64": 8, "I32": 4, "I16": 2, "I8": 1,
    "U64": 8, "U32": 4, "U16": 2, "U8": 1,
}  # fmt: skip
BOOL_STORE_SIZE = {"Native": 1, "U8": 1, "U32": 4}
UNIT_DTYPES = tuple(ELEMENT_SIZE)
NUMPY_FORMAT = {
    "F64": "<f8", "F32": "<f4", "Flex32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
    "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
}  # fmt: skip


def align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def data_section_start(metadata_size: int) -> int:
    return align(HEADER_SIZE + metadata_size)


def element_size(dtype: Any) -> int | None:
    """Bytes per element of a dtype in serde form, None for QFloat (or anything unknown)."""
    if isinstance(dtype, str):
        return ELEMENT_SIZE.get(dtype)
    if isinstance(dtype, dict) and len(dtype) == 1 and "Bool" in dtype:
        return BOOL_STORE_SIZE.get(dtype["Bool"])
    return None


def numel(shape: list[int]) -> int:
    return math.prod(shape)


def qfloat(value: str, store: Any = None, mode: str = "Symmetric", tensor: str | None = None,
           block: tuple[list[int], str] | None = None) -> dict:
    """A QFloat dtype in serde form: keys value, store, mode, tensor, block (§3.1), block size
    canonicalised as ``BlockSize::new`` does (leading 1s stripped, unused slots filled with 1)."""
    if store is None:
        store = {"PackedU32": 0}
    block_json = None
    if block is not None:
        dims, scale = block
        kept = list(dims)
        while kept and kept[0] == 1:  # [1] → len 0, as BlockSize::new
            kept.pop(0)
        storage = kept + [1] * (5 - len(kept))
        block_json = {"size": {"storage": storage, "len": len(kept)}, "dtype": scale}
    return {"QFloat": {"value": value, "store": store, "mode": mode, "tensor": tensor, "block": block_json}}


# -- scalars --------------------------------------------------------------------------------------
def f64_bits(value: float) -> int:
    return int.from_bytes(struct.pack("<d", value), "little")


def bits_f64(bits: int) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def scalar(kind: str, value: Any) -> dict:
    """A scalar in dump form. Floats may be given as a float or as ``("bits", int)``."""
    if kind != "Float":
        return {"type": kind, "value": value}
    bits = value[1] if isinstance(value, tuple) else f64_bits(value)
    f = bits_f64(bits)
    shown: Any = f
    if f != f:
        shown = "nan"
    elif math.isinf(f):
        shown = "inf" if f > 0 else "-inf"
    return {"type": "Float", "value": shown, "f64_bits": f"0x{bits:016x}"}


def scalar_cbor(s: dict) -> dict:
    """The CBOR tree of a scalar: the newtype variant as a one-entry map (§2.5)."""
    if s["type"] == "Float":
        return {"Float": cbor.F64Bits(int(s["f64_bits"], 16))}
    return {s["type"]: s["value"]}


# -- content: what a reader reports ---------------------------------------------------------------
@dataclass
class Desc:
    """One tensor descriptor as decoded: dtype (serde form), shape, data_offsets, param_id."""

    dtype: Any
    shape: list[int]
    data_offsets: tuple[int, int]
    param_id: int | None = None


@dataclass
class Content:
    """The decoded metadata item (what a reader gets from the CBOR)."""

    tensors: dict[str, Desc] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, dict] = field(default_factory=dict)

    def cbor_tree(self) -> dict:
        """The canonical tree ciborium writes for this content (§2.2, §2.4, §2.5)."""
        tensors = {}
        for name in sorted(self.tensors):
            d = self.tensors[name]
            entry = {"dtype": d.dtype, "shape": list(d.shape), "data_offsets": list(d.data_offsets)}
            if d.param_id is not None:
                entry["param_id"] = d.param_id
            tensors[name] = entry
        tree: dict = {"tensors": tensors}
        if self.metadata:
            tree["metadata"] = {k: self.metadata[k] for k in sorted(self.metadata)}
        if self.scalars:
            tree["scalars"] = {k: scalar_cbor(self.scalars[k]) for k in sorted(self.scalars)}
        return tree

    def canonical_cbor(self) -> bytes:
        return cbor.enc(self.cbor_tree())


# -- pack specs: what a writer is asked to write --------------------------------------------------
@dataclass
class T:
    """A tensor to write: its bytes are little-endian, C order."""

    name: str
    dtype: Any
    shape: list[int]
    data: bytes
    param_id: int | None = None


@dataclass
class PackSpec:
    """Writer input: tensors in write (= data) order, metadata, scalars (dump form)."""

    tensors: list[T] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, dict] = field(default_factory=dict)

    def plan(self) -> tuple[Content, list[int]]:
        """Offsets as Burn's writer plans them (§4.1-4.4): each start = previous end rounded up."""
        content = Content(metadata=dict(self.metadata), scalars=dict(self.scalars))
        starts, offset = [], 0
        for t in self.tensors:
            start = align(offset)
            end = start + len(t.data)
            content.tensors[t.name] = Desc(t.dtype, list(t.shape), (start, end), t.param_id)
            starts.append(start)
            offset = end
        return content, starts

    def refusal(self, *, duplicates: bool = True) -> str | None:
        """Why Burn's writer refuses this input (§4.1), or None.

        Values Rust's types cannot even hold (an Int outside i64, a param id outside u64, a
        name that is not Unicode) are refused too: a spec can spell them, a Burn writer cannot.
        """
        for name, s in self.scalars.items():
            lo, hi = {"Int": (I64_MIN, I64_MAX), "UInt": (0, U64_MAX)}.get(s["type"], (None, None))
            if lo is not None and not lo <= s["value"] <= hi:
                return f"scalar '{name}': {s['value']} does not fit {s['type']}"
        seen = set()
        for t in self.tensors:
            if t.param_id is not None and not 0 <= t.param_id <= U64_MAX:
                return f"tensor '{t.name}': param_id {t.param_id} is not a u64"
            try:
                t.name.encode("utf-8")
            except UnicodeEncodeError:
                return f"tensor name {t.name!r} is not valid Unicode"
            size = element_size(t.dtype)
            if size is not None and len(t.data) != numel(t.shape) * size:
                return f"tensor '{t.name}' declares {len(t.data)} bytes, shape and dtype need {numel(t.shape) * size}"
            if duplicates and t.name in seen:
                return f"Duplicate tensor name '{t.name}'"
            seen.add(t.name)
        return None

    def build(self) -> bytes:
        """The exact file Burn's writer produces (§1, §4): header, CBOR, zero padding, data."""
        content, starts = self.plan()
        blob = content.canonical_cbor()
        return assemble(blob, [(s, t.data) for s, t in zip(starts, self.tensors)])

    @classmethod
    def from_json(cls, spec: dict) -> PackSpec:
        """Parse a writer spec (no validation beyond the shape of the JSON)."""
        tensors = [T(t["name"], t["dtype"], list(t["shape"]), bytes.fromhex(t["data_hex"]), t.get("param_id")) for t in spec["tensors"]]
        scalars = {}
        for name, s in (spec.get("scalars") or {}).items():
            if s["type"] == "Float" and "f64_bits" not in s:
                v = s["value"]
                s = scalar("Float", {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v, v) if isinstance(v, str) else float(v))
            scalars[name] = s
        return cls(tensors, dict(spec.get("metadata") or {}), scalars)

    def to_json(self) -> dict:
        """The writer spec JSON (PROTOCOL.md, ``burnpack pack``)."""
        return {
            "tensors": [
                {"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "param_id": t.param_id, "data_hex": t.data.hex()}
                for t in self.tensors
            ],
            "metadata": dict(self.metadata),
            "scalars": dict(self.scalars),
        }


def header(metadata_size: int, version: int = FORMAT_VERSION, magic: bytes = MAGIC_BYTES) -> bytes:
    return magic + version.to_bytes(2, "little") + metadata_size.to_bytes(4, "little")


def assemble(blob: bytes, placed: list[tuple[int, bytes]], *, data_start: int | None = None,
             pad_byte: int = 0, version: int = FORMAT_VERSION) -> bytes:
    """Header + metadata blob + padding + tensor bytes at their (relative) starts."""
    start = data_section_start(len(blob)) if data_start is None else data_start
    out = bytearray(header(len(blob), version) + blob)
    out += bytes([pad_byte]) * (start - len(out))
    for rel, data in placed:
        at = start + rel
        if len(out) < at:
            out += bytes([pad_byte]) * (at - len(out))
        out[at : at + len(data)] = data
    return bytes(out)


def dump_of(data: bytes, content: Content, version: int, metadata_size: int, data_start: int) -> dict:
    """The ``dump --json`` object a reader must print for an accepted file."""
    tensors = []
    for name in sorted(content.tensors):
        d = content.tensors[name]
        s, e = d.data_offsets
        raw = data[data_start + s : data_start + e]
        tensors.append(
            {
                "name": name,
                "dtype": d.dtype,
                "shape": list(d.shape),
                "data_offsets": [s, e],
                "param_id": d.param_id,
                "byte_len": e - s,
                "sha256": hashlib.sha256(raw).hexdigest(),
            }
        )
    return {
        "ok": True,
        "header": {"version": version, "metadata_size": metadata_size},
        "data_section_start": data_start,
        "tensors": tensors,
        "metadata": {k: content.metadata[k] for k in sorted(content.metadata)},
        "scalars": {k: content.scalars[k] for k in sorted(content.scalars)},
    }
