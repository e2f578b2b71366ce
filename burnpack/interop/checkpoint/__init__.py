"""Whole training checkpoints: PyTorch (model + optimizer + LR scheduler) ↔ a Burn Learner
checkpoint directory (``model-N.bpk``, ``optim-N.bpk``, ``scheduler-N.bpk``).

``pytorch_to_burn_checkpoint`` reads a ``torch.save``'d training state — a file (without
torch and without running pickled code), a dict, or live ``nn.Module`` / ``Optimizer`` /
``LRScheduler`` objects — and writes the three records a Burn learner resumes from.
``burn_checkpoint_to_pytorch`` does the reverse. Supported: ``Adam``, ``AdamW``, ``SGD``
(with or without momentum); ``CosineAnnealingLR``, ``LinearLR``, ``StepLR``, ``ExponentialLR``
(or none: a constant learning rate).

What maps, and how exactly
==========================

====================================  ==========================================  ===========
PyTorch                               Burn                                         exact?
====================================  ==========================================  ===========
model parameters and buffers          ``ModuleRecord`` tensors, each with a        bit-exact
                                      ``param_id`` derived from its Burn path
                                      (``derive_param_ids``); ``Linear`` weights transposed
                                      (``[out, in]`` → ``[in, out]``); norm
                                      ``weight``/``bias`` → ``gamma``/``beta``
BatchNorm ``num_batches_tracked``     (Burn's BatchNorm has no such field)         not mapped
Adam/AdamW ``exp_avg``,               ``{id}.momentum.moment_1``, ``moment_2``,    bit-exact
``exp_avg_sq``, ``max_exp_avg_sq``    ``max_moment_2`` — transposed together with
                                      their Linear weight
Adam/AdamW ``step``                   ``{id}.momentum.time`` (UInt)                exact
SGD ``momentum_buffer``               ``{id}.momentum.velocity``                   bit-exact
state ↔ parameter link (index in      ``param_id`` shared by model and optimizer   exact
``param_groups``, or name as          records, id → path metadata
``get_state_dict`` gives it)
scheduler position ``last_epoch`` =   cosine ``current_iter = k-1`` (``2^64-1`` at exact
``k`` (per group ``i`` → ``"i."``)    ``k = 0``); linear ``remaining_iters =
                                      max(total_iters + 1 - k, 0)``; step
                                      ``iter_idx = k-1`` (Int); exponential
                                      ``previous_lr`` = torch's lr after ``k-1``
                                      steps, replayed as torch computes it
hyperparameters (``lr``, ``betas``,   Burn keeps them in its optimizer and         cannot
``eps``, ``weight_decay``,            scheduler *configs* (Rust code), not in the
``momentum``, ``T_max``, ...)         records
====================================  ==========================================  ===========

Why some fields cannot map: Burn's records hold *state* only; the learning-rate schedule and
optimizer hyperparameters are code on the Burn side. The conversion therefore (a) reports the
Burn configs that reproduce the PyTorch run (``CheckpointReport.burn_configs``) and (b) keeps
everything PyTorch-only — ``param_groups``, the scheduler's ``state_dict``, the parameter order,
``num_batches_tracked``, the checkpoint's other entries such as ``epoch`` — as JSON in the
optimizer record's metadata under ``torch.*`` keys, which Burn ignores (it only reads metadata
keys that parse as u64). Converting back uses them, so PyTorch → Burn → PyTorch is lossless;
a checkpoint Burn trained further still converts back, with the state taken from Burn.

Learning rates: Burn computes its schedules in closed form (cosine, linear, step) or by its own
recurrence (exponential); PyTorch's schedulers use recursive ("chainable") formulas. The step
positions map exactly, and the learning rates agree to floating-point rounding. When a
Burn-side position differs from the stored PyTorch state, the reverse conversion recomputes
the learning rate in closed form and says so.

torch's distributed-checkpoint workflow: a DCP folder is read as a ``torch.save`` file is;
``get_state_dict``'s optimizer state is keyed by parameter name (also flattened, and torch's
recipe nests the parts in ``{"app": AppState}``); ``burn_checkpoint_to_pytorch(..., dcp=True)``
writes a DCP folder keyed by name, laid out as the source was, which a ``get_state_dict``
template, ``dcp.load`` and ``set_state_dict`` restore.

The work is split by part: ``.model``, ``.optimizer`` and ``.scheduler`` map one record
each, both ways; ``.state`` reads the PyTorch side and holds the report. Checkpoint entries
that are neither state dicts nor plain data (an ``argparse.Namespace``) are skipped and listed in
``CheckpointReport.skipped_entries``; numbers (numpy scalars too) are kept as metadata.

Module types: the PyTorch → Burn adapter must know which tensors belong to a ``Linear`` (to
transpose) and which to a norm (to rename). They come from a ``module=`` (an ``nn.Module``),
``module_types`` / ``type_rules``, else inference from names and shapes; a 2-D or 1-D
``weight`` whose module stays unknown is an error, never a guess.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...records import Checkpoints, LrSchedulerRecord, ModuleRecord, OptimizerRecord
from ...core.writer import Writer
from ..adapters import ModuleTypes
from ...core.frameworks import TorchModule, is_torch_module
from .._io import atomic_output
from ...core.atomic import atomic_folder
from ...core.progress import ProgressSetting, finish, progress_for
from ...errors import ConversionError, DestinationExists, OutputExistsError
from ..dcp import write_dcp_state
from ..formats import burnpack_writer
from ..limits import take_caps
from ..remap import KeyRemapper
from ..tensors import TensorSet
from .model import model_metadata, model_to_burn, model_to_pytorch
from . import optimizer as optimizer_mapper
from .optimizer import optimizer_to_burn, optimizer_to_pytorch
from .scheduler import scheduler_to_burn, scheduler_to_pytorch
from .stored import torch_meta
from .state import (
    FORMAT_TAG,
    META_PREFIX,
    CheckpointReport,
    TorchTrainingState,
    describe,
    jsonable,
    read_torch_training_state,
)

__all__ = [
    "CheckpointReport",
    "TorchTrainingState",
    "burn_checkpoint_to_pytorch",
    "pytorch_to_burn_checkpoint",
    "read_torch_training_state",
]


def _epoch(given: int | None, state: TorchTrainingState, report: CheckpointReport) -> int:
    """The Burn epoch: as given, else the checkpoint's ``epoch`` entry when it is an int >= 1, else 1."""
    epoch = given
    if epoch is None:
        value = state.extra.get("epoch")
        stored = operator.index(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else None
        epoch = stored if stored is not None and stored >= 1 else 1
        if epoch != stored:
            report.warnings.append("no epoch given or stored; writing epoch 1")
    if epoch < 1:
        raise ConversionError(f"Burn epochs are 1-based, got {epoch}")
    report.epoch = epoch
    return epoch


def _extras(state: TorchTrainingState, report: CheckpointReport) -> dict[str, Any]:
    """The checkpoint's other entries as JSON; what JSON cannot hold is skipped and reported."""
    kept = {}
    for key, value in state.extra.items():
        try:
            kept[key] = jsonable(value)
        except TypeError:
            report.skipped_entries[key] = getattr(value, "type_name", type(value).__name__)
    return kept


def _write_records(
    paths: Mapping[str, Path], writers: Mapping[str, Writer], overwrite: bool, report: CheckpointReport, progress: ProgressSetting
) -> None:
    """Plan all three writers first (a refusal writes nothing), then write them beside the
    directory's other files and put them in place together: an epoch is all three new records
    or none of them (an interrupt too)."""
    for writer in writers.values():
        writer.plan()
    folder = next(iter(paths.values())).parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    bar = progress_for(progress, sum(writer.size() for writer in writers.values()), "writing")
    try:
        with atomic_folder(folder, replace=overwrite, merge=True) as scratch:
            for name, writer in writers.items():
                with atomic_output(scratch / paths[name].name) as stream:
                    writer.write_stream(stream, progress=bar)
    except DestinationExists as exc:
        raise OutputExistsError(folder, f"gained checkpoint files while converting ({exc}); nothing was replaced") from None
    finish(bar)
    report.files.update({name: str(path) for name, path in paths.items()})


def pytorch_to_burn_checkpoint(
    source: Any = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    epoch: int | None = None,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    module: TorchModule | None = None,
    model_key: str | None = None,
    optimizer_key: str | None = None,
    scheduler_key: str | None = None,
    optimizer_kind: str | None = None,
    seed: int | None = None,
    overwrite: bool = False,
    progress: ProgressSetting = None,
    **model_options: Any,
) -> CheckpointReport:
    """Write ``model-N.bpk``, ``optim-N.bpk`` and ``scheduler-N.bpk`` into a Burn checkpoint
    directory from a PyTorch training state.

    The three files are put in place together (an interrupted write leaves none of them);
    existing files are kept unless ``overwrite``.

    Args:
        source: A checkpoint file, DCP folder or dict (see ``read_torch_training_state``).
        out_dir: The Burn ``<artifact_dir>/checkpoint`` directory.
        epoch: The Burn epoch; by default the checkpoint's ``epoch`` entry when it is an int ≥ 1, else 1.
        model: The model part, given separately (a path, a ``state_dict`` or a live module).
        optimizer: The optimizer part, given separately.
        scheduler: The scheduler part, given separately.
        module: An ``nn.Module`` giving exact module types and the parameter order.
        model_key: The checkpoint key of the model part.
        optimizer_key: The checkpoint key of the optimizer part.
        scheduler_key: The checkpoint key of the scheduler part.
        optimizer_kind: The optimizer (``"adam"``, ``"sgd"``, …) when the state cannot tell.
        seed: A number mixed into the param ids, which are derived from the Burn paths
            (``burnpack.records.derive_param_ids``), so the same input gives the same files.
        overwrite: Replace existing files.
        progress: Shows the bytes written (a setting of ``burnpack.core.progress.progress_for``).
        **model_options: The model mapping's options: ``remap`` / ``enum_variants`` /
            ``map_indices_contiguous`` rename PyTorch paths to the Burn module's; ``exclude``
            (regexes, searched in the names after remapping) leaves out tensors the Burn module
            does not have, with their optimizer state; ``module_types`` / ``type_rules`` /
            ``infer_types`` (default True) say which module owns each weight;
            ``allow_unmatched`` tolerates options that change nothing; the read caps
            (``max_pickle_depth``...) bound reading the PyTorch files.

    Returns:
        What the migration did.

    Raises:
        OutputExistsError: A file exists and ``overwrite`` is False.
        ConversionError: The state cannot be read or mapped.
        TypeError: An option has the wrong type.
    """
    if out_dir is None:
        raise TypeError("out_dir is required")
    state = read_torch_training_state(
        source, model=model, optimizer=optimizer, scheduler=scheduler, module=module,
        model_key=model_key, optimizer_key=optimizer_key, scheduler_key=scheduler_key, **take_caps(model_options),
    )  # fmt: skip
    report = CheckpointReport(direction="pytorch->burn", source=describe(source if source is not None else model), target=str(out_dir))
    number = _epoch(epoch, state, report)
    paths = {name: Path(out_dir) / f"{name}-{number}.bpk" for name in ("model", "optim", "scheduler")}
    existing = [p for p in paths.values() if p.exists()]
    if existing and not overwrite:
        raise OutputExistsError(existing[0], "exists (a checkpoint of this epoch); pass overwrite=True to replace it")
    model_options.setdefault("infer_types", True)
    burn_model = model_to_burn(state, report, seed=seed, **model_options)
    meta: dict[str, Any] = {"format": FORMAT_TAG, "model": model_metadata(state, burn_model), "keys": state.keys}
    optim_record, groups = OptimizerRecord(), 1
    if state.optimizer is not None:
        kind = report.optimizer = optimizer_mapper.optimizer_kind(state.optimizer, optimizer_kind)
        optim_record, meta["optimizer"] = optimizer_to_burn(state, burn_model, kind, report)
        groups = len(state.optimizer["param_groups"])
    else:
        report.warnings.append("no optimizer state: optim record is empty")
    sched_record, sched_meta = scheduler_to_burn(state.scheduler, groups, report)
    if sched_meta is not None:
        meta["scheduler"] = sched_meta
    meta["extra"] = _extras(state, report)
    for key, value in meta.items():
        optim_record.metadata[META_PREFIX + key] = value if isinstance(value, str) else json.dumps(jsonable(value), allow_nan=True)
    writers = {
        "model": burnpack_writer(TensorSet(burn_model.entries)),
        "optim": Writer(optim_record.tensors, metadata=optim_record.metadata, scalars=optim_record.scalars),
        "scheduler": Writer([], scalars=sched_record.scalars),
    }
    _write_records(paths, writers, overwrite, report, progress)
    return report


def burn_checkpoint_to_pytorch(
    checkpoint_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    epoch: int | None = None,
    module: TorchModule | None = None,
    module_types: Mapping[str, str] | None = None,
    type_rules: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    infer_types: bool = True,
    optimizer_config: Mapping[str, Any] | None = None,
    scheduler_config: Mapping[str, Any] | None = None,
    remap: KeyRemapper | Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    overwrite: bool = False,
    dcp: bool = False,
    progress: ProgressSetting = None,
) -> tuple[TorchTrainingState, CheckpointReport]:
    """Read a Burn Learner checkpoint and rebuild the PyTorch state dicts; with ``out``, also save them.

    Everything Burn holds comes from Burn's records. What Burn does not hold — parameter
    groups' hyperparameters, the scheduler configuration, the PyTorch parameter order and
    names, ``num_batches_tracked`` — comes from the ``torch.*`` metadata a previous
    ``pytorch_to_burn_checkpoint`` stored, else from ``module``, ``optimizer_config`` and
    ``scheduler_config``.

    Args:
        checkpoint_dir: The ``checkpoint`` directory or its artifact directory.
        out: Where to ``torch.save`` the checkpoint (needs torch); None only returns it.
        epoch: The epoch to read; by default the newest complete one.
        module: An ``nn.Module`` giving module types, parameter order and names.
        module_types: Module path → Burn type.
        type_rules: ``(regex, type)`` rules for module types.
        infer_types: Guess the module types left from names and shapes.
        optimizer_config: ``{"kind": "adam", "lr": ..., ...}``, over torch's defaults.
        scheduler_config: ``{"kind": "cosine", "T_max": ..., "base_lrs": [...], ...}``.
        remap: Rules turning Burn paths (after the adapter's renames) into PyTorch names when no
            stored name map says otherwise.
        overwrite: Replace an existing ``out``.
        progress: Shows the bytes written (a setting of ``burnpack.core.progress.progress_for``).
        dcp: Key the optimizer state by parameter name, as ``get_state_dict`` gives it, and write
            ``out`` as a ``torch.distributed.checkpoint`` folder (``dcp.load`` into a
            ``get_state_dict`` template, then ``set_state_dict``, restores it). Otherwise the
            optimizer state is keyed as the PyTorch source was (by index, unless it listed names).

    Returns:
        The training state and the report.

    Raises:
        ConversionError: The checkpoint cannot be read or mapped.
        OutputExistsError: ``out`` exists and ``overwrite`` is False.
        TypeError: An option has the wrong type.
    """
    from ..torch_live import module_types_of

    if dcp and out is None:
        raise TypeError("dcp=True needs out (the DCP folder to write)")
    ckpts = Checkpoints.find(checkpoint_dir)
    epoch = ckpts.latest() if epoch is None else epoch
    if epoch is None:
        raise ConversionError(f"{ckpts.directory}: no epoch with model, optim and scheduler records")
    report = CheckpointReport(direction="burn->pytorch", source=str(ckpts.directory), target=str(out) if out else "", epoch=epoch)
    if out is not None and not overwrite and Path(out).exists():
        raise OutputExistsError(out)
    files = ckpts.files(epoch)
    if "model" not in files:
        raise ConversionError(f"{ckpts.directory}: no model-{epoch}.bpk")
    optim_rec = OptimizerRecord.load(files["optim"]) if "optim" in files else OptimizerRecord()
    sched_rec = LrSchedulerRecord.load(files["scheduler"]) if "scheduler" in files else LrSchedulerRecord()
    meta = torch_meta(optim_rec)
    live = module if module is not None and is_torch_module(module) else None
    torch_types = {**(module_types_of(live) if live is not None else {}), **meta.get("model", {}).get("types", {})}
    types = ModuleTypes(module_types, type_rules, torch_types=torch_types, infer=infer_types)
    remapper = remap if isinstance(remap, KeyRemapper) or remap is None else KeyRemapper(remap)
    model = model_to_pytorch(ModuleRecord.load(files["model"]), meta.get("model", {}), types, remapper, live, report)
    optimizer_sd = optimizer_to_pytorch(optim_rec, meta.get("optimizer"), optimizer_config, model, live, report, by_name=dcp)
    scheduler_sd = scheduler_to_pytorch(sched_rec, meta.get("scheduler"), scheduler_config, optimizer_sd, report)
    result = TorchTrainingState(model.state_dict, optimizer_sd, scheduler_sd, dict(meta.get("extra", {})), None,
                                dict(torch_types), dict(meta.get("keys", {})))  # fmt: skip
    if out is not None:
        _save_torch(result, Path(out), overwrite, report, progress, dcp=dcp)
    return result, report


def _save_torch(
    state: TorchTrainingState, out: Path, overwrite: bool, report: CheckpointReport, progress: ProgressSetting, *, dcp: bool
) -> None:
    """``torch.save`` into the file ``out``, or ``dcp.save`` into the folder ``out`` (whose
    progress shows at its end: torch's DCP writer reports none)."""
    from ...core.frameworks import is_torch_tensor
    from ..tensors import flatten_nested
    from ..torch_live import torch_save

    obj = state.to_torch()
    total = sum(t.numel() * t.element_size() for _, t in flatten_nested(obj, is_torch_tensor, {}))
    bar = progress_for(progress, total, "writing")
    if dcp:
        write_dcp_state(obj, out, overwrite=overwrite)
        bar(total)
    else:
        torch_save(obj, out, overwrite=overwrite, progress=bar)
    finish(bar)
    report.files["dcp" if dcp else "pytorch"] = str(out)
