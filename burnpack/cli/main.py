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
import contextlib
import os
import re
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, cast

from .. import __version__
from ..codec._kernels import KERNELS, kernel_states
from . import diff as diff_cmd
from . import files as files_cmd
from . import pack as pack_cmd
from . import view as view_cmd
from .common import describe_error, first_path, missing_extra
from ..core.display import printable_lines
from ..errors import BurnpackError, CommandError, LegacyFormatWarning, Terminated, interrupt_behind
from . import interop as interop_cli
from . import records as records_cli

# The argument each command's errors are about when the error itself names no file.
_PATH_ARGUMENTS = ("file", "input", "spec", "a", "directory")

def version_text() -> str:
    """The version and which optional kernels are used, by the rule that decides it
    (``_kernels.kernel_states``: built from this version's sources), without importing numpy."""
    states = kernel_states()
    missing = [what for module, (what, _) in KERNELS.items() if states[module] == "not built"]
    stale = [what for module, (what, _) in KERNELS.items() if states[module] == "stale"]
    if not missing and not stale:
        kernels = "every compiled kernel built"
    elif len(missing) == len(KERNELS):
        kernels = "no compiled kernel built: Python and numpy do all the work"
    else:
        parts = [f"compiled kernels not built: {', '.join(missing)}"] if missing else []
        if stale:
            parts.append(f"compiled kernels built from other sources, not used until rebuilt: {', '.join(stale)}")
        kernels = "; ".join(parts) + " (Python and numpy do that work)"
    return f"burnpack {__version__} ({kernels})"


class _Version(argparse.Action):
    """``--version``, worked out only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, the width found as ``shutil.get_terminal_size`` finds it without
    importing ``shutil`` (and the compression modules it loads) at every start."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None) -> None:
        if width is None:
            try:
                width = int(os.environ["COLUMNS"])
            except (KeyError, ValueError):
                try:
                    width = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 80
                except (AttributeError, ValueError, OSError):
                    width = 80
            width = max(width, 1) - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class CommandParser(argparse.ArgumentParser):
    """``burnpack``'s parser and every subcommand's: an option is written in full (``--tre`` is
    not taken for ``--tree``), and a mistyped option or command is answered with the closest
    one. argparse makes each subcommand's parser of its parent's class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        choice = re.match(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)$", message)
        if choice is not None:
            offered = re.findall(r"'([^']*)'", choice[3])
            message += _did_you_mean(choice[2], offered, quote=True)
        super().error(message)

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """Exit 2 naming the arguments nobody took, each option with its closest spelling."""
        options = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
        hints = "".join(_did_you_mean(extra.partition("=")[0], options) for extra in extras if extra.startswith("--"))
        self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")


def _did_you_mean(given: str, offered: Sequence[str], *, quote: bool = False) -> str:
    import difflib

    close = difflib.get_close_matches(given, offered, n=1, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {close[0]!r}?)" if quote else f" (did you mean {close[0]}?)"


class _Unbuilt:
    """The parser of a command that is not being run: the options its module adds go nowhere
    (the command's name and help, which list it, are kept by the subcommands' action), so that a
    start builds the options of one command instead of every command's."""

    def __init__(self, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self._nothing

    def _nothing(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self


_EVERY_COMMAND = None


def _parser(argv: Sequence[str] | None = _EVERY_COMMAND) -> CommandParser:
    """The command line's parser; given ``argv``, with the options of only the command it names."""
    building = None if argv is None else next((word for word in argv if not word.startswith("-")), "")

    def command_parser(**kwargs: Any) -> CommandParser | _Unbuilt:
        name = kwargs["prog"].rpartition(" ")[2]
        return CommandParser(**kwargs) if building in (None, name) else _Unbuilt()

    parser = CommandParser(prog="burnpack", description="Inspect, check, convert and rewrite Burn .bpk files.")
    parser.add_argument("--version", action=_Version, help="the version, and which optional compiled kernels are built")
    parser.add_argument("-v", "--verbose", action="store_true", help="full error details (legacy diagnoses, reports)")
    # a factory where argparse's stubs name a class: it is called as the class would be
    sub = parser.add_subparsers(dest="command", required=True, parser_class=cast(type[CommandParser], command_parser))
    for module in (files_cmd, pack_cmd, diff_cmd, view_cmd, records_cli, interop_cli):
        module.register(sub)
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


@contextlib.contextmanager
def _stdout_for(args: argparse.Namespace) -> Iterator[None]:
    """``-q``, for every command alike: what the command prints on stdout goes nowhere."""
    if not getattr(args, "quiet", False):
        yield
        return
    with open(os.devnull, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        yield


INTERRUPTED = "burnpack: interrupted"
TERMINATED = "burnpack: terminated"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Ctrl-C at any point — while modules load, too — is one line and exit
    130; SIGTERM is one line and exit 143 (128 + 15), after the same clean-up: outputs being
    written are removed."""
    try:
        with _terminate_as_interrupt():
            return _main(argv)
    except Terminated:
        print(TERMINATED, file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`~burnpack.errors.Terminated` where the
    command is, instead of ending the process on the spot (which would leave scratch files)."""

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    try:
        before = signal.signal(signal.SIGTERM, terminate)
    except (ValueError, AttributeError):  # not the main thread, or no SIGTERM here: left as it is
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; an argument no parser took is refused by the command it was given to."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(argv)
    args, extras = parser.parse_known_args(argv)
    if extras:
        chosen: argparse.ArgumentParser = parser
        for dest in ("command", "checkpoint_command"):  # the deepest subcommand given
            sub = next((a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)), None)
            if sub is None or getattr(args, dest, None) not in sub.choices:
                break
            chosen = sub.choices[getattr(args, dest)]
        assert isinstance(chosen, CommandParser)
        chosen.unrecognized(extras)
    return args


def _main(argv: Sequence[str] | None) -> int:
    args = _parse(argv)
    verbose = args.verbose
    warnings.simplefilter("always", LegacyFormatWarning)
    warnings.showwarning = lambda message, category, *rest: _show_warning(message, category, verbose=verbose)
    try:
        with _stdout_for(args):
            return int(args.handler(args))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # an error raised while an interrupt unwinds is that interrupt
        interrupt = interrupt_behind(exc)
        if interrupt is not None:
            raise interrupt from None
        return _failure(exc, args)


def _failure(exc: Exception, args: argparse.Namespace) -> int:
    """The one line of a failure, and its exit status; a bug is re-raised with its traceback."""
    if isinstance(exc, BrokenPipeError):  # output piped into e.g. `head`: stop quietly, as Unix tools do
        _quiet_stdout()
        return 1
    if not isinstance(exc, (BurnpackError, OSError, CommandError)) and not (isinstance(exc, ImportError) and missing_extra(exc)):
        raise exc  # not a failure of the input or a missing optional dependency: a bug
    line, code = describe_error(exc, first_path(args, *_PATH_ARGUMENTS), verbose=args.verbose)
    print(line, file=sys.stderr)
    return code
