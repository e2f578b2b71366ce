"""LR scheduler state: a PyTorch cosine / linear / step / exponential scheduler ``state_dict`` ↔
a Burn ``LrSchedulerRecord`` (one scheduler per parameter group, under ``"i."``).

The position maps exactly: PyTorch's ``last_epoch = k`` is cosine ``current_iter = k-1``
(``2^64-1`` at ``k = 0``), linear ``remaining_iters = max(total_iters + 1 - k, 0)``, step
``iter_idx = k-1``, exponential ``previous_lr`` = torch's lr after ``k-1`` steps. The schedule
itself (``T_max``, ``gamma``...) is Burn config code: reported, and kept as metadata.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...records import (
    CosineAnnealingLrScheduler,
    ExponentialLrScheduler,
    LinearLrScheduler,
    LrSchedulerRecord,
    ModuleLrScheduler,
    StepLrScheduler,
)
from ...records.scheduler import ConstantLr
from ...errors import ConversionError, shown
from ...codec._cbor import U64_MAX
from .state import CheckpointReport

SCHEDULER_CLASSES = {"cosine": "CosineAnnealingLR", "linear": "LinearLR", "step": "StepLR", "exponential": "ExponentialLR"}
_BURN_CLASSES: dict[str, Any] = {"cosine": CosineAnnealingLrScheduler, "linear": LinearLrScheduler, "step": StepLrScheduler}


def scheduler_kind(sd: Mapping[str, Any] | None, given: str | None = None) -> str | None:
    """``cosine``, ``linear``, ``step`` or ``exponential``: as given, else from the state's keys."""
    if given is not None:
        key = given.strip().lower().replace("lr", "").replace("annealing", "").strip("_- ")
        aliases = {"cosine": "cosine", "linear": "linear", "step": "step", "exponential": "exponential", "exp": "exponential"}
        if key not in aliases:
            raise ConversionError(f"unsupported scheduler {given!r}; supported: cosine, linear, step, exponential")
        return aliases[key]
    if sd is None:
        return None
    for key, kind in (("T_max", "cosine"), ("total_iters", "linear"), ("step_size", "step"), ("gamma", "exponential")):
        if key in sd and (key != "total_iters" or "start_factor" in sd):
            return kind
    raise ConversionError(f"unsupported LR scheduler state (keys {sorted(sd)}); supported: CosineAnnealingLR, LinearLR, StepLR, ExponentialLR")


def exp_lrs(base: float, gamma: float, steps: int) -> list[float]:
    """torch's ExponentialLR learning rates after 0..steps steps (chainable: lr * gamma)."""
    out = [base]
    for _ in range(steps):
        out.append(out[-1] * gamma)
    return out


def _burn_scheduler(kind: str, sd: Mapping[str, Any], group: int, report: CheckpointReport) -> Any:
    k = int(sd["last_epoch"])
    if k < 0:
        raise ConversionError(f"scheduler last_epoch {k} is negative (never stepped?)")
    base = float(sd["base_lrs"][group])
    if kind == "cosine":
        return CosineAnnealingLrScheduler(k - 1 if k >= 1 else U64_MAX)
    if kind == "linear":
        return LinearLrScheduler(max(int(sd["total_iters"]) + 1 - k, 0))
    if kind == "step":
        if k - 1 > (1 << 31) - 1:
            raise ConversionError(f"StepLR at step {k} does not fit Burn's i32 iter_idx")
        return StepLrScheduler(k - 1)
    gamma = float(sd["gamma"])
    if k == 0:
        return ExponentialLrScheduler(base / gamma)  # Burn's own starting value
    lrs = exp_lrs(base, gamma, k)
    last = sd.get("_last_lr")
    if last is not None and float(last[group]) != lrs[k]:
        report.warnings.append(
            f"ExponentialLR group {group}: the stored lr {last[group]!r} is not base_lr * gamma^{k} as torch computes it "
            "(chained schedulers or a manual change?); previous_lr taken as lr / gamma"
        )
        return ExponentialLrScheduler(float(last[group]) / gamma)
    return ExponentialLrScheduler(lrs[k - 1])


def _burn_config(kind: str, sd: Mapping[str, Any], group: int) -> str:
    base = float(sd["base_lrs"][group])
    if kind == "cosine":
        return f"CosineAnnealingLrSchedulerConfig::new({base!r}, {int(sd['T_max'])}).with_min_lr({float(sd['eta_min'])!r})"
    if kind == "linear":
        return (
            f"LinearLrSchedulerConfig::new({base * float(sd['start_factor'])!r}, "
            f"{base * float(sd['end_factor'])!r}, {int(sd['total_iters'])})"
        )
    if kind == "step":
        return f"StepLrSchedulerConfig::new({base!r}, {int(sd['step_size'])}).with_gamma({float(sd['gamma'])!r})"
    return f"ExponentialLrSchedulerConfig::new({base!r}, {float(sd['gamma'])!r})"


def scheduler_to_burn(sd: Mapping[str, Any] | None, groups: int, report: CheckpointReport) -> tuple[LrSchedulerRecord, dict[str, Any] | None]:
    """The Burn scheduler record and the ``torch.scheduler`` metadata (None without a scheduler)."""
    kind = scheduler_kind(sd)
    if sd is None or kind is None:
        report.scheduler = "constant"
        report.warnings.append("no LR scheduler state: scheduler record is empty (a constant learning rate)")
        return ModuleLrScheduler.of(*[ConstantLr() for _ in range(groups)]).to_record(), None
    groups = len(sd["base_lrs"])
    scheduler = ModuleLrScheduler.of(*[_burn_scheduler(kind, sd, g, report) for g in range(groups)])
    report.scheduler = SCHEDULER_CLASSES[kind]
    report.scheduler_position = int(sd["last_epoch"])
    report.burn_configs += [_burn_config(kind, sd, g) for g in range(groups)]
    report.not_mapped.append("scheduler configuration (base_lrs, T_max / total_iters / step_size / gamma...): Burn keeps it in the scheduler config")
    return scheduler.to_record(), {"kind": report.scheduler, "state": sd}


def _position(kind: str, sched: Any, sd: Mapping[str, Any], group: int) -> int:
    """PyTorch's ``last_epoch`` for one Burn scheduler state."""
    stored = int(sd["last_epoch"]) if "last_epoch" in sd else None
    if kind == "cosine":
        return 0 if sched.current_iter == U64_MAX else sched.current_iter + 1
    if kind == "step":
        return sched.iter_idx + 1
    if kind == "linear":
        total = int(sd["total_iters"])
        if sched.remaining_iters == 0:  # Burn stops counting once the final lr is reached
            return stored if stored is not None and stored >= total + 1 else total + 1
        return total + 1 - sched.remaining_iters
    base, gamma, prev = float(sd["base_lrs"][group]), float(sd["gamma"]), sched.previous_lr
    if gamma == 1.0:
        return stored if stored is not None else 0
    if prev == base / gamma:
        return 0
    guess = round(math.log(prev / base) / math.log(gamma)) + 1
    for k in (guess, guess - 1, guess + 1):
        if k >= 1 and exp_lrs(base, gamma, k - 1)[-1] == prev:
            return k
    return max(guess, 0)


def closed_form_lr(kind: str, sd: Mapping[str, Any], group: int, k: int) -> float:
    """The learning rate at step ``k`` in closed form (what Burn computes)."""
    base = float(sd["base_lrs"][group])
    if kind == "cosine":
        eta, t_max = float(sd["eta_min"]), int(sd["T_max"])
        return eta + (base - eta) * (1 + math.cos(math.pi * k / t_max)) / 2
    if kind == "linear":
        s, e, total = float(sd["start_factor"]), float(sd["end_factor"]), int(sd["total_iters"])
        return base * (s + (e - s) * min(k, total) / total)
    if kind == "step":
        return base * float(sd["gamma"]) ** (k // int(sd["step_size"]))
    return exp_lrs(base, float(sd["gamma"]), k)[-1]


_FIELDS: dict[str, dict[str, tuple[type, bool]]] = {  # what each closed form reads: name → (kind of value, must be > 0)
    "cosine": {"eta_min": (float, False), "T_max": (int, True)},
    "linear": {"start_factor": (float, False), "end_factor": (float, False), "total_iters": (int, True)},
    "step": {"gamma": (float, False), "step_size": (int, True)},
    "exponential": {"gamma": (float, False)},
}


def _state_problem(kind: str, sd: Mapping[str, Any]) -> str | None:
    """What a PyTorch scheduler state of ``kind`` lacks for the conversion, or None."""

    def number(v: Any, integral: bool) -> bool:
        return not isinstance(v, bool) and (isinstance(v, int) if integral else isinstance(v, (int, float)) and math.isfinite(v))

    lrs = sd.get("base_lrs")
    if not isinstance(lrs, list) or not lrs or not all(number(v, False) for v in lrs):
        return "'base_lrs' must be a non-empty list of numbers"
    if "last_epoch" in sd and not number(sd["last_epoch"], True):
        return "'last_epoch' must be an integer"
    for field, (kind_of, positive) in _FIELDS[kind].items():
        if field not in sd:
            return f"{SCHEDULER_CLASSES[kind]} needs {field!r}"
        if not number(sd[field], kind_of is int) or (positive and sd[field] <= 0):
            return f"{field!r} must be {'a positive integer' if kind_of is int and positive else 'a number'}, got {shown(sd[field])}"
    return None


def _torch_kind(record: LrSchedulerRecord, meta: Mapping[str, Any] | None, config: dict[str, Any], report: CheckpointReport) -> str | None:
    if meta is not None:
        return {v: k for k, v in SCHEDULER_CLASSES.items()}[meta["kind"]]
    if config:
        return scheduler_kind(None, config.pop("kind", None))
    if not record.is_empty():
        report.warnings.append("the Burn scheduler state has no PyTorch configuration stored or given; scheduler not converted")
    return None


def scheduler_to_pytorch(
    record: LrSchedulerRecord, meta: Mapping[str, Any] | None, config: Mapping[str, Any] | None,
    optimizer_sd: dict[str, Any] | None, report: CheckpointReport,
) -> dict[str, Any] | None:  # fmt: skip
    """The PyTorch scheduler ``state_dict``; sets the optimizer groups' lr when recomputed."""
    settings = dict(config or {})
    kind = _torch_kind(record, meta, settings, report)
    if kind is None:
        return None
    sd = {**(dict(meta["state"]) if meta is not None else {}), **settings}
    problem = _state_problem(kind, sd)
    if problem:
        raise ConversionError(f"scheduler state (stored torch.scheduler metadata or scheduler_config): {problem}")
    report.scheduler = SCHEDULER_CLASSES[kind]
    groups = len(sd["base_lrs"])
    positions = []
    for g in range(groups):
        cls = _BURN_CLASSES.get(kind)
        if cls is LinearLrScheduler:
            init: Any = cls.initial(int(sd["total_iters"]))
        elif cls is not None:
            init = cls.initial()
        else:
            init = ExponentialLrScheduler.initial(float(sd["base_lrs"][g]), float(sd["gamma"]))
        positions.append(_position(kind, init.load_record(record.record(str(g))), sd, g))
    if len(set(positions)) > 1:
        report.warnings.append(f"scheduler groups are at different steps {positions}; PyTorch keeps one last_epoch, using {max(positions)}")
    k = report.scheduler_position = max(positions) if positions else 0
    if meta is not None and int(meta["state"].get("last_epoch", -1)) == k and not settings:
        return dict(meta["state"])
    lrs = [closed_form_lr(kind, sd, g, k) for g in range(groups)]
    if optimizer_sd is not None:
        for g, group in enumerate(optimizer_sd["param_groups"][:groups]):
            group["lr"], group["initial_lr"] = lrs[g], float(sd["base_lrs"][g])
    if meta is not None:
        report.warnings.append(
            f"the Burn scheduler is at step {k}, the stored PyTorch state at {meta['state'].get('last_epoch')}: "
            "learning rates recomputed in closed form (may differ from PyTorch's recursive values in the last bits)"
        )
    return {**sd, "last_epoch": k, "_step_count": k + 1, "_is_initial": False, "_get_lr_called_within_step": False, "_last_lr": lrs}
