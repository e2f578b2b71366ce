"""Files from older Burn versions: recognise them, say what they are, and read them on request.

Three on-disk changes were made without a format-version bump (../shared/spec/format.md §7):

* before 2025-12-02 (burn 272ca0b4a) tensor data started right after the metadata, unaligned;
  current Burn reads such files at the aligned offset and returns shifted bytes or fails;
* before 2026-03-19 (bcaabad86) a bool tensor's dtype was the bare text ``"Bool"``; current Burn
  rejects it, and an old QFloat ``"store": "U32"`` likewise (cubecl bump f3c0aebfd, 2026-01-14);
* before 2026-08-19 (a8f9b960f) a QFloat scheme was ``{value, param, store, level, mode}``;
  current Burn ignores ``param``/``level`` and silently reads the default per-tensor F32 scheme.

By default burnpack behaves like current Burn (same acceptance, same stage) but warns or explains;
``load(..., legacy_ok=True)`` reads these files as their writer meant them.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

from ..codec._cbor import MAP, TAG, Decoder, Fallback, encode, plain_item
from ..errors import BurnpackError, CborError, LegacyFormatWarning, MetadataDeserializationError
from ..codec._generated.layout import CBOR_SCRATCH_SIZE, MAX_CBOR_DEPTH, TENSOR_ALIGNMENT
from ..codec._generated.metadata import Metadata
from .metadata import decode_metadata

# Each diagnosis is a one-line summary (what the file is, what to do) plus the details (which
# Burn versions and commits); errors and warnings carry both as ``legacy_summary`` /
# ``legacy_details`` attributes, and their text holds only the summary.
LAYOUT_DIAGNOSIS = (
    "pre-alignment layout of a Burn 0.19 file, which current Burn reads shifted; open it with legacy_ok=True"
)
LAYOUT_DETAILS = (
    "Burn 0.19 (before commit 272ca0b4a, 2025-12-02) started tensor data right after the metadata; Burn 0.20 "
    "and later read it at the next 256-byte boundary, so they see shifted bytes or fail"
)
BOOL_DIAGNOSIS = (
    'tensor {name!r}: dtype "Bool" of a Burn 0.19-0.20 file, which current Burn rejects; open it with legacy_ok=True'
)
BOOL_DETAILS = (
    'Burn 0.19-0.20 (before bool stores, commit bcaabad86, 2026-03-19) wrote a bool dtype as the bare text "Bool"; '
    "legacy_ok=True reads it as Bool(Native)"
)
STORE_DIAGNOSIS = (
    'tensor {name!r}: QFloat store "U32" of a Burn 0.19 file, which current Burn rejects; open it with legacy_ok=True'
)
STORE_DETAILS = (
    'Burn 0.19 (before the cubecl bump f3c0aebfd, 2026-01-14) wrote the QFloat store "U32"; legacy_ok=True reads '
    "it as PackedU32(0)"
)
SCHEME_DIAGNOSIS = (
    "tensor {name!r}: pre-2026-08-19 QFloat scheme, which current Burn misreads as the default; open it with legacy_ok=True"
)
SCHEME_DETAILS = (
    "every Burn release from 0.19 to 0.22.0-pre.2 (before commit a8f9b960f, 2026-08-19) wrote QFloat schemes with "
    "'param'/'level' keys; current Burn ignores them and reads the default per-tensor F32 scheme"
)


def legacy_warning(summary: str, details: str) -> LegacyFormatWarning:
    """A warning whose text is the one-line summary, with the details as an attribute."""
    warning = LegacyFormatWarning(summary)
    warning.legacy_summary = summary  # type: ignore[attr-defined]
    warning.legacy_details = details  # type: ignore[attr-defined]
    return warning


def with_diagnosis(error: BurnpackError, summary: str, details: str) -> BurnpackError:
    """``error`` carrying a legacy diagnosis as attributes (its text already holds the summary)."""
    error.legacy_summary = summary  # type: ignore[attr-defined]
    error.legacy_details = details  # type: ignore[attr-defined]
    return error


def has_prealignment_layout(meta: Metadata, metadata_end: int, max_end: int, file_size: int) -> bool:
    """True for files laid out by the pre-alignment writer, which current Burn cannot read whole.

    That writer packed tensors back to back from byte 10+M, so the file ends exactly at
    ``10 + M + max_end``; with the aligned start the last tensor would run past the end. Cheap
    for ordinary files: the offsets are only sorted when the length already matches.
    """
    if not meta.tensors or metadata_end % TENSOR_ALIGNMENT == 0 or file_size != metadata_end + max_end:
        return False
    ranges = sorted(d.data_offsets for d in meta.tensors.values())
    position = 0
    for start, end in ranges:
        if start != position or end < start:
            return False
        position = end
    return True


# Words every legacy encoding contains; metadata without them has nothing to diagnose or rewrite.
_LEGACY_MARKERS = (b"Bool", b"U32", b"param", b"level")


class _Entry(NamedTuple):
    """One tensor entry of the metadata: its descriptor as plain values and where its bytes are."""

    descriptor: dict
    start: int
    end: int


def _raw_descriptors(blob: bytes) -> dict[str, _Entry]:
    """The tensor descriptors as plain values (tags ignored, as Burn ignores them), or {} when
    there is nothing legacy in the blob or it cannot be walked (nothing to diagnose then).

    The walk is Burn's own (the exact decoder's tokens; other fields skipped) and each descriptor
    is decoded alone, so time and memory follow the blob whatever it holds.
    """
    if not any(marker in blob for marker in _LEGACY_MARKERS):
        return {}
    d = Decoder(bytes(blob), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE)
    found: dict[str, _Entry] = {}
    try:
        for _ in d._elements(_map_length(d)):
            if d.identifier() != "tensors":
                d.skip()
                continue
            for _ in d._elements(_map_length(d)):
                name = d.string()
                if d.pushed is not None:
                    return found
                start = d.pos
                descriptor, d.pos = plain_item(d.buf, start)
                if isinstance(descriptor, dict):
                    found[name] = _Entry(descriptor, start, d.pos)
            return found
    except (CborError, Fallback):
        pass
    return found


def _map_length(d: Decoder) -> int | None:
    while True:
        h = d.pull()
        if h[0] == TAG:
            continue
        if h[0] != MAP:
            raise Fallback
        return h[1]


def _qfloat_scheme(descriptor: dict) -> dict | None:
    dtype = descriptor.get("dtype")
    if isinstance(dtype, dict) and isinstance(dtype.get("QFloat"), dict):
        return dtype["QFloat"]
    return None


def explain_rejection(error: MetadataDeserializationError, blob: bytes) -> MetadataDeserializationError:
    """The same error, with a diagnosis added when the rejection comes from an older Burn encoding."""
    for name, (descriptor, _, _) in _raw_descriptors(blob).items():
        scheme = _qfloat_scheme(descriptor)
        if descriptor.get("dtype") == "Bool":
            diagnosis, details = BOOL_DIAGNOSIS.format(name=name), BOOL_DETAILS
        elif scheme is not None and scheme.get("store") == "U32":
            diagnosis, details = STORE_DIAGNOSIS.format(name=name), STORE_DETAILS
        else:
            continue
        where = f"{error.where}; {diagnosis}" if error.where else diagnosis
        explained = MetadataDeserializationError(error.payload, where=where)
        with_diagnosis(explained, diagnosis, details)
        return explained
    return error


def warn_misread_schemes(meta: Metadata, blob: bytes) -> None:
    """Warn about old-shape QFloat schemes, which Burn accepts but misreads."""
    if not any(d.dtype.is_quantized for d in meta.tensors.values()):
        return
    for name, (descriptor, _, _) in _raw_descriptors(blob).items():
        scheme = _qfloat_scheme(descriptor)
        if scheme is not None and ("param" in scheme or "level" in scheme):
            warnings.warn(legacy_warning(SCHEME_DIAGNOSIS.format(name=name), SCHEME_DETAILS), stacklevel=4)


def _is_old_scheme(scheme: dict) -> bool:
    return "param" in scheme or "level" in scheme or scheme.get("store") == "U32"


def old_qfloat_schemes(meta: Metadata, blob: bytes) -> dict[str, dict]:
    """QFloat schemes written in an older Burn's shape, as written, by tensor name (quant.md §5).

    The decoded scheme no longer says how the writer laid the bytes out; dequantizing needs it.
    """
    if not any(d.dtype.is_quantized for d in meta.tensors.values()):
        return {}
    out = {}
    for name, (descriptor, _, _) in _raw_descriptors(blob).items():
        scheme = _qfloat_scheme(descriptor)
        if scheme is not None and name in meta.tensors and _is_old_scheme(scheme):
            out[name] = scheme
    return out


def _modern_scheme(scheme: dict) -> dict:
    if "param" not in scheme and "level" not in scheme and scheme.get("store") != "U32":
        return scheme
    param = scheme.get("param", "F32")
    level = scheme.get("level", "Tensor")
    store = scheme.get("store")
    modern = {
        "value": scheme.get("value"),
        "store": {"PackedU32": 0} if store == "U32" else store,
        "mode": scheme.get("mode"),
        "tensor": param,
        "block": None,
    }
    if isinstance(level, dict) and "Block" in level:
        modern.update(tensor=None, block={"size": level["Block"], "dtype": param})
    elif isinstance(level, dict) and isinstance(level.get("BlockTensor"), dict):
        inner = level["BlockTensor"]
        modern.update(block={"size": inner.get("block"), "dtype": param}, tensor=inner.get("global", "F32"))
    if "param" not in scheme and "level" not in scheme:
        modern.update(tensor=scheme.get("tensor"), block=scheme.get("block"))
    return modern


def decode_legacy(blob: bytes) -> Metadata:
    """Decode metadata, first rewriting older Burn encodings into the current ones.

    Each descriptor in an old encoding is re-encoded in place; every other byte is kept, so the
    rewrite is linear in the blob. What the rewrite cannot make sense of is left to
    ``decode_metadata``, which rejects it with Burn's error.
    """
    pieces: list[bytes] = []
    position = 0
    for descriptor, start, end in _raw_descriptors(blob).values():
        scheme = _qfloat_scheme(descriptor)
        if descriptor.get("dtype") == "Bool":
            descriptor["dtype"] = {"Bool": "Native"}
        elif scheme is not None and _modern_scheme(scheme) is not scheme:
            descriptor["dtype"] = {"QFloat": _modern_scheme(scheme)}
        else:
            continue
        try:
            rewritten = encode(descriptor)
        except Exception:  # a value cbor2 cannot write back: Burn's verdict on the original bytes
            return decode_metadata(blob)
        pieces += [blob[position:start], rewritten]
        position = end
    if not pieces:
        return decode_metadata(blob)
    return decode_metadata(b"".join(pieces) + blob[position:])
