"""Text from a file, made safe to show on a terminal: the one escaping rule of every human output.

Tensor names, metadata keys and values, shard and file names are data. Shown raw, a name could
clear the screen (CSI), retitle the terminal (OSC), return the cursor (``\\r``), start a forged
row (``\\n``) or reverse the text around it (bidi overrides). :func:`printable` shows every
character Python does not call printable — controls, format characters (bidi overrides and
isolates, zero-width joiners), line and paragraph separators, unassigned and private-use code
points — as a Python escape (``\\x1b``, ``\\n``, ``\\u202e``). JSON output keeps the exact text.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["plural", "printable", "printable_lines"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    if ch.isprintable():
        return ch
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object) -> str:
    """``str(text)`` with every non-printable character escaped (the text stays one line)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(map(_escape, text))


def printable_lines(lines: str | Iterable[object]) -> str:
    """Lines joined by newlines, each escaped by :func:`printable`: ``lines`` is an iterable of
    lines, or a string whose ``\\n`` are the line breaks (its other controls are escaped)."""
    parts = lines.split("\n") if isinstance(lines, str) else lines
    return "\n".join(printable(line) for line in parts)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 tensor``, ``2 tensors``, ``1 metadata entry``, ``3 metadata entries``."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"
