"""``burnpack convert`` and ``burnpack convert-checkpoint``.

Registered into the main ``burnpack`` parser by :func:`register`; each subcommand sets
``args.handler``. Summaries go to stdout (``--json`` for the full report); failures propagate to
``burnpack.cli.main.main``, which prints them in the one error style. Options that would change
nothing are refused (exit 1) unless ``--allow-unmatched``; unknown module types are usage errors
(exit 2). Outputs follow the rule of every writing command (``commands.common.check_output``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from ..codec._generated.metadata import QUANTIZABLE_SCALES, QUANTIZABLE_VALUES, BoolStore
from .common import add_output_options, check_output, print_json, progress_setting
from ..errors import CommandError, InvalidPattern, OptionError, blame

if TYPE_CHECKING:
    from ..interop.limits import ReadCaps

__all__ = ["add_from_option", "register"]

def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    out = {}
    for item in values or ():
        if "=" not in item:
            raise CommandError(None, "UsageError", f"{what} {item!r} is not KEY=VALUE", code=2)
        key, _, value = item.partition("=")
        out[key] = value
    return out


def _type_rules(values: list[str] | None) -> list[tuple[str, str]]:
    from ..interop.layouts import split_rule

    out = []
    for item in values or ():
        rule = split_rule(item)
        if rule is None:
            raise CommandError(None, "UsageError", f"--type-rule {item!r} is not REGEX=TYPE", code=2)
        out.append(rule)
    return out


def _add_type_options(p: argparse.ArgumentParser, *, infer_flag: bool = True) -> None:
    g = p.add_argument_group("module types (what the adapters act on)")
    g.add_argument("--module-type", action="append", metavar="PATH=TYPE",
                   help="the Burn module type of the module at PATH (Linear, BatchNorm, LayerNorm, Embedding, Conv2d, Lstm, "
                        "MultiHeadAttention...; torch class names like BatchNorm2d, LSTM or Hugging Face's Conv1D work too); "
                        "settings the weights cannot tell ride along: 'TransformerEncoderLayer(norm_first=true)'")  # fmt: skip
    g.add_argument("--type-rule", action="append", metavar="REGEX=TYPE",
                   help="module type for every module path the regex matches (first matching rule wins)")  # fmt: skip
    if not infer_flag:
        return
    g.add_argument("--infer-types", action="store_true",
                   help="infer module types from parameter names and shapes (BatchNorm from running stats, Linear from a "
                        "2-D weight with a bias of its first dim, LSTM from weight_ih_l0...); with --adapter pytorch or "
                        "to-pytorch, one that names and shapes cannot decide is refused, naming it")  # fmt: skip
    g.add_argument("--best-guess", action="store_true",
                   help="where names and shapes cannot decide a module's type or a setting its layout depends on (a square "
                        "weight with bias: Linear or Conv1D; a transformer layer's norm_first), take the best guess instead of "
                        "refusing; the report names every guess")  # fmt: skip


def _shard_size(text: str) -> int:
    """``--max-shard-size``: a bad value is a usage error (exit 2)."""
    from ..interop.sharded import parse_size

    try:
        return parse_size(text)
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _folder_output(args: argparse.Namespace) -> None:
    """A folder output (shards, DCP) named like a file (``x.safetensors``) is refused: the name
    would say one file where a folder of several is written."""
    from ..interop.registry import from_extension, get_format

    out = Path(args.output)
    fmt = from_extension(out, files_only=True)
    if fmt is not None and not out.is_dir():
        what = "--max-shard-size writes" if args.max_shard_size is not None else "--to dcp writes"
        raise CommandError(out, "UsageError", f"{what} a folder, not a {out.suffix} file: name the folder (e.g. {out.with_suffix('')})", code=2)


def _add_limit_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", action="append", metavar="NAME=N",
                   help="read the input within a larger cap, the one a refusal names: max_pickle_depth, max_view_expansion, "
                        "max_inflate_bytes, max_inflate_ratio, max_index_bytes, max_metadata_bytes")  # fmt: skip


def _limits(args: argparse.Namespace) -> ReadCaps:
    """``--limit NAME=N``: the read caps to lift (``interop.limits.ReadLimits``)."""
    from ..interop.limits import ReadCaps, parse_cap

    out: dict[str, int] = {}
    for name, value in _pairs(args.limit, "--limit").items():
        if name not in ReadCaps.__annotations__:
            raise CommandError(None, "UsageError", f"--limit {name!r} is not a read cap ({', '.join(ReadCaps.__annotations__)})", code=2)
        try:
            out[name] = parse_cap(name, value)
        except OptionError as exc:
            raise CommandError(None, "UsageError", f"--limit {exc}", code=2) from None
    return cast(ReadCaps, out)


def _add_sharding_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "folders: an HF model folder or *.index.json, or a torch.distributed.checkpoint folder, as INPUT; "
        "--to dcp writes a DCP folder"
    )
    g.add_argument("--max-shard-size", metavar="SIZE", type=_shard_size,
                   help="write OUTPUT as a folder of HF-style safetensors shards of at most SIZE (5GB, 500MB; decimal units "
                        "as huggingface_hub, or a byte count) plus model.safetensors.index.json; with --to pytorch, torch.save shards "
                        "pytorch_model-00001-of-0000N.bin plus pytorch_model.bin.index.json")  # fmt: skip


class _FormatNames:
    """The ``--from`` / ``--to`` choices: every format name and alias of the registry, whose table
    is loaded only when such an option is given or help is shown (not by every command's start)."""

    def __contains__(self, value: object) -> bool:
        from ..interop.registry import choices

        return value in choices()

    def __iter__(self) -> Iterator[str]:  # what help and an invalid choice list: the names
        from ..interop.registry import formats

        return iter([f.name for f in formats()])


def add_from_option(p: argparse.ArgumentParser) -> None:
    """``--from FORMAT``: the input's format when its content should not decide (``registry.choose``)."""
    p.add_argument("--from", dest="from_format", metavar="FORMAT", type=str.lower, choices=_FormatNames(),
                   help="the input's format (default: from its content): %(choices)s")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``convert`` and ``convert-checkpoint`` to the ``burnpack`` subparsers."""
    _register_convert(sub)
    _register_convert_checkpoint(sub)


def _register_convert(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "convert",
        help="convert between .bpk, safetensors, .pt/.pth, .npz, shard folders and DCP folders, optionally applying Burn's adapters",
        description=(
            "Convert tensors between burnpack (.bpk), safetensors, PyTorch (.pt/.pth/.bin/.tar, read without torch "
            "and without running pickled code; written with torch), .npz, folders of Hugging Face shards (safetensors or "
            ".bin, with their index) and torch.distributed.checkpoint (DCP) folders. By default only the container changes: "
            "same names, dtypes, shapes and bytes. Transformations run in burn-store's order: top-level key, "
            "remap, contiguous indices, enum variants, adapter, expect, filters."
        ),
    )
    p.add_argument("input", help="the file, shard or DCP folder, or URL to read (format from its content unless --from)")
    p.add_argument("output", help="the file to write (format from its extension unless --to; a name without one is a .bpk, "
                                  "with .bpk appended as Burn does), or the folder --max-shard-size or --to dcp writes")  # fmt: skip
    add_from_option(p)
    p.add_argument("--to", dest="to_format", metavar="FORMAT", type=str.lower, choices=_FormatNames(),
                   help="the output's format (default: from its extension): %(choices)s")
    p.add_argument("--adapter", action="append", metavar="NAME",
                   help="pytorch (PyTorch -> Burn: transpose Linear weights, norm weight/bias -> gamma/beta), to-pytorch "
                        "(the reverse), half (F32 <-> F16 for the tensors of Burn's module list, not BatchNorm), "
                        "cast=DTYPE (every float tensor); all but cast act on module types (--module-type, --type-rule, "
                        "--infer-types); repeat or join with ',' to chain")  # fmt: skip
    p.add_argument("--remap", action="append", metavar="REGEX=REPLACEMENT",
                   help="rename tensors; rules apply in order; replacement in Burn ($1, ${name}) or Python (\\1) syntax")
    p.add_argument("--filter", action="append", metavar="REGEX", help="keep only tensors whose output name matches (searched)")
    p.add_argument("--exclude", action="append", metavar="REGEX", help="drop tensors whose output name matches (searched)")
    p.add_argument("--top-level-key", metavar="KEY", help="take the tensors under this key (e.g. state_dict)")
    p.add_argument("--map-indices-contiguous", action="store_true", help="renumber fc.0, fc.2, fc.4 as fc.0, fc.1, fc.2")
    p.add_argument("--skip-enum-variants", action="store_true",
                   help="drop Burn enum-variant path segments (conv.DwsConv.w -> conv.w; variants are the UpperCamelCase segments)")
    p.add_argument("--enum-variant", action="append", metavar="PATH=VARIANT",
                   help="insert an enum-variant segment after PATH (conv.w -> conv.VARIANT.w)")
    _add_type_options(p)
    p.add_argument("--burn-import", action="store_true",
                   help="what Burn's PytorchStore does: --adapter pytorch --map-indices-contiguous --infer-types")
    p.add_argument("--expect", metavar="FILE",
                   help="a file whose tensor names and shapes the output must have (e.g. a freshly initialised Burn "
                        "model's .bpk): expected tensors are looked up Burn's way, others reported unused and not written")  # fmt: skip
    p.add_argument("--allow-partial", action="store_true", help="with --expect: missing tensors are not an error")
    p.add_argument("--param-ids", choices=("keep", "new", "drop"), default="keep",
                   help="keep ids from a .bpk source (default), give every tensor one (as a Burn ModuleRecord has) derived from "
                        "its name, the same on every run (docs/conversions.md), or drop them")  # fmt: skip
    _add_quantization_options(p)
    p.add_argument("--bool-store", default="U8", choices=tuple(store.name for store in BoolStore), help="Burn bool store for foreign bool tensors (default U8)")
    p.add_argument("--metadata", action="append", metavar="KEY=VALUE", help="add or override a metadata entry")
    p.add_argument("--no-metadata", action="store_true", help="do not carry the source's metadata across")
    p.add_argument("--no-stamp", action="store_true", help="do not add Burn's format/producer/version metadata keys")
    p.add_argument("--compress", action="store_true", help=".npz output: deflate members")
    p.add_argument("--npz-metadata", action="store_true",
                   help=".npz output: also write a __metadata__ member with the metadata and the dtypes numpy cannot name "
                        "(BF16, Bool stores, Flex32), which burnpack reads back; without it the archive holds tensors only")  # fmt: skip
    p.add_argument("--allow-unmatched", action="store_true",
                   help="go on when an option changes nothing (an adapter with nothing to adapt, a rule or filter "
                        "matching no tensor, module types no adapter uses); they are listed as warnings")  # fmt: skip
    p.add_argument("--legacy-ok", action="store_true", help="read a .bpk from an older Burn as its writer meant it")
    _add_limit_option(p)
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file (or the files of a folder output)")
    add_output_options(p, progress=True, json_help="print the full report")
    _add_sharding_options(p)
    p.set_defaults(handler=_convert)


def _add_quantization_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("quantization (output .bpk; Burn's CPU backend arithmetic)")
    values = [value.name.lower() for value in QUANTIZABLE_VALUES]
    g.add_argument("--quantize", metavar="VALUE", choices=values,
                   help="quantize the weights (float tensors of rank >= 2 named 'weight'; norms, biases and embeddings "
                        f"stay float): {', '.join(values[:-1])} or {values[-1]}, one byte per value (Native store)")  # fmt: skip
    g.add_argument("--block", metavar="N[xM...]", help="one scale per block of N values along the last dim (4x32: rectangles); "
                   "default one scale per tensor")  # fmt: skip
    g.add_argument("--scale-dtype", choices=[dtype.name.lower() for dtype in QUANTIZABLE_SCALES], help="scale storage (rounded up onto it; default f32)")
    g.add_argument("--include", metavar="REGEX", help="quantize the float tensors whose output name matches instead")
    g.add_argument("--dequantize", action="store_true",
                   help="write every quantized (QFloat) tensor as its F32 values, as Burn dequantizes them")


def _register_convert_checkpoint(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "convert-checkpoint",
        help="migrate a training checkpoint: PyTorch (model + optimizer + scheduler) <-> Burn Learner checkpoint dir",
        description=(
            "PyTorch -> Burn: INPUT is a torch.save'd dict holding the model state_dict, an Adam/AdamW/SGD state_dict "
            "and a cosine/linear/step/exponential LR scheduler state_dict (read without torch), or a DCP folder "
            "(get_state_dict + dcp.save: optimizer state keyed by parameter name); OUTPUT is a Burn "
            "checkpoint directory receiving model-N.bpk, optim-N.bpk and scheduler-N.bpk. Burn -> PyTorch: INPUT is "
            "the checkpoint directory (or its artifact directory), OUTPUT a .pt file (written with torch) or, with "
            "--dcp, a DCP folder. The direction follows INPUT: a file or a DCP folder is PyTorch, any other directory Burn."
        ),
    )
    p.add_argument("input", help="a torch.save'd training state or a DCP folder (to Burn), or a Burn checkpoint directory (to PyTorch)")
    p.add_argument("output", help="the Burn checkpoint directory to write into, or the .pt file (the DCP folder with --dcp)")
    p.add_argument("--epoch", type=int, help="Burn epoch N (default: the checkpoint's 'epoch' entry, else 1; back: the latest)")
    p.add_argument("--model-key", help="checkpoint key of the model state_dict (default: found by name or shape)")
    p.add_argument("--optimizer-key", help="checkpoint key of the optimizer state_dict")
    p.add_argument("--scheduler-key", help="checkpoint key of the LR scheduler state_dict")
    p.add_argument("--optimizer", dest="optimizer_kind", choices=("adam", "adamw", "sgd"), help="optimizer kind when it cannot be told")
    p.add_argument("--remap", action="append", metavar="REGEX=REPLACEMENT",
                   help="rename PyTorch paths to the Burn module's (Burn -> PyTorch: Burn paths to PyTorch names)")
    p.add_argument("--enum-variant", action="append", metavar="PATH=VARIANT", help="insert a Burn enum-variant segment after PATH")
    p.add_argument("--map-indices-contiguous", action="store_true", help="renumber nn.Sequential gaps")
    p.add_argument("--exclude", action="append", metavar="REGEX", help="leave out model tensors the Burn module lacks (regex on the names after --remap)")
    p.add_argument("--optimizer-config", metavar="JSON",
                   help='Burn -> PyTorch without stored settings: e.g. \'{"kind": "adamw", "lr": 0.001, "weight_decay": 0.01}\'')
    p.add_argument("--scheduler-config", metavar="JSON",
                   help='Burn -> PyTorch without stored settings: e.g. \'{"kind": "cosine", "T_max": 100, "eta_min": 0, "base_lrs": [0.001]}\'')
    _add_type_options(p, infer_flag=False)  # checkpoints always infer, and refuse what stays ambiguous
    p.add_argument("--seed", type=int, metavar="N",
                   help="mix N into the param ids, which are derived from the Burn paths (docs/conversions.md): the same input "
                        "gives the same ids, and another N other ones")  # fmt: skip
    p.add_argument("--allow-unmatched", action="store_true",
                   help="go on when --remap, --exclude, --module-type or --type-rule matches nothing (listed as warnings)")  # fmt: skip
    _add_limit_option(p)
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    add_output_options(p, progress=True, json_help="print the full report")
    p.add_argument("--dcp", action="store_true",
                   help="Burn -> PyTorch: write OUTPUT as a torch.distributed.checkpoint folder instead of a .pt file, "
                        "optimizer state keyed by parameter name as get_state_dict gives it (load it with a get_state_dict "
                        "template, dcp.load and set_state_dict)")  # fmt: skip
    p.set_defaults(handler=_convert_checkpoint)


def _usage(option: str, exc: Exception) -> CommandError:
    return CommandError(None, "UsageError", f"{option}: {exc}", code=2)


def _convert_options(args: argparse.Namespace) -> dict[str, Any]:
    """``transform``'s options from the command line (``--burn-import`` implies three of them)."""
    from ..interop.remap import KeyRemapper, parse_rule

    adapter = list(args.adapter or [])
    infer, contiguous = args.infer_types, args.map_indices_contiguous
    implied: set[str] = set()
    if args.burn_import:  # like Burn's PytorchStore: these are defaults, not requests, so no-ops are fine
        if not any(a.strip().lower() in ("pytorch", "from-pytorch") for a in adapter):
            adapter, implied = ["pytorch", *adapter], implied | {"adapter"}
        implied |= {"infer_types", "map_indices_contiguous"} - ({"infer_types"} if infer else set()) - (
            {"map_indices_contiguous"} if contiguous else set())  # fmt: skip
        infer, contiguous = True, True
    try:
        remap = [parse_rule(r) for r in args.remap or ()]
        KeyRemapper(remap)  # every pattern compiles
    except (OptionError, InvalidPattern) as exc:
        raise _usage("--remap", exc) from None
    return {
        "adapter": adapter or None, "remap": remap, "filter": args.filter, "exclude": args.exclude,
        "top_level_key": args.top_level_key, "map_indices_contiguous": contiguous,
        "skip_enum_variants": args.skip_enum_variants, "enum_variants": _pairs(args.enum_variant, "--enum-variant") or None,
        "module_types": _pairs(args.module_type, "--module-type") or None, "type_rules": _type_rules(args.type_rule) or None,
        "infer_types": infer, "best_guess": args.best_guess, "expect": args.expect, "allow_partial": args.allow_partial, "param_ids": args.param_ids,
        "keep_metadata": not args.no_metadata, "metadata": _pairs(args.metadata, "--metadata") or None,
        "stamp": not args.no_stamp, "allow_unmatched": True if args.allow_unmatched else implied,
        **_quantize_options(args), **_limits(args),
    }  # fmt: skip


def _quantize_options(args: argparse.Namespace) -> dict[str, Any]:
    """``quantize`` / ``quantize_include`` / ``dequantize`` from the flags; a quantization flag
    without --quantize is an error."""
    if args.quantize is None:
        given = [flag for flag, value in (("--block", args.block), ("--scale-dtype", args.scale_dtype), ("--include", args.include)) if value is not None]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise CommandError(None, "UsageError", f"{', '.join(given)} {verb} only with --quantize", code=2)
        return {"dequantize": True} if args.dequantize else {}
    if args.dequantize:
        raise CommandError(None, "UsageError", "--quantize and --dequantize exclude each other", code=2)
    from ..core.quant import parse_scheme

    block = None
    if args.block is not None:
        try:
            block = tuple(int(part) for part in args.block.lower().split("x"))
        except ValueError:
            raise CommandError(None, "UsageError", f"--block {args.block!r} is not N or NxM", code=2) from None
    scheme = parse_scheme(args.quantize, block=block, scale_dtype=args.scale_dtype or "f32")
    return {"quantize": scheme, "quantize_include": args.include}


def _convert(args: argparse.Namespace) -> int:
    from ..interop.converter import convert
    from ..interop.registry import resolve_output

    options = _convert_options(args)
    if args.max_shard_size is not None:
        options["max_shard_size"] = args.max_shard_size
    out_path: str | Path = args.output
    if args.max_shard_size is None:
        with blame(args.output):
            out_path, out_format = resolve_output(args.output, args.to_format)
        if out_format.directory:  # folder outputs have their own rules
            _folder_output(args)
        else:
            check_output(args.output, out_path, overwrite=args.overwrite)
    else:
        _folder_output(args)
    with blame(args.input):
        report = convert(
            args.input, out_path, from_format=args.from_format, to_format=args.to_format, overwrite=args.overwrite,
            bool_store=args.bool_store, compress=args.compress, progress=progress_setting(args), legacy_ok=args.legacy_ok,
            npz_metadata=args.npz_metadata, **options,
        )  # fmt: skip
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.summary())
    return 0


def _json_option(option: str, text: str | None) -> Any:
    from ..core.sidefile import parse_json

    return parse_json(text, lambda message: _usage(option, ValueError(message)), "the value") if text else None


def _checkpoint_output(args: argparse.Namespace, to_burn: bool) -> None:
    """A checkpoint directory (to Burn) or a .pt file (to PyTorch): refuse names that say otherwise."""
    from ..interop.registry import from_extension, get_format

    out = Path(args.output)
    if to_burn:
        if out.exists() and not out.is_dir():
            raise CommandError(out, "NotADirectoryError", "exists and is not a directory; PyTorch -> Burn writes a checkpoint directory")
        if from_extension(out, files_only=True) is not None:
            raise CommandError(out, "UsageError", f"PyTorch -> Burn writes a checkpoint directory, not a {out.suffix} file", code=2)
        return
    fmt = from_extension(out, files_only=True)
    if fmt is not None and fmt is not get_format("pytorch"):  # the format burn_checkpoint_to_pytorch writes
        raise CommandError(out, "UsageError", f"Burn -> PyTorch writes a torch.save file (.pt), not {out.suffix}", code=2)
    check_output(out, overwrite=args.overwrite)


def _convert_checkpoint(args: argparse.Namespace) -> int:
    from ..interop.checkpoint import burn_checkpoint_to_pytorch, pytorch_to_burn_checkpoint
    from ..interop.dcp import is_dcp
    from ..interop.remap import parse_rule

    types = _pairs(args.module_type, "--module-type") or None
    rules = _type_rules(args.type_rule) or None
    try:
        remap = [parse_rule(r) for r in args.remap or ()] or None
    except OptionError as exc:
        raise _usage("--remap", exc) from None
    to_burn = not Path(args.input).is_dir() or is_dcp(args.input)
    if args.dcp and to_burn:
        raise CommandError(None, "UsageError", "--dcp applies to Burn -> PyTorch (it writes OUTPUT as a DCP folder); a DCP folder as INPUT needs no flag", code=2)
    limits = _limits(args)
    if limits and not to_burn:
        raise CommandError(None, "UsageError", "--limit applies to PyTorch -> Burn (the caps of reading PyTorch files)", code=2)
    if not (args.dcp and not to_burn):  # a DCP output is a folder, written by write_dcp_state's rules
        _checkpoint_output(args, to_burn)
    with blame(args.input):
        if not to_burn:
            _, report = burn_checkpoint_to_pytorch(
                args.input, args.output, epoch=args.epoch, module_types=types, type_rules=rules,
                infer_types=True, overwrite=args.overwrite, remap=remap, dcp=args.dcp, progress=progress_setting(args),
                optimizer_config=_json_option("--optimizer-config", args.optimizer_config),
                scheduler_config=_json_option("--scheduler-config", args.scheduler_config),
            )  # fmt: skip
        else:
            report = pytorch_to_burn_checkpoint(
                args.input, args.output, epoch=args.epoch, model_key=args.model_key,
                optimizer_key=args.optimizer_key, scheduler_key=args.scheduler_key,
                optimizer_kind=args.optimizer_kind, module_types=types, type_rules=rules, infer_types=True,
                remap=remap, enum_variants=_pairs(args.enum_variant, "--enum-variant") or None,
                map_indices_contiguous=args.map_indices_contiguous, exclude=args.exclude, seed=args.seed,
                overwrite=args.overwrite, allow_unmatched=args.allow_unmatched, progress=progress_setting(args), **limits,
            )  # fmt: skip
    if args.json:
        from dataclasses import asdict

        print_json(asdict(report))
    else:
        print(report.summary())
    return 0
