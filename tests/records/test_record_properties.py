"""Property tests: module trees and optimizer records survive bytes exactly (small budgets)."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnpack import LrSchedulerRecord, ModuleRecord, OptimizerRecord, Scalar
from burnpack.records import AdamState, Ignored, Param, Reparameterized, RmsPropState, SgdState, Variant, module_paths
from tests.strategies import arrays, scalars

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

identifiers = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
param_ids = st.none() | st.integers(0, 2**64 - 1)
leaves = st.one_of(arrays(), st.builds(Param, arrays(), param_ids))
skipped = st.sampled_from([None, 0.5, 3, "name", True, Ignored(np.ones(2))])


def _modules(children):
    return st.one_of(
        st.dictionaries(identifiers, children, max_size=3),
        st.lists(children, max_size=3),
        st.builds(Variant, st.sampled_from(["Base", "Depthwise"]), children),
        st.builds(Reparameterized, arrays(), st.just("lora"), st.fixed_dictionaries({"a": arrays(), "b": arrays()})),
    )


module_trees = st.dictionaries(identifiers, st.recursive(leaves | skipped, _modules, max_leaves=8), max_size=4)


@FAST
@given(module_trees)
def test_module_tree_to_record_to_bytes_and_back_is_the_identity(tree):
    record = ModuleRecord.from_module(tree)
    data = record.into_bytes()
    again = ModuleRecord.from_bytes(data)
    assert again.into_bytes() == data
    assert _content(again) == _content(record)
    # Data order comes back from the offsets; only empty tensors sharing one offset cannot say
    # which was written first (their order never changes the bytes).
    assert _nonempty(again.paths, again) == _nonempty(list(module_paths(tree)), record)


def _content(record):
    return {t.name: (t.param_id, t.dtype, t.shape, t.tobytes()) for t in record.tensors}


def _nonempty(paths, record):
    return [p for p in paths if record[p].byte_len]


@FAST
@given(module_trees)
def test_applying_a_record_to_its_own_module_restores_the_same_record(tree):
    record = ModuleRecord.from_module(tree)
    loaded = record.apply(tree)
    assert loaded.report.applied == record.paths
    assert ModuleRecord.from_module(loaded.module).into_bytes() == record.into_bytes()


def _bits(scalar: Scalar):
    return (scalar.variant, struct.pack("<d", scalar.value) if scalar.variant == "Float" else scalar.value)


@FAST
@given(st.dictionaries(st.text(max_size=8).filter(lambda k: not k[:1].isdigit() and k[:1] != "+"), scalars, max_size=6), st.lists(st.integers(0, 2**64 - 1), max_size=3, unique=True))
def test_optimizer_record_survives_bytes_with_every_scalar_kind_exact(extra_scalars, ids):
    record = OptimizerRecord(scalars=extra_scalars)
    for i, pid in enumerate(ids):
        array = np.full((2, i + 1), float(i), np.float32)
        state = [AdamState(pid % 1000, array, array), SgdState(array), RmsPropState(array, array, momentum_buf=array)][i % 3]
        record.set_state(pid, state, path=f"layer{i}.weight")
    data = record.into_bytes()
    again = OptimizerRecord.from_bytes(data)
    assert again.same_content(record) and again.into_bytes() == data
    assert {k: _bits(v) for k, v in again.scalars.items()} == {k: _bits(v) for k, v in record.scalars.items()}
    assert set(again.states()) == set(ids)


@FAST
@given(st.dictionaries(st.text(max_size=8), scalars, max_size=6))
def test_scheduler_record_survives_bytes_with_every_scalar_kind_exact(entries):
    record = LrSchedulerRecord(entries)
    again = LrSchedulerRecord.from_bytes(record.into_bytes())
    assert {k: _bits(v) for k, v in again.scalars.items()} == {k: _bits(v) for k, v in entries.items()}
