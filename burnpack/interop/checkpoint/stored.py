"""The ``torch.*`` metadata a PyTorch → Burn migration keeps in the optimizer record (Burn
ignores it), read back and checked when converting to PyTorch: a file edited by hand or by
another tool gets a ConversionError naming the key, never a crash."""

from __future__ import annotations

from typing import Any

from ...records import OptimizerRecord
from ...core.sidefile import JSONObject, parse_json
from ...errors import ConversionError, excerpt
from .optimizer import TORCH_DEFAULTS
from .scheduler import SCHEDULER_CLASSES
from .state import META_PREFIX, from_json, stored_array


def torch_meta(record: OptimizerRecord) -> JSONObject:
    """The ``torch.*`` entries of an optimizer record, decoded and checked."""
    out = {}
    for key, value in record.metadata.items():
        if key.startswith(META_PREFIX):
            name = key[len(META_PREFIX):]
            if name == "format":
                out[name] = value
                continue
            parsed = parse_json(value, ConversionError, f"optim record metadata {excerpt(key)}")
            try:
                out[name] = from_json(parsed)
            except (ValueError, TypeError) as exc:
                raise ConversionError(f"optim record metadata {excerpt(key)} is not JSON of burnpack's form: {exc}") from None
            problem = _problem(name, out[name])
            if problem:
                raise ConversionError(f"optim record metadata {excerpt(key)} is malformed: {problem}")
    return out


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _names_a_parameter(param: Any, names: list[str]) -> bool:
    """A param group entry: an index into ``names`` or one of them (``get_state_dict``'s form)."""
    return (type(param) is int and 0 <= param < len(names)) or (isinstance(param, str) and param in names)


def _model_problem(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "expected an object"
    for field, ok in (("order", _is_str_list), ("names", _is_str_map), ("types", _is_str_map)):
        if field in value and not ok(value[field]):
            return f"'{field}' has the wrong form"
    dropped = value.get("dropped")
    if dropped is None:
        return None
    if not isinstance(dropped, dict):
        return "'dropped' is not an object"
    for tensor, info in dropped.items():
        if not isinstance(info, dict) or set(info) != {"value", "dtype"}:
            return f"'dropped' entry {excerpt(tensor)} is not an object of 'value' and 'dtype'"
        try:
            stored_array(info["value"], info["dtype"])
        except ValueError as exc:
            return f"'dropped' entry {excerpt(tensor)}: {exc}"
    return None


def _problem(name: str, value: Any) -> str | None:
    """What is wrong with one ``torch.*`` entry (as ``pytorch_to_burn_checkpoint`` writes it), or None."""
    if name in ("extra", "keys") and not isinstance(value, dict):
        return "expected an object"
    if name == "keys" and not _is_str_map(value):
        return "expected an object of strings"
    if name == "model":
        return _model_problem(value)
    if name == "optimizer":
        if not isinstance(value, dict) or not isinstance(value.get("kind"), str) or value["kind"] not in TORCH_DEFAULTS:
            return f"expected an object whose 'kind' is one of {sorted(TORCH_DEFAULTS)}"
        if not _is_str_list(value.get("param_names")):
            return "'param_names' is not a list of strings"
        if not isinstance(value.get("param_groups"), list) or not all(isinstance(g, dict) for g in value["param_groups"]):
            return "'param_groups' is not a list of objects"
        names = value["param_names"]
        for group in value["param_groups"]:
            params = group.get("params")
            if not isinstance(params, list) or not all(_names_a_parameter(p, names) for p in params):
                return "a param group's 'params' are not indices into or names in 'param_names'"
    if name == "scheduler":
        if not isinstance(value, dict) or value.get("kind") not in SCHEDULER_CLASSES.values():
            return f"expected an object whose 'kind' is one of {sorted(SCHEDULER_CLASSES.values())}"
        if not isinstance(value.get("state"), dict):
            return "'state' is not an object"
    return None
