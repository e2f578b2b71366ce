"""``burnpack diff A B``: compare two files of any supported format by content; ``--layout``
also compares how two packs are written (header, padding, offsets, trailing bytes, encoding)."""

from __future__ import annotations

import argparse

import json
from typing import Any

from ..errors import BurnpackError, CommandError

def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``diff`` subcommand to ``burnpack``'s argument parser."""
    p = sub.add_parser(
        "diff",
        help="compare two files (bpk, safetensors, pt, npz) by tensor content, metadata and scalars (exit 0 when identical)",
    )
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--json", action="store_true", help="print the differences as one JSON object")
    p.add_argument("--layout", action="store_true",
                   help="also compare how two .bpk files are written: header version, metadata size and encoding, "
                        "offsets, data order, padding, trailing bytes")  # fmt: skip
    p.add_argument("--atol", type=float, default=0.0, help="numeric tensors within this absolute difference count as equal")
    p.add_argument("--rtol", type=float, default=0.0, help="numeric tensors within this relative difference count as equal")
    p.set_defaults(handler=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    """Exit 0 when identical, 1 when different; unreadable files are errors (exit 2)."""
    from ..core.diff import PackDiff, compare_layout, diff_packs
    from ..core.reader import Pack
    from ..interop.inputs import open_input

    try:
        readers: dict[str, str] = {}
        with open_input(args.a, readers) as a, open_input(args.b, readers) as b:
            if args.layout and not (isinstance(a, Pack) and isinstance(b, Pack)):
                raise CommandError(args.a if not isinstance(a, Pack) else args.b, "UsageError",
                                   "--layout compares two .bpk files; this one is not one", code=2)  # fmt: skip
            result = diff_packs(a, b, atol=args.atol, rtol=args.rtol)
            result.layout_differs = False  # across formats there is no shared layout
            if isinstance(a, Pack) and isinstance(b, Pack):
                layout = compare_layout(PackDiff(), a, b).layout
                result.layout_differs = bool(layout)
                if args.layout:  # then a layout difference is a difference
                    result.layout = layout
    except (BurnpackError, OSError) as exc:  # an input that cannot be read: exit 2, not "different"
        exc.exit_code = 2  # type: ignore[union-attr]
        raise
    if args.json:
        print(json.dumps({**result.to_json(), "readers": {"a": readers[args.a], "b": readers[args.b]}}, ensure_ascii=False, indent=1))
    else:
        print(result.render(args.a, args.b))
    return 0 if result.identical else 1
