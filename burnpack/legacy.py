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
from typing import Any

import cbor2

from ._generated.layout import TENSOR_ALIGNMENT
from ._generated.types import Metadata
from .errors import BurnpackError, LegacyFormatWarning, MetadataDeserializationError
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


def _raw_descriptors(blob: bytes) -> dict[str, Any]:
    """The descriptors as cbor2 reads them, or {} when cbor2 cannot (nothing to diagnose then)."""
    try:
        raw = cbor2.loads(blob)
        tensors = raw.get("tensors") if isinstance(raw, dict) else None
        return {k: v for k, v in tensors.items() if isinstance(v, dict)} if isinstance(tensors, dict) else {}
    except Exception:
        return {}


def _qfloat_scheme(descriptor: dict) -> dict | None:
    dtype = descriptor.get("dtype")
    if isinstance(dtype, dict) and isinstance(dtype.get("QFloat"), dict):
        return dtype["QFloat"]
    return None


def explain_rejection(error: MetadataDeserializationError, blob: bytes) -> MetadataDeserializationError:
    """The same error, with a diagnosis added when the rejection comes from an older Burn encoding."""
    for name, descriptor in _raw_descriptors(blob).items():
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
    for name, descriptor in _raw_descriptors(blob).items():
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
    for name, descriptor in _raw_descriptors(blob).items():
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
    elif isinstance(level, dict) and "BlockTensor" in level:
        inner = level["BlockTensor"]
        modern.update(block={"size": inner.get("block"), "dtype": param}, tensor=inner.get("global", "F32"))
    if "param" not in scheme and "level" not in scheme:
        modern.update(tensor=scheme.get("tensor"), block=scheme.get("block"))
    return modern


def decode_legacy(blob: bytes) -> Metadata:
    """Decode metadata, first rewriting older Burn encodings into the current ones."""
    descriptors = _raw_descriptors(blob)
    changed = False
    for descriptor in descriptors.values():
        scheme = _qfloat_scheme(descriptor)
        if descriptor.get("dtype") == "Bool":
            descriptor["dtype"] = {"Bool": "Native"}
            changed = True
        elif scheme is not None and _modern_scheme(scheme) is not scheme:
            descriptor["dtype"] = {"QFloat": _modern_scheme(scheme)}
            changed = True
    if not changed:
        return decode_metadata(blob)
    raw = cbor2.loads(blob)
    raw["tensors"].update(descriptors)
    return decode_metadata(cbor2.dumps(raw))
