"""Limits: what a reader refuses beyond, each lifted by the keyword parameter of its name.

One concept for every reader: ``load``'s limits (:class:`LoadLimits`, Burn's values by default,
from ``schema/``), the foreign-format readers' caps (``burnpack.interop.limits.ReadLimits``) and
any other bound a caller may lift (``infer_scheduler(max_children=)``). Each is a frozen
:class:`Limits` whose fields are non-negative ints; a value that is not one, a limit a reader
does not have, one it does not use, or one above what the reader can honour (its ``CEILINGS``)
is an :class:`~burnpack.errors.OptionError`; and every refusal names the keyword that lifts it
in one wording, :func:`lift`.

A :class:`Limits` is a frozen record as a frozen dataclass is, built without ``dataclasses``:
``load``'s imports stay what listing a pack needs (``dataclasses`` brings ``inspect``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar, dataclass_transform

from ..codec._generated.layout import MAX_METADATA_SIZE, MAX_TENSOR_COUNT, MAX_TENSOR_SIZE
from ..errors import OptionError

__all__ = ["LoadLimits", "Limits", "lift", "refuse_unused"]

L = TypeVar("L", bound="Limits")


def lift(name: str, value: int) -> str:
    """What a refusal says about the keyword that lifts the limit ``name`` (now ``value``)."""
    return f"the limit {name}={value}; a larger {name}= lifts it"


@dataclass_transform(frozen_default=True)
class Limits:
    """Base of every reader's limits: each field a non-negative int, named as the keyword that
    lifts it. A subclass declares its limits as annotated class attributes with their defaults,
    as a frozen dataclass does, and is one: made by position or keyword, compared and hashed by
    value, never changed."""

    CEILINGS: ClassVar[Mapping[str, tuple[int, str]]] = {}
    """A limit's largest value, where the reader cannot honour more than that (name → the value
    and why); any other limit goes up to the largest size Python indexes (``sys.maxsize``)."""
    _NAMES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = vars(cls).get("__annotations__", {})
        cls._NAMES = cls._NAMES + tuple(name for name, kind in declared.items() if "ClassVar" not in str(kind))

    def __init__(self, *values: int, **given: int) -> None:
        names = self.names()
        if len(values) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} limits, not {len(values)}")
        chosen = dict(zip(names, values))
        for name, value in given.items():
            if name not in names or name in chosen:
                raise TypeError(f"{type(self).__name__} got {'an unknown' if name not in names else 'a second'} limit {name!r}")
            chosen[name] = value
        for name in names:
            object.__setattr__(self, name, chosen.get(name, getattr(type(self), name)))
        self.__post_init__()

    def _values(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in self.names())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to limit {name!r}: limits are frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete limit {name!r}: limits are frozen")

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if type(other) is type(self) else NotImplemented  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={value!r}' for name, value in zip(self.names(), self._values()))})"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The limits, in declaration order."""
        return cls._NAMES

    @classmethod
    def ceiling(cls, name: str) -> int:
        """The largest value the limit ``name`` takes."""
        return cls.CEILINGS.get(name, (sys.maxsize, ""))[0]

    @classmethod
    def _too_large(cls, name: str, shown: object) -> OptionError:
        why = cls.CEILINGS.get(name, (0, ""))[1]
        return OptionError(f"{name}={shown}: more than the readers can honour (at most {cls.ceiling(name)}{why})")

    def __post_init__(self) -> None:
        for name in self.names():
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise OptionError(f"{name} must be a non-negative int, not {value!r}")
            if value > self.ceiling(name):
                raise self._too_large(name, value)

    @classmethod
    def parse(cls, name: str, text: str) -> int:
        """The value of the limit ``name`` written as ``text`` (``--limit NAME=N``): ASCII digits
        of a number no larger than its ceiling; anything else (a sign, spaces, other scripts'
        digits, thousands of digits) is an ``OptionError`` of one line."""
        shown = repr(text) if len(text) <= 32 else f"{text[:16]!r}... ({len(text)} characters)"
        if not (text.isascii() and text.isdigit()):
            raise OptionError(f"{name}={shown}: the cap is a whole number written with the digits 0-9")
        top = cls.ceiling(name)
        if len(text.lstrip("0")) > len(str(top)) or int(text) > top:
            raise cls._too_large(name, shown)
        return int(text)

    @classmethod
    def of(cls: type[L], given: Mapping[str, Any], used: tuple[str, ...] | None = None, what: str = "this reader") -> L:
        """The limits with those ``given`` lifted; one this class does not have is refused, and
        so is one outside ``used`` (when given): ``what`` does not use it."""
        unknown = sorted(set(given) - set(cls.names()))
        if unknown:
            raise OptionError(f"unknown limit {unknown[0]!r}; the limits are {', '.join(cls.names())}")
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


class LoadLimits(Limits):
    """What ``load`` refuses beyond, each a keyword of ``load``; the defaults are Burn's."""

    max_metadata_size: int = MAX_METADATA_SIZE
    max_tensors: int = MAX_TENSOR_COUNT
    max_tensor_size: int = MAX_TENSOR_SIZE
