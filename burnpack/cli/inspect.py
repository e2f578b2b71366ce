"""``burnpack inspect FILE``: what a pack holds, for people (a table or a tree) and machines (--json).

FILE is anything ``convert`` reads — a ``.bpk``, a file, shard folder or DCP folder of another
registered format, or a URL — opened by :func:`~burnpack.interop.inputs.open_input`. A
file of another format is listed as ``convert`` reads it, under a line naming its format and
what that format has no place for (param ids, scalars...), with the entries that are not
tensors; the ``.bpk`` facts (record kind, param ids, version, offsets) belong to ``.bpk`` files.

Tensors are listed in natural order (``layers.2`` before ``layers.10``) unless ``--sort``
says ``name`` (byte-wise, Burn's order) or ``file`` (data order); ``--filter`` keeps the names a
regex finds. Sizes are human (KiB, MiB...), totals are given per dtype with the parameter count
(elements), QFloat schemes are summarized (``QFloat(Q8S block 32 F16)``), long names are shortened in
the middle so that columns stay readable, and East-Asian wide characters count double.
"""

from __future__ import annotations

import argparse
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from ..core.display import plural, printable
from ..core.dump import scalar_json
from ..codec._generated.metadata import DTYPE_INFO
from ..errors import BurnpackError, CommandError, InvalidPattern
from ..core.patterns import compile_pattern
from ..core.dtypes import dtype_label
from ..core.progress import ProgressSetting, finish, human_size, progress_for
from ..core.reader import Pack, TensorView
from .common import print_json
from ..interop.inputs import EntryView, FormatTensors

if TYPE_CHECKING:  # types only: the JSON side-file reader and record detection are imported where used
    from ..core.sidefile import JSONObject
    from ..records.detect import RecordKind

View = TensorView | EntryView
"""A listed tensor: a ``.bpk``'s view, or an entry of another format."""

NAME_WIDTH = 60  # names longer than this are shortened in the middle


def natural_key(name: str) -> list[Any]:
    """Sort key putting ``layers.2`` before ``layers.10`` (text and numbers alternate)."""
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", name))]


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: East-Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def shorten(text: str, width: int) -> str:
    """``text`` cut in the middle with ``…`` to fit ``width`` columns."""
    if display_width(text) <= width:
        return text
    keep = width - 1
    head, tail = "", ""
    chars = list(text)
    while chars and display_width(head) + display_width(tail) < keep:
        if display_width(head) <= display_width(tail):
            candidate = head + chars.pop(0)
            if display_width(candidate) + display_width(tail) > keep:
                break
            head = candidate
        else:
            candidate = chars.pop() + tail
            if display_width(head) + display_width(candidate) > keep:
                break
            tail = candidate
    return head + "…" + tail


def pad(text: str, width: int, *, right: bool = False) -> str:
    fill = " " * max(width - display_width(text), 0)
    return fill + text if right else text + fill


def _stats(view: View, notes: list[str]) -> tuple[str, str, str]:
    """min, max, mean of a tensor's values (QFloat: dequantized), or dashes with a note why not."""
    try:
        values = view.dequantize() if isinstance(view, TensorView) and view.dtype.is_quantized else view.numpy()
    except BurnpackError as exc:
        notes.append(printable(f"  {view.name}: {exc.payload}"))
        return ("-", "-", "-")
    if values.size == 0 or values.dtype.kind not in "fiub":
        return ("-", "-", "-")
    values = values.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf values give NaN/inf statistics, no warning
        low, high, mean = (f"{v:.6g}" for v in (values.min(), values.max(), values.mean()))
    return low, high, mean


def select(pack: Pack | FormatTensors, *, sort: str = "natural", pattern: str | None = None) -> list[View]:
    """The tensors ``inspect`` shows, in the order asked for (``file``: the data order; for
    another format, the order its reader lists them in)."""
    views: list[View] = [pack[name] for name in (pack.names if isinstance(pack, Pack) else pack.data_order)]
    if pattern is not None:
        try:
            regex = compile_pattern(pattern)
        except InvalidPattern as exc:
            raise CommandError(None, "UsageError", f"--filter {pattern!r}: {exc.reason}", code=2) from None
        views = [v for v in views if regex.search(v.name)]
    if sort == "natural":
        views.sort(key=lambda v: natural_key(v.name))
    elif sort == "file" and isinstance(pack, Pack):
        views.sort(key=lambda v: (v.data_offsets, v.name))
    elif sort == "name":
        views.sort(key=lambda v: v.name)
    return views


def _is_float(dtype: Any) -> bool:
    """Float and QFloat tensors hold weights; integer and bool tensors are buffers (ids, masks)."""
    return DTYPE_INFO[dtype.variant].kind in ("float", "quantized")


def parameters(elements: int, buffered: int) -> str:
    """``64 parameters``, saying how many of them are elements of integer or bool tensors."""
    return plural(elements, "parameter") + (f" ({buffered:,} in integer or bool tensors)" if buffered else "")


def totals(views: Iterable[View]) -> dict[str, dict[str, int]]:
    """Per dtype: tensors, elements (parameters) and bytes."""
    out: dict[str, dict[str, int]] = {}
    for view in views:
        entry = out.setdefault("QFloat" if view.dtype.is_quantized else dtype_label(view.dtype), {"tensors": 0, "elements": 0, "bytes": 0})
        entry["tensors"] += 1
        entry["elements"] += math.prod(view.shape)
        entry["bytes"] += max(view.byte_len, 0)
    return out


def to_json(pack: Pack | FormatTensors, views: Sequence[View], record_kind: RecordKind | None) -> JSONObject:
    """Everything ``inspect`` shows; the ``.bpk`` facts (record kind, what a scheduler record's
    values mean, version, sizes, offsets) only for a ``.bpk``, the entries the reader skipped only
    for another format."""
    by_dtype = totals(views)
    layout: dict[str, Any] = {}
    if isinstance(pack, Pack):
        assert record_kind is not None
        layout = {"record_kind": str(record_kind), "scheduler": record_kind.meaning, "version": pack.version,
                  "metadata_size": pack.metadata_size, "data_section_start": pack.data_section_start,
                  "file_size": pack.file_size}  # fmt: skip
    tensors = []
    for v in views:
        tensor = {"name": v.name, "dtype": v.dtype.to_serde(), "dtype_text": dtype_label(v.dtype), "shape": list(v.shape),
                  "elements": math.prod(v.shape), "bytes": v.byte_len, "param_id": v.param_id}  # fmt: skip
        if isinstance(v, TensorView):
            tensor["data_offsets"] = list(v.data_offsets)
        tensors.append(tensor)
    out = {
        "format": "burnpack" if isinstance(pack, Pack) else pack.format.name,
        "lacks": [] if isinstance(pack, Pack) else pack.format.lacks(),
        **layout,
        "tensors": tensors,
        "totals": {"by_dtype": by_dtype, "tensors": len(views), "parameters": sum(t["elements"] for t in by_dtype.values()),
                   "integer_or_bool_elements": _buffered(views), "bytes": sum(t["bytes"] for t in by_dtype.values())},  # fmt: skip
        "metadata": dict(pack.metadata),
        "scalars": {name: scalar_json(s) for name, s in sorted(pack.scalars.items())},
    }
    if isinstance(pack, FormatTensors):
        out["skipped_entries"] = dict(pack.skipped)
    return out


def _buffered(views: Iterable[View]) -> int:
    """Elements of integer and bool tensors (counted among the parameters, and said so)."""
    return sum(math.prod(v.shape) for v in views if not _is_float(v.dtype))


def _table(rows: Sequence[tuple[str, ...]], right: set[int], out: TextIO) -> None:
    widths = [max(display_width(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(pad(cell, w, right=j in right) for j, (cell, w) in enumerate(zip(row, widths))).rstrip(), file=out)
        if i == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _shape(view: View) -> str:
    return "[" + ", ".join(map(str, view.shape)) + "]"


def print_table(
    views: Sequence[View], out: TextIO, *, stats: bool = False, ids: bool = True, name_width: int = NAME_WIDTH,
    progress: ProgressSetting = None,
) -> None:  # fmt: skip
    """One row per tensor; a ``param_id`` column when the format holds ids, statistics with
    ``stats`` (``progress`` fed the bytes of each tensor read for them: :func:`~burnpack.core.progress.progress_for`)."""
    rows = [("name", "dtype", "shape", "params", "size") + (("param_id",) if ids else ()) + (("min", "max", "mean") if stats else ())]
    notes: list[str] = []
    bar = progress_for(progress if stats else "never", sum(max(v.byte_len, 0) for v in views), "statistics")
    for v in views:
        pid = ("-" if v.param_id is None else str(v.param_id),) if ids else ()
        row = (shorten(printable(v.name), name_width), dtype_label(v.dtype), _shape(v), f"{math.prod(v.shape):,}", human_size(max(v.byte_len, 0)))
        rows.append(row + pid + (_stats(v, notes) if stats else ()))
        bar(max(v.byte_len, 0))
    finish(bar)
    _table(rows, set(range(3, len(rows[0]))), out)
    if notes:
        print("\nno statistics for:", file=out)
        print("\n".join(notes), file=out)


def print_tree(views: Sequence[View], out: TextIO, *, name_width: int = NAME_WIDTH) -> None:
    """Tensors grouped by module path; each module line carries its parameter count."""
    root: dict[str, Any] = {}
    for v in views:
        node = root
        parts = v.name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = v

    def leaves(node: Any) -> list[View]:
        return [leaf for c in node.values() for leaf in leaves(c)] if isinstance(node, dict) else [node]

    def walk(node: dict[str, Any], depth: int) -> None:
        for key in sorted(node, key=natural_key):
            child, indent = node[key], "  " * depth
            label = shorten(printable(key), max(name_width - len(indent), 8))
            if isinstance(child, dict):
                inside = leaves(child)
                print(f"{indent}{label}/  {parameters(sum(math.prod(v.shape) for v in inside), _buffered(inside))}", file=out)
                walk(child, depth + 1)
            else:
                print(f"{indent}{label}  {dtype_label(child.dtype)} {_shape(child)}  {math.prod(child.shape):,}", file=out)

    walk(root, 0)


def print_summary(pack: Pack | FormatTensors, views: Sequence[View], out: TextIO) -> None:
    by_dtype = totals(views)
    if pack.metadata:
        print("\nmetadata:", file=out)
        for key, value in sorted(pack.metadata.items()):
            print(f"  {printable(key)} = {printable(repr(value))}", file=out)
    if pack.scalars:
        print("\nscalars:", file=out)
        for key, scalar in sorted(pack.scalars.items()):
            shown = scalar_json(scalar)
            bits = f"  ({shown['f64_bits']})" if "f64_bits" in shown else ""
            print(f"  {printable(key)} = {scalar.variant}({shown['value']}){bits}", file=out)
    if len(by_dtype) > 1:
        print("\nby dtype:", file=out)
        for name, t in sorted(by_dtype.items()):
            counted = "parameter" if DTYPE_INFO[name.partition("(")[0]].kind in ("float", "quantized") else "element"
            print(f"  {name}: {plural(t['tensors'], 'tensor')}, {plural(t['elements'], counted)}, {human_size(t['bytes'])}", file=out)
    elements = sum(t["elements"] for t in by_dtype.values())
    size = sum(t["bytes"] for t in by_dtype.values())
    subset = "" if len(views) == len(pack) else f" (of {len(pack)})"
    counts = f"{plural(len(views), 'tensor')}{subset}, {parameters(elements, _buffered(views))}, {human_size(size)} of tensor data"
    if not isinstance(pack, Pack):  # what the format holds besides tensors; no .bpk layout to report
        lacks = pack.format.lacks()
        held = [plural(len(pack.metadata), "metadata entry", "metadata entries")] if "metadata" not in lacks else []
        held += [plural(len(pack.scalars), "scalar")] if "scalars" not in lacks else []
        print("\n" + ", ".join([counts, *held]), file=out)
        return
    print(
        f"\n{counts}, {plural(len(pack.metadata), 'metadata entry', 'metadata entries')}, {plural(len(pack.scalars), 'scalar')}; "
        f"version {pack.version}, metadata {human_size(pack.metadata_size)}, data section at byte {pack.data_section_start:,}, "
        f"file {human_size(pack.file_size)}",
        file=out,
    )


def format_line(tensors: FormatTensors) -> str:
    """``format: safetensors file; no place for param ids, scalars, Flex32 or Bool stores``."""
    lacks = tensors.format.lacks()
    if not lacks:
        return f"format: {tensors.format.label}"
    listed = f"{', '.join(lacks[:-1])} or {lacks[-1]}" if len(lacks) > 1 else lacks[0]
    return f"format: {tensors.format.label}; no place for {listed}"


def print_skipped(tensors: FormatTensors, out: TextIO) -> None:
    """The entries of the source the reader did not take as tensors (``convert`` skips them too)."""
    if tensors.skipped:
        print("\nnot tensors (convert skips them):", file=out)
        for path, why in tensors.skipped.items():
            print(f"  {printable(path)}: {printable(why)}", file=out)


def inspect(pack: Pack | FormatTensors, args: argparse.Namespace, out: TextIO, *, progress: ProgressSetting = None) -> int:
    """Print what ``burnpack inspect`` shows for an open pack or another format's tensors; 1 when
    ``--filter`` finds nothing. ``progress`` shows the reading of ``--stats``."""
    from ..records.detect import detect_record_kind

    views = select(pack, sort=args.sort, pattern=args.filter)
    kind = detect_record_kind(pack) if isinstance(pack, Pack) else None
    if args.json:
        print_json(to_json(pack, views, kind), out)
    else:
        if isinstance(pack, FormatTensors):
            print(format_line(pack), file=out)
        elif kind is not None:
            print(f"record kind: {printable(kind)}", file=out)
            if kind.meaning is not None:  # the raw values (u64::MAX, -1...) in words, as the view page gives them
                print(f"learning-rate scheduler: {printable(kind.meaning)}", file=out)
        print(file=out)
        if args.filter and not views:
            print(f"no tensor name matches {args.filter!r}", file=out)
        elif args.tree:
            print_tree(views, out)
        else:
            ids = isinstance(pack, Pack) or "param ids" not in pack.format.lacks()
            print_table(views, out, stats=args.stats, ids=ids, progress=progress)
        if isinstance(pack, FormatTensors):
            print_skipped(pack, out)
        print_summary(pack, views, out)
    return 1 if args.filter and not views else 0
