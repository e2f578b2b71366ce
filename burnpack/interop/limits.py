"""The caps of the foreign-format readers, each a keyword parameter of the readers and converters.

A PyTorch pickle, a zip archive (``.pt``, ``.npz``), a shard folder's index and a DCP folder's
``.metadata`` are read within bounds that keep time and memory proportional to the bytes really
present (``docs/bounds.md``). Their defaults live here, in :class:`ReadLimits` (one kind of
:class:`burnpack.core.limits.Limits`, as ``load``'s are); a caller lifts one with the keyword of
the same name (``convert(src, dst, max_pickle_depth=512)``, ``read_tensors``, ``read_pytorch``,
...), typed by :class:`ReadCaps`, and every refusal names the keyword that lifts it. A format
takes only the caps its reader uses (``Format.limits``); giving another one is refused, as it
would change nothing.

Bounds that are facts of a format rather than caps stay with the format: DEFLATE's largest
expansion (``archive.DEFLATE_MAX_RATIO``), safetensors' header bound (the safetensors crate's
``MAX_HEADER_SIZE``) and JSON's nesting limit (serde_json's, ``core.sidefile.JSON_MAX_DEPTH``).
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from ..core.limits import Limits, refuse_unused
from ..core.sidefile import SIDE_FILE_MAX_BYTES

__all__ = ["DCP_LIMITS", "DEFAULT_LIMITS", "PICKLE_DEPTH_CEILING", "PICKLE_LIMITS", "ZIP_LIMITS", "ReadCaps", "ReadLimits", "ceiling",
           "parse_cap", "refuse_unused", "take_caps"]  # fmt: skip

PICKLE_DEPTH_CEILING = 512
"""The largest ``max_pickle_depth``. The readers walk a pickle's containers on a stack of their
own, but what they return goes to callers that recurse a Python frame per level (``repr``, ``==``,
``copy``, ``json``): Python's stack (1,000 frames by default) must hold that many with room for
theirs."""


def ceiling(name: str) -> int:
    """The largest value the cap ``name`` takes (:meth:`ReadLimits.ceiling`)."""
    return ReadLimits.ceiling(name)


def parse_cap(name: str, text: str) -> int:
    """The value of the cap ``name`` written as ``text`` (``--limit NAME=N``: :meth:`ReadLimits.parse`)."""
    return ReadLimits.parse(name, text)


class ReadCaps(TypedDict, total=False):
    """The keyword parameters that lift a reader's caps (see :class:`ReadLimits` for each)."""

    max_pickle_depth: int
    max_view_expansion: int
    max_inflate_bytes: int
    max_inflate_ratio: int
    max_index_bytes: int
    max_metadata_bytes: int


class ReadLimits(Limits):
    """What the foreign-format readers refuse beyond; each field is the keyword that lifts it."""

    CEILINGS = {"max_pickle_depth": (PICKLE_DEPTH_CEILING, ": printing, comparing or copying a result takes a Python frame a "
                                                           "level, and Python's stack must hold them")}  # fmt: skip

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


def take_caps(options: dict[str, Any]) -> ReadCaps:
    """The read caps among a converter's keyword ``options``, taken out of them (the rest are
    the transformation's)."""
    return cast(ReadCaps, {name: options.pop(name) for name in ReadCaps.__annotations__ if name in options})


DEFAULT_LIMITS = ReadLimits()
"""The limits when a caller lifts none."""
ZIP_LIMITS = ("max_inflate_bytes", "max_inflate_ratio")
"""The caps of a zip archive's reader (``.npz``)."""
PICKLE_LIMITS = ("max_pickle_depth", "max_view_expansion", *ZIP_LIMITS)
"""The caps of a ``torch.save`` file's reader (zip, tar or legacy)."""
DCP_LIMITS = ("max_metadata_bytes", *PICKLE_LIMITS)
"""The caps of a DCP folder's reader (its records are ``torch.save`` zips)."""
