"""Inputs the view tests look at: a Learner checkpoint directory written the way Burn writes one,
and packs with hostile names."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import burnpack
from burnpack import LrSchedulerRecord, ModuleRecord, OptimizerRecord
from burnpack.records import AdamState, Checkpoints, CosineAnnealingLrScheduler, ModuleLrScheduler

TRAIN_LOSS = [2.31, 0.92, 0.48, 0.36, 0.30]
VALID_LOSS = [1.20, 0.61, 0.44, 0.47, 0.52]  # best at epoch 3, then it diverges
LEARNING_RATE = [1e-3, 9.05e-4, 6.55e-4, 3.45e-4, 9.5e-5]


def _log(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def training_run(artifact_dir: Path, model_path: Path, epochs: int = 5) -> dict[int, dict[str, np.ndarray]]:
    """Five epochs of a run on the weights of ``model_path``: checkpoints through ``Checkpoints``
    (Burn's default retention), and the metric logs burn-train's ``FileMetricLogger`` writes
    (``<split>/epoch-N/<Metric>.log``, one ``value,count`` entry per iteration). Returns the model
    arrays saved per epoch."""
    with burnpack.load(model_path) as pack:
        base = {name: pack[name].numpy().copy() for name in pack.names}
        ids = {name: pack[name].param_id for name in pack.names}
    rng = np.random.default_rng(7)
    checkpoints = Checkpoints(artifact_dir)
    saved = {}
    weights = base
    for epoch in range(1, epochs + 1):
        scale = 0.05 / epoch
        weights = {n: (a + rng.normal(0, scale, a.shape).astype(a.dtype)) if "running" not in n else a for n, a in weights.items()}
        model = ModuleRecord.from_tensors(weights, param_ids=ids)
        optim = OptimizerRecord.from_states({n: AdamState(epoch * 100, a * 0.1, a * a) for n, a in weights.items()}, module=model)
        scheduler: LrSchedulerRecord = ModuleLrScheduler.of(CosineAnnealingLrScheduler(epoch * 100)).to_record()
        checkpoints.save_epoch(epoch, model=model, optim=optim, scheduler=scheduler, valid_loss=VALID_LOSS[epoch - 1])
        saved[epoch] = weights
        for split, loss in (("train", TRAIN_LOSS), ("valid", VALID_LOSS)):
            half = loss[epoch - 1]
            _log(artifact_dir / split / f"epoch-{epoch}" / "Loss.log", [f"{half * 1.1},32", f"{half * 0.9},32"])
            _log(artifact_dir / split / f"epoch-{epoch}" / "Accuracy.log", [f"{100 - 40 * half},32", f"{100 - 40 * half},32"])
        _log(artifact_dir / "train" / f"epoch-{epoch}" / "Learning_Rate.log", [f"{LEARNING_RATE[epoch - 1]},1"] * 3)
    return saved


HOSTILE = [
    '<script>alert("x")</script>.weight',
    'layer"quote\'.bias',
    "ctl\x07bell\x1b[31m.weight",
    "bidi\u202eevil\u2066.weight",
    "&amp;<img src=x onerror=alert(1)>.w",
]


def hostile_pack(path: Path) -> Path:
    """A pack whose tensor names, metadata and scalars carry markup, quotes, control and bidi characters."""
    tensors = [burnpack.Tensor.from_numpy(name, np.arange(4, dtype=np.float32) + i) for i, name in enumerate(HOSTILE)]
    burnpack.save(tensors, path, metadata={"</script><script>alert(2)</script>": "\u202e<b>bold</b>\x00"},
                  scalars={"<i>lr</i>": burnpack.Scalar.Float(0.5)})  # fmt: skip
    return path
