"""``burnpack inspect``, ``dump``, ``validate`` and ``repack``: the commands on one file.

``inspect`` lists any input ``convert`` reads; ``dump``, ``validate`` and ``repack`` are about a
``.bpk`` and answer another format's file with the ``convert`` command that makes one.

What a command needs is imported when it runs: registering the commands costs nothing at start-up.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..core.display import plural, printable
from ..errors import CommandError, blame
from .common import add_output_options, check_output, print_json, progress_setting, wrote

if TYPE_CHECKING:
    from ..core.reader import Pack


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the four single-file commands to ``burnpack``'s argument parser."""
    from .interop import add_from_option

    p = sub.add_parser("inspect", help="a table (or --tree, --json) of tensors with totals, metadata and scalars; "
                                       "any format convert reads (a file, shard or DCP folder, URL)")
    p.add_argument("file", help="a .bpk, another format's file, a shard or DCP folder, or a URL")
    _inspect_options(p)
    _legacy_option(p)
    add_from_option(p)
    add_output_options(p, progress=True)
    p.set_defaults(handler=run_inspect)

    p = sub.add_parser("dump", help="print the pack as one JSON object (the conformance protocol)")
    add_output_options(p, progress=True, json_help="accepted for compatibility: dump prints its result as one JSON object anyway")
    p.add_argument("--strict", action="store_true", help="also reject what no Burn writer produces")
    p.add_argument("--batch", action="store_true", help="answer JSON-line requests {path, level} from stdin, one object per line")
    _legacy_option(p)
    p.add_argument("file", nargs="?", help="the .bpk file (or URL); none with --batch")
    p.set_defaults(handler=run_dump)

    p = sub.add_parser("validate", help="exit 0 if the file is valid, 1 with the error otherwise")
    p.add_argument("--strict", action="store_true", help="also reject what no Burn writer produces")
    p.add_argument("--deep", action="store_true",
                   help="also read every tensor as Burn's into_tensors does, reporting each problem")  # fmt: skip
    _legacy_option(p)
    add_output_options(p, progress=True, json_help="print the verdict ({path, valid, level, checked, tensors, problems}) as one JSON object")
    p.add_argument("file", help="the .bpk file (or URL)")
    p.set_defaults(handler=run_validate)

    p = sub.add_parser("repack", help="rewrite a file canonically, keeping its data order (upgrades old files with --legacy-ok)")
    p.add_argument("input", help="the .bpk file (or URL) to rewrite")
    p.add_argument("output", help="the file to write (.bpk is appended when the name has no extension, as Burn does)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    _legacy_option(p)
    add_output_options(p, progress=True, json_help="print {path, tensors, bytes} of the file written")
    p.set_defaults(handler=run_repack)


def _inspect_options(p: argparse.ArgumentParser) -> None:
    """The options of ``burnpack inspect`` (see :mod:`burnpack.cli.inspect`)."""
    p.add_argument("--sort", choices=("natural", "name", "file"), default="natural",
                   help="natural (layers.2 before layers.10, the default), name (byte-wise, Burn's order) or file (data order)")  # fmt: skip
    p.add_argument("--filter", metavar="REGEX", help="only tensors whose name the regex finds")
    p.add_argument("--tree", action="store_true", help="group tensors by module path, with per-module parameter counts")
    p.add_argument("--stats", action="store_true", help="add min/max/mean of each tensor's values (QFloat: dequantized)")


def _legacy_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--legacy-ok", action="store_true",
                   help="read files from older Burn versions as their writer meant them (see docs/reading-levels.md)")  # fmt: skip


def not_a_pack(path: str) -> CommandError | None:
    """A readable error for a file or folder that is another format ``burnpack convert`` reads."""
    from ..errors import ConversionError
    from ..interop.registry import detect

    try:
        fmt = detect(path)
    except (ConversionError, OSError):
        return None
    if fmt.native:
        return None
    return CommandError(path, "NotBurnpack", f"{fmt.label}: use burnpack convert {path} OUT.bpk")


def _open(path: str, args: argparse.Namespace, *, strict: bool = False) -> Pack:
    from ..errors import BurnpackError
    from ..core.reader import load

    try:
        return load(path, strict=strict, legacy_ok=args.legacy_ok)
    except BurnpackError as exc:
        if exc.variant == "InvalidMagicNumber" or isinstance(exc, IsADirectoryError):  # another format's file or folder
            other = not_a_pack(path)
            if other is not None:
                raise other from None
        raise


def run_inspect(args: argparse.Namespace) -> int:
    """Any input ``convert`` reads, opened as ``diff`` opens it (read as ``convert`` reads it)."""
    from . import inspect as inspect_cmd
    from ..interop.inputs import FormatTensors, open_input

    if args.stats and (args.tree or args.json):
        shown = "--tree" if args.tree else "--json"
        raise CommandError(None, "UsageError", f"--stats adds min/max/mean columns to the table; {shown} shows none", code=2)
    progress = progress_setting(args, idle=None if args.stats else "inspect reads tensor bytes only with --stats")
    with open_input(args.file, from_format=args.from_format, crosscheck=False, legacy_ok=args.legacy_ok) as pack:
        if args.legacy_ok and isinstance(pack, FormatTensors):
            message = f"--legacy-ok reads .bpk files of older Burn versions, not this {pack.format.label}"
            raise CommandError(args.file, "UsageError", message, code=2)
        return inspect_cmd.inspect(pack, args, sys.stdout, progress=progress)


def run_dump(args: argparse.Namespace) -> int:
    progress = progress_setting(args, idle="dump --batch answers a program, one JSON line per request, and shows no progress" if args.batch else None)
    if args.batch:
        from .batch import serve

        return serve(sys.stdin, sys.stdout, strict=args.strict)
    if args.file is None:
        raise CommandError(None, "UsageError", "dump needs a file (or --batch)", code=2)
    from ..core.dump import dump

    result = dump(args.file, strict=args.strict, legacy_ok=args.legacy_ok, progress=progress)
    print_json(result)
    return 0 if result["ok"] else 1


def _deep_problems(pack: Pack, progress: str) -> list[str]:
    """Every tensor read as Burn's ``into_tensors`` reads it; one line per problem."""
    from ..core.progress import finish, progress_for
    from ..errors import BurnpackError

    views = [pack[name] for name in pack.names]
    bar = progress_for(progress, sum(max(view.byte_len, 0) for view in views), "checking")
    problems = []
    for view in views:
        try:
            view.numpy()
        except BurnpackError as exc:
            problems.append(f"{exc.variant}: {exc}")
        bar(max(view.byte_len, 0))
    finish(bar)
    return problems


def _all(count: int) -> str:
    """``its 1 tensor``, ``all 3 tensors``."""
    return f"{'its' if count == 1 else 'all'} {plural(count, 'tensor')}"


def run_validate(args: argparse.Namespace) -> int:
    level = "strict" if args.strict else "compatible"
    progress = progress_setting(args, idle=None if args.deep else "validate reads tensor bytes only with --deep")
    with blame(args.file), _open(args.file, args, strict=args.strict) as pack:
        problems = _deep_problems(pack, progress) if args.deep else []
        count = len(pack)
    checked = f"header, metadata and {_all(count)}" if args.deep else "header and metadata"
    if args.json:
        print_json({"path": args.file, "valid": not problems, "level": level, "checked": checked, "tensors": count, "problems": problems})
        return 1 if problems else 0
    shown = f" ({level})" if args.strict else ""
    if problems:
        for line in problems:
            print(printable(f"burnpack: {args.file}: {line}"), file=sys.stderr)
        print(f"{printable(args.file)}: invalid: {len(problems)} of {plural(count, 'tensor')} cannot be read", file=sys.stderr)
        return 1
    unchecked = "" if args.deep else "; tensor access not checked (use --deep)"
    print(f"{printable(args.file)}: valid{shown}: {checked} checked{unchecked}")
    return 0


def run_repack(args: argparse.Namespace) -> int:
    from ..core.atomic import atomic_file
    from ..core.progress import finish, progress_for
    from ..core.writer import Writer, resolve_write_path

    with blame(args.input), _open(args.input, args) as pack:  # a missing input is reported before an existing output
        target = check_output(args.output, resolve_write_path(args.output), overwrite=args.overwrite)
        views = pack.tensors()
        views.sort(key=lambda v: (v.data_offsets, v.name))
        bar = progress_for(progress_setting(args), sum(v.byte_len for v in views), "repacking")
        writer = Writer(views, metadata=pack.metadata, scalars=pack.scalars)  # a file's views copy in the kernel
        writer.plan()
        with blame(target), atomic_file(target, replace=args.overwrite) as stream:
            writer.write_stream(stream, progress=bar)
        finish(bar)
    size = target.stat().st_size
    if args.json:
        print_json({"path": str(target), "tensors": len(views), "bytes": size})
    else:
        print(wrote(target, size, plural(len(views), "tensor")))
    return 0
