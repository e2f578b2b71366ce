"""``burnpack view INPUT [INPUT2] [-o report.html] [--open]``: one self-contained HTML page.

One input: overview, module tree and tensor statistics of a ``.bpk``, any format ``convert``
reads, a URL, or a Burn Learner checkpoint directory (its epochs, curves, retention and weight
changes). Two inputs: their diff. ``--no-stats`` reads no tensor values of a single input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import CommandError, blame
from .common import add_output_options, check_output, print_json, progress_setting, wrote


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``view`` subcommand to ``burnpack``'s argument parser."""
    p = sub.add_parser("view", help="write one self-contained HTML page showing a model, a checkpoint directory, or the diff of two inputs")
    p.add_argument("input", help=".bpk, safetensors, .pt, npz, shard folder, DCP folder, URL, or Burn checkpoint directory")
    p.add_argument("input2", nargs="?", help="a second input: the page shows what changed from INPUT to INPUT2")
    p.add_argument("-o", "--output", help="the HTML file to write (default: INPUT's name + .html in the current directory)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    add_output_options(p, progress=True, json_help="print {path, bytes} of the page written")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--no-stats", action="store_true",
                   help="no value statistics: the page comes from the metadata alone (for a URL, only the bytes read on open)")  # fmt: skip
    p.set_defaults(handler=run_view)


def default_output(source: str) -> Path:
    """``model.bpk`` → ``model.bpk.html`` in the current directory (URLs: their last path part)."""
    name = source.rstrip("/").rsplit("/", 1)[-1].split("?")[0] or "burnpack-view"
    return Path(name + ".html")


def run_view(args: argparse.Namespace) -> int:
    from ..view import build_page, write_page

    target = check_output(args.output or default_output(args.input), overwrite=args.overwrite)
    if args.input2 is not None and args.no_stats:
        raise CommandError(None, "UsageError", "--no-stats applies to one input; a diff reads both inputs' values", code=2)
    progress = progress_setting(args, idle="view --no-stats reads no tensor bytes" if args.no_stats else None)
    html = build_page(args.input, args.input2, stats=not args.no_stats, progress=progress)
    with blame(target):
        write_page(html, target)
    size = len(html.encode("utf-8"))
    if args.json:
        print_json({"path": str(target), "bytes": size})
    else:
        print(wrote(target, size))
    if args.open:
        import webbrowser

        webbrowser.open(target.resolve().as_uri())
    return 0
