"""Optimizer state: a PyTorch Adam / AdamW / SGD ``state_dict`` ↔ a Burn ``OptimizerRecord``.

Adam ``exp_avg`` / ``exp_avg_sq`` / ``max_exp_avg_sq`` ↔ ``moment_1`` / ``moment_2`` /
``max_moment_2`` (transposed with their Linear weight), ``step`` ↔ ``time``; SGD
``momentum_buffer`` ↔ ``velocity``. ``optimizer.state_dict()`` keys states by parameter position,
``torch.distributed.checkpoint.state_dict.get_state_dict`` by parameter name (FQN, in ``state``
and in the groups' ``params``); Burn by the ``param_id`` the model record shares. Hyperparameters
live in Burn's optimizer config (code), so they are reported as the config that reproduces them
and kept as ``torch.*`` metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...records import AdamState, OptimizerRecord, SgdState
from ..adapters import BurnToPyTorchAdapter, PyTorchToBurnAdapter
from ...errors import ConversionError, excerpt, excerpts, shown
from .._io import view_of
from .model import BurnModel, TorchModel, layout_adapter
from .state import CheckpointReport, TorchTrainingState, is_buffer_name

TORCH_DEFAULTS: dict[str, dict[str, Any]] = {
    "Adam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "amsgrad": False, "maximize": False,
             "foreach": None, "capturable": False, "differentiable": False, "fused": None, "decoupled_weight_decay": False},
    "AdamW": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.01, "amsgrad": False, "maximize": False,
              "foreach": None, "capturable": False, "differentiable": False, "fused": None, "decoupled_weight_decay": True},
    "SGD": {"lr": 0.001, "momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False, "maximize": False,
            "foreach": None, "differentiable": False, "fused": None},
}  # fmt: skip


def optimizer_kind(sd: Mapping[str, Any], given: str | None) -> str:
    """``Adam``, ``AdamW`` or ``SGD``: as given, else told from the param groups and states."""
    if given is not None:
        names = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD"}
        if given.strip().lower() not in names:
            raise ConversionError(f"unsupported optimizer {given!r}; supported: {', '.join(TORCH_DEFAULTS)}")
        return names[given.strip().lower()]
    group = (sd.get("param_groups") or [{}])[0]
    if "betas" in group:
        return "AdamW" if group.get("decoupled_weight_decay") else "Adam"
    if "momentum" in group and "dampening" in group:
        return "SGD"
    leaves = {leaf for state in sd.get("state", {}).values() for leaf in state}
    if {"exp_avg", "exp_avg_sq"} <= leaves:
        return "Adam"
    if leaves <= {"momentum_buffer"}:
        return "SGD"
    raise ConversionError(
        f"unsupported optimizer state (param group keys {sorted(group)}, state keys {sorted(leaves)}); "
        f"supported: {', '.join(f'torch.optim.{kind}' for kind in TORCH_DEFAULTS)}"
    )


def burn_config(kind: str, group: Mapping[str, Any]) -> str:
    """The Burn optimizer config (Rust) that reproduces a PyTorch param group's settings."""
    if kind in ("Adam", "AdamW"):
        b1, b2 = group.get("betas", (0.9, 0.999))
        text = f"{kind}Config::new().with_beta_1({b1!r}).with_beta_2({b2!r}).with_epsilon({group.get('eps', 1e-8)!r})"
        wd = group.get("weight_decay", 0)
        if kind == "AdamW":
            text += f".with_weight_decay({float(wd)!r})"
        elif wd:
            text += f".with_weight_decay(Some(WeightDecayConfig::new({float(wd)!r})))"
        return text + (".with_amsgrad(true)" if group.get("amsgrad") else "")
    text = "SgdConfig::new()"
    if group.get("momentum", 0):
        text += (
            f".with_momentum(Some(MomentumConfig {{ momentum: {float(group['momentum'])!r}, dampening: "
            f"{float(group.get('dampening', 0))!r}, nesterov: {str(bool(group.get('nesterov'))).lower()} }}))"
        )
    if group.get("weight_decay"):
        text += f".with_weight_decay(Some(WeightDecayConfig::new({float(group['weight_decay'])!r})))"
    return text


def keyed_by_name(optimizer_sd: Mapping[str, Any]) -> bool:
    """Whether the groups list parameter names (``get_state_dict``'s form), not indices."""
    listed = [p for group in optimizer_sd["param_groups"] for p in group["params"]]
    return bool(listed) and all(isinstance(p, str) for p in listed)


def param_order(state: TorchTrainingState, optimizer_sd: Mapping[str, Any]) -> list[str]:
    """The parameter names in the order the optimizer's groups list them."""
    listed = [p for group in optimizer_sd["param_groups"] for p in group["params"]]
    if keyed_by_name(optimizer_sd):
        unknown = [name for name in listed if name not in state.model]
        if unknown:
            raise ConversionError(f"the optimizer's param_groups name {len(unknown)} parameter(s) the model does not have: [{excerpts(unknown, 5)}]")
        if len(set(listed)) != len(listed):
            raise ConversionError("the optimizer's param_groups list a parameter more than once")
        return listed
    if state.param_names is not None:
        names = state.param_names
    else:  # as named_parameters() lists them: a tied parameter once, under its first name
        views: set[object] = set()
        names = []
        for n, array in state.model.items():
            view = view_of(array)
            if not is_buffer_name(n) and array.dtype.kind in "fc" and (view is None or view not in views):
                names.append(n)
                views.add(view)
    if len(names) != len(listed):
        raise ConversionError(
            f"the optimizer indexes {len(listed)} parameters but the model has {len(names)} float tensors that are not "
            "BatchNorm buffers; pass module= (the torch.nn.Module) to give the exact parameter order"
        )
    if listed != list(range(len(listed))):
        raise ConversionError("the optimizer's param_groups list neither parameter indices 0..n-1 in order nor parameter names")
    return list(names)  # torch numbers parameters in the order the groups list them


def _state_keys(states: Mapping[Any, Any], order: list[str], by_name: bool, report: CheckpointReport) -> list[Any]:
    """The ``state`` key of each parameter in ``order``: its name (``get_state_dict``) or its index
    (an int, or a decimal string after a JSON round trip). State for no listed parameter is reported."""
    if by_name:
        odd = [k for k in states if not isinstance(k, str)]
        if odd:
            raise ConversionError(f"the optimizer state_dict's 'state' has {len(odd)} key(s) that are not parameter names: [{', '.join(map(shown, odd[:5]))}]")
        listed = set(order)
        unlisted = [k for k in states if k not in listed]
        if unlisted:
            report.warnings.append(f"optimizer state for parameters [{excerpts(unlisted, 5)}] that no param group lists was not converted")
        return list(order)
    odd = [k for k in states if not (type(k) is int or (isinstance(k, str) and k.isdecimal()))]
    if odd:
        raise ConversionError(f"the optimizer state_dict's 'state' has {len(odd)} key(s) that are not parameter indices: [{', '.join(map(shown, odd[:5]))}]")
    beyond = sorted(int(k) for k in states if int(k) >= len(order))
    if beyond:
        report.warnings.append(f"optimizer state for parameter indices {beyond[:5]} beyond the {len(order)} parameters was not converted")
    return [index if index in states else str(index) for index in range(len(order))]


def _adam_state(name: str, pstate: Mapping[str, Any], layout: Any) -> AdamState:
    missing = {"step", "exp_avg", "exp_avg_sq"} - set(pstate)
    if missing:
        raise ConversionError(f"{name}: Adam state lacks {sorted(missing)}")
    raw_step = np.asarray(pstate["step"])
    if raw_step.size != 1:
        raise ConversionError(f"{name}: Adam step has shape {list(raw_step.shape)}, expected a scalar")
    step = float(raw_step.reshape(-1)[0])
    if step != int(step) or step < 0:
        raise ConversionError(f"{name}: Adam step {step} is not a whole number")
    max2 = pstate.get("max_exp_avg_sq")
    return AdamState(int(step), layout(pstate["exp_avg"]), layout(pstate["exp_avg_sq"]), None if max2 is None else layout(max2))


def optimizer_to_burn(state: TorchTrainingState, model: BurnModel, kind: str, report: CheckpointReport) -> tuple[OptimizerRecord, dict[str, Any]]:
    """The Burn optimizer record and the ``torch.optimizer`` metadata to keep."""
    assert state.optimizer is not None
    record, adapter = OptimizerRecord(), PyTorchToBurnAdapter()
    order = param_order(state, state.optimizer)
    keys = _state_keys(state.optimizer["state"], order, keyed_by_name(state.optimizer), report)
    steps = set()
    for key, torch_name in zip(keys, order):
        pstate = state.optimizer["state"].get(key)
        if pstate is None or torch_name in model.excluded:
            continue
        entry = model.by_torch.get(torch_name)
        if entry is None or entry.param_id is None:
            raise ConversionError(f"optimizer state for {excerpt(torch_name)}, which is not in the model")
        layout = layout_adapter(adapter, entry)
        if kind in ("Adam", "AdamW"):
            typed: Any = _adam_state(torch_name, pstate, layout)
            steps.add(typed.time)
        else:
            buf = pstate.get("momentum_buffer")
            typed = SgdState(None if buf is None else layout(buf))
        record.set_state(entry.param_id, typed, path=entry.name, rank=entry.rank)
        report.params_with_state += 1
    if steps:
        report.step = max(steps)
        if len(steps) > 1:
            report.warnings.append(f"parameters were stepped different numbers of times: {sorted(steps)}")
    groups = state.optimizer["param_groups"]
    report.burn_configs += [burn_config(kind, group) for group in groups]
    if len(groups) > 1:
        report.not_mapped.append(
            f"{len(groups)} parameter groups: Burn keeps group membership in code "
            "(ModuleOptimizer / ModuleLrScheduler with_group); scheduler group i is written under 'i.'"
        )
    report.not_mapped.append("optimizer hyperparameters (lr, betas, eps, weight_decay, momentum...): Burn keeps them in the optimizer config (see burn configs)")
    return record, {"kind": kind, "param_groups": groups, "param_names": order}


def _torch_kind(record: OptimizerRecord, meta: Mapping[str, Any] | None, config: dict[str, Any], report: CheckpointReport) -> str | None:
    if meta is not None:
        return str(meta["kind"])
    if config:
        return optimizer_kind({"param_groups": [{}], "state": {}}, config.pop("kind", None) or "adam")
    if record.is_empty():
        return None
    rk = record.kind
    kind = "SGD" if rk.startswith("SGD") else "Adam" if rk.startswith("Adam") else None
    if kind is None:
        raise ConversionError(f"Burn optimizer state of kind {rk!r} has no PyTorch counterpart here (Adam, AdamW, SGD)")
    report.warnings.append(f"no PyTorch optimizer settings stored or given: torch.optim.{kind} defaults used")
    return kind


def _torch_state(name: str, st: Any, kind: str, layout: Any) -> dict[str, Any] | None:
    if isinstance(st, AdamState):
        if kind not in ("Adam", "AdamW"):
            raise ConversionError(f"{name}: Adam state in the Burn record but the PyTorch optimizer is {kind}")
        item = {"step": np.array(float(st.time), dtype=np.float32), "exp_avg": layout(st.moment_1), "exp_avg_sq": layout(st.moment_2)}
        if st.max_moment_2 is not None:
            item["max_exp_avg_sq"] = layout(st.max_moment_2)
        return item
    if isinstance(st, SgdState):
        if kind != "SGD":
            raise ConversionError(f"{name}: SGD state in the Burn record but the PyTorch optimizer is {kind}")
        return None if st.velocity is None else {"momentum_buffer": layout(st.velocity)}
    raise ConversionError(f"{name}: {type(st).__name__} has no PyTorch counterpart here")


def optimizer_to_pytorch(
    record: OptimizerRecord, meta: Mapping[str, Any] | None, config: Mapping[str, Any] | None, model: TorchModel,
    module: Any, report: CheckpointReport, *, by_name: bool = False,
) -> dict[str, Any] | None:  # fmt: skip
    """The PyTorch optimizer ``state_dict`` (None without optimizer state or settings), keyed
    by parameter name (``get_state_dict``'s form) when ``by_name`` or when the stored groups list
    names, else by index (``optimizer.state_dict()``'s)."""
    settings = dict(config or {})
    kind = _torch_kind(record, meta, settings, report)
    if kind is None:
        return None
    settings.pop("kind", None)
    report.optimizer = kind
    if meta is not None:
        names, groups = list(meta["param_names"]), [dict(g) for g in meta["param_groups"]]
    else:
        sd = model.state_dict
        names = [n for n, _ in module.named_parameters()] if module is not None else [
            n for n in sd if not is_buffer_name(n) and sd[n].dtype.kind in "fc"]  # fmt: skip
        groups = [{**TORCH_DEFAULTS[kind], **settings, "params": list(range(len(names)))}]
    if by_name and not keyed_by_name({"param_groups": groups}):
        groups = [{**group, "params": [names[index] for index in group["params"]]} for group in groups]
    by_name = keyed_by_name({"param_groups": groups})
    burn_of = {torch: burn for burn, (_, torch) in model.by_burn.items()}
    states, adapter = record.states(), BurnToPyTorchAdapter()
    out: dict[int | str, dict[str, Any]] = {}
    steps = set()
    for index, torch_name in enumerate(names):
        burn_name = burn_of.get(torch_name)
        if burn_name is None:
            report.warnings.append(f"parameter {excerpt(torch_name)} is not in the Burn model record")
            continue
        entry = model.by_burn[burn_name][0]
        st = states.get(entry.param_id) if entry.param_id is not None else None
        item = None if st is None else _torch_state(burn_name, st, kind, layout_adapter(adapter, entry))
        if item is not None:
            out[torch_name if by_name else index] = item
            steps.update([st.time] if isinstance(st, AdamState) else [])
    report.params_with_state, report.step = len(out), max(steps) if steps else None
    unknown = set(states) - {entry.param_id for entry, _ in model.by_burn.values()}
    if unknown:
        report.warnings.append(f"{len(unknown)} optimizer state(s) for param ids not in the model record were not converted")
    return {"state": out, "param_groups": groups}
