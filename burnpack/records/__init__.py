"""Burn's training-state records over burnpack: modules, optimizers, LR schedulers, checkpoints.

* ``ModuleRecord`` — a module's parameters by dotted path, each with its ``param_id``
  (burn-core ``store``); apply one to a mapping, a nested structure or a ``torch.nn.Module`` with
  Burn's ``allow_partial`` / ``allow_unused`` / ``validate`` / dtype-policy semantics.
* ``OptimizerRecord`` — per-parameter optimizer state keyed by param id, read and built
  through typed states (``AdamState``, ``SgdState``, ...).
* ``LrSchedulerRecord`` — scheduler state as typed scalars, with typed helpers for every
  scheduler kind (``CosineAnnealingLrScheduler``, ``ModuleLrScheduler``, ...).
* ``Checkpoints`` — a learner's ``checkpoint/{model,optim,scheduler}-N.bpk`` directory with
  Burn's default retention.

This layer sits above the format layer (``burnpack.core.reader`` / ``burnpack.core.writer``) and only uses
numpy; torch is imported only when a caller passes torch objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ..errors import (
        CheckpointRetentionError,
        MissingParamIdError,
        RecordCastError,
        RecordError,
        RecordValidationError,
        SchedulerLayoutError,
        StateRankError,
        io_display,
    )
    from .checkpoint import (
        CheckpointingAction,
        CheckpointingStrategy,
        Checkpoints,
        ComposedCheckpointingStrategy,
        EpochRecords,
        FileCheckpointer,
        KeepLastNCheckpoints,
        LossHistory,
        MetricCheckpointingStrategy,
        burn_valid_losses,
        default_strategy,
    )
    from ._common import derive_param_ids
    from .detect import RecordKind, detect_record_kind
    from .module import ApplyError, ApplyReport, DTypePolicy, LoadResult, ModuleRecord, load_record
    from .optimizer import (
        AdaGradState,
        AdamState,
        AdamWState,
        AdanState,
        ConsistencyReport,
        LBFGSState,
        MuonState,
        OptimizerRecord,
        OptimizerState,
        ParamEntries,
        RmsPropState,
        SgdState,
    )
    from .scheduler import (
        ComposedLrScheduler,
        ConstantLr,
        CosineAnnealingLrScheduler,
        ExponentialLrScheduler,
        LinearLrScheduler,
        LrScheduler,
        LrSchedulerRecord,
        ModuleLrScheduler,
        NoamLrScheduler,
        SequentialLrScheduler,
        StepLrScheduler,
        infer_scheduler,
    )
    from .tree import Ignored, Param, Reparameterized, RunningState, Variant, iter_params, map_params, module_paths

_EXPORTS = {
    "..errors": ("CheckpointRetentionError", "MissingParamIdError", "RecordCastError", "RecordError",
                 "RecordValidationError", "SchedulerLayoutError", "StateRankError", "io_display"),
    ".checkpoint": ("CheckpointingAction", "CheckpointingStrategy", "Checkpoints", "ComposedCheckpointingStrategy",
                    "EpochRecords", "FileCheckpointer", "KeepLastNCheckpoints", "LossHistory", "MetricCheckpointingStrategy",
                    "burn_valid_losses", "default_strategy"),
    "._common": ("derive_param_ids",),
    ".detect": ("RecordKind", "detect_record_kind"),
    ".module": ("ApplyError", "ApplyReport", "DTypePolicy", "LoadResult", "ModuleRecord", "load_record"),
    ".optimizer": ("AdaGradState", "AdamState", "AdamWState", "AdanState", "ConsistencyReport", "LBFGSState", "MuonState",
                   "OptimizerRecord", "OptimizerState", "ParamEntries", "RmsPropState", "SgdState"),
    ".scheduler": ("ComposedLrScheduler", "ConstantLr", "CosineAnnealingLrScheduler", "ExponentialLrScheduler",
                   "LinearLrScheduler", "LrScheduler", "LrSchedulerRecord", "ModuleLrScheduler", "NoamLrScheduler",
                   "SequentialLrScheduler", "StepLrScheduler", "infer_scheduler"),
    ".tree": ("Ignored", "Param", "Reparameterized", "RunningState", "Variant", "iter_params", "map_params", "module_paths"),
}  # fmt: skip
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "AdaGradState",
    "AdamState",
    "AdamWState",
    "AdanState",
    "ApplyError",
    "ApplyReport",
    "CheckpointingAction",
    "CheckpointRetentionError",
    "CheckpointingStrategy",
    "Checkpoints",
    "ComposedCheckpointingStrategy",
    "ComposedLrScheduler",
    "ConsistencyReport",
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "DTypePolicy",
    "EpochRecords",
    "ExponentialLrScheduler",
    "FileCheckpointer",
    "Ignored",
    "KeepLastNCheckpoints",
    "LBFGSState",
    "LinearLrScheduler",
    "LoadResult",
    "LossHistory",
    "LrScheduler",
    "LrSchedulerRecord",
    "MetricCheckpointingStrategy",
    "MissingParamIdError",
    "ModuleLrScheduler",
    "ModuleRecord",
    "MuonState",
    "NoamLrScheduler",
    "OptimizerRecord",
    "OptimizerState",
    "Param",
    "ParamEntries",
    "RecordCastError",
    "RecordError",
    "RecordKind",
    "RecordValidationError",
    "SchedulerLayoutError",
    "Reparameterized",
    "RmsPropState",
    "RunningState",
    "SequentialLrScheduler",
    "SgdState",
    "StateRankError",
    "StepLrScheduler",
    "Variant",
    "burn_valid_losses",
    "default_strategy",
    "derive_param_ids",
    "detect_record_kind",
    "infer_scheduler",
    "io_display",
    "iter_params",
    "load_record",
    "map_params",
    "module_paths",
]
