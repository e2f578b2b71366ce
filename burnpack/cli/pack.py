"""``burnpack pack SPEC.json OUT``: build a .bpk file from a writer spec (``burnpack.core.spec``).

With ``--json`` the result is one object on stdout — ``{ok, path, size}`` or ``{ok: false,
error: {variant, message}}`` — the conformance suite's writer protocol; errors also go to stderr
in the usual style. Exit 2 for a malformed spec, 1 when the writer refuses it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.display import plural
from ..errors import CommandError, blame
from .common import add_output_options, check_output, describe_error, progress_setting, wrote


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``pack`` subcommand to ``burnpack``'s argument parser."""
    p = sub.add_parser("pack", help="build a .bpk file from a writer spec (JSON: tensors in write order, metadata, scalars)")
    p.add_argument("spec", help="the spec file (see burnpack.core.spec), or - for standard input")
    p.add_argument("output", help="the file to write (atomically; .bpk is appended when the name has no extension, as Burn does)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    add_output_options(p, progress=True, json_help="print {ok, path, size}, or {ok: false, error} when the writer refuses the spec,")
    p.set_defaults(handler=run_pack)


def _build(args: argparse.Namespace) -> tuple[Path, int]:
    from ..core.atomic import atomic_file
    from ..core.progress import finish, progress_for
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
    bar = progress_for(progress_setting(args), writer.size(), "writing")
    with blame(target), atomic_file(target, replace=args.overwrite) as stream:
        writer.write_stream(stream, progress=bar)
    finish(bar)
    return target, len(writer.tensors)


def run_pack(args: argparse.Namespace) -> int:
    import json  # the writer protocol's one-line objects (conformance/PROTOCOL.md), not print_json's

    from ..errors import BurnpackError, SpecError

    try:
        target, count = _build(args)
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
    size = target.stat().st_size
    if args.json:
        print(json.dumps({"ok": True, "path": str(target), "size": size}))
    else:
        print(wrote(target, size, plural(count, "tensor")))
    return 0
