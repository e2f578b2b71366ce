"""Errors of the record layer, in the burnpack exception family.

Burn's ``RecordError`` has two variants (burn-core ``store/mod.rs``): ``Io(String)`` wraps a
``burn_pack::Error`` and ``Validation(String)`` reports a load that did not fit the module. Here
an ``Io`` error *is* the format-layer exception (``InvalidMagicNumber``, ``IoError``, ...), raised
unchanged, and ``Validation`` is :class:`RecordValidationError`. Burn panics in a few places where
a Python caller deserves an exception (an optimizer tensor without ``param_id``, a cast a value
does not survive, a state tensor whose rank contradicts ``__rank``); those are the other
:class:`RecordError` subclasses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BurnpackError

if TYPE_CHECKING:  # pragma: no cover
    from .module import ApplyReport


class RecordError(BurnpackError):
    """Base class of every record-layer error (a ``BurnpackError``)."""

    variant = "RecordError"
    default_message = "record error"

    @property
    def display(self) -> str:
        """Burn's ``Display`` of the matching ``RecordError`` (or the plain message)."""
        return self.payload if self.payload is not None else self.default_message


class RecordValidationError(RecordError):
    """Burn's ``RecordError::Validation``: a record did not fit its target.

    ``payload`` is Burn's exact text (``"Missing tensors: [\\"fc.bias\\"]"``, ``"Unused tensors:
    [...]"`` or ``"Apply errors: [...]"``), ``kind`` says which check failed (``"apply"``,
    ``"missing"``, ``"unused"``) and ``report`` holds everything the load found, with
    "did you mean" suggestions for missing paths.
    """

    variant = "Validation"

    def __init__(self, payload: str, *, kind: str, report: ApplyReport | None = None) -> None:
        self.kind = kind
        self.report = report
        super().__init__(payload)
        hints = report.hint_lines() if report is not None and kind == "missing" else []
        if hints:
            self.args = (payload + "\n" + "\n".join(hints),)

    @property
    def display(self) -> str:
        return f"Record validation error: {self.payload}"


class MissingParamIdError(RecordError):
    """An optimizer record tensor has no ``param_id`` (Burn panics on load)."""

    variant = "MissingParamId"
    default_message = "Optimizer record tensors should carry a parameter id."


class StateRankError(RecordError):
    """A state tensor's rank differs from its parameter's ``__rank`` (Burn panics on load)."""

    variant = "StateRank"


class RecordCastError(RecordError):
    """A value cannot be represented in the dtype a load casts it to (Burn panics)."""

    variant = "Cast"


def io_display(error: BaseException) -> str:
    """How Burn would show ``error`` as a ``RecordError``: ``"Record I/O error: ..."`` for format errors."""
    if isinstance(error, RecordError):
        return error.display
    if isinstance(error, BurnpackError):
        return f"Record I/O error: {error.display}"
    return str(error)

