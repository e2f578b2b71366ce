"""Module layouts: every module type that PyTorch and Burn lay out differently, as one registry.

Each :class:`~burnpack.interop.layout_base.ModuleKind` carries its behaviour — the torch classes
it is, how names and shapes reveal it, its tensors' way to Burn's layout and back, the Burn config
that rebuilds it and what it refuses — so callers look a kind up (:func:`kind_of`) and never
branch on a type's name:

* leaf kinds (``layout_leaf``): ``Linear``, Hugging Face's ``Conv1D``, the norms, ``Embedding``,
  the convolutions, ``PRelu``;
* structural kinds: ``Lstm`` / ``Gru`` / ``Rnn`` (``layout_recurrent``), ``MultiHeadAttention``
  (``layout_attention``), the transformer layers and their stacks (``layout_transformer``);
* what they share — the kind protocol, type spellings, the deferred split / merge / transpose
  steps — in ``layout_base``.

:func:`infer` tells kinds from names and shapes (exactly, or listing the candidates it cannot
tell apart with a best guess); :func:`convert_layouts` applies them to a conversion's entries,
one subtree per structural module, lazily, and reports the Burn config of each module.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import UnknownModuleType
from .tensors import Entry
from .layout_attention import ATTENTION_KINDS
from .layout_base import (Direction, Group, ModuleKind, Recognition, Refusals, Rule, Setting, TypeSpec, View, build_views,
                          parse_type, split_rule)  # fmt: skip
from .layout_leaf import LEAF_KINDS
from .layout_recurrent import RECURRENT_KINDS
from .layout_transformer import TRANSFORMER_KINDS

__all__ = [
    "Adapted", "Ambiguity", "Direction", "KINDS", "ModuleKind", "Resolved", "Rule", "TypeSpec",
    "container_type", "convert_layouts", "infer", "kind_of", "parse_spec", "split_rule",
]  # fmt: skip

KINDS: tuple[ModuleKind, ...] = (*RECURRENT_KINDS, *ATTENTION_KINDS, *TRANSFORMER_KINDS, *LEAF_KINDS)
"""Every kind, in the order inference asks them (the specific, structural ones first)."""
STRUCTURAL_KINDS: tuple[ModuleKind, ...] = tuple(k for k in KINDS if k.structural)

_BY_CONTAINER: dict[str, ModuleKind] = {}
_BY_TORCH: dict[str, ModuleKind] = {}
for _kind in KINDS:
    for _name in (_kind.name, *_kind.burn_names):
        _BY_CONTAINER["Struct:" + _name] = _kind
    _BY_CONTAINER[_kind.container] = _kind
    for _name in _kind.torch_classes:
        _BY_TORCH[_name] = _kind

KNOWN_NAMES: tuple[str, ...] = tuple(sorted({n for k in KINDS for n in (k.name, *k.burn_names)}))
"""The Burn (and Hugging Face) module types the layouts know, by their short names."""


def kind_of(container: str | None) -> ModuleKind | None:
    """The kind of a container type (``Struct:Linear``, ``Struct:BiLstm``), or None."""
    return None if container is None else _BY_CONTAINER.get(container)


def container_type(name: str) -> str:
    """A Burn container type from a short name: ``Linear`` → ``Struct:Linear``; torch class names
    map to their kind's (``BatchNorm2d`` → ``Struct:BatchNorm``, ``LSTM`` → ``Struct:Lstm``);
    ``Struct:X`` / ``Enum:X`` and unknown names (``Struct:ConvBlock``) are kept."""
    name = str(name).strip()
    if ":" in name:
        return name
    name = name.rpartition(".")[2]  # "nn.Linear", "torch.nn.Linear"
    kind = _BY_TORCH.get(name)
    return kind.container if kind is not None else "Struct:" + name


def parse_spec(text: str, option: str = "module type", *, known_only: bool = True) -> TypeSpec:
    """A type spelling (``LSTM``, ``TransformerEncoderLayer(norm_first=true)``, ``Struct:Block``)
    as a :class:`TypeSpec`; ``known_only`` refuses a short name that is neither a known Burn type
    nor a torch class (a typo would silently leave weights as they are), naming the closest."""
    name, settings = parse_type(text, option)
    if known_only and ":" not in name and name.rpartition(".")[2] not in _BY_TORCH and name not in KNOWN_NAMES:
        by_lower = {k.lower(): k for k in [*_BY_TORCH, *KNOWN_NAMES]}
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
        raise UnknownModuleType(name, option, sorted(k.name for k in KINDS), by_lower[close[0]] if close else None)
    container = container_type(name)
    kind = kind_of(container)
    if settings:
        if kind is None:
            raise UnknownModuleType(f"{name}(...)", option + " with settings", sorted(k.name for k in KINDS), None)
        kind.check_settings(settings, f"{option} {text!r}")
    return TypeSpec(container, settings)


@dataclass(frozen=True)
class Resolved:
    """A module's type as resolved: its spelling and where it came from (``"module_types"``,
    ``"type_rules"``, ``"live module"``, ``"inferred: …"``, ``"best guess: …"``)."""

    spec: TypeSpec
    source: str

    @property
    def kind(self) -> ModuleKind | None:
        return kind_of(self.spec.container)

    @property
    def settings(self) -> dict[str, Setting]:
        return dict(self.spec.settings)


@dataclass(frozen=True)
class Ambiguity:
    """A module names and shapes cannot decide: the kinds it may be, why, and the best guess."""

    why: str
    candidates: tuple[str, ...]
    guess: ModuleKind
    guess_why: str


def infer(root: View, side: str, given: Callable[[str], ModuleKind | None], *,
          kinds: Sequence[ModuleKind] = KINDS) -> tuple[dict[str, Recognition], dict[str, Ambiguity]]:  # fmt: skip
    """Kinds from names and shapes for the modules of ``root``'s tree that ``given`` (types from
    elsewhere) leaves open. A structural kind's subtree is its own and not looked into. Where
    several kinds may fit, the best guess is the one the module's name points to, else the one
    the tree's exactly-recognised modules use most, else the most common."""
    found: dict[str, Recognition] = {}
    maybe: dict[str, list[Recognition]] = {}

    def visit(view: View) -> None:
        kind = given(view.path)
        if kind is None:
            seen = [r for k in kinds if (r := k.recognise(view, side)) is not None]
            exact = [r for r in seen if r.exact]
            if exact:
                found[view.path] = exact[0]
                kind = exact[0].kind
            elif seen:
                maybe[view.path] = seen
        if kind is None or not kind.structural:
            for child in view.children.values():
                visit(child)

    visit(root)
    peers = Counter(r.kind.name for r in found.values())
    ambiguous = {}
    for path, seen in maybe.items():
        best = max(seen, key=lambda r: (r.score >= 2, peers[r.kind.name], r.score))
        if best.score >= 2:
            why = "the module's name points to it"
        elif peers[best.kind.name]:
            why = f"{peers[best.kind.name]} other module(s) in this state are {best.kind.name}s"
        else:
            why = "the common case"
        ambiguous[path] = Ambiguity(seen[0].why, tuple(dict.fromkeys(r.kind.name for r in seen)), best.kind, why)
    return found, ambiguous


class _Types(Protocol):
    """What :func:`convert_layouts` needs of :class:`~burnpack.interop.adapters.ModuleTypes`."""

    @property
    def best_guess(self) -> bool: ...

    @property
    def ambiguous(self) -> Mapping[str, Ambiguity]: ...

    def lookup(self, path: str, original: str | None = None, *, count: bool = True) -> Resolved | None: ...


@dataclass
class Adapted:
    """What a layout step made of a conversion's entries: the entries, each converted module's
    type, source and Burn config (``modules``), the settings it guessed and its warnings."""

    entries: list[Entry]
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    guesses: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _ancestors(name: str) -> list[str]:
    """``a.b.c`` → ``["", "a", "a.b"]``: the module paths owning a tensor, outermost first."""
    parts = name.split(".")
    return [""] + [".".join(parts[:i]) for i in range(1, len(parts))]


def _relative(name: str, path: str) -> str:
    return name[len(path) + 1 :] if path else name


def convert_layouts(entries: Sequence[Entry], types: _Types, direction: Direction) -> Adapted:
    """``entries`` in the other framework's layout, module by module (see the module docstring).
    A structural module's tensors are replaced, where its first tensor was, by what its kind makes
    of them; every other tensor goes through its leaf kind. Modules that cannot be converted as
    asked — ambiguous ones without a best guess, refused layouts — raise one ``ConversionError``
    naming each with what settles it."""
    refusals = Refusals()
    originals: dict[str, str] = {}
    for e in entries:
        originals.setdefault(e.module_path, e.source_name.rpartition(".")[0])
    resolved: dict[str, Resolved | None] = {}

    def lookup(path: str) -> Resolved | None:
        if path not in resolved:
            resolved[path] = types.lookup(path, originals.get(path), count=False)
        return resolved[path]

    paths = sorted({p for e in entries for p in _ancestors(e.name)}, key=lambda p: (p.count(".") + (p != ""), p))
    claimed: dict[str, Resolved] = {}
    for path in paths:
        if path and any(a in claimed for a in _ancestors(path)):
            continue
        found = lookup(path)
        if found is not None and found.kind is not None and found.kind.structural:
            claimed[path] = found
    claimed_of = {e.name: next((p for p in _ancestors(e.name) if p in claimed), None) for e in entries}
    for e in entries:  # a type given for a structural module (or its stack) types the tensors below it (those directly in it count already)
        owner = claimed_of[e.name]
        if owner is not None:
            for path in [owner] * (owner != e.module_path) + _inherited(owner, claimed[owner], lookup):
                types.lookup(path, originals.get(path))
    _refuse_ambiguous(entries, types, claimed_of, refusals)

    members: dict[str, dict[str, Entry]] = {}
    for e in entries:
        owner = claimed_of[e.name]
        if owner is not None:
            members.setdefault(owner, {})[_relative(e.name, owner)] = e
    out: list[Entry] = []
    for e in entries:
        owner = claimed_of[e.name]
        if owner is None:
            out.append(_leaf(e, lookup(e.module_path), direction))
            continue
        if owner not in members:
            continue  # done: its first tensor's turn made the whole module
        found = claimed[owner]
        group = Group(owner, members.pop(owner), _settings(owner, found, lookup), found.source, refusals, best_guess=types.best_guess)
        prior = {step for x in group.entries.values() for step in x.steps}
        for made in found.kind.convert(group, direction):  # type: ignore[union-attr]
            what = ", ".join(s for s in made.steps if s not in prior) or "unchanged"
            out.append(made.replace(rule=Rule(owner, found.kind.name, found.source, what)))  # type: ignore[union-attr]
    refusals.raise_if_any()
    result = Adapted(out, guesses=list(refusals.guesses))
    result.modules = _modules(entries if direction is Direction.TO_TORCH else out, lookup, claimed, refusals)
    result.warnings = _unconverted_hints(entries, types, claimed_of, lookup, direction)
    return result


def _leaf(entry: Entry, found: Resolved | None, direction: Direction) -> Entry:
    kind = kind_of(entry.module_type)
    if kind is None:
        return entry
    made = kind.convert_entry(entry, direction)
    what = ", ".join(made.steps[len(entry.steps):]) or "unchanged"
    return made.replace(rule=Rule(entry.module_path, kind.name, found.source if found else "given", what))


def _inherited(path: str, found: Resolved, lookup: Callable[[str], Resolved | None]) -> list[str]:
    """The enclosing modules (a stack) that pass their settings down to the module at ``path``."""
    kind = found.kind
    return [a for a in _ancestors(path + ".x")[:-1] if a != path and kind is not None
            and (outer := lookup(a)) is not None and outer.kind is not None and outer.kind.name in kind.inherits_from]  # fmt: skip


def _settings(path: str, found: Resolved, lookup: Callable[[str], Resolved | None]) -> dict[str, Setting]:
    """The module's settings over those its enclosing stack passes down to it."""
    settings: dict[str, Setting] = {}
    for ancestor in _inherited(path, found, lookup):
        settings.update(lookup(ancestor).settings)  # type: ignore[union-attr]
    settings.update(found.settings)
    return settings


def _refuse_ambiguous(entries: Sequence[Entry], types: _Types, claimed_of: Mapping[str, str | None], refusals: Refusals) -> None:
    """Modules whose kind names and shapes cannot decide, where no type and no best guess settle it."""
    tensors: dict[str, list[str]] = {}
    for e in entries:
        path = e.module_path
        if claimed_of[e.name] is None and e.module_type is None and path in types.ambiguous:
            tensors.setdefault(path, []).append(f"{e.name} {list(e.shape)}")
    for path, names in tensors.items():
        a = types.ambiguous[path]
        others = " or ".join(repr(c) for c in a.candidates[1:])
        refusals.items.append(f"{', '.join(names)} ({a.why}): give module_types={{'{path}': '{a.candidates[0]}'}} (or {others}), "
                              f"or best_guess=True (it would take {a.guess.name}: {a.guess_why})")  # fmt: skip


def _modules(burn_side: Sequence[Entry], lookup: Callable[[str], Resolved | None], claimed: Mapping[str, Resolved],
             refusals: Refusals) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per converted module: its type, where the type came from, and the Burn config that builds
    it with the settings the weights cannot tell (computed from its tensors in Burn's layout).
    A module inside a structural one is part of it; a layer inside a stack is stood for by the
    stack's line."""

    def inside_claimed(path: str) -> bool:
        return path != "" and any(a in claimed for a in _ancestors(path))

    typed: dict[str, Resolved] = dict(claimed)
    for e in burn_side:
        for path in _ancestors(e.name):
            if path not in typed and not inside_claimed(path):
                found = lookup(path)
                if found is not None and found.kind is not None:
                    typed[path] = found
    subtrees = {path for path, found in typed.items() if found.kind is not None and found.kind.subtree}
    tensors: dict[str, dict[str, Entry]] = {}
    for e in burn_side:
        for path in _ancestors(e.name):
            if path in subtrees or (path == e.module_path and path in typed):
                tensors.setdefault(path, {})[_relative(e.name, path)] = e
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(typed, key=lambda p: (p.count(".") + (p != ""), p)):
        found = typed[path]
        kind = found.kind
        assert kind is not None
        outer = [lookup(a) for a in _ancestors(path + ".x")[:-1] if a != path]
        if any(o is not None and o.kind is not None and o.kind.name in kind.within for o in outer):
            continue
        members = tensors.get(path, {})
        if not kind.subtree:
            members = {rel: e for rel, e in members.items() if "." not in rel}
        config = kind.config(Group(path, members, _settings(path, found, lookup), found.source, refusals))
        if config is not None:
            out[path] = {"type": kind.name, "type_from": found.source, "config": config.code, "yours": list(config.yours)}
    return out


def _unconverted_hints(entries: Sequence[Entry], types: _Types, claimed_of: Mapping[str, str | None],
                       lookup: Callable[[str], Resolved | None], direction: Direction) -> list[str]:  # fmt: skip
    """Untyped modules laid out as a structural kind: left as they are, said so, with the way out."""
    untyped = [e for e in entries if claimed_of[e.name] is None and e.module_type is None]
    if not untyped:
        return []
    found, _ = infer(build_views(untyped), direction.source_side, lambda path: None, kinds=STRUCTURAL_KINDS)
    return [
        f"{path or '<root>'}: laid out as {r.kind.name} ({r.why}) but given no module type, so left as it is: give "
        f"module_types={{'{path}': '{r.kind.name}'}} or infer_types=True"
        for path, r in found.items() if r.kind.structural and lookup(path) is None
    ]  # fmt: skip
