"""Whole training checkpoints: PyTorch (model + optimizer + LR scheduler) ↔ a Burn Learner
checkpoint directory (``model-N.bpk``, ``optim-N.bpk``, ``scheduler-N.bpk``).

:func:`pytorch_to_burn_checkpoint` reads a ``torch.save``'d training state — a file (without
torch and without running pickled code), a dict, or live ``nn.Module`` / ``Optimizer`` /
``LRScheduler`` objects — and writes the three records a Burn learner resumes from.
:func:`burn_checkpoint_to_pytorch` does the reverse. Supported: ``Adam``, ``AdamW``, ``SGD``
(with or without momentum); ``CosineAnnealingLR``, ``LinearLR``, ``StepLR``, ``ExponentialLR``
(or none: a constant learning rate).

What maps, and how exactly
==========================

====================================  ==========================================  ===========
PyTorch                               Burn                                         exact?
====================================  ==========================================  ===========
model parameters and buffers          ``ModuleRecord`` tensors, each with a fresh  bit-exact
                                      ``param_id``; ``Linear`` weights transposed
                                      (``[out, in]`` → ``[in, out]``); norm
                                      ``weight``/``bias`` → ``gamma``/``beta``
BatchNorm ``num_batches_tracked``     (Burn's BatchNorm has no such field)         not mapped
Adam/AdamW ``exp_avg``,               ``{id}.momentum.moment_1``, ``moment_2``,    bit-exact
``exp_avg_sq``, ``max_exp_avg_sq``    ``max_moment_2`` — transposed together with
                                      their Linear weight
Adam/AdamW ``step``                   ``{id}.momentum.time`` (UInt)                exact
SGD ``momentum_buffer``               ``{id}.momentum.velocity``                   bit-exact
state ↔ parameter link (index in      ``param_id`` shared by model and optimizer   exact
``param_groups``)                     records, id → path metadata
scheduler position ``last_epoch`` =   cosine ``current_iter = k-1`` (``2^64-1`` at exact
``k`` (per group ``i`` → ``"i."``)    ``k = 0``); linear ``remaining_iters =
                                      max(total_iters + 1 - k, 0)``; step
                                      ``iter_idx = k-1`` (Int); exponential
                                      ``previous_lr`` = torch's lr after ``k-1``
                                      steps, replayed as torch computes it
hyperparameters (``lr``, ``betas``,   Burn keeps them in its optimizer and         cannot
``eps``, ``weight_decay``,            scheduler *configs* (Rust code), not in the
``momentum``, ``T_max``, ...)         records
====================================  ==========================================  ===========

Why some fields cannot map: Burn's records hold *state* only; the learning-rate schedule and
optimizer hyperparameters are code on the Burn side. The conversion therefore (a) reports the
Burn configs that reproduce the PyTorch run (``CheckpointReport.burn_configs``) and (b) keeps
everything PyTorch-only — ``param_groups``, the scheduler's ``state_dict``, the parameter order,
``num_batches_tracked``, the checkpoint's other entries such as ``epoch`` — as JSON in the
optimizer record's metadata under ``torch.*`` keys, which Burn ignores (it only reads metadata
keys that parse as u64). Converting back uses them, so PyTorch → Burn → PyTorch is lossless;
a checkpoint Burn trained further still converts back, with the state taken from Burn.

Learning rates: Burn computes its schedules in closed form (cosine, linear, step) or by its own
recurrence (exponential); PyTorch's schedulers use recursive ("chainable") formulas. The step
positions map exactly, and the learning rates agree to floating-point rounding. When a
Burn-side position differs from the stored PyTorch state, the reverse conversion recomputes
the learning rate in closed form and says so.

Module types: the PyTorch → Burn adapter must know which tensors belong to a ``Linear`` (to
transpose) and which to a norm (to rename). They come from a ``module=`` (an ``nn.Module``),
``module_types`` / ``type_rules``, else inference from names and shapes; a 2-D or 1-D
``weight`` whose module stays unknown is an error, never a guess.
"""

from __future__ import annotations

import json
import math
import os
import random
import secrets
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..frameworks import is_torch_module, is_torch_tensor, numpy_to_torch, torch_to_numpy
from ..records import (
    AdamState,
    Checkpoints,
    CosineAnnealingLrScheduler,
    ExponentialLrScheduler,
    LinearLrScheduler,
    LrSchedulerRecord,
    ModuleLrScheduler,
    ModuleRecord,
    OptimizerRecord,
    SgdState,
    StepLrScheduler,
)
from ..records.scheduler import ConstantLr
from .._generated.layout import U64_MAX
from .._generated.types import BoolStore
from ..writer import Writer
from .adapters import BurnToPyTorchAdapter, ModuleTypes, PyTorchToBurnAdapter
from .converter import transform
from .remap import KeyRemapper
from ._io import ConversionError, OutputExistsError, atomic_output, entry_from_array
from .formats import burnpack_writer
from .tensors import Entry, TensorSet

__all__ = [
    "CheckpointReport",
    "TorchTrainingState",
    "burn_checkpoint_to_pytorch",
    "pytorch_to_burn_checkpoint",
    "read_torch_training_state",
]

META_PREFIX = "torch."
_FORMAT_TAG = "burnpack.interop.checkpoint/1"
_BUFFER_SUFFIXES = ("running_mean", "running_var", "num_batches_tracked")
_MODEL_KEYS = ("model", "model_state_dict", "state_dict", "model_state", "net", "network")
_OPTIM_KEYS = ("optimizer", "optimizer_state_dict", "optim", "opt", "optimizer_state")
_SCHED_KEYS = ("scheduler", "lr_scheduler", "scheduler_state_dict", "sched", "lr_scheduler_state_dict")

_TORCH_DEFAULTS = {
    "Adam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "amsgrad": False, "maximize": False,
             "foreach": None, "capturable": False, "differentiable": False, "fused": None, "decoupled_weight_decay": False},
    "AdamW": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.01, "amsgrad": False, "maximize": False,
              "foreach": None, "capturable": False, "differentiable": False, "fused": None, "decoupled_weight_decay": True},
    "SGD": {"lr": 0.001, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False, "maximize": False,
            "foreach": None, "differentiable": False, "fused": None},
}  # fmt: skip
_SCHEDULER_CLASSES = {
    "cosine": "CosineAnnealingLR",
    "linear": "LinearLR",
    "step": "StepLR",
    "exponential": "ExponentialLR",
}


# --------------------------------------------------------------------------------------------
# The PyTorch side
# --------------------------------------------------------------------------------------------
@dataclass
class TorchTrainingState:
    """A PyTorch training state as plain data: arrays for tensors, dicts/lists for the rest.

    ``model`` is the ordered ``state_dict``; ``optimizer`` / ``scheduler`` their
    ``state_dict()``s (or None); ``extra`` the checkpoint's other entries (``epoch``...);
    ``param_names`` the parameter names in the order the optimizer indexes them, when known;
    ``module_types`` module path → Burn type, when a module was given; ``keys`` the checkpoint
    keys the three parts came from.
    """

    model: dict[str, np.ndarray]
    optimizer: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    param_names: list[str] | None = None
    module_types: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)

    def to_torch(self) -> dict[str, Any]:
        """The checkpoint dict with torch tensors, ready for ``torch.save`` / ``load_state_dict``."""

        def conv(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return numpy_to_torch(value)
            if isinstance(value, dict):
                return type(value)((k, conv(v)) for k, v in value.items())
            if isinstance(value, list):
                return [conv(v) for v in value]
            if isinstance(value, tuple):
                return tuple(conv(v) for v in value)
            return value

        out: dict[str, Any] = {}

        def put(part: str, value: Any) -> None:
            key = self.keys.get(part, part)
            if key.endswith("[0]"):  # it came as the only item of a list (Lightning)
                out[key[:-3]] = [value]
            else:
                out[key] = value

        put("model", OrderedDict((k, conv(v)) for k, v in self.model.items()))
        if self.optimizer is not None:
            put("optimizer", conv(self.optimizer))
        if self.scheduler is not None:
            put("scheduler", conv(self.scheduler))
        out.update(self.extra)
        return out


def _to_plain(value: Any, depth: int = 0) -> Any:
    """Torch tensors → numpy; containers copied; everything else as is."""
    if depth > 64:
        raise ConversionError("checkpoint nests more than 64 deep")

    if is_torch_tensor(value):
        return torch_to_numpy(value)
    if isinstance(value, dict):
        return type(value)((k, _to_plain(v, depth + 1)) for k, v in value.items()) if isinstance(value, OrderedDict) else {k: _to_plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_plain(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_plain(v, depth + 1) for v in value)
    return value


def _is_array_dict(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, np.ndarray) for v in value.values())


def _is_optimizer_sd(value: Any) -> bool:
    return isinstance(value, dict) and "state" in value and "param_groups" in value


def _is_scheduler_sd(value: Any) -> bool:
    return isinstance(value, dict) and "last_epoch" in value and "base_lrs" in value


def read_torch_training_state(
    source: Any = None,
    *,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    module: Any = None,
    model_key: str | None = None,
    optimizer_key: str | None = None,
    scheduler_key: str | None = None,
) -> TorchTrainingState:
    """Collect a training state from a checkpoint file or dict (``source``) and/or separate
    parts (each a file path, a ``state_dict`` or a live torch object).

    In a checkpoint dict the parts are found by key (``model`` / ``model_state_dict`` /
    ``state_dict``..., ``optimizer`` / ``optimizer_state_dict``..., ``scheduler`` /
    ``lr_scheduler``...) or, failing that, by shape (a dict of tensors; a dict with ``state``
    and ``param_groups``; a dict with ``last_epoch`` and ``base_lrs``). ``module`` (an
    ``nn.Module``) supplies exact module types and the parameter order; a live optimizer with a
    live module gives the exact index → parameter mapping even for custom parameter groups.
    """
    from .pytorch import read_pytorch_object
    from .torch_live import module_types_of

    def load(value: Any) -> Any:
        if isinstance(value, (str, os.PathLike)):
            return read_pytorch_object(value)
        return value

    keys: dict[str, str] = {}
    extra: dict[str, Any] = {}
    root = load(source) if source is not None else None
    module_obj = module
    live_optimizer = optimizer if optimizer is not None and hasattr(optimizer, "param_groups") and hasattr(optimizer, "state_dict") else None
    if root is not None:
        if is_torch_module(root):
            module_obj = module_obj or root
            model = model if model is not None else root
            root = None
        elif not isinstance(root, dict):
            raise ConversionError(f"a training checkpoint must be a dict, got a {type(root).__name__}")
    if root is not None:
        root = dict(root)

        def take(explicit: str | None, names: Sequence[str], test: Any, part: str) -> Any:
            if explicit is not None:
                if explicit not in root:
                    raise ConversionError(f"no {explicit!r} in the checkpoint; keys: {sorted(map(str, root))}")
                keys[part] = explicit
                return root.pop(explicit)
            for name in names:
                if name in root and (test(_to_plain(root[name])) or is_torch_module(root[name]) or hasattr(root[name], "state_dict")):
                    keys[part] = name
                    return root.pop(name)
            for name, value in list(root.items()):
                if test(_to_plain(value)):
                    keys[part] = str(name)
                    return root.pop(name)
            for name, value in list(root.items()):  # Lightning: "optimizer_states": [sd], "lr_schedulers": [sd]
                if isinstance(value, list) and len(value) == 1 and test(_to_plain(value[0])):
                    keys[part] = f"{name}[0]"
                    return root.pop(name)[0]
            return None

        found_optim = take(optimizer_key, _OPTIM_KEYS, _is_optimizer_sd, "optimizer")
        found_sched = take(scheduler_key, _SCHED_KEYS, _is_scheduler_sd, "scheduler")
        found_model = take(model_key, _MODEL_KEYS, _is_array_dict, "model")
        if found_model is None and _is_array_dict(_to_plain(root)):
            found_model, root = root, {}
        optimizer = optimizer if optimizer is not None else found_optim
        scheduler = scheduler if scheduler is not None else found_sched
        model = model if model is not None else found_model
        for key, value in root.items():
            extra[str(key)] = _to_plain(value)
    model = load(model)
    if model is None:
        raise ConversionError("no model state_dict found; pass model= or model_key=")
    if is_torch_module(model):
        module_obj = module_obj or model
        model = model.state_dict()
    optimizer = load(optimizer)
    if optimizer is not None and hasattr(optimizer, "state_dict") and not isinstance(optimizer, dict):
        optimizer = optimizer.state_dict()
    scheduler = load(scheduler)
    if scheduler is not None and hasattr(scheduler, "state_dict") and not isinstance(scheduler, dict):
        scheduler = scheduler.state_dict()
    model_sd = _to_plain(model)
    if not isinstance(model_sd, dict) or not all(isinstance(v, np.ndarray) for v in model_sd.values()):
        from .formats import _flatten_arrays

        model_sd = dict(_flatten_arrays(model_sd)) if isinstance(model_sd, dict) else None
        if not model_sd:
            raise ConversionError("the model part is not a state_dict of tensors")
    odd = [k for k in model_sd if not isinstance(k, str)]
    if odd:
        raise ConversionError(f"the model state_dict has {len(odd)} key(s) that are not parameter names (strings): {odd[:5]!r}")
    optimizer_sd = _to_plain(optimizer) if optimizer is not None else None
    if optimizer_sd is not None and not _is_optimizer_sd(optimizer_sd):
        raise ConversionError("the optimizer part is not an optimizer state_dict (no 'state' / 'param_groups')")
    scheduler_sd = _to_plain(scheduler) if scheduler is not None else None
    if scheduler_sd is not None and not _is_scheduler_sd(scheduler_sd):
        raise ConversionError("the scheduler part is not an LR scheduler state_dict (no 'last_epoch' / 'base_lrs')")
    param_names = None
    types: dict[str, str] = {}
    if module_obj is not None:
        types = module_types_of(module_obj)
        named = list(module_obj.named_parameters())
        param_names = [name for name, _ in named]
        if live_optimizer is not None:
            by_id = {id(p): name for name, p in named}
            order = [by_id.get(id(p)) for group in live_optimizer.param_groups for p in group["params"]]
            if None in order:
                raise ConversionError("the optimizer holds parameters that are not in the module")
            param_names = order
    return TorchTrainingState(dict(model_sd), optimizer_sd, scheduler_sd, extra, param_names, types, keys)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------
@dataclass
class CheckpointReport:
    """What a checkpoint migration did: files, kinds, per-part counts and what could not map."""

    direction: str = ""
    source: str = ""
    target: str = ""
    epoch: int = 0
    files: dict[str, str] = field(default_factory=dict)
    model_tensors: int = 0
    renamed: dict[str, str] = field(default_factory=dict)
    transposed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    optimizer: str | None = None
    params_with_state: int = 0
    step: int | None = None
    scheduler: str | None = None
    scheduler_position: int | None = None
    burn_configs: list[str] = field(default_factory=list)
    not_mapped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.source} -> {self.target} (epoch {self.epoch})"]
        for name, path in self.files.items():
            lines.append(f"  {name}: {path}")
        lines.append(
            f"  model: {self.model_tensors} tensors, {len(self.transposed)} transposed, {len(self.renamed)} renamed"
            + (f", {len(self.dropped)} dropped" if self.dropped else "")
        )
        if self.optimizer:
            step = f", step {self.step}" if self.step is not None else ""
            lines.append(f"  optimizer: {self.optimizer}, state for {self.params_with_state} parameters{step}")
        if self.scheduler:
            pos = f" at step {self.scheduler_position}" if self.scheduler_position is not None else ""
            lines.append(f"  scheduler: {self.scheduler}{pos}")
        for title, items in (("burn configs", self.burn_configs), ("not mapped", self.not_mapped), ("warnings", self.warnings)):
            if items:
                lines.append(f"  {title}:")
                lines += [f"    {item}" for item in items]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


# --------------------------------------------------------------------------------------------
# PyTorch → Burn
# --------------------------------------------------------------------------------------------
def _is_buffer_name(name: str) -> bool:
    return name.rpartition(".")[2] in _BUFFER_SUFFIXES


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return {"__ndarray__": value.item(), "dtype": str(value.dtype)}
        raise TypeError("arrays are not stored in metadata")
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [_jsonable(v) for v in value]}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a {type(value).__name__} cannot be stored as JSON")


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(_from_json(v) for v in value["__tuple__"])
        if set(value) == {"__ndarray__", "dtype"}:
            return np.array(value["__ndarray__"], dtype=value["dtype"])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _optimizer_kind(sd: Mapping[str, Any], given: str | None) -> str:
    if given is not None:
        key = given.strip().lower()
        names = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD"}
        if key not in names:
            raise ConversionError(f"unsupported optimizer {given!r}; supported: Adam, AdamW, SGD")
        return names[key]
    groups = sd.get("param_groups") or [{}]
    group = groups[0]
    if "betas" in group:
        return "AdamW" if group.get("decoupled_weight_decay") else "Adam"
    if "momentum" in group and "dampening" in group:
        return "SGD"
    leaves = {leaf for state in sd.get("state", {}).values() for leaf in state}
    if {"exp_avg", "exp_avg_sq"} <= leaves:
        return "Adam"
    if leaves <= {"momentum_buffer"}:
        return "SGD"
    raise ConversionError(f"unsupported optimizer state (param group keys {sorted(group)}, state keys {sorted(leaves)})")


def _scheduler_kind(sd: Mapping[str, Any] | None, given: str | None = None) -> str | None:
    if given is not None:
        key = given.strip().lower().replace("lr", "").replace("annealing", "").strip("_- ")
        aliases = {"cosine": "cosine", "linear": "linear", "step": "step", "exponential": "exponential", "exp": "exponential"}
        if key not in aliases:
            raise ConversionError(f"unsupported scheduler {given!r}; supported: cosine, linear, step, exponential")
        return aliases[key]
    if sd is None:
        return None
    if "T_max" in sd:
        return "cosine"
    if "start_factor" in sd and "total_iters" in sd:
        return "linear"
    if "step_size" in sd:
        return "step"
    if "gamma" in sd:
        return "exponential"
    raise ConversionError(f"unsupported LR scheduler state (keys {sorted(sd)}); supported: CosineAnnealingLR, LinearLR, StepLR, ExponentialLR")


def _exp_lrs(base: float, gamma: float, steps: int) -> list[float]:
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
    lrs = _exp_lrs(base, gamma, k)
    last = sd.get("_last_lr")
    if last is not None and float(last[group]) != lrs[k]:
        report.warnings.append(
            f"ExponentialLR group {group}: the stored lr {last[group]!r} is not base_lr * gamma^{k} as torch computes it "
            "(chained schedulers or a manual change?); previous_lr taken as lr / gamma"
        )
        return ExponentialLrScheduler(float(last[group]) / gamma)
    return ExponentialLrScheduler(lrs[k - 1])


def _burn_config(kind: str | None, sd: Mapping[str, Any] | None, group: int) -> str | None:
    if kind is None or sd is None:
        return None
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


def _optimizer_config(kind: str, group: Mapping[str, Any]) -> str:
    if kind in ("Adam", "AdamW"):
        b1, b2 = group.get("betas", (0.9, 0.999))
        text = f"{kind}Config::new().with_beta_1({b1!r}).with_beta_2({b2!r}).with_epsilon({group.get('eps', 1e-8)!r})"
        wd = group.get("weight_decay", 0)
        if kind == "AdamW":
            text += f".with_weight_decay({float(wd)!r})"
        elif wd:
            text += f".with_weight_decay(Some(WeightDecayConfig::new({float(wd)!r})))"
        if group.get("amsgrad"):
            text += ".with_amsgrad(true)"
        return text
    momentum = group.get("momentum", 0)
    text = "SgdConfig::new()"
    if momentum:
        text += (
            f".with_momentum(Some(MomentumConfig {{ momentum: {float(momentum)!r}, dampening: "
            f"{float(group.get('dampening', 0))!r}, nesterov: {str(bool(group.get('nesterov'))).lower()} }}))"
        )
    if group.get("weight_decay"):
        text += f".with_weight_decay(Some(WeightDecayConfig::new({float(group['weight_decay'])!r})))"
    return text


def _new_ids(count: int, seed: int | None) -> list[int]:
    rng = random.Random(seed) if seed is not None else None
    taken: set[int] = set()
    out = []
    while len(out) < count:
        value = rng.getrandbits(64) if rng is not None else secrets.randbits(64)
        if value not in taken:
            taken.add(value)
            out.append(value)
    return out


def _check_types(entries: Sequence[Entry], report: CheckpointReport) -> None:
    unknown = [e.name for e in entries if e.module_type is None and e.param == "weight" and e.rank in (1, 2)]
    if unknown:
        raise ConversionError(
            "cannot tell which module owns these weights, so cannot decide whether to transpose "
            f"(Linear) or rename (norms) them: {unknown}. Pass module= (the torch.nn.Module), or "
            "module_types={'<module path>': 'Linear' | 'Embedding' | 'LayerNorm' | ...} "
            "(CLI: --module-type PATH=TYPE)"
        )


def _param_order(state: TorchTrainingState, optimizer_sd: Mapping[str, Any]) -> list[str]:
    indices = [i for group in optimizer_sd["param_groups"] for i in group["params"]]
    if state.param_names is not None:
        names = state.param_names
    else:
        names = [n for n in state.model if not _is_buffer_name(n) and state.model[n].dtype.kind in "fc"]
    if len(names) != len(indices):
        raise ConversionError(
            f"the optimizer indexes {len(indices)} parameters but the model has {len(names)} float tensors that are not "
            "BatchNorm buffers; pass module= (the torch.nn.Module) to give the exact parameter order"
        )
    if indices != list(range(len(indices))):
        raise ConversionError("the optimizer's param_groups do not index parameters 0..n-1 in order")
    return list(names)  # torch numbers parameters in the order the groups list them


def pytorch_to_burn_checkpoint(
    source: Any = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    epoch: int | None = None,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    module: Any = None,
    model_key: str | None = None,
    optimizer_key: str | None = None,
    scheduler_key: str | None = None,
    optimizer_kind: str | None = None,
    module_types: Mapping[str, str] | None = None,
    type_rules: Any = None,
    infer_types: bool = True,
    remap: Any = None,
    enum_variants: Mapping[str, str] | None = None,
    map_indices_contiguous: bool = False,
    exclude: Any = None,
    seed: int | None = None,
    overwrite: bool = False,
) -> CheckpointReport:
    """Write ``model-N.bpk``, ``optim-N.bpk`` and ``scheduler-N.bpk`` into ``out_dir`` (a Burn
    ``<artifact_dir>/checkpoint`` directory) from a PyTorch training state.

    ``epoch`` defaults to the checkpoint's ``epoch`` entry when it is an int ≥ 1, else 1.
    ``remap`` / ``enum_variants`` / ``map_indices_contiguous`` rename PyTorch paths to the Burn
    module's; ``exclude`` (regexes, searched in the names after remapping) leaves out tensors
    the Burn module does not have, with their optimizer state; ``seed`` makes the param ids
    reproducible. Existing files are kept unless ``overwrite``; each file is written atomically.
    """
    if out_dir is None:
        raise TypeError("out_dir is required")
    state = read_torch_training_state(
        source, model=model, optimizer=optimizer, scheduler=scheduler, module=module,
        model_key=model_key, optimizer_key=optimizer_key, scheduler_key=scheduler_key,
    )  # fmt: skip
    report = CheckpointReport(direction="pytorch->burn", source=_describe(source, model), target=str(out_dir))
    if epoch is None:
        e = state.extra.get("epoch")
        epoch = e if isinstance(e, int) and not isinstance(e, bool) and e >= 1 else 1
        if epoch != e:
            report.warnings.append("no epoch given or stored; writing epoch 1")
    if epoch < 1:
        raise ConversionError(f"Burn epochs are 1-based, got {epoch}")
    report.epoch = epoch
    directory = Path(out_dir)
    paths = {name: directory / f"{name}-{epoch}.bpk" for name in ("model", "optim", "scheduler")}
    if not overwrite:
        existing = [str(p) for p in paths.values() if p.exists()]
        if existing:
            raise OutputExistsError(f"{', '.join(existing)} exist(s); pass overwrite=True (--overwrite) to replace")

    # -- model ---------------------------------------------------------------------------------

    entries, dropped = [], {}
    for name, array in state.model.items():
        if name.rpartition(".")[2] == "num_batches_tracked":
            dropped[name] = array
            continue
        entries.append(entry_from_array(name, array, BoolStore.U8))
    report.dropped = list(dropped)
    if dropped:
        report.not_mapped.append(f"{len(dropped)} BatchNorm num_batches_tracked buffer(s): Burn's BatchNorm has none (kept in torch.model metadata)")
    renamed, _ = transform(
        TensorSet(entries, format="pytorch", module_types=state.module_types),
        remap=remap, enum_variants=enum_variants, map_indices_contiguous=map_indices_contiguous,
        module_types=module_types, type_rules=type_rules, infer_types=infer_types, exclude=exclude,
    )  # fmt: skip
    pre = renamed.entries
    excluded = [e for e in entries if e.name not in {p.source_name for p in pre}]
    if excluded:
        report.not_mapped.append(f"{len(excluded)} tensor(s) excluded: {[e.name for e in excluded]}")
    _check_types(pre, report)
    adapter = PyTorchToBurnAdapter()
    final = [adapter.adapt(e) for e in pre]
    names = [e.name for e in final]
    if len(set(names)) != len(names):
        raise ConversionError("two model tensors map to the same Burn path")
    ids = _new_ids(len(final), seed)
    final = [e.replace(param_id=pid) for e, pid in zip(final, ids)]
    by_torch = {e.source_name: (p, e) for p, e in zip(pre, final)}
    for e in final:
        if e.name != e.source_name:
            report.renamed[e.source_name] = e.name
        if any(s.startswith("transposed") for s in e.steps):
            report.transposed.append(e.name)
    report.model_tensors = len(final)

    # -- optimizer -----------------------------------------------------------------------------
    optim_record = OptimizerRecord()
    meta: dict[str, Any] = {
        "format": _FORMAT_TAG,
        "model": {
            "order": list(state.model),
            "names": {e.source_name: e.name for e in final},
            "types": {p.module_path: p.module_type for p in pre if p.module_type},
            "dropped": {n: {"dtype": str(a.dtype), "value": a.tolist()} for n, a in dropped.items()},
        },
        "keys": state.keys,
    }
    if state.optimizer is not None:
        kind = _optimizer_kind(state.optimizer, optimizer_kind)
        report.optimizer = kind
        order = _param_order(state, state.optimizer)
        odd = [k for k in state.optimizer["state"] if not (type(k) is int or (isinstance(k, str) and k.isdecimal()))]
        if odd:
            raise ConversionError(f"the optimizer state_dict's 'state' has {len(odd)} key(s) that are not parameter indices: {odd[:5]!r}")
        beyond = sorted(int(k) for k in state.optimizer["state"] if int(k) >= len(order))
        if beyond:
            report.warnings.append(f"optimizer state for parameter indices {beyond[:5]} beyond the {len(order)} parameters was not converted")
        steps = set()
        for index, torch_name in enumerate(order):
            pstate = state.optimizer["state"].get(index)
            if pstate is None:
                pstate = state.optimizer["state"].get(str(index))
            if pstate is None:
                continue
            if torch_name not in by_torch:
                if any(e.name == torch_name for e in excluded):
                    continue
                raise ConversionError(f"optimizer state for {torch_name!r}, which is not in the model")
            pre_e, fin = by_torch[torch_name]

            def burn_layout(array: np.ndarray, pre_e: Entry = pre_e) -> np.ndarray:
                probe = Entry(pre_e.name, pre_e.dtype, array.shape, lambda: array, module_type=pre_e.module_type)
                return adapter.adapt(probe).numpy()

            if kind in ("Adam", "AdamW"):
                missing = {"step", "exp_avg", "exp_avg_sq"} - set(pstate)
                if missing:
                    raise ConversionError(f"{torch_name}: Adam state lacks {sorted(missing)}")
                raw_step = np.asarray(pstate["step"])
                if raw_step.size != 1:
                    raise ConversionError(f"{torch_name}: Adam step has shape {list(raw_step.shape)}, expected a scalar")
                step = float(raw_step.reshape(-1)[0])
                if step != int(step) or step < 0:
                    raise ConversionError(f"{torch_name}: Adam step {step} is not a whole number")
                steps.add(int(step))
                max2 = pstate.get("max_exp_avg_sq")
                typed: Any = AdamState(
                    int(step), burn_layout(pstate["exp_avg"]), burn_layout(pstate["exp_avg_sq"]),
                    None if max2 is None else burn_layout(max2),
                )  # fmt: skip
            else:
                buf = pstate.get("momentum_buffer")
                typed = SgdState(None if buf is None else burn_layout(buf))
            optim_record.set_state(fin.param_id, typed, path=fin.name, rank=fin.rank)
            report.params_with_state += 1
        if steps:
            report.step = max(steps)
            if len(steps) > 1:
                report.warnings.append(f"parameters were stepped different numbers of times: {sorted(steps)}")
        for group in state.optimizer["param_groups"]:
            report.burn_configs.append(_optimizer_config(kind, group))
        if len(state.optimizer["param_groups"]) > 1:
            report.not_mapped.append(
                f"{len(state.optimizer['param_groups'])} parameter groups: Burn keeps group membership in code "
                "(ModuleOptimizer / ModuleLrScheduler with_group); scheduler group i is written under 'i.'"
            )
        report.not_mapped.append("optimizer hyperparameters (lr, betas, eps, weight_decay, momentum...): Burn keeps them in the optimizer config (see burn configs)")
        meta["optimizer"] = {"kind": kind, "param_groups": state.optimizer["param_groups"], "param_names": order}
    else:
        report.warnings.append("no optimizer state: optim record is empty")

    # -- scheduler -----------------------------------------------------------------------------
    skind = _scheduler_kind(state.scheduler)
    groups = len(state.optimizer["param_groups"]) if state.optimizer is not None else 1
    if skind is None:
        sched = ModuleLrScheduler.of(*[ConstantLr() for _ in range(groups)])
        report.scheduler = "constant"
        report.warnings.append("no LR scheduler state: scheduler record is empty (a constant learning rate)")
    else:
        groups = len(state.scheduler["base_lrs"])
        sched = ModuleLrScheduler.of(*[_burn_scheduler(skind, state.scheduler, g, report) for g in range(groups)])
        report.scheduler = _SCHEDULER_CLASSES[skind]
        report.scheduler_position = int(state.scheduler["last_epoch"])
        report.burn_configs += [c for c in (_burn_config(skind, state.scheduler, g) for g in range(groups)) if c]
        report.not_mapped.append("scheduler configuration (base_lrs, T_max / total_iters / step_size / gamma...): Burn keeps it in the scheduler config")
        meta["scheduler"] = {"kind": report.scheduler, "state": state.scheduler}
    sched_record = sched.to_record()

    extras = {}
    for key, value in state.extra.items():
        try:
            extras[key] = _jsonable(value)
        except TypeError as exc:
            report.warnings.append(f"checkpoint entry {key!r} not kept: {exc}")
    meta["extra"] = extras
    for key, value in meta.items():
        optim_record.metadata[META_PREFIX + key] = value if isinstance(value, str) else json.dumps(_jsonable(value), allow_nan=True)

    # -- write -----------------------------------------------------------------------------------
    directory.mkdir(parents=True, exist_ok=True)
    writers = {
        "model": burnpack_writer(TensorSet(final)),
        "optim": Writer(optim_record.tensors, metadata=optim_record.metadata, scalars=optim_record.scalars),
        "scheduler": Writer([], scalars=sched_record.scalars),
    }
    for writer in writers.values():
        writer.plan()
    for name, writer in writers.items():
        with atomic_output(paths[name], overwrite=overwrite) as stream:
            writer.write_stream(stream)
        report.files[name] = str(paths[name])
    return report


def _describe(source: Any, model: Any) -> str:
    value = source if source is not None else model
    if isinstance(value, (str, os.PathLike)):
        return str(value)
    return f"<{type(value).__name__}>"


# --------------------------------------------------------------------------------------------
# Burn → PyTorch
# --------------------------------------------------------------------------------------------
def _torch_meta(record: OptimizerRecord) -> dict[str, Any]:
    out = {}
    for key, value in record.metadata.items():
        if key.startswith(META_PREFIX):
            name = key[len(META_PREFIX):]
            if name == "format":
                out[name] = value
                continue
            try:
                out[name] = _from_json(json.loads(value))
            except (ValueError, TypeError) as exc:
                raise ConversionError(f"optim record metadata {key!r} is not JSON of burnpack's form: {exc}") from None
            problem = _torch_meta_problem(name, out[name])
            if problem:
                raise ConversionError(f"optim record metadata {key!r} is malformed: {problem}")
    return out


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _torch_meta_problem(name: str, value: Any) -> str | None:
    """What is wrong with one ``torch.*`` entry (as ``pytorch_to_burn_checkpoint`` writes it), or None."""
    if name in ("extra", "keys") and not isinstance(value, dict):
        return "expected an object"
    if name == "keys" and not _is_str_map(value):
        return "expected an object of strings"
    if name == "model":
        if not isinstance(value, dict):
            return "expected an object"
        for field, ok in (("order", _is_str_list), ("names", _is_str_map), ("types", _is_str_map)):
            if field in value and not ok(value[field]):
                return f"'{field}' has the wrong form"
        dropped = value.get("dropped")
        if dropped is not None:
            if not isinstance(dropped, dict):
                return "'dropped' is not an object"
            for tensor, info in dropped.items():
                try:
                    np.array(info["value"], dtype=info["dtype"])
                except (KeyError, TypeError, ValueError, OverflowError) as exc:
                    return f"'dropped' entry {tensor!r}: {type(exc).__name__}: {exc}"
    if name == "optimizer":
        if not isinstance(value, dict) or value.get("kind") not in _TORCH_DEFAULTS:
            return f"expected an object whose 'kind' is one of {sorted(_TORCH_DEFAULTS)}"
        if not _is_str_list(value.get("param_names")):
            return "'param_names' is not a list of strings"
        if not isinstance(value.get("param_groups"), list) or not all(isinstance(g, dict) for g in value["param_groups"]):
            return "'param_groups' is not a list of objects"
    if name == "scheduler":
        if not isinstance(value, dict) or value.get("kind") not in _SCHEDULER_CLASSES.values():
            return f"expected an object whose 'kind' is one of {sorted(_SCHEDULER_CLASSES.values())}"
        if not isinstance(value.get("state"), dict):
            return "'state' is not an object"
    return None


def _scheduler_position(kind: str, sched: Any, total_iters: int | None, base: float, gamma: float | None, stored: int | None) -> int:
    if kind == "cosine":
        it = sched.current_iter
        return 0 if it == U64_MAX else it + 1
    if kind == "step":
        return sched.iter_idx + 1
    if kind == "linear":
        assert total_iters is not None
        remaining = sched.remaining_iters
        if remaining == 0:  # Burn stops counting once the final lr is reached
            return stored if stored is not None and stored >= total_iters + 1 else total_iters + 1
        return total_iters + 1 - remaining
    assert gamma is not None
    prev = sched.previous_lr
    if gamma == 1.0:
        return stored if stored is not None else 0
    if prev == base / gamma:
        return 0
    guess = round(math.log(prev / base) / math.log(gamma)) + 1
    for k in (guess, guess - 1, guess + 1):
        if k >= 1 and _exp_lrs(base, gamma, k - 1)[-1] == prev:
            return k
    return max(guess, 0)


_SCHEDULER_FIELDS: dict[str, dict[str, tuple[type, bool]]] = {  # what each closed form reads: name → (kind of value, must be > 0)
    "cosine": {"eta_min": (float, False), "T_max": (int, True)},
    "linear": {"start_factor": (float, False), "end_factor": (float, False), "total_iters": (int, True)},
    "step": {"gamma": (float, False), "step_size": (int, True)},
    "exponential": {"gamma": (float, False)},
}


def _scheduler_state_problem(kind: str, sd: Mapping[str, Any]) -> str | None:
    """What a PyTorch scheduler state of ``kind`` lacks for the conversion, or None."""

    def number(v: Any, integral: bool) -> bool:
        return not isinstance(v, bool) and (isinstance(v, int) if integral else isinstance(v, (int, float)) and math.isfinite(v))

    lrs = sd.get("base_lrs")
    if not isinstance(lrs, list) or not lrs or not all(number(v, False) for v in lrs):
        return "'base_lrs' must be a non-empty list of numbers"
    if "last_epoch" in sd and not number(sd["last_epoch"], True):
        return "'last_epoch' must be an integer"
    needed = _SCHEDULER_FIELDS[kind]
    for field, (kind_of, positive) in needed.items():
        if field not in sd:
            return f"{_SCHEDULER_CLASSES[kind]} needs {field!r}"
        if not number(sd[field], kind_of is int) or (positive and sd[field] <= 0):
            return f"{field!r} must be {'a positive integer' if kind_of is int and positive else 'a number'}, got {sd[field]!r}"
    return None


def _closed_form_lr(kind: str, sd: Mapping[str, Any], group: int, k: int) -> float:
    base = float(sd["base_lrs"][group])
    if kind == "cosine":
        eta, t_max = float(sd["eta_min"]), int(sd["T_max"])
        return eta + (base - eta) * (1 + math.cos(math.pi * k / t_max)) / 2
    if kind == "linear":
        s, e, total = float(sd["start_factor"]), float(sd["end_factor"]), int(sd["total_iters"])
        return base * (s + (e - s) * min(k, total) / total)
    if kind == "step":
        return base * float(sd["gamma"]) ** (k // int(sd["step_size"]))
    return _exp_lrs(base, float(sd["gamma"]), k)[-1]


def burn_checkpoint_to_pytorch(
    checkpoint_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    epoch: int | None = None,
    module: Any = None,
    module_types: Mapping[str, str] | None = None,
    type_rules: Any = None,
    infer_types: bool = True,
    optimizer_config: Mapping[str, Any] | None = None,
    scheduler_config: Mapping[str, Any] | None = None,
    remap: Any = None,
    overwrite: bool = False,
) -> tuple[TorchTrainingState, CheckpointReport]:
    """Read a Burn Learner checkpoint (the ``checkpoint`` directory or its artifact directory)
    and rebuild the PyTorch state dicts; with ``out``, also ``torch.save`` them (needs torch).

    Everything Burn holds comes from Burn's records. What Burn does not hold — parameter
    groups' hyperparameters, the scheduler configuration, the PyTorch parameter order and
    names, ``num_batches_tracked`` — comes from the ``torch.*`` metadata a previous
    :func:`pytorch_to_burn_checkpoint` stored, else from ``module`` (an ``nn.Module``),
    ``optimizer_config`` (``{"kind": "adam", "lr": ..., ...}``, over torch's defaults) and
    ``scheduler_config`` (``{"kind": "cosine", "T_max": ..., "base_lrs": [...], ...}``).
    ``remap`` rules turn Burn paths (after the adapter's renames) into PyTorch names when no
    stored name map says otherwise.
    """
    ckpts = Checkpoints.find(checkpoint_dir)
    if epoch is None:
        epoch = ckpts.latest()
        if epoch is None:
            raise ConversionError(f"{ckpts.directory}: no epoch with model, optim and scheduler records")
    report = CheckpointReport(direction="burn->pytorch", source=str(ckpts.directory), target=str(out) if out else "", epoch=epoch)
    if out is not None and not overwrite and Path(out).exists():
        raise OutputExistsError(f"{out} exists; pass overwrite=True (--overwrite) to replace it")
    files = ckpts.files(epoch)
    if "model" not in files:
        raise ConversionError(f"{ckpts.directory}: no model-{epoch}.bpk")
    model_rec = ModuleRecord.load(files["model"])
    optim_rec = OptimizerRecord.load(files["optim"]) if "optim" in files else OptimizerRecord()
    sched_rec = LrSchedulerRecord.load(files["scheduler"]) if "scheduler" in files else LrSchedulerRecord()
    meta = _torch_meta(optim_rec)
    mmeta = meta.get("model", {})
    from .torch_live import module_types_of

    torch_types = dict(module_types_of(module)) if module is not None and is_torch_module(module) else {}
    torch_types.update(mmeta.get("types", {}))

    # -- model ---------------------------------------------------------------------------------
    entries = [Entry(t.name, t.dtype, t.shape, t.numpy, param_id=t.param_id) for t in model_rec.tensors]
    types = ModuleTypes(module_types, type_rules, torch_types=torch_types, infer=infer_types)
    types.run_inference(entries)
    typed = [e.replace(module_type=types.resolve(e)) for e in entries]
    _check_types(typed, report)
    adapter = BurnToPyTorchAdapter()
    torch_names = {burn: torch for torch, burn in mmeta.get("names", {}).items()}
    remapper = remap if isinstance(remap, KeyRemapper) or remap is None else KeyRemapper(remap)
    model_sd: dict[str, np.ndarray] = {}
    by_burn: dict[str, tuple[Entry, str]] = {}
    for e in typed:
        back = adapter.adapt(e)
        name = torch_names.get(e.name) or (remapper.remap(back.name) if remapper else back.name)
        if name != e.name:
            report.renamed[e.name] = name
        if any(s.startswith("transposed") for s in back.steps):
            report.transposed.append(name)
        model_sd[name] = np.asarray(back.numpy())
        by_burn[e.name] = (e, name)
    dropped = mmeta.get("dropped")
    if dropped is not None:
        for name, info in dropped.items():
            model_sd[name] = np.array(info["value"], dtype=info["dtype"])
    else:
        want = list(module.state_dict()) if module is not None and is_torch_module(module) else None
        for e in typed:
            if e.module_type == "Struct:BatchNorm" and e.param == "running_var":
                name = by_burn[e.name][1].rpartition(".")[0] + ".num_batches_tracked"
                if want is None or name in want:
                    model_sd[name] = np.array(0, dtype=np.int64)
                    report.warnings.append(f"{name} set to 0: Burn does not track it")
    order = mmeta.get("order") or (list(module.state_dict()) if module is not None and is_torch_module(module) else None)
    if order is not None:
        missing = [n for n in order if n not in model_sd]
        if missing:
            report.warnings.append(f"model tensors the PyTorch side expects but the Burn record lacks: {missing}")
        model_sd = {n: model_sd[n] for n in order if n in model_sd} | {n: a for n, a in model_sd.items() if n not in order}
    report.model_tensors = len(model_sd)

    # -- optimizer -------------------------------------------------------------------------------
    ometa = meta.get("optimizer")
    optimizer_sd = None
    config = dict(optimizer_config or {})
    kind = None
    if ometa is not None:
        kind = ometa["kind"]
    elif config:
        kind = _optimizer_kind({"param_groups": [{}], "state": {}}, config.pop("kind", None) or "adam")
    elif not optim_rec.is_empty():
        rk = optim_rec.kind
        kind = "SGD" if rk.startswith("SGD") else "Adam" if rk.startswith("Adam") else None
        if kind is None:
            raise ConversionError(f"Burn optimizer state of kind {rk!r} has no PyTorch counterpart here (Adam, AdamW, SGD)")
        report.warnings.append(f"no PyTorch optimizer settings stored or given: torch.optim.{kind} defaults used")
    if kind is not None:
        config.pop("kind", None)
        report.optimizer = kind
        if ometa is not None:
            param_names = list(ometa["param_names"])
            groups = [dict(g) for g in ometa["param_groups"]]
        else:
            if module is not None and is_torch_module(module):
                param_names = [n for n, _ in module.named_parameters()]
            else:
                param_names = [n for n in model_sd if not _is_buffer_name(n) and model_sd[n].dtype.kind in "fc"]
            groups = [{**_TORCH_DEFAULTS[kind], **config, "params": list(range(len(param_names)))}]
        burn_of = {torch: burn for burn, (_, torch) in by_burn.items()}
        state: dict[int, dict[str, Any]] = {}
        states = optim_rec.states()
        steps = set()
        for index, torch_name in enumerate(param_names):
            burn_name = burn_of.get(torch_name)
            if burn_name is None:
                report.warnings.append(f"parameter {torch_name!r} is not in the Burn model record")
                continue
            entry, _ = by_burn[burn_name]
            st = states.get(entry.param_id)
            if st is None:
                continue

            def torch_layout(array: np.ndarray, entry: Entry = entry) -> np.ndarray:
                probe = Entry(entry.name, entry.dtype, np.shape(array), lambda: np.asarray(array), module_type=entry.module_type)
                return np.asarray(adapter.adapt(probe).numpy())

            if isinstance(st, AdamState):
                if kind not in ("Adam", "AdamW"):
                    raise ConversionError(f"{burn_name}: Adam state in the Burn record but the PyTorch optimizer is {kind}")
                item = {"step": np.array(float(st.time), dtype=np.float32), "exp_avg": torch_layout(st.moment_1), "exp_avg_sq": torch_layout(st.moment_2)}
                if st.max_moment_2 is not None:
                    item["max_exp_avg_sq"] = torch_layout(st.max_moment_2)
                steps.add(st.time)
            elif isinstance(st, SgdState):
                if kind != "SGD":
                    raise ConversionError(f"{burn_name}: SGD state in the Burn record but the PyTorch optimizer is {kind}")
                if st.velocity is None:
                    continue
                item = {"momentum_buffer": torch_layout(st.velocity)}
            else:
                raise ConversionError(f"{burn_name}: {type(st).__name__} has no PyTorch counterpart here")
            state[index] = item
        report.params_with_state = len(state)
        report.step = max(steps) if steps else None
        unknown_ids = set(states) - {by_burn[b][0].param_id for b in by_burn}
        if unknown_ids:
            report.warnings.append(f"{len(unknown_ids)} optimizer state(s) for param ids not in the model record were not converted")
        optimizer_sd = {"state": state, "param_groups": groups}

    # -- scheduler --------------------------------------------------------------------------------
    smeta = meta.get("scheduler")
    scheduler_sd = None
    sconfig = dict(scheduler_config or {})
    skind_name = smeta["kind"] if smeta is not None else None
    skind = None
    if skind_name is not None:
        skind = {v: k for k, v in _SCHEDULER_CLASSES.items()}[skind_name]
    elif sconfig:
        skind = _scheduler_kind(None, sconfig.pop("kind", None))
    elif not sched_rec.is_empty():
        leaves = {k.rpartition(".")[2] for k in sched_rec.scalars}
        skind = {"current_iter": "cosine", "remaining_iters": "linear", "iter_idx": "step", "previous_lr": "exponential"}.get(next(iter(leaves)))
        report.warnings.append("the Burn scheduler state has no PyTorch configuration stored or given; scheduler not converted")
        skind = None
    if skind is not None:
        base_sd = dict(smeta["state"]) if smeta is not None else {}
        base_sd.update(sconfig)
        problem = _scheduler_state_problem(skind, base_sd)
        if problem:
            raise ConversionError(f"scheduler state (stored torch.scheduler metadata or scheduler_config): {problem}")
        report.scheduler = _SCHEDULER_CLASSES[skind]
        groups_n = len(base_sd["base_lrs"])
        positions = []
        for g in range(groups_n):
            sub = sched_rec.record(str(g))
            cls = {"cosine": CosineAnnealingLrScheduler, "linear": LinearLrScheduler, "step": StepLrScheduler}.get(skind)
            if cls is not None:
                init = cls.initial() if cls is not LinearLrScheduler else cls.initial(int(base_sd["total_iters"]))
            else:
                init = ExponentialLrScheduler.initial(float(base_sd["base_lrs"][g]), float(base_sd["gamma"]))
            sched = init.load_record(sub)
            positions.append(
                _scheduler_position(
                    skind, sched, int(base_sd["total_iters"]) if skind == "linear" else None,
                    float(base_sd["base_lrs"][g]), float(base_sd["gamma"]) if skind == "exponential" else None,
                    int(base_sd["last_epoch"]) if "last_epoch" in base_sd else None,
                )
            )  # fmt: skip
        if len(set(positions)) > 1:
            report.warnings.append(f"scheduler groups are at different steps {positions}; PyTorch keeps one last_epoch, using {max(positions)}")
        k = max(positions) if positions else 0
        report.scheduler_position = k
        if smeta is not None and int(smeta["state"].get("last_epoch", -1)) == k and not sconfig:
            scheduler_sd = dict(smeta["state"])
        else:
            lrs = [_closed_form_lr(skind, base_sd, g, k) for g in range(groups_n)]
            scheduler_sd = {**base_sd, "last_epoch": k, "_step_count": k + 1, "_is_initial": False,
                            "_get_lr_called_within_step": False, "_last_lr": lrs}  # fmt: skip
            if optimizer_sd is not None:
                for g, group in enumerate(optimizer_sd["param_groups"][:groups_n]):
                    group["lr"] = lrs[g]
                    group["initial_lr"] = float(base_sd["base_lrs"][g])
            if smeta is not None:
                report.warnings.append(
                    f"the Burn scheduler is at step {k}, the stored PyTorch state at {smeta['state'].get('last_epoch')}: "
                    "learning rates recomputed in closed form (may differ from PyTorch's recursive values in the last bits)"
                )
    extra = dict(meta.get("extra", {}))
    keys = dict(meta.get("keys", {}))
    result = TorchTrainingState(model_sd, optimizer_sd, scheduler_sd, extra, None, dict(torch_types), keys)
    if out is not None:
        try:
            import torch
        except ImportError:
            raise ConversionError("writing a .pt file needs torch (pip install torch)") from None
        with atomic_output(Path(out), overwrite=overwrite) as stream:
            torch.save(result.to_torch(), stream)
        report.files["pytorch"] = str(out)
    return result, report

