"""What a ``burnpack view`` page shows, gathered as JSON-ready data (the page draws it).

Three kinds of report: one input (a pack or any file ``convert`` reads), two inputs (their diff,
with the second input's tensors), and a Burn Learner checkpoint directory (its epochs, metric
curves, retention and weight changes, with the newest model's tensors). Everything comes from the
public API: ``load``, the interop readers, ``diff_packs``, ``Checkpoints`` and the records.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..core.diff import diff_packs, layout_of
from ..core.dump import scalar_json
from ..errors import BurnpackError
from ..core.quant import dtype_label
from ..core.reader import load
from ..records.checkpoint import Checkpoints, KeepLastNCheckpoints, LossHistory, burn_valid_losses, inspect_epoch
from ..records.detect import detect_record_kind
from .stats import chunks, quantization, value_stats
from ..core.sidefile import JSON, JSONObject

_LOG = re.compile(r"^(?P<name>[^/\\]+)\.log$")


def _json_number(value: float | None) -> float | str | None:
    """A float JSON can hold; NaN and infinities as text."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _record_kind(pack: Any) -> tuple[str, str]:
    kind = detect_record_kind(pack)
    return kind.kind, str(kind)


def _shape_numel(shape: Any) -> int:
    return math.prod(int(d) for d in shape)


def pack_report(pack: Any, source: str, *, stats: bool = True) -> JSONObject:
    """Overview, tensors (data order) and, with ``stats``, each tensor's exact statistics."""
    views = pack.tensors()
    kind, detail = _record_kind(pack)
    by_dtype: dict[str, dict[str, int]] = {}
    by_module: dict[str, list[int]] = {}
    rows = []
    value_stats_out: list[Any] = []
    quant: dict[str, Any] = {}
    for index, view in enumerate(views):
        label = "QFloat" if view.dtype.is_quantized else dtype_label(view.dtype)
        numel = _shape_numel(view.shape)
        nbytes = max(int(view.byte_len or 0), 0)
        entry = by_dtype.setdefault(label, {"tensors": 0, "elements": 0, "bytes": 0})
        entry["tensors"] += 1
        entry["elements"] += numel
        entry["bytes"] += nbytes
        module = by_module.setdefault(view.name.split(".")[0], [0, 0])
        module[0] += numel
        module[1] += nbytes
        offsets = list(view.data_offsets) if hasattr(pack, "data_section_start") else None
        pid = None if view.param_id is None else str(view.param_id)  # u64: more than a JavaScript number holds exactly
        rows.append([view.name, dtype_label(view.dtype), [int(d) for d in view.shape], numel, nbytes, pid, offsets])
        if stats:
            value_stats_out.append(_stats_json(value_stats(view)))
            if view.dtype.is_quantized:
                q = quantization(view)
                q["scales"] = _stats_json(q["scales"])
                quant[str(index)] = q
    layout = None
    if hasattr(pack, "data_section_start"):
        data_end = pack.data_section_start + max((r[6][1] for r in rows), default=0)
        layout = {
            "version": pack.version,
            "file_size": pack.file_size,
            "header": 10,
            "metadata_size": pack.metadata_size,
            "data_section_start": pack.data_section_start,
            "alignment_padding": pack.data_section_start - 10 - pack.metadata_size,
            "data_bytes": sum(r[4] for r in rows),
            # reading the padding between tensors reads the data section: only with statistics
            "nonzero_padding_bytes": layout_of(pack)["nonzero padding bytes"] if stats else None,
            "trailing_bytes": max(pack.file_size - data_end, 0),
        }
    return {
        "source": source,
        "record_kind": kind,
        "record_detail": detail,
        "layout": layout,
        "totals": {
            "tensors": len(rows),
            "parameters": sum(t["elements"] for t in by_dtype.values()),
            "bytes": sum(t["bytes"] for t in by_dtype.values()),
            "by_dtype": by_dtype,
        },
        "by_module": sorted(([name, p, b] for name, (p, b) in by_module.items()), key=lambda m: -m[1]),
        "metadata": sorted([k, v] for k, v in pack.metadata.items()),
        "scalars": [[k, scalar_json(s)["type"], str(scalar_json(s)["value"])] for k, s in sorted(pack.scalars.items())],
        "tensors": rows,
        "stats": value_stats_out if stats else None,
        "quant": quant,
    }


def _stats_json(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    # the bin edges follow from min, max and the bin count (numpy's rule); leaving them out
    # keeps a page of 100,000 tensors at a third of the size
    return {k: _json_number(v) if isinstance(v, float) else v for k, v in stats.items() if k != "edges"}


def diff_report(a: Any, b: Any, a_name: str, b_name: str) -> JSONObject:
    """``diff_packs(a, b)`` as ``burnpack diff --json`` gives it, with every name of both sides."""
    result = diff_packs(a, b)
    return {"a": a_name, "b": b_name, "a_names": list(a.names), "b_names": list(b.names), "result": result.to_json()}


def metric_logs(artifact_dir: Path) -> dict[str, dict[str, JSONObject]]:
    """``{split: {metric: {epoch: value}}}`` from Burn's ``FileMetricLogger`` files
    (``<artifact_dir>/{train,valid}/epoch-N/<Metric>.log``), as Burn aggregates each epoch."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for split in ("train", "valid"):
        first = artifact_dir / split / "epoch-1"
        if not first.is_dir():
            continue
        names = sorted(m["name"] for p in first.iterdir() if (m := _LOG.match(p.name)) and p.is_file())
        for name in names:
            values = burn_valid_losses(artifact_dir, name, split=split)
            if values:
                out.setdefault(split, {})[name] = {str(e): _json_number(v) for e, v in values.items()}
    return out


def _keep_last(strategy: Any) -> int | None:
    for inner in getattr(strategy, "strategies", [strategy]):
        if isinstance(inner, KeepLastNCheckpoints):
            return inner.num_keep
    return None


def module_changes(before: Any, after: Any) -> dict[str, float | str | None]:
    """Per module (a tensor name without its last part): ``‖after − before‖ / ‖before‖`` over the
    numeric tensors both have with the same shape, streamed chunk by chunk."""
    sums: dict[str, list[float]] = {}
    for name in after.names:
        if name not in before:
            continue
        x, y = before[name], after[name]
        if tuple(x.shape) != tuple(y.shape) or x.dtype.is_quantized or y.dtype.is_quantized:
            continue
        acc = sums.setdefault(name.rpartition(".")[0] or name, [0.0, 0.0])
        for cx, cy in zip(chunks(x), chunks(y)):
            if cx.dtype.kind == "b":
                continue
            fx, fy = cx.astype(np.float64), cy.astype(np.float64)
            acc[0] += float(np.square(fy - fx).sum())
            acc[1] += float(np.square(fx).sum())
    out: dict[str, float | str | None] = {}
    for module, (diff, base) in sums.items():
        out[module] = _json_number(math.sqrt(diff) / math.sqrt(base)) if base > 0 else (0.0 if diff == 0 else None)
    return out


def is_checkpoint_directory(path: str) -> bool:
    """A directory holding a Burn Learner's checkpoints (``checkpoint/model-N.bpk``... or the files themselves)."""
    directory = Path(path)
    return directory.is_dir() and bool(Checkpoints.find(directory).epochs())


def checkpoint_report(path: str, *, stats: bool = True) -> tuple[JSONObject, Path | None]:
    """Epochs with their files, metric curves, retention and weight changes; and the newest model file."""
    checkpoints = Checkpoints.find(path)
    epochs = checkpoints.epochs()
    artifact_dir = checkpoints.directory.parent if checkpoints.directory.name == "checkpoint" else checkpoints.directory
    details = [inspect_epoch(checkpoints, e) for e in epochs]
    keep = _keep_last(checkpoints.strategy)
    best = LossHistory(checkpoints.valid_losses).find_epoch() if checkpoints.valid_losses else None
    last = max(epochs, default=0)
    for detail in details:
        reasons = []
        if keep is not None and detail["epoch"] > last - keep:
            reasons.append(f"one of the last {keep}")
        if best == detail["epoch"]:
            reasons.append("lowest validation loss")
        detail["kept_because"] = reasons or ["not deleted by the strategy yet"]
    changes: dict[str, Any] = {"pairs": [], "modules": {}, "errors": {}}
    models = [e for e in epochs if "model" in checkpoints.files(e)]
    if stats:
        for before, after in zip(models, models[1:]):
            pair = f"{before}-{after}"
            changes["pairs"].append([before, after])
            try:
                with load(checkpoints.files(before)["model"]) as a, load(checkpoints.files(after)["model"]) as b:
                    for module, value in module_changes(a, b).items():
                        changes["modules"].setdefault(module, {})[pair] = value
            except BurnpackError as exc:  # a file cut short by a crash: the other epochs still show
                changes["errors"][pair] = f"{exc.variant}: {exc}"
    newest = None
    for epoch in reversed(models):  # the newest model that opens
        try:
            load(checkpoints.files(epoch)["model"]).close()
        except BurnpackError:
            continue
        newest = checkpoints.files(epoch)["model"]
        break
    report = {
        "directory": str(checkpoints.directory),
        "epochs": details,
        "deleted": [e for e in range(1, last + 1) if e not in epochs],
        "keep_last": keep,
        "best_epoch": best,
        "valid_losses": {str(e): _json_number(v) for e, v in checkpoints.valid_losses.items()},
        "metrics": metric_logs(artifact_dir),
        "changes": changes,
        "model_epoch": int(newest.stem.rpartition("-")[2]) if newest is not None else None,
    }
    return report, newest


def page_data(title: str, **parts: JSON) -> JSONObject:
    """The page's data: ``pack``, ``diff`` and ``checkpoint`` parts (None when absent)."""
    return {"title": title, "generator": f"burnpack {__version__}", **{k: parts.get(k) for k in ("pack", "diff", "checkpoint")}}
