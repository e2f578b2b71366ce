"""``burnpack diff A B``: compare two files of any supported format by content; ``--layout``
also compares how two packs are written (header, padding, offsets, trailing bytes, encoding),
``--provenance`` who wrote them (the ``format``/``producer``/``version`` metadata, otherwise
reported apart)."""

from __future__ import annotations

import argparse
import math
import sys

from ..errors import BurnpackError, CommandError
from .common import add_output_options, describe_error, print_json, progress_setting

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``diff`` subcommand to ``burnpack``'s argument parser."""
    p = sub.add_parser(
        "diff",
        help="compare two inputs of any format convert reads (files, shard or DCP folders, URLs) by tensor content, "
        "metadata and scalars (exit 0 when identical)",
    )
    p.add_argument("a", help="the first input")
    p.add_argument("b", help="the second input")
    add_output_options(p, progress=True, json_help="print the differences as one JSON object")
    p.add_argument("--layout", action="store_true",
                   help="also compare how two .bpk files are written: header version, metadata size and encoding, "
                        "offsets, data order, padding, trailing bytes")  # fmt: skip
    p.add_argument("--provenance", action="store_true",
                   help="also count differences in the metadata saying who wrote each file (format, producer, version), "
                        "which are otherwise reported apart and leave the exit status alone")  # fmt: skip
    p.add_argument("--atol", type=float, default=0.0,
                   help="elements within this absolute difference count as equal (with --rtol: atol + rtol * max(|a|, |b|))")  # fmt: skip
    p.add_argument("--rtol", type=float, default=0.0, help="elements within this difference relative to max(|a|, |b|) count as equal")
    p.set_defaults(handler=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    """Exit 0 when identical, 1 when different; unreadable files are errors (exit 2)."""
    from ..core.diff import PackDiff, compare_layout, diff_packs
    from ..core.reader import Pack
    from ..interop.inputs import open_input

    for name in ("atol", "rtol"):
        value = getattr(args, name)
        if not (value >= 0 and math.isfinite(value)):
            raise CommandError(None, "UsageError", f"--{name} is a distance: a finite number of at least 0, got {value}", code=2)
    try:
        readers: dict[str, str] = {}
        with open_input(args.a, readers) as a, open_input(args.b, readers) as b:
            if args.layout and not (isinstance(a, Pack) and isinstance(b, Pack)):
                raise CommandError(args.a if not isinstance(a, Pack) else args.b, "UsageError",
                                   "--layout compares two .bpk files; this one is not one", code=2)  # fmt: skip
            result = diff_packs(a, b, atol=args.atol, rtol=args.rtol, provenance=args.provenance, progress=progress_setting(args))
            result.layout_differs = False  # across formats there is no shared layout
            if isinstance(a, Pack) and isinstance(b, Pack):
                layout = compare_layout(PackDiff(), a, b).layout
                result.layout_differs = bool(layout)
                if args.layout:  # then a layout difference is a difference
                    result.layout = layout
    except (BurnpackError, OSError) as exc:  # an input that cannot be read: exit 2, not "different"
        line, _ = describe_error(exc, None, verbose=args.verbose)  # names the input that failed
        print(line, file=sys.stderr)
        return 2
    if args.json:
        print_json({**result.to_json(), "readers": {"a": readers[args.a], "b": readers[args.b]}})
    else:
        print(result.render(args.a, args.b))
    return 0 if result.identical else 1
