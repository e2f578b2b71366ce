"""Converting between containers, with Burn's transformations as options.

``convert(src, dst)`` reads any supported source, applies the transformations asked for and
writes the result atomically; by default nothing but the container changes (same names, dtypes,
shapes and bytes). Every conversion returns a ``ConversionReport``.

The transformations run in burn-store's order (``PytorchStore``: remap, then contiguous
indices, then the adapter with module types, then filters):

1. ``top_level_key`` — take one entry of a PyTorch checkpoint dict (``"state_dict"``); for
   other formats, the tensors under ``"<key>."`` with that prefix removed.
2. ``remap`` — ``KeyRemapper`` rules, in order.
3. ``map_indices_contiguous`` — ``fc.0, fc.2, fc.4`` → ``fc.0, fc.1, fc.2``.
4. ``skip_enum_variants`` (drop variant segments, ``conv.DwsConv.w`` → ``conv.w``) and
   ``enum_variants`` (insert them: ``{"conv": "DwsConv"}``).
5. Module types (``ModuleTypes``) for every tensor, then the
   ``adapter`` (``pytorch``, ``to-pytorch``, ``half``, ``cast=bf16``, chained); with ``pytorch`` /
   ``to-pytorch`` each module's kind (``burnpack.interop.layouts``) lays its tensors out for the
   other framework — an LSTM, an attention block, a transformer layer as a whole subtree — and
   the report gives each module's Burn config and each tensor's rule; what names and shapes
   cannot decide is refused unless ``best_guess``.
6. ``expect`` — the names (and shapes) the output must have, e.g. a Burn module's paths: each
   expected name takes the tensor of that name, else the one of its enum-variant-free name,
   else of the adapter's alternative parameter name (``gamma`` ↔ ``weight``), as Burn's
   ``Applier`` looks them up. Expected names without a tensor are *missing*, tensors no
   expected name took are *unused* (and not written), shape mismatches are errors.
7. ``filter`` (keep) / ``exclude`` (drop) on the output names; dropped tensors are *skipped*.
8. ``quantize`` — a ``QuantScheme``: the weights (float tensors of rank ≥ 2 named ``weight``,
   or those whose name ``quantize_include`` matches) become QFloat tensors as Burn's CPU backend
   quantizes them (``burnpack.interop.quantizing``); their error is in ``report.quantized``.
   ``dequantize=True`` instead turns every QFloat tensor into its F32 values.
9. ``param_ids`` — ``"keep"`` (default), ``"new"`` (a u64 per tensor, as a Burn
   ``ModuleRecord`` carries, derived from its name: ``burnpack.records.derive_param_ids``)
   or ``"drop"``.

Metadata: the source's user metadata is carried across (safetensors ``__metadata__`` ↔ burnpack
metadata ↔ the ``__metadata__`` member of an ``.npz``). When the container changes and the
target is burnpack or safetensors, the keys Burn's stores write are set as they write them
(:func:`~burnpack.core.metadata.provenance_stamp`, the keys ``diff`` reports apart as provenance):
``format`` = ``"burnpack"`` / ``"safetensors"``, and ``producer`` / ``version`` unless the source
already names them (then they still say who produced the weights). ``stamp=False`` leaves
them out; ``metadata={...}`` adds or overrides entries; ``keep_metadata=False`` starts empty.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.display import plural, printable_lines
from ..errors import ConversionError, InvalidPattern, OptionError, UnmatchedOptionError
from ..core.dtypes import dtype_label
from ..core.frameworks import TorchModule, is_torch_module
from ..core.metadata import provenance_stamp
from ..core.patterns import compile_pattern
from ..core.progress import ProgressSetting, finish, human_size, progress_for
from .adapters import ModuleAdapter, ModuleTypes, parse_adapter
from .limits import take_caps
from .format import Format, WriteOptions
from .registry import formats, get_format, read_tensors, resolve_output, write_tensors
from .sharded import parse_size
from .remap import FilterSpec, KeyRemapper, PathFilter, insert_enum_variants, map_indices_contiguous as _contiguous, strip_enum_variants
from ..codec._generated.metadata import BoolStore, DType, QuantScheme
from .tensors import Entry, TensorSet, dtype_name

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from ..core.sidefile import JSONObject

__all__ = ["ConversionReport", "convert", "transform"]

@dataclass
class ConversionReport:
    """What a conversion did.

    Attributes:
        source: The source, as named in messages.
        target: The output path, when written.
        source_format: The source's format.
        target_format: The output's format.
        applied: Output tensor names in data order.
        skipped: Tensors the filters removed (output names).
        skipped_entries: Entries of the source that are not tensors the reader can map (a number, a
            config object, a tensor of a dtype Burn lacks): source path → why.
        renamed: Source name → output name where they differ.
        missing: Names that were asked for (``expect``, exact ``filter`` paths) and not found.
        unused: Source tensors that ``expect`` did not take.
        transformed: Output name → what was done (``transposed [3, 2] -> [2, 3]``, ``F32 -> F16``,
            ``renamed weight -> gamma``).
        quantized: Output name → the quantization's scheme and error.
        errors: Shape mismatches against ``expect``.
        warnings: Module types that could not be inferred, options that changed nothing when
            ``allow_unmatched``, information the target format cannot hold (tied weights written
            as copies among it).
        tied: Groups of output names that are one tensor of the source (tied weights), written
            once by a target that can alias them.
        options: Each option given → what it changed (``"adapter=pytorch": "2 tensors changed"``).
        module_types: Module path → the Burn type used.
        metadata: The output's metadata.
        scalars: How many scalars the output holds.
        bytes: The output's tensor bytes.
        seconds: How long the conversion took.
        modules: With the ``pytorch`` / ``to-pytorch`` adapters: module path → its ``type``,
            where the type came from (``type_from``: ``live module``, ``module_types``,
            ``type_rules``, ``inferred: …``, ``best guess: …``), the Burn ``config`` that rebuilds
            it and the settings the weights cannot tell (``yours``).
        rules: Output tensor → the rule that produced it (its ``module``, ``type``,
            ``type_from`` and ``rule``, what was done).
        guesses: Every best guess taken (``best_guess=True``).
    """

    source: str = ""
    target: str | None = None
    source_format: str = ""
    target_format: str | None = None
    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    skipped_entries: dict[str, str] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    transformed: dict[str, list[str]] = field(default_factory=dict)
    quantized: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    tied: list[list[str]] = field(default_factory=list)
    module_types: dict[str, str] = field(default_factory=dict)
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    rules: dict[str, dict[str, str]] = field(default_factory=dict)
    guesses: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    scalars: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def is_success(self) -> bool:
        """Whether the conversion had no errors.

        Returns:
            True without errors.
        """
        return not self.errors

    def to_dict(self) -> JSONObject:
        """The report as plain data (for JSON).

        Returns:
            Every field by name.
        """
        return asdict(self)

    def counts(self) -> dict[str, int]:
        """How many names each category holds.

        Returns:
            ``{category: count}`` for applied, skipped, skipped_entries, renamed, missing, unused,
            transformed and errors.
        """
        return {
            "applied": len(self.applied),
            "skipped": len(self.skipped),
            "skipped_entries": len(self.skipped_entries),
            "renamed": len(self.renamed),
            "missing": len(self.missing),
            "unused": len(self.unused),
            "transformed": len(self.transformed),
            "errors": len(self.errors),
        }

    def summary(self, *, detail: int = 20) -> str:
        """A human summary: one headline, then the lines of each non-empty category.

        Args:
            detail: The most lines shown per category.

        Returns:
            The summary, terminal-safe.
        """
        arrow = f" -> {self.target} ({self.target_format})" if self.target else ""
        c = self.counts()
        lines = [
            f"{self.source} ({self.source_format}){arrow}: {plural(c['applied'], 'tensor')}, {human_size(self.bytes)}"
            + (f", {plural(self.scalars, 'scalar')}" if self.scalars else "")
            + (f", {plural(len(self.metadata), 'metadata entry', 'metadata entries')}" if self.metadata else "")
            + (f" in {self.seconds:.2f}s" if self.seconds else ""),
            "  " + ", ".join(f"{k} {v}" for k, v in c.items() if v or k != "skipped_entries"),
        ]

        def section(title: str, items: Sequence[str]) -> None:
            if not items:
                return
            lines.append(f"  {title}:")
            for item in items[:detail]:
                lines.append(f"    {item}")
            if len(items) > detail:
                lines.append(f"    ... and {len(items) - detail} more")

        section("options", [f"{option}: {what}" for option, what in self.options.items()])
        configs = []
        for path, module in self.modules.items():
            configs.append(f"{path or '<root>'} ({module['type']}, {module['type_from']}): {module['config']}")
            configs += [f"  yours to set: {what}" for what in module["yours"]]
        section("burn configs", configs)
        section("best guesses", self.guesses)
        section("tied (one tensor under several names, written once)", [" = ".join(group) for group in self.tied])
        section("renamed", [f"{a} -> {b}" for a, b in self.renamed.items()])
        section("transformed", [f"{n}: {', '.join(s)}" for n, s in self.transformed.items()])
        section("quantized (error vs float: max abs, RMSE)",
                [f"{n}: {q['scheme']}, {q['max_abs']:.4g}, {q['rmse']:.4g}" for n, q in self.quantized.items()])  # fmt: skip
        section("skipped", self.skipped)
        section("skipped entries (not tensors)", [f"{path}: {why}" for path, why in self.skipped_entries.items()])
        section("missing", self.missing)
        section("unused", self.unused)
        section("errors", self.errors)
        section("warnings", self.warnings)
        return printable_lines(lines)

    def __str__(self) -> str:
        return self.summary()


# --------------------------------------------------------------------------------------------
# Expectations: what a target module wants
# --------------------------------------------------------------------------------------------
def _expectation(expect: Any) -> tuple[dict[str, tuple[int, ...] | None], dict[str, str]]:
    """``({name: shape or None}, {module path: type})`` from names, a name → shape/array
    mapping, a ``TensorSet``, a file path, a ``torch.nn.Module`` or a record-layer structure."""
    from .torch_live import module_types_of

    shapes: dict[str, tuple[int, ...] | None]
    if isinstance(expect, (str, os.PathLike)):
        with read_tensors(expect) as tset:
            shapes = {e.name: e.shape for e in tset.entries}
            return shapes, dict(tset.module_types)
    if isinstance(expect, TensorSet):
        shapes = {e.name: e.shape for e in expect.entries}
        return shapes, dict(expect.module_types)
    if is_torch_module(expect):
        shapes = {k: tuple(v.shape) for k, v in expect.state_dict().items()}
        return shapes, module_types_of(expect)
    if isinstance(expect, Mapping):
        out: dict[str, tuple[int, ...] | None] = {}

        def is_shape(value: Any) -> bool:
            return value is None or (isinstance(value, (tuple, list)) and all(type(d) is int for d in value))

        if all(is_shape(v) for v in expect.values()):
            pairs = list(expect.items())
        else:  # a module structure: nested dicts, lists, Variant(...), arrays (burnpack.records.tree)
            from ..records.tree import iter_params

            pairs = list(iter_params(expect))
        for name, value in pairs:
            if value is None:
                out[name] = None
            elif isinstance(value, (tuple, list)) and all(isinstance(d, int) for d in value):
                out[name] = tuple(value)
            else:
                shape = getattr(value, "shape", None)
                out[name] = tuple(int(d) for d in shape) if shape is not None else None
        return out, {}
    return {str(name): None for name in expect}, {}


# --------------------------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------------------------
def _select_top_level(tset: TensorSet, key: str, report: ConversionReport) -> TensorSet:
    head = key + "."
    chosen = [e.replace(name=e.name[len(head):], source_name=e.source_name[len(head):]) for e in tset.entries if e.name.startswith(head)]
    if not chosen:
        roots = sorted({e.name.split(".", 1)[0] for e in tset.entries})
        raise ConversionError(f"no tensors under top-level key {key!r}; top-level names: {roots[:20]}")
    dropped = len(tset.entries) - len(chosen)
    if dropped:
        report.warnings.append(f"{plural(dropped, 'tensor')} outside top-level key {key!r} ignored")
    skipped = {path[len(head):]: why for path, why in tset.skipped.items() if path.startswith(head)}
    return TensorSet(chosen, tset.metadata, tset.scalars, tset.format, tset.module_types, top_level_key=key,
                     closers=tset.closers, skipped=skipped)  # fmt: skip


def _rename_all(entries: list[Entry], mapping: Mapping[str, str]) -> list[Entry]:
    return [e if mapping.get(e.name, e.name) == e.name else e.replace(name=mapping[e.name]) for e in entries]


def _check_unique(entries: Iterable[Entry], stage: str) -> None:
    seen: dict[str, str] = {}
    for e in entries:
        if e.name in seen:
            raise ConversionError(f"after {stage}, tensors {seen[e.name]!r} and {e.source_name!r} both map to {e.name!r}")
        seen[e.name] = e.source_name


class _OptionLog:
    """What each option given to ``transform`` changed, and which changed nothing."""

    def __init__(self, allow: bool | Iterable[str]) -> None:
        self.allow = allow if isinstance(allow, bool) else frozenset(allow)
        self.changed: dict[str, str] = {}
        self.unmatched: list[tuple[str, str, str]] = []

    def record(self, option: str, value: str, count: int, what: str, why: str, noun: str = "tensor") -> None:
        label = f"{option}={value}" if value else option
        if count:
            self.changed[label] = f"{count} {noun if count == 1 else noun + 's'} {what}"
        else:
            self.unmatched.append((option, value, why))

    def check(self, report: ConversionReport) -> None:
        report.options.update(self.changed)
        refused = [u for u in self.unmatched if not (self.allow is True or (self.allow is not False and u[0] in self.allow))]
        for option, value, why in self.unmatched:
            if (option, value, why) not in refused:
                report.warnings.append(f"{option}{' ' + value if value else ''} changed nothing: {why}")
        if refused:
            raise UnmatchedOptionError(refused, report)


def _patterns(value: Any) -> list[str]:
    """The regexes a filter option was given as (none for predicates and PathFilter objects)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return []


def _rename_step(entries: list[Entry], mapping: Mapping[str, str], stage: str) -> tuple[list[Entry], int]:
    """Rename by ``mapping``; returns the entries and how many names changed."""
    changed = sum(1 for e in entries if mapping.get(e.name, e.name) != e.name)
    entries = _rename_all(entries, mapping)
    _check_unique(entries, stage)
    return entries, changed


def _renames(entries: list[Entry], log: _OptionLog, remap: Any, contiguous: bool, skip_variants: Any, variants: Any) -> list[Entry]:
    """Steps 2-4: remap rules, contiguous indices, enum variants."""
    remapper = remap if isinstance(remap, KeyRemapper) or remap is None else KeyRemapper(remap)
    if remapper:
        mapping, unmatched = remapper.remap_all([e.name for e in entries])
        entries, n = _rename_step(entries, mapping, "remapping")
        for rule in unmatched:
            log.record("remap", str(rule), 0, "", "matches no tensor name")
        if len(unmatched) < len(remapper.rules):
            log.record("remap", "", n, "renamed", "its rules leave every name as it is")
    if contiguous:
        entries, n = _rename_step(entries, _contiguous([e.name for e in entries]), "map_indices_contiguous")
        log.record("map_indices_contiguous", "", n, "renumbered", "the indices have no gaps")
    if skip_variants:
        only = skip_variants if isinstance(skip_variants, Mapping) else None
        entries, n = _rename_step(entries, {e.name: strip_enum_variants(e.name, only) for e in entries}, "skip_enum_variants")
        log.record("skip_enum_variants", "", n, "renamed", "no name has an enum-variant segment")
    for path, variant in (variants or {}).items():
        entries, n = _rename_step(entries, {e.name: insert_enum_variants(e.name, {path: variant}) for e in entries}, "enum_variants")
        log.record("enum_variants", f"{path}={variant}", n, "renamed", f"no tensor is under {path!r}")
    return entries


def _adapt(
    entries: list[Entry], types: ModuleTypes, adapter: ModuleAdapter | None, log: _OptionLog, report: ConversionReport,
    *, types_read_elsewhere: bool = False,
) -> list[Entry]:
    """Step 5: module types for every tensor (inferred in the layout the first layout-changing
    adapter reads), then the adapter's parts in order, each over the whole set (a structural
    module's kind takes its subtree). ``types_read_elsewhere``: a filter predicate sees the
    module types, so they matter without an adapter."""
    parts = adapter.parts() if adapter is not None else []
    side = next((p.direction.source_side for p in parts if p.direction is not None), "torch")
    types.run_inference(entries, side)
    current = []
    for e in entries:
        mt = types.resolve(e)
        current.append(e.replace(module_type=mt) if mt is not None else e)
    typed = any(e.module_type for e in current)
    changed = [0] * len(parts)
    for i, part in enumerate(parts):
        before = {(e.name, e.shape, e.dtype, e.steps) for e in current}
        adapted = part.adapt_all(current, types)
        changed[i] = sum(1 for e in adapted.entries if (e.name, e.shape, e.dtype, e.steps) not in before)
        report.modules.update(adapted.modules)
        report.guesses += adapted.guesses
        report.warnings += adapted.warnings
        current = adapted.entries
    _check_unique(current, "the adapter")
    for part, count in zip(parts, changed):
        why = "no float tensor to cast" if not part.uses_module_types else (
            "it acts on module types and no tensor has one: give module_types, type_rules or infer_types"
            if not typed else "no tensor of the module types it acts on needs a change"
        )  # fmt: skip
        log.record("adapter", part.name, count, "changed", why)
    if not any(p.uses_module_types for p in parts) and not types_read_elsewhere:
        for option, value, _ in types.given():
            log.record(option, value, 0, "", "no adapter uses module types (pytorch, to-pytorch or half)")
    else:
        for option, value, count in types.given():
            if option == "infer_types":
                log.record(option, value, count, "inferred", "could not infer any module type", noun="module type")
            else:
                log.record(option, value, count, "typed", "matches no tensor's module path")
    resolved = {e.module_path for e in current if e.module_type} | {e.source_name.rpartition(".")[0] for e in current if e.module_type}
    for path, ambiguity in sorted(types.ambiguous.items()):
        if path not in resolved:
            report.warnings.append(f"module type of {path or '<root>'!r} not inferred ({ambiguity.why}); give it with module_types")
    report.module_types = {e.module_path: e.module_type for e in current if e.module_type}
    report.guesses[:0] = [f"{path or '<root>'}: {why}" for path, why in sorted(types.guessed.items())]
    return current


def _filters(entries: list[Entry], keep_spec: Any, drop_spec: Any, log: _OptionLog, report: ConversionReport) -> list[Entry]:
    """Step 7: ``filter`` keeps, ``exclude`` drops; each regex must find some name."""
    for option, spec in (("filter", keep_spec), ("exclude", drop_spec)):
        for pattern in _patterns(spec):
            try:
                regex = compile_pattern(pattern)
            except InvalidPattern as exc:
                raise OptionError(f"{option}={pattern!r}: {exc.reason}") from None
            n = sum(1 for e in entries if regex.search(e.name))
            log.record(option, pattern, n, "matched", "matches no tensor name")
    keep, drop = PathFilter.coerce(keep_spec), PathFilter.coerce(drop_spec)
    if keep is None and drop is None:
        return entries
    kept = []
    for e in entries:
        if (keep is not None and not keep.matches(e.name, e.module_type)) or (drop is not None and drop.matches(e.name, e.module_type)):
            report.skipped.append(e.name)
        else:
            kept.append(e)
    if keep is not None:
        present = {e.name for e in entries}
        report.missing += [p for p in keep.paths if p not in present]
    return kept


def _quantization(
    entries: list[Entry], quantize: QuantScheme | None, include: str | None, dequantize: bool, target: Format | None,
    report: ConversionReport,
) -> list[Entry]:  # fmt: skip
    """Step 8: quantize the selected weights, or dequantize every QFloat tensor (each raises when
    it selects nothing, so neither is a silent no-op)."""
    if dequantize:
        from .quantizing import dequantize_entries

        if quantize is not None:
            raise OptionError("quantize and dequantize exclude each other")
        entries = dequantize_entries(entries)
    if quantize is not None:
        from .quantizing import quantize_entries

        if target is not None and not target.quantized:
            raise ConversionError(f"quantize: {target.name} cannot hold quantized (QFloat) tensors; write a .bpk")
        entries = quantize_entries(entries, quantize, include, report.quantized, report.warnings)
    elif include is not None:
        raise OptionError("quantize_include (--include) selects tensors to quantize: it needs quantize (--quantize)")
    return entries


def _param_ids(entries: list[Entry], mode: str) -> list[Entry]:
    """Step 9: keep the ids, give each tensor one derived from its name (the rule of
    ``derive_param_ids``: the same input, the same ids), or drop them."""
    if mode == "keep":
        return entries
    if mode == "drop":
        return [e.replace(param_id=None) if e.param_id is not None else e for e in entries]
    if mode != "new":
        raise OptionError(f"param_ids must be 'keep', 'new' or 'drop', not {mode!r}")
    from ..records._common import derive_param_ids

    return [e.replace(param_id=pid) for e, pid in zip(entries, derive_param_ids(e.name for e in entries))]


def _out_metadata(tset: TensorSet, target: Format | None, keep: bool, extra: Mapping[str, str] | None, stamp: bool) -> dict[str, str]:
    """The output's metadata: the source's (unless not ``keep``), Burn's stamp, then ``extra``."""
    out_meta = dict(tset.metadata) if keep else {}
    source_fmt = tset.format
    file_formats = {f.name for f in formats() if not f.directory}  # a "format" value naming one is ours to update
    if target is not None and target.name != source_fmt:
        target_format = target.name
        if out_meta.get("format") == source_fmt and source_fmt in file_formats:
            out_meta["format"] = target_format
        if stamp and target.stamped:
            from .. import __version__

            written = provenance_stamp(target_format, __version__)
            if out_meta.get("format") in file_formats:  # ours to update; not e.g. Hugging Face's "format": "pt",
                out_meta["format"] = written["format"]  # which transformers checks when loading
            for key, value in written.items():  # what is absent is added; a source's producer and version stay
                out_meta.setdefault(key, value)  # (they say who produced the weights)
    out_meta.update(extra or {})
    return out_meta


def transform(
    tset: TensorSet,
    *,
    top_level_key: str | None = None,
    remap: KeyRemapper | Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    map_indices_contiguous: bool = False,
    skip_enum_variants: bool | Mapping[str, str] = False,
    enum_variants: Mapping[str, str] | None = None,
    module_types: Mapping[str, str] | None = None,
    type_rules: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    infer_types: bool = False,
    best_guess: bool = False,
    module: TorchModule | None = None,
    adapter: ModuleAdapter | str | Iterable[Any] | None = None,
    expect: Any = None,
    allow_partial: bool = False,
    validate: bool = True,
    filter: FilterSpec = None,
    exclude: FilterSpec = None,
    param_ids: str = "keep",
    keep_metadata: bool = True,
    metadata: Mapping[str, str] | None = None,
    stamp: bool = True,
    quantize: QuantScheme | None = None,
    quantize_include: str | None = None,
    dequantize: bool = False,
    allow_unmatched: bool | Iterable[str] = False,
    target_format: str | Format | None = None,
    report: ConversionReport | None = None,
) -> tuple[TensorSet, ConversionReport]:
    """Apply the transformations (see the module docstring) to ``tset``, in burn-store's order.

    Args:
        tset: The tensors.
        top_level_key: Take one entry of a PyTorch checkpoint dict (``"state_dict"``); for other
            formats, the tensors under ``"<key>."`` with that prefix removed.
        remap: ``KeyRemapper`` rules, applied in order.
        map_indices_contiguous: Renumber indices: ``fc.0, fc.2, fc.4`` → ``fc.0, fc.1, fc.2``.
        skip_enum_variants: Drop variant segments (``conv.DwsConv.w`` → ``conv.w``); a mapping
            names them.
        enum_variants: Insert variant segments: ``{"conv": "DwsConv"}``.
        module_types: Module path → Burn module type.
        type_rules: ``(regex, type)`` rules for module types.
        infer_types: Guess the module types left from names and shapes.
        module: A ``torch.nn.Module`` giving exact module types.
        adapter: ``pytorch``, ``to-pytorch``, ``half``, ``cast=bf16``, chained, or an adapter.
        expect: The names (and shapes) the output must have, e.g. a Burn module's paths, looked
            up as Burn's ``Applier`` does.
        allow_partial: Do not fail on expected names without a tensor.
        validate: Fail on shape mismatches against ``expect``.
        filter: Keep only the output names that match (regexes, predicates, a ``PathFilter``).
        exclude: Drop the output names that match.
        param_ids: ``"keep"``, ``"new"`` (a fresh random u64 per tensor) or ``"drop"``.
        keep_metadata: Carry the source's metadata across.
        metadata: Entries to add or override.
        stamp: Set the keys Burn's stores write (``format``, ``producer``, ``version``).
        quantize: Quantize the weights to this scheme, as Burn's CPU backend does.
        quantize_include: A regex choosing the tensors to quantize instead of the weights.
        dequantize: Turn every QFloat tensor into its F32 values.
        best_guess: Where names and shapes cannot tell a module's type (a square weight with
            bias: Linear or Hugging Face's Conv1D) or a setting its layout depends on (a
            transformer layer's ``norm_first``), take the best guess instead of refusing;
            ``report.guesses`` names each.
        allow_unmatched: Tolerate options that change nothing (True), or the options named.
        target_format: The format the result is written as (a name or a ``Format``): what it can
            hold decides whether ``quantize`` applies and whether the metadata gets the producer's
            stamp; None: not known.
        report: A report to fill (a new one by default).

    Returns:
        The transformed tensors and the report.

    Raises:
        ConversionError: ``target_format`` is no known format, names collide, the target format
            cannot hold quantized tensors and ``quantize`` is given, or — with ``expect`` — shapes mismatch (unless
            ``validate=False``) or tensors are missing (unless ``allow_partial``); the report is
            attached as ``error.report``.
        UnmatchedOptionError: An option changes nothing (an adapter with nothing to adapt, module
            types no adapter uses or no path matches, a remap rule or filter matching no name...)
            and ``allow_unmatched`` does not name it.
        OptionError: An option is malformed or misused (``quantize`` with ``dequantize``,
            ``quantize_include`` without ``quantize``, an unknown ``param_ids`` mode).
    """
    target = None if target_format is None else get_format(target_format)
    report = report or ConversionReport(source_format=tset.format, target_format=None if target is None else target.name)
    report.source_format = report.source_format or tset.format
    if top_level_key is not None and tset.top_level_key != top_level_key:
        tset = _select_top_level(tset, top_level_key, report)
    report.skipped_entries.update(tset.skipped)
    entries = list(tset.entries)
    _check_unique(entries, "reading")
    log = _OptionLog(allow_unmatched)
    entries = _renames(entries, log, remap, map_indices_contiguous, skip_enum_variants, enum_variants)

    expected: dict[str, tuple[int, ...] | None] | None = None
    expected_types: dict[str, str] = {}
    if expect is not None:
        expected, expected_types = _expectation(expect)
    torch_types = dict(tset.module_types)
    if module is not None:
        from .torch_live import module_types_of

        torch_types.update(module_types_of(module))
    torch_types.update(expected_types)
    types = ModuleTypes(module_types, type_rules, torch_types=torch_types, infer=infer_types, best_guess=best_guess)
    adapter = parse_adapter(adapter)
    predicates = any(spec is not None and not _patterns(spec) for spec in (filter, exclude))
    entries = _adapt(entries, types, adapter, log, report, types_read_elsewhere=predicates)
    if best_guess:
        log.record("best_guess", "", len(report.guesses), "taken", "names and shapes left nothing to guess", noun="guess")
    if expected is not None:
        entries = _match_expected(entries, expected, types, adapter, report)
    entries = _filters(entries, filter, exclude, log, report)
    entries = _quantization(entries, quantize, quantize_include, dequantize, target, report)
    entries = _param_ids(entries, param_ids)
    out_meta = _out_metadata(tset, target, keep_metadata, metadata, stamp)
    scalars = dict(tset.scalars)
    typed = adapter is not None and any(p.uses_module_types for p in adapter.parts())
    made = Counter(e.source_name for e in entries)  # a split source makes several tensors: not a rename
    for e in entries:
        report.applied.append(e.name)
        if e.name != e.source_name and made[e.source_name] == 1:
            report.renamed[e.source_name] = e.name
        if e.steps:
            report.transformed[e.name] = list(e.steps)
        if typed:
            report.rules[e.name] = e.rule.to_dict() if e.rule else {"rule": "unchanged: no module type"}
    report.metadata = out_meta
    report.scalars = len(scalars)
    report.bytes = sum(e.byte_len or 0 for e in entries)
    log.check(report)
    _raise_for_expectations(report, validate, expected is not None and not allow_partial)
    out = TensorSet(entries, out_meta, scalars, format=tset.format, module_types=tset.module_types, top_level_key=tset.top_level_key,
                    closers=tset.closers, skipped=dict(tset.skipped))  # fmt: skip
    return out, report


def _raise_for_expectations(report: ConversionReport, validate: bool, need_all: bool) -> None:
    if report.errors and validate:
        err = ConversionError("tensors do not fit the expected shapes:\n  " + "\n  ".join(report.errors))
        err.report = report  # type: ignore[attr-defined]
        raise err
    if report.missing and need_all:
        err = ConversionError(f"missing tensors: {report.missing}" + _hints(report))
        err.report = report  # type: ignore[attr-defined]
        raise err


def _hints(report: ConversionReport) -> str:
    import difflib

    lines = []
    for name in report.missing[:10]:
        close = difflib.get_close_matches(name, report.unused, n=1, cutoff=0.6)
        if close:
            lines.append(f"\n  {name}: did you mean {close[0]!r}?")
    return "".join(lines)


def _match_expected(
    entries: list[Entry],
    expected: Mapping[str, tuple[int, ...] | None],
    types: ModuleTypes,
    adapter: ModuleAdapter | None,
    report: ConversionReport,
) -> list[Entry]:
    """Burn's ``Applier`` lookup: exact name, enum-variant-free name, alternative param name."""
    by_name = {e.name: e for e in entries}
    taken: set[str] = set()
    out = []
    for name, shape in expected.items():
        candidates = [name]
        plain = strip_enum_variants(name)
        if plain != name:
            candidates.append(plain)
        if adapter is not None:
            head, dot, param = name.rpartition(".")
            mt = types.resolve_path(head, plain.rpartition(".")[0])
            alt = adapter.alternative_name(param, mt)
            if alt is not None:
                candidates.append(f"{head}{dot}{alt}")
                if plain != name:
                    phead = plain.rpartition(".")[0]
                    candidates.append(f"{phead}{'.' if phead else ''}{alt}")
        found = next((c for c in candidates if c in by_name and c not in taken), None)
        if found is None:
            report.missing.append(name)
            continue
        entry = by_name[found]
        taken.add(found)
        if shape is not None and tuple(entry.shape) != tuple(shape):
            report.errors.append(f"{name}: shape mismatch, expected {list(shape)} but found {list(entry.shape)}")
            continue
        if found != name:
            entry = entry.replace(name=name, step=f"matched as {found}")
        out.append(entry)
    report.unused = sorted(n for n in by_name if n not in taken)
    return out


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------
def convert(
    source: Any,
    target: str | os.PathLike[str],
    *,
    from_format: str | None = None,
    to_format: str | None = None,
    overwrite: bool = False,
    bool_store: str | BoolStore = BoolStore.U8,
    compress: bool = False,
    progress: ProgressSetting = None,
    legacy_ok: bool = False,
    npz_metadata: bool = False,
    **options: Any,
) -> ConversionReport:
    """Convert ``source`` to the file ``target``, with Burn's transformations as options.

    Nothing is written when anything fails; each output file is replaced atomically.

    Args:
        source: A path or URL, bytes, a ``TensorSet``, a torch ``state_dict`` or ``nn.Module``.
        target: The output path.
        from_format: The source's format; by default from its content.
        to_format: The output's format; by default from ``target``'s extension.
        overwrite: Replace an existing ``target`` (it is kept otherwise).
        bool_store: How Bool tensors are stored in a burnpack output (Burn's ``BoolStore``).
        compress: Compress an ``.npz`` output (refused for other formats).
        progress: A callable fed the bytes written, or a setting of
            ``burnpack.core.progress.progress_for`` (``"auto"``: a bar on a terminal for 64 MiB or
            more; ``"always"``: a bar on a terminal, lines otherwise).
        legacy_ok: Read a .bpk from an older Burn as its writer meant it.
        npz_metadata: Give an ``.npz`` output a ``__metadata__`` member with the metadata and the
            dtypes numpy cannot name.
        **options: ``transform``'s options, and the caps ``read_tensors`` reads the source within
            (``max_pickle_depth``, ``max_view_expansion``, ``max_inflate_bytes``,
            ``max_inflate_ratio``, ``max_index_bytes``, ``max_metadata_bytes``).

    Returns:
        What the conversion did.

    Raises:
        OutputExistsError: ``target`` exists and ``overwrite`` is False.
        OptionError: An option is unknown, or does not apply to the formats.
        UnmatchedOptionError: An option changed nothing (see ``transform``).
        ConversionError: The source cannot be read or mapped, or the output cannot hold it.
    """
    started = time.monotonic()
    max_shard_size = options.pop("max_shard_size", None)
    shard_size = None if max_shard_size is None else parse_size(max_shard_size)
    out_path, out_format = resolve_output(target, to_format, max_shard_size=shard_size)
    if npz_metadata and "npz_metadata" not in out_format.write_options:
        raise OptionError(f"npz_metadata=True applies to .npz output, not {out_format.name}")
    if not out_format.directory:
        if os.path.isdir(target) or out_path.is_dir():
            raise ConversionError(f"{target} is a directory; give the output's file name")
        if not overwrite and out_path.exists():
            from ..errors import OutputExistsError

            raise OutputExistsError(out_path)
    top_level_key = options.get("top_level_key")
    caps = take_caps(options)
    tset = read_tensors(source, from_format, top_level_key=top_level_key, bool_store=bool_store, legacy_ok=legacy_ok, **caps)
    try:
        written_as = get_format(out_format.family) if out_format.family else out_format  # what the tensors are written as
        report = ConversionReport(
            source=_describe(source), target=str(out_path), source_format=tset.format, target_format=written_as.name
        )
        result, report = transform(tset, target_format=written_as, report=report, **options)
        _refuse_quantized(result, written_as)
        _note_losses(result, out_format, report, WriteOptions(npz_metadata=npz_metadata))
        report_ties(tset, result, out_format, report)
        bar = progress_for(progress, result.nbytes, "converting")
        write_tensors(result, out_path, out_format, overwrite=overwrite, progress=bar, compress=compress,
                      max_shard_size=shard_size, npz_metadata=npz_metadata)  # fmt: skip
        finish(bar)
    finally:
        tset.close()
    report.seconds = time.monotonic() - started
    return report


def _describe(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return f"<{len(source)} bytes>"
    return f"<{type(source).__name__}>"


def _refuse_quantized(tset: TensorSet, target: Format) -> None:
    """A format that holds no QFloat tensors (all but .bpk): one line naming the first, its scheme
    and the way out."""
    if target.quantized:
        return
    quantized = [e for e in tset.entries if e.dtype.is_quantized]
    if quantized:
        first, more = quantized[0], len(quantized) - 1
        others = f" (and {plural(more, 'other QFloat tensor')})" if more else ""
        raise ConversionError(
            f"tensor {first.name!r}{others}: {target.name} cannot hold {dtype_label(first.dtype)}; "
            "pass dequantize=True to write the F32 values"
        )


def report_ties(source: TensorSet, result: TensorSet, target: Format, report: Any) -> None:
    """Tied weights of ``source`` (entries of one tensor, ``Entry.tie``) that ``result`` still
    holds under several names: listed in ``report.tied`` when ``target`` writes them once (it
    aliases tensors and they are still one tensor), else a warning saying why each name gets its
    own tensor. ``report``: a conversion's or a checkpoint's report (``warnings``, ``tied``)."""
    groups: dict[str, list[str]] = {}
    for e in source.entries:
        if e.tie is not None:
            groups.setdefault(e.tie, []).append(e.source_name)
    by_source = {e.source_name: e for e in result.entries}
    for names in groups.values():
        kept = [by_source[n] for n in names if n in by_source]
        if len(kept) < 2:
            continue
        written = [e.name for e in kept]
        still_one = kept[0].tie is not None and all(e.tie == kept[0].tie for e in kept)
        if target.aliases_tensors and still_one:
            report.tied.append(written)
            continue
        changes = "; ".join(f"{e.name}: {', '.join(e.steps)}" for e in kept if e.steps)
        why = f"the conversion changed them apart{f' ({changes})' if changes else ''}" if target.aliases_tensors or not still_one else (
            f"a {target.label} has no place for one tensor under several names")  # fmt: skip
        report.warnings.append(f"tied weights {', '.join(written)} (one tensor in the source) written as {len(kept)} tensors: {why}")


def _note_losses(tset: TensorSet, target: Format, report: ConversionReport, options: WriteOptions) -> None:
    """Report, in ``warnings`` (which ``--json`` lists), what the target container cannot hold:
    one rule for every format (``Format.holds``), then the format's own notes on how it stores
    elements (``Format.notes``; by default Flex32 and Bool stores by ``holds``)."""
    what = target.noun or target.family or target.name
    ids = sum(1 for e in tset.entries if e.param_id is not None)
    for kind, count, one, many in (("param ids", ids, "param id", "param ids"),
                                   ("scalars", len(tset.scalars), "scalar", "scalars"),
                                   ("metadata", len(tset.metadata), "metadata entry", "metadata entries")):  # fmt: skip
        if count and kind not in target.holds:
            report.warnings.append(f"{plural(count, one, many)} dropped: {what} has no place for them")
    report.warnings += target.notes(tset, options) if target.notes is not None else _element_notes(tset, target)


def _element_notes(tset: TensorSet, target: Format) -> list[str]:
    """Flex32 and Bool stores, where ``target`` holds no place for them."""
    notes = []
    for e in tset.entries:
        if e.dtype == DType.Flex32 and "Flex32" not in target.holds:
            notes.append(f"{e.name}: Flex32 written as F32")
        elif e.dtype == DType.Bool(BoolStore.U32) and "Bool stores" not in target.holds:
            notes.append(f"{e.name}: {dtype_name(e.dtype)} written as 1-byte bool")
    return notes