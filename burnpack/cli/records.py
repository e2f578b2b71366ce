"""The record layer's command-line pieces: ``burnpack checkpoint inspect`` and the record-kind
line of ``burnpack inspect``. ``burnpack.cli.main`` registers them; the record layer is imported when
a command runs, so that registering costs nothing at start-up."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from ..core.display import printable, printable_lines
from .common import add_output_options, print_json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``checkpoint inspect DIR`` to the ``burnpack`` command."""
    parser = subparsers.add_parser("checkpoint", help="inspect a Burn learner's checkpoint directory")
    commands = parser.add_subparsers(dest="checkpoint_command", required=True)
    p = commands.add_parser(
        "inspect",
        help="epochs, parameter count, optimizer kind and step, scheduler state, model/optimizer id consistency",
    )
    p.add_argument("directory", help="the artifact directory (holding checkpoint/) or the checkpoint directory")
    add_output_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return checkpoint_inspect(args.directory, sys.stdout, as_json=args.json)


def checkpoint_inspect(directory: str, out: TextIO, *, as_json: bool = False) -> int:
    """Print a checkpoint directory's epochs; 1 when there is none or a file cannot be read."""
    from ..records.checkpoint import Checkpoints, inspect_epoch

    path = Path(directory)
    if not path.is_dir():
        kind, what = ("NotADirectoryError", "not a directory") if path.exists() else ("FileNotFoundError", "no such file or directory")
        print(f"burnpack: {printable(directory)}: {kind}: {what}", file=sys.stderr)
        return 1
    checkpoints = Checkpoints.find(path)
    epochs = checkpoints.epochs()
    details = [inspect_epoch(checkpoints, e) for e in epochs]
    report = {
        "directory": str(checkpoints.directory),
        "epochs": epochs,
        "complete_epochs": checkpoints.complete_epochs(),
        "details": details,
    }
    failed = not epochs or any(
        isinstance(d.get(k), dict) and "error" in d[k] for d in details for k in ("model", "optim", "scheduler")
    )
    if as_json:
        print_json(report, out)
        return 1 if failed else 0
    print(f"checkpoint directory: {printable(report['directory'])}", file=out)
    if not epochs:
        print("no checkpoints (expected model-N.bpk, optim-N.bpk, scheduler-N.bpk)", file=out)
        return 1
    complete = ", ".join(map(str, report["complete_epochs"])) or "none"
    print(f"epochs: {', '.join(map(str, epochs))} (complete: {complete})", file=out)
    for detail in details:
        print(f"\nepoch {detail['epoch']}{'' if detail['complete'] else ' (incomplete)'}", file=out)
        for name in ("model", "optim", "scheduler"):
            file = detail["files"].get(name)
            file = None if file is None else printable(file)
            entry: dict[str, Any] = detail.get(name) or {}
            if file is None:
                print(f"  {name:<10} missing", file=out)
            elif "error" in entry:
                print(f"  {name:<10} {file}: unreadable: {printable(entry['error'])}", file=out)
            elif name == "model":
                print(
                    f"  {name:<10} {file}: {entry['parameters']} parameters, {entry['elements']:,} elements "
                    f"({'/'.join(entry['dtypes']) or '-'})",
                    file=out,
                )
            elif name == "optim":
                step = f", step {entry['step']}" if entry["step"] is not None else ""
                states = f", {entry['states']} parameter states" if "states" in entry else ""
                print(f"  {name:<10} {file}: {entry['kind']}{states}{step}", file=out)
            else:
                print(f"  {name:<10} {file}: {printable(entry['state'])}", file=out)
                if entry["meaning"] != entry["state"]:  # the values in words (u64::MAX: not stepped yet...)
                    print(f"  {'':<10} {printable(entry['meaning'])}", file=out)
        if "ids" in detail:
            print(f"  {'ids':<10} " + printable_lines(detail["ids"]["text"]).replace("\n", "\n" + " " * 13), file=out)
    return 1 if failed else 0
