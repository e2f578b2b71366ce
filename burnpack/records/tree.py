"""Python module structures → Burn parameter paths.

Burn names every parameter by the dotted path of the fields that lead to it (the ``Module``
derive calls ``enter_module(field)`` on the way down, ``burn-derive/src/module/``). The same rules
applied to ordinary Python values:

==========================================  ===================================================
Python value                                path contribution (Burn equivalent)
==========================================  ===================================================
``dict`` / any ``Mapping``                  each key is a segment (struct fields ``fc.weight``)
dataclass instance, ``NamedTuple``          each field name is a segment (struct fields)
``list`` / ``tuple``                        ``0``, ``1``, ... (``Vec<M>``, ``[M; N]``, tuples)
``Variant("Base", value)``                  the variant name is a segment (enum module:
                                            ``feature.Base.weight``)
``None``                                    nothing (``Option::None``); ``Some`` is transparent
array, ``Param``, torch tensor              a parameter at the current path (``Param<Tensor>``)
``RunningState(value, id)``                 the same (``RunningState``), but a load keeps the
                                            target's id rather than the record's
``Reparameterized(base, "lora", {...})``    ``base`` at the path, the factors below
                                            ``<path>.lora.`` (``fc.weight.lora.a``)
``Ignored(x)``, ``bool``/``int``/``float``/  nothing (``Ignored<T>``, ``#[module(skip)]``,
``str``, numpy scalars                      primitives, constant tensors)
``torch.nn.Module``                         its ``state_dict()`` keys (already dotted, lists
                                            indexed like Burn's ``Vec``)
==========================================  ===================================================

A dataclass field declared with ``field(metadata={"burn": "skip"})`` is skipped too. Order is the
traversal order, which is the data order Burn writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from ..codec._generated.metadata import DType
from ..core.frameworks import is_torch_module, is_torch_tensor
from ..core.quant import QuantizedTensor
from ..core.tensor import Tensor

_PRIMITIVES = (bool, int, float, complex, str, bytes, bytearray, np.generic)


class Param:
    """A parameter: its value, its Burn ``ParamId`` and, when it matters, its exact dtype.

    Args:
        value: An array-like (numpy array, torch tensor, ...).
        param_id: A u64; a fresh random one is drawn when a record is made from a ``Param`` without one.
        dtype: A Burn dtype numpy cannot express (``Flex32``, ``Bool(U8)``), pinned.
    """

    __slots__ = ("value", "param_id", "dtype")

    def __init__(self, value: Any, param_id: int | None = None, dtype: DType | None = None) -> None:
        self.value = value
        self.param_id = param_id
        self.dtype = dtype

    def __repr__(self) -> str:
        shape = list(np.shape(self.value)) if not is_torch_tensor(self.value) else list(self.value.shape)
        dtype = f", dtype={self.dtype!r}" if self.dtype is not None else ""
        return f"Param(shape={shape}, param_id={self.param_id}{dtype})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = np.asarray(self.value)
        return array if dtype is None else array.astype(dtype)

    def numpy(self) -> np.ndarray:
        """The value as a numpy array.

        Returns:
            The array (no copy when the value is one).
        """
        return np.asarray(self.value)

    @property
    def shape(self) -> tuple[int, ...]:
        """The value's shape."""
        return tuple(int(d) for d in (self.value.shape if is_torch_tensor(self.value) else np.shape(self.value)))


class RunningState(Param):
    """A ``RunningState`` tensor (BatchNorm's ``running_mean`` / ``running_var``).

    Recorded like a parameter, with its own id, but loading keeps the target's id instead of
    taking the record's (burn-core ``param/running.rs`` drops the id ``map_float`` returns).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "Running" + super().__repr__()


class Variant:
    """An enum module's active variant: its name becomes a path segment (``feature.Base.weight``).

    Args:
        name: The variant's name.
        value: The variant's module.
    """

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"Variant({self.name!r}, {self.value!r})"


class Ignored:
    """A value Burn does not record: ``Ignored<T>``, a ``#[module(skip)]`` field, a constant tensor.

    Args:
        value: The value, kept in the structure but given no path.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Ignored({self.value!r})"


class Reparameterized:
    """A reparameterized parameter (LoRA): ``base`` at the path, ``module`` below ``<path>.<name>``.

    Burn visits the base tensor, then enters ``name``: ``Reparameterized(w, "lora", {"a": a,
    "b": b})`` at ``fc.weight`` gives ``fc.weight``, ``fc.weight.lora.a`` and ``fc.weight.lora.b``.

    Args:
        base: The base tensor.
        name: The path segment of the reparameterization (``"lora"`` for LoRA).
        module: Its own parameters (for LoRA, ``a`` and ``b``).
    """

    __slots__ = ("base", "name", "module")

    def __init__(self, base: Any, name: str, module: Any) -> None:
        self.base = base
        self.name = name
        self.module = module

    def __repr__(self) -> str:
        return f"Reparameterized({self.base!r}, {self.name!r}, {self.module!r})"


def is_leaf(value: object) -> bool:
    """A parameter value: a ``Param``, an ndarray (any rank), a quantized tensor, a torch tensor or another array type."""
    if isinstance(value, (Param, np.ndarray, Tensor, QuantizedTensor)) or is_torch_tensor(value):
        return True
    if isinstance(value, _PRIMITIVES) or value is None or isinstance(value, (Mapping, list, tuple)):
        return False
    return hasattr(value, "__array__") and not dataclasses.is_dataclass(value)


def _join(prefix: str, segment: str) -> str:
    return f"{prefix}.{segment}" if prefix else segment


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _dataclass_fields(value: Any) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(value) if f.metadata.get("burn") != "skip"]


def iter_params(tree: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every parameter of ``tree`` as ``(burn path, leaf)``, in traversal (= Burn's data) order.

    Args:
        tree: A module structure (see the table in this module's docstring).
        prefix: The path of ``tree`` itself.

    Returns:
        An iterator of ``(path, leaf)`` pairs.

    Raises:
        TypeError: A value cannot be mapped to Burn module paths.
    """
    if is_leaf(tree):
        yield prefix, tree
    elif tree is None or isinstance(tree, (_PRIMITIVES, Ignored)):
        return
    elif isinstance(tree, Variant):
        yield from iter_params(tree.value, _join(prefix, str(tree.name)))
    elif isinstance(tree, Reparameterized):
        yield from iter_params(tree.base, prefix)
        yield from iter_params(tree.module, _join(prefix, str(tree.name)))
    elif isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from iter_params(value, _join(prefix, str(key)))
    elif _is_namedtuple(tree):
        for key, value in zip(type(tree)._fields, tree):
            yield from iter_params(value, _join(prefix, key))
    elif isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            yield from iter_params(value, _join(prefix, str(index)))
    elif dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        for f in _dataclass_fields(tree):
            yield from iter_params(getattr(tree, f.name), _join(prefix, f.name))
    elif is_torch_module(tree):
        for key, value in tree.state_dict(keep_vars=True).items():
            yield _join(prefix, key), value
    else:
        where = prefix or "<root>"
        raise TypeError(f"{where}: cannot map a {type(tree).__name__} to Burn module paths")


def module_paths(tree: Any) -> dict[str, Any]:
    """``{burn path: leaf}`` for a module structure (see the table in this module's docstring).

    Args:
        tree: A module structure.

    Returns:
        The leaves by path, in data order.

    Raises:
        ValueError: Two parameters map to the same path.
        TypeError: A value cannot be mapped to Burn module paths.
    """
    out: dict[str, Any] = {}
    for path, leaf in iter_params(tree):
        if path in out:
            raise ValueError(f"two parameters map to the same Burn path {path!r}")
        out[path] = leaf
    return out


def map_params(tree: Any, fn: Callable[[str, Any], Any], prefix: str = "") -> Any:
    """A copy of ``tree`` with every parameter replaced by ``fn(path, leaf)`` (containers rebuilt).

    Args:
        tree: A module structure.
        fn: The replacement of each leaf, given its path.
        prefix: The path of ``tree`` itself.

    Returns:
        The rebuilt structure.

    Raises:
        TypeError: A value cannot be mapped to Burn module paths.
    """
    if is_leaf(tree):
        return fn(prefix, tree)
    if tree is None or isinstance(tree, (_PRIMITIVES, Ignored)):
        return tree
    if isinstance(tree, Variant):
        return Variant(tree.name, map_params(tree.value, fn, _join(prefix, str(tree.name))))
    if isinstance(tree, Reparameterized):
        return Reparameterized(
            map_params(tree.base, fn, prefix), tree.name, map_params(tree.module, fn, _join(prefix, str(tree.name)))
        )
    if isinstance(tree, Mapping):
        items = [(key, map_params(value, fn, _join(prefix, str(key)))) for key, value in tree.items()]
        rebuild: Any = type(tree)  # the same mapping type, when it can be built from pairs
        try:
            return rebuild(items)
        except TypeError:
            return dict(items)
    if _is_namedtuple(tree):
        return type(tree)(*(map_params(v, fn, _join(prefix, k)) for k, v in zip(type(tree)._fields, tree)))
    if isinstance(tree, (list, tuple)):
        return type(tree)(map_params(v, fn, _join(prefix, str(i))) for i, v in enumerate(tree))
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        changes = {f.name: map_params(getattr(tree, f.name), fn, _join(prefix, f.name)) for f in _dataclass_fields(tree) if f.init}
        return dataclasses.replace(tree, **changes)
    where = prefix or "<root>"
    raise TypeError(f"{where}: cannot map a {type(tree).__name__} to Burn module paths")

