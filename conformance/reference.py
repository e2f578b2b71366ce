"""The reference implementation (``burnpack``) plugged into the suite.

``dump`` / ``write`` are burnpack's reader and writer in the in-process API's shape;
``decode_content`` is burnpack's CBOR decoder in the shape the expectation rules take;
``conformance.crosscheck`` compares the corpus's declared expectations with what they do.
"""

from __future__ import annotations

import warnings
from typing import Any

import burnpack
from burnpack.core.dump import dump as _dump
from burnpack.core.dump import scalar_json
from burnpack.errors import LegacyFormatWarning, MetadataDeserializationError
from burnpack.core.metadata import decode_metadata
from burnpack.core.spec import bytes_from_spec

from .model import Content, Desc
from .rules import CborRejected


def decode_content(blob: bytes) -> Content:
    """burnpack's decoding of a metadata item, as rules input."""
    try:
        meta = decode_metadata(blob)
    except MetadataDeserializationError as exc:
        raise CborRejected(str(exc)) from None
    return Content(
        {name: Desc(d.dtype.to_serde(), list(d.shape), tuple(d.data_offsets), d.param_id) for name, d in meta.tensors.items()},
        dict(meta.metadata),
        {name: scalar_json(s) for name, s in meta.scalars.items()},
    )


def dump(source: Any, level: str = "compatible") -> dict:
    """burnpack's ``dump --json`` object for a path or bytes, at a level."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyFormatWarning)
        return _dump(source if isinstance(source, (bytes, bytearray, memoryview)) else str(source), strict=level == "strict")


def write(spec: dict) -> bytes:
    """burnpack's writer on a spec; refusals raise ``burnpack.BurnpackError``."""
    return bytes_from_spec(spec)


__all__ = ["burnpack", "decode_content", "dump", "write"]
