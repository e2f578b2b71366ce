"""The burnpack file layout, declared with ``construct``.

This is the declaration the generator reads (``schema/generate.py``) and the reference the
property tests compare the generated fast header codec against. ``construct`` is not used on
the hot path: its parsers are slow and not hardened against hostile bytes.

Source: burn@2c06be35 crates/burn-pack/src/base.rs:15-92 (see ../shared/spec/format.md §1).
"""

from __future__ import annotations

from construct import Bytes, Const, Int16ul, Int32ul, Padding, Struct, this

MAGIC = 0x4255524E
"""``u32`` little-endian magic; on disk the bytes ``4E 52 55 42`` ("NRUB")."""

FORMAT_VERSION = 1
"""The only version Burn has ever written. Readers accept any version <= this one."""

TENSOR_ALIGNMENT = 256
"""The data section and every tensor start on a multiple of this many bytes."""

Header = Struct(
    "magic" / Const(MAGIC, Int32ul),
    "version" / Int16ul,
    "metadata_size" / Int32ul,
)
"""The fixed 10-byte header."""

HEADER_SIZE = Header.sizeof()


def data_section_start(metadata_size: int) -> int:
    """Absolute offset of the data section: header plus metadata, rounded up to the alignment."""
    unaligned = HEADER_SIZE + metadata_size
    return -(-unaligned // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT


Preamble = Struct(
    "header" / Header,
    "metadata" / Bytes(this.header.metadata_size),
    Padding(lambda ctx: data_section_start(ctx.header.metadata_size) - HEADER_SIZE - ctx.header.metadata_size),
)
"""Header, CBOR metadata and the zero padding up to the data section."""
