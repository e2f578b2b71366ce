"""Regular expressions given by the user (``--filter``, ``--exclude``, ``--remap``, module type
rules, quantization and parameter-group selections), compiled for RE2.

Burn matches these with Rust's ``regex`` crate, whose matching time is linear in the name's
length whatever the pattern; Python's ``re`` backtracks, and ``(.*)\\.(.*)\\.bias`` over one
dotted 2 KB name takes it tens of seconds. RE2 (``google-re2``) is linear as Rust's crate is and
reads the same syntax: ``(?P<name>...)`` and Rust's ``(?<name>...)`` groups, ``(?i)``/``(?m)``/``(?s)``
flags, ``\\pL``/``\\p{Greek}`` classes, ``[[:alpha:]]``. Python syntax that means one thing is
kept: ``\\Z`` (end of text) is read as ``\\z``. What differs from Python's ``re``:

* lookaround (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), backreferences (``\\1``, ``(?P=name)``),
  atomic groups and possessive repeats are refused, as Burn's ``regex`` crate refuses them;
* ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII classes (Python's and Rust's are Unicode; use
  ``\\p{Nd}``, ``\\pL`` for other scripts);
* a counted repeat is at most ``{1000}``, and verbose mode ``(?x)`` is refused (Rust has both).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidPattern

__all__ = ["Pattern", "check_text", "compile_pattern"]

Pattern = Any
"""A compiled pattern: ``search``, ``match``, ``fullmatch``, ``sub``, ``groups``, ``groupindex``
as ``re.Pattern`` has them (RE2's ``_Regexp``)."""


def compile_pattern(pattern: str, what: str = "regex") -> Pattern:
    """``pattern`` compiled for RE2 (linear-time matching); :class:`InvalidPattern` (its message
    naming ``what``: ``"invalid remap regex '(': missing ): ("``) when it is not a valid regex,
    or not text (:func:`check_text`)."""
    import re2

    check_text(pattern, what)
    options = re2.Options()
    options.log_errors = False  # the reason is in the exception, not on standard error
    try:
        return re2.compile(_python_spellings(pattern), options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidPattern(pattern, reason + _hint(pattern, reason), what) from None


def check_text(text: str, what: str = "regex") -> str:
    """``text`` when it is Unicode text, as RE2 (UTF-8) takes patterns and replacements; else
    :class:`InvalidPattern`. Python keeps a command-line byte that is not UTF-8 as a lone
    surrogate (U+DC80-U+DCFF), which no UTF-8 text holds."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        reason = f"character {exc.start} is not text (a lone surrogate, as a byte that is not UTF-8 becomes)"
        raise InvalidPattern(text, reason, what) from None
    return text


def _python_spellings(pattern: str) -> str:
    """Python-only escapes with one meaning, in RE2's spelling (``\\Z`` → ``\\z``)."""
    if "\\Z" not in pattern:
        return pattern
    out = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            out.append("\\z" if pattern[i + 1] == "Z" else pattern[i : i + 2])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def _hint(pattern: str, reason: str) -> str:
    """Why a pattern Python's ``re`` accepts is refused, when it uses what only backtracking does."""
    if "(?P=" in pattern or ("invalid escape sequence: \\" in reason and reason[-1:].isdigit()):
        return " (backreferences are not supported, as in Burn's regex crate)"
    if any(op in pattern for op in ("(?=", "(?!", "(?<=", "(?<!", "(?>")):
        return " (lookaround and atomic groups are not supported, as in Burn's regex crate)"
    return ""
