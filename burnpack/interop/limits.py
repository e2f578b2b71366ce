"""The caps of the foreign-format readers, each a keyword parameter of the readers and converters.

A PyTorch pickle, a zip archive (``.pt``, ``.npz``), a shard folder's index and a DCP folder's
``.metadata`` are read within bounds that keep time and memory proportional to the bytes really
present (``docs/bounds.md``). Their defaults live here, in :class:`ReadLimits`; a caller lifts
one with the keyword of the same name (``convert(src, dst, max_pickle_depth=512)``,
``read_tensors``, ``read_pytorch``, ...), typed by :class:`ReadCaps`, and every refusal names the
keyword that lifts it. A format takes only the caps its reader uses (``Format.limits``); giving
another one is refused, as it would change nothing.

Bounds that are facts of a format rather than caps stay with the format: DEFLATE's largest
expansion (``archive.DEFLATE_MAX_RATIO``), safetensors' header bound (the safetensors crate's
``MAX_HEADER_SIZE``) and JSON's nesting limit (serde_json's, ``core.sidefile.JSON_MAX_DEPTH``).
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any, TypedDict, cast

from ..core.sidefile import SIDE_FILE_MAX_BYTES
from ..errors import OptionError

__all__ = ["DCP_LIMITS", "DEFAULT_LIMITS", "PICKLE_DEPTH_CEILING", "PICKLE_LIMITS", "ZIP_LIMITS", "ReadCaps", "ReadLimits", "ceiling",
           "parse_cap", "refuse_unused", "take_caps"]  # fmt: skip

PICKLE_DEPTH_CEILING = 512
"""The largest ``max_pickle_depth``. The readers walk a pickle's containers on a stack of their
own, but what they return goes to callers that recurse a Python frame per level (``repr``, ``==``,
``copy``, ``json``): Python's stack (1,000 frames by default) must hold that many with room for
theirs."""


def ceiling(name: str) -> int:
    """The largest value the cap ``name`` takes: :data:`PICKLE_DEPTH_CEILING` for the depth; for the
    byte counts and the ratio, the largest size Python indexes (``sys.maxsize``)."""
    return PICKLE_DEPTH_CEILING if name == "max_pickle_depth" else sys.maxsize


def parse_cap(name: str, text: str) -> int:
    """The value of the cap ``name`` written as ``text`` (``--limit NAME=N``): ASCII digits of a
    number no larger than :func:`ceiling`; anything else (a sign, spaces, other scripts' digits,
    thousands of digits) is an ``OptionError`` of one line."""
    shown = repr(text) if len(text) <= 32 else f"{text[:16]!r}... ({len(text)} characters)"
    if not (text.isascii() and text.isdigit()):
        raise OptionError(f"{name}={shown}: the cap is a whole number written with the digits 0-9")
    top = ceiling(name)
    if len(text.lstrip("0")) > len(str(top)) or int(text) > top:
        raise OptionError(f"{name}={shown}: more than the readers can honour (at most {top}{_WHY.get(name, '')})")
    return int(text)


_WHY = {"max_pickle_depth": ": printing, comparing or copying a result takes a Python frame a level, and Python's stack must hold them"}


class ReadCaps(TypedDict, total=False):
    """The keyword parameters that lift a reader's caps (see :class:`ReadLimits` for each)."""

    max_pickle_depth: int
    max_view_expansion: int
    max_inflate_bytes: int
    max_inflate_ratio: int
    max_index_bytes: int
    max_metadata_bytes: int


@dataclass(frozen=True)
class ReadLimits:
    """What the foreign-format readers refuse beyond; each field is the keyword that lifts it."""

    max_pickle_depth: int = 128
    """Containers nested in a pickle (``.pt``, DCP): deeper is refused as a likely cycle."""
    max_view_expansion: int = 64 << 20
    """Bytes that the C-order copies of views repeating their storage's elements (stride 0,
    overlapping strides) may take beyond the storages' own size."""
    max_inflate_bytes: int = 64 << 20
    """Bytes the compressed members of a zip archive (``.pt``, ``.npz``) may inflate to, besides
    ``max_inflate_ratio`` times the archive's size."""
    max_inflate_ratio: int = 32
    """Multiple of a zip archive's size its compressed members may inflate to in total, besides
    ``max_inflate_bytes``."""
    max_index_bytes: int = SIDE_FILE_MAX_BYTES
    """Size of a shard folder's ``*.index.json`` (a side file)."""
    max_metadata_bytes: int = 256 << 20
    """Size of a DCP folder's ``.metadata`` (a side file, read before it is unpickled)."""

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if type(value) is not int or value < 0:
                raise OptionError(f"{name} must be a non-negative int, not {value!r}")
            if value > ceiling(name):
                raise OptionError(f"{name}={value}: more than the readers can honour (at most {ceiling(name)}{_WHY.get(name, '')})")

    @classmethod
    def of(cls, caps: ReadCaps, used: tuple[str, ...] | None = None, what: str = "this reader") -> ReadLimits:
        """The limits with ``caps`` lifted; a cap outside ``used`` (when given) is refused,
        naming ``what`` does not use it."""
        unknown = sorted(set(caps) - set(cls.__dataclass_fields__))
        if unknown:
            raise OptionError(f"unknown read limit {unknown[0]!r}; the limits are {', '.join(cls.__dataclass_fields__)}")
        if used is not None:
            refuse_unused(frozenset(caps), used, what)
        return cls(**caps)

    def lift(self, name: str) -> str:
        """What a refusal says about the keyword that lifts it."""
        return f"the limit {name}={getattr(self, name)}; a larger {name}= lifts it"


def take_caps(options: dict[str, Any]) -> ReadCaps:
    """The read caps among a converter's keyword ``options``, taken out of them (the rest are
    the transformation's)."""
    return cast(ReadCaps, {name: options.pop(name) for name in ReadCaps.__annotations__ if name in options})


def refuse_unused(lifted: frozenset[str], used: tuple[str, ...], what: str) -> None:
    """An ``OptionError`` when a cap in ``lifted`` is not one of the ``used`` caps of ``what``:
    lifting it would change nothing."""
    unused = sorted(lifted - set(used))
    if unused:
        takes = ", ".join(used) if used else "none"
        raise OptionError(f"{unused[0]} changes nothing for {what} (the limits it takes: {takes})")


DEFAULT_LIMITS = ReadLimits()
"""The limits when a caller lifts none."""
ZIP_LIMITS = ("max_inflate_bytes", "max_inflate_ratio")
"""The caps of a zip archive's reader (``.npz``)."""
PICKLE_LIMITS = ("max_pickle_depth", "max_view_expansion", *ZIP_LIMITS)
"""The caps of a ``torch.save`` file's reader (zip, tar or legacy)."""
DCP_LIMITS = ("max_metadata_bytes", *PICKLE_LIMITS)
"""The caps of a DCP folder's reader (its records are ``torch.save`` zips)."""
