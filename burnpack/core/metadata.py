"""The CBOR metadata item: encode as Burn's writer does, decode as Burn's reader does."""

from __future__ import annotations

from .._cbor import Decoder, fast_loads
from ..errors import CborError, Fallback, MetadataDeserializationError, MetadataSerializationError
from .._generated.codec import encode_Metadata_bytes, encode_Metadata_entries, exact_Metadata, fast_Metadata, scan_Metadata
from .._generated.layout import CBOR_SCRATCH_SIZE, MAX_CBOR_DEPTH
from .._generated.types import Metadata


def encode_metadata(metadata: Metadata) -> bytes:
    """Burn's exact metadata bytes: struct keys in declaration order, maps sorted, shortest forms."""
    try:
        return encode_Metadata_bytes(metadata)
    except (TypeError, ValueError, UnicodeError, OverflowError) as exc:
        raise MetadataSerializationError(f"cannot encode metadata: {exc}") from None


def encode_metadata_entries(entries: dict[str, bytes], metadata: dict[str, str], scalars: dict) -> bytes:
    """``encode_metadata`` from tensor entries already encoded (the writer's hot path)."""
    try:
        return encode_Metadata_entries(entries, metadata, scalars)
    except (TypeError, ValueError, UnicodeError, OverflowError) as exc:
        raise MetadataSerializationError(f"cannot encode metadata: {exc}") from None


def decode_metadata(blob: bytes) -> Metadata:
    """Decode the metadata item as ciborium + serde do, with Burn's recursion limit.

    Three tiers, each falling back to the next whenever it cannot prove it reads the bytes as
    Burn does: a regex scanner for a tensors map exactly as Burn writes it, cbor2's C decoder
    with the generated validators, and the exact ciborium emulation, which also produces Burn's
    error message for invalid input.
    """
    try:
        return scan_Metadata(blob)
    except Exception:  # Fallback, or bytes the scanner does not handle
        pass
    try:
        return fast_Metadata(fast_loads(blob))
    except Exception:  # Fallback, or a shape the fast validators do not handle
        return decode_metadata_exact(blob)


def decode_metadata_exact(blob: bytes) -> Metadata:
    """Decode with the token-for-token ciborium emulation only."""
    decoder = Decoder(bytes(blob), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE)
    try:
        return exact_Metadata(decoder)
    except CborError as exc:
        where = f"metadata byte {exc.offset}" if exc.offset is not None else f"metadata byte {decoder.pos}"
        if decoder.context is not None:
            where += f", in entry {decoder.context!r}"
        raise MetadataDeserializationError(str(exc), where=where) from None
    except RecursionError:
        raise MetadataDeserializationError("RecursionLimitExceeded", where="metadata nesting") from None


__all__ = ["decode_metadata", "decode_metadata_exact", "encode_metadata", "encode_metadata_entries"]
