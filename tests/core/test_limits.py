"""One limits concept: ``load``'s limits and the foreign-format readers' caps are one kind of
object, refuse a bad value with one error class, and name the keyword that lifts them in one
wording."""

from __future__ import annotations

import numpy as np
import pytest

import burnpack
from burnpack.core.limits import LoadLimits, Limits, lift
from burnpack.errors import OptionError, ValidationError
from burnpack.interop.limits import ReadLimits
from burnpack.interop.registry import read_tensors


def test_load_limits_and_read_caps_are_one_kind_of_limits():
    assert issubclass(LoadLimits, Limits) and issubclass(ReadLimits, Limits)
    assert LoadLimits().max_tensors == 100_000 and ReadLimits().max_pickle_depth == 128


@pytest.mark.parametrize("bad", [-1, 1.5, "8", True])
def test_a_limit_that_is_not_a_non_negative_int_is_one_option_error_wherever_it_is_given(tmp_path, bad):
    burnpack.save({"w": np.zeros(2, np.float32)}, tmp_path / "w.bpk")
    with pytest.raises(OptionError, match=f"max_tensors must be a non-negative int, not {bad!r}"):
        burnpack.load(tmp_path / "w.bpk", max_tensors=bad)
    with pytest.raises(OptionError, match=f"max_pickle_depth must be a non-negative int, not {bad!r}"):
        read_tensors(tmp_path / "w.pt", max_pickle_depth=bad)


def test_a_limit_a_class_does_not_have_is_an_option_error():
    with pytest.raises(OptionError, match="unknown limit 'max_tensors'; the limits are max_pickle_depth"):
        ReadLimits.of({"max_tensors": 3})
    with pytest.raises(OptionError, match="unknown limit 'max_pickle_depth'; the limits are max_metadata_size, max_tensors"):
        LoadLimits.of({"max_pickle_depth": 3})


def test_every_refusal_names_the_keyword_that_lifts_it_in_one_wording(tmp_path):
    burnpack.save({"a": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)}, tmp_path / "w.bpk")
    with pytest.raises(ValidationError) as refused:
        burnpack.load(tmp_path / "w.bpk", max_tensors=1)
    assert lift("max_tensors", 1) in str(refused.value) == f"{refused.value.payload} ({lift('max_tensors', 1)})"
    assert ReadLimits(max_pickle_depth=5).lift("max_pickle_depth") == lift("max_pickle_depth", 5) == (
        "the limit max_pickle_depth=5; a larger max_pickle_depth= lifts it"
    )


def test_limits_are_frozen_values_made_by_position_or_keyword():
    assert LoadLimits(1, 2, 3) == LoadLimits(max_metadata_size=1, max_tensors=2, max_tensor_size=3) != LoadLimits()
    assert hash(ReadLimits(max_pickle_depth=5)) == hash(ReadLimits(max_pickle_depth=5)) and LoadLimits() != ReadLimits()
    assert repr(LoadLimits(1, 2, 3)) == "LoadLimits(max_metadata_size=1, max_tensors=2, max_tensor_size=3)"
    with pytest.raises(AttributeError, match="frozen"):
        LoadLimits().max_tensors = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="unknown limit 'max_pickle_depth'"):
        LoadLimits(max_pickle_depth=3)  # type: ignore[call-arg]
