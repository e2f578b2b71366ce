"""What every ``burnpack`` subcommand shares: one error style and one rule for outputs.

Every failure is printed as ``burnpack: PATH: Kind: message`` — PATH the file the problem is
about (an output, not the input, when the output cannot be written; never a scratch file),
Kind the exception's name (Burn's variant for burnpack errors) — and ends the command with
exit status 1 (2 for usage errors). Library messages that give Python advice are replaced by
the command-line spelling.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core.display import printable, printable_lines
from ..core.progress import SETTINGS
from ..errors import CommandError, OutputExistsError

if TYPE_CHECKING:  # a type alias: the side-file reader (json, mmap) is not imported at start
    from ..core.sidefile import JSON

__all__ = ["add_output_options", "check_output", "describe_error", "missing_extra", "print_json", "progress_setting", "wrote"]

# Scratch siblings written by burnpack.core.atomic: "<name>.<pid>-<n>.tmp".
_SCRATCH = re.compile(r"^(?P<name>.+)\.\d+-\d+\.tmp$")
# Optional dependencies → what installs them: one of burnpack's extras, else the package itself.
_INSTALLS = {
    "torch": "'burnpack[torch]'", "fsspec": "'burnpack[remote]'", "aiohttp": "'burnpack[remote]'",
    "s3fs": "'burnpack[remote]'", "safetensors": "'burnpack[crosscheck]'", "hypothesis": "'burnpack[test]'",
    "gcsfs": "gcsfs", "huggingface_hub": "huggingface_hub", "atheris": "atheris",
}  # fmt: skip


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


def missing_extra(exc: BaseException) -> str | None:
    """``pip install 'burnpack[EXTRA]'`` advice when ``exc`` comes of a missing optional
    dependency: an ``ImportError`` naming one, or an error raised from one (fsspec's "Install
    gcsfs", a burnpack error that needs torch...)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        name = (getattr(cause, "name", None) or "").partition(".")[0] if isinstance(cause, ImportError) else ""
        if name in _INSTALLS:
            hint = " (or use --engine hypothesis)" if name == "atheris" else ""
            return f"{name} is not installed: pip install {_INSTALLS[name]}{hint}"
        cause = cause.__cause__ or cause.__context__
    return None


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
    (r"\ballow_partial=True", "--allow-partial"), (r"\bnpz_metadata=True", "--npz-metadata"), (r"\bdequantize=True", "--dequantize"), (r"\btype_rules=(?=')", "--type-rule "),
    (r"\bmodule_types=\{'([^']*)': '([^']*)'\}", r"--module-type '\1=\2'"), (r"\bmodule_types\b", "--module-type"), (r"\btype_rules\b", "--type-rule"),
    (r"\binfer_types\b", "--infer-types"), (r"\bbest_guess=True", "--best-guess"), (r"\bmap_indices_contiguous\b", "--map-indices-contiguous"),
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
    advice = missing_extra(exc) if isinstance(exc, ImportError) or isinstance(exc.__cause__, ImportError) else None
    if advice is not None:
        return f"burnpack: {advice}", 1
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


def add_output_options(
    p: argparse.ArgumentParser, *, progress: bool = False, json_help: str = "print the result as one JSON object instead of text"
) -> None:
    """``-q/--quiet`` and ``--json``, which mean the same in every command (and exclude each
    other); with ``progress``, ``--progress`` too (the commands that read or write tensor bytes in
    bulk; the command turns it into a setting with :func:`progress_setting`).

    ``-q`` is carried out by ``burnpack.cli.main`` for every command alike: nothing on stdout.
    """
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help=f"{json_help} (on stdout; errors still go to stderr)")
    group.add_argument("-q", "--quiet", action="store_true",
                       help="print nothing on stdout: the exit status says how it went, and errors still go to stderr")  # fmt: skip
    if progress:
        p.add_argument("--progress", choices=SETTINGS,
                       help="progress on stderr of the tensor bytes read or written: auto (the default) = a bar for "
                            "64 MiB or more on a terminal; always = also as lines when stderr is not a terminal; never")  # fmt: skip


def progress_setting(args: argparse.Namespace, *, idle: str | None = None) -> str:
    """The ``--progress`` setting a command was given.

    Args:
        args: The parsed command line (``add_output_options(progress=True)``).
        idle: Why the command, as called, reads and writes no tensor bytes (None when it does):
            then ``--progress`` would change nothing.

    Returns:
        ``auto``, ``always`` or ``never`` (``auto`` when not given).

    Raises:
        CommandError: ``--progress`` was given where ``idle`` says it changes nothing (a usage
            error, exit status 2).
    """
    if idle is not None and args.progress is not None:
        raise CommandError(None, "UsageError", f"--progress changes nothing here: {idle}", code=2)
    return str(args.progress or "auto")


def print_json(value: JSON, out: TextIO | None = None) -> None:
    """What ``--json`` prints, in every command: one JSON object (indented, text as it is)."""
    import json  # (paid by --json, not by every start)

    print(json.dumps(value, ensure_ascii=False, indent=1), file=sys.stdout if out is None else out)


def wrote(target: Path, size: int, what: str = "") -> str:
    """The summary line of a command that wrote one file: ``wrote out.bpk (2 tensors, 524 bytes)``,
    naming the file as written (after Burn's extension rule), shown :func:`printable`."""
    return f"wrote {printable(str(target))} ({what + ', ' if what else ''}{size:,} bytes)"
