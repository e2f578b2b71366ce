"""Record kinds by content (records.md §6) and the ``checkpoint inspect`` / ``inspect`` commands."""

from __future__ import annotations

import json

import numpy as np
import pytest

import burnpack
from burnpack import LrSchedulerRecord, OptimizerRecord, Scalar
from burnpack.cli.main import main
from burnpack.records import (
    AdamState,
    Checkpoints,
    ComposedLrScheduler,
    CosineAnnealingLrScheduler,
    LBFGSState,
    LinearLrScheduler,
    ModuleLrScheduler,
    SgdState,
    detect_record_kind,
)
from tests.conftest import BURN_EXAMPLES, require
from tests.records.helpers import two_layer_arrays, two_layer_record


def _kind(data: bytes):
    with burnpack.load(data) as pack:
        return detect_record_kind(pack)


def _adam() -> OptimizerRecord:
    return OptimizerRecord.from_states({p: AdamState(4, a, a) for p, a in two_layer_arrays().items()}, module=two_layer_record())


def _scheduler() -> LrSchedulerRecord:
    return ModuleLrScheduler.of(ComposedLrScheduler([CosineAnnealingLrScheduler(7), LinearLrScheduler(3)])).to_record()


def test_mnist_file_is_recognised_as_a_module_record():
    with burnpack.load(require(BURN_EXAMPLES / "mnist-model.bpk")) as pack:
        kind = detect_record_kind(pack)
    assert kind.kind == "module" and kind.summary.startswith("18 parameters, 260,810 elements, F32")


def test_optimizer_record_is_recognised_with_its_kind_and_step():
    kind = _kind(_adam().into_bytes())
    assert kind.kind == "optimizer" and kind.summary == "Adam/AdamW, 4 parameter states, step 4"


def test_stateless_sgd_record_is_recognised_by_its_rank_scalars():
    record = OptimizerRecord().set_state(3, SgdState(), rank=2, path="w")
    assert _kind(record.into_bytes()).kind == "optimizer"


def test_lbfgs_record_is_recognised():
    kind = _kind(OptimizerRecord.from_lbfgs(LBFGSState(history_s=[np.ones(2, np.float32)], history_y=[np.ones(2, np.float32)], g_iter=2)).into_bytes())
    assert kind.kind == "optimizer" and kind.summary.startswith("LBFGS")


def test_scheduler_record_is_recognised_with_its_state():
    kind = _kind(_scheduler().into_bytes())
    assert kind.kind == "scheduler"
    assert "cosine current_iter=7" in kind.summary and "linear remaining_iters=3" in kind.summary


def test_empty_pack_is_reported_as_ambiguous():
    kind = _kind(LrSchedulerRecord().into_bytes())
    assert kind.kind == "empty" and "constant-LR scheduler" in kind.summary


def test_generic_pack_is_not_taken_for_a_record():
    kind = _kind(burnpack.save_bytes({"w": np.ones(2, np.float32)}, scalars={"epoch": Scalar.Int(3)}))
    assert kind.kind == "unknown"


def test_inspect_command_names_the_record_kind(tmp_path, capsys):
    path = _adam().save(tmp_path / "optim")
    assert main(["inspect", str(path)]) == 0
    assert "record kind: optimizer record: Adam/AdamW" in capsys.readouterr().out


@pytest.fixture
def artifact(tmp_path):
    checkpoints = Checkpoints(tmp_path)
    for epoch in (1, 2, 3):
        checkpoints.save_epoch(epoch, model=two_layer_record(), optim=_adam(), scheduler=_scheduler())
    return tmp_path


def test_checkpoint_inspect_reports_every_epoch(artifact, capsys):
    assert main(["checkpoint", "inspect", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert "epochs: 2, 3 (complete: 2, 3)" in out
    assert "model-3.bpk: 4 parameters, 13 elements (F32)" in out
    assert "optim-3.bpk: Adam/AdamW, 4 parameter states, step 4" in out
    assert "scheduler-3.bpk: module [0: composed [0: cosine current_iter=7; 1: linear remaining_iters=3]]" in out
    assert "ids        consistent" in out


def test_checkpoint_inspect_flags_inconsistent_ids(artifact, capsys):
    OptimizerRecord().set_state(5, SgdState(np.ones(3, np.float32)), path="fc1.bias").save(artifact / "checkpoint" / "optim-3.bpk")
    assert main(["checkpoint", "inspect", str(artifact / "checkpoint")]) == 0
    out = capsys.readouterr().out
    assert "optimizer state for id 5 (fc1.bias) matches no model parameter" in out


def test_checkpoint_inspect_json_has_the_same_facts(artifact, capsys):
    assert main(["checkpoint", "inspect", "--json", str(artifact)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["epochs"] == [2, 3]
    epoch = report["details"][1]
    assert epoch["optim"] == {"kind": "Adam/AdamW", "step": 4, "tensors": 8, "states": 4}
    assert epoch["ids"]["consistent"] and epoch["model"]["parameters"] == 4


def test_checkpoint_inspect_reports_an_unreadable_file_with_exit_1(artifact, capsys):
    (artifact / "checkpoint" / "model-3.bpk").write_bytes(b"not a burnpack")
    assert main(["checkpoint", "inspect", str(artifact)]) == 1
    assert "model-3.bpk: unreadable: InvalidMagicNumber" in capsys.readouterr().out


def test_checkpoint_inspect_without_checkpoints_exits_1(tmp_path, capsys):
    assert main(["checkpoint", "inspect", str(tmp_path)]) == 1
    assert "no checkpoints" in capsys.readouterr().out


# ----------------------------------------------------------- scheduler values say what they mean
_NOT_STEPPED = "cosine annealing: not stepped yet (u64::MAX, which the first step wraps to iteration 0)"


def _fresh_cosine() -> LrSchedulerRecord:
    return ModuleLrScheduler.of(CosineAnnealingLrScheduler.initial()).to_record()


def test_the_record_kind_of_a_scheduler_says_what_its_values_mean():
    kind = _kind(_fresh_cosine().into_bytes())
    assert kind.meaning == "group 0: " + _NOT_STEPPED
    assert _kind(two_layer_record().into_bytes()).meaning is None


def test_inspect_of_a_scheduler_record_explains_its_values(tmp_path, capsys):
    path = _fresh_cosine().save(tmp_path / "scheduler")
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "record kind: scheduler record: 1 scalar; module [0: cosine current_iter=18446744073709551615]"
    assert lines[1] == "learning-rate scheduler: group 0: " + _NOT_STEPPED
    assert main(["inspect", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["scheduler"] == "group 0: " + _NOT_STEPPED


def test_inspect_of_another_record_has_no_scheduler_line(tmp_path, capsys):
    assert main(["inspect", str(_adam().save(tmp_path / "optim"))]) == 0
    assert "learning-rate scheduler" not in capsys.readouterr().out


def test_checkpoint_inspect_explains_the_scheduler_values(tmp_path, capsys):
    Checkpoints(tmp_path).save_epoch(1, model=two_layer_record(), optim=_adam(), scheduler=_fresh_cosine())
    assert main(["checkpoint", "inspect", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("  scheduler  scheduler-1.bpk: module [0: cosine current_iter=18446744073709551615]")
    assert lines[at + 1] == "             group 0: " + _NOT_STEPPED
