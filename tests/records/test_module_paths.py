"""Python structures → Burn parameter paths (records.md §1.1)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from burnpack import ModuleRecord
from burnpack.records import Ignored, Param, Reparameterized, Variant, map_params, module_paths

W = np.zeros((2, 2), np.float32)
B = np.zeros(2, np.float32)


def test_struct_fields_become_dotted_segments():
    assert list(module_paths({"conv1": {"conv": {"weight": W, "bias": B}}})) == ["conv1.conv.weight", "conv1.conv.bias"]


def test_sequences_are_indexed_like_burns_vec():
    assert list(module_paths({"layers": [{"weight": W}, {"weight": W}]})) == ["layers.0.weight", "layers.1.weight"]


def test_tuples_are_indexed_too():
    assert list(module_paths({"pair": (W, B)})) == ["pair.0", "pair.1"]


def test_enum_variant_name_is_a_path_segment():
    assert list(module_paths({"feature": Variant("Base", {"weight": W})})) == ["feature.Base.weight"]


def test_none_option_adds_nothing():
    assert list(module_paths({"pool": None, "fc": {"weight": W, "bias": None}})) == ["fc.weight"]


def test_lora_factors_sit_below_the_base_parameter():
    tree = {"fc": {"weight": Reparameterized(W, "lora", {"a": W, "b": W})}}
    assert list(module_paths(tree)) == ["fc.weight", "fc.weight.lora.a", "fc.weight.lora.b"]


def test_primitives_constants_and_ignored_fields_are_skipped():
    tree = {"dropout": 0.5, "name": "m", "steps": 3, "flag": True, "k": np.float32(1), "mask": Ignored(W), "w": W}
    assert list(module_paths(tree)) == ["w"]


def test_dataclass_fields_are_struct_fields_and_can_be_skipped():
    @dataclasses.dataclass
    class Linear:
        weight: np.ndarray
        bias: np.ndarray | None = None
        cache: np.ndarray | None = dataclasses.field(default=None, metadata={"burn": "skip"})

    assert list(module_paths({"fc": Linear(W, B, cache=W)})) == ["fc.weight", "fc.bias"]


def test_namedtuple_fields_are_named_segments():
    class Norm(NamedTuple):
        gamma: np.ndarray
        beta: np.ndarray

    assert list(module_paths({"norm": Norm(B, B)})) == ["norm.gamma", "norm.beta"]


def test_unknown_objects_are_refused_with_their_path():
    with pytest.raises(TypeError, match="fc.weight"):
        module_paths({"fc": {"weight": object()}})


def test_two_leaves_on_one_path_are_refused():
    with pytest.raises(ValueError, match="a.b"):
        module_paths({"a.b": W, "a": {"b": W}})


def test_record_data_follows_traversal_order():
    tree = {"z": {"weight": W}, "a": [B, Variant("Base", {"weight": W})]}
    assert ModuleRecord.from_module(tree).paths == ["z.weight", "a.0", "a.1.Base.weight"]


def test_apply_rebuilds_the_nested_structure_with_params():
    tree = {"fc": [{"weight": W}], "act": Variant("Relu", None), "p": 0.1}
    record = ModuleRecord.from_module({"fc": [{"weight": np.ones((2, 2), np.float32)}]})
    loaded = record.apply(tree).module
    assert isinstance(loaded["fc"][0]["weight"], Param) and loaded["p"] == 0.1
    np.testing.assert_array_equal(loaded["fc"][0]["weight"].value, np.ones((2, 2)))


def test_map_params_visits_leaves_with_their_paths():
    seen = []
    map_params({"a": [W], "b": Variant("X", B)}, lambda path, leaf: seen.append(path))
    assert seen == ["a.0", "b.X"]
