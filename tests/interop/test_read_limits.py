"""The foreign-format readers' caps are keyword parameters: each refusal names the keyword that
lifts it, a larger value lifts it, and a cap the source's reader does not use is refused."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from burnpack.errors import ConversionError, OptionError, PyTorchReadError
from burnpack.interop import (
    convert,
    load_record,
    pytorch_to_burn_checkpoint,
    read_pytorch,
    read_pytorch_object,
    read_tensors,
    read_torch_training_state,
    write_safetensors,
)
from burnpack.interop.limits import DEFAULT_LIMITS, PICKLE_DEPTH_CEILING, ReadLimits
from tests.interop.test_pytorch_reader import f32, storage_ref, tensor, write_zip


def _nested(depth: int) -> dict:
    """A state dict whose one tensor sits ``depth`` dicts deep."""
    root: dict = {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,))}
    for _ in range(depth):
        root = {"d": root}
    return root


def _deep_checkpoint(tmp_path: Path) -> Path:
    return write_zip(tmp_path / "deep.pt", _nested(DEFAULT_LIMITS.max_pickle_depth + 2), {"0": f32([1])})


def _repeating_view(tmp_path: Path) -> Path:
    """One stored element viewed as 2 x 3 (stride 0): its copy takes 24 bytes for 4 stored."""
    root = {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (2, 3), (0, 0))}
    return write_zip(tmp_path / "view.pt", root, {"0": f32([7])})


def _deflated_npz(tmp_path: Path) -> Path:
    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, x=np.zeros(1 << 16, np.uint8))  # 64 KiB from a few hundred bytes
    return path


def test_a_pickle_nested_deeper_than_max_pickle_depth_is_refused_naming_it(tmp_path):
    with pytest.raises(PyTorchReadError, match="max_pickle_depth=128; a larger max_pickle_depth= lifts it"):
        read_pytorch(_deep_checkpoint(tmp_path))


def test_a_larger_max_pickle_depth_reads_the_deeper_pickle(tmp_path):
    path = _deep_checkpoint(tmp_path)
    name = ".".join(["d"] * (DEFAULT_LIMITS.max_pickle_depth + 2) + ["w"])
    assert list(read_pytorch(path, max_pickle_depth=200)) == [name]
    assert read_pytorch_object(path, max_pickle_depth=200) is not None


def test_a_pickle_as_deep_as_the_ceiling_reads_without_recursing(tmp_path):
    # The walks recursed once a level (twice through a list): 511 nested lists were a
    # RecursionError even under the ceiling, and any depth was for a caller already deep in its
    # stack. They now keep their own stack: read here with room for 250 Python frames in all.
    # (A 64 KiB member no tensor uses pays for the long dotted name: names are bounded by the file size.)
    depth = PICKLE_DEPTH_CEILING - 1
    nested: object = tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,))
    for _ in range(depth):
        nested = [nested]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10 * depth)
    try:  # the test's own pickler recurses
        path = write_zip(tmp_path / "deep.pt", {"l": nested}, {"0": f32([1]), "unused": bytes(1 << 16)})
    finally:
        sys.setrecursionlimit(limit)
    sys.setrecursionlimit(250)
    try:
        names = list(read_pytorch(path, max_pickle_depth=PICKLE_DEPTH_CEILING))
        value = read_pytorch_object(path, max_pickle_depth=PICKLE_DEPTH_CEILING)["l"]
    finally:
        sys.setrecursionlimit(limit)
    assert names == [".".join(["l"] + ["0"] * depth)]
    for _ in range(depth):
        (value,) = value
    assert value.tolist() == [1.0]


def test_a_view_copy_beyond_max_view_expansion_is_refused_naming_it(tmp_path):
    with pytest.raises(PyTorchReadError, match="max_view_expansion=0; a larger max_view_expansion= lifts it"):
        read_pytorch(_repeating_view(tmp_path), max_view_expansion=0)


def test_a_view_copy_within_max_view_expansion_is_read(tmp_path):
    assert read_pytorch(_repeating_view(tmp_path), max_view_expansion=20)["w"].tolist() == [[7.0] * 3] * 2


def test_an_archive_inflating_beyond_max_inflate_bytes_is_refused_naming_it(tmp_path):
    with pytest.raises(ConversionError, match="max_inflate_bytes=0; a larger max_inflate_bytes= lifts it"):
        read_tensors(_deflated_npz(tmp_path), max_inflate_bytes=0, max_inflate_ratio=0)


def test_a_larger_max_inflate_ratio_lifts_the_inflation_limit(tmp_path):
    path = _deflated_npz(tmp_path)
    tset = read_tensors(path, max_inflate_bytes=0, max_inflate_ratio=1 << 10)
    assert [e.name for e in tset.entries] == ["x"]


def test_convert_reads_its_source_within_the_caps_it_is_given(tmp_path):
    with pytest.raises(PyTorchReadError, match="max_view_expansion="):
        convert(_repeating_view(tmp_path), tmp_path / "out.safetensors", max_view_expansion=0)
    assert not (tmp_path / "out.safetensors").exists()
    convert(_repeating_view(tmp_path), tmp_path / "out.safetensors", max_view_expansion=20)
    assert read_tensors(tmp_path / "out.safetensors").entries[0].numpy().tolist() == [[7.0] * 3] * 2


def test_load_record_reads_its_source_within_the_caps_it_is_given(tmp_path):
    with pytest.raises(PyTorchReadError, match="max_view_expansion="):
        load_record(_repeating_view(tmp_path), max_view_expansion=0)
    record, _ = load_record(_repeating_view(tmp_path), max_view_expansion=20)
    assert record["w"].numpy().tolist() == [[7.0] * 3] * 2


def test_a_training_state_is_read_within_the_caps_it_is_given(tmp_path):
    with pytest.raises(PyTorchReadError, match="max_view_expansion="):
        read_torch_training_state(model=_repeating_view(tmp_path), max_view_expansion=0)
    state = read_torch_training_state(model=_repeating_view(tmp_path), max_view_expansion=20)
    assert state.model["w"].tolist() == [[7.0] * 3] * 2


def test_pytorch_to_burn_checkpoint_reads_its_files_within_the_caps_it_is_given(tmp_path):
    with pytest.raises(PyTorchReadError, match="max_view_expansion="):
        pytorch_to_burn_checkpoint(model=_repeating_view(tmp_path), out_dir=tmp_path / "ck", max_view_expansion=0)
    assert not (tmp_path / "ck").exists()


def test_caps_given_for_a_training_state_of_objects_are_refused():
    with pytest.raises(OptionError, match="max_pickle_depth changes nothing for a training state given as objects"):
        read_torch_training_state(model={"w": np.zeros(2, np.float32)}, max_pickle_depth=5)


def test_a_cap_the_sources_reader_does_not_use_is_refused(tmp_path):
    path = tmp_path / "t.safetensors"
    write_safetensors({"w": np.zeros(2, np.float32)}, path)
    with pytest.raises(OptionError, match="max_pickle_depth changes nothing for a safetensors file"):
        read_tensors(path, max_pickle_depth=256)
    with pytest.raises(OptionError, match="max_index_bytes changes nothing for a PyTorch checkpoint"):
        read_pytorch(_repeating_view(tmp_path), max_index_bytes=1 << 30)


def test_a_cap_given_for_tensors_in_memory_is_refused():
    with pytest.raises(OptionError, match="max_inflate_bytes changes nothing for tensors in memory"):
        read_tensors({"w": np.zeros(2, np.float32)}, max_inflate_bytes=1)


@pytest.mark.parametrize("value", [-1, 1.5, True, "64"], ids=["negative", "float", "bool", "str"])
def test_a_cap_that_is_not_a_non_negative_int_is_refused(value):
    with pytest.raises(OptionError, match="max_pickle_depth must be a non-negative int"):
        ReadLimits(max_pickle_depth=value)


def test_an_unknown_cap_is_refused(tmp_path):
    with pytest.raises(OptionError, match="unknown limit 'max_pickles'"):
        ReadLimits.of({"max_pickles": 1})  # type: ignore[typeddict-unknown-key]


def test_every_refusal_of_a_zip_member_over_budget_names_both_inflation_keywords(tmp_path):
    path = tmp_path / "t.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00." + bytes(4096))
    with pytest.raises(PyTorchReadError, match="max_inflate_bytes=0.*max_inflate_ratio="):
        read_pytorch(path, max_inflate_bytes=0, max_inflate_ratio=0)


def test_a_max_pickle_depth_past_what_the_stack_holds_is_refused_before_reading(tmp_path):
    """A depth past the ceiling is refused up front, naming it (a result that deep is more than a
    caller could print, compare or copy: those recurse a Python frame per level)."""
    with pytest.raises(OptionError, match="max_pickle_depth=100000: more than the readers can honour \\(at most 512"):
        read_pytorch_object(_deep_checkpoint(tmp_path), max_pickle_depth=100_000)
    assert read_pytorch_object(_deep_checkpoint(tmp_path), max_pickle_depth=512) is not None


def test_a_byte_cap_past_what_python_indexes_is_refused():
    with pytest.raises(OptionError, match="max_inflate_bytes=.*at most 9223372036854775807"):
        ReadLimits(max_inflate_bytes=2**63)
