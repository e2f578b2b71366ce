"""The ``burnpack`` command: inspect, dump, validate and repack ``.bpk`` files.

Subcommands of the higher layers (records, interop, conformance helpers) register themselves
through their ``register(subparsers)``; every subcommand sets a ``handler(args) -> exit code``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from . import diff as diff_cli
from . import spec as spec_cli
import numpy as np

from .quant import dtype_label
from .dump import dump, scalar_json
from .interop import cli as interop_cli
from .records import cli as records_cli
from .errors import BurnpackError, LegacyFormatWarning
from .reader import Pack, load
from .writer import Tensor, Writer


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def _stats(view: Any, notes: list[str]) -> tuple[str, str, str]:
    """min, max, mean of a tensor's values (QFloat: dequantized), or dashes with a note why not."""
    try:
        values = view.numpy(dequantize=True)
    except BurnpackError as exc:
        notes.append(f"  {view.name}: {exc.payload}")
        return ("-", "-", "-")
    if values.size == 0 or values.dtype.kind not in "fiub":
        return ("-", "-", "-")
    values = values.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf values give NaN/inf statistics, no warning
        return tuple(f"{v:.6g}" for v in (values.min(), values.max(), values.mean()))  # type: ignore[return-value]


def _inspect(pack: Pack, out, *, stats: bool = False) -> None:
    rows = [("name", "dtype", "shape", "bytes", "param_id") + (("min", "max", "mean") if stats else ())]
    total = 0
    notes: list[str] = []
    for view in (pack[name] for name in pack):
        total += max(view.byte_len, 0)
        pid = "-" if view.param_id is None else str(view.param_id)
        row = (view.name, dtype_label(view.dtype), "[" + ", ".join(map(str, view.shape)) + "]", str(view.byte_len), pid)
        rows.append(row + (_stats(view, notes) if stats else ()))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) if j < 3 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))).rstrip(), file=out)
        if i == 0:
            print("  ".join("-" * w for w in widths), file=out)
    if notes:
        print("\nno statistics for:", file=out)
        print("\n".join(notes), file=out)
    if pack.metadata:
        print("\nmetadata:", file=out)
        for key, value in sorted(pack.metadata.items()):
            print(f"  {key} = {value!r}", file=out)
    if pack.scalars:
        print("\nscalars:", file=out)
        for key, scalar in sorted(pack.scalars.items()):
            shown = scalar_json(scalar)
            bits = f"  ({shown['f64_bits']})" if "f64_bits" in shown else ""
            print(f"  {key} = {scalar.variant}({shown['value']}){bits}", file=out)
    print(
        f"\n{len(pack)} tensors, {_human(total)} of tensor data, {len(pack.metadata)} metadata entries, "
        f"{len(pack.scalars)} scalars; version {pack.version}, metadata {pack.metadata_size} bytes, "
        f"data section at byte {pack.data_section_start}, file {pack.file_size} bytes",
        file=out,
    )


def _repack(src: str, dst: str) -> None:
    with load(src) as pack:
        views = pack.tensors()
        views.sort(key=lambda v: (v.data_offsets, v.name))
        tensors = [
            Tensor.deferred(v.name, v.dtype, v.shape, v.byte_len, v.memoryview, param_id=v.param_id) for v in views
        ]
        Writer(tensors, metadata=pack.metadata, scalars=pack.scalars).write_atomic(dst)


def _run_inspect(args: Any) -> int:
    with load(args.file) as pack:
        print(records_cli.record_kind_line(pack) + "\n")
        _inspect(pack, sys.stdout, stats=args.stats)
    return 0


def _run_dump(args: Any) -> int:
    if args.batch:
        from .batch import serve

        return serve(sys.stdin, sys.stdout, strict=args.strict)
    if args.file is None:
        raise SystemExit("burnpack dump: needs a file (or --batch)")
    result = dump(args.file, strict=args.strict)
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return 0 if result["ok"] else 1


def _run_validate(args: Any) -> int:
    with load(args.file, strict=args.strict) as pack:
        pack.tensors()
    print(f"{args.file}: valid{' (strict)' if args.strict else ''}")
    return 0


def _run_repack(args: Any) -> int:
    _repack(args.input, args.output)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="burnpack", description="Inspect, check, convert and rewrite Burn .bpk files.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="print a table of tensors, metadata and scalars")
    p.add_argument("file")
    p.add_argument("--stats", action="store_true", help="add min/max/mean of each tensor's values (QFloat: dequantized)")
    p.set_defaults(handler=_run_inspect)
    p = sub.add_parser("dump", help="print the pack as one JSON object (the conformance protocol)")
    p.add_argument("--json", action="store_true", required=True, help="JSON output (the only format)")
    p.add_argument("--strict", action="store_true", help="also reject what no Burn writer produces")
    p.add_argument("--batch", action="store_true", help="answer JSON-line requests {path, level} from stdin, one object per line")
    p.add_argument("file", nargs="?")
    p.set_defaults(handler=_run_dump)
    p = sub.add_parser("validate", help="exit 0 if the file is valid, 1 with the error otherwise")
    p.add_argument("--strict", action="store_true", help="also reject what no Burn writer produces")
    p.add_argument("file")
    p.set_defaults(handler=_run_validate)
    p = sub.add_parser("repack", help="rewrite a file canonically, keeping its data order")
    p.add_argument("input")
    p.add_argument("output")
    p.set_defaults(handler=_run_repack)
    spec_cli.register(sub)
    diff_cli.register(sub)
    records_cli.register(sub)
    interop_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    warnings.simplefilter("always", LegacyFormatWarning)
    warnings.showwarning = lambda message, *rest: print(f"warning: {message}", file=sys.stderr)
    try:
        return args.handler(args)
    except BurnpackError as exc:
        print(f"{getattr(args, 'file', None) or getattr(args, 'input', '')}: {exc.variant}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
