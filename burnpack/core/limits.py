"""Limits: what a reader refuses beyond, each lifted by the keyword parameter of its name.

One concept for every reader: ``load``'s limits (:class:`LoadLimits`, Burn's values by default,
from ``schema/``), the foreign-format readers' caps (``burnpack.interop.limits.ReadLimits``) and
any other bound a caller may lift (``infer_scheduler(max_children=)``). Each is a frozen
:class:`Limits` whose fields are non-negative ints; a value that is not one, a limit a reader
does not have, or one it does not use is an :class:`~burnpack.errors.OptionError`; and every
refusal names the keyword that lifts it in one wording, :func:`lift`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from ..codec._generated.layout import MAX_METADATA_SIZE, MAX_TENSOR_COUNT, MAX_TENSOR_SIZE
from ..errors import OptionError

__all__ = ["LoadLimits", "Limits", "lift", "refuse_unused"]

L = TypeVar("L", bound="Limits")


def lift(name: str, value: int) -> str:
    """What a refusal says about the keyword that lifts the limit ``name`` (now ``value``)."""
    return f"the limit {name}={value}; a larger {name}= lifts it"


@dataclasses.dataclass(frozen=True)
class Limits:
    """Base of every reader's limits: each field a non-negative int, named as the keyword that
    lifts it."""

    _names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._names = tuple(name for name in getattr(cls, "__annotations__", {}) if not name.startswith("_"))

    def __post_init__(self) -> None:
        for name in self._names:
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise OptionError(f"{name} must be a non-negative int, not {value!r}")

    @classmethod
    def of(cls: type[L], given: Mapping[str, Any], used: tuple[str, ...] | None = None, what: str = "this reader") -> L:
        """The limits with those ``given`` lifted; one this class does not have is refused, and
        so is one outside ``used`` (when given): ``what`` does not use it."""
        unknown = sorted(set(given) - set(cls._names))
        if unknown:
            raise OptionError(f"unknown limit {unknown[0]!r}; the limits are {', '.join(cls._names)}")
        if used is not None:
            refuse_unused(frozenset(given), used, what)
        return cls(**given)

    def lift(self, name: str) -> str:
        """What a refusal says about the keyword that lifts the limit ``name``."""
        return lift(name, getattr(self, name))


def refuse_unused(lifted: frozenset[str], used: tuple[str, ...], what: str) -> None:
    """An ``OptionError`` when a limit in ``lifted`` is not one of the ``used`` limits of ``what``:
    lifting it would change nothing."""
    unused = sorted(lifted - set(used))
    if unused:
        takes = ", ".join(used) if used else "none"
        raise OptionError(f"{unused[0]} changes nothing for {what} (the limits it takes: {takes})")


@dataclasses.dataclass(frozen=True)
class LoadLimits(Limits):
    """What ``load`` refuses beyond, each a keyword of ``load``; the defaults are Burn's."""

    max_metadata_size: int = MAX_METADATA_SIZE
    max_tensors: int = MAX_TENSOR_COUNT
    max_tensor_size: int = MAX_TENSOR_SIZE
