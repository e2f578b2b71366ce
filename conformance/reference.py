"""The reference implementation (``burnpack``) plugged into the suite.

``dump`` / ``write`` are burnpack's reader and writer in the in-process API's shape;
``decode_content`` is burnpack's CBOR decoder in the shape the expectation rules take;
``cross_check`` compares the declared expectations of every generated vector with what burnpack
does, so a generator mistake (or a burnpack bug) is caught before the corpus is written.
"""

from __future__ import annotations

import warnings
from typing import Any

import burnpack
from burnpack.dump import dump as _dump
from burnpack.dump import scalar_json
from burnpack.errors import LegacyFormatWarning, MetadataDeserializationError
from burnpack.metadata import decode_metadata
from burnpack.spec import bytes_from_spec

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


def cross_check(corpus: Any) -> list[str]:
    """Every disagreement between the corpus's declared expectations and burnpack."""
    from .corpus import expectation_of
    from .runner import check_reader_result, check_writer_result, writer_outcome_of

    problems = []
    for case in corpus.readers:
        if case.runtime:
            continue
        data, exp = expectation_of(case)
        for level in ("compatible", "strict"):
            ok, message, _ = check_reader_result(exp.level(level), exp.dump, dump(data, level))
            if not ok:
                problems.append(f"reader {case.id} [{level}]: {message}")
    for case in corpus.writers:
        outcome = writer_outcome_of(lambda spec: write(spec), case.spec)
        expected = next((r for r in corpus.readers if r.id == case.expected_reader), None)
        expected_bytes = expected.build()[0] if expected is not None else None
        ok, message, _ = check_writer_result(expected_bytes, (case.refusal,) if case.refusal else (), outcome)
        if not ok:
            problems.append(f"writer {case.id}: {message}")
    return problems


__all__ = ["burnpack", "cross_check", "decode_content", "dump", "write"]
