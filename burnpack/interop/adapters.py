"""Burn's module adapters (burn-store ``adapter.rs``) and where module types come from.

Burn decides what to do with a tensor from the *type of the module that owns it* (the last
``Struct:``/``Enum:`` entry of its container stack), which it knows because it walks a Burn
module. A file has no such stack, so :class:`ModuleTypes` supplies it — from a
``torch.nn.Module`` (``named_modules``), a user type map (module path → type), name rules
(regex → type) or, when asked, inference from the tensors themselves.

Adapters, as in Burn:

* :class:`PyTorchToBurnAdapter` — 2-D ``weight`` of a ``Linear`` transposed (``[out, in]`` →
  ``[in, out]``); ``weight``/``bias`` → ``gamma``/``beta`` for ``BatchNorm``, ``LayerNorm``,
  ``GroupNorm``, ``RmsNorm`` (not ``InstanceNorm``). :class:`BurnToPyTorchAdapter` reverses it.
* :class:`HalfPrecisionAdapter` — F32 → F16 and F16 → F32 for the module types Burn lists
  (``BatchNorm`` excluded: its ``running_var`` underflows in F16); ``with_module`` /
  ``without_module`` adjust the set.
* :class:`FloatCastAdapter` — every float tensor to one dtype.
* :class:`ChainAdapter` / ``a.chain(b)`` — ``b`` sees what ``a`` produced.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..codec._generated.metadata import DTYPE_INFO, DType
from ..errors import InvalidPattern, OptionError, UnknownModuleType
from ..core.frameworks import TorchModule
from ..core.patterns import Pattern, compile_pattern
from .tensors import Entry, cast_array, dtype_name, is_float, parse_dtype

__all__ = [
    "BurnToPyTorchAdapter",
    "ChainAdapter",
    "FloatCastAdapter",
    "HalfPrecisionAdapter",
    "IdentityAdapter",
    "ModuleAdapter",
    "ModuleTypes",
    "PyTorchToBurnAdapter",
    "known_module_type",
    "module_type",
    "parse_adapter",
]

LINEAR = "Struct:Linear"
BATCH_NORM = "Struct:BatchNorm"
NORMS_RENAMED = frozenset({"Struct:BatchNorm", "Struct:LayerNorm", "Struct:GroupNorm", "Struct:RmsNorm"})
HALF_PRECISION_DEFAULT = frozenset(
    "Struct:" + name
    for name in (
        "Linear", "Embedding", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "DeformConv2d", "LayerNorm", "GroupNorm", "InstanceNorm", "RmsNorm", "PRelu",
    )
)  # fmt: skip

# torch.nn class name → Burn module; anything else keeps its class name ("Struct:ConvBlock").
_TORCH_CLASSES = {
    "Linear": "Linear", "LazyLinear": "Linear", "NonDynamicallyQuantizableLinear": "Linear",
    "Conv1d": "Conv1d", "Conv2d": "Conv2d", "Conv3d": "Conv3d",
    "LazyConv1d": "Conv1d", "LazyConv2d": "Conv2d", "LazyConv3d": "Conv3d",
    "ConvTranspose1d": "ConvTranspose1d", "ConvTranspose2d": "ConvTranspose2d", "ConvTranspose3d": "ConvTranspose3d",
    "Embedding": "Embedding",
    "BatchNorm1d": "BatchNorm", "BatchNorm2d": "BatchNorm", "BatchNorm3d": "BatchNorm", "SyncBatchNorm": "BatchNorm",
    "LazyBatchNorm1d": "BatchNorm", "LazyBatchNorm2d": "BatchNorm", "LazyBatchNorm3d": "BatchNorm",
    "LayerNorm": "LayerNorm", "GroupNorm": "GroupNorm", "RMSNorm": "RmsNorm",
    "InstanceNorm1d": "InstanceNorm", "InstanceNorm2d": "InstanceNorm", "InstanceNorm3d": "InstanceNorm",
    "PReLU": "PRelu", "DeformConv2d": "DeformConv2d",
}  # fmt: skip


BURN_MODULE_TYPES = frozenset(_TORCH_CLASSES.values())
"""Burn's module types that adapters act on, by their short names."""


def known_module_type(name: str, option: str = "module type") -> str:
    """:func:`module_type`, refusing a short name that is neither a Burn module nor a torch class."""
    text = str(name).strip()
    if ":" in text:
        return text
    if text.rpartition(".")[2] not in _TORCH_CLASSES and text not in BURN_MODULE_TYPES:
        known = sorted(BURN_MODULE_TYPES)
        by_lower = {k.lower(): k for k in [*_TORCH_CLASSES, *known]}
        close = difflib.get_close_matches(text.lower(), list(by_lower), n=1, cutoff=0.6)
        raise UnknownModuleType(text, option, known, by_lower[close[0]] if close else None)
    return module_type(text)


def module_type(name: str) -> str:
    """A Burn container type from a short name: ``Linear`` → ``Struct:Linear``; torch class
    names map to Burn's (``BatchNorm2d`` → ``Struct:BatchNorm``, ``RMSNorm`` → ``Struct:RmsNorm``);
    ``Struct:X`` / ``Enum:X`` are kept."""
    name = str(name).strip()
    if ":" in name:
        return name
    name = name.rpartition(".")[2]  # "nn.Linear", "torch.nn.Linear"
    return "Struct:" + _TORCH_CLASSES.get(name, name)


class ModuleTypes:
    """The Burn module type owning each tensor, from explicit maps, rules, a torch module or
    inference.

    Lookup for a tensor ``a.b.weight`` uses its module path ``a.b``: an exact ``types`` entry
    first, then the first matching ``rules`` regex (searched in the module path), then types
    taken from a torch module, then inferred ones. Both the tensor's current name and the name
    it had in the source are tried, so a type map written against either naming works.
    """

    def __init__(
        self,
        types: Mapping[str, str] | None = None,
        rules: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
        *,
        torch_types: Mapping[str, str] | None = None,
        infer: bool = False,
    ) -> None:
        self.types = {path: known_module_type(t) for path, t in (types or {}).items()}
        if isinstance(rules, Mapping):
            rules = rules.items()
        self.rules: list[tuple[Pattern, str]] = []
        for pattern, t in rules or ():
            kind = known_module_type(t, "module type in rule")
            try:
                self.rules.append((compile_pattern(pattern), kind))
            except InvalidPattern as exc:
                raise OptionError(f"type_rules={pattern!r}: {exc.reason}") from None
        self.torch_types = dict(torch_types or {})
        self.infer = infer
        self.inferred: dict[str, str] = {}
        self.ambiguous: dict[str, str] = {}
        self._used_types: dict[str, int] = {}  # path → lookups it answered
        self._used_rules: dict[int, int] = {}

    @classmethod
    def from_torch_module(cls, module: TorchModule, prefix: str = "") -> dict[str, str]:
        """``{module path: Burn type}`` for every submodule of a ``torch.nn.Module``."""
        out = {}
        for path, sub in module.named_modules():
            full = f"{prefix}.{path}" if prefix and path else (prefix or path)
            out[full] = module_type(type(sub).__name__)
        return out

    def is_empty(self) -> bool:
        return not (self.types or self.rules or self.torch_types or self.infer)

    def resolve(self, entry: Entry) -> str | None:
        """The type of the module owning ``entry`` (by its current and its source name)."""
        return self.resolve_path(entry.module_path, entry.source_name.rpartition(".")[0])

    def resolve_path(self, module_path: str, original: str | None = None) -> str | None:
        """The type of the module at ``module_path`` (or, failing that, at ``original``)."""
        paths = [module_path]
        if original is not None and original != module_path:
            paths.append(original)
        for path in paths:
            if path in self.types:
                self._used_types[path] = self._used_types.get(path, 0) + 1
                return self.types[path]
        for path in paths:
            for i, (regex, t) in enumerate(self.rules):
                if regex.search(path):
                    self._used_rules[i] = self._used_rules.get(i, 0) + 1
                    return t
        for table in (self.torch_types, self.inferred):
            for path in paths:
                if path in table:
                    return table[path]
        return None

    def given(self) -> list[tuple[str, str, int]]:
        """The user's own type sources as ``(option, "KEY=TYPE" or "", lookups answered)`` (torch
        modules are not the user's; inference counts the module types it found)."""
        out = [("module_types", f"{p}={t.removeprefix('Struct:')}", self._used_types.get(p, 0)) for p, t in self.types.items()]
        out += [("type_rules", f"{r.pattern}={t.removeprefix('Struct:')}", self._used_rules.get(i, 0)) for i, (r, t) in enumerate(self.rules)]
        return out + ([("infer_types", "", len(self.inferred))] if self.infer else [])

    def run_inference(self, entries: Sequence[Entry]) -> None:
        """Guess types from parameter names and shapes (only when ``infer=True``).

        * ``running_mean`` + ``running_var`` → BatchNorm;
        * ``gamma`` (Burn naming) → a norm, taken as LayerNorm (BatchNorm when running stats);
        * 1-D ``weight`` + 1-D ``bias`` of the same length → LayerNorm;
        * 2-D ``weight`` + 1-D ``bias`` whose length is one of its dims → Linear;
        * ``weight`` of rank 3, 4, 5 → Conv1d, Conv2d, Conv3d (transposed convs look the same;
          no adapter treats them differently).

        A lone 2-D ``weight`` (Linear without bias, or Embedding?) and a lone 1-D ``weight``
        (RmsNorm, LayerNorm without bias, or PReLU?) stay unknown and are listed in
        ``ambiguous``; give those a type explicitly.
        """
        if not self.infer:
            return
        groups: dict[str, dict[str, Entry]] = {}
        for entry in entries:
            groups.setdefault(entry.module_path, {})[entry.param] = entry
        for path, params in groups.items():
            guess, why = _guess(params)
            if guess is not None:
                self.inferred[path] = guess
            elif why:
                self.ambiguous[path] = why


def _guess(params: Mapping[str, Entry]) -> tuple[str | None, str | None]:
    names = set(params)
    if {"running_mean", "running_var"} <= names:
        return BATCH_NORM, None
    if "gamma" in names:
        return "Struct:LayerNorm", None
    weight, bias = params.get("weight"), params.get("bias")
    if weight is None:
        return None, None
    if weight.rank == 1:
        if bias is not None and bias.shape == weight.shape:
            return "Struct:LayerNorm", None
        return None, "a lone 1-D weight: RmsNorm, LayerNorm without bias or PReLU"
    if weight.rank == 2:
        if bias is not None and bias.rank == 1 and bias.shape[0] in weight.shape:
            return LINEAR, None
        return None, "a 2-D weight without bias: Linear without bias or Embedding"
    if weight.rank in (3, 4, 5):
        return f"Struct:Conv{weight.rank - 2}d", None
    return None, None


# --------------------------------------------------------------------------------------------
# Adapters
# --------------------------------------------------------------------------------------------
class ModuleAdapter:
    """Transforms one entry given its ``module_type`` (Burn's ``ModuleAdapter``)."""

    name = "identity"
    uses_module_types = False  # whether adapt() depends on the entry's module type

    def adapt(self, entry: Entry) -> Entry:
        return entry

    def parts(self) -> list[ModuleAdapter]:
        """The adapters a chain applies, in order (one for a plain adapter)."""
        return [self]

    def alternative_name(self, param: str, module_type: str | None) -> str | None:
        """Another parameter name to look for when loading (Burn's ``get_alternative_param_name``)."""
        return None

    def chain(self, next_adapter: ModuleAdapter) -> ChainAdapter:
        return ChainAdapter(self, next_adapter)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class IdentityAdapter(ModuleAdapter):
    """Changes nothing."""


class ChainAdapter(ModuleAdapter):
    """``first`` then ``second``."""

    def __init__(self, first: ModuleAdapter, second: ModuleAdapter) -> None:
        self.first = first
        self.second = second
        self.name = f"{first.name}+{second.name}"
        self.uses_module_types = first.uses_module_types or second.uses_module_types

    def adapt(self, entry: Entry) -> Entry:
        return self.second.adapt(self.first.adapt(entry))

    def parts(self) -> list[ModuleAdapter]:
        return [*self.first.parts(), *self.second.parts()]

    def alternative_name(self, param: str, module_type: str | None) -> str | None:
        name = self.first.alternative_name(param, module_type)
        if name is not None:
            return self.second.alternative_name(name, module_type) or name
        return self.second.alternative_name(param, module_type)

    def __repr__(self) -> str:
        return f"{self.first!r}.chain({self.second!r})"


def _transpose(entry: Entry) -> Entry:
    load = entry.numpy

    def transposed() -> np.ndarray:
        return np.ascontiguousarray(load().T)

    return entry.replace(shape=entry.shape[::-1], load=transposed, step=f"transposed {list(entry.shape)} -> {list(entry.shape[::-1])}")


def _rename_param(entry: Entry, new: str) -> Entry:
    head, dot, old = entry.name.rpartition(".")
    return entry.replace(name=f"{head}{dot}{new}", step=f"renamed {old} -> {new}")


class _PyTorchAdapter(ModuleAdapter):
    _renames: dict[str, str] = {}
    uses_module_types = True

    def adapt(self, entry: Entry) -> Entry:
        mt = entry.module_type
        if mt is None:
            return entry
        if mt == LINEAR and entry.param == "weight" and entry.rank == 2:
            return _transpose(entry)
        if mt in NORMS_RENAMED and entry.param in self._renames:
            return _rename_param(entry, self._renames[entry.param])
        return entry

    def alternative_name(self, param: str, module_type: str | None) -> str | None:
        if module_type in NORMS_RENAMED:
            reverse = {v: k for k, v in self._renames.items()}
            return reverse.get(param)
        return None


class PyTorchToBurnAdapter(_PyTorchAdapter):
    """PyTorch layout → Burn's: Linear weights transposed, norm ``weight``/``bias`` →
    ``gamma``/``beta`` (BatchNorm, LayerNorm, GroupNorm, RmsNorm)."""

    name = "pytorch"
    _renames = {"weight": "gamma", "bias": "beta"}


class BurnToPyTorchAdapter(_PyTorchAdapter):
    """Burn's layout → PyTorch's: the reverse of :class:`PyTorchToBurnAdapter`."""

    name = "to-pytorch"
    _renames = {"gamma": "weight", "beta": "bias"}


def _cast(entry: Entry, target: DType) -> Entry:
    load = entry.numpy
    source = entry.dtype

    def cast() -> np.ndarray:
        return cast_array(load(), target)

    return entry.replace(dtype=target, load=cast, step=f"{dtype_name(source)} -> {dtype_name(target)}")


class HalfPrecisionAdapter(ModuleAdapter):
    """F32 ↔ F16 for the module types in ``modules`` (Burn's default set: Linear, Embedding,
    Conv1d/2d/3d, ConvTranspose1d/2d/3d, DeformConv2d, LayerNorm, GroupNorm, InstanceNorm,
    RmsNorm, PRelu — not BatchNorm). Tensors of other or unknown modules pass unchanged."""

    name = "half"
    uses_module_types = True

    def __init__(self, modules: Iterable[str] | None = None) -> None:
        self.modules = set(HALF_PRECISION_DEFAULT if modules is None else (module_type(m) for m in modules))

    def with_module(self, name: str) -> HalfPrecisionAdapter:
        return HalfPrecisionAdapter(self.modules | {module_type(name)})

    def without_module(self, name: str) -> HalfPrecisionAdapter:
        key = module_type(name)
        if key not in self.modules:
            raise ValueError(f"without_module called with {key!r} which is not in the module set")
        return HalfPrecisionAdapter(self.modules - {key})

    def adapt(self, entry: Entry) -> Entry:
        if entry.dtype == DType.F32:
            target = DType.F16
        elif entry.dtype == DType.F16:
            target = DType.F32
        else:
            return entry
        if entry.module_type not in self.modules:
            return entry
        return _cast(entry, target)

    def __repr__(self) -> str:
        extra = self.modules ^ HALF_PRECISION_DEFAULT
        return "HalfPrecisionAdapter()" if not extra else f"HalfPrecisionAdapter({sorted(self.modules)})"


class FloatCastAdapter(ModuleAdapter):
    """Every float tensor (F64, F32, Flex32, F16, BF16) to ``target``; others unchanged."""

    def __init__(self, target: DType | str) -> None:
        target = parse_dtype(target)
        if not is_float(target):
            raise OptionError(f"cast target must be a float dtype (F64, F32, Flex32, F16 or BF16), got {dtype_name(target)}")
        self.target = target
        self.name = f"cast={dtype_name(target)}"

    def adapt(self, entry: Entry) -> Entry:
        if not is_float(entry.dtype) or entry.dtype == self.target:
            return entry
        return _cast(entry, self.target)

    def __repr__(self) -> str:
        return f"FloatCastAdapter({dtype_name(self.target)})"


_ADAPTERS = {
    "identity": IdentityAdapter,
    "none": IdentityAdapter,
    "pytorch": PyTorchToBurnAdapter,
    "from-pytorch": PyTorchToBurnAdapter,
    "pytorch-to-burn": PyTorchToBurnAdapter,
    "to-pytorch": BurnToPyTorchAdapter,
    "burn-to-pytorch": BurnToPyTorchAdapter,
    "half": HalfPrecisionAdapter,
}
_FLOAT_NAMES = frozenset(
    name for variant, info in DTYPE_INFO.items() if info.kind == "float" for name in (variant.lower(), info.torch) if name
)
"""Float dtypes' Burn and torch names, which alone mean ``cast=NAME``."""


def parse_adapter(spec: str | ModuleAdapter | Iterable[str | ModuleAdapter] | None) -> ModuleAdapter | None:
    """An adapter from its CLI spelling, chained left to right: ``pytorch``, ``to-pytorch``,
    ``half``, ``cast=bf16`` (or ``f16``, ``bf16``, ``f32``, ``f64`` alone), ``identity``; several
    separated by ``,`` or ``+``, or given as a list."""
    if spec is None or isinstance(spec, ModuleAdapter):
        return spec
    items: list[str | ModuleAdapter] = []
    if isinstance(spec, str):
        items = [s for s in re.split(r"[,+]", spec) if s.strip()]
    else:
        for item in spec:
            if isinstance(item, str):
                items.extend(s for s in re.split(r"[,+]", item) if s.strip())
            else:
                items.append(item)
    adapters: list[ModuleAdapter] = []
    for item in items:
        if isinstance(item, ModuleAdapter):
            adapters.append(item)
            continue
        key = item.strip().lower()
        if key in _ADAPTERS:
            adapters.append(_ADAPTERS[key]())
        elif key.startswith(("cast=", "cast:", "float=", "float:")):
            adapters.append(FloatCastAdapter(key.split("=" if "=" in key else ":", 1)[1]))
        elif key in _FLOAT_NAMES:
            adapters.append(FloatCastAdapter(key))
        else:
            raise OptionError(f"unknown adapter {item!r}; expected pytorch, to-pytorch, half, cast=DTYPE or identity")
    if not adapters:
        return None
    result = adapters[0]
    for adapter in adapters[1:]:
        result = result.chain(adapter)
    return result
