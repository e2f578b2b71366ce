"""What a ``burnpack view`` page shows, gathered as JSON-ready data (the page draws it).

Three kinds of report: one input (a pack or any file ``convert`` reads), two inputs (their diff,
with the second input's tensors), and a Burn Learner checkpoint directory (its epochs, metric
curves and weight changes, with the newest model's tensors). Everything comes from the public
API: ``load``, the interop readers, ``diff_packs``, ``Checkpoints`` and the records.

Change is measured one way on every page: ``‖B − A‖ / ‖A‖`` (:func:`burnpack.core.diff.relative_change`)
of a tensor, or of a module's tensors together; the reports carry the norms, so that the page adds
them up over any subtree the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.diff import change_sums, diff_packs, layout_of, relative_change, sum_of_squares
from ..core.dump import scalar_json
from ..errors import BurnpackError
from ..core.dtypes import dtype_label
from ..records.checkpoint import Checkpoints, LossHistory, burn_valid_losses, inspect_epoch
from ..records.detect import detect_record_kind
from ..core.progress import ProgressSetting, finish, progress_for
from .stats import chunks, quantization, value_stats

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from ..core.sidefile import JSON, JSONObject

_LOG = re.compile(r"^(?P<name>[^/\\]+)\.log$")


def _json_number(value: float | None) -> float | str | None:
    """A float JSON can hold; NaN and infinities as text."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _nbytes(view: Any) -> int:
    """A tensor's bytes as the page and the progress count them (a range a file claims backwards: 0)."""
    return max(int(view.byte_len or 0), 0)


def _shape_numel(shape: Any) -> int:
    return math.prod(int(d) for d in shape)


def pack_report(pack: Any, source: str, *, stats: bool = True, progress: ProgressSetting = None) -> JSONObject:
    """Overview, tensors (data order) and, with ``stats``, each tensor's exact statistics
    (``progress`` fed the bytes of each tensor read: :func:`~burnpack.core.progress.progress_for`)."""
    views = pack.tensors()
    bar = progress_for(progress if stats else "never", sum(_nbytes(v) for v in views), "statistics")
    record = detect_record_kind(pack)
    by_dtype: dict[str, dict[str, int]] = {}
    by_module: dict[str, list[int]] = {}
    rows = []
    value_stats_out: list[Any] = []
    quant: dict[str, Any] = {}
    for index, view in enumerate(views):
        label = "QFloat" if view.dtype.is_quantized else dtype_label(view.dtype)
        numel = _shape_numel(view.shape)
        nbytes = _nbytes(view)
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
            bar(nbytes)
    finish(bar)
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
        "record_kind": record.kind,
        "record_detail": str(record),
        "scheduler": record.meaning,  # what a scheduler record's values mean (u64::MAX, ...)
        "layout": layout,
        "totals": {
            "tensors": len(rows),
            "parameters": sum(t["elements"] for t in by_dtype.values()),
            "bytes": sum(t["bytes"] for t in by_dtype.values()),
            "by_dtype": by_dtype,
        },
        "by_module": _largest(sorted(([name, p, b] for name, (p, b) in by_module.items()), key=lambda m: -m[1])),
        "metadata": sorted([k, v] for k, v in pack.metadata.items()),
        "scalars": [[k, scalar_json(s)["type"], str(scalar_json(s)["value"])] for k, s in sorted(pack.scalars.items())],
        "tensors": rows,
        "stats": value_stats_out if stats else None,
        "quant": quant,
    }


def _largest(modules: list[list[Any]], shown: int = 24) -> list[list[Any]]:
    """The ``shown`` largest modules, and the others summed up as one ``(N more)``."""
    if len(modules) <= shown:
        return modules
    rest = modules[shown:]
    return [*modules[:shown], [f"({len(rest)} more)", sum(m[1] for m in rest), sum(m[2] for m in rest)]]


def _stats_json(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    # the bin edges follow from min, max and the bin count (numpy's rule); leaving them out
    # keeps a page of 100,000 tensors at a third of the size
    return {k: _json_number(v) if isinstance(v, float) else v for k, v in stats.items() if k != "edges"}


def diff_report(a: Any, b: Any, a_name: str, b_name: str, *, progress: ProgressSetting = None) -> JSONObject:
    """``diff_packs(a, b)`` as ``burnpack diff --json`` gives it, every name of both sides, and for
    each name the norms ``[‖B − A‖, ‖A‖]`` of a tensor both have with the same element count
    (None for the others), unchanged tensors included: a module's change is over all its tensors.
    ``progress`` shows the comparison, then the reading of the unchanged tensors for their norms."""
    result = diff_packs(a, b, progress=progress)
    names = list(dict.fromkeys([*a.names, *b.names]))
    changed = {c.name: c for c in result.changed}
    views_a = {v.name: v for v in a.tensors()}
    views_b = {v.name: v for v in b.tensors()}
    unchanged = [views_a[n] for n in names if n not in changed and n in views_a and n in views_b]  # the same bytes
    bar = progress_for(progress, sum(_nbytes(v) for v in unchanged), "norms")
    norms_of_unchanged = {}
    for view in unchanged:  # no change, and A's norm
        norms_of_unchanged[view.name] = _unchanged_norms(view)
        bar(_nbytes(view))
    finish(bar)
    norms: list[list[Any] | None] = []
    for name in names:
        change = changed.get(name)
        if change is not None:
            norms.append(None if change.a_norm is None else [_json_number(change.delta_norm), _json_number(change.a_norm)])
        else:
            norms.append(norms_of_unchanged.get(name))
    return {"a": a_name, "b": b_name, "names": names, "norms": norms, "result": result.to_json()}


def _unchanged_norms(view: Any) -> list[Any] | None:
    """``[0, ‖A‖]`` of a tensor that did not change, streamed; None when its values cannot be read."""
    try:
        squares = sum(sum_of_squares(chunk) for chunk in chunks(view))
    except BurnpackError:  # bytes that do not fit the shape: diff_packs compares them as bytes only
        return None
    return [0.0, _json_number(math.sqrt(squares))]


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


def _compared(before: Any, after: Any) -> list[tuple[Any, Any]]:
    """The tensors :func:`module_changes` compares: both packs have them, with one element count."""
    pairs = ((before[name], after[name]) for name in after.names if name in before)
    return [(x, y) for x, y in pairs if math.prod(x.shape) == math.prod(y.shape)]


def module_changes(before: Any, after: Any, *, progress: Callable[[int], None] | None = None) -> dict[str, float | str | None]:
    """Per module (a tensor name without its last part): ``‖after − before‖ / ‖before‖``
    (:func:`~burnpack.core.diff.relative_change`) over the tensors both have with the same
    element count — as the diff page adds them up — streamed chunk by chunk; ``progress`` is fed
    the bytes of both tensors as each pair is done."""
    sums: dict[str, list[float]] = {}
    for x, y in _compared(before, after):
        acc = sums.setdefault(x.name.rpartition(".")[0] or x.name, [0.0, 0.0])
        for cx, cy in zip(chunks(x), chunks(y)):
            delta, base = change_sums(cx, cy)
            acc[0] += delta
            acc[1] += base
        if progress is not None:
            progress(_nbytes(x) + _nbytes(y))
    return {module: _json_number(relative_change(delta, base)) for module, (delta, base) in sums.items()}


def is_checkpoint_directory(path: str) -> bool:
    """A directory holding a Burn Learner's checkpoints (``checkpoint/model-N.bpk``... or the files themselves)."""
    directory = Path(path)
    return directory.is_dir() and bool(Checkpoints.find(directory).epochs())


def checkpoint_report(path: str, *, stats: bool = True, progress: ProgressSetting = None) -> tuple[JSONObject, Path | None]:
    """Epochs with their files, metric curves and weight changes; and the newest model file.

    Burn does not record the retention strategy a run used, so the report does not say why an
    epoch's files are kept: it says which epochs have files, which have none, and whether the
    files present are what Burn's default strategy keeps after the epochs recorded."""
    checkpoints = Checkpoints.find(path)
    epochs = checkpoints.epochs()
    artifact_dir = checkpoints.directory.parent if checkpoints.directory.name == "checkpoint" else checkpoints.directory
    details = [inspect_epoch(checkpoints, e) for e in epochs]
    best = LossHistory(checkpoints.valid_losses).find_epoch() if checkpoints.valid_losses else None
    last = max([*epochs, *checkpoints.valid_losses], default=0)
    default_keeps = checkpoints.strategy_keeps()
    changes: dict[str, Any] = {"pairs": [], "modules": {}, "errors": {}}
    models = [e for e in epochs if "model" in checkpoints.files(e)]
    if stats:
        model_files = checkpoints.checkpointers["model"]
        pairs = list(zip(models, models[1:]))
        bar = progress_for(progress, sum(_pair_bytes(model_files, before, after) for before, after in pairs), "comparing epochs")
        for before, after in pairs:
            pair = f"{before}-{after}"
            changes["pairs"].append([before, after])
            try:
                with model_files.pack(before) as a, model_files.pack(after) as b:
                    for module, value in module_changes(a, b, progress=bar).items():
                        changes["modules"].setdefault(module, {})[pair] = value
            except BurnpackError as exc:  # a file cut short by a crash: the other epochs still show
                changes["errors"][pair] = f"{exc.variant}: {exc}"
        finish(bar)
    newest = None
    for epoch in reversed(models):  # the newest model that opens
        try:
            checkpoints.checkpointers["model"].pack(epoch).close()
        except BurnpackError:
            continue
        newest = checkpoints.files(epoch)["model"]
        break
    report = {
        "directory": str(checkpoints.directory),
        "epochs": details,
        "without_files": [e for e in range(1, last + 1) if e not in epochs],
        "best_epoch": best,
        "default_retention": {"keeps": default_keeps, "matches": None if default_keeps is None else default_keeps == epochs},
        "valid_losses": {str(e): _json_number(v) for e, v in checkpoints.valid_losses.items()},
        "metrics": metric_logs(artifact_dir),
        "changes": changes,
        "model_epoch": int(newest.stem.rpartition("-")[2]) if newest is not None else None,
    }
    return report, newest


def _pair_bytes(model_files: Any, before: int, after: int) -> int:
    """The bytes :func:`module_changes` reads for two epochs' models (their metadata tells; 0 when
    one cannot be opened)."""
    try:
        with model_files.pack(before) as a, model_files.pack(after) as b:
            return sum(_nbytes(x) + _nbytes(y) for x, y in _compared(a, b))
    except BurnpackError:  # reported by the comparison itself
        return 0


def page_data(title: str, **parts: JSON) -> JSONObject:
    """The page's data: ``pack``, ``diff`` and ``checkpoint`` parts (None when absent)."""
    return {"title": title, "generator": f"burnpack {__version__}", **{k: parts.get(k) for k in ("pack", "diff", "checkpoint")}}
