"""``LrSchedulerRecord``: learning-rate scheduler state as typed scalars (burn-optim ``lr_scheduler/``).

A scheduler record is a pack with no tensors and no metadata, only scalars: an empty record (a
constant learning rate) is the 256-byte file. Each scheduler flattens its state with an empty
prefix; composed and sequential schedulers nest their children under ``"{index}."``; and every
public ``XxxConfig::init()`` returns a ``ModuleLrScheduler``, which nests each parameter group's
scheduler under its group index — so files Burn writes start with ``"0."``.

======================  ====================  ========  ===================================
scheduler               key                   Scalar    value after ``build()``
======================  ====================  ========  ===================================
constant                (none)                –         –
linear                  ``remaining_iters``   UInt      ``num_iters + 1``
cosine annealing        ``current_iter``      UInt      ``2**64 - 1`` (wraps to 0 on step 1)
exponential             ``previous_lr``       Float     ``initial_lr / gamma``
step                    ``iter_idx``          Int       ``-1``
noam                    ``step``              Float     ``0.0``
composed                children ``{i}.``     –         –
sequential              ``step`` + ``{i}.``   UInt      ``0``
======================  ====================  ========  ===================================

Loading ignores what it cannot use: a missing or ill-typed key leaves that scheduler unchanged,
silently (``record.into_state()`` returns None). The helpers' :meth:`LrScheduler.missing` reports
those keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..codec._generated.metadata import Scalar
from ..codec._cbor import U64_MAX
from ..core.limits import lift
from ..errors import SchedulerLayoutError
from ..core.source import FileSource
from ._common import INT_RANGES, open_pack, scalar_for, scalar_value
from .state import join_path

if TYPE_CHECKING:
    from ..core.writer import Writer

PathLike = str | os.PathLike[str]


class LrSchedulerRecord:
    """Named typed scalars (Burn's ``LrSchedulerRecord``); nothing else is stored or read.

    Args:
        scalars: The scalars by key.
    """

    def __init__(self, scalars: Mapping[str, Scalar] | None = None) -> None:
        self.scalars: dict[str, Scalar] = dict(sorted((scalars or {}).items()))

    # -- Burn's API ----------------------------------------------------------------------------
    @classmethod
    def new(cls) -> LrSchedulerRecord:
        """Burn's ``LrSchedulerRecord::new``: an empty record.

        Returns:
            The record.
        """
        return cls()

    def is_empty(self) -> bool:
        """Whether the record has no scalar.

        Returns:
            True when empty.
        """
        return not self.scalars

    def __len__(self) -> int:
        return len(self.scalars)

    def __iter__(self) -> Iterator[str]:
        return iter(self.scalars)

    def __contains__(self, key: object) -> bool:
        return key in self.scalars

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LrSchedulerRecord) and self.scalars == other.scalars

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={v!r}" for k, v in self.scalars.items())
        return f"LrSchedulerRecord({{{items}}})"

    def with_scalar(self, key: str, value: Scalar | Any, rust_type: str | None = None) -> LrSchedulerRecord:
        """A copy with ``key`` set.

        Args:
            key: The key.
            value: A ``Scalar``, or a value converted as a ``rust_type`` field would be.
            rust_type: The Rust type of the field (``usize`` → UInt, ``i32`` → Int, ``f64`` → Float,
                ``bool`` → Bool); needed unless ``value`` is a ``Scalar``.

        Returns:
            The new record.

        Raises:
            TypeError: ``value`` is not a ``Scalar`` and no ``rust_type`` is given.
        """
        if not isinstance(value, Scalar):
            if rust_type is None:
                raise TypeError("give a burnpack.Scalar or the Rust type of the value (rust_type='usize', ...)")
            value = scalar_for(rust_type, value)
        from ..core.writer import as_scalar

        return LrSchedulerRecord({**self.scalars, key: as_scalar(key, value)})

    def scalar(self, key: str, rust_type: str = "f64") -> Any:
        """The value under ``key`` converted as Burn's ``TryFrom<Scalar>`` for ``rust_type``.

        Args:
            key: The key.
            rust_type: The Rust type to convert to (``usize``, ``i32``, ``f64``, ``bool``).

        Returns:
            The value, or None when absent or not convertible.
        """
        return scalar_value(rust_type, self.scalars.get(key))

    def with_record(self, prefix: str, record: LrSchedulerRecord) -> LrSchedulerRecord:
        """A copy with ``record``'s scalars merged under ``"{prefix}."``.

        Args:
            prefix: The child's key prefix.
            record: The child record.

        Returns:
            The new record.
        """
        merged = dict(self.scalars)
        for key, value in record.scalars.items():
            merged[join_path(prefix, key)] = value
        return LrSchedulerRecord(merged)

    def record(self, prefix: str) -> LrSchedulerRecord:
        """The child record merged under ``"{prefix}."`` (the prefix stripped).

        Args:
            prefix: The child's key prefix.

        Returns:
            The child record.
        """
        head = join_path(prefix, "")
        return LrSchedulerRecord({k[len(head):]: v for k, v in self.scalars.items() if k.startswith(head)})

    # -- I/O -------------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> LrSchedulerRecord:
        """The scalars of a pack (tensors and metadata are ignored, as in Burn).

        Args:
            data: The pack's bytes.

        Returns:
            The record.

        Raises:
            BurnpackError: The bytes are not a valid pack.
        """
        with open_pack(data) as pack:
            return cls(pack.scalars)

    @classmethod
    def load(cls, path: PathLike | FileSource) -> LrSchedulerRecord:
        """Burn's ``LrSchedulerRecord::load``: the scalars of a file (``.bpk`` appended when the
        extensionless path is absent).

        Args:
            path: The file, or a file opened already (a ``FileSource``).

        Returns:
            The record.

        Raises:
            BurnpackError: The file is not a valid pack, or cannot be read.
        """
        with open_pack(path) as pack:
            return cls(pack.scalars)

    def _writer(self) -> Writer:
        from ..core.writer import Writer  # imported when a record is written: reading one (inspect) needs no writer

        return Writer([], scalars=self.scalars)

    def into_bytes(self) -> bytes:
        """The pack Burn's ``into_bytes`` writes: the scalars, no tensors.

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
            BurnpackError: The record cannot be written.
        """
        return self._writer().write_atomic(path)

    # -- typed helpers -----------------------------------------------------------------------------
    @classmethod
    def from_scheduler(cls, scheduler: LrScheduler) -> LrSchedulerRecord:
        """``scheduler.to_record()``: the scheduler's state, its children nested under ``{i}.``.

        Args:
            scheduler: The scheduler.

        Returns:
            The record.
        """
        return scheduler.to_record()

    @classmethod
    def from_state(cls, state: LrScheduler) -> LrSchedulerRecord:
        """Burn's ``LrSchedulerRecord::from_state``: one scheduler's own state, without children.

        Args:
            state: The scheduler.

        Returns:
            The record.
        """
        record = cls()
        if state.KEY is not None:
            record = record.with_scalar(state.KEY, getattr(state, state.ATTR), state.RUST_TYPE)
        return record

    def into_state(self, cls: type[LrScheduler]) -> LrScheduler | None:
        """Burn's ``into_state``: a scheduler's own state read from the top-level keys (children are not read).

        Args:
            cls: The scheduler class.

        Returns:
            The scheduler, or None when its key is missing or of an incompatible kind.
        """
        if cls.KEY is None:
            return cls()
        value = self.scalar(cls.KEY, cls.RUST_TYPE)
        return None if value is None else cls(**{cls.ATTR: value})

    def infer(self, *, module: bool = True) -> LrScheduler:
        """A best-effort scheduler tree for these scalars (see ``infer_scheduler``).

        Args:
            module: Read the top level as a ``ModuleLrScheduler`` (what Burn's learner saves).

        Returns:
            The scheduler tree.

        Raises:
            SchedulerLayoutError: A key fits no scheduler layout.
        """
        return infer_scheduler(self, module=module)


# --------------------------------------------------------------------------------------------
# Typed scheduler states
# --------------------------------------------------------------------------------------------
class LrScheduler:
    """Base of the typed scheduler states: ``to_record``, ``load_record`` and ``missing``."""

    KEY: ClassVar[str | None] = None
    RUST_TYPE: ClassVar[str] = "usize"
    ATTR: ClassVar[str] = ""
    KIND: ClassVar[str] = ""

    def to_record(self) -> LrSchedulerRecord:
        """Burn's ``to_record``: this scheduler's state (and its children's) as a record.

        Returns:
            The record.
        """
        record = LrSchedulerRecord()
        if self.KEY is not None:
            record = record.with_scalar(self.KEY, getattr(self, self.ATTR), self.RUST_TYPE)
        return record

    def load_record(self, record: LrSchedulerRecord) -> LrScheduler:
        """A copy updated from ``record``; a missing or ill-typed key leaves the value (as Burn does).

        Args:
            record: The record to read.

        Returns:
            The updated copy.
        """
        if self.KEY is None:
            return self
        value = record.scalar(self.KEY, self.RUST_TYPE)
        return self if value is None else replace(self, **{self.ATTR: value})  # type: ignore[type-var]  # subclasses are dataclasses

    def missing(self, record: LrSchedulerRecord, prefix: str = "") -> list[str]:
        """The keys ``load_record`` would not find (missing or of an incompatible kind).

        Args:
            record: The record to read.
            prefix: The key prefix of this scheduler in the record.

        Returns:
            The full keys.
        """
        if self.KEY is not None and record.scalar(self.KEY, self.RUST_TYPE) is None:
            return [join_path(prefix, self.KEY)]
        return []

    def describe(self) -> str:
        """A short human form: the kind and its state (``linear remaining_iters=11``).

        Returns:
            The description.
        """
        if self.KEY is None:
            return self.KIND
        return f"{self.KIND} {self.KEY}={getattr(self, self.ATTR)!r}"

    def explain(self) -> str:
        """The state in words, as burn-optim's ``step()`` reads it: what a value such as ``u64::MAX``
        means for this scheduler (``describe`` gives the key and raw value).

        Returns:
            One line.
        """
        return self.describe()


@dataclass
class ConstantLr(LrScheduler):
    """A constant learning rate (Burn's ``f64`` / ``ConstantLr``): an empty record."""

    KIND = "constant"

    def explain(self) -> str:
        """A constant rate has no state.

        Returns:
            One line.
        """
        return "constant rate (no state)"


@dataclass
class LinearLrScheduler(LrScheduler):
    """``LinearLrSchedulerState { remaining_iters: usize }``.

    Args:
        remaining_iters: The iterations left.
    """

    remaining_iters: int
    KEY, RUST_TYPE, ATTR, KIND = "remaining_iters", "usize", "remaining_iters", "linear"

    @classmethod
    def initial(cls, num_iters: int) -> LinearLrScheduler:
        """The state ``LinearLrSchedulerConfig::build`` starts from: ``num_iters + 1``.

        Args:
            num_iters: The config's number of iterations.

        Returns:
            The scheduler.
        """
        return cls(num_iters + 1)

    def explain(self) -> str:
        # step() counts remaining_iters down to 0, where it stays; each step's rate is
        # final_lr - step_size * remaining_iters, so 0 is the final rate.
        """The iterations left, and whether the final rate is reached.

        Returns:
            One line.
        """
        left = self.remaining_iters
        if left == 0:
            return "linear: at the final rate"
        if left == U64_MAX:
            return "linear: u64::MAX steps to the final rate (num_iters = u64::MAX - 1): never reached"
        return f"linear: final rate in {left:,} step{'' if left == 1 else 's'}"


@dataclass
class CosineAnnealingLrScheduler(LrScheduler):
    """``CosineAnnealingLrSchedulerState { current_iter: usize }``; starts at ``usize::MAX``.

    Args:
        current_iter: The current iteration.
    """

    current_iter: int = U64_MAX
    KEY, RUST_TYPE, ATTR, KIND = "current_iter", "usize", "current_iter", "cosine"

    @classmethod
    def initial(cls) -> CosineAnnealingLrScheduler:
        """The state Burn's ``build`` starts from.

        Returns:
            The scheduler at ``current_iter = usize::MAX``.
        """
        return cls(U64_MAX)

    def explain(self) -> str:
        # step() wrapping_adds 1, then takes the rate at current_iter: usize::MAX (u64::MAX in
        # the record of a 64-bit build) is the state before the first step, which wraps it to 0.
        """The current iteration, or that the scheduler has not stepped yet (``u64::MAX``).

        Returns:
            One line.
        """
        if self.current_iter == U64_MAX:
            return "cosine annealing: not stepped yet (u64::MAX, which the first step wraps to iteration 0)"
        steps = self.current_iter + 1
        return f"cosine annealing: {steps:,} step{'' if steps == 1 else 's'} taken (at iteration {self.current_iter:,})"


@dataclass
class ExponentialLrScheduler(LrScheduler):
    """``ExponentialLrSchedulerState { previous_lr: f64 }``.

    Args:
        previous_lr: The last learning rate.
    """

    previous_lr: float
    KEY, RUST_TYPE, ATTR, KIND = "previous_lr", "f64", "previous_lr", "exponential"

    @classmethod
    def initial(cls, initial_lr: float, gamma: float) -> ExponentialLrScheduler:
        """The state ``build`` starts from: ``initial_lr / gamma``.

        Args:
            initial_lr: The config's initial learning rate.
            gamma: The config's decay factor.

        Returns:
            The scheduler.
        """
        return cls(initial_lr / gamma)

    def explain(self) -> str:
        """The last rate (the next is it times gamma).

        Returns:
            One line.
        """
        return f"exponential: last rate {self.previous_lr:.6g} (the next is it times gamma)"


@dataclass
class StepLrScheduler(LrScheduler):
    """``StepLrSchedulerState { iter_idx: i32 }`` (an ``Int``); starts at ``-1``.

    Args:
        iter_idx: The iteration index.
    """

    iter_idx: int = -1
    KEY, RUST_TYPE, ATTR, KIND = "iter_idx", "i32", "iter_idx", "step"

    @classmethod
    def initial(cls) -> StepLrScheduler:
        """The state Burn's ``build`` starts from.

        Returns:
            The scheduler at ``iter_idx = -1``.
        """
        return cls(-1)

    def explain(self) -> str:
        # step() checked_adds 1 to iter_idx (an i32), panicking past i32::MAX.
        """The iteration index, or that the scheduler has not stepped yet (-1) or cannot step again (``i32::MAX``).

        Returns:
            One line.
        """
        if self.iter_idx == -1:
            return "step: not stepped yet (-1, which the first step makes 0)"
        if self.iter_idx == INT_RANGES["i32"][1]:
            return "step: i32::MAX steps taken: Burn's next step panics (the counter would overflow)"
        steps = self.iter_idx + 1
        return f"step: {steps:,} step{'' if steps == 1 else 's'} taken"


@dataclass
class NoamLrScheduler(LrScheduler):
    """``NoamLrSchedulerState { step: f64 }``; starts at ``0.0``.

    Args:
        step: The step count.
    """

    step: float = 0.0
    KEY, RUST_TYPE, ATTR, KIND = "step", "f64", "step", "noam"

    @classmethod
    def initial(cls) -> NoamLrScheduler:
        """The state Burn's ``build`` starts from.

        Returns:
            The scheduler at step 0.
        """
        return cls(0.0)

    def explain(self) -> str:
        """The steps taken.

        Returns:
            One line.
        """
        return "noam: not stepped yet" if self.step == 0 else f"noam: {self.step:g} steps taken"


@dataclass
class _Nested(LrScheduler):
    schedulers: list[LrScheduler] = field(default_factory=list)

    def _children_record(self, record: LrSchedulerRecord) -> LrSchedulerRecord:
        for index, child in enumerate(self.schedulers):
            record = record.with_record(str(index), child.to_record())
        return record

    def to_record(self) -> LrSchedulerRecord:
        return self._children_record(super().to_record())

    def load_record(self, record: LrSchedulerRecord) -> LrScheduler:
        loaded = super().load_record(record)
        children = [child.load_record(record.record(str(i))) for i, child in enumerate(self.schedulers)]
        return replace(loaded, schedulers=children)  # type: ignore[type-var]  # a dataclass, as its subclasses

    def missing(self, record: LrSchedulerRecord, prefix: str = "") -> list[str]:
        out = super().missing(record, prefix)
        for i, child in enumerate(self.schedulers):
            out.extend(child.missing(record.record(str(i)), join_path(prefix, str(i))))
        return out

    def describe(self) -> str:
        head = super().describe()
        parts = [f"{i}: {child.describe()}" for i, child in enumerate(self.schedulers)]
        return f"{head} [{'; '.join(parts)}]"

    def explain(self) -> str:
        parts = "; ".join(f"scheduler {i}: {child.explain()}" for i, child in enumerate(self.schedulers))
        return f"{self._explain_own()} [{parts or 'no schedulers'}]"

    def _explain_own(self) -> str:
        return self.KIND


@dataclass
class ComposedLrScheduler(_Nested):
    """Burn's composed scheduler: children under ``"{index}."``; no state of its own.

    Args:
        schedulers: The children, in order.
    """

    KIND = "composed"


@dataclass
class SequentialLrScheduler(_Nested):
    """``SequentialLrSchedulerState { step: usize }`` plus children under ``"{index}."``.

    Args:
        schedulers: The children, in order.
        step: The step count.
    """

    step: int = 0
    KEY, RUST_TYPE, ATTR, KIND = "step", "usize", "step", "sequential"

    def _explain_own(self) -> str:
        # step() checked_adds 1 to step (a usize) after each step, panicking on overflow.
        if self.step == U64_MAX:
            return "sequential: u64::MAX steps taken: Burn's next step panics (the counter would overflow)"
        return f"sequential: {self.step:,} step{'' if self.step == 1 else 's'} taken"


@dataclass
class ModuleLrScheduler(_Nested):
    """What every ``XxxConfig::init()`` returns: group ``i``'s scheduler under ``"{i}."``.

    Group 0 is the base scheduler; further groups come from ``with_group``.

    Args:
        schedulers: Each group's scheduler.
    """

    KIND = "module"

    def explain(self) -> str:
        """Each group's scheduler, explained.

        Returns:
            The groups' explanations.
        """
        return "; ".join(f"group {i}: {child.explain()}" for i, child in enumerate(self.schedulers)) or "no groups"

    @classmethod
    def of(cls, *groups: LrScheduler) -> ModuleLrScheduler:
        """A module scheduler of the groups given.

        Args:
            *groups: Each group's scheduler, group 0 first.

        Returns:
            The module scheduler.
        """
        return cls(list(groups))


SCHEDULER_KINDS: dict[str, type[LrScheduler]] = {
    "constant": ConstantLr,
    "linear": LinearLrScheduler,
    "cosine": CosineAnnealingLrScheduler,
    "exponential": ExponentialLrScheduler,
    "step": StepLrScheduler,
    "noam": NoamLrScheduler,
    "composed": ComposedLrScheduler,
    "sequential": SequentialLrScheduler,
    "module": ModuleLrScheduler,
}


MAX_SCHEDULER_CHILDREN = 1 << 16
"""Child schedulers :func:`infer_scheduler` builds in a whole tree at most (``max_children``):
constant children write no keys, so one key's index stands for every constant child before it."""


def infer_scheduler(record: LrSchedulerRecord, *, module: bool = True, max_children: int = MAX_SCHEDULER_CHILDREN) -> LrScheduler:
    """Rebuild a scheduler tree from a record's keys, as far as the keys tell.

    Keys cannot tell a constant scheduler from a missing one, so gaps in child indices become
    ``ConstantLr`` and trailing constant children are invisible; a composed scheduler with one
    child and a module scheduler with one group look the same. The work follows the keys
    present and ``max_children``, not the indices a file claims.

    Args:
        record: The record.
        module: Read the top level as a ``ModuleLrScheduler`` (what Burn's learner saves).
        max_children: The most child schedulers accepted (an index a key names counts every
            child before it).

    Returns:
        The scheduler tree.

    Raises:
        SchedulerLayoutError: A key fits no layout, or the tree has more than ``max_children``
            children (a ``ValueError``).
    """
    return _infer(record.scalars, module, [max_children], max_children)


def _infer(scalars: Mapping[str, Scalar], module: bool, budget: list[int], max_children: int) -> LrScheduler:
    own: dict[str, Scalar] = {}
    below: dict[int, dict[str, Scalar]] = {}
    others = []
    for key, value in scalars.items():
        head, dot, rest = key.partition(".")
        if not dot:
            own[key] = value
        elif head.isascii() and head.isdigit() and str(int(head)) == head:  # a child index as Burn writes it
            below.setdefault(int(head), {})[rest] = value
        else:
            others.append(key)
    if others:
        raise SchedulerLayoutError(f"keys that no Burn scheduler writes: {others}")
    count = max(below) + 1 if below else 0
    budget[0] -= count
    if budget[0] < 0:
        raise SchedulerLayoutError(
            f"more than {max_children} child schedulers (a key names child {count - 1}): {lift('max_children', max_children)}"
        )
    children = [_infer(below[i], False, budget, max_children) if i in below else ConstantLr() for i in range(count)]
    if module:
        if own:
            raise SchedulerLayoutError(f"a module scheduler has no keys of its own, found {sorted(own)}")
        return ModuleLrScheduler(children)
    if children:
        if set(own) == {"step"}:
            return SequentialLrScheduler(children, step=scalar_value("usize", own["step"]) or 0)
        if own:
            raise SchedulerLayoutError(f"unexpected keys beside child schedulers: {sorted(own)}")
        return ComposedLrScheduler(children)
    if not own:
        return ConstantLr()
    if len(own) != 1:
        raise SchedulerLayoutError(f"more than one scheduler key at one level: {sorted(own)}")
    (key, value), = own.items()
    for cls in (LinearLrScheduler, CosineAnnealingLrScheduler, ExponentialLrScheduler, StepLrScheduler):
        if key == cls.KEY:
            loaded = LrSchedulerRecord(own).scalar(key, cls.RUST_TYPE)
            if loaded is None:
                raise SchedulerLayoutError(f"{key}: {value!r} is not a {cls.RUST_TYPE}")
            return cls(loaded)
    if key == "step":
        if value.is_float:
            return NoamLrScheduler(value.value)
        # A UInt `step` alone: a sequential scheduler whose children are all constant.
        return SequentialLrScheduler([], step=scalar_value("usize", value) or 0)
    raise SchedulerLayoutError(f"no Burn scheduler writes the key {key!r}")

