"""Python's contracts: mappings, standard exception types, immutability behind a plan."""

from __future__ import annotations

import errno
import pickle

import numpy as np
import pytest

import burnpack
from burnpack import BurnpackError, DType, IoError, Scalar, Tensor, TensorNotFound, ValidationError, Writer


def f32(name: str, values: list[float]) -> Tensor:
    return Tensor.from_numpy(name, np.asarray(values, dtype=np.float32))


# -- a planned Writer cannot silently change ----------------------------------------------------
def test_writer_tensors_cannot_be_appended_after_planning():
    writer = Writer([f32("a", [1.0])])
    writer.size()
    with pytest.raises(AttributeError):
        writer.tensors.append(f32("b", [2.0]))  # type: ignore[attr-defined]
    assert burnpack.load(writer.to_bytes()).names == ["a"]


def test_writer_tensors_cannot_be_replaced():
    writer = Writer([f32("a", [1.0])])
    with pytest.raises(AttributeError):
        writer.tensors = (f32("b", [2.0]),)  # type: ignore[misc]


def test_tensor_cannot_be_renamed_after_planning():
    tensor = f32("a", [1.0])
    writer = Writer([tensor])
    writer.size()
    with pytest.raises(AttributeError, match="immutable"):
        tensor.name = "b"  # type: ignore[misc]
    assert burnpack.load(writer.to_bytes()).names == ["a"]


def test_tensor_name_of_the_wrong_type_is_refused():
    tensor = f32("a", [1.0])
    with pytest.raises(AttributeError):
        tensor.name = 123  # type: ignore[misc, assignment]
    with pytest.raises(ValidationError, match="must be a str"):
        f32(123, [1.0])  # type: ignore[arg-type]


def test_writer_metadata_and_scalars_change_only_through_methods_that_replan():
    writer = Writer([f32("a", [1.0])], metadata={"k": "v"})
    size = writer.size()
    with pytest.raises(TypeError):
        writer.metadata["k2"] = "v2"  # type: ignore[index]
    with pytest.raises(TypeError):
        writer.scalars["s"] = Scalar.Int(1)  # type: ignore[index]
    writer.with_metadata("k2", "v2")
    assert writer.size() >= size
    assert burnpack.load(writer.to_bytes()).metadata == {"k": "v", "k2": "v2"}


def test_renamed_copy_shares_bytes_and_leaves_the_original():
    tensor = f32("a", [1.0, 2.0])
    twin = tensor.with_name("b", param_id=7)
    assert (tensor.name, twin.name, twin.param_id) == ("a", "b", 7)
    assert twin.memoryview().obj is tensor.memoryview().obj


def test_tensor_survives_pickling():
    tensor = Tensor.from_numpy("a", np.arange(3, dtype=np.int16), param_id=5)
    twin = pickle.loads(pickle.dumps(tensor))
    assert twin.same_content(tensor)


# -- Pack is a Mapping ------------------------------------------------------------------------------
def test_pack_get_of_a_missing_name_is_none():
    pack = burnpack.load(burnpack.save_bytes({"a": np.zeros(2, np.float32)}))
    assert pack.get("missing") is None
    assert pack.get("missing", 5) == 5
    assert "missing" not in pack


def test_tensor_not_found_is_a_key_error_with_the_name_as_message():
    pack = burnpack.load(burnpack.save_bytes({"a": np.zeros(2, np.float32)}))
    with pytest.raises(KeyError) as caught:
        pack["missing"]
    assert isinstance(caught.value, TensorNotFound) and str(caught.value) == "missing"


# -- I/O errors are OSErrors -----------------------------------------------------------------------
def test_missing_file_is_file_not_found_error_with_errno_and_filename(tmp_path):
    path = tmp_path / "absent.bpk"
    with pytest.raises(FileNotFoundError) as caught:
        burnpack.load(path)
    error = caught.value
    assert isinstance(error, IoError) and isinstance(error, BurnpackError)
    assert error.errno == errno.ENOENT and error.filename == str(path)
    assert "os error" in str(error)


def test_writing_into_a_missing_directory_is_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        burnpack.save({"a": np.zeros(1, np.float32)}, tmp_path / "no" / "such" / "dir.bpk")
    assert isinstance(caught.value, IoError)


def test_content_errors_are_value_errors():
    with pytest.raises(ValueError):
        burnpack.load(b"not a burnpack file")


# -- serde round trip -----------------------------------------------------------------------------
def test_nan_scalar_round_trips_its_serde_form():
    nan = Scalar.Float(float("nan"))
    assert Scalar.from_serde(nan.to_serde()) == nan


# -- argument checks ------------------------------------------------------------------------------
def test_tensor_view_read_refuses_a_negative_length():
    pack = burnpack.load(burnpack.save_bytes({"a": np.zeros(4, np.float32)}))
    with pytest.raises(ValueError, match="length"):
        pack["a"].read(0, -4)
    assert pack["a"].read(4, 100) == bytes(12)


def test_save_refuses_a_mapping_key_that_differs_from_the_tensor_name(tmp_path):
    with pytest.raises(ValidationError, match="'a' names a Tensor called 'b'"):
        burnpack.save({"a": Tensor.from_numpy("b", np.zeros(2, np.float32))}, tmp_path / "x.bpk")
    assert not (tmp_path / "x.bpk").exists()


def test_save_takes_a_tensor_under_its_own_name():
    data = burnpack.save_bytes({"a": Tensor.from_numpy("a", np.ones(2, np.float32), dtype=DType.F16)})
    assert burnpack.load(data)["a"].dtype == DType.F16


# -- every file error is a BurnpackError ------------------------------------------------------------
def test_every_format_error_is_in_the_burnpack_tree():
    from burnpack.errors import ConversionError
    from burnpack.errors import PyTorchReadError
    from burnpack.errors import SafetensorsError

    for cls in (ConversionError, PyTorchReadError, SafetensorsError):
        assert issubclass(cls, BurnpackError), cls
    assert issubclass(PyTorchReadError, ValueError) and issubclass(SafetensorsError, ValueError)


# -- one tensor model ------------------------------------------------------------------------------
def test_a_packs_tensors_are_tensors_a_writer_takes_as_they_are():
    original = burnpack.save_bytes({"b": np.arange(3, dtype=np.int16), "a": np.ones((2, 2), np.float32)}, scalars={"s": 1})
    with burnpack.load(original) as pack:
        views = sorted(pack.tensors(), key=lambda v: v.data_offsets)
        assert all(isinstance(v, Tensor) for v in views)
        again = Writer(views, scalars=pack.scalars).to_bytes()
    assert again == original


def test_a_renamed_view_reads_the_same_bytes():
    with burnpack.load(burnpack.save_bytes({"a": np.arange(4, dtype=np.float32)})) as pack:
        renamed = pack["a"].with_name("b", param_id=3)
        assert (renamed.name, renamed.param_id) == ("b", 3)
        assert renamed.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
