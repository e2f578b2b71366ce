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

from ..core._lazy import lazy_exports

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
"""Each public name once, by the module that defines it (``__init__.pyi`` gives their types)."""
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
