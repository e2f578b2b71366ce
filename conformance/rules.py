"""The expectation rules: what a conforming reader must do with a file, at both levels.

``expect(data, decode)`` walks the checks of format.md §5 in Burn's order and returns, for the
``compatible`` level (Burn's ``Reader``) and the ``strict`` level (only what Burn's writer can
produce), the outcome, the error kinds and — for accepted files — the expected ``dump --json``
object. The only thing it does not decide itself is how the CBOR metadata item decodes:
``decode(blob)`` returns the ``Content`` the item means, or raises ``CborRejected``. The corpus
generators pass the content they declared for each vector (from the tables of §2.6); the tests
also run these rules over Burn's own fixtures with burnpack's decoder plugged in, and compare the
outcomes with what Burn recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .model import (
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC_BYTES,
    MAX_METADATA_SIZE,
    MAX_TENSOR_COUNT,
    MAX_TENSOR_SIZE,
    U64_MAX,
    Content,
    align,
    data_section_start,
    dump_of,
    element_size,
    numel,
)

ACCEPT, REJECT_OPEN, REJECT_ACCESS = "accept", "reject_open", "reject_tensor_access"
OUTCOMES = (ACCEPT, REJECT_OPEN, REJECT_ACCESS)
LEVELS = ("compatible", "strict")


class CborRejected(Exception):
    """The metadata item does not decode (Burn: ``MetadataDeserializationError``)."""


@dataclass
class Expected:
    """One level's expectation: outcome, acceptable error kinds (first = Burn's from_bytes), why."""

    outcome: str
    errors: tuple[str, ...] = ()
    why: str = ""

    def to_json(self) -> dict:
        out: dict[str, Any] = {"outcome": self.outcome}
        if self.outcome != ACCEPT:
            out["error"] = list(self.errors)
        if self.why:
            out["why"] = self.why
        return out

    @classmethod
    def from_json(cls, obj: dict) -> Expected:
        return cls(obj["outcome"], tuple(obj.get("error", ())), obj.get("why", ""))


@dataclass
class Expectation:
    compatible: Expected
    strict: Expected
    dump: dict | None  # the expected dump for whichever level accepts (same content at both)

    def level(self, name: str) -> Expected:
        return self.compatible if name == "compatible" else self.strict


def _reject(stage: str, *errors: str, why: str) -> Expected:
    return Expected(stage, tuple(errors), why)


def expect(data: bytes, decode: Callable[[bytes], Content]) -> Expectation:
    """Apply the rules of format.md §5 (compatible) and the strict rules to one file."""
    compatible, found = _compatible(data, decode)
    if compatible.outcome == REJECT_OPEN:
        return Expectation(compatible, compatible, None)
    content, blob, version, m, d = found
    strict = _strict(data, content, blob, version, m, d) or compatible
    dump = dump_of(data, content, version, m, d) if ACCEPT in (compatible.outcome, strict.outcome) else None
    return Expectation(compatible, strict, dump)


def _compatible(data: bytes, decode: Callable[[bytes], Content]) -> tuple[Expected, Any]:
    size = len(data)
    # §5.1 / §5.2, in Burn's order. From a file, a short header or metadata is an IoError
    # (read_exact) where from_bytes says InvalidHeader: both kinds are accepted.
    if size < HEADER_SIZE:
        return _reject(REJECT_OPEN, "InvalidHeader", "IoError", why=f"file is {size} bytes, header needs 10"), None
    if data[:4] != MAGIC_BYTES:
        return _reject(REJECT_OPEN, "InvalidMagicNumber", why=f"magic bytes {data[:4].hex()} != 4e525542"), None
    version = int.from_bytes(data[4:6], "little")
    if version > FORMAT_VERSION:
        return _reject(REJECT_OPEN, "InvalidVersion", why=f"version {version} > 1"), None
    m = int.from_bytes(data[6:10], "little")
    if m > MAX_METADATA_SIZE:
        return _reject(REJECT_OPEN, "ValidationError", why=f"metadata_size {m} > {MAX_METADATA_SIZE}"), None
    if size < HEADER_SIZE + m:
        return _reject(REJECT_OPEN, "InvalidHeader", "IoError", why=f"metadata ends at {10 + m}, file is {size}"), None
    blob = data[HEADER_SIZE : HEADER_SIZE + m]
    try:
        content = decode(blob)
    except CborRejected as exc:
        return _reject(REJECT_OPEN, "MetadataDeserializationError", why=f"metadata does not decode: {exc}"), None
    n = len(content.tensors)
    if n > MAX_TENSOR_COUNT:
        return _reject(REJECT_OPEN, "ValidationError", why=f"{n} tensors > {MAX_TENSOR_COUNT}"), None
    if n:
        # The truncation check adds the largest end to the metadata end, not to the aligned start.
        min_size = HEADER_SIZE + m + max(t.data_offsets[1] for t in content.tensors.values())
        if min_size > U64_MAX:
            return _reject(REJECT_OPEN, "ValidationError", why="10 + M + max end overflows u64"), None
        if size < min_size:
            return _reject(REJECT_OPEN, "ValidationError", why=f"file is {size} bytes < 10 + M + max end = {min_size}"), None
    d = data_section_start(m)
    found = (content, blob, version, m, d)
    # §5.3: every tensor, in name order, all or nothing.
    for name in sorted(content.tensors):
        s, e = content.tensors[name].data_offsets
        start, end = d + s, d + e
        if start > U64_MAX or end > U64_MAX:
            return _reject(REJECT_ACCESS, "ValidationError", why=f"tensor {name!r}: D + offset overflows u64"), found
        if end < start:
            return _reject(REJECT_ACCESS, "ValidationError", why=f"tensor {name!r}: end {e} < start {s}"), found
        if end - start > MAX_TENSOR_SIZE:
            return _reject(REJECT_ACCESS, "ValidationError", why=f"tensor {name!r}: {end - start} bytes > 10 GiB"), found
        if end > size:
            return _reject(REJECT_ACCESS, "ValidationError", why=f"tensor {name!r}: bytes {start}..{end} past EOF {size}"), found
    return Expected(ACCEPT), found


def prealignment_layout(content: Content, m: int, size: int) -> bool:
    """§7: the pre-2025-12-02 layout — tensors packed back to back from 10 + M, file ending there."""
    metadata_end = HEADER_SIZE + m
    if not content.tensors or metadata_end % 256 == 0:
        return False
    ranges = sorted(d.data_offsets for d in content.tensors.values())
    if size != metadata_end + max(e for _, e in ranges):
        return False
    position = 0
    for s, e in ranges:
        if s != position or e < s:
            return False
        position = e
    return True


def _unconstructible_block(dtype: Any) -> str | None:
    """Why a QFloat block size is not one cubecl's ``BlockSize::new`` produces (format.md §3.1), or None."""
    scheme = dtype.get("QFloat") if isinstance(dtype, dict) else None
    block = scheme.get("block") if isinstance(scheme, dict) else None
    if not isinstance(block, dict):
        return None
    storage, length = list(block["size"]["storage"]), block["size"]["len"]
    if length > len(storage):
        return f"block size len {length} exceeds its {len(storage)} storage slots"
    if any(v != 1 for v in storage[length:]) or (length and storage[0] == 1):
        return f"block size {storage} len {length} is not BlockSize::new's canonical form"
    return None


def _strict(data: bytes, content: Content, blob: bytes, version: int, m: int, d: int) -> Expected | None:
    """The strict rules (a file strictly valid iff re-writing it in its data order reproduces it).

    Returns the strict rejection, or None when the strict checks pass (the compatible outcome
    then stands). Kinds: version → InvalidVersion, metadata encoding → MetadataDeserializationError,
    layout, padding and length → ValidationError.
    """
    if version != FORMAT_VERSION:
        return _reject(REJECT_OPEN, "InvalidVersion", why=f"strict: version {version}, Burn writes 1")
    if prealignment_layout(content, m, len(data)):
        return _reject(REJECT_OPEN, "ValidationError", why="strict: pre-alignment layout")
    if blob != content.canonical_cbor():
        return _reject(REJECT_OPEN, "MetadataDeserializationError", why="strict: metadata is not the canonical encoding")
    for name, t in content.tensors.items():
        why = _unconstructible_block(t.dtype)
        if why:
            return _reject(REJECT_OPEN, "ValidationError", why=f"strict: {name!r}: {why}")
    order = sorted(content.tensors, key=lambda n: (content.tensors[n].data_offsets, n))
    position = 0
    for name in order:
        t = content.tensors[name]
        s, e = t.data_offsets
        if s != align(position):
            return _reject(REJECT_OPEN, "ValidationError", why=f"strict: {name!r} starts at {s}, writer puts it at {align(position)}")
        if e < s:  # only a QFloat gets past the length check with it: its length is never checked
            return _reject(REJECT_OPEN, "ValidationError", why=f"strict: {name!r} ends at {e}, before its start {s}")
        size = element_size(t.dtype)
        if size is not None and numel(t.shape) * size > U64_MAX:
            return _reject(REJECT_OPEN, "ValidationError", why=f"strict: {name!r} needs 2^64 bytes or more (Burn's release writer wraps)")
        if size is not None and e - s != numel(t.shape) * size:
            return _reject(REJECT_OPEN, "ValidationError", why=f"strict: {name!r} spans {e - s} bytes, shape needs {numel(t.shape) * size}")
        if any(data[d + position : d + s]):
            return _reject(REJECT_OPEN, "ValidationError", why=f"strict: non-zero padding before {name!r}")
        position = e
    if len(data) != d + position:
        return _reject(REJECT_OPEN, "ValidationError", why=f"strict: file is {len(data)} bytes, content needs exactly {d + position}")
    if any(data[HEADER_SIZE + m : d]):
        return _reject(REJECT_OPEN, "ValidationError", why="strict: non-zero padding before the data section")
    return None
