"""What every ``burnpack`` subcommand shares: one error style and one rule for outputs.

Every failure is printed as ``burnpack: PATH: Kind: message`` — PATH the file the problem is
about (an output, not the input, when the output cannot be written; never a scratch file),
Kind the exception's name (Burn's variant for burnpack errors) — and ends the command with
exit status 1 (2 for usage errors). Library messages that give Python advice are replaced by
the command-line spelling.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["CommandError", "add_progress_option", "blame", "check_output", "describe_error", "missing_extra"]

# Scratch siblings written by burnpack.atomic: "<name>.<pid>-<n>.tmp".
_SCRATCH = re.compile(r"^(?P<name>.+)\.\d+-\d+\.tmp$")
# Optional dependencies → the extra that installs them.
_EXTRAS = {"torch": "torch", "hypothesis": "test", "atheris": "fuzz", "safetensors": "test"}


class CommandError(Exception):
    """A failure reported as ``burnpack: PATH: Kind: message`` with exit status ``code``."""

    def __init__(self, path: str | os.PathLike[str] | None, kind: str, message: str, *, code: int = 1) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.kind = kind
        self.message = message
        self.code = code


@contextlib.contextmanager
def blame(path: str | os.PathLike[str]) -> Iterator[None]:
    """Failures inside the block are about ``path`` unless they already name a file."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "burnpack_path", None) is None:
            exc.burnpack_path = str(path)  # type: ignore[attr-defined]
        raise


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
    variant = getattr(exc, "variant", None)
    return variant if isinstance(variant, str) else type(exc).__name__


def _message(exc: BaseException, verbose: bool) -> str:
    from ..interop.formats import OutputExistsError

    if isinstance(exc, OutputExistsError):
        return str(exc).removeprefix(str(exc.filename)).strip().replace("pass overwrite=True", "use --overwrite")
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    summary = getattr(exc, "legacy_summary", None)
    text = getattr(exc, "cli_message", None) or (str(exc) if summary is None or verbose else summary)
    if summary is not None and verbose:
        text += "\n  " + str(getattr(exc, "legacy_details", ""))
    text = text.replace("legacy_ok=True", "--legacy-ok").replace("overwrite=True", "--overwrite")
    return text if verbose else text.splitlines()[0] if text else type(exc).__name__


def describe_error(exc: BaseException, default_path: str | None, *, verbose: bool = False) -> tuple[str, int]:
    """The one line (more with ``verbose``) a command prints for ``exc``, and its exit status."""
    if isinstance(exc, CommandError):
        where = f"{exc.path}: " if exc.path else ""
        return f"burnpack: {where}{exc.kind}: {exc.message}", exc.code
    if isinstance(exc, ImportError) and missing_extra(exc):
        return f"burnpack: {missing_extra(exc)}", 1
    path = _path_of(exc, default_path)
    where = f"{path}: " if path else ""
    code = int(getattr(exc, "exit_code", 1))
    line = f"burnpack: {where}{_kind(exc)}: {_message(exc, verbose)}"
    report = getattr(exc, "report", None)
    if verbose and report is not None and hasattr(report, "summary"):
        line += "\n" + report.summary()
    return line, code


def first_path(args: Any, *names: str) -> str | None:
    """The first of ``names`` that ``args`` holds a value for (the path errors are about)."""
    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, (str, os.PathLike)):
            return str(value)
    return None


def add_progress_option(p: Any) -> None:
    """``--progress auto|always|never`` (see :mod:`burnpack.progress`)."""
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress on stderr: auto = a bar for 64 MiB or more on a terminal; always = also as lines "
                        "when stderr is not a terminal; never")  # fmt: skip
