"""Burn's module adapters (burn-store ``adapter.rs``) and where module types come from.

Burn decides what to do with a tensor from the *type of the module that owns it* (the last
``Struct:``/``Enum:`` entry of its container stack), which it knows because it walks a Burn
module. A file has no such stack, so ``ModuleTypes`` supplies it — from a
``torch.nn.Module`` (``named_modules``), a user type map (module path → type), name rules
(regex → type) or, when asked, inference from the tensors themselves.

Adapters, as in Burn:

* ``PyTorchToBurnAdapter`` — 2-D ``weight`` of a ``Linear`` transposed (``[out, in]`` →
  ``[in, out]``); ``weight``/``bias`` → ``gamma``/``beta`` for ``BatchNorm``, ``LayerNorm``,
  ``GroupNorm``, ``RmsNorm`` (not ``InstanceNorm``), as Burn's; beyond Burn's, every module whose
  layout PyTorch fuses or orders differently — LSTM, GRU, RNN, multi-head attention, transformer
  layers — becomes Burn's module, and Hugging Face's ``Conv1D`` is kept ``[in, out]``
  (``burnpack.interop.layouts``: one registry of module kinds). ``BurnToPyTorchAdapter``
  reverses it.
* ``HalfPrecisionAdapter`` — F32 → F16 and F16 → F32 for the module types Burn lists
  (``BatchNorm`` excluded: its ``running_var`` underflows in F16); ``with_module`` /
  ``without_module`` adjust the set.
* ``FloatCastAdapter`` — every float tensor to one dtype.
* ``ChainAdapter`` / ``a.chain(b)`` — ``b`` sees what ``a`` produced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..codec._generated.metadata import DTYPE_INFO, DType
from ..errors import InvalidPattern, OptionError
from ..core.frameworks import TorchModule
from ..core.patterns import Pattern, compile_pattern
from .layouts import Adapted, Ambiguity, Direction, ModuleKind, Resolved, TypeSpec, container_type, convert_layouts, infer, kind_of, parse_spec
from .layout_base import build_views
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

HALF_PRECISION_DEFAULT = frozenset(
    "Struct:" + name
    for name in (
        "Linear", "Embedding", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
        "ConvTranspose3d", "DeformConv2d", "LayerNorm", "GroupNorm", "InstanceNorm", "RmsNorm", "PRelu",
    )
)  # fmt: skip


def known_module_type(name: str, option: str = "module type") -> str:
    """``module_type``, refusing a short name that is neither a Burn module nor a torch class;
    settings (``TransformerEncoderLayer(norm_first=true)``) are checked and kept in the spelling.
    """
    return str(parse_spec(name, option))


def module_type(name: str) -> str:
    """A Burn container type from a short name: ``Linear`` → ``Struct:Linear``; torch class
    names map to Burn's (``BatchNorm2d`` → ``Struct:BatchNorm``, ``RMSNorm`` → ``Struct:RmsNorm``,
    ``LSTM`` → ``Struct:Lstm``); ``Struct:X`` / ``Enum:X`` are kept."""
    return container_type(name)


class ModuleTypes:
    """The Burn module type owning each tensor, from explicit maps, rules, a torch module or
    inference — with where each came from (``lookup``).

    Lookup for a tensor ``a.b.weight`` uses its module path ``a.b``: an exact ``types`` entry
    first, then the first matching ``rules`` regex (searched in the module path), then types
    taken from a torch module, then inferred ones. Both the tensor's current name and the name
    it had in the source are tried, so a type map written against either naming works. A type may
    carry settings the weights cannot tell: ``TransformerEncoderLayer(norm_first=true)``.

    Args:
        types: Module path → type.
        rules: ``(regex, type)`` pairs, tried in order.
        torch_types: Module path → type, taken from a torch module (see ``from_torch_module``).
        infer: Guess the types left from parameter names and shapes (see ``run_inference``).
        best_guess: Where names and shapes leave a module's type open (``ambiguous``), take the
            best guess instead of refusing; the report names every guess.

    Raises:
        OptionError: A type rule's regex is not one Burn's regex syntax accepts.
    """

    def __init__(
        self,
        types: Mapping[str, str] | None = None,
        rules: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
        *,
        torch_types: Mapping[str, str] | None = None,
        infer: bool = False,
        best_guess: bool = False,
    ) -> None:
        self.specs = {path: parse_spec(t) for path, t in (types or {}).items()}
        self.types = {path: spec.container for path, spec in self.specs.items()}
        if isinstance(rules, Mapping):
            rules = rules.items()
        self.rules: list[tuple[Pattern, TypeSpec]] = []
        for pattern, t in rules or ():
            spec = parse_spec(t, "module type in rule")
            try:
                self.rules.append((compile_pattern(pattern), spec))
            except InvalidPattern as exc:
                raise OptionError(f"type_rules={pattern!r}: {exc.reason}") from None
        self.torch_specs = {path: parse_spec(t, known_only=False) for path, t in (torch_types or {}).items()}
        self.torch_types = {path: spec.container for path, spec in self.torch_specs.items()}
        self.infer = infer
        self.best_guess = best_guess
        self.inferred: dict[str, str] = {}
        self.inferred_why: dict[str, str] = {}
        self.ambiguous: dict[str, Ambiguity] = {}
        self.guessed: dict[str, str] = {}  # path → the best guess taken, and why
        self._used_types: dict[str, int] = {}  # path → lookups it answered
        self._used_rules: dict[int, int] = {}

    @classmethod
    def from_torch_module(cls, module: TorchModule, prefix: str = "") -> dict[str, str]:
        """The Burn type of every submodule of a ``torch.nn.Module``; a kind's settings the weights
        cannot tell (``batch_first``, ``norm_first``...) ride in the spelling.

        Args:
            module: The torch module.
            prefix: The module's own path.

        Returns:
            ``{module path: Burn type}``.
        """
        out = {}
        for path, sub in module.named_modules():
            full = f"{prefix}.{path}" if prefix and path else (prefix or path)
            container = module_type(type(sub).__name__)
            kind = kind_of(container)
            settings = tuple(kind.settings_of(sub).items()) if kind is not None else ()
            out[full] = str(TypeSpec(container, settings))
        return out

    def is_empty(self) -> bool:
        """Whether no source of types is given.

        Returns:
            True when empty.
        """
        return not (self.types or self.rules or self.torch_types or self.infer)

    def resolve(self, entry: Entry) -> str | None:
        """The type of the module owning ``entry`` (by its current and its source name).

        Args:
            entry: The tensor entry.

        Returns:
            The type, or None when unknown.
        """
        return self.resolve_path(entry.module_path, entry.source_name.rpartition(".")[0])

    def resolve_path(self, module_path: str, original: str | None = None) -> str | None:
        """The type of the module at ``module_path`` (or, failing that, at ``original``).

        Args:
            module_path: The module's current path.
            original: Its path in the source.

        Returns:
            The type, or None when unknown.
        """
        found = self.lookup(module_path, original)
        return None if found is None else found.spec.container

    def lookup(self, module_path: str, original: str | None = None, *, count: bool = True) -> Resolved | None:
        """The type of the module at ``module_path`` (or at ``original``) with its settings and where it
        came from.

        Args:
            module_path: The module's current path.
            original: Its path in the source.
            count: Count the answer as a use of the map entry or rule that gave it (``given``: what
                each option typed).

        Returns:
            The resolved type, or None when unknown.
        """
        paths = [module_path]
        if original is not None and original != module_path:
            paths.append(original)
        for path in paths:
            if path in self.specs:
                self._used_types[path] = self._used_types.get(path, 0) + count
                return Resolved(self.specs[path], "module_types")
        for path in paths:
            for i, (regex, spec) in enumerate(self.rules):
                if regex.search(path):
                    self._used_rules[i] = self._used_rules.get(i, 0) + count
                    return Resolved(spec, "type_rules")
        for path in paths:
            if path in self.torch_specs:
                return Resolved(self.torch_specs[path], "live module")
        for path in paths:
            if path in self.inferred:
                return Resolved(TypeSpec(self.inferred[path]), f"inferred: {self.inferred_why[path]}")
        if self.best_guess:
            for path in paths:
                if path in self.ambiguous:
                    a = self.ambiguous[path]
                    why = f"{a.guess.name} of {' or '.join(a.candidates)}: {a.guess_why}"
                    self.guessed[path] = why
                    return Resolved(TypeSpec(a.guess.container), f"best guess: {why}")
        return None

    def given(self) -> list[tuple[str, str, int]]:
        """The user's own type sources (torch modules are not the user's; inference counts the module
        types it found).

        Returns:
            ``(option, "KEY=TYPE" or "", lookups answered)`` per source.
        """
        out = [("module_types", f"{p}={str(t).removeprefix('Struct:')}", self._used_types.get(p, 0)) for p, t in self.specs.items()]
        out += [("type_rules", f"{r.pattern}={str(t).removeprefix('Struct:')}", self._used_rules.get(i, 0)) for i, (r, t) in enumerate(self.rules)]
        return out + ([("infer_types", "", len(self.inferred))] if self.infer else [])

    def run_inference(self, entries: Sequence[Entry], side: str = "torch") -> None:
        """Types from names and shapes (only when ``infer=True``), for the modules no map, rule or torch
        module types, as each kind recognises itself (``burnpack.interop.layouts``).

        Where several kinds fit (a square weight with bias: torch's Linear or Hugging Face's Conv1D;
        a 2-D weight without bias: Linear or Embedding; a lone 1-D weight: a norm or PReLU) the module
        is listed in ``ambiguous`` with the candidates and the best guess; give those a type
        explicitly, or ``best_guess=True``.

        Args:
            entries: Every tensor entry of the conversion.
            side: The layout the tensors are in: ``"torch"`` or ``"burn"``.
        """
        if not self.infer:
            return

        def given(path: str) -> ModuleKind | None:
            found = None if path in self.inferred else self.lookup(path, count=False)
            return None if found is None else found.kind or _OPAQUE

        found, ambiguous = infer(build_views(entries), side, given)
        for path, recognition in found.items():
            self.inferred[path] = recognition.kind.container
            self.inferred_why[path] = recognition.why
        self.ambiguous.update(ambiguous)


class _Opaque(ModuleKind):
    """A module typed as something the layouts do not know (a user's ``Struct:Block``): not
    inferred over, but its children still are."""

    name = "Opaque"


_OPAQUE = _Opaque()


# --------------------------------------------------------------------------------------------
# Adapters
# --------------------------------------------------------------------------------------------
class ModuleAdapter:
    """Transforms one entry given its ``module_type`` (Burn's ``ModuleAdapter``)."""

    name = "identity"
    uses_module_types = False  # whether adapt() depends on the entry's module type
    direction: Direction | None = None  # a layout adapter's: its input is torch's layout (TO_BURN) or Burn's

    def adapt(self, entry: Entry) -> Entry:
        """The entry as this adapter changes it (Burn's ``ModuleAdapter::adapt``).

        Args:
            entry: The tensor entry, with its module type when known.

        Returns:
            The adapted entry (the same one when unchanged).
        """
        return entry

    def adapt_all(self, entries: Sequence[Entry], types: ModuleTypes) -> Adapted:
        """Every entry of a conversion, knowing every module's type: by default each alone (``adapt``).

        Args:
            entries: Every tensor entry of the conversion.
            types: The module types.

        Returns:
            The adapted entries, each converted module's type, source and Burn config, the guesses
            taken and the warnings.
        """
        return Adapted([self.adapt(e) for e in entries])

    def parts(self) -> list[ModuleAdapter]:
        """The adapters a chain applies, in order (one for a plain adapter).

        Returns:
            The adapters.
        """
        return [self]

    def alternative_name(self, param: str, module_type: str | None) -> str | None:
        """Another parameter name to look for when loading (Burn's ``get_alternative_param_name``).

        Args:
            param: The parameter's name.
            module_type: The owning module's Burn type, if known.

        Returns:
            The other name, or None.
        """
        return None

    def chain(self, next_adapter: ModuleAdapter) -> ChainAdapter:
        """This adapter, then ``next_adapter`` (Burn's ``chain``).

        Args:
            next_adapter: The adapter applied after this one.

        Returns:
            The chain.
        """
        return ChainAdapter(self, next_adapter)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class IdentityAdapter(ModuleAdapter):
    """Changes nothing."""


class ChainAdapter(ModuleAdapter):
    """Two adapters applied in turn: ``first`` then ``second``.

    Args:
        first: The adapter applied first.
        second: The adapter applied to its result.
    """

    def __init__(self, first: ModuleAdapter, second: ModuleAdapter) -> None:
        self.first = first
        self.second = second
        self.name = f"{first.name}+{second.name}"
        self.uses_module_types = first.uses_module_types or second.uses_module_types

    def adapt(self, entry: Entry) -> Entry:
        """``second``'s adaptation of ``first``'s.

        Args:
            entry: The tensor entry.

        Returns:
            The adapted entry.
        """
        return self.second.adapt(self.first.adapt(entry))

    def parts(self) -> list[ModuleAdapter]:
        """The adapters this chain applies, in order (nested chains flattened).

        Returns:
            The adapters.
        """
        return [*self.first.parts(), *self.second.parts()]

    def adapt_all(self, entries: Sequence[Entry], types: ModuleTypes) -> Adapted:
        """``second``'s adaptation of ``first``'s, over the whole conversion.

        Args:
            entries: Every tensor entry of the conversion.
            types: The module types.

        Returns:
            The adapted entries, with both adapters' modules, guesses and warnings.
        """
        first = self.first.adapt_all(entries, types)
        second = self.second.adapt_all(first.entries, types)
        return Adapted(second.entries, {**first.modules, **second.modules}, first.guesses + second.guesses, first.warnings + second.warnings)

    def alternative_name(self, param: str, module_type: str | None) -> str | None:
        """The first alternative name either adapter gives.

        Args:
            param: The parameter's name.
            module_type: The owning module's Burn type, if known.

        Returns:
            The other name, or None.
        """
        name = self.first.alternative_name(param, module_type)
        if name is not None:
            return self.second.alternative_name(name, module_type) or name
        return self.second.alternative_name(param, module_type)

    def __repr__(self) -> str:
        return f"{self.first!r}.chain({self.second!r})"


class _PyTorchAdapter(ModuleAdapter):
    """The layouts' conversion in one direction: each tensor by its module's kind
    (``burnpack.interop.layouts``); over a whole conversion, structural modules (LSTM, attention,
    transformer layers) take their subtrees (``adapt_all``)."""

    direction: Direction
    uses_module_types = True

    def adapt(self, entry: Entry) -> Entry:
        kind = kind_of(entry.module_type)
        return entry if kind is None else kind.convert_entry(entry, self.direction)

    def adapt_all(self, entries: Sequence[Entry], types: ModuleTypes) -> Adapted:
        return convert_layouts(entries, types, self.direction)

    def alternative_name(self, param: str, module_type: str | None) -> str | None:
        kind = kind_of(module_type)
        return None if kind is None else kind.alternative_name(param, self.direction)


class PyTorchToBurnAdapter(_PyTorchAdapter):
    """PyTorch layout → Burn's: Linear weights transposed, norm ``weight``/``bias`` →
    ``gamma``/``beta`` (BatchNorm, LayerNorm, GroupNorm, RmsNorm), Hugging Face ``Conv1D`` kept;
    over a conversion, LSTM / GRU / RNN, multi-head attention and transformer layers split and
    renamed into Burn's modules."""

    name = "pytorch"
    direction = Direction.TO_BURN


class BurnToPyTorchAdapter(_PyTorchAdapter):
    """Burn's layout → PyTorch's: the reverse of ``PyTorchToBurnAdapter``."""

    name = "to-pytorch"
    direction = Direction.TO_TORCH


def _cast(entry: Entry, target: DType) -> Entry:
    load = entry.numpy
    source = entry.dtype

    def cast() -> np.ndarray:
        return cast_array(load(), target)

    return entry.replace(dtype=target, load=cast, step=f"{dtype_name(source)} -> {dtype_name(target)}")


class HalfPrecisionAdapter(ModuleAdapter):
    """F32 ↔ F16 for the module types in ``modules``; tensors of other or unknown modules pass unchanged.

    Args:
        modules: The module types converted; Burn's default set when None (Linear, Embedding,
            Conv1d/2d/3d, ConvTranspose1d/2d/3d, DeformConv2d, LayerNorm, GroupNorm,
            InstanceNorm, RmsNorm, PRelu — not BatchNorm).
    """

    name = "half"
    uses_module_types = True

    def __init__(self, modules: Iterable[str] | None = None) -> None:
        self.modules = set(HALF_PRECISION_DEFAULT if modules is None else (module_type(m) for m in modules))

    def with_module(self, name: str) -> HalfPrecisionAdapter:
        """An adapter that also converts the module type ``name``.

        Args:
            name: A Burn or torch module type name.

        Returns:
            The new adapter.
        """
        return HalfPrecisionAdapter(self.modules | {module_type(name)})

    def without_module(self, name: str) -> HalfPrecisionAdapter:
        """An adapter that no longer converts the module type ``name``.

        Args:
            name: A Burn or torch module type name.

        Returns:
            The new adapter.

        Raises:
            ValueError: ``name`` is not in the module set.
        """
        key = module_type(name)
        if key not in self.modules:
            raise ValueError(f"without_module called with {key!r} which is not in the module set")
        return HalfPrecisionAdapter(self.modules - {key})

    def adapt(self, entry: Entry) -> Entry:
        """The entry as F16 (from F32) or F32 (from F16) when its module type is in the set.

        Args:
            entry: The tensor entry.

        Returns:
            The adapted entry (the same one when unchanged).
        """
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
    """Every float tensor (F64, F32, Flex32, F16, BF16) to ``target``; others unchanged.

    Args:
        target: The float dtype, as a ``DType`` or by name (``f16``, ``bf16``, ``f32``, ``f64``).
    """

    def __init__(self, target: DType | str) -> None:
        target = parse_dtype(target)
        if not is_float(target):
            raise OptionError(f"cast target must be a float dtype (F64, F32, Flex32, F16 or BF16), got {dtype_name(target)}")
        self.target = target
        self.name = f"cast={dtype_name(target)}"

    def adapt(self, entry: Entry) -> Entry:
        """The entry cast to ``target`` when it is a float tensor.

        Args:
            entry: The tensor entry.

        Returns:
            The adapted entry (the same one when unchanged).
        """
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
    """An adapter from its CLI spelling, chained left to right.

    Args:
        spec: ``pytorch``, ``to-pytorch``, ``half``, ``cast=bf16`` (or ``f16``, ``bf16``, ``f32``,
            ``f64`` alone), ``identity``; several separated by ``,`` or ``+``, or given as a list;
            an adapter passes through.

    Returns:
        The adapter, or None for no spec.

    Raises:
        OptionError: A name is unknown.
    """
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
