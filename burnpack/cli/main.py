"""The ``burnpack`` command: inspect, dump, validate, repack, pack, diff, view, convert, checkpoints.

Subcommands register themselves through their module's ``register(subparsers)`` and set a
``handler(args) -> exit code``. ``main`` gives every command the same behaviour: failures — a
``BurnpackError``, an ``OSError`` or a ``CommandError`` — as one line ``burnpack: PATH: Kind:
message`` (exit 1; 2 for usage errors), any other exception as the traceback of a bug, Ctrl-C as
one line and exit 130 (atomic writes leave nothing behind), a closed output pipe ends quietly, and a missing
optional dependency names the extra that installs it. A command imports what it needs when it
runs, so that ``burnpack --version`` or ``inspect`` of a small file start about as fast as numpy.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from .. import __version__
from ..codec._kernels import KERNELS
from . import diff as diff_cmd
from . import files as files_cmd
from . import pack as pack_cmd
from . import view as view_cmd
from .common import describe_error, first_path, missing_extra
from ..core.display import printable_lines
from ..errors import BurnpackError, CommandError, LegacyFormatWarning
from . import interop as interop_cli
from . import records as records_cli

# The argument each command's errors are about when the error itself names no file.
_PATH_ARGUMENTS = ("file", "input", "spec", "a", "directory")

def version_text() -> str:
    """The version and which optional kernels are built, found by their files: importing them
    would import their packages (numpy among them), and ``--version`` starts at once."""
    root = Path(__file__).resolve().parent.parent

    def built(module: str) -> bool:
        stem = root.joinpath(*module.split(".")[1:])
        return any(stem.with_name(stem.name + suffix).is_file() for suffix in EXTENSION_SUFFIXES)

    missing = [what for module, what in KERNELS.items() if not built(module)]
    if not missing:
        kernels = "every compiled kernel built"
    elif len(missing) == len(KERNELS):
        kernels = "no compiled kernel built: Python and numpy do all the work"
    else:
        kernels = f"compiled kernels not built: {', '.join(missing)} (Python and numpy do that work)"
    return f"burnpack {__version__} ({kernels})"


class _Version(argparse.Action):
    """``--version``, worked out only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="burnpack", description="Inspect, check, convert and rewrite Burn .bpk files.")
    parser.add_argument("--version", action=_Version, help="the version, and which optional compiled kernels are built")
    parser.add_argument("-v", "--verbose", action="store_true", help="full error details (legacy diagnoses, reports)")
    sub = parser.add_subparsers(dest="command", required=True)
    files_cmd.register(sub)
    pack_cmd.register(sub)
    diff_cmd.register(sub)
    view_cmd.register(sub)
    records_cli.register(sub)
    interop_cli.register(sub)
    for command in sub.choices.values():  # --verbose also after the command name
        command.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="full error details")
    return parser


def _show_warning(message: Any, category: type[Warning], *rest: Any, verbose: bool = False) -> None:
    summary = getattr(message, "legacy_summary", None) or str(message)
    details = getattr(message, "legacy_details", None)
    text = summary.replace("legacy_ok=True", "--legacy-ok")
    print(printable_lines([f"burnpack: warning: {text}"] + ([f"  {details}"] if verbose and details else [])), file=sys.stderr)


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's final flush is silent."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


INTERRUPTED = "burnpack: interrupted"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; Ctrl-C at any point — while modules load, too — is one line and exit 130."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    verbose = args.verbose
    warnings.simplefilter("always", LegacyFormatWarning)
    warnings.showwarning = lambda message, category, *rest: _show_warning(message, category, verbose=verbose)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly, as Unix tools do
        _quiet_stdout()
        return 1
    except (BurnpackError, OSError, CommandError, ImportError) as exc:
        if isinstance(exc, ImportError) and missing_extra(exc) is None:
            raise  # not a missing optional dependency: a bug, with its traceback
        line, code = describe_error(exc, first_path(args, *_PATH_ARGUMENTS), verbose=verbose)
        print(line, file=sys.stderr)
        return code
