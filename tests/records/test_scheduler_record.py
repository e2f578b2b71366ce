"""LrSchedulerRecord: keys and scalar kinds of every scheduler, nesting, Burn's lenient loading (§3)."""

from __future__ import annotations

import numpy as np
import pytest

import burnpack
from burnpack import LrSchedulerRecord, Scalar
from burnpack.records import (
    ComposedLrScheduler,
    ConstantLr,
    CosineAnnealingLrScheduler,
    ExponentialLrScheduler,
    LinearLrScheduler,
    ModuleLrScheduler,
    NoamLrScheduler,
    SchedulerLayoutError,
    SequentialLrScheduler,
    StepLrScheduler,
    infer_scheduler,
)

U64_MAX = 2**64 - 1


@pytest.mark.parametrize(
    "scheduler,scalars",
    [
        (ConstantLr(), {}),
        (LinearLrScheduler.initial(10), {"remaining_iters": Scalar.UInt(11)}),
        (CosineAnnealingLrScheduler.initial(), {"current_iter": Scalar.UInt(U64_MAX)}),
        (ExponentialLrScheduler.initial(0.5, 0.25), {"previous_lr": Scalar.Float(2.0)}),
        (StepLrScheduler.initial(), {"iter_idx": Scalar.Int(-1)}),
        (NoamLrScheduler.initial(), {"step": Scalar.Float(0.0)}),
        (ComposedLrScheduler([LinearLrScheduler(3), StepLrScheduler(4)]), {"0.remaining_iters": Scalar.UInt(3), "1.iter_idx": Scalar.Int(4)}),
        (SequentialLrScheduler([NoamLrScheduler(2.0)], step=5), {"step": Scalar.UInt(5), "0.step": Scalar.Float(2.0)}),
    ],
    ids=["constant", "linear", "cosine", "exponential", "step", "noam", "composed", "sequential"],
)
def test_each_scheduler_writes_its_documented_keys_and_kinds(scheduler, scalars):
    assert scheduler.to_record().scalars == scalars
    assert ModuleLrScheduler.of(scheduler).to_record().scalars == {f"0.{k}": v for k, v in scalars.items()}


def test_constant_scheduler_record_is_the_256_byte_empty_pack():
    data = ModuleLrScheduler.of(ConstantLr()).to_record().into_bytes()
    assert data == bytes.fromhex("4e52554201000a000000a16774656e736f7273a0") + bytes(236)


def test_mnist_examples_composed_scheduler_has_the_documented_keys():
    scheduler = ModuleLrScheduler.of(
        ComposedLrScheduler([CosineAnnealingLrScheduler.initial(), LinearLrScheduler.initial(100), LinearLrScheduler.initial(200)])
    )
    record = scheduler.to_record()
    assert record.scalars == {
        "0.0.current_iter": Scalar.UInt(U64_MAX),
        "0.1.remaining_iters": Scalar.UInt(101),
        "0.2.remaining_iters": Scalar.UInt(201),
    }
    with burnpack.load(record.into_bytes()) as pack:
        assert len(pack) == 0 and not pack.metadata and pack.file_size == 256


def test_sequential_scheduler_via_init_has_its_step_and_children():
    scheduler = ModuleLrScheduler.of(
        SequentialLrScheduler([LinearLrScheduler.initial(4), ExponentialLrScheduler.initial(0.1, 0.5), CosineAnnealingLrScheduler.initial()])
    )
    assert scheduler.to_record().scalars == {
        "0.step": Scalar.UInt(0),
        "0.0.remaining_iters": Scalar.UInt(5),
        "0.1.previous_lr": Scalar.Float(0.2),
        "0.2.current_iter": Scalar.UInt(U64_MAX),
    }


def test_nested_composed_inside_sequential_prefixes_each_level():
    inner = ComposedLrScheduler([StepLrScheduler(2), NoamLrScheduler(3.0)])
    scheduler = ModuleLrScheduler.of(SequentialLrScheduler([inner, LinearLrScheduler(1)], step=7), CosineAnnealingLrScheduler(9))
    assert scheduler.to_record().scalars == {
        "0.step": Scalar.UInt(7),
        "0.0.0.iter_idx": Scalar.Int(2),
        "0.0.1.step": Scalar.Float(3.0),
        "0.1.remaining_iters": Scalar.UInt(1),
        "1.current_iter": Scalar.UInt(9),
    }


def test_load_record_restores_every_level():
    template = ModuleLrScheduler.of(SequentialLrScheduler([ComposedLrScheduler([StepLrScheduler(), NoamLrScheduler()]), LinearLrScheduler(0)]))
    saved = ModuleLrScheduler.of(SequentialLrScheduler([ComposedLrScheduler([StepLrScheduler(5), NoamLrScheduler(6.0)]), LinearLrScheduler(8)], step=3))
    record = LrSchedulerRecord.from_bytes(saved.to_record().into_bytes())
    assert template.load_record(record) == saved


def test_load_record_leaves_missing_or_ill_typed_keys_unchanged_and_reports_them():
    template = ModuleLrScheduler.of(ComposedLrScheduler([CosineAnnealingLrScheduler(1), LinearLrScheduler(2)]))
    record = LrSchedulerRecord({"0.0.current_iter": Scalar.Float(5.0)})
    assert template.load_record(record) == template
    assert template.missing(record) == ["0.0.current_iter", "0.1.remaining_iters"]


def test_load_accepts_integer_kinds_burn_converts():
    record = LrSchedulerRecord({"iter_idx": Scalar.UInt(3), "previous_lr": Scalar.Int(2)})
    assert StepLrScheduler().load_record(record) == StepLrScheduler(3)
    assert ExponentialLrScheduler(1.0).load_record(record) == ExponentialLrScheduler(2.0)
    assert record.scalar("iter_idx", "i32") == 3 and record.scalar("previous_lr", "bool") is None


def test_with_record_and_record_nest_and_strip_prefixes():
    child = LrSchedulerRecord().with_scalar("current_iter", 4, "usize")
    record = LrSchedulerRecord().with_record("0", child.with_record("1", child))
    assert list(record) == ["0.1.current_iter", "0.current_iter"]
    assert record.record("0").record("1") == child


def test_from_bytes_keeps_only_scalars():
    data = burnpack.save_bytes({"w": np.ones(2, np.float32)}, metadata={"k": "v"}, scalars={"0.step": Scalar.UInt(1)})
    assert LrSchedulerRecord.from_bytes(data).scalars == {"0.step": Scalar.UInt(1)}


def test_save_appends_bpk_and_resaves_byte_identically(tmp_path):
    record = ModuleLrScheduler.of(StepLrScheduler(12)).to_record()
    path = record.save(tmp_path / "scheduler-1")
    assert path.name == "scheduler-1.bpk"
    assert LrSchedulerRecord.load(tmp_path / "scheduler-1").into_bytes() == path.read_bytes() == record.into_bytes()


def test_with_scalar_checks_the_rust_type():
    with pytest.raises(burnpack.ValidationError):
        LrSchedulerRecord().with_scalar("iter_idx", 2**31, "i32")
    with pytest.raises(TypeError):
        LrSchedulerRecord().with_scalar("x", 1)


def test_infer_rebuilds_the_tree_from_keys():
    saved = ModuleLrScheduler.of(ComposedLrScheduler([CosineAnnealingLrScheduler(3), ConstantLr(), LinearLrScheduler(4)]))
    assert infer_scheduler(saved.to_record()) == saved
    sequential = ModuleLrScheduler.of(SequentialLrScheduler([NoamLrScheduler(1.0), StepLrScheduler(0)], step=2))
    assert infer_scheduler(sequential.to_record()) == sequential
    assert infer_scheduler(LrSchedulerRecord()) == ModuleLrScheduler([])


def test_infer_refuses_keys_no_scheduler_writes():
    with pytest.raises(SchedulerLayoutError) as info:
        infer_scheduler(LrSchedulerRecord({"0.momentum": Scalar.UInt(1)}))
    assert isinstance(info.value, ValueError) and "'momentum'" in str(info.value)


def test_infer_refuses_a_child_index_past_its_children_limit_without_building_them(monkeypatch):
    import burnpack.records.scheduler as scheduler

    built = []
    monkeypatch.setattr(scheduler, "ConstantLr", lambda: built.append(1) or ConstantLr())
    record = LrSchedulerRecord({"0.100000000.current_iter": Scalar.UInt(1)})
    with pytest.raises(SchedulerLayoutError, match="max_children"):
        infer_scheduler(record)
    assert built == []  # refused before a single gap was filled
    tree = infer_scheduler(LrSchedulerRecord({"0.3.current_iter": Scalar.UInt(1)}), max_children=5)
    assert len(built) == 3 and tree.describe()


def test_infer_refuses_a_child_index_burn_does_not_write():
    with pytest.raises(SchedulerLayoutError, match="'01.current_iter'"):
        infer_scheduler(LrSchedulerRecord({"01.current_iter": Scalar.UInt(1)}))


def test_from_state_and_into_state_read_one_level_like_burn():
    record = LrSchedulerRecord.from_state(StepLrScheduler(4))
    assert record.scalars == {"iter_idx": Scalar.Int(4)}
    assert record.into_state(StepLrScheduler) == StepLrScheduler(4)
    assert record.into_state(LinearLrScheduler) is None
    assert LrSchedulerRecord.from_state(SequentialLrScheduler([LinearLrScheduler(1)], step=2)).scalars == {"step": Scalar.UInt(2)}


# -- what a state means (burn-optim lr_scheduler/*.rs step()) -----------------------------------
@pytest.mark.parametrize(
    "scheduler,meaning",
    [
        (CosineAnnealingLrScheduler.initial(), "cosine annealing: not stepped yet (u64::MAX, which the first step wraps to iteration 0)"),
        (CosineAnnealingLrScheduler(0), "cosine annealing: 1 step taken (at iteration 0)"),
        (LinearLrScheduler.initial(10), "linear: final rate in 11 steps"),
        (LinearLrScheduler(0), "linear: at the final rate"),
        (LinearLrScheduler(U64_MAX), "linear: u64::MAX steps to the final rate (num_iters = u64::MAX - 1): never reached"),
        (StepLrScheduler.initial(), "step: not stepped yet (-1, which the first step makes 0)"),
        (StepLrScheduler(2**31 - 1), "step: i32::MAX steps taken: Burn's next step panics (the counter would overflow)"),
        (SequentialLrScheduler([ConstantLr()], step=U64_MAX),
         "sequential: u64::MAX steps taken: Burn's next step panics (the counter would overflow) [scheduler 0: constant rate (no state)]"),
        (NoamLrScheduler.initial(), "noam: not stepped yet"),
        (ModuleLrScheduler.of(CosineAnnealingLrScheduler(1234567), ConstantLr()),
         "group 0: cosine annealing: 1,234,568 steps taken (at iteration 1,234,567); group 1: constant rate (no state)"),
    ],
)  # fmt: skip
def test_a_state_is_explained_as_burns_step_reads_it(scheduler, meaning):
    assert scheduler.explain() == meaning
