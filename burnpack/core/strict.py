"""``strict=True``: accept only files a Burn writer could have produced.

A file is strictly valid iff writing its content again, with the tensors in its data order,
reproduces it byte for byte, and that content is one Burn's API can construct: every QFloat
block size in ``BlockSize::new``'s canonical form, every shape's byte size under 2^64 (Burn
reads and re-writes both kinds as they are, so re-writing alone would accept them). That is
checked piece by piece so the error says what differs: the version, the pre-alignment layout,
the metadata encoding (canonical CBOR exactly as ciborium writes it), the block sizes, the
tensor layout (each start = previous end rounded up to 256, no end before its start, lengths =
shape × element size), the zero padding, and the file length — in the order of the
conformance protocol (conformance/PROTOCOL.md §2), which fixes the error kind when several fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

from ..codec._cbor import U64_MAX
from ..codec._generated.layout import FORMAT_VERSION, HEADER_SIZE, align
from ..codec._generated.metadata import TensorDescriptor
from .dtypes import element_size, unconstructible
from ..errors import InvalidVersion, MetadataDeserializationError, ValidationError
from .metadata import decode_metadata, encode_metadata
from .source import Source


class Opened(Protocol):
    """What the check reads of an opened pack: the reader's ``Pack``, which calls this module
    (so this module does not name it)."""

    @property
    def version(self) -> int: ...
    @property
    def legacy_layout(self) -> bool: ...
    @property
    def metadata_size(self) -> int: ...
    @property
    def data_section_start(self) -> int: ...
    @property
    def file_size(self) -> int: ...
    @property
    def descriptors(self) -> Mapping[str, TensorDescriptor]: ...


def check_strict(pack: Opened, source: Source) -> None:
    """Raise the first way ``pack`` (whose bytes ``source`` holds) differs from what Burn's
    writer would produce."""
    if pack.version != FORMAT_VERSION:
        raise InvalidVersion(where=f"strict: version {pack.version}, Burn always writes {FORMAT_VERSION}")
    if pack.legacy_layout:
        raise ValidationError("strict: pre-alignment (legacy) layout")
    _check_metadata_encoding(pack, source)
    _check_constructible(pack)
    data_size = _check_layout(pack, source)
    expected_size = pack.data_section_start + data_size
    if pack.file_size != expected_size:
        what = "trailing bytes after the last tensor" if pack.file_size > expected_size else "file truncated"
        raise ValidationError(f"strict: {what}: file is {pack.file_size} bytes, its content needs exactly {expected_size}")
    _check_zero(source, HEADER_SIZE + pack.metadata_size, pack.data_section_start, "padding before the data section")


def _check_metadata_encoding(pack: Opened, source: Source) -> None:
    blob = source.read(HEADER_SIZE, pack.metadata_size)
    canonical = encode_metadata(decode_metadata(blob))
    if blob == canonical:
        return
    at = next((i for i, (a, b) in enumerate(zip(blob, canonical)) if a != b), min(len(blob), len(canonical)))
    if at == len(canonical):
        problem = f"{len(blob) - len(canonical)} bytes after the CBOR item"
    else:
        found = blob[at : at + 8].hex(" ")
        expected = canonical[at : at + 8].hex(" ")
        problem = f"found {found or 'end of metadata'}, Burn's writer puts {expected}"
    raise MetadataDeserializationError(
        "strict: metadata is not the canonical encoding Burn writes",
        where=f"metadata byte {at}: {problem}",
    )


def _check_constructible(pack: Opened) -> None:
    """Values that decode and re-encode identically but that no Burn writer can construct."""
    for name, d in pack.descriptors.items():
        why = unconstructible(d.dtype)
        if why:
            raise ValidationError(f"strict: tensor {name!r}: {why}; no Burn writer can construct it")


def _check_layout(pack: Opened, source: Source) -> int:
    """Check offsets against a re-plan in data order; returns the data-section size."""
    descriptors = pack.descriptors
    order = sorted(descriptors, key=lambda name: (descriptors[name].data_offsets, name))
    position = 0
    for name in order:
        d = descriptors[name]
        start, end = d.data_offsets
        if start != align(position):
            raise ValidationError(
                f"strict: tensor {name!r} starts at {start}, Burn's writer would put it at {align(position)}",
                where="data order by offset",
            )
        if end < start:  # the length check below skips QFloat tensors, so it would not see this
            raise ValidationError(f"strict: tensor {name!r} ends at {end}, before its start {start}", where="data order by offset")
        size = element_size(d.dtype)
        count = math.prod(d.shape)
        if size is not None and count * size > U64_MAX:
            raise ValidationError(
                f"strict: tensor {name!r} has {count} elements ({count * size} bytes), 2^64 or more: Burn's release "
                "writer wraps the count modulo 2^64 (debug builds panic); burnpack refuses to treat it as valid"
            )
        if size is not None and end - start != count * size:
            raise ValidationError(
                f"strict: tensor {name!r} spans {end - start} bytes but its shape {list(d.shape)} and dtype "
                f"{d.dtype.variant} need {math.prod(d.shape) * size}"
            )
        if start > position:
            _check_zero(source, pack.data_section_start + position, pack.data_section_start + start, f"padding before {name!r}")
        position = end
    return position


def _check_zero(source: Source, start: int, end: int, what: str) -> None:
    data = source.read(start, end - start)
    if data.strip(b"\x00"):
        at = start + next(i for i, b in enumerate(data) if b)
        raise ValidationError(f"strict: non-zero byte in the {what}", where=f"byte {at}")
