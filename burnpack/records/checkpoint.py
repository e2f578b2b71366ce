"""Learner checkpoint directories (burn-train ``src/checkpoint/``).

With ``with_default_checkpointers()`` a Burn learner writes, after epoch ``N`` (1-based), three
files into ``<artifact_dir>/checkpoint/``: ``model-N.bpk`` (a ``ModuleRecord``), ``optim-N.bpk``
(an ``OptimizerRecord``) and ``scheduler-N.bpk`` (an ``LrSchedulerRecord`` of a
``ModuleLrScheduler``, keys under ``0.``). Resuming with ``.checkpoint(N)`` restores the three
files of epoch ``N`` and continues at ``N + 1``.

Retention: the default strategy composes ``KeepLastNCheckpoints(2)`` with a
``MetricCheckpointingStrategy`` keeping the epoch of lowest mean validation loss; an epoch's files
are deleted only once *every* strategy has dropped it — the last two epochs plus the best one
stay. Both strategies and their composition are ported as they are (they are stateful, like the
learner's), and ``Checkpoints`` applies them on every ``Checkpoints.save_epoch``.

Restarts: the strategies' state depends on every epoch seen so far (Burn rebuilds it from the
metric logs it wrote). ``Checkpoints`` records what each ``save_epoch`` was told in
``retention.json`` beside the checkpoints, *before* it saves or deletes anything, and a fresh
object replays that record through its strategy, so a resumed run keeps exactly the epochs an
uninterrupted run keeps. Saving an epoch already recorded (resuming from an earlier checkpoint)
forgets the record from that epoch on, as the learner re-runs those epochs. Without that file, the
record comes from Burn's own validation logs (``burn_valid_losses``), when there are any.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..core.atomic import atomic_file
from ..errors import BurnpackError, CheckpointRetentionError, IoError, OptionError
from ..core.sidefile import SIDE_FILE_MAX_BYTES, parse_json, read_side_file
from ..core.source import FileSource, Folder
from .module import ModuleRecord
from .optimizer import OptimizerRecord
from .scheduler import LrSchedulerRecord

if TYPE_CHECKING:  # pragma: no cover
    from ..core.reader import Pack

PathLike = str | os.PathLike[str]
RECORD_NAMES = ("model", "optim", "scheduler")
Record = ModuleRecord | OptimizerRecord | LrSchedulerRecord
"""A record a learner checkpoints."""
RECORD_TYPES: dict[str, type[Record]] = {"model": ModuleRecord, "optim": OptimizerRecord, "scheduler": LrSchedulerRecord}
_FILE = re.compile(r"^(?P<name>.+)-(?P<epoch>0|[1-9][0-9]*)\.bpk$")
_F64_MAX = 1.7976931348623157e308
RETENTION_FILE = "retention.json"
_RETENTION_FORMAT = "burnpack-checkpoint-retention/1"


# --------------------------------------------------------------------------------------------
# Strategies (burn-train checkpoint/strategy/*.rs)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckpointingAction:
    """What a checkpointing strategy asks for: ``Save`` (the current epoch) or ``Delete(epoch)``.

    Args:
        kind: ``"save"`` or ``"delete"``.
        epoch: The epoch to delete; None for a save.
    """

    kind: str
    epoch: int | None = None

    @classmethod
    def save(cls) -> CheckpointingAction:
        """Burn's ``CheckpointingAction::Save``.

        Returns:
            The action.
        """
        return cls("save")

    @classmethod
    def delete(cls, epoch: int) -> CheckpointingAction:
        """Burn's ``CheckpointingAction::Delete(epoch)``.

        Args:
            epoch: The epoch to delete.

        Returns:
            The action.
        """
        return cls("delete", epoch)

    def __repr__(self) -> str:
        return "Save" if self.kind == "save" else f"Delete({self.epoch})"


class MetricHistory(Protocol):
    def find_epoch(self) -> int | None:
        """The best epoch so far, or None when the metric was never logged."""


class CheckpointingStrategy(Protocol):
    """Burn's ``CheckpointingStrategy``: after each epoch, which checkpoints to save and delete
    (``KeepLastNCheckpoints``, ``MetricCheckpointingStrategy``, their composition, or
    a caller's own).
    """

    def checkpointing(self, epoch: int, history: MetricHistory) -> list[CheckpointingAction]:
        """The actions after ``epoch``, given the metric ``history`` so far.

        Args:
            epoch: The epoch just finished.
            history: The metric history so far.

        Returns:
            The checkpoints to save and delete, in order.
        """
        ...


class LossHistory:
    """Mean validation loss per epoch, and Burn's ``find_epoch`` over it (``Direction::Lowest``).

    Like Burn's event store, it scans epochs 1, 2, ... until the first epoch without a value and
    returns the first strict minimum. The scan resumes where the last one stopped, so asking
    after each of ``n`` epochs added with ``record`` costs ``O(n)`` in all (a changed epoch
    already scanned starts the scan over).

    Args:
        losses: The losses by epoch so far.
        best: Overrides the answer (the caller says which epoch is best).
    """

    def __init__(self, losses: Mapping[int, float] | None = None, best: int | None = None) -> None:
        self._losses: dict[int, float] = dict(losses or {})
        self.best = best
        self._restart()

    @property
    def losses(self) -> Mapping[int, float]:
        """Epoch → loss (read-only: add with ``record``)."""
        return MappingProxyType(self._losses)

    def record(self, epoch: int, loss: float) -> None:
        """Set the loss of ``epoch``.

        Args:
            epoch: The epoch.
            loss: Its mean validation loss.
        """
        if epoch <= self._scanned:
            self._restart()
        self._losses[epoch] = loss

    def _restart(self) -> None:
        self._scanned = 0  # epochs 1..scanned are taken into current / found
        self._current = _F64_MAX
        self._found: int | None = None

    def find_epoch(self) -> int | None:
        """Burn's ``find_epoch``: the epoch of lowest loss (the first strict minimum).

        Returns:
            The epoch, or None without losses.
        """
        if self.best is not None:
            return self.best
        while self._scanned + 1 in self._losses:
            self._scanned += 1
            value = float(self._losses[self._scanned])
            if value < self._current:
                self._current, self._found = value, self._scanned
        if not self._scanned:
            return None
        # Burn leaves current_epoch past the data when nothing beats f64::MAX
        return self._found if self._found is not None else self._scanned + 1


def burn_valid_losses(
    artifact_dir: PathLike, metric: str = "Loss", *, split: str = "valid", max_bytes: int = SIDE_FILE_MAX_BYTES
) -> dict[int, float]:
    """The per-epoch value of ``metric`` a Burn learner's ``FileMetricLogger`` wrote.

    ``<artifact_dir>/<split>/epoch-N/<metric>.log`` holds one ``NumericEntry`` per line (``v``,
    ``v,count`` or ``v,final``); the epoch's value is the last line when it is ``final``, else
    the count-weighted mean, as burn-train's ``NumericMetricsAggregate`` computes it. Epochs are
    read from 1 up to the first without values.

    Args:
        artifact_dir: The learner's artifact directory; the logs are read only from inside it
            (``burnpack.core.source.Folder``).
        metric: The metric's name (``Loss``).
        split: ``"valid"``, ``"train"`` or ``"test"``.
        max_bytes: The largest log read (64 MiB by default).

    Returns:
        The values by epoch.

    Raises:
        ValueError: ``split`` is not one of Burn's splits.
        CheckpointRetentionError: A line Burn cannot parse (Burn panics), named but not quoted (the
            log is a file the caller did not name); a log that is not UTF-8, not a regular file
            inside ``artifact_dir``, or holds more than ``max_bytes``.
    """
    if split not in ("train", "valid", "test"):
        raise OptionError(f"split must be 'train', 'valid' or 'test' (Burn's splits), not {split!r}")
    out: dict[int, float] = {}
    folder = Folder(artifact_dir)
    epoch = 1
    while True:
        path = Path(artifact_dir) / split / f"epoch-{epoch}" / f"{metric.replace(' ', '_')}.log"
        try:
            raw = read_side_file(path, max_bytes=max_bytes, folder=folder)
        except FileNotFoundError:
            return out
        except OSError as exc:
            raise CheckpointRetentionError(f"cannot read Burn's metric log: {exc}", where=str(path)) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointRetentionError(f"Burn's metric log is not UTF-8 text (byte {exc.start})", where=str(path)) from None
        lines = [(number, line) for number, line in enumerate(text.split("\n"), 1) if line]
        if not lines:
            return out
        entries = []
        for number, line in lines:
            try:
                entries.append(_numeric_entry(line))
            except ValueError as exc:
                raise CheckpointRetentionError(
                    f"line {number} of Burn's metric log is not a NumericEntry (value, value,count or value,final): {exc}",
                    where=str(path),
                ) from None
        value, count = entries[-1]
        if any(c == -1 for _, c in entries[:-1]):
            raise CheckpointRetentionError("a 'final' entry before the last line (Burn panics)", where=str(path))
        if count != -1:  # no final value: the count-weighted mean of the entries
            total, n = 0.0, 0
            for v, c in entries:  # in order, one addition at a time, as Burn's reduce
                total += v * (1 if c is None else c)
                n += 1 if c is None else c
            value = total / n if n else (math.nan if total == 0 or math.isnan(total) else math.copysign(math.inf, total))
        out[epoch] = value
        epoch += 1


# Rust's f64 syntax. Each text matches one way only (digits, then an optional fraction): with
# [0-9]+\.?[0-9]* a run of digits could split anywhere, and refusing n digits and a stray byte
# took n * n steps (200,000 digits, minutes).
_RUST_F64 = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)


def _numeric_entry(line: str) -> tuple[float, int | None]:
    """burn-train ``NumericEntry::deserialize``: (value, count); count None for a plain value, -1
    for final. What is wrong is said without quoting the line."""
    parts = line.split(",")
    if len(parts) > 2:
        raise ValueError(f"{len(parts)} comma-separated fields, at most 2")
    if not _RUST_F64.fullmatch(parts[0]):
        raise ValueError("its value is not an f64")
    value = float(parts[0])
    if len(parts) == 1:
        return value, None
    if parts[1] == "final":
        return value, -1
    if not re.fullmatch(r"\+?[0-9]{1,20}", parts[1]) or int(parts[1]) >= 2**64:
        raise ValueError("its count is neither a usize nor 'final'")
    return value, int(parts[1])


class KeepLastNCheckpoints:
    """Save every epoch; delete ``epoch - num_keep`` when that is > 0.

    Args:
        num_keep: How many epochs to keep.
    """

    def __init__(self, num_keep: int) -> None:
        self.num_keep = num_keep

    def checkpointing(self, epoch: int, history: MetricHistory) -> list[CheckpointingAction]:
        """Burn's ``checkpointing``: save this epoch, delete the one ``num_keep`` back.

        Args:
            epoch: The epoch just finished.
            history: The metric history (unused by this strategy).

        Returns:
            The actions.
        """
        actions = [CheckpointingAction.save()]
        old = epoch - self.num_keep
        if old > 0:
            actions.append(CheckpointingAction.delete(old))
        return actions


class MetricCheckpointingStrategy:
    """Keep the best epoch by a metric: save when the current epoch is best, delete the previous best."""

    def __init__(self) -> None:
        self.current: int | None = None

    def checkpointing(self, epoch: int, history: MetricHistory) -> list[CheckpointingAction]:
        """Burn's ``checkpointing``: save this epoch, delete the previous one unless it is the best.

        Args:
            epoch: The epoch just finished.
            history: The metric history.

        Returns:
            The actions.
        """
        best = history.find_epoch()
        if best is None:
            best = epoch
        actions = []
        if self.current is not None and self.current != best:
            actions.append(CheckpointingAction.delete(self.current))
        if best == epoch:
            actions.append(CheckpointingAction.save())
        self.current = best
        return actions


class ComposedCheckpointingStrategy:
    """Save when any strategy saves; delete an epoch only once every strategy has deleted it.

    Args:
        strategies: The strategies composed.
    """

    def __init__(self, strategies: Sequence[CheckpointingStrategy]) -> None:
        self.strategies = list(strategies)
        self.deleted: list[set[int]] = [set() for _ in self.strategies]

    def checkpointing(self, epoch: int, history: MetricHistory) -> list[CheckpointingAction]:
        """Burn's ``checkpointing``: the actions at the end of ``epoch``.

        Args:
            epoch: The epoch just finished.
            history: The metric history so far.

        Returns:
            The actions.
        """
        saved = False
        to_check: list[int] = []
        for i, strategy in enumerate(self.strategies):
            actions = strategy.checkpointing(epoch, history)
            if not actions:
                self.deleted[i].add(epoch)
            for action in actions:
                if action.kind != "delete":
                    saved = True
                elif action.epoch is not None:
                    self.deleted[i].add(action.epoch)
                    to_check.append(action.epoch)
        out = [CheckpointingAction.save()] if saved else []
        for old in to_check:
            if all(old in deleted for deleted in self.deleted):
                out.append(CheckpointingAction.delete(old))
                for deleted in self.deleted:
                    deleted.discard(old)
        return out


def default_strategy() -> ComposedCheckpointingStrategy:
    """Burn's default: ``KeepLastNCheckpoints(2)`` + lowest mean validation loss.

    Returns:
        The composed strategy.
    """
    return ComposedCheckpointingStrategy([KeepLastNCheckpoints(2), MetricCheckpointingStrategy()])


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------
class FileCheckpointer:
    """Burn's ``FileCheckpointer``: ``<directory>/<name>-<epoch>.bpk``.

    Args:
        directory: The checkpoint directory.
        name: The file name's stem (``model``, ``optim``, ``scheduler``).
        record_type: The record class ``restore`` reads; by name when None.
        folder: When given, the files are read only from inside it (``burnpack.core.source.Folder``).
    """

    def __init__(self, directory: PathLike, name: str, record_type: type[Record] | None = None, *, folder: Folder | None = None) -> None:
        self.directory = Path(directory)
        self.name = name
        self.record_type: type[Record] = record_type or RECORD_TYPES.get(name, ModuleRecord)
        self.folder = folder

    def path_for_epoch(self, epoch: int) -> Path:
        """The file of ``epoch``.

        Args:
            epoch: The epoch.

        Returns:
            ``<directory>/<name>-<epoch>.bpk``.
        """
        return self.directory / f"{self.name}-{epoch}.bpk"

    def save(self, epoch: int, record: Record) -> Path:
        """Write atomically (scratch file + rename; Burn writes in place from a background thread).

        Args:
            epoch: The epoch.
            record: The record.

        Returns:
            The path written.
        """
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IoError.from_os_error(exc, where=str(self.directory)) from None
        return record.save(self.path_for_epoch(epoch))

    def restore(self, epoch: int) -> Record:
        """The record of ``epoch``.

        Args:
            epoch: The epoch.

        Returns:
            The record.

        Raises:
            IoError: The file cannot be opened (or is outside ``folder``).
            BurnpackError: The file is not a valid pack.
        """
        return self.record_type.load(self.source(epoch))

    def pack(self, epoch: int) -> Pack:
        """The file of ``epoch``, opened as a pack (the caller closes it).

        Args:
            epoch: The epoch.

        Returns:
            The open pack.

        Raises:
            IoError: The file cannot be opened (or is outside ``folder``).
            BurnpackError: The file is not a valid pack.
        """
        from ..core.reader import load

        return load(self.source(epoch))

    def source(self, epoch: int) -> FileSource:
        """The file of ``epoch``, opened (inside ``folder``, when given).

        Args:
            epoch: The epoch.

        Returns:
            The open file.

        Raises:
            IoError: The file cannot be opened (or is outside ``folder``).
        """
        path = self.path_for_epoch(epoch)
        try:
            return FileSource(path, folder=self.folder)
        except IoError:
            raise
        except OSError as exc:
            raise IoError.from_os_error(exc) from None

    def delete(self, epoch: int) -> bool:
        """Remove the file of ``epoch`` if it exists.

        Args:
            epoch: The epoch.

        Returns:
            True when something was removed.
        """
        path = self.path_for_epoch(epoch)
        try:
            path.unlink()
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise IoError.from_os_error(exc, where=str(path)) from None

    def epochs(self) -> list[int]:
        """The epochs with a file.

        Returns:
            The epochs, sorted.
        """
        found = set()
        if self.directory.is_dir():
            for entry in self.directory.iterdir():
                m = _FILE.match(entry.name)
                if m and m["name"] == self.name and entry.is_file():
                    found.add(int(m["epoch"]))
        return sorted(found)


class EpochRecords(NamedTuple):
    """The three records of one epoch (None where the file is absent)."""

    model: ModuleRecord | None
    optim: OptimizerRecord | None
    scheduler: LrSchedulerRecord | None


class Checkpoints:
    """A Burn learner's checkpoint directory: list, open, write and prune epochs.

    ``Checkpoints(artifact_dir)`` works on ``<artifact_dir>/checkpoint`` (Burn's
    ``with_default_checkpointers``); ``Checkpoints.at(path)`` on a checkpoint directory itself.
    ``retention.json`` and Burn's ``Loss.log`` files are read as side files. The directory given
    is closed (``burnpack.core.source.Folder``): the checkpoint files, ``retention.json`` and the
    logs are read only from inside it.

    Args:
        artifact_dir: The learner's artifact directory.
        strategy: Which epochs to keep; Burn's default (``default_strategy``) when None.
        max_side_file_bytes: The largest side file read (a regular file; 64 MiB by default).
    """

    def __init__(self, artifact_dir: PathLike, *, strategy: CheckpointingStrategy | None = None, max_side_file_bytes: int = SIDE_FILE_MAX_BYTES) -> None:
        self._init(Path(artifact_dir) / "checkpoint", strategy, max_side_file_bytes, Folder(artifact_dir))

    @classmethod
    def at(cls, checkpoint_dir: PathLike, *, strategy: CheckpointingStrategy | None = None, max_side_file_bytes: int = SIDE_FILE_MAX_BYTES) -> Checkpoints:
        """The checkpoints of a checkpoint directory itself (not an artifact directory).

        Args:
            checkpoint_dir: The directory holding ``model-N.bpk``, ``optim-N.bpk``, ``scheduler-N.bpk``.
            strategy: Which epochs to keep; Burn's default when None.
            max_side_file_bytes: The largest side file read.

        Returns:
            The checkpoints.
        """
        self = cls.__new__(cls)
        self._init(Path(checkpoint_dir), strategy, max_side_file_bytes, Folder(checkpoint_dir))
        return self

    @classmethod
    def find(cls, path: PathLike, *, strategy: CheckpointingStrategy | None = None, max_side_file_bytes: int = SIDE_FILE_MAX_BYTES) -> Checkpoints:
        """The checkpoints of ``path/checkpoint`` when it is a directory, else of ``path`` itself.

        Args:
            path: An artifact directory or a checkpoint directory.
            strategy: Which epochs to keep; Burn's default when None.
            max_side_file_bytes: The largest side file read.

        Returns:
            The checkpoints.
        """
        path = Path(path)
        if (path / "checkpoint").is_dir():
            return cls(path, strategy=strategy, max_side_file_bytes=max_side_file_bytes)
        return cls.at(path, strategy=strategy, max_side_file_bytes=max_side_file_bytes)

    def _init(self, directory: Path, strategy: CheckpointingStrategy | None, max_side_file_bytes: int, folder: Folder) -> None:
        self.directory = directory
        self._max_side_file_bytes = max_side_file_bytes
        self._folder = folder
        self.checkpointers = {name: FileCheckpointer(directory, name, folder=folder) for name in RECORD_NAMES}
        self._fresh_strategy = copy.deepcopy(strategy if strategy is not None else default_strategy())
        self._journal: list[dict[str, Any]] = self._read_journal() or self._journal_from_burn_logs()
        self._replay()

    def _journal_from_burn_logs(self) -> list[dict[str, Any]]:
        """Without ``retention.json``: the epochs a Burn learner ran, with the validation losses it
        logged in ``<artifact_dir>/valid/epoch-N/Loss.log`` (what Burn itself reads back)."""
        if self.directory.name != "checkpoint":
            return []
        losses = burn_valid_losses(self.directory.parent, max_bytes=self._max_side_file_bytes)
        last = max([*losses, *self.epochs()], default=0)
        if not losses:
            return []
        return [{"epoch": e, **({"valid_loss": losses[e]} if e in losses else {})} for e in range(1, last + 1)]

    def _replay(self) -> None:
        """Bring a fresh strategy to the state an uninterrupted run has after the recorded epochs."""
        self.strategy = copy.deepcopy(self._fresh_strategy)
        self._history = LossHistory()
        for entry in self._journal:
            self._checkpointing(entry["epoch"], entry.get("valid_loss"), entry.get("best_epoch"))

    def _checkpointing(self, epoch: int, valid_loss: float | None, best_epoch: int | None) -> list[CheckpointingAction]:
        """The strategy's actions for ``epoch``, told its loss (one history for all epochs)."""
        return _actions(self.strategy, self._history, epoch, valid_loss, best_epoch)

    def strategy_keeps(self) -> list[int] | None:
        """The epochs this object's strategy (Burn's default unless another was given) keeps after the
        epochs recorded — in ``retention.json``, else in Burn's validation logs — whatever files are
        present.

        Burn does not record the strategy a run used: files that differ from this answer were kept by
        another one (or moved by hand).

        Returns:
            The epochs kept, or None when no epoch is recorded.
        """
        if not self._journal:
            return None
        strategy, history, kept = copy.deepcopy(self._fresh_strategy), LossHistory(), set()
        for entry in self._journal:
            for action in _actions(strategy, history, entry["epoch"], entry.get("valid_loss"), entry.get("best_epoch")):
                if action.kind == "save":
                    kept.add(entry["epoch"])
                else:
                    kept.discard(action.epoch)
        return sorted(kept)

    @property
    def valid_losses(self) -> Mapping[int, float]:
        """The validation loss of each recorded epoch (read-only)."""
        return self._history.losses

    @property
    def retention_file(self) -> Path:
        """The path of ``retention.json``, the journal of what the strategy kept and deleted."""
        return self.directory / RETENTION_FILE

    def _read_journal(self) -> list[dict[str, Any]]:
        path = self.retention_file
        try:
            raw = read_side_file(path, max_bytes=self._max_side_file_bytes, lift="max_side_file_bytes", folder=self._folder)
        except FileNotFoundError:
            return []

        def unreadable(problem: str) -> CheckpointRetentionError:
            return CheckpointRetentionError(
                f"unreadable retention record ({problem}); remove it to restart retention from the files alone",
                where=str(path),
            )

        data = parse_json(raw, unreadable, "the record")
        # What is wrong is said without quoting the file (the caller named its folder, not it).
        if not isinstance(data, dict) or data.get("format") != _RETENTION_FORMAT:
            raise unreadable(f"its format is not {_RETENTION_FORMAT!r}")
        entries = data.get("epochs")
        if not isinstance(entries, list):
            raise unreadable("'epochs' is not a list")
        previous = 0
        for number, entry in enumerate(entries, 1):
            if not isinstance(entry, dict):
                raise unreadable(f"entry {number} is not an object")
            epoch, loss, best = entry.get("epoch"), entry.get("valid_loss"), entry.get("best_epoch")
            if type(epoch) is not int or not previous < epoch < 2**64:
                raise unreadable(f"entry {number}: 'epoch' is not a usize above the one before (epochs out of order)")
            if loss is not None and type(loss) not in (int, float):
                raise unreadable(f"epoch {epoch}: 'valid_loss' is not a number")
            if best is not None and (type(best) is not int or not 0 <= best < 2**64):
                raise unreadable(f"epoch {epoch}: 'best_epoch' is not a usize")
            previous = epoch
        return list(entries)

    def _write_journal(self) -> None:
        text = json.dumps({"format": _RETENTION_FORMAT, "epochs": self._journal}, indent=1) + "\n"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with atomic_file(self.retention_file) as stream:
                stream.write(text.encode("utf-8"))
        except OSError as exc:
            raise IoError.from_os_error(exc, where=str(self.retention_file)) from None

    def __repr__(self) -> str:
        return f"<Checkpoints {self.directory}: epochs {self.epochs()}>"

    # -- listing -------------------------------------------------------------------------------
    def epochs(self) -> list[int]:
        """Every epoch with at least one of the three files.

        Returns:
            The epochs, sorted.
        """
        return sorted({e for c in self.checkpointers.values() for e in c.epochs()})

    def complete_epochs(self) -> list[int]:
        """Epochs a learner can resume from: all three files present, each opens and holds its whole
        data section (a file cut short by a crash does not count).

        Returns:
            The epochs, sorted.
        """
        return [e for e in self._epochs_with_all_files() if self.is_complete(e)]

    def latest(self) -> int | None:
        """The newest complete epoch (checked newest first, so older epochs are not opened).

        Returns:
            The epoch, or None when none is complete.
        """
        for epoch in reversed(self._epochs_with_all_files()):
            if self.is_complete(epoch):
                return epoch
        return None

    def is_complete(self, epoch: int) -> bool:
        """Whether each of the three files of ``epoch`` opens and its data section is whole.

        Args:
            epoch: The epoch.

        Returns:
            True when complete.
        """
        for checkpointer in self.checkpointers.values():
            try:
                with checkpointer.pack(epoch) as pack:
                    # Burn's open check counts from the metadata end, not the aligned data start.
                    end = max((d.data_offsets[1] for d in pack.descriptors.values()), default=0)
                    if pack.file_size < pack.data_section_start + end:
                        return False
            except BurnpackError:
                return False
        return True

    def _epochs_with_all_files(self) -> list[int]:
        per = [set(c.epochs()) for c in self.checkpointers.values()]
        return sorted(set.intersection(*per))

    def files(self, epoch: int) -> dict[str, Path]:
        """The files present for ``epoch``.

        Args:
            epoch: The epoch.

        Returns:
            ``{"model" | "optim" | "scheduler": path}``.
        """
        out = {}
        for name, checkpointer in self.checkpointers.items():
            path = checkpointer.path_for_epoch(epoch)
            if path.is_file():
                out[name] = path
        return out

    # -- reading -------------------------------------------------------------------------------
    def open(self, epoch: int, name: str) -> Record:
        """One record of ``epoch``.

        Args:
            epoch: The epoch.
            name: ``model``, ``optim`` or ``scheduler``.

        Returns:
            The record.

        Raises:
            ValueError: ``name`` is none of the three.
            BurnpackError: The file is missing or not a valid pack.
        """
        if name not in self.checkpointers:
            raise ValueError(f"no checkpoint record named {name!r} (expected one of {RECORD_NAMES})")
        return self.checkpointers[name].restore(epoch)

    def model(self, epoch: int) -> ModuleRecord:
        """The model record of ``epoch``.

        Args:
            epoch: The epoch.

        Returns:
            The record.

        Raises:
            BurnpackError: The file is missing or not a valid pack.
        """
        return ModuleRecord.load(self.checkpointers["model"].source(epoch))

    def optim(self, epoch: int) -> OptimizerRecord:
        """The optimizer record of ``epoch``.

        Args:
            epoch: The epoch.

        Returns:
            The record.

        Raises:
            BurnpackError: The file is missing or not a valid pack.
        """
        return OptimizerRecord.load(self.checkpointers["optim"].source(epoch))

    def scheduler(self, epoch: int) -> LrSchedulerRecord:
        """The learning-rate-scheduler record of ``epoch``.

        Args:
            epoch: The epoch.

        Returns:
            The record.

        Raises:
            BurnpackError: The file is missing or not a valid pack.
        """
        return LrSchedulerRecord.load(self.checkpointers["scheduler"].source(epoch))

    def restore(self, epoch: int) -> EpochRecords:
        """The three records of ``epoch``, as ``learner.checkpoint(epoch)`` restores them.

        Args:
            epoch: The epoch.

        Returns:
            The model, optimizer and scheduler records.

        Raises:
            BurnpackError: A file is missing (as Burn's restore fails) or not a valid pack.
        """
        return EpochRecords(self.model(epoch), self.optim(epoch), self.scheduler(epoch))

    # -- writing -------------------------------------------------------------------------------
    def save_epoch(
        self,
        epoch: int,
        *,
        model: ModuleRecord | None = None,
        optim: OptimizerRecord | None = None,
        scheduler: LrSchedulerRecord | None = None,
        valid_loss: float | None = None,
        best_epoch: int | None = None,
    ) -> list[CheckpointingAction]:
        """What the learner does at the end of ``epoch``: ask the strategy, then save / delete.

        Each file is written atomically (model, optim, scheduler, in Burn's order); the records not
        given are not written.

        Args:
            epoch: The epoch (1-based).
            model: The model record.
            optim: The optimizer record.
            scheduler: The scheduler record.
            valid_loss: The epoch's mean validation loss (remembered for the metric strategy).
            best_epoch: Which epoch is best, said directly instead.

        Returns:
            The actions taken.

        Raises:
            ValueError: ``epoch`` is below 1.
            BurnpackError: A record cannot be written.
        """
        if epoch < 1:
            raise ValueError(f"epochs are 1-based, got {epoch}")
        if self._journal and epoch <= self._journal[-1]["epoch"]:  # resumed from an earlier epoch
            self._journal = [e for e in self._journal if e["epoch"] < epoch]
            self._replay()
        entry: dict[str, Any] = {"epoch": epoch}
        if valid_loss is not None:
            entry["valid_loss"] = float(valid_loss)
        if best_epoch is not None:
            entry["best_epoch"] = int(best_epoch)
        actions = self._checkpointing(epoch, entry.get("valid_loss"), entry.get("best_epoch"))
        self._journal.append(entry)
        self._write_journal()  # before any file changes: a crash mid-save is replayed correctly
        for action in actions:
            if action.kind == "save":
                for name, record in (("model", model), ("optim", optim), ("scheduler", scheduler)):
                    if record is not None:
                        self.checkpointers[name].save(epoch, record)
            else:
                assert action.epoch is not None  # CheckpointingAction.delete always names its epoch
                self.delete_epoch(action.epoch)
        return actions

    def delete_epoch(self, epoch: int) -> None:
        """Remove the three files of ``epoch`` (those present).

        Args:
            epoch: The epoch.
        """
        for checkpointer in self.checkpointers.values():
            checkpointer.delete(epoch)


def _actions(strategy: CheckpointingStrategy, history: LossHistory, epoch: int, valid_loss: float | None, best_epoch: int | None) -> list[CheckpointingAction]:
    """``strategy``'s actions for ``epoch``, ``history`` told its loss (or which epoch is best)."""
    if valid_loss is not None:
        history.record(epoch, valid_loss)
    history.best = best_epoch
    return strategy.checkpointing(epoch, history)


def _error(exc: BaseException) -> str:
    from ..errors import BurnpackError

    if isinstance(exc, BurnpackError):
        return f"{exc.variant}: {exc}"
    return f"{type(exc).__name__}: {exc}"


def inspect_epoch(checkpoints: Checkpoints, epoch: int) -> dict[str, Any]:
    """What ``checkpoint inspect`` reports for one epoch, as JSON-ready data."""
    from ..core.dtypes import debug
    from ..errors import BurnpackError, RecordError, SchedulerLayoutError
    from .scheduler import infer_scheduler

    files = checkpoints.files(epoch)
    info: dict[str, Any] = {"epoch": epoch, "files": {k: p.name for k, p in files.items()}, "complete": len(files) == 3}
    model = optim = None
    if "model" in files:
        try:
            model = checkpoints.model(epoch)
            dtypes = sorted({debug(t.dtype) for t in model.tensors})
            info["model"] = {"parameters": len(model), "elements": model.num_elements, "dtypes": dtypes}
        except (BurnpackError, OSError) as exc:
            info["model"] = {"error": _error(exc)}
    if "optim" in files:
        try:
            optim = checkpoints.optim(epoch)
            entry: dict[str, Any] = {"kind": optim.kind, "step": optim.step, "tensors": len(optim.tensors)}
            if not optim.is_lbfgs():
                entry["states"] = len(optim.param_ids)
            info["optim"] = entry
        except (BurnpackError, OSError) as exc:
            info["optim"] = {"error": _error(exc)}
            optim = None
    if "scheduler" in files:
        try:
            record = checkpoints.scheduler(epoch)
            entry = {"scalars": {k: [v.variant, v.value] for k, v in record.scalars.items()}}
            try:
                tree = infer_scheduler(record)
                entry["state"], entry["meaning"] = tree.describe(), tree.explain()
            except SchedulerLayoutError as exc:
                entry["state"] = entry["meaning"] = f"unrecognised layout ({exc})"
            info["scheduler"] = entry
        except (BurnpackError, OSError) as exc:
            info["scheduler"] = {"error": _error(exc)}
    if model is not None and optim is not None and not optim.is_lbfgs():
        try:
            report = optim.check(model)
            info["ids"] = {
                "consistent": report.ok,
                "text": str(report),
                "only_in_model": [path for _, path in report.only_in_model],
                "only_in_optimizer": [pid for pid, _ in report.only_in_optimizer],
                "rank_mismatches": [path for _, path, _, _ in report.rank_mismatches],
                "shape_mismatches": [name for _, name, _, _ in report.shape_mismatches],
                "path_mismatches": [pid for pid, _, _ in report.path_mismatches],
            }
        except RecordError as exc:
            info["ids"] = {"consistent": False, "text": _error(exc)}
    return info
