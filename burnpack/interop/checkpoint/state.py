"""The PyTorch side of a training checkpoint, and the report every migration returns.

:func:`read_torch_training_state` finds the model, optimizer and scheduler ``state_dict``s in a
checkpoint (a file read without torch, a dict, or live torch objects); the checkpoint's other
entries are kept as ``extra``. :class:`CheckpointReport` says what a migration did.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np

from ...core.display import printable_lines
from ...core.frameworks import TorchModule, is_torch_module, is_torch_tensor, numpy_to_torch, torch_to_numpy
from ...errors import ConversionError, excerpt, excerpts, shown
from ..limits import DCP_LIMITS, ReadCaps, ReadLimits, refuse_unused

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from ...core.sidefile import JSON

META_PREFIX = "torch."
FORMAT_TAG = "burnpack.interop.checkpoint/1"
_BUFFER_SUFFIXES = ("running_mean", "running_var", "num_batches_tracked")
_MODEL_KEYS = ("model", "model_state_dict", "state_dict", "model_state", "net", "network")
_OPTIM_KEYS = ("optimizer", "optimizer_state_dict", "optim", "opt", "optimizer_state")
_SCHED_KEYS = ("scheduler", "lr_scheduler", "scheduler_state_dict", "sched", "lr_scheduler_state_dict")


@dataclass
class TorchTrainingState:
    """A PyTorch training state as plain data: arrays for tensors, dicts/lists for the rest.

    Args:
        model: The ordered ``state_dict``.
        optimizer: The optimizer's ``state_dict()``, or None.
        scheduler: The scheduler's ``state_dict()``, or None.
        extra: The checkpoint's other entries (``epoch``...).
        param_names: The parameter names in the order the optimizer indexes them, when known.
        module_types: Module path → Burn type, when a module was given.
        keys: Where the three parts came from: ``keys[part]`` their checkpoint key,
            ``keys[part + ".within"]`` the entry holding them (torch's DCP recipe saves
            ``{"app": AppState}``), ``keys["optimizer.layout"] == "flat"`` for
            ``get_state_dict``'s ``flatten_optimizer_state_dict`` form.
    """

    model: dict[str, np.ndarray]
    optimizer: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    param_names: list[str] | None = None
    module_types: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)

    def to_torch(self) -> dict[str, Any]:
        """The checkpoint dict with torch tensors, ready for ``torch.save`` / ``load_state_dict``.

        Returns:
            The dict (needs torch).
        """
        def conv(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return numpy_to_torch(value)
            if isinstance(value, dict):
                return type(value)((k, conv(v)) for k, v in value.items())
            if isinstance(value, (list, tuple)):
                return type(value)(conv(v) for v in value)
            return value

        out: dict[str, Any] = {}

        def put(part: str, value: Any) -> None:
            key = self.keys.get(part, part)
            within = self.keys.get(f"{part}.within")
            target = out if within is None else out.setdefault(within, {})
            if key.endswith("[0]"):  # it came as the only item of a list (Lightning)
                target[key[:-3]] = [value]
            else:
                target[key] = value

        put("model", OrderedDict((k, conv(v)) for k, v in self.model.items()))
        if self.optimizer is not None:
            flat = self.keys.get("optimizer.layout") == "flat"
            put("optimizer", conv(flatten_optimizer_sd(self.optimizer) if flat else self.optimizer))
        if self.scheduler is not None:
            put("scheduler", conv(self.scheduler))
        for key, value in self.extra.items():
            if isinstance(out.get(key), dict) and isinstance(value, dict):  # the rest of the entry holding the parts
                out[key].update(value)
            else:
                out[key] = value
        return out


@dataclass
class CheckpointReport:
    """What a checkpoint migration did: files, kinds, per-part counts and what could not map.

    Attributes:
        direction: ``"pytorch-to-burn"`` or ``"burn-to-pytorch"``.
        source: The source, as named in messages.
        target: The output.
        epoch: The Burn epoch.
        files: Part → file written.
        model_tensors: How many model tensors.
        renamed: Source name → output name where they differ.
        transposed: The tensors transposed.
        dropped: The tensors left out.
        optimizer: The optimizer's kind.
        params_with_state: How many parameters have optimizer state.
        step: The optimizer's step count.
        scheduler: The scheduler's kind.
        scheduler_position: The scheduler's step.
        burn_configs: The Burn configs that rebuild the optimizer and scheduler.
        options: What each model option (remap, exclude, module types...) changed.
        not_mapped: What could not be mapped.
        skipped_entries: Checkpoint entries that are neither a state dict nor storable as JSON
            (an ``argparse.Namespace``...), with their type; left out of the Burn records.
        warnings: Everything else worth knowing.
    """

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
    options: dict[str, str] = field(default_factory=dict)
    not_mapped: list[str] = field(default_factory=list)
    skipped_entries: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """A human summary: the files, then each part's counts and what could not map.

        Returns:
            The summary, terminal-safe.
        """
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
        skipped = [f"{key} ({kind})" for key, kind in self.skipped_entries.items()]
        options = [f"{option}: {what}" for option, what in self.options.items()]
        for title, items in (("options", options), ("burn configs", self.burn_configs), ("not mapped", self.not_mapped),
                             ("skipped checkpoint entries", skipped), ("warnings", self.warnings)):  # fmt: skip
            if items:
                lines.append(f"  {title}:")
                lines += [f"    {item}" for item in items]
        return printable_lines(lines)

    def __str__(self) -> str:
        return self.summary()


# --------------------------------------------------------------------------------------------
# Reading a PyTorch training state
# --------------------------------------------------------------------------------------------
def _to_plain(value: Any, depth: int = 0) -> Any:
    """Torch tensors → numpy; containers copied; everything else as is."""
    if depth > 64:
        raise ConversionError("checkpoint nests more than 64 deep")
    if is_torch_tensor(value):
        return torch_to_numpy(value)
    if isinstance(value, dict):
        items = ((k, _to_plain(v, depth + 1)) for k, v in value.items())
        return OrderedDict(items) if isinstance(value, OrderedDict) else dict(items)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_plain(v, depth + 1) for v in value)
    return value


def is_array_dict(value: object) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, np.ndarray) for v in value.values())


def is_optimizer_sd(value: object) -> bool:
    return isinstance(value, dict) and "state" in value and "param_groups" in value


def check_optimizer_sd(sd: Mapping[str, Any]) -> None:
    """An optimizer ``state_dict``'s shape: ``state`` maps each key to a dict, ``param_groups``
    is a list of dicts each with a ``params`` list."""
    if not isinstance(sd["state"], dict) or not all(isinstance(v, dict) for v in sd["state"].values()):
        raise ConversionError("the optimizer state_dict's 'state' is not a dict of per-parameter dicts")
    groups = sd["param_groups"]
    if not isinstance(groups, list) or not all(isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups):
        raise ConversionError("the optimizer state_dict's 'param_groups' is not a list of groups, each with a 'params' list")


def is_flat_optimizer_sd(value: object) -> bool:
    """``get_state_dict(..., options=StateDictOptions(flatten_optimizer_state_dict=True))``'s form:
    ``{"state.<name>.<key>": ..., "param_groups.<name>.<setting>": ...}``."""
    return (
        isinstance(value, dict) and any(isinstance(k, str) and k.startswith("param_groups.") for k in value)
        and all(isinstance(k, str) and k.startswith(("state.", "param_groups.")) for k in value)
    )  # fmt: skip


def _same_settings(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) or isinstance(b[k], np.ndarray) else a[k] == b[k] for k in a)  # fmt: skip


def unflatten_optimizer_sd(flat: dict[str, Any]) -> dict[str, Any]:
    """The optimizer ``state_dict`` (keyed by name) of a flattened one. Parameters listed one
    after another with the same settings form one group (the flat form keeps no groups)."""
    state: dict[str, dict[str, Any]] = {}
    settings: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        section, _, rest = key.partition(".")
        name, _, leaf = rest.rpartition(".")
        if not name or not leaf:
            raise ConversionError(f"flattened optimizer state key {excerpt(key)} is not '{section}.<parameter name>.<key>'")
        (state if section == "state" else settings).setdefault(name, {})[leaf] = value
    groups: list[dict[str, Any]] = []
    for name, group in settings.items():
        if groups and _same_settings({k: v for k, v in groups[-1].items() if k != "params"}, group):
            groups[-1]["params"].append(name)
        else:
            groups.append({**group, "params": [name]})
    return {"state": state, "param_groups": groups}


def flatten_optimizer_sd(sd: dict[str, Any]) -> dict[str, Any]:
    """The flattened form of an optimizer ``state_dict`` keyed by name (as torch flattens it)."""
    flat = {f"state.{name}.{leaf}": value for name, item in sd["state"].items() for leaf, value in item.items()}
    for group in sd["param_groups"]:
        for name in group["params"]:
            flat.update({f"param_groups.{name}.{key}": value for key, value in group.items() if key != "params"})
    return flat


def is_scheduler_sd(value: object) -> bool:
    return isinstance(value, dict) and "last_epoch" in value and "base_lrs" in value


def _take(root: dict[Any, Any], explicit: str | None, names: Sequence[str], test: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """Pop one part out of a checkpoint dict: by the key given, a usual key, its shape, or as the
    only item of a list (Lightning: ``"optimizer_states": [sd]``). Returns ``(key, value)``."""
    if explicit is not None:
        if explicit not in root:
            raise ConversionError(f"no {explicit!r} in the checkpoint; keys: {excerpts(sorted(map(str, root)))}")
        return explicit, root.pop(explicit)
    for name in names:
        if name in root and (test(_to_plain(root[name])) or is_torch_module(root[name]) or hasattr(root[name], "state_dict")):
            return name, root.pop(name)
    for name, value in list(root.items()):
        if test(_to_plain(value)):
            return str(name), root.pop(name)
    for name, value in list(root.items()):
        if isinstance(value, list) and len(value) == 1 and test(_to_plain(value[0])):
            return f"{name}[0]", root.pop(name)[0]
    return None


def _is_any_optimizer_sd(value: Any) -> bool:
    return is_optimizer_sd(value) or is_flat_optimizer_sd(value)


def _split_nested(root: dict[Any, Any], keys: dict[str, str], found: dict[str, Any]) -> dict[str, Any]:
    """The parts inside the one entry of ``root`` that holds a model (torch's DCP recipe saves
    ``{"app": AppState(model, optimizer)}``); that entry's other items are returned as extra."""
    nones: dict[str, str | None] = {"model": None, "optimizer": None, "scheduler": None}
    holders = [k for k, v in root.items() if isinstance(v, dict) and "model" in _split_checkpoint(dict(v), {}, nones)]
    if len(holders) != 1:
        return {}
    within = holders[0]
    inner, inner_keys = dict(root.pop(within)), dict[str, str]()
    for part, value in _split_checkpoint(inner, inner_keys, nones).items():
        key = inner_keys[part]
        if part not in found:
            found[part], keys[part], keys[f"{part}.within"] = value, key, str(within)
        elif key.endswith("[0]"):  # found outside already: the inner one stays as it was
            inner[key[:-3]] = [value]
        else:
            inner[key] = value
    return {str(within): inner} if inner else {}


def _split_checkpoint(root: dict[Any, Any], keys: dict[str, str], explicit: dict[str, str | None]) -> dict[str, Any]:
    """The model, optimizer and scheduler parts of a checkpoint dict; what remains is extra."""
    found: dict[str, Any] = {}
    for part, names, test in (("optimizer", _OPTIM_KEYS, _is_any_optimizer_sd), ("scheduler", _SCHED_KEYS, is_scheduler_sd),
                              ("model", _MODEL_KEYS, is_array_dict)):  # fmt: skip
        hit = _take(root, explicit[part], names, test)
        if hit is not None:
            keys[part], found[part] = hit
    if "model" not in found and is_array_dict(_to_plain(root)):
        found["model"] = dict(root)
        root.clear()
    return found


def _read_object(path: str | os.PathLike[str], caps: ReadCaps) -> Any:
    """The object a ``torch.save`` file or a ``torch.distributed.checkpoint`` folder holds, read
    within ``caps`` (each refused by a reader that does not use it)."""
    from ..dcp import is_dcp, read_dcp_object
    from ..pytorch import read_pytorch_object

    if is_dcp(path):
        return read_dcp_object(path, limits=ReadLimits.of(caps, DCP_LIMITS, "a DCP checkpoint"))
    return read_pytorch_object(path, **caps)


def _state_dict(value: Any, caps: ReadCaps) -> Any:
    """A path → its object; a live torch object → its ``state_dict()``."""
    if isinstance(value, (str, os.PathLike)):
        value = _read_object(value, caps)
    if value is not None and hasattr(value, "state_dict") and not isinstance(value, dict):
        value = value.state_dict()
    return value


def _model_arrays(model: Any) -> dict[str, np.ndarray]:
    model_sd = _to_plain(model)
    if isinstance(model_sd, dict) and all(isinstance(v, np.ndarray) for v in model_sd.values()):
        arrays = dict(model_sd)
    else:
        from ..formats import _flatten_arrays

        arrays = dict(_flatten_arrays(model_sd)) if isinstance(model_sd, dict) else {}
        if not arrays:
            raise ConversionError("the model part is not a state_dict of tensors")
    odd = [k for k in arrays if not isinstance(k, str)]
    if odd:
        raise ConversionError(f"the model state_dict has {len(odd)} key(s) that are not parameter names (strings): [{', '.join(map(shown, odd[:5]))}]")
    return arrays


def _module_order(module: Any, live_optimizer: Any) -> list[str]:
    """Parameter names in the order the optimizer indexes them (exact with a live optimizer)."""
    named = list(module.named_parameters())
    if live_optimizer is None:
        return [name for name, _ in named]
    by_id = {id(p): name for name, p in named}
    order = [by_id.get(id(p)) for group in live_optimizer.param_groups for p in group["params"]]
    if None in order:
        raise ConversionError("the optimizer holds parameters that are not in the module")
    return [name for name in order if name is not None]


def read_torch_training_state(
    source: Any = None,
    *,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    module: TorchModule | None = None,
    model_key: str | None = None,
    optimizer_key: str | None = None,
    scheduler_key: str | None = None,
    **caps: Unpack[ReadCaps],
) -> TorchTrainingState:
    """Collect a training state from a checkpoint and/or separate parts.

    In a checkpoint dict the parts are found by key (``model`` / ``model_state_dict`` /
    ``state_dict``..., ``optimizer`` / ``optimizer_state_dict``..., ``scheduler`` /
    ``lr_scheduler``...) or, failing that, by shape (a dict of tensors; a dict with ``state``
    and ``param_groups``; a dict with ``last_epoch`` and ``base_lrs``). Other entries (an epoch,
    numpy scalars, an ``argparse.Namespace``...) become ``extra``.

    Args:
        source: A checkpoint file, DCP folder or dict.
        model: The model part (a file path, a ``state_dict`` or a live module).
        optimizer: The optimizer part (a file path, a ``state_dict`` or a live optimizer; with a
            live module, the exact index → parameter mapping, even for custom groups).
        scheduler: The scheduler part.
        module: An ``nn.Module`` supplying exact module types and the parameter order.
        model_key: The checkpoint key of the model part.
        optimizer_key: The checkpoint key of the optimizer part.
        scheduler_key: The checkpoint key of the scheduler part.
        **caps: The bounds files are read within (``max_pickle_depth``...).

    Returns:
        The training state.

    Raises:
        ConversionError: A part is missing or cannot be read.
    """
    from ..torch_live import module_types_of

    if not any(isinstance(part, (str, os.PathLike)) for part in (source, model, optimizer, scheduler)):
        refuse_unused(frozenset(caps), (), "a training state given as objects (no file is read)")
    keys: dict[str, str] = {}
    live_optimizer = optimizer if hasattr(optimizer, "param_groups") and hasattr(optimizer, "state_dict") else None
    root = _read_object(source, caps) if isinstance(source, (str, os.PathLike)) else source
    if is_torch_module(root):
        module, model, root = module or root, model if model is not None else root, None
    elif root is not None and not isinstance(root, dict):
        raise ConversionError(f"a training checkpoint must be a dict, got a {type(root).__name__}")
    extra: dict[str, Any] = {}
    if root is not None:
        root = dict(root)
        found = _split_checkpoint(root, keys, {"model": model_key, "optimizer": optimizer_key, "scheduler": scheduler_key})
        nested = _split_nested(root, keys, found) if model is None and "model" not in found else {}
        model = model if model is not None else found.get("model")
        optimizer = optimizer if optimizer is not None else found.get("optimizer")
        scheduler = scheduler if scheduler is not None else found.get("scheduler")
        extra = {str(key): _to_plain(value) for key, value in {**root, **nested}.items()}
    if model is None:
        raise ConversionError("no model state_dict found; pass model= or model_key=")
    if is_torch_module(model):
        module = module or model
    optimizer_sd, scheduler_sd = _to_plain(_state_dict(optimizer, caps)), _to_plain(_state_dict(scheduler, caps))
    if is_flat_optimizer_sd(optimizer_sd):
        optimizer_sd, keys["optimizer.layout"] = unflatten_optimizer_sd(optimizer_sd), "flat"
    if optimizer_sd is not None and is_optimizer_sd(optimizer_sd):
        check_optimizer_sd(optimizer_sd)
    if optimizer_sd is not None and not is_optimizer_sd(optimizer_sd):
        raise ConversionError("the optimizer part is not an optimizer state_dict (no 'state' / 'param_groups')")
    if scheduler_sd is not None and not is_scheduler_sd(scheduler_sd):
        raise ConversionError("the scheduler part is not an LR scheduler state_dict (no 'last_epoch' / 'base_lrs')")
    names = _module_order(module, live_optimizer) if module is not None else None
    types = module_types_of(module) if module is not None else {}
    return TorchTrainingState(_model_arrays(_state_dict(model, caps)), optimizer_sd, scheduler_sd, extra, names, types, keys)


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------
def is_buffer_name(name: str) -> bool:
    return name.rpartition(".")[2] in _BUFFER_SUFFIXES


def jsonable(value: object) -> JSON:
    """Plain data for metadata JSON (tuples and 0-d arrays tagged so they come back as such)."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return {"__ndarray__": value.item(), "dtype": str(value.dtype)}
        raise TypeError("arrays are not stored in metadata")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [jsonable(v) for v in value]}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a {getattr(value, 'type_name', type(value).__name__)} cannot be stored as JSON")


def from_json(value: JSON) -> JSON:
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(from_json(v) for v in value["__tuple__"])
        if set(value) == {"__ndarray__", "dtype"}:
            return stored_array(value["__ndarray__"], value["dtype"])
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


_NUMBER_DTYPES = frozenset(np.dtype(code).name for code in "?bhilqpBHILQPefdgFDG")
"""numpy's names of its bool, integer, float and complex types (``"int64"``, ``"float32"``)."""


def stored_array(value: JSON, dtype: JSON) -> np.ndarray:
    """An array kept in metadata JSON (a 0-d optimizer value, a dropped buffer).

    Both parts come from a file: the name must be one of ``_NUMBER_DTYPES`` and the value
    numbers or lists of them, so no dtype allocates what the file does not hold (``"S100000000"``,
    ``"(5000,5000)f4"``), holds objects (``"O"``) or quotes the file in numpy's errors.

    Args:
        value: The stored value: a number or nested lists of numbers.
        dtype: The stored numpy dtype name (``"int64"``, ``"float32"``).

    Returns:
        The array.

    Raises:
        ValueError: The dtype is not a number type's name, the value holds anything but
            numbers, or numpy cannot make the array (ragged lists, an int beyond the dtype).
    """
    if not isinstance(dtype, str) or dtype not in _NUMBER_DTYPES:
        raise ValueError(f"dtype {shown(dtype)} is not the name of a numpy bool, integer, float or complex type")
    items = [value]
    while items:
        item = items.pop()
        if isinstance(item, list):
            items.extend(item)
        elif type(item) not in (bool, int, float):
            raise ValueError(f"its value holds {shown(item)}, not only numbers")
    try:
        return np.array(value, dtype=dtype)
    except OverflowError as exc:  # an int beyond the dtype; ragged lists are numpy's ValueError
        raise ValueError(str(exc)) from None


def describe(value: object) -> str:
    if isinstance(value, (str, os.PathLike)):
        return str(value)
    return f"<{type(value).__name__}>"
