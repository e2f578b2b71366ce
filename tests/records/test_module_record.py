"""ModuleRecord: Burn's layout, the MNIST file, and load semantics (burn-core src/store/mod.rs)."""

from __future__ import annotations

import itertools
import json

import ml_dtypes
import numpy as np
import pytest

import burnpack
from burnpack import DType, ModuleRecord
from burnpack.records import DTypePolicy, Param, RecordCastError, RecordValidationError, RunningState, io_display, load_record
from tests.conftest import BURN_EXAMPLES, require
from tests.records.helpers import IDS, MNIST_PATHS, two_layer_arrays, two_layer_record

MNIST = BURN_EXAMPLES / "mnist-model.bpk"


@pytest.fixture(scope="module")
def mnist() -> ModuleRecord:
    return ModuleRecord.load(require(MNIST))


# -- the real Burn file ------------------------------------------------------------------------
def test_mnist_record_has_its_18_parameters_in_field_order(mnist):
    assert len(mnist) == 18
    assert mnist.paths == MNIST_PATHS
    assert mnist.num_elements == 260_810
    assert {t.dtype for t in mnist.tensors} == {DType.F32}
    assert mnist["conv1.conv.weight"].shape == (64, 1, 3, 3) and mnist["fc1.weight"].shape == (1600, 128)


def test_mnist_record_keeps_burns_param_ids(mnist):
    sidecar = json.loads(require(BURN_EXAMPLES / "mnist-model.json").read_text())
    assert mnist.param_ids == {t["name"]: t["param_id"] for t in sidecar["tensors"]}
    assert mnist.param_ids["fc1.weight"] == 1730029982897944783


def test_mnist_record_resaves_byte_identically(mnist, tmp_path):
    original = MNIST.read_bytes()
    assert mnist.into_bytes() == original
    assert ModuleRecord.from_bytes(original).into_bytes() == original
    assert mnist.save(tmp_path / "model").read_bytes() == original


def test_mnist_record_rebuilt_from_its_params_is_byte_identical(mnist):
    assert ModuleRecord.from_module(mnist.params()).into_bytes() == MNIST.read_bytes()


def test_mnist_record_applied_to_a_fresh_model_restores_values_and_ids(mnist):
    target = {path: Param(np.zeros(t.shape, np.float32), param_id=7) for path, t in zip(mnist.paths, mnist.tensors)}
    result = mnist.apply(target)
    assert result.report.applied == MNIST_PATHS and result.report.is_success()
    assert result.param_ids == mnist.param_ids
    np.testing.assert_array_equal(result.module["fc3.bias"].value, mnist["fc3.bias"].numpy())
    assert ModuleRecord.from_module(result.module).into_bytes() == MNIST.read_bytes()


# -- missing / extra / wrongly shaped parameters under every option combination -------------------
def _mnist_target(mnist: ModuleRecord, *, missing: bool, extra: bool, wrong_shape: bool) -> dict:
    target = {p: np.full(t.shape, 7.0, np.float32) for p, t in zip(mnist.paths, mnist.tensors)}
    if missing:  # the target lacks a parameter the record has: the entry is unused
        del target["fc3.bias"]
    if extra:  # the target has a parameter the record lacks: it is missing
        target["fc4.bias"] = np.full(10, 7.0, np.float32)
    if wrong_shape:
        target["fc2.weight"] = np.full((128, 64), 7.0, np.float32)
    return target


def _burn_outcome(validate, allow_partial, allow_unused, *, missing, extra, wrong_shape):
    """ModuleRecord::apply's checks, in its order (mod.rs:239-265)."""
    if validate and wrong_shape:
        return "apply"
    if not allow_partial and extra:
        return "missing"
    if not allow_unused and missing:
        return "unused"
    return "ok"


CASES = [c for c in itertools.product([False, True], repeat=3) if any(c)]
OPTIONS = list(itertools.product([True, False], repeat=3))


@pytest.mark.parametrize("missing,extra,wrong_shape", CASES)
@pytest.mark.parametrize("validate,allow_partial,allow_unused", OPTIONS)
def test_mnist_load_outcome_follows_burns_check_order(mnist, missing, extra, wrong_shape, validate, allow_partial, allow_unused):
    record = mnist.validate(validate).allow_partial(allow_partial).allow_unused(allow_unused)
    target = _mnist_target(mnist, missing=missing, extra=extra, wrong_shape=wrong_shape)
    expected = _burn_outcome(validate, allow_partial, allow_unused, missing=missing, extra=extra, wrong_shape=wrong_shape)
    if expected != "ok":
        with pytest.raises(RecordValidationError) as info:
            record.apply(target)
        assert info.value.kind == expected
        return
    result = record.apply(target)
    loaded = result.numpy()
    np.testing.assert_array_equal(loaded["fc1.weight"], mnist["fc1.weight"].numpy())
    if wrong_shape:  # skipped: keeps its value
        assert (loaded["fc2.weight"] == 7.0).all() and result.report.skipped == ["fc2.weight"]
    if extra:  # missing: keeps its value
        assert (loaded["fc4.bias"] == 7.0).all() and result.report.missing == ["fc4.bias"]
    if missing:
        assert "fc3.bias" not in loaded and result.report.unused == ["fc3.bias"]


def test_missing_tensors_error_has_burns_text_and_suggests_the_closest_key(mnist):
    target = _mnist_target(mnist, missing=True, extra=True, wrong_shape=False)
    with pytest.raises(RecordValidationError) as info:
        mnist.apply(target)
    assert info.value.payload == 'Missing tensors: ["fc4.bias"]'
    assert info.value.display == 'Record validation error: Missing tensors: ["fc4.bias"]'
    assert info.value.report.suggestions == {"fc4.bias": "fc3.bias"}
    assert "did you mean 'fc3.bias'?" in str(info.value)


def test_unused_tensors_error_lists_them_sorted_in_burns_text(mnist):
    target = {p: np.zeros(t.shape, np.float32) for p, t in zip(mnist.paths, mnist.tensors) if not p.startswith("fc")}
    with pytest.raises(RecordValidationError) as info:
        mnist.apply(target)
    assert info.value.payload == 'Unused tensors: ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "fc3.bias", "fc3.weight"]'


def test_apply_errors_text_uses_burns_shape_debug(mnist):
    target = _mnist_target(mnist, missing=False, extra=False, wrong_shape=True)
    with pytest.raises(RecordValidationError) as info:
        mnist.apply(target)
    assert info.value.payload == (
        'Apply errors: ["fc2.weight: shape mismatch, expected Shape { dims: [128, 64] } '
        'but record has Shape { dims: [128, 128] }"]'
    )


def test_validate_false_silences_only_shape_mismatches(mnist):
    target = _mnist_target(mnist, missing=False, extra=True, wrong_shape=True)
    with pytest.raises(RecordValidationError) as info:
        mnist.validate(False).apply(target)
    assert info.value.kind == "missing"


def test_options_return_configured_copies(mnist):
    partial = mnist.allow_partial(True)
    assert partial.options["allow_partial"] and not mnist.options["allow_partial"]
    assert mnist.options == {"dtype_policy": DTypePolicy.FromRecord, "allow_partial": False, "allow_unused": False, "validate": True}
    assert mnist.cast_to_module_dtype().dtype_policy is DTypePolicy.CastToModule


def test_report_describes_a_load_without_raising(mnist):
    report = mnist.report(_mnist_target(mnist, missing=True, extra=True, wrong_shape=True))
    assert (report.missing, report.unused, [e.path for e in report.errors]) == (["fc4.bias"], ["fc3.bias"], ["fc2.weight"])
    assert "missing: fc4.bias (did you mean 'fc3.bias'?)" in str(report)


# -- ids ----------------------------------------------------------------------------------------
def test_every_written_tensor_carries_its_param_id():
    with burnpack.load(two_layer_record().into_bytes()) as pack:
        assert {name: pack[name].param_id for name in pack} == IDS
        assert not pack.metadata and not pack.scalars


def test_record_without_param_ids_gets_fresh_unique_ones():
    data = burnpack.save_bytes(two_layer_arrays())
    record = ModuleRecord.from_bytes(data)
    ids = list(record.param_ids.values())
    assert all(isinstance(i, int) and 0 <= i < 2**64 for i in ids) and len(set(ids)) == 4


def test_target_takes_the_record_ids_and_unloaded_params_keep_theirs():
    record = two_layer_record().allow_partial(True)
    target = {"fc1.weight": Param(np.zeros((2, 3), np.float32), 1), "other": Param(np.zeros(2, np.float32), 2)}
    result = record.allow_unused(True).apply(target)
    assert result.param_ids == {"fc1.weight": IDS["fc1.weight"], "other": 2}


def test_from_module_keeps_given_ids_and_draws_the_rest():
    record = ModuleRecord.from_module(two_layer_arrays(), param_ids={"fc1.bias": 5})
    assert record.param_ids["fc1.bias"] == 5
    assert len(set(record.param_ids.values())) == 4


# -- dtype policies -------------------------------------------------------------------------------
def _one(dtype_array):
    return ModuleRecord.from_module({"w": dtype_array})


def test_from_record_policy_gives_the_parameter_the_records_dtype():
    record = _one(np.array([1.5, -2.25], np.float32))
    result = record.apply({"w": np.zeros(2, np.float16)})
    assert result.params["w"].dtype == DType.F32 and result.params["w"].value.dtype == np.float32


@pytest.mark.parametrize(
    "source,target,expected",
    [
        (np.array([1.5, -2.25, 70000.0], np.float32), np.float16, np.array([1.5, -2.25, np.inf], np.float16)),
        (np.array([1.5, 1.00390625], np.float32), ml_dtypes.bfloat16, np.array([1.5, 1.0], ml_dtypes.bfloat16)),
        (np.array([1.5, -2.25], np.float16), np.float32, np.array([1.5, -2.25], np.float32)),
        (np.array([1.5, -2.25], ml_dtypes.bfloat16), np.float32, np.array([1.5, -2.25], np.float32)),
        (np.array([3, -4], np.int64), np.int32, np.array([3, -4], np.int32)),
        (np.array([3, 200], np.uint8), np.int16, np.array([3, 200], np.int16)),
        (np.array([2.9, -2.9], np.float32), np.int32, np.array([2, -2], np.int32)),
        (np.array([0, 3], np.int32), np.bool_, np.array([False, True])),
        (np.array([True, False]), np.float32, np.array([1.0, 0.0], np.float32)),
    ],
    ids=["f32-f16", "f32-bf16", "f16-f32", "bf16-f32", "i64-i32", "u8-i16", "f32-i32-truncates", "i32-bool", "bool-f32"],
)
def test_cast_to_module_policy_converts_as_burn_does(source, target, expected):
    result = _one(source).cast_to_module_dtype().apply({"w": np.zeros(source.shape, target)})
    loaded = result.params["w"].value
    assert loaded.dtype == np.dtype(target)
    np.testing.assert_array_equal(loaded, expected)


@pytest.mark.parametrize(
    "source,target",
    [(np.array([300], np.int32), np.int8), (np.array([-1], np.int64), np.uint32), (np.array([np.nan], np.float32), np.int32)],
    ids=["i32-i8-overflow", "negative-to-unsigned", "nan-to-int"],
)
def test_cast_to_module_policy_refuses_values_the_target_cannot_hold(source, target):
    with pytest.raises(RecordCastError):
        _one(source).cast_to_module_dtype().apply({"w": np.zeros(source.shape, target)})


def test_cast_to_module_uses_a_params_pinned_dtype():
    record = _one(np.array([1, 0, 2], np.int32)).with_dtype_policy("CastToModule")
    result = record.apply({"w": Param(np.zeros(3, np.uint8), dtype=DType.Bool(burnpack.BoolStore.U8))})
    assert result.params["w"].dtype == DType.Bool(burnpack.BoolStore.U8)
    np.testing.assert_array_equal(result.params["w"].value, np.array([1, 0, 1], np.uint8))


# -- files, groups ---------------------------------------------------------------------------------
def test_save_appends_bpk_and_load_finds_it(tmp_path):
    written = two_layer_record().save(tmp_path / "model")
    assert written.name == "model.bpk"
    assert ModuleRecord.load(tmp_path / "model").same_content(two_layer_record())


def test_resaving_over_the_loaded_file_is_safe(tmp_path):
    path = two_layer_record().save(tmp_path / "model.bpk")
    record = ModuleRecord.load(path)
    record.save(path)
    assert ModuleRecord.load(path).same_content(two_layer_record())


def test_into_record_group_keeps_the_matching_parameters():
    record = two_layer_record()
    group = record.into_record_group(regex=r"^fc1\.", ids=[IDS["fc2.bias"]])
    assert group.paths == ["fc1.weight", "fc1.bias", "fc2.bias"]
    result = group.allow_partial(True).apply(two_layer_arrays())
    assert result.report.missing == ["fc2.weight"]


def test_record_tensors_can_be_sources_and_targets():
    record = two_layer_record()
    rebuilt = ModuleRecord.from_tensors({t.name: t for t in record.tensors})
    assert rebuilt.into_bytes() == record.into_bytes()
    result = load_record({t.name: t for t in record.tensors}, record)
    assert result.param_ids == IDS


def test_running_state_keeps_its_own_id_on_load():
    # burn-core param/running.rs drops the id that loading returns.
    record = ModuleRecord.from_module({"norm": {"gamma": Param(np.ones(2, np.float32), 1), "running_var": Param(np.ones(2, np.float32), 2)}})
    target = {"norm": {"gamma": Param(np.zeros(2, np.float32), 10), "running_var": RunningState(np.zeros(2, np.float32), 20)}}
    result = record.apply(target)
    assert result.param_ids == {"norm.gamma": 1, "norm.running_var": 20}
    assert isinstance(result.module["norm"]["running_var"], RunningState)
    np.testing.assert_array_equal(result.module["norm"]["running_var"].value, np.ones(2))


def test_quantized_parameters_round_trip_through_params_and_apply():
    from tests.conftest import BURN_PACK_FIXTURES

    data = require(BURN_PACK_FIXTURES / "qfloat_q8s_per_tensor.bpk").read_bytes()
    record = ModuleRecord.from_bytes(ModuleRecord.from_bytes(data).into_bytes())
    assert record["q"].dtype.variant == "QFloat" and record["q"].shape == (8,)
    assert ModuleRecord.from_module(record.params()).into_bytes() == record.into_bytes()
    loaded = record.apply(record.params())
    assert ModuleRecord.from_module(loaded.module).into_bytes() == record.into_bytes()
    with pytest.raises(RecordCastError):
        record.cast_to_module_dtype().apply({"q": np.zeros(8, np.float32)})


def test_format_errors_display_as_burns_record_io_errors(tmp_path):
    bad = tmp_path / "model.bpk"
    bad.write_bytes(b"BURN" + bytes(20))
    with pytest.raises(burnpack.InvalidMagicNumber) as info:
        ModuleRecord.load(bad)
    assert io_display(info.value) == "Record I/O error: Invalid magic number"
