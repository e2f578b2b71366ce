"""Which record kind a pack holds, from its content alone (records.md §6).

Burn writes no marker saying "module", "optimizer" or "scheduler"; the kinds differ in shape:

* scheduler: no tensors, only scalars;
* optimizer: tensor names ``<u64>.<field>``, ``<u64>.__rank`` UInt scalars, metadata keys that
  are u64s (LBFGS: unprefixed ``history_s.*`` / ``g_iter`` instead);
* module: dotted identifier names, no scalars, a ``param_id`` on every tensor (``BurnpackStore``
  files add ``format = "burnpack"`` metadata);
* a pack with nothing at all is what a constant-LR scheduler, a parameter-less module and a
  never-stepped optimizer all write.
"""

from __future__ import annotations

from ..core.display import plural
from ..core.dtypes import dtype_label
from ..core.reader import Pack
from ._common import RANK_KEY, parse_u64


class RecordKind:
    """What kind of record a pack holds, and why we think so.

    A plain class, not a dataclass: ``inspect`` of a small file starts without building one.

    Args:
        kind: ``module``, ``optimizer``, ``scheduler``, ``empty`` or ``unknown``.
        summary: One line on what the pack holds.
        reasons: What decided the kind.
        meaning: For a scheduler record of a layout Burn writes, what its values mean as
            burn-optim's ``step()`` reads them (``LrScheduler.explain()``: ``u64::MAX`` is a cosine
            scheduler not stepped yet...); None otherwise.
    """

    __slots__ = ("kind", "summary", "reasons", "meaning")

    def __init__(self, kind: str, summary: str, reasons: list[str] | None = None, meaning: str | None = None) -> None:
        self.kind, self.summary, self.meaning = kind, summary, meaning
        self.reasons = [] if reasons is None else reasons

    def _fields(self) -> tuple[str, str, list[str], str | None]:
        return self.kind, self.summary, self.reasons, self.meaning

    def __repr__(self) -> str:
        return "RecordKind(kind={!r}, summary={!r}, reasons={!r}, meaning={!r})".format(*self._fields())

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if isinstance(other, RecordKind) else NotImplemented

    def __str__(self) -> str:
        return f"{self.kind} record: {self.summary}" if self.kind not in ("empty", "unknown") else self.summary


def _numeric_prefix(name: str) -> bool:
    head, dot, _ = name.partition(".")
    return bool(dot) and parse_u64(head) is not None


def _is_lbfgs(pack: Pack) -> bool:
    return "g_iter" in pack.scalars and "history_s.len" in pack.scalars


def detect_record_kind(pack: Pack) -> RecordKind:
    """Classify an open pack by the heuristics above (reads only its metadata).

    Args:
        pack: The open pack.

    Returns:
        The kind, with its summary and reasons.
    """
    names = pack.names
    scalars = pack.scalars
    rank_keys = [k for k in scalars if k.endswith("." + RANK_KEY) and parse_u64(k[: -len(RANK_KEY) - 1]) is not None]
    numeric_meta = [k for k in pack.metadata if parse_u64(k) is not None]
    if not names and not scalars:
        if pack.metadata:
            return RecordKind("unknown", f"no tensors or scalars, {len(pack.metadata)} metadata entries")
        return RecordKind(
            "empty",
            "empty record: a constant-LR scheduler, a module without parameters or an optimizer without state",
        )
    if _is_lbfgs(pack) and not any(_numeric_prefix(n) for n in names):
        return RecordKind("optimizer", _optimizer_summary(pack), ["LBFGS scalars g_iter, history_s.len"])
    if rank_keys or (names and all(_numeric_prefix(n) for n in names)):
        reasons = []
        if rank_keys:
            reasons.append(f"{len(rank_keys)} '<id>.__rank' scalars")
        if names and all(_numeric_prefix(n) for n in names):
            reasons.append("tensor names start with a parameter id")
        if numeric_meta:
            reasons.append(f"{len(numeric_meta)} id → path metadata entries")
        return RecordKind("optimizer", _optimizer_summary(pack), reasons)
    if not names:
        from ..errors import SchedulerLayoutError
        from .scheduler import LrSchedulerRecord, infer_scheduler

        counted = plural(len(scalars), "scalar")
        try:
            tree = infer_scheduler(LrSchedulerRecord(scalars))
        except SchedulerLayoutError:
            return RecordKind("scheduler", f"{counted} (not a layout Burn's schedulers write)", ["scalars only, no tensors"])
        return RecordKind("scheduler", f"{counted}; {tree.describe()}", ["scalars only, no tensors"], tree.explain())
    if not scalars:
        views = [pack[n] for n in names]
        without_id = sum(1 for v in views if v.param_id is None)
        elements = sum(v.numel for v in views)
        dtypes = sorted({dtype_label(v.dtype) for v in views})
        store = " (BurnpackStore)" if pack.metadata.get("format") == "burnpack" else ""
        ids = "every tensor has a param_id" if not without_id else f"{without_id} tensor{'' if without_id == 1 else 's'} without param_id"
        summary = f"{len(names)} parameter{'' if len(names) == 1 else 's'}{store}, {elements:,} element{'' if elements == 1 else 's'}, {'/'.join(dtypes)}; {ids}"
        return RecordKind("module", summary, ["named tensors, no scalars"])
    tensors = f"{len(names)} tensor{'' if len(names) == 1 else 's'}"
    return RecordKind("unknown", f"generic pack: {tensors} and {len(scalars)} scalar{'' if len(scalars) == 1 else 's'} fit no record layout")


def _optimizer_summary(pack: Pack) -> str:
    from .optimizer import OptimizerRecord, state_kind

    record = OptimizerRecord([], pack.scalars, pack.metadata)
    if _is_lbfgs(pack):
        return f"LBFGS, {len(pack)} tensors, g_iter {record.step}"
    ids = set()
    for key in pack.scalars:
        if key.endswith("." + RANK_KEY):
            pid = parse_u64(key[: -len(RANK_KEY) - 1])
            if pid is not None:
                ids.add(pid)
    missing_id = 0
    for name in pack.names:
        view = pack[name]
        if view.param_id is None:
            missing_id += 1
        else:
            ids.add(view.param_id)
    # the kind from leaf names alone: no tensor data is read
    leaves: dict[str, set[str]] = {str(pid): set() for pid in ids}
    for key, is_scalar in [*((n, False) for n in pack.names), *((k, True) for k in pack.scalars)]:
        head, dot, leaf = key.partition(".")
        if dot and head in leaves and not (is_scalar and leaf == RANK_KEY):
            leaves[head].add(leaf)
    kinds = {state_kind(names) for names in leaves.values()}
    step = record.step
    text = f"{'+'.join(sorted(kinds)) or 'unknown'}, {len(ids)} parameter states"
    if step is not None:
        text += f", step {step}"
    if missing_id:
        text += f"; {plural(missing_id, 'tensor')} without param_id (Burn panics loading them)"
    return text
