"""Model parameters and buffers: a PyTorch ``state_dict`` ↔ a Burn ``ModuleRecord``.

PyTorch → Burn: BatchNorm ``num_batches_tracked`` has no Burn field (kept aside), names go
through the user's remap / enum variants / contiguous indices, then :class:`PyTorchToBurnAdapter`
transposes Linear weights and renames norm ``weight``/``bias`` to ``gamma``/``beta``; each tensor
gets a ``param_id`` derived from its Burn path (:func:`burnpack.records.derive_param_ids`). A 1-D or 2-D ``weight`` whose module type stays unknown is an error,
never a guess. Burn → PyTorch reverses it, with names from the stored map when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...records import ModuleRecord, derive_param_ids
from ..adapters import BurnToPyTorchAdapter, ModuleTypes, PyTorchToBurnAdapter
from ..layouts import kind_of
from ..converter import report_ties, transform
from ..registry import native_format
from ...codec._generated.metadata import BoolStore
from .._io import entries_from_arrays
from ...errors import ConversionError
from ..remap import KeyRemapper
from ..tensors import Entry, TensorSet
from .state import CheckpointReport, TorchTrainingState, stored_array

BATCHES_TRACKED = "num_batches_tracked"


@dataclass
class BurnModel:
    """A model mapped to Burn: the record's entries (with param ids) and how they relate to
    the PyTorch names (``by_torch``), what was excluded, and the dropped buffers."""

    entries: list[Entry]
    by_torch: dict[str, Entry]
    excluded: set[str] = field(default_factory=set)
    dropped: dict[str, np.ndarray] = field(default_factory=dict)


def structural(name: str) -> bool:
    """Whether the module type ``name`` (``Lstm``) splits or merges tensors."""
    kind = kind_of("Struct:" + name)
    return kind is not None and kind.structural


def _owners(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts))]


def check_types(entries: Sequence[Entry]) -> None:
    """Refuse weights whose module is unknown: transposing (Linear) or renaming (norms) them
    would be a guess."""
    unknown = [e.name for e in entries if e.module_type is None and e.param == "weight" and e.rank in (1, 2)]
    if unknown:
        error = ConversionError(
            "cannot tell which module owns these weights, so cannot decide whether to transpose (Linear) or "
            f"rename (norms) them: {unknown}. Pass module= (the torch.nn.Module) or "
            "module_types={'<module path>': 'Linear' | 'Embedding' | 'LayerNorm' | ...}"
        )
        error.cli_message = (  # type: ignore[attr-defined]
            f"cannot tell which module owns {unknown}, so cannot decide whether to transpose (Linear) or rename "
            "(norms) them: give --module-type PATH=TYPE (Linear, Embedding, LayerNorm...) or --type-rule REGEX=TYPE"
        )
        raise error


def refuse_structural(modules: Mapping[str, str]) -> None:
    """A training state whose model has modules the layouts split or merge (LSTM, attention,
    transformer layers): their optimizer state would have to be split and merged with them, which
    a checkpoint conversion does not do yet — refused, naming them, rather than mapped wrong."""
    if modules:
        listed = ", ".join(f"{path or '<root>'} ({kind})" for path, kind in sorted(modules.items()))
        raise ConversionError(
            f"the model has modules whose tensors Burn lays out as other tensors: {listed}; a training checkpoint's "
            "optimizer state is not split and merged with them: convert the model alone (burnpack convert --adapter pytorch)"
        )


def model_to_burn(state: TorchTrainingState, report: CheckpointReport, *, seed: int | None, **options: Any) -> BurnModel:
    """The Burn model record's entries; ``options`` are :func:`transform`'s renaming and
    module-type options (and ``allow_unmatched``)."""
    dropped = {name: array for name, array in state.model.items() if name.rpartition(".")[2] == BATCHES_TRACKED}
    entries = entries_from_arrays(((n, a) for n, a in state.model.items() if n not in dropped), BoolStore.U8)
    report.dropped = list(dropped)
    if dropped:
        report.not_mapped.append(f"{len(dropped)} BatchNorm num_batches_tracked buffer(s): Burn's BatchNorm has none (kept in torch.model metadata)")
    allow = options.pop("allow_unmatched", False)
    adapted, mapped = transform(
        TensorSet(entries, format="pytorch", module_types=state.module_types), adapter=PyTorchToBurnAdapter(),
        allow_unmatched=True if allow is True else {"adapter", "infer_types", *(allow or ())}, **options,
    )  # the adapter and type inference are implied here, so a model they leave alone is fine
    report.options, report.warnings = dict(mapped.options), report.warnings + mapped.warnings
    refuse_structural({path: m["type"] for path, m in mapped.modules.items() if structural(m["type"])})
    report_ties(TensorSet(entries), adapted, native_format(), report)  # a record has a tensor per path
    check_types(adapted.entries)
    final = [e.replace(param_id=pid) for e, pid in zip(adapted.entries, derive_param_ids((e.name for e in adapted.entries), seed=seed))]
    excluded = {e.name for e in entries} - {e.source_name for e in final}
    if excluded:
        report.not_mapped.append(f"{len(excluded)} tensor(s) excluded: {sorted(excluded)}")
    for e in final:
        if e.name != e.source_name:
            report.renamed[e.source_name] = e.name
        if any(s.startswith("transposed") for s in e.steps):
            report.transposed.append(e.name)
    report.model_tensors = len(final)
    return BurnModel(final, {e.source_name: e for e in final}, excluded, dropped)


def model_metadata(state: TorchTrainingState, model: BurnModel) -> dict[str, Any]:
    """What converting back needs and Burn does not hold: order, names, types, dropped buffers."""
    return {
        "order": list(state.model),
        "names": {e.source_name: e.name for e in model.entries},
        "types": {e.module_path: e.module_type for e in model.entries if e.module_type},
        "dropped": {n: {"dtype": str(a.dtype), "value": a.tolist()} for n, a in model.dropped.items()},
    }


@dataclass
class TorchModel:
    """A Burn model record mapped back: the state dict and, per Burn name, its entry and torch name."""

    state_dict: dict[str, np.ndarray]
    by_burn: dict[str, tuple[Entry, str]]


def model_to_pytorch(
    record: ModuleRecord, meta: Mapping[str, Any], types: ModuleTypes, remap: KeyRemapper | None, module: Any, report: CheckpointReport
) -> TorchModel:
    """The PyTorch ``state_dict`` of a Burn model record (``meta``: the stored ``torch.model``)."""
    entries = [Entry(t.name, t.dtype, t.shape, t.numpy, param_id=t.param_id) for t in record.tensors]
    types.run_inference(entries, "burn")
    typed = [e.replace(module_type=types.resolve(e)) for e in entries]
    paths = {p for e in typed for p in _owners(e.name)}
    refuse_structural({p: str(found.spec) for p in paths if (found := types.lookup(p, count=False)) and structural(found.spec.short)})
    check_types(typed)
    adapter = BurnToPyTorchAdapter()
    torch_names = {burn: torch for torch, burn in meta.get("names", {}).items()}
    model_sd: dict[str, np.ndarray] = {}
    by_burn: dict[str, tuple[Entry, str]] = {}
    for e in typed:
        back = adapter.adapt(e)
        name = torch_names.get(e.name) or (remap.remap(back.name) if remap else back.name)
        if name != e.name:
            report.renamed[e.name] = name
        if any(s.startswith("transposed") for s in back.steps):
            report.transposed.append(name)
        model_sd[name] = np.asarray(back.numpy())
        by_burn[e.name] = (e, name)
    _restore_batches_tracked(model_sd, meta.get("dropped"), typed, by_burn, module, report)
    order = meta.get("order") or (list(module.state_dict()) if module is not None else None)
    if order is not None:
        missing = [n for n in order if n not in model_sd]
        if missing:
            report.warnings.append(f"model tensors the PyTorch side expects but the Burn record lacks: {missing}")
        model_sd = {n: model_sd[n] for n in order if n in model_sd} | {n: a for n, a in model_sd.items() if n not in order}
    report.model_tensors = len(model_sd)
    return TorchModel(model_sd, by_burn)


def _restore_batches_tracked(
    model_sd: dict[str, np.ndarray], dropped: Mapping[str, Any] | None, typed: Sequence[Entry],
    by_burn: Mapping[str, tuple[Entry, str]], module: Any, report: CheckpointReport,
) -> None:  # fmt: skip
    """BatchNorm's ``num_batches_tracked``: as stored, else 0 (Burn does not track it)."""
    if dropped is not None:
        for name, info in dropped.items():
            model_sd[name] = stored_array(info["value"], info["dtype"])  # checked by torch_meta
        return
    want = list(module.state_dict()) if module is not None else None
    for e in typed:
        if e.module_type == "Struct:BatchNorm" and e.param == "running_var":
            name = by_burn[e.name][1].rpartition(".")[0] + "." + BATCHES_TRACKED
            if want is None or name in want:
                model_sd[name] = np.array(0, dtype=np.int64)
                report.warnings.append(f"{name} set to 0: Burn does not track it")


def layout_adapter(adapter: Any, entry: Entry) -> Any:
    """A function putting an optimizer-state array of ``entry``'s parameter in the adapter's layout
    (Adam moments are transposed together with their Linear weight)."""

    def adapt(array: np.ndarray) -> np.ndarray:
        probe = Entry(entry.name, entry.dtype, np.shape(array), lambda: np.asarray(array), module_type=entry.module_type)
        return np.asarray(adapter.adapt(probe).numpy())

    return adapt
