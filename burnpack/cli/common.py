"""What every ``burnpack`` subcommand shares: one error style and one rule for outputs.

Every failure is printed as ``burnpack: PATH: Kind: message`` — PATH the file the problem is
about (an output, not the input, when the output cannot be written; never a scratch file),
Kind the exception's name (Burn's variant for burnpack errors) — and ends the command with
exit status 1 (2 for usage errors). Library messages that give Python advice are replaced by
the command-line spelling.
"""

from __future__ import annotations

import argparse

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.display import printable, printable_lines
from ..errors import CommandError, OutputExistsError

__all__ = ["add_progress_option", "check_output", "describe_error", "missing_extra"]

# Scratch siblings written by burnpack.core.atomic: "<name>.<pid>-<n>.tmp".
_SCRATCH = re.compile(r"^(?P<name>.+)\.\d+-\d+\.tmp$")
# Optional dependencies → the extra that installs them.
_EXTRAS = {"torch": "torch", "hypothesis": "test", "atheris": "fuzz", "safetensors": "test"}


def check_output(given: str | os.PathLike[str], resolved: Path | None = None, *, overwrite: bool) -> Path:
    """The rule every writing command follows: an output is a file name, in an existing
    directory, and an existing file is replaced only with ``--overwrite``."""
    target = Path(resolved if resolved is not None else given)
    for candidate in (Path(given), target):
        if candidate.is_dir():
            raise CommandError(candidate, "IsADirectoryError", "is a directory; give the output's file name")
    parent = target.parent
    if not parent.is_dir():
        raise CommandError(parent, "FileNotFoundError", "no such directory for the output")
    if target.exists() and not overwrite:
        raise CommandError(target, "FileExistsError", "exists; use --overwrite to replace it")
    return target


def missing_extra(exc: ImportError) -> str | None:
    """``pip install 'burnpack[EXTRA]'`` advice when ``exc`` is a missing optional dependency."""
    name = (exc.name or "").partition(".")[0]
    if name not in _EXTRAS:
        return None
    if name == "atheris":
        return "atheris is not installed: pip install atheris (or use --engine hypothesis)"
    return f"{name} is not installed: pip install 'burnpack[{_EXTRAS[name]}]'"


def _path_of(exc: BaseException, default: str | None) -> str | None:
    filename = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
    blamed = getattr(exc, "burnpack_path", None)
    if isinstance(filename, (str, os.PathLike)):
        name = Path(filename).name
        scratch = _SCRATCH.match(name)
        if scratch is None:
            return str(filename)
        return str(Path(filename).with_name(scratch["name"]))
    return blamed or default


def _kind(exc: BaseException) -> str:
    """Burn's variant for burnpack errors, the exception's name otherwise; an operating-system
    error is named by its errno in every command (a missing file is a FileNotFoundError whether
    Burn's reader calls it an IoError or another reader an OSError)."""
    if isinstance(exc, OSError) and isinstance(exc.errno, int):
        return type(OSError(exc.errno, "")).__name__
    variant = getattr(exc, "variant", None)  # Burn's error kind; the base class has none of its own
    return variant if isinstance(variant, str) and variant != "BurnpackError" else type(exc).__name__


def _message(exc: BaseException, verbose: bool) -> str:
    if isinstance(exc, OutputExistsError):
        return str(exc).removeprefix(str(exc.filename)).strip().replace("pass overwrite=True", "use --overwrite")
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    summary = getattr(exc, "legacy_summary", None)
    if hasattr(exc, "unmatched"):
        return _unmatched(exc.unmatched)
    text = getattr(exc, "cli_message", None) or (str(exc) if summary is None or verbose else summary)
    if summary is not None and verbose:
        text += "\n  " + str(getattr(exc, "legacy_details", ""))
    text = cli_spelling(text)
    return text if verbose else text.splitlines()[0] if text else type(exc).__name__


# Python keyword spellings in library messages → the command line's.
_SPELLINGS = [
    (r"\blegacy_ok=True", "--legacy-ok"), (r"\boverwrite=True", "--overwrite"), (r"\ballow_unmatched=True", "--allow-unmatched"),
    (r"\ballow_partial=True", "--allow-partial"), (r"\bnpz_metadata=True", "--npz-metadata"), (r"\bdequantize=True", "--dequantize"), (r"\btype_rules=(?=')", "--type-rule "), (r"\bmodule_types\b", "--module-type"), (r"\btype_rules\b", "--type-rule"),
    (r"\binfer_types\b", "--infer-types"), (r"\bmap_indices_contiguous\b", "--map-indices-contiguous"),
    (r"\bskip_enum_variants\b", "--skip-enum-variants"), (r"\benum_variants\b", "--enum-variant"), (r"\bto_format\b", "--to"),
    (r"(?<![-\w])(adapter|remap|filter|exclude)=(?=')", r"--\1 "),
]  # fmt: skip
_FLAGS = {"module_types": "--module-type", "type_rules": "--type-rule", "enum_variants": "--enum-variant"}


def _unmatched(items: list[tuple[str, str, str]]) -> str:
    """``UnmatchedOptionError.unmatched`` in command-line spelling."""
    parts = []
    for option, value, why in items:
        flag = _FLAGS.get(option, "--" + option.replace("_", "-"))
        parts.append(f"{flag} {value}: {cli_spelling(why)}" if value else f"{flag}: {cli_spelling(why)}")
    return "options that change nothing: " + "; ".join(parts) + " (--allow-unmatched to go on)"


def cli_spelling(text: str) -> str:
    """A library message with its Python option spellings replaced by the command-line flags."""
    for pattern, flag in _SPELLINGS:
        text = re.sub(pattern, flag, text)
    return text


def describe_error(exc: BaseException, default_path: str | None, *, verbose: bool = False) -> tuple[str, int]:
    """The one line (more with ``verbose``) a command prints for ``exc``, and its exit status.
    Paths and messages are shown :func:`~burnpack.core.display.printable`: a name cannot forge a line."""
    if isinstance(exc, CommandError):
        where = f"{printable(exc.path)}: " if exc.path else ""
        return f"burnpack: {where}{exc.kind}: {printable(exc.message)}", exc.code
    cause = exc if isinstance(exc, ImportError) else exc.__cause__
    if isinstance(cause, ImportError) and missing_extra(cause):
        return f"burnpack: {missing_extra(cause)}", 1
    code = int(getattr(exc, "exit_code", 1))
    path = _path_of(exc, default_path) if code != 2 or isinstance(exc, OSError) else None  # usage errors are about no file
    where = f"{printable(path)}: " if path else ""
    line = f"burnpack: {where}{printable(_kind(exc))}: {printable_lines(_message(exc, verbose))}"
    report = getattr(exc, "report", None)
    if verbose and report is not None and hasattr(report, "summary"):
        line += "\n" + printable_lines(report.summary())
    return line, code


def first_path(args: argparse.Namespace, *names: str) -> str | None:
    """The first of ``names`` that ``args`` holds a value for (the path errors are about)."""
    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, (str, os.PathLike)):
            return str(value)
    return None


def add_progress_option(p: argparse.ArgumentParser) -> None:
    """``--progress auto|always|never`` (see :mod:`burnpack.core.progress`)."""
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress on stderr: auto = a bar for 64 MiB or more on a terminal; always = also as lines "
                        "when stderr is not a terminal; never")  # fmt: skip
