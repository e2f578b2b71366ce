"""Burn's ``#[derive(RecordState)]`` flattening, as data (burn-derive ``src/record_state/mod.rs``).

A state struct is a list of fields; each field adds ``"{prefix}.{field}"`` names:

======================  ======================================================================
field type              written as
======================  ======================================================================
``Tensor<D>``           tensor ``p.f`` (required on load)
``Option<Tensor<D>>``   tensor ``p.f`` only if ``Some``
``Vec<Tensor<D>>``      scalar ``p.f.len`` (UInt) + tensors ``p.f.0``, ``p.f.1``, ...
integer/float/bool      scalar ``p.f`` (``u*``/``usize`` → UInt, ``i*`` → Int, ``f*`` → Float)
``Option<scalar>``      scalar only if ``Some``
nested state            its fields under ``p.f``
``Option<nested>``      nested fields only if ``Some``; on load ``None`` unless some key starts
                        with ``"p.f."``
======================  ======================================================================

Unflattening returns None when a required leaf is absent or a scalar has an incompatible kind —
Burn then silently drops the state. Tensors are written in field order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..codec._generated.metadata import Scalar
from ..core.tensor import Tensor
from ._common import scalar_for, scalar_value


def join_path(prefix: str, leaf: str) -> str:
    """Burn's ``join_path``: ``"prefix.leaf"``, or ``leaf`` for an empty prefix."""
    return f"{prefix}.{leaf}" if prefix else leaf


@dataclass(frozen=True)
class Field:
    """One field of a state struct: its ``kind``, its key, and the Python attribute it maps to.

    ``kind``: ``tensor``, ``opt_tensor``, ``vec_tensor``, ``scalar``, ``opt_scalar``, ``nested``,
    ``opt_nested``. ``rust_type`` (``usize``, ``i32``, ``f64``, ``bool``, ...) for scalars;
    ``children`` for nested states.
    """

    kind: str
    key: str
    attr: str = ""
    """The Python attribute (empty for nested states, whose children carry their own)."""
    rust_type: str = ""
    """The Rust type of a scalar (empty for tensors and nested states)."""
    children: tuple[Field, ...] = ()


def burn_field(path: str, kind: str = "tensor", rust_type: str = "", **options: Any) -> Any:
    """A dataclass field of a state, declared once: its attribute is the dataclass field, its place
    in Burn's struct is ``path`` (``"momentum.time"``; a container written ``"momentum?"`` is an
    ``Option`` of a nested state) and its ``kind`` (``tensor``, ``opt_tensor``, ``vec_tensor``,
    ``scalar``, ``opt_scalar``; ``rust_type`` for scalars). ``options`` are the dataclass
    field's (``default``, ``default_factory``, ``kw_only``); an optional kind defaults to None."""
    if kind in ("opt_tensor", "opt_scalar") and "default" not in options and "default_factory" not in options:
        options["default"] = None
    return dataclasses.field(metadata={_PLACE: (path, kind, rust_type)}, **options)


_PLACE = "burn"


def layout(state_class: type) -> tuple[Field, ...]:
    """A state dataclass's Burn struct, built from its :func:`burn_field` fields in declaration
    order (which is Burn's field order: tensors are written in it)."""
    root: dict[str, Any] = {}
    for f in dataclasses.fields(state_class):
        path, kind, rust_type = f.metadata[_PLACE]
        *groups, key = path.split(".")
        level = root
        for group in groups:
            name, optional = group.removesuffix("?"), group.endswith("?")
            node = level.setdefault(name, ("opt_nested" if optional else "nested", {}))
            level = node[1]
        level[key] = Field(kind, key, f.name, rust_type)

    def build(level: dict[str, Any]) -> tuple[Field, ...]:
        return tuple(node if isinstance(node, Field) else Field(node[0], key, children=build(node[1])) for key, node in level.items())

    return build(root)


def _attrs(fields: tuple[Field, ...]) -> list[str]:
    out: list[str] = []
    for f in fields:
        out.extend(_attrs(f.children) if f.kind in ("nested", "opt_nested") else [f.attr])
    return out


def flatten(
    fields: tuple[Field, ...], values: Mapping[str, Any], prefix: str
) -> tuple[list[tuple[str, Any]], list[tuple[str, Scalar]]]:
    """``(tensors, scalars)`` named under ``prefix`` for the attribute ``values``, in field order.

    An optional nested state is written when any of its attributes is not None.
    """
    tensors: list[tuple[str, Any]] = []
    scalars: list[tuple[str, Scalar]] = []
    for f in fields:
        name = join_path(prefix, f.key)
        if f.kind == "tensor":
            if values.get(f.attr) is None:
                raise ValueError(f"state field {f.attr!r} ({name}) is required")
            tensors.append((name, values[f.attr]))
        elif f.kind == "opt_tensor":
            if values.get(f.attr) is not None:
                tensors.append((name, values[f.attr]))
        elif f.kind == "vec_tensor":
            items = list(values.get(f.attr) or ())
            scalars.append((f"{name}.len", Scalar.UInt(len(items))))
            tensors.extend((f"{name}.{i}", item) for i, item in enumerate(items))
        elif f.kind == "scalar":
            if values.get(f.attr) is None:
                raise ValueError(f"state field {f.attr!r} ({name}) is required")
            scalars.append((name, _scalar(f, name, values[f.attr])))
        elif f.kind == "opt_scalar":
            if values.get(f.attr) is not None:
                scalars.append((name, _scalar(f, name, values[f.attr])))
        elif f.kind == "nested" or any(values.get(a) is not None for a in _attrs(f.children)):
            sub_t, sub_s = flatten(f.children, values, name)
            tensors.extend(sub_t)
            scalars.extend(sub_s)
    return tensors, scalars


def _scalar(f: Field, name: str, value: Any) -> Scalar:
    if isinstance(value, Scalar):
        return value
    try:
        return scalar_for(f.rust_type, value)
    except Exception as exc:
        raise ValueError(f"state field {f.attr!r} ({name}): {exc}") from None


class StateSource:
    """The named tensors and scalars a state is rebuilt from (Burn's ``StateSource``).

    Tensors are taken (removed) by name, scalars are read and left in place.
    """

    def __init__(self, tensors: Mapping[str, Tensor], scalars: Mapping[str, Scalar]) -> None:
        self.tensors = dict(tensors)
        self.scalars = dict(scalars)

    def take_tensor(self, name: str) -> Tensor | None:
        return self.tensors.pop(name, None)

    def scalar(self, name: str) -> Scalar | None:
        return self.scalars.get(name)

    def has_under(self, prefix: str) -> bool:
        head = join_path(prefix, "")
        return any(k.startswith(head) for k in self.tensors) or any(k.startswith(head) for k in self.scalars)


def unflatten(fields: tuple[Field, ...], prefix: str, source: StateSource, missing: list[str] | None = None) -> dict[str, Any] | None:
    """The attribute values rebuilt from ``source`` (tensors as ``Tensor``), or None
    where Burn's derived ``state_unflatten`` returns None. ``missing`` collects why."""
    values: dict[str, Any] = {}
    ok = True

    def fail(name: str, why: str) -> None:
        nonlocal ok
        ok = False
        if missing is not None:
            missing.append(f"{name} ({why})")

    for f in fields:
        name = join_path(prefix, f.key)
        if f.kind == "tensor":
            t = source.take_tensor(name)
            if t is None:
                fail(name, "tensor missing")
            values[f.attr] = t
        elif f.kind == "opt_tensor":
            values[f.attr] = source.take_tensor(name)
        elif f.kind == "vec_tensor":
            length = scalar_value("usize", source.scalar(f"{name}.len"))
            items: list[Tensor] = []
            if length is None:
                fail(f"{name}.len", "scalar missing or not an unsigned integer")
            else:
                for i in range(length):
                    t = source.take_tensor(f"{name}.{i}")
                    if t is None:
                        fail(f"{name}.{i}", "tensor missing")
                        break
                    items.append(t)
            values[f.attr] = items
        elif f.kind == "scalar":
            value = scalar_value(f.rust_type, source.scalar(name))
            if value is None:
                fail(name, f"scalar missing or not a {f.rust_type}")
            values[f.attr] = value
        elif f.kind == "opt_scalar":
            values[f.attr] = scalar_value(f.rust_type, source.scalar(name))
        elif f.kind == "nested":
            sub = unflatten(f.children, name, source, missing)
            if sub is None:
                ok = False
                sub = {a: None for a in _attrs(f.children)}
            values.update(sub)
        else:  # opt_nested
            sub = unflatten(f.children, name, source, missing) if source.has_under(name) else None
            values.update(sub if sub is not None else {a: None for a in _attrs(f.children)})
        if not ok and missing is None:
            return None
    return values if ok else None


def leaf_names(fields: tuple[Field, ...], prefix: str = "") -> tuple[set[str], set[str], set[str]]:
    """``(required, optional, vec)`` leaf names; ``vec`` holds ``Vec`` field prefixes."""
    required: set[str] = set()
    optional: set[str] = set()
    vec: set[str] = set()
    for f in fields:
        name = join_path(prefix, f.key)
        if f.kind in ("tensor", "scalar"):
            required.add(name)
        elif f.kind in ("opt_tensor", "opt_scalar"):
            optional.add(name)
        elif f.kind == "vec_tensor":
            required.add(f"{name}.len")
            vec.add(name)
        else:
            r, o, v = leaf_names(f.children, name)
            (required if f.kind == "nested" else optional).update(r)
            optional.update(o)
            vec.update(v)
    return required, optional, vec
