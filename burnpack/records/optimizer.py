"""``OptimizerRecord``: optimizer state keyed by parameter id (burn-optim ``optim/module/``).

Layout (``ModuleOptimizer::to_record``), for every parameter that has state:

* tensors ``"{decimal param id}.{field path}"``, each carrying that ``param_id``;
* scalar ``"{id}.__rank"`` = ``UInt(rank of the parameter)``, even when the state has no tensors;
* the state's own scalars with their Rust kinds (``momentum.time`` is ``UInt``);
* metadata ``"{id}" → "<module path>"``.

LBFGS keeps one global state instead: unprefixed names, no ``param_id``, no ``__rank``, no
metadata. Reading follows ``ModuleOptimizer::load_record``: ranks from ``"<u64>.__rank"`` scalars,
paths from metadata keys that parse as u64 (others ignored), every tensor must carry a
``param_id`` (Burn panics otherwise), and a state missing a required leaf is dropped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields as dc_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..codec._generated.metadata import Scalar
from ..core.display import plural, printable_lines
from ..core.frameworks import as_numpy
from ..core.tensor import Tensor
from ..core.source import FileSource
from ._common import RANK_KEY, open_pack, pack_tensors_in_data_order, parse_u64, scalar_value
from ..errors import MissingParamIdError, StateRankError
from .state import Field, StateSource, burn_field, flatten, layout, leaf_names, unflatten

PathLike = str | os.PathLike[str]

if TYPE_CHECKING:
    from ..core.writer import Writer
    from .module import ModuleRecord


# --------------------------------------------------------------------------------------------
# Typed states
# --------------------------------------------------------------------------------------------
class OptimizerState:
    """Base of the typed optimizer states: a dataclass whose fields (``burn_field`` of
    ``burnpack.records.state``) say where Burn's struct keeps each one; ``schema()`` is that layout.

    Tensor attributes hold numpy arrays (zero-copy views when read from a file).
    """

    KIND: ClassVar[str] = "unknown"
    """Which Burn optimizer(s) write this layout."""

    @classmethod
    def schema(cls) -> tuple[Field, ...]:
        """Burn's layout of this state, from its fields.

        Returns:
            The fields as Burn's record nests them (built once per class).
        """
        cached: tuple[Field, ...] | None = cls.__dict__.get("_schema")
        if cached is None:
            cached = layout(cls)
            cls._schema = cached  # type: ignore[attr-defined]
        return cached

    def flatten(self, prefix: str) -> tuple[list[tuple[str, Any]], list[tuple[str, Scalar]]]:
        """The state as Burn's record holds it, in Burn's field order.

        Args:
            prefix: The name prefix (``"<param id>."``).

        Returns:
            ``(tensors, scalars)``, each a list of ``(name, value)``.
        """
        return flatten(self.schema(), {f.name: getattr(self, f.name) for f in dc_fields(self)}, prefix)  # type: ignore[arg-type]  # every state is a dataclass

    @classmethod
    def unflatten(cls, prefix: str, source: StateSource, missing: list[str] | None = None) -> OptimizerState | None:
        """The state read back from the names below ``prefix``, or None where Burn would drop it.

        Args:
            prefix: The name prefix (``"<param id>."``).
            source: Where the tensors and scalars are looked up.
            missing: Filled with the leaves that are missing or ill-typed.

        Returns:
            The state, or None.
        """
        values = unflatten(cls.schema(), prefix, source, missing)
        if values is None:
            return None
        converted = {}
        for name, value in values.items():
            if isinstance(value, Tensor):
                value = value.numpy()
            elif isinstance(value, list):
                value = [v.numpy() for v in value]
            converted[name] = value
        return cls(**converted)

    @classmethod
    def leaves(cls) -> tuple[set[str], set[str], set[str]]:
        """The leaf names this layout has below the id prefix.

        Returns:
            ``(required, optional, vec prefixes)``.
        """
        return leaf_names(cls.schema())

    @classmethod
    def matches(cls, names: set[str]) -> bool:
        """Whether leaf names (below one prefix, ``__rank`` excluded) fit this layout.

        Args:
            names: The leaf names.

        Returns:
            True when they fit.
        """
        required, optional, vec = cls.leaves()
        if not required <= names:
            return False
        for name in names - required - optional:
            head, _, index = name.rpartition(".")
            if head not in vec or not index.isdigit():
                return False
        return True

    def tensors(self) -> dict[str, np.ndarray]:
        """The state tensors by leaf name (``momentum.moment_1``...).

        Returns:
            The arrays by leaf name.
        """
        return {name: as_numpy(value) for name, value in self.flatten("")[0]}


@dataclass
class AdamState(OptimizerState):
    """``AdamState { momentum: AdaptiveMomentumState { time, moment_1, moment_2, max_moment_2 } }``.

    Args:
        time: The step count (UInt).
        moment_1: The first moment.
        moment_2: The second moment.
        max_moment_2: The largest second moment, present only with ``amsgrad``.
    """

    time: int = burn_field("momentum.time", "scalar", "usize")
    moment_1: Any = burn_field("momentum.moment_1")
    moment_2: Any = burn_field("momentum.moment_2")
    max_moment_2: Any = burn_field("momentum.max_moment_2", "opt_tensor")

    KIND = "Adam/AdamW"


@dataclass
class AdamWState(AdamState):
    """AdamW's state: the same ``AdaptiveMomentumState`` as Adam, so the same layout.

    Args:
        time: The step count (UInt).
        moment_1: The first moment.
        moment_2: The second moment.
        max_moment_2: The largest second moment, present only with ``amsgrad``.
    """


@dataclass
class SgdState(OptimizerState):
    """``SgdState { momentum: Option<MomentumState { velocity }> }``: only ``__rank`` without momentum.

    Args:
        velocity: The momentum buffer, or None without momentum.
    """

    velocity: Any = burn_field("momentum?.velocity", default=None)

    KIND = "SGD"


@dataclass
class MuonState(OptimizerState):
    """``MuonState { momentum: MomentumState { velocity } }`` (weight matrices; other parameters go to
    an AdamW group, so a Muon record usually mixes both layouts).

    Args:
        velocity: The momentum buffer.
    """

    velocity: Any = burn_field("momentum.velocity")

    KIND = "Muon"


@dataclass
class RmsPropState(OptimizerState):
    """``RmsPropState { square_avg: { square_avg }, centered: { grad_avg?, avg }, momentum: Option<{ buf }> }``.

    Args:
        square_avg: The squared gradients' average.
        avg: The centered average.
        grad_avg: The gradients' average, when ``centered``.
        momentum_buf: The momentum buffer, when momentum > 0 (Burn's default 0.9).
    """

    square_avg: Any = burn_field("square_avg.square_avg")
    grad_avg: Any = burn_field("centered.grad_avg", "opt_tensor", kw_only=True)
    avg: Any = burn_field("centered.avg")
    momentum_buf: Any = burn_field("momentum?.buf", default=None, kw_only=True)

    KIND = "RMSProp"


@dataclass
class AdaGradState(OptimizerState):
    """``AdaGradState { lr_decay: LrDecayState { time, sum } }``.

    Args:
        time: The step count.
        sum: The running sum of squared gradients.
    """

    time: int = burn_field("lr_decay.time", "scalar", "usize")
    sum: Any = burn_field("lr_decay.sum")

    KIND = "AdaGrad"


@dataclass
class AdanState(OptimizerState):
    """``AdanState { momentum: AdaptiveNesterovMomentumState { time, exp_avg, exp_avg_sq, exp_avg_diff, neg_pre_grad } }``.

    Args:
        time: The step count.
        exp_avg: The gradients' moving average.
        exp_avg_sq: The squared gradients' moving average.
        exp_avg_diff: The gradient differences' moving average.
        neg_pre_grad: The previous gradient, negated.
    """

    time: int = burn_field("momentum.time", "scalar", "usize")
    exp_avg: Any = burn_field("momentum.exp_avg")
    exp_avg_sq: Any = burn_field("momentum.exp_avg_sq")
    exp_avg_diff: Any = burn_field("momentum.exp_avg_diff")
    neg_pre_grad: Any = burn_field("momentum.neg_pre_grad")

    KIND = "Adan"


@dataclass
class LBFGSState(OptimizerState):
    """L-BFGS's single global state (1-D tensors; no id prefix, no ``param_id``).

    Burn's default state has ``t = 1.0`` and everything else empty.

    Args:
        history_s: The parameter differences of the history.
        history_y: The gradient differences of the history.
        d: The last search direction.
        t: The last step length.
        prev_flat_grad: The previous flat gradient.
        prev_loss: The previous loss.
        g_iter: The global iteration count.
    """

    history_s: list = burn_field("history_s", "vec_tensor", default_factory=list)
    history_y: list = burn_field("history_y", "vec_tensor", default_factory=list)
    d: Any = burn_field("d", "opt_tensor")
    t: float | None = burn_field("t", "opt_scalar", "f64", default=1.0)
    prev_flat_grad: Any = burn_field("prev_flat_grad", "opt_tensor")
    prev_loss: float | None = burn_field("prev_loss", "opt_scalar", "f64")
    g_iter: int = burn_field("g_iter", "scalar", "usize", default=0)

    KIND = "LBFGS"


PER_PARAM_STATES: tuple[type[OptimizerState], ...] = (
    AdamState,
    AdanState,
    AdaGradState,
    RmsPropState,
    SgdState,
    MuonState,
)
"""The per-parameter layouts, in detection order (Adam covers AdamW, SGD-with-momentum covers Muon)."""


def detect_state_class(names: set[str]) -> type[OptimizerState] | None:
    """The typed state whose layout fits these leaf names (``__rank`` excluded), or None."""
    for cls in PER_PARAM_STATES:
        if cls.matches(names):
            return cls
    return None


def state_kind(names: set[str]) -> str:
    """A human label for a layout: ``Adam/AdamW``, ``SGD``, ``SGD/Muon`` (same layout), ..."""
    cls = detect_state_class(names)
    if cls is None:
        return "unknown"
    if cls is SgdState and names:
        return "SGD/Muon"
    return cls.KIND


# --------------------------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------------------------
@dataclass
class ParamEntries:
    """Everything an optimizer record holds for one parameter id, generically.

    Args:
        param_id: The parameter's id.
        path: Its path, from the metadata.
        rank: Its ``__rank`` scalar.
        tensors: Its tensors, by name relative to the id prefix.
        scalars: Its scalars, by name relative to the id prefix.
    """

    param_id: int
    path: str | None
    rank: int | None
    tensors: dict[str, Tensor]
    scalars: dict[str, Scalar]

    @property
    def leaf_names(self) -> set[str]:
        """Every tensor and scalar name."""
        return set(self.tensors) | set(self.scalars)

    @property
    def kind(self) -> str:
        """The optimizer layout the leaf names match (``"adam"``, ``"sgd"``, …)."""
        return state_kind(self.leaf_names)


@dataclass
class ConsistencyReport:
    """How a model record and an optimizer record line up (they meet only through param ids).

    Args:
        only_in_model: ``(id, path)`` of parameters with no optimizer state (normal for frozen or
            stateless parameters).
        only_in_optimizer: ``(id, optimizer metadata path)`` of states no model parameter has.
        rank_mismatches: ``(id, path, model rank, optimizer rank)``.
        shape_mismatches: ``(id, path, model shape, state shape)``.
        path_mismatches: ``(id, model path, optimizer metadata path)``.
    """

    only_in_model: list[tuple[int | None, str]] = field(default_factory=list)
    """Model parameters without optimizer state: normal for running stats, frozen parameters, or
    a parameter that never got a gradient."""
    only_in_optimizer: list[tuple[int, str | None]] = field(default_factory=list)
    """State for ids the model does not have: the two files do not belong together."""
    rank_mismatches: list[tuple[int, str, int, int | None]] = field(default_factory=list)
    """``(id, path, model rank, optimizer __rank)``."""
    shape_mismatches: list[tuple[int, str, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    """``(id, state tensor name, parameter shape, state tensor shape)``."""
    path_mismatches: list[tuple[int, str, str]] = field(default_factory=list)
    """``(id, model path, optimizer metadata path)``."""

    @property
    def ok(self) -> bool:
        """Whether the records fit: no state without a parameter and no rank, shape or path mismatch."""
        return not (self.only_in_optimizer or self.rank_mismatches or self.shape_mismatches or self.path_mismatches)

    def __str__(self) -> str:
        if self.ok:
            text = "consistent"
            if self.only_in_model:
                text += f" ({plural(len(self.only_in_model), 'model parameter')} without optimizer state)"
            return text
        lines = ["inconsistent:"]
        for pid, path in self.only_in_optimizer:
            lines.append(f"  optimizer state for id {pid} ({path or 'no path'}) matches no model parameter")
        for pid, path, model_rank, rank in self.rank_mismatches:
            lines.append(f"  {path} (id {pid}): model rank {model_rank}, optimizer __rank {rank}")
        for pid, name, shape, found in self.shape_mismatches:
            lines.append(f"  {name} (id {pid}): parameter shape {list(shape)}, state shape {list(found)}")
        for pid, model_path, path in self.path_mismatches:
            lines.append(f"  id {pid}: model path {model_path!r}, optimizer path {path!r}")
        if self.only_in_model:
            lines.append(f"  {plural(len(self.only_in_model), 'model parameter')} without optimizer state")
        return printable_lines(lines)


class OptimizerRecord:
    """Optimizer state as Burn stores it: tensors, typed scalars and the id → path metadata.

    Build one from typed states (``from_states``, ``set_state``, ``from_lbfgs``), read one with
    ``load`` / ``from_bytes``, inspect it through ``state`` / ``states`` (typed) or ``entries``
    (generic), and write with ``save`` / ``into_bytes``. Loading keeps the tensors' data order,
    every scalar and all metadata, so a record re-saves byte for byte.

    Args:
        tensors: The state tensors, in data order.
        scalars: The typed scalars (``"<id>.__rank"``, step counts, …).
        metadata: The metadata (``"<id>"`` → parameter path).
    """

    def __init__(
        self,
        tensors: Iterable[Tensor] = (),
        scalars: Mapping[str, Scalar] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        self.tensors: list[Tensor] = list(tensors)
        self.scalars: dict[str, Scalar] = dict(scalars or {})
        self.metadata: dict[str, str] = dict(metadata or {})

    # -- I/O ---------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> OptimizerRecord:
        """Burn's ``OptimizerRecord::from_bytes``: a record from a pack's bytes.

        Args:
            data: The pack's bytes.

        Returns:
            The record.

        Raises:
            BurnpackError: The bytes are not a valid pack.
        """
        return cls._from_pack(open_pack(data))

    @classmethod
    def load(cls, path: PathLike | FileSource) -> OptimizerRecord:
        """Burn's ``OptimizerRecord::load`` (``.bpk`` appended when the extensionless path is absent).

        Args:
            path: The file, or a file opened already (a ``FileSource``).

        Returns:
            The record.

        Raises:
            BurnpackError: The file is not a valid pack, or cannot be read.
        """
        return cls._from_pack(open_pack(path))

    @classmethod
    def _from_pack(cls, pack: Any) -> OptimizerRecord:
        return cls(pack_tensors_in_data_order(pack), pack.scalars, pack.metadata)

    def _writer(self) -> Writer:
        from ..core.writer import Writer  # imported when a record is written: reading one (inspect) needs no writer

        return Writer(self.tensors, metadata=self.metadata, scalars=self.scalars)

    def into_bytes(self) -> bytes:
        """The pack Burn's ``into_bytes`` writes: tensors, scalars and metadata.

        Returns:
            The pack's bytes.
        """
        return self._writer().to_bytes()

    def save(self, path: PathLike) -> Path:
        """Write the record, atomically.

        Args:
            path: Where to write (``.bpk`` appended when the path has no extension).

        Returns:
            The path written.

        Raises:
            BurnpackError: The record cannot be written (Burn's writer error, or I/O).
        """
        return self._writer().write_atomic(path)

    # -- basics ------------------------------------------------------------------------------
    def __len__(self) -> int:
        """The number of tensors (Burn's ``len``)."""
        return len(self.tensors)

    def is_empty(self) -> bool:
        """Whether the record has no tensors (Burn's ``is_empty``; a record of stateless SGD parameters
        is "empty" too).

        Returns:
            True without tensors.
        """
        return not self.tensors

    def __repr__(self) -> str:
        return f"<OptimizerRecord: {self.kind}, {len(self.tensors)} tensors, {len(self.scalars)} scalars>"

    def same_content(self, other: OptimizerRecord) -> bool:
        """Whether two records hold the same tensors (in order), scalars and metadata.

        Args:
            other: The record to compare with.

        Returns:
            True when they do.
        """
        return (
            len(self.tensors) == len(other.tensors)
            and all(a.same_content(b) for a, b in zip(self.tensors, other.tensors))
            and self.scalars == other.scalars
            and self.metadata == other.metadata
        )

    # -- Burn's reading rules ----------------------------------------------------------------
    @property
    def ranks(self) -> dict[int, int]:
        """``{param id: rank}`` exactly as ``load_record`` derives it: ``"<u64>.__rank"`` scalars
        that convert to ``usize``, then each tensor's rank for ids without one. Raises
        ``MissingParamIdError`` for a tensor without ``param_id``, where Burn panics.
        """
        ranks: dict[int, int] = {}
        suffix = "." + RANK_KEY
        for name, value in self.scalars.items():
            if name.endswith(suffix):
                pid = parse_u64(name[: -len(suffix)])
                rank = scalar_value("usize", value)
                if pid is not None and rank is not None:
                    ranks[pid] = rank
        for t in self.tensors:
            if t.param_id is None:
                raise MissingParamIdError(where=f"tensor {t.name!r}")
            ranks.setdefault(t.param_id, t.rank)
        return dict(sorted(ranks.items()))

    @property
    def param_ids(self) -> list[int]:
        """The parameter ids Burn's ``load_record`` visits (sorted)."""
        return list(self.ranks)

    @property
    def paths(self) -> dict[int, str]:
        """``{param id: module path}`` from the metadata keys that parse as u64."""
        out = {}
        for key, value in self.metadata.items():
            pid = parse_u64(key)
            if pid is not None:
                out[pid] = value
        return out

    def entries(self, param_id: int) -> ParamEntries:
        """Every tensor and scalar under ``"{param_id}."`` (keys relative to it), generically.

        Args:
            param_id: The parameter's id.

        Returns:
            Its entries.
        """
        return self.all_entries().get(int(param_id)) or ParamEntries(
            int(param_id), self.paths.get(int(param_id)), self.ranks.get(int(param_id)), {}, {}
        )

    def all_entries(self) -> dict[int, ParamEntries]:
        """``entries`` of every parameter id Burn visits, in one pass over the record.

        Returns:
            The entries by param id.
        """
        ranks, paths = self.ranks, self.paths
        out = {pid: ParamEntries(pid, paths.get(pid), rank, {}, {}) for pid, rank in ranks.items()}
        for t in self.tensors:
            head, _, leaf = t.name.partition(".")
            pid = parse_u64(head) if leaf else None
            entry = out.get(pid) if pid is not None else None
            if entry is not None and head == str(entry.param_id):
                entry.tensors[leaf] = t
        for key, value in self.scalars.items():
            head, _, leaf = key.partition(".")
            pid = parse_u64(head) if leaf and leaf != RANK_KEY else None
            entry = out.get(pid) if pid is not None else None
            if entry is not None and head == str(entry.param_id):
                entry.scalars[leaf] = value
        return out

    def _source(self) -> StateSource:
        return StateSource({t.name: t for t in self.tensors}, self.scalars)

    def state(self, param_id: int, cls: type[OptimizerState] | None = None) -> OptimizerState | None:
        """The typed state of one parameter, or None where Burn would drop it.

        Args:
            param_id: The parameter's id.
            cls: The state class to read (``AdamState``, …); by default the layout the entries match.

        Returns:
            The state, or None.

        Raises:
            StateRankError: A tensor's rank differs from ``__rank`` (Burn's tensor creation panics there).
        """
        entries = self.all_entries()
        if param_id not in entries:
            return None
        return self._state(entries[param_id], cls, self._source())

    def _state(self, entry: ParamEntries, cls: type[OptimizerState] | None, source: StateSource) -> OptimizerState | None:
        if cls is None:
            cls = detect_state_class(entry.leaf_names)
            if cls is None:
                return None
        state = cls.unflatten(str(entry.param_id), source)
        if state is not None:
            self._check_ranks(entry.param_id, entry.rank, state)
        return state

    def _check_ranks(self, param_id: int, rank: int | None, state: OptimizerState) -> None:
        for name, value in state.flatten(str(param_id))[0]:
            ndim = np.ndim(value)
            if ndim != rank:
                raise StateRankError(
                    f"tensor {name!r} has rank {ndim} but parameter {param_id} has __rank {rank}"
                )

    def missing_leaves(self, param_id: int, cls: type[OptimizerState]) -> list[str]:
        """Why ``state(param_id, cls)`` is None: the leaves that are missing or ill-typed.

        Args:
            param_id: The parameter's id.
            cls: The state class.

        Returns:
            The leaf names.
        """
        missing: list[str] = []
        unflatten(cls.schema(), str(param_id), self._source(), missing)
        return missing

    def states(self, cls: type[OptimizerState] | None = None) -> dict[int, OptimizerState]:
        """Every parameter's typed state Burn would rebuild (dropped ones left out).

        Args:
            cls: The state class to read; by default each parameter's matching layout.

        Returns:
            The states by param id.

        Raises:
            StateRankError: A tensor's rank differs from its ``__rank``.
        """
        out = {}
        source = self._source()
        for pid, entry in self.all_entries().items():
            state = self._state(entry, cls, source)
            if state is not None:
                out[pid] = state
        return out

    @property
    def kind(self) -> str:
        """``Adam/AdamW``, ``SGD``, ``SGD/Muon``, ``RMSProp``, ``AdaGrad``, ``Adan``, ``LBFGS``,
        ``empty``, ``unknown``, or several joined by ``+`` (parameter groups)."""
        if self.is_lbfgs():
            return "LBFGS"
        try:
            ids = self.param_ids
        except MissingParamIdError:
            return "unknown"
        if not ids:
            return "empty" if not self.tensors and not self.scalars else "unknown"
        kinds = sorted({entry.kind for entry in self.all_entries().values()})
        return "+".join(kinds)

    @property
    def step(self) -> int | None:
        """The optimizer's step count: the largest ``time`` (Adam/AdamW, Adan, AdaGrad) or
        LBFGS's ``g_iter``; None for layouts without one (SGD, RMSProp, Muon)."""
        if self.is_lbfgs():
            return scalar_value("usize", self.scalars.get("g_iter"))
        times = []
        for name, value in self.scalars.items():
            head, _, leaf = name.partition(".")
            if parse_u64(head) is not None and leaf in ("momentum.time", "lr_decay.time"):
                v = scalar_value("usize", value)
                if v is not None:
                    times.append(v)
        return max(times) if times else None

    # -- building and editing ----------------------------------------------------------------
    @classmethod
    def from_states(
        cls,
        states: Mapping[int | str, OptimizerState],
        *,
        module: ModuleRecord | None = None,
        paths: Mapping[int, str] | None = None,
        ranks: Mapping[int, int] | None = None,
    ) -> OptimizerRecord:
        """A record of per-parameter states.

        Args:
            states: The states, keyed by param id or — with ``module`` — by module path.
            module: A ``ModuleRecord`` giving ids, paths and ranks for paths.
            paths: Parameter paths by id (the metadata), without ``module``.
            ranks: Ranks by id, for states without tensors.

        Returns:
            The record.

        Raises:
            KeyError: A state's path is not in ``module``.
        """
        record = cls()
        added: set[int] = set()
        by_path = module.param_ids if module is not None else {}
        shapes = {t.name: t.shape for t in module.tensors} if module is not None else {}
        by_id = {i: p for p, i in by_path.items()}
        path: str | None
        rank: int | None
        for key, state in states.items():
            if isinstance(key, str):
                if key not in by_path:
                    raise KeyError(f"no parameter {key!r} in the module record")
                pid, path, rank = by_path[key], key, len(shapes[key])
            else:
                pid = _check_id(key)
                path = (paths or {}).get(pid)
                rank = (ranks or {}).get(pid)
                if module is not None and path is None:
                    path = by_id.get(pid)
                if rank is None and path in shapes:
                    rank = len(shapes[path])
            pid = _check_id(pid)
            if pid in added:
                record.set_state(pid, state, path=path, rank=rank)
            else:
                record._add_state(pid, record._plan_state(pid, state, rank), path)
                added.add(pid)
        return record

    def set_state(self, param_id: int, state: OptimizerState, *, path: str | None = None, rank: int | None = None) -> OptimizerRecord:
        """Replace the state of ``param_id`` (tensors, scalars, ``__rank``, path).

        Args:
            param_id: The parameter's id.
            state: Its new state.
            path: Its path; by default the existing one.
            rank: Its rank; by default the existing ``__rank``, else the state tensors' rank (a state
                without tensors, SGD without momentum, needs it).

        Returns:
            This record, changed.
        """
        param_id = _check_id(param_id)
        if rank is None:
            rank = self._existing_rank(param_id)
        if path is None:
            path = self.metadata.get(str(param_id))
        planned = self._plan_state(param_id, state, rank)
        self.remove_state(param_id)
        self._add_state(param_id, planned, path)
        return self

    def _existing_rank(self, param_id: int) -> int | None:
        key = f"{param_id}.{RANK_KEY}"
        if key in self.scalars:
            return scalar_value("usize", self.scalars[key])
        return next((t.rank for t in self.tensors if t.param_id == param_id), None)

    def _plan_state(self, param_id: int, state: OptimizerState, rank: int | None) -> tuple:
        if isinstance(state, LBFGSState):
            raise TypeError("LBFGS keeps one global state: use OptimizerRecord.from_lbfgs")
        if not isinstance(state, OptimizerState):
            raise TypeError(f"expected an OptimizerState (AdamState, SgdState, ...), got {type(state).__name__}")
        tensors, scalars = state.flatten(str(param_id))
        arrays = [(name, value if isinstance(value, Tensor) else as_numpy(value)) for name, value in tensors]
        if rank is None and arrays:
            rank = _ndim(arrays[0][1])
        if rank is None:
            raise ValueError(f"parameter {param_id}: give rank= (its state has no tensor to take it from)")
        for name, value in arrays:
            if _ndim(value) != rank:
                raise StateRankError(f"tensor {name!r} has rank {_ndim(value)} but parameter {param_id} has __rank {rank}")
        return arrays, scalars, int(rank)

    def _add_state(self, param_id: int, planned: tuple, path: str | None) -> None:
        arrays, scalars, rank = planned
        prefix = str(param_id)
        self.tensors.extend(_record_tensor(name, value, param_id) for name, value in arrays)
        self.scalars[f"{prefix}.{RANK_KEY}"] = Scalar.UInt(rank)
        self.scalars.update(scalars)
        if path is not None:
            self.metadata[prefix] = path

    def remove_state(self, param_id: int) -> OptimizerRecord:
        """Drop every tensor, scalar and the metadata of ``param_id``.

        Args:
            param_id: The parameter's id.

        Returns:
            This record, changed.
        """
        head = f"{int(param_id)}."
        self.tensors = [t for t in self.tensors if not t.name.startswith(head)]
        self.scalars = {k: v for k, v in self.scalars.items() if not k.startswith(head)}
        self.metadata.pop(str(int(param_id)), None)
        return self

    # -- LBFGS -------------------------------------------------------------------------------
    def is_lbfgs(self) -> bool:
        """Whether this is LBFGS's global layout (``g_iter`` and the history lengths, no id prefixes).

        Returns:
            True for LBFGS.
        """
        return "g_iter" in self.scalars and "history_s.len" in self.scalars

    @classmethod
    def from_lbfgs(cls, state: LBFGSState) -> OptimizerRecord:
        """``LBFGS::to_record``: the state flattened without prefix, tensors without ``param_id``.

        Args:
            state: The L-BFGS state.

        Returns:
            The record.
        """
        tensors, scalars = state.flatten("")
        return cls([_record_tensor(name, value, None) for name, value in tensors], dict(scalars))

    def lbfgs(self) -> LBFGSState | None:
        """``LBFGS::load_record``'s view: the global state, or None where Burn keeps its own.

        Returns:
            The state, or None.
        """
        state = LBFGSState.unflatten("", self._source())
        assert state is None or isinstance(state, LBFGSState)
        return state

    # -- consistency with a model record -------------------------------------------------------
    def check(self, model: ModuleRecord) -> ConsistencyReport:
        """Compare with a ``ModuleRecord``: ids only on one side, rank, shape and path mismatches.

        Args:
            model: The model's record.

        Returns:
            The report.
        """
        report = ConsistencyReport()
        model_by_id = {t.param_id: t for t in model.tensors}
        entries = self.all_entries()
        for pid, param in model_by_id.items():
            if pid not in entries:
                report.only_in_model.append((pid, param.name))
        for pid, entry in entries.items():
            target = model_by_id.get(pid)
            if target is None:
                report.only_in_optimizer.append((pid, entry.path))
                continue
            if entry.rank != target.rank:
                report.rank_mismatches.append((pid, target.name, target.rank, entry.rank))
            if entry.path is not None and entry.path != target.name:
                report.path_mismatches.append((pid, target.name, entry.path))
            for t in entry.tensors.values():
                if t.shape != target.shape:
                    report.shape_mismatches.append((pid, t.name, target.shape, t.shape))
        return report

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self.tensors)


def _check_id(param_id: Any) -> int:
    if isinstance(param_id, bool) or not isinstance(param_id, (int, np.integer)) or not 0 <= param_id < 1 << 64:
        raise ValueError(f"param id {param_id!r} is not a u64")
    return int(param_id)


def _ndim(value: Any) -> int:
    return value.rank if isinstance(value, Tensor) else int(np.ndim(value))


def _record_tensor(name: str, value: Any, param_id: int | None) -> Tensor:
    if isinstance(value, Tensor):
        return value.with_name(name, param_id=param_id)
    return Tensor.from_numpy(name, value, param_id=param_id)

