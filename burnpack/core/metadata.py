"""The CBOR metadata item: encode as Burn's writer does, decode as Burn's reader does."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

import numpy as np

from ..codec._cbor import Decoder, fast_loads
from ..errors import CborError, MetadataDeserializationError, MetadataSerializationError
from ..codec._generated.metadata import (
    Metadata,
    encode_Metadata_bytes,
    encode_Metadata_entries,
    encode_Metadata_map,
    encode_TensorDescriptor_entry_with,
    exact_Metadata,
    fast_Metadata,
    scan_Metadata,
)
from ..codec._generated.layout import CBOR_SCRATCH_SIZE, MAX_CBOR_DEPTH


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


def encode_metadata_columns(
    names: list[str],
    layouts: list[bytes],
    starts: np.ndarray,
    ends: np.ndarray,
    param_ids: list[int | None] | None,
    metadata: dict[str, str],
    scalars: dict,
) -> bytes:
    """``encode_metadata_entries`` from columns: tensor ``i`` is named ``names[i]``, its entry
    starts with ``layouts[i]`` (``TensorDescriptor_layout``), its data offsets are ``(starts[i],
    ends[i])`` (uint64 arrays) and its param id ``param_ids[i]`` (``None``: no tensor has one).
    The entries are encoded by ``encode_entries``."""
    try:
        order = sorted(range(len(names)), key=names.__getitem__)
        take = np.array(order, dtype=np.intp)
        entries = encode_entries(
            list(map(names.__getitem__, order)),
            list(map(layouts.__getitem__, order)),
            np.ascontiguousarray(starts[take], dtype=np.uint64),
            np.ascontiguousarray(ends[take], dtype=np.uint64),
            None if param_ids is None else list(map(param_ids.__getitem__, order)),
        )
        return encode_Metadata_map(len(order), entries, metadata, scalars)
    except (TypeError, ValueError, UnicodeError, OverflowError) as exc:
        raise MetadataSerializationError(f"cannot encode metadata: {exc}") from None


def encode_entries(names: list[str], layouts: list[bytes], starts: np.ndarray, ends: np.ndarray, param_ids: list[int | None] | None) -> bytes:
    """The 'tensors' map's entries in the order given, one after another: entry ``i`` is
    ``encode_TensorDescriptor_entry_with(names[i], layouts[i], (starts[i], ends[i]), param_ids[i])``.

    The generated encoder, entry by entry: it and cbor2 both meet the durable-save target that a
    compiled kernel was once built for, so there is none (docs/kernels.md)."""
    if not len(names) == len(layouts) == starts.size == ends.size == (len(names) if param_ids is None else len(param_ids)):
        raise ValueError("encode_entries: every column needs one item per entry")
    ids: Iterable[int | None] = repeat(None) if param_ids is None else param_ids
    return b"".join(map(encode_TensorDescriptor_entry_with, names, layouts, zip(starts.tolist(), ends.tolist()), ids))


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


PROVENANCE_KEYS = ("format", "producer", "version")
"""The metadata keys that say who wrote a file, not what it holds: Burn's ``BurnpackStore`` and
``SafetensorsStore`` put them on every file they write (burn-store ``burnpack.rs``
``default_metadata``), ``convert`` writes them as :func:`provenance_stamp` gives them, and
``diff`` reports them apart from the content."""


def provenance_stamp(format_name: str, version: str) -> dict[str, str]:
    """The ``PROVENANCE_KEYS`` as burnpack writes them on a file it converts.

    Args:
        format_name: The written file's format (``burnpack``, ``safetensors``).
        version: burnpack's version (``burnpack.__version__``: the package this layer lies
            beneath, and does not import).

    Returns:
        ``format``, ``producer`` (``burnpack``) and ``version``, in that order.
    """
    return dict(zip(PROVENANCE_KEYS, (format_name, "burnpack", version)))


__all__ = ["PROVENANCE_KEYS", "decode_metadata", "decode_metadata_exact", "encode_entries", "encode_metadata",
           "encode_metadata_columns", "encode_metadata_entries", "provenance_stamp"]  # fmt: skip
