"""What every module layout shares: the kind protocol, type spellings, and the tensor steps.

A :class:`ModuleKind` is one module type with its behaviour: the torch classes it is, how it is
recognised from names and shapes, what its tensors become in Burn's layout and back, the Burn
config that rebuilds it, and what it refuses. Leaf kinds (``Linear``, the norms...) change one
tensor at a time; structural kinds (``Lstm``, ``MultiHeadAttention``, the transformer layers)
take the tensors of their whole subtree as a :class:`Group` and split, merge and rename them.

Every step here is lazy: a split is a deferred slice of its source, and a transpose or a merge
is made in ``Bands`` — a band of rows at a time, only when written — so a conversion holds two
small bands of extra memory, never a whole tensor (a reader of the whole tensor gets it whole).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, ClassVar

import numpy as np

from ..core.source import prefault
from ..core.tensor import Bands
from ..core.dtypes import numpy_dtype
from ..errors import ConversionError, OptionError
from .tensors import Entry, Rule, dtype_name

__all__ = [
    "BurnConfig", "Direction", "Group", "ModuleKind", "Recognition", "Rule", "TypeSpec", "View",
    "concat", "parse_type", "rename", "slice_rows", "split_rule", "transpose",
]  # fmt: skip


class Direction(enum.Enum):
    """Which way tensors go: from PyTorch's layout to Burn's, or back."""

    TO_BURN = "to Burn"
    TO_TORCH = "to PyTorch"

    @property
    def source_side(self) -> str:
        """Whose layout the input tensors are in: ``"torch"`` or ``"burn"``."""
        return "torch" if self is Direction.TO_BURN else "burn"


# --------------------------------------------------------------------------------------------
# Type spellings: "Linear", "nn.LSTM", "TransformerEncoderLayer(norm_first=true)", "Struct:Block"
# --------------------------------------------------------------------------------------------
Setting = bool | int | float | str


@dataclass(frozen=True)
class TypeSpec:
    """A module type as written: its container type (``Struct:Linear``) and the settings given
    with it (``norm_first=true``), which the weights alone cannot tell."""

    container: str
    settings: tuple[tuple[str, Setting], ...] = ()

    @property
    def short(self) -> str:
        return self.container.partition(":")[2] or self.container

    def __str__(self) -> str:
        if not self.settings:
            return self.container
        return f"{self.container}({', '.join(f'{k}={_spell(v)}' for k, v in self.settings)})"


def _spell(value: Setting) -> str:
    """A setting as written in a type spelling: ``true``, ``8``, ``0.1``, ``relu`` (a name with the
    spelling's own punctuation in it — a lambda's, say — gets ``_`` there, so it reads back)."""
    return str(value).lower() if isinstance(value, bool) else re.sub(r"[(),=\s]", "_", str(value))


_SPELLING = re.compile(r"^\s*(?P<name>[^()\s]+)\s*(?:\((?P<settings>[^()]*)\))?\s*$")


def _value(text: str) -> Setting:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text.strip())  # type: ignore[no-any-return]
        except ValueError:
            pass
    return text.strip()


def parse_type(text: str, option: str = "module type") -> tuple[str, tuple[tuple[str, Setting], ...]]:
    """``"TransformerEncoderLayer(norm_first=true, n_heads=8)"`` → ``("TransformerEncoderLayer",
    (("norm_first", True), ("n_heads", 8)))``; a bare name has no settings."""
    match = _SPELLING.match(str(text))
    if match is None:
        raise OptionError(f"{option} {text!r} is not NAME or NAME(setting=value, ...)")
    settings: list[tuple[str, Setting]] = []
    for item in (match["settings"] or "").split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise OptionError(f"{option} {text!r}: setting {item.strip()!r} is not name=value")
        settings.append((key.strip(), _value(value)))
    return match["name"], tuple(settings)


def split_rule(text: str) -> tuple[str, str] | None:
    """``REGEX=TYPE`` split at the ``=`` before the type (a type's settings hold ``=`` too):
    ``r"layers\\.\\d+$=TransformerEncoderLayer(norm_first=true)"`` → the regex and the type."""
    head = text
    if text.endswith(")") and "(" in text:
        head = text[: text.rindex("(")]
    pattern, sep, name = head.rpartition("=")
    if not sep or not pattern:
        return None
    return pattern, name + text[len(head):]


# --------------------------------------------------------------------------------------------
# Tensor steps, all deferred
# --------------------------------------------------------------------------------------------
def _check_splittable(entry: Entry) -> None:
    if entry.dtype.is_quantized:
        raise ConversionError(f"tensor {entry.name!r}: a {dtype_name(entry.dtype)} tensor cannot be split or merged; pass dequantize=True")


def slice_rows(entry: Entry, start: int, stop: int, name: str, what: str, module_type: str | None) -> Entry:
    """Rows ``start:stop`` of ``entry`` (its first dim) as a tensor of its own, read only when
    written: a view of the source's rows, never a copy of the whole source (of a tensor made in
    bands, those bands)."""
    _check_splittable(entry)
    load = entry.numpy
    shape = (stop - start, *entry.shape[1:])
    source = entry.bands
    if source is not None:
        def begin() -> Callable[[np.ndarray, int], None]:
            fill = source.begin()
            return lambda out, row: fill(out, start + row)

        return entry.replace(name=name, shape=shape, load=Bands(shape, source.dtype, begin), param_id=None,
                             module_type=module_type, step=what)  # fmt: skip

    def rows() -> np.ndarray:
        return load()[start:stop]

    return entry.replace(name=name, shape=shape, load=rows, param_id=None, module_type=module_type, step=what)


def concat(parts: Sequence[Entry], name: str, what: str, module_type: str | None) -> Entry:
    """``parts`` stacked along their first dim, made band by band only when written: each band
    takes its rows from the parts it spans (from their own bands, for parts made in bands)."""
    first = parts[0]
    for part in parts:
        _check_splittable(part)
        if part.dtype != first.dtype or part.shape[1:] != first.shape[1:]:
            raise ConversionError(
                f"cannot merge {first.name!r} ({dtype_name(first.dtype)} {list(first.shape)}) and {part.name!r} "
                f"({dtype_name(part.dtype)} {list(part.shape)}) into {name!r}: their dtypes or trailing dims differ"
            )
    shape = (sum(p.shape[0] for p in parts), *first.shape[1:])
    starts = [0, *accumulate(p.shape[0] for p in parts)]

    def begin() -> Callable[[np.ndarray, int], None]:
        fills = [_rows_of(part) for part in parts]

        def fill(out: np.ndarray, row: int) -> None:
            end = row + len(out)
            for part_fill, lo, hi in zip(fills, starts, starts[1:]):
                if lo < end and row < hi:
                    a, b = max(lo, row), min(hi, end)
                    part_fill(out[a - row : b - row], a - lo)

        return fill

    steps = tuple(dict.fromkeys(step for part in parts for step in part.steps))
    return Entry(name, first.dtype, shape, Bands(shape, numpy_dtype(first.dtype), begin), module_type=module_type,
                 source_name=first.source_name, steps=(*steps, what))  # fmt: skip


def _rows_of(entry: Entry) -> Callable[[np.ndarray, int], None]:
    """``fill(out, row)`` for ``entry``'s rows: its own bands' fill, or copies of its loaded rows."""
    if entry.bands is not None:
        return entry.bands.begin()
    array = entry.checked_numpy()
    return lambda out, row: np.copyto(out, array[row : row + len(out)])


_STRIP = 512
"""Source rows turned by one numpy copy: each output row gets 512 elements at a time, from a strip
of rows (a few hundred kilobytes of a band's columns) that stays in the core's cache while it is
turned. Each copy releases the GIL and takes it back; in long strips that happens seldom enough
that the thread writing the bands, which needs the GIL between its writes, rarely waits for it."""


def _turn(out: np.ndarray, columns: np.ndarray) -> None:
    """``out[...] = columns.T``, in strips of ``_STRIP`` rows of ``columns`` (a band: a few
    megabytes of a weight's columns, so a strip's rows stay in the cache while they are turned)."""
    for r in range(0, columns.shape[0], _STRIP):
        out[:, r : r + _STRIP] = columns[r : r + _STRIP].T


def transpose(entry: Entry) -> Entry:
    """A 2-D tensor transposed (``[out, in]`` ↔ ``[in, out]``), made band by band only when
    written: a band of output rows is a band of the source's columns, turned in strips."""
    if entry.dtype.is_quantized:
        raise ConversionError(f"tensor {entry.name!r}: a {dtype_name(entry.dtype)} tensor cannot be transposed: its bytes are packed blocks, not elements")
    shape = entry.shape[::-1]

    def begin() -> Callable[[np.ndarray, int], None]:
        source = entry.checked_numpy()
        prefault(source)  # every band reads across all of its rows
        return lambda out, row: _turn(out, source[:, row : row + len(out)])

    return entry.replace(shape=shape, load=Bands(shape, numpy_dtype(entry.dtype), begin), step=f"transposed {list(entry.shape)} -> {list(shape)}")


def rename(entry: Entry, name: str, module_type: str | None = None, *, say: bool = True) -> Entry:
    """``entry`` under another name (and owner type); ``say``: record the rename as a step."""
    changes: dict[str, Any] = {"name": name}
    if module_type is not None:
        changes["module_type"] = module_type
    if say and name != entry.name:
        changes["step"] = f"{entry.name} -> {name}"
    return entry.replace(**changes) if name != entry.name or module_type is not None else entry


# --------------------------------------------------------------------------------------------
# What kinds see: a module's tensors (View, for recognising) and a claimed subtree (Group)
# --------------------------------------------------------------------------------------------
@dataclass
class View:
    """A module in the tree of tensor names: its own parameters and its child modules."""

    path: str
    params: dict[str, Entry] = field(default_factory=dict)
    children: dict[str, View] = field(default_factory=dict)

    def child(self, name: str) -> View | None:
        return self.children.get(name)

    def shape(self, param: str) -> tuple[int, ...] | None:
        entry = self.params.get(param)
        return None if entry is None else tuple(entry.shape)

    def digits(self) -> list[View] | None:
        """The children of a ``Vec`` (``0``, ``1``...), in order, or None if this is not one."""
        if not self.children or self.params or not all(k.isdigit() for k in self.children):
            return None
        return [self.children[k] for k in sorted(self.children, key=int)]


def build_views(entries: Iterable[Entry]) -> View:
    """The module tree of the entries' current names, rooted at ``""``."""
    root = View("")
    for entry in entries:
        parts = entry.name.split(".")
        node = root
        for i, part in enumerate(parts[:-1]):
            nxt = node.children.get(part)
            if nxt is None:
                nxt = node.children[part] = View(".".join(parts[: i + 1]))
            node = nxt
        node.params[parts[-1]] = entry
    return root


@dataclass
class Recognition:
    """What names and shapes say of a module, as one kind sees it: that it is this kind
    (``exact``), or that it may be — then other kinds may claim it too, and ``score`` ranks the
    claims for a best guess (the registry settles it, ``layouts.infer``)."""

    why: str
    kind: ModuleKind
    exact: bool = True
    score: int = 0


@dataclass
class BurnConfig:
    """The Burn code that builds a module (``LstmConfig::new(5, 3, true)``) and the settings the
    weights cannot tell, which are the user's to set (``yours``)."""

    code: str
    yours: list[str] = field(default_factory=list)


class Refusals:
    """Modules a conversion cannot map as asked, each with the tensors involved and what settles
    it; raised together once every module has been looked at."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.guesses: list[str] = []

    def raise_if_any(self) -> None:
        if self.items:
            shown = "; ".join(self.items[:8]) + (f"; and {len(self.items) - 8} more" if len(self.items) > 8 else "")
            raise ConversionError(f"cannot convert {len(self.items)} module(s) as asked: {shown}")


class Group:
    """The tensors of one module's subtree, named relative to the module, with its settings."""

    def __init__(self, path: str, entries: Mapping[str, Entry], settings: Mapping[str, Setting], type_from: str,
                 refusals: Refusals, *, best_guess: bool = False) -> None:  # fmt: skip
        self.path = path
        self.entries = dict(entries)
        self.settings = dict(settings)
        self.type_from = type_from
        self.refusals = refusals
        self.best_guess = best_guess

    def full(self, rel: str) -> str:
        return f"{self.path}.{rel}" if self.path else rel

    def under(self, prefix: str) -> dict[str, Entry]:
        """The tensors below child ``prefix``, named relative to it."""
        head = prefix + "."
        return {k[len(head):]: e for k, e in self.entries.items() if k.startswith(head)}

    def refuse(self, what: str) -> list[Entry]:
        self.refusals.items.append(f"{self.path or '<root>'}: {what}")
        return []

    def setting(self, key: str, default: Setting | None = None) -> Setting | None:
        return self.settings.get(key, default)

    def guess(self, key: str, value: Setting, why: str) -> Setting:
        """A setting the weights cannot tell, taken as ``value`` because the user asked for best
        guesses; the report names it."""
        self.settings[key] = value
        self.refusals.guesses.append(f"{self.path or '<root>'}: {key}={_spell(value)} ({why})")
        return value


# --------------------------------------------------------------------------------------------
# The kind protocol
# --------------------------------------------------------------------------------------------
class ModuleKind:
    """One module type and its behaviour (see the module docstring). Subclasses set the class
    attributes and override what applies; the registry (``layouts``) holds one of each."""

    name: ClassVar[str]
    """Burn's type name, the registry key: ``Linear``, ``Lstm``."""
    torch_classes: ClassVar[tuple[str, ...]] = ()
    """torch (and Hugging Face) class names that are this kind."""
    burn_names: ClassVar[tuple[str, ...]] = ()
    """Other Burn types the kind covers (``BiLstm`` for ``Lstm``)."""
    settings: ClassVar[Mapping[str, str]] = {}
    """Settings a type spelling may carry: name → what it is (``norm_first``: pre-norm)."""
    structural: ClassVar[bool] = False
    """Takes the tensors of its whole subtree (splits, merges, renames children)."""
    subtree: ClassVar[bool] = False
    """Its config reads its whole subtree (structural kinds, stacks), not only its own tensors."""
    inherits_from: ClassVar[tuple[str, ...]] = ()
    """Kinds whose settings an enclosing module passes down (a stack's ``norm_first``)."""
    within: ClassVar[tuple[str, ...]] = ()
    """Kinds that build this one as part of themselves, so report the config for both."""

    @property
    def container(self) -> str:
        return "Struct:" + self.name

    def settings_of(self, module: Any) -> dict[str, Setting]:
        """The settings of a live torch module of this kind that the weights cannot tell."""
        return {}

    def recognise(self, view: View, side: str) -> Recognition | None:
        """Whether names and shapes say ``view`` is this kind (``side``: the tensors are in
        ``"torch"``'s or ``"burn"``'s layout)."""
        return None

    def convert_entry(self, entry: Entry, direction: Direction) -> Entry:
        """A leaf kind's step for one tensor of its module."""
        return entry

    def convert(self, group: Group, direction: Direction) -> list[Entry]:
        """A structural kind's step for its subtree: Burn-named entries (``TO_BURN``) or
        torch-named ones, each typed with the kind of its new owner."""
        return [self.convert_entry(e, direction) for e in group.entries.values()]

    def alternative_name(self, param: str, direction: Direction) -> str | None:
        """Another name the target may use for ``param`` (Burn's ``get_alternative_param_name``)."""
        return None

    def config(self, burn: Group) -> BurnConfig | None:
        """The Burn config that rebuilds the module, from its tensors in Burn's names and layout."""
        return None

    def check_settings(self, settings: Iterable[tuple[str, Setting]], option: str) -> None:
        for key, _ in settings:
            if key not in self.settings:
                known = ", ".join(self.settings) or "none"
                raise OptionError(f"{option}: {self.name} has no setting {key!r} (its settings: {known})")

    def __repr__(self) -> str:
        return f"<module kind {self.name}>"


