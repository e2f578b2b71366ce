"""``burnpack pack SPEC.json OUT``: build a .bpk file from a writer spec (``burnpack.core.spec``).

With ``--json`` the result is one object on stdout — ``{ok, path, size}`` or ``{ok: false,
error: {variant, message}}`` — the conformance suite's writer protocol; errors also go to stderr
in the usual style. Exit 2 for a malformed spec, 1 when the writer refuses it.
"""

from __future__ import annotations

import argparse

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import CommandError
from ..errors import blame
from .common import check_output, describe_error


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``pack`` subcommand to ``burnpack``'s argument parser."""
    p = sub.add_parser("pack", help="build a .bpk file from a writer spec (JSON: tensors in write order, metadata, scalars)")
    p.add_argument("spec", help="the spec file (see burnpack.core.spec), or - for standard input")
    p.add_argument("output", help="the file to write (atomically; .bpk is appended when there is no extension)")
    p.add_argument("--json", action="store_true", help="print the result as JSON ({ok, path, size} or {ok: false, error})")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.set_defaults(handler=run_pack)


def _build(args: argparse.Namespace) -> Path:
    from ..core.atomic import atomic_file
    from ..core.sidefile import read_capped
    from ..core.spec import SPEC_MAX_BYTES, load_spec, parse_spec, writer_from_spec
    from ..core.writer import resolve_write_path

    with blame(args.spec):
        if args.spec == "-":
            spec = parse_spec(read_capped(sys.stdin.buffer, max_bytes=SPEC_MAX_BYTES, where="standard input"))
        else:
            spec = load_spec(args.spec)
        writer = writer_from_spec(spec)
        writer.plan()  # a refusal is about the spec, before any output exists
    target = check_output(args.output, resolve_write_path(args.output), overwrite=args.overwrite)
    with blame(target), atomic_file(target, replace=args.overwrite) as stream:
        writer.write_stream(stream)
    return target


def run_pack(args: argparse.Namespace) -> int:
    from ..errors import BurnpackError, SpecError

    try:
        target = _build(args)
    except (CommandError, BurnpackError, OSError) as exc:
        if isinstance(exc, SpecError):
            exc.exit_code = 2  # type: ignore[attr-defined]
        if not args.json:
            raise
        line, code = describe_error(exc, args.spec)
        print(line, file=sys.stderr)
        variant = "SpecError" if isinstance(exc, SpecError) else getattr(exc, "variant", None) or getattr(exc, "kind", type(exc).__name__)
        print(json.dumps({"ok": False, "error": {"variant": variant, "message": str(exc)}}))
        return code
    if args.json:
        print(json.dumps({"ok": True, "path": str(target), "size": target.stat().st_size}))
    return 0
