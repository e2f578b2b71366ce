"""The ``dump --json`` form of a pack: the protocol the conformance suite compares readers by.

Success: ``{"ok": true, "header": {"version", "metadata_size"}, "data_section_start",
"tensors": [{"name", "dtype", "shape", "data_offsets", "param_id", "byte_len", "sha256"}],
"metadata": {...}, "scalars": {name: {"type", "value", "f64_bits"?}}}`` with tensors sorted by
name; failure: ``{"ok": false, "error": {"variant", "stage": "open" | "tensor_access",
"message"}}``. Field names and float conventions are those of Burn's fixture sidecars: NaN and
infinities as the strings ``"nan"``, ``"inf"``, ``"-inf"``, and every float also as ``f64_bits``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..codec._cbor import float_to_bits
from ..codec._generated.metadata import Scalar
from ..errors import BurnpackError
from .progress import ProgressSetting, finish, progress_for
from .reader import Pack, PathLike, load

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from .sidefile import JSONObject


def scalar_json(scalar: Scalar) -> JSONObject:
    """A scalar as ``{"type", "value"}`` (+ ``"f64_bits"`` for floats, which JSON cannot hold exactly)."""
    if not scalar.is_float:
        return {"type": scalar.variant, "value": scalar.value}
    value = scalar.value
    shown: Any = value
    if math.isnan(value):
        shown = "nan"
    elif math.isinf(value):
        shown = "inf" if value > 0 else "-inf"
    return {"type": scalar.variant, "value": shown, "f64_bits": f"0x{float_to_bits(value):016x}"}


def pack_json(pack: Pack, *, progress: ProgressSetting = None) -> JSONObject:
    """Everything a reader reports about an open pack; reads every tensor (to hash it), feeding
    ``progress`` the bytes of each (a callable, or a setting of :func:`~burnpack.core.progress.progress_for`)."""
    import hashlib  # (paid by a dump, not by every command that shows a scalar)

    views = pack.tensors()
    bar = progress_for(progress, sum(max(view.byte_len, 0) for view in views), "hashing")
    tensors = []
    for view in views:
        data = view.memoryview()
        tensors.append(
            {
                "name": view.name,
                "dtype": view.dtype.to_serde(),
                "shape": list(view.shape),
                "data_offsets": list(view.data_offsets),
                "param_id": view.param_id,
                "byte_len": data.nbytes,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
        bar(data.nbytes)
    finish(bar)
    return {
        "ok": True,
        "header": {"version": pack.version, "metadata_size": pack.metadata_size},
        "data_section_start": pack.data_section_start,
        "tensors": tensors,
        "metadata": dict(pack.metadata),
        "scalars": {name: scalar_json(s) for name, s in sorted(pack.scalars.items())},
    }


def error_json(error: BurnpackError, stage: str) -> JSONObject:
    return {"ok": False, "error": {"variant": error.variant, "stage": stage, "message": str(error)}}


def dump(source: PathLike | bytes, *, strict: bool = False, legacy_ok: bool = False, progress: ProgressSetting = None) -> JSONObject:
    """The ``dump --json`` object for a file or bytes; never raises a BurnpackError. ``progress``
    shows the bytes hashed (:func:`pack_json`)."""
    try:
        pack = load(source, strict=strict, legacy_ok=legacy_ok)
    except BurnpackError as exc:
        return error_json(exc, "open")
    with pack:
        try:
            return pack_json(pack, progress=progress)
        except BurnpackError as exc:
            return error_json(exc, "tensor_access")
