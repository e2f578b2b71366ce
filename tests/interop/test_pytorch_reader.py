"""The pickle-free PyTorch reader against Burn's own fixtures and hand-built checkpoints.

Expectations for ``reader/`` come from Burn's ``crates/burn-store/src/pytorch/tests/reader/mod.rs``
and the generators beside its ``test_data/`` (``test_data.py``, ``simple_legacy.py``,
``create_legacy_with_offsets.py``, ``create_tar_format.py``); key sets for ``modules/`` come from
the ``export_weights.py`` scripts of ``crates/burn-store/pytorch-tests``. Files with random
weights are checked for names, shapes and dtypes only, as Burn does.

Checkpoints that torch would write but no fixture covers (strided views, shared storages,
big-endian data, pre-1.0 storage views, torch's real tar layout, malicious pickles) are built
here opcode by opcode, so torch is never needed.
"""

from __future__ import annotations

import builtins
import io
import os
import pickle
import struct
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnpack.interop import pytorch as pytorch_reader
from burnpack.interop.pytorch import read_pytorch
from burnpack.errors import PyTorchReadError, UnsafePickleError
from tests.conftest import PYTORCH_FIXTURES, require

F32, F64, F16, BF16 = np.float32, np.float64, np.float16, ml_dtypes.bfloat16
I64, I32, I16, I8, U8, BOOL = np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_


def fixture(*parts: str) -> Path:
    return require(PYTORCH_FIXTURES.joinpath(*parts))


def check_tensors(tensors: dict[str, np.ndarray], expected: dict[str, object]) -> None:
    """Names must match exactly; each expectation is an array (dtype, shape and values) or a
    ``(shape, dtype)`` pair for random weights."""
    assert set(tensors) == set(expected)
    for name, want in expected.items():
        got = tensors[name]
        if isinstance(want, np.ndarray):
            assert (got.dtype, got.shape) == (want.dtype, want.shape), name
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            shape, dtype = want
            assert (got.shape, got.dtype) == (shape, np.dtype(dtype)), name


def arr(values: object, dtype: type) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


def large_shape() -> np.ndarray:
    values = np.zeros((100, 100), dtype=F32)
    values[0, 0], values[50, 50], values[99, 99] = 1.0, 2.0, 3.0
    return values


# Every file under reader/, with what Burn's reader tests (and generators) say it holds.
READER_EXPECTATIONS: dict[str, dict[str, object]] = {
    "float32.pt": {"tensor": arr([1.0, 2.5, -3.7, 0.0], F32)},
    "float64.pt": {"tensor": arr([1.1, 2.2, 3.3], F64)},
    "float16.pt": {"tensor": arr([1.5, -2.25, 3.125], F16)},
    "bfloat16.pt": {"tensor": arr([1.5, -2.5, 3.5], BF16)},
    "int64.pt": {"tensor": arr([100, -200, 300, 0], I64)},
    "int32.pt": {"tensor": arr([10, 20, -30], I32)},
    "int16.pt": {"tensor": arr([1000, -2000, 3000], I16)},
    "int8.pt": {"tensor": arr([127, -128, 0, 50], I8)},
    "uint8.pt": {"tensor": arr([0, 128, 255, 42], U8)},
    "bool.pt": {"tensor": arr([True, False, True, True, False], BOOL)},
    "tensor_2d.pt": {"tensor": arr([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], F32)},
    "tensor_3d.pt": {"tensor": ((2, 3, 4), F32)},
    "tensor_4d.pt": {"tensor": ((2, 3, 2, 2), F32)},
    "scalar.pt": {"tensor": arr(42.0, F32)},
    "empty.pt": {"tensor": arr([], F32)},
    "large_shape.pt": {"tensor": large_shape()},
    "special_values.pt": {"tensor": arr([np.nan, np.inf, -np.inf, 0.0, 1.0], F32)},
    "extreme_values.pt": {"tensor": arr([1e-30, 1e30, -1e-30, -1e30], F32)},
    "mixed_types.pt": {
        "float32": arr([1.0, 2.0], F32),
        "int64": arr([100, 200], I64),
        "bool": arr([True, False], BOOL),
        "float64": arr([1.1, 2.2], F64),
    },
    "buffers.pt": {"buffer1": arr([1, 2, 3], I32), "buffer2": arr([True, False], BOOL)},
    "parameter.pt": {"param": ((3, 3), F32)},
    "state_dict.pt": {
        "weight": ((3, 4), F32),
        "bias": ((3,), F32),
        "running_mean": arr([0.0, 0.0, 0.0], F32),
        "running_var": arr([1.0, 1.0, 1.0], F32),
    },
    "nested_dict.pt": {
        "layer1.weight": ((2, 3), F32),
        "layer1.bias": ((2,), F32),
        "layer2.weight": ((4, 2), F32),
        "layer2.bias": ((4,), F32),
    },
    "checkpoint.pt": {
        "model_state_dict.fc1.weight": ((10, 5), F32),
        "model_state_dict.fc1.bias": ((10,), F32),
        "model_state_dict.fc2.weight": ((3, 10), F32),
        "model_state_dict.fc2.bias": ((3,), F32),
        "optimizer_state_dict.state.0.momentum_buffer": ((10, 5), F32),
    },
    "complex_structure.pt": {
        "state.encoder.layer_0.weight": ((4, 3), F32),
        "state.encoder.layer_0.bias": ((4,), F32),
        "state.encoder.layer_1.weight": ((2, 4), F32),
        "state.encoder.layer_1.bias": ((2,), F32),
        "state.decoder.weight": ((3, 2), F32),
        "state.decoder.bias": ((3,), F32),
    },
    "simple_legacy.pt": {
        "weight": ((2, 3), F32),
        "bias": arr([1.0, 1.0], F32),
        "running_mean": arr([0.0, 0.0], F32),
    },
    "legacy_uncloned_views.pt": {
        "tensor1": np.arange(10, 20, dtype=F32),
        "tensor2": np.arange(50, 60, dtype=F32),
    },
    "legacy_shared_storage.pt": {
        "view1": ((10,), F32),
        "view2": ((20,), F32),
        "view3": ((10,), F32),
    },
    "tar_float32.tar": {"tensor": arr([1.0, 2.5, -3.7, 0.0], F32)},
    "tar_float64.tar": {"tensor": arr([1.1, 2.2, 3.3], F64)},
    "tar_int64.tar": {"tensor": arr([100, -200, 300, 0], I64)},
    "tar_weight_bias.tar": {
        "weight": arr([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], F32),
        "bias": arr([0.01, 0.02], F32),
    },
    "tar_multi_dtype.tar": {
        "float_tensor": arr([1.5, 2.5, 3.5], F32),
        "double_tensor": arr([1.111, 2.222], F64),
        "int_tensor": arr([10, 20, 30, 40], I64),
    },
    "tar_2d_tensor.tar": {"matrix": np.arange(1, 13, dtype=F32).reshape(3, 4)},
}
# Filled from float arithmetic in torch (arange steps), so compared with a tolerance.
LEGACY_WITH_OFFSETS = {
    "tensor1": 1.0 + 0.01 * np.arange(10),
    "tensor2": 2.0 + 0.1 * np.arange(5),
    "tensor3": 3.0 + 0.1 * np.arange(5),
}


@pytest.mark.parametrize("name", sorted(READER_EXPECTATIONS))
def test_reader_fixture_holds_the_tensors_burn_expects(name: str) -> None:
    check_tensors(read_pytorch(fixture("reader", name)), READER_EXPECTATIONS[name])


def test_legacy_storage_offsets_select_the_right_elements() -> None:
    tensors = read_pytorch(fixture("reader", "legacy_with_offsets.pt"))
    assert set(tensors) == set(LEGACY_WITH_OFFSETS)
    for name, want in LEGACY_WITH_OFFSETS.items():
        assert tensors[name].dtype == F32
        np.testing.assert_allclose(tensors[name], want, rtol=1e-6, err_msg=name)


def test_every_reader_fixture_is_checked() -> None:
    checked = set(READER_EXPECTATIONS) | {"legacy_with_offsets.pt", "broken.pt"}
    assert {p.name for p in require(PYTORCH_FIXTURES / "reader").iterdir()} == checked


def test_broken_fixture_raises_pytorch_read_error() -> None:
    with pytest.raises(PyTorchReadError, match="not a PyTorch checkpoint"):
        read_pytorch(fixture("reader", "broken.pt"))


def test_top_level_key_selects_one_entry_of_the_root_dict() -> None:
    tensors = read_pytorch(fixture("reader", "checkpoint.pt"), top_level_key="model_state_dict")
    assert set(tensors) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


def test_missing_top_level_key_raises_and_lists_the_keys() -> None:
    with pytest.raises(PyTorchReadError, match=r"'nonexistent'.*'epoch'"):
        read_pytorch(fixture("reader", "checkpoint.pt"), top_level_key="nonexistent")


def test_top_level_key_naming_a_non_dict_raises() -> None:
    with pytest.raises(PyTorchReadError, match="no dict under top-level key 'epoch'"):
        read_pytorch(fixture("reader", "checkpoint.pt"), top_level_key="epoch")


def test_contiguous_tensors_are_read_only_views_of_their_storage() -> None:
    tensor = read_pytorch(fixture("reader", "tensor_2d.pt"))["tensor"]
    assert tensor.base is not None
    assert tensor.flags.c_contiguous and not tensor.flags.writeable


# --- modules/: state dicts of torch.nn modules that Burn's pytorch-tests import ----------------


def conv(prefix: str, out_ch: int, in_ch: int, kernel: tuple[int, ...], bias: bool = True) -> dict:
    keys = {f"{prefix}.weight": (out_ch, in_ch, *kernel)}
    return keys | ({f"{prefix}.bias": (out_ch,)} if bias else {})


def batch_norm(prefix: str, channels: int) -> dict:
    stats = ("weight", "bias", "running_mean", "running_var")
    return {f"{prefix}.{stat}": (channels,) for stat in stats} | {
        f"{prefix}.num_batches_tracked": ()
    }


MODULE_SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "batch_norm__batch_norm2d.pt": batch_norm("norm1", 5),
    "boolean__boolean.pt": {"buffer": (3,)},
    "buffer__buffer.pt": {"buffer": (3, 3)},
    "complex_nested__complex_nested.pt": conv("conv_blocks.0.conv", 4, 2, (3, 2))
    | batch_norm("conv_blocks.0.norm", 4)
    | conv("conv_blocks.1.conv", 6, 4, (3, 2))
    | batch_norm("conv_blocks.1.norm", 6)
    | batch_norm("norm1", 6)
    | {"fc1.weight": (12, 120), "fc1.bias": (12,), "fc2.weight": (10, 12), "fc2.bias": (10,)},
    "config__weights_with_config.pt": {
        "my_model.fc1.weight": (3, 2),
        "my_model.fc1.bias": (3,),
        "my_model.fc2.weight": (4, 3),
    },
    "conv1d__conv1d.pt": conv("conv1", 2, 2, (2,)) | conv("conv2", 2, 2, (2,), bias=False),
    "conv2d__conv2d.pt": conv("conv1", 2, 2, (2, 2)) | conv("conv2", 2, 2, (2, 2), bias=False),
    # ConvTranspose weights are (in, out, *kernel); here in == out == 2.
    "conv_transpose1d__conv_transpose1d.pt": conv("conv1", 2, 2, (2,))
    | conv("conv2", 2, 2, (2,), bias=False),
    "conv_transpose2d__conv_transpose2d.pt": conv("conv1", 2, 2, (2, 2))
    | conv("conv2", 2, 2, (2, 2), bias=False),
    "debug_test.pt": {"test": (4,)},
    "embedding__embedding.pt": {"embed.weight": (10, 3)},
    "enum_module__enum_depthwise_false.pt": conv("conv", 2, 2, (3, 3)),
    "enum_module__enum_depthwise_true.pt": conv("conv.dconv", 2, 1, (3, 3))
    | conv("conv.pconv", 2, 2, (1, 1)),
    "group_norm__group_norm.pt": {"norm1.weight": (6,), "norm1.bias": (6,)},
    "integer__integer.pt": {"buffer": (3,)},
    "key_remap__key_remap.pt": conv("conv.conv1", 2, 2, (2, 2))
    | conv("conv.conv2", 2, 2, (2, 2), bias=False),
    "key_remap_chained__key_remap.pt": conv("conv", 6, 3, (3, 3), bias=False)
    | batch_norm("bn", 6)
    | conv("layer.0.block.0", 6, 6, (1, 1), bias=False)
    | batch_norm("layer.0.block.1", 6)
    | conv("layer.1.block.0", 6, 6, (1, 1), bias=False)
    | batch_norm("layer.1.block.1", 6),
    "layer_norm__layer_norm.pt": {"norm1.weight": (2,), "norm1.bias": (2,)},
    "linear__linear.pt": {"fc1.weight": (3, 2), "fc1.bias": (3,), "fc2.weight": (4, 3)},
    "linear__linear_with_bias.pt": {"fc1.weight": (3, 2), "fc1.bias": (3,)},
    "missing_module_field__missing_module_field.pt": conv("conv1", 2, 2, (2, 2)),
    "model_without_enum_variants.pt": {
        "feature.weight": (64, 3),
        "feature.bias": (64,),
        "classifier.weight": (10, 64),
        "classifier.bias": (10,),
    },
    "non_contiguous_indexes__non_contiguous_indexes.pt": {
        key: shape
        for layer in (0, 2, 4, 6, 8)
        for key, shape in conv(f"fc.{layer}", 2, 2, (3, 3)).items()
    },
    "test_int.pt": {"test": (3,)},
    "top_level_key__top_level_key.pt": {
        f"my_state_dict.{key}": shape for key, shape in conv("conv1", 2, 2, (2, 2)).items()
    },
}
# Buffers and freshly initialised parameters whose values the export scripts pin down.
MODULE_VALUES: dict[str, dict[str, np.ndarray]] = {
    # One forward on ones - 0.5 with momentum 0.1: mean 0.05, unbiased variance 0.9.
    "batch_norm__batch_norm2d.pt": {
        "norm1.weight": np.ones(5, F32),
        "norm1.bias": np.zeros(5, F32),
        "norm1.running_mean": np.full(5, 0.05, F32),
        "norm1.running_var": np.full(5, 0.9, F32),
        "norm1.num_batches_tracked": arr(1, I64),
    },
    "boolean__boolean.pt": {"buffer": arr([True, False, True], BOOL)},
    "buffer__buffer.pt": {"buffer": np.ones((3, 3), F32)},
    "integer__integer.pt": {"buffer": arr([1, 2, 3], I64)},
    "group_norm__group_norm.pt": {"norm1.weight": np.ones(6, F32), "norm1.bias": np.zeros(6, F32)},
    "layer_norm__layer_norm.pt": {"norm1.weight": np.ones(2, F32), "norm1.bias": np.zeros(2, F32)},
    "debug_test.pt": {"test": arr([1.0, 2.0, 3.0, 4.0], F32)},
    "test_int.pt": {"test": arr([1, 2, 3], I64)},
}


def module_dtype(file: str, key: str) -> type:
    if key.endswith("num_batches_tracked") or file in ("integer__integer.pt", "test_int.pt"):
        return I64
    return BOOL if file == "boolean__boolean.pt" else F32


@pytest.mark.parametrize("name", sorted(MODULE_SHAPES))
def test_module_fixture_yields_the_state_dict_keys(name: str) -> None:
    tensors = read_pytorch(fixture("modules", name))
    expected = {key: (shape, module_dtype(name, key)) for key, shape in MODULE_SHAPES[name].items()}
    check_tensors(tensors, expected)


@pytest.mark.parametrize("name", sorted(MODULE_VALUES))
def test_module_fixture_buffers_hold_their_known_values(name: str) -> None:
    tensors = read_pytorch(fixture("modules", name))
    for key, want in MODULE_VALUES[name].items():
        assert tensors[key].dtype == want.dtype, key
        np.testing.assert_allclose(tensors[key], want, rtol=1e-6, err_msg=key)


def test_every_module_checkpoint_is_checked() -> None:
    files = {p.name for p in require(PYTORCH_FIXTURES / "modules").glob("*.pt")}
    assert files == set(MODULE_SHAPES)


def test_top_level_key_strips_the_wrapper_from_module_names() -> None:
    path = fixture("modules", "top_level_key__top_level_key.pt")
    assert set(read_pytorch(path, top_level_key="my_state_dict")) == {
        "conv1.weight",
        "conv1.bias",
    }


def test_config_entries_next_to_the_weights_are_skipped() -> None:
    path = fixture("modules", "config__weights_with_config.pt")
    assert set(read_pytorch(path, top_level_key="my_model")) == {
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
    }
    assert read_pytorch(path, top_level_key="my_config") == {}


# --- hand-built checkpoints ------------------------------------------------------------------


class Global(NamedTuple):
    """A GLOBAL opcode naming ``module.name``."""

    module: str
    name: str


class Call(NamedTuple):
    """``func(*args)`` through the REDUCE opcode."""

    func: object
    args: tuple


class Persistent(NamedTuple):
    """A persistent id (BINPERSID), how torch points at storages."""

    pid: object


class Memo(NamedTuple):
    """``value``, then stored in memo slot ``slot`` (BINPUT)."""

    slot: int
    value: object


class Recall(NamedTuple):
    """The object in memo slot ``slot`` again (BINGET), as pickle does for repeated objects."""

    slot: int


def torch_pickle(obj: object) -> bytes:
    """A protocol-2 pickle of ``obj`` in which Global/Call/Persistent/Memo/Recall become opcodes,
    the way torch.save emits them, without needing torch (or any module) importable. Other
    values use pickle's own opcodes, memoised in slot 0 at most, which nothing recalls."""
    out = bytearray(b"\x80\x02")

    def emit(value: object) -> None:
        nonlocal out
        if isinstance(value, Global):
            out += f"c{value.module}\n{value.name}\n".encode()
        elif isinstance(value, Call):
            emit(value.func)
            emit(value.args)
            out += b"R"
        elif isinstance(value, Persistent):
            emit(value.pid)
            out += b"Q"
        elif isinstance(value, Memo):
            emit(value.value)
            out += b"q" + bytes([value.slot])
        elif isinstance(value, Recall):
            out += b"h" + bytes([value.slot])
        elif isinstance(value, tuple):
            out += b"("
            for item in value:
                emit(item)
            out += b"t"
        elif isinstance(value, list):
            out += b"]("
            for item in value:
                emit(item)
            out += b"e"
        elif isinstance(value, dict):
            out += b"}("
            for key, item in value.items():
                emit(key)
                emit(item)
            out += b"u"
        else:  # str, int, float, bool, None: pickle's own opcodes minus PROTO and STOP
            out += pickle.dumps(value, protocol=2)[2:-1]

    emit(obj)
    return bytes(out + b".")


def storage_ref(key: str, kind: str, numel: int, *view: object) -> Persistent:
    """A storage persistent id: zip form, or legacy form when ``view`` holds its view field."""
    return Persistent(("storage", Global("torch", kind), key, "cpu", numel, *view))


def tensor(storage: object, offset: int, size: tuple, stride: tuple) -> Call:
    hooks = Call(Global("collections", "OrderedDict"), ())
    args = (storage, offset, size, stride, False, hooks)
    return Call(Global("torch._utils", "_rebuild_tensor_v2"), args)


def write_zip(
    path: Path,
    root: object,
    storages: dict[str, bytes],
    folder: str = "archive",
    byteorder: str = "little",
) -> Path:
    """A torch >= 1.6 checkpoint: ``<folder>/data.pkl``, ``<folder>/data/<key>``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{folder}/data.pkl", torch_pickle(root))
        archive.writestr(f"{folder}/byteorder", byteorder)
        for key, raw in storages.items():
            archive.writestr(f"{folder}/data/{key}", raw)
    return path


def write_legacy(
    path: Path, root: object, storages: list[tuple[str, bytes, int]], little: bool = True
) -> Path:
    """A torch 0.1.10-1.5 stream; ``storages`` lists ``(key, raw bytes, element count)``."""
    order = "<" if little else ">"
    sys_info = {"protocol_version": 1001, "little_endian": little, "type_sizes": {"long": 8}}
    parts = [pickle.dumps(value, protocol=2) for value in (0x1950A86A20F9469CFC6C, 1001, sys_info)]
    parts.append(torch_pickle(root))
    parts.append(pickle.dumps([key for key, _, _ in storages], protocol=2))
    parts += [struct.pack(f"{order}q", numel) + raw for _, raw, numel in storages]
    path.write_bytes(b"".join(parts))
    return path


def write_tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return path


def f32(values: object) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


def test_transposed_view_reads_as_c_contiguous_copy(tmp_path: Path) -> None:
    # torch.arange(6.).reshape(2, 3).t() saved as is: size (3, 2), stride (1, 3).
    root = {"t": tensor(storage_ref("0", "FloatStorage", 6), 0, (3, 2), (1, 3))}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32(range(6))}))["t"]
    np.testing.assert_array_equal(got, np.arange(6, dtype=F32).reshape(2, 3).T)
    assert got.flags.c_contiguous and not got.flags.writeable


def test_expanded_view_with_zero_stride_is_materialised(tmp_path: Path) -> None:
    root = {"t": tensor(storage_ref("0", "FloatStorage", 3), 0, (2, 3), (0, 1))}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([1, 2, 3])}))["t"]
    np.testing.assert_array_equal(got, [[1, 2, 3], [1, 2, 3]])


def test_views_of_one_storage_share_its_memory(tmp_path: Path) -> None:
    storage = storage_ref("0", "FloatStorage", 10)
    root = {"a": tensor(storage, 2, (4,), (1,)), "b": tensor(storage, 4, (2, 2), (2, 1))}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32(range(10))}))
    np.testing.assert_array_equal(got["a"], [2, 3, 4, 5])
    np.testing.assert_array_equal(got["b"], [[4, 5], [6, 7]])
    assert np.shares_memory(got["a"], got["b"])


def test_one_tensor_under_two_names_is_one_array(tmp_path: Path) -> None:
    tied = tensor(storage_ref("0", "FloatStorage", 2), 0, (2,), (1,))
    root = {"enc": Memo(1, tied), "dec": Recall(1)}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([1, 2])}))
    assert got["enc"] is got["dec"]


def test_any_top_folder_name_is_accepted(tmp_path: Path) -> None:
    root = {"w": tensor(storage_ref("7", "LongStorage", 1), 0, (), ())}
    raw = np.array([5], "<i8").tobytes()
    path = write_zip(tmp_path / "t.pt", root, {"7": raw}, folder="my model-v2")
    assert read_pytorch(path)["w"] == 5


def test_big_endian_zip_is_byte_swapped(tmp_path: Path) -> None:
    root = {
        "h": tensor(storage_ref("0", "BFloat16Storage", 2), 0, (2,), (1,)),
        "i": tensor(storage_ref("1", "IntStorage", 2), 0, (2,), (1,)),
    }
    raw = {
        "0": np.array([1.5, -2.0], ">f4").view(">u2")[::2].tobytes(),  # bf16 = top half of f32
        "1": np.array([7, -8], ">i4").tobytes(),
    }
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, raw, byteorder="big"))
    np.testing.assert_array_equal(got["h"], arr([1.5, -2.0], BF16))
    np.testing.assert_array_equal(got["i"], arr([7, -8], I32))


def test_integer_dict_keys_become_decimal_name_parts(tmp_path: Path) -> None:
    root = {"state": {0: {"exp_avg": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,))}}}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([3])}))
    assert list(got) == ["state.0.exp_avg"]


def test_tensors_inside_lists_and_tuples_get_indexed_names_as_burn_vecs(tmp_path: Path) -> None:
    # Burn's own reader walks dicts only; a Vec of modules is named layers.0.w, so these map there.
    storage = storage_ref("0", "FloatStorage", 1)
    one = tensor(storage, 0, (1,), (1,))
    root = {"layers": [{"w": one}, {"w": one}], "pair": (one, [one]), "head": one}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([1])}))
    assert list(got) == ["layers.0.w", "layers.1.w", "pair.0", "pair.1.0", "head"]


def test_every_leaf_that_is_not_a_tensor_is_listed_with_what_it_is(tmp_path: Path) -> None:
    from burnpack.interop.pytorch import read_pytorch_contents

    namespace = Call(Global("argparse", "Namespace"), ())
    root = {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,)), "epoch": 3,
            "opt": {"groups": [{"lr": 0.1, "name": None}]}, "args": namespace, 2.5: "odd key"}  # fmt: skip
    tensors, skipped = read_pytorch_contents(write_zip(tmp_path / "t.pt", root, {"0": f32([1])}))
    assert list(tensors) == ["w"]
    assert skipped == {
        "epoch": "an int, not a tensor",
        "opt.groups.0.lr": "a float, not a tensor",
        "opt.groups.0.name": "None, not a tensor",
        "args": "an argparse.Namespace object, not a tensor",
        "<float key>": "a str, not a tensor",
    }


def test_parameter_wrapper_yields_its_tensor(tmp_path: Path) -> None:
    inner = tensor(storage_ref("0", "DoubleStorage", 2), 0, (2,), (1,))
    hooks = Call(Global("collections", "OrderedDict"), ())
    param = Call(Global("torch._utils", "_rebuild_parameter_with_state"), (inner, True, hooks, {}))
    raw = np.array([0.5, 0.25], "<f8").tobytes()
    got = read_pytorch(write_zip(tmp_path / "t.pt", {"p": param}, {"0": raw}))
    np.testing.assert_array_equal(got["p"], [0.5, 0.25])


def test_view_past_the_end_of_its_storage_raises(tmp_path: Path) -> None:
    root = {"t": tensor(storage_ref("0", "FloatStorage", 4), 2, (3,), (1,))}
    with pytest.raises(PyTorchReadError, match="reaches past its storage"):
        read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32(range(4))}))


def test_storage_record_of_the_wrong_size_raises(tmp_path: Path) -> None:
    root = {"t": tensor(storage_ref("0", "FloatStorage", 4), 0, (4,), (1,))}
    with pytest.raises(PyTorchReadError, match="holds 12 bytes"):
        read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32(range(3))}))


def test_missing_storage_record_raises(tmp_path: Path) -> None:
    root = {"t": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,))}
    with pytest.raises(PyTorchReadError, match="'archive/data/0' is missing"):
        read_pytorch(write_zip(tmp_path / "t.pt", root, {}))


def test_two_tensors_flattening_to_one_name_raise(tmp_path: Path) -> None:
    storage = storage_ref("0", "FloatStorage", 1)
    root = {"a.b": tensor(storage, 0, (1,), (1,)), "a": {"b": tensor(storage, 0, (1,), (1,))}}
    with pytest.raises(PyTorchReadError, match="same name 'a.b'"):
        read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([1])}))


def test_cyclic_dict_raises_instead_of_recursing(tmp_path: Path) -> None:
    # {'a': <itself>}: EMPTY_DICT, BINPUT 0, MARK, 'a', BINGET 0, SETITEMS, STOP.
    with zipfile.ZipFile(tmp_path / "t.pt", "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x01\x00\x00\x00ah\x00u.")
    with pytest.raises(PyTorchReadError, match="nest more than"):
        read_pytorch(tmp_path / "t.pt")


def test_dicts_shared_across_levels_cannot_multiply_paths_beyond_the_file_size(tmp_path: Path) -> None:
    # Level k holds level k-1 twice: 2**k dotted paths from k + 1 dicts, in a file of ~1 KB.
    # The levels are defined inside a list, which flattening skips, then reached from "root".
    levels = [Memo(0, {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,))})]
    levels += [Memo(k, {"a": Recall(k - 1), "b": Recall(k - 1)}) for k in range(1, 14)]
    root = {"levels": levels, "root": Recall(13)}
    with pytest.raises(PyTorchReadError, match="containers are shared"):
        read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([1])}))


def test_checkpoint_whose_root_is_not_a_dict_raises(tmp_path: Path) -> None:
    root = tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,))
    with pytest.raises(PyTorchReadError, match="holds a tensor, not a dict"):
        read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": f32([1])}))


def test_legacy_pre_1_0_storage_views_are_resolved(tmp_path: Path) -> None:
    # Two tensors on views '1' (elements 2..5) and '2' (elements 0..1) of root storage '0'.
    root = {
        "a": tensor(storage_ref("0", "FloatStorage", 6, ("1", 2, 4)), 1, (2,), (2,)),
        "b": tensor(storage_ref("0", "FloatStorage", 6, ("2", 0, 2)), 0, (2,), (1,)),
    }
    path = write_legacy(tmp_path / "t.pt", root, [("0", f32(range(6)), 6)])
    got = read_pytorch(path)
    np.testing.assert_array_equal(got["a"], [3, 5])
    np.testing.assert_array_equal(got["b"], [0, 1])


def test_big_endian_legacy_stream_is_byte_swapped(tmp_path: Path) -> None:
    root = {"t": tensor(storage_ref("0", "DoubleStorage", 2, None), 0, (2,), (1,))}
    raw = np.array([1.25, -3.0], ">f8").tobytes()
    path = write_legacy(tmp_path / "t.pt", root, [("0", raw, 2)], little=False)
    np.testing.assert_array_equal(read_pytorch(path)["t"], [1.25, -3.0])


def test_legacy_storage_size_mismatch_raises(tmp_path: Path) -> None:
    root = {"t": tensor(storage_ref("0", "FloatStorage", 3, None), 0, (3,), (1,))}
    path = write_legacy(tmp_path / "t.pt", root, [("0", f32(range(2)), 2)])
    with pytest.raises(PyTorchReadError, match="holds 2 elements, expected 3"):
        read_pytorch(path)


def test_real_torch_tar_layout_with_tensor_and_storage_views(tmp_path: Path) -> None:
    """torch < 0.1.10 kept shapes, strides and offsets in a ``tensors`` member, storage views
    after the storages, and pointed at tensors from the pickle by key."""
    float_storage = Global("torch", "FloatStorage")
    storages = (
        pickle.dumps(1, protocol=2)
        + torch_pickle((0, "cpu", float_storage))
        + struct.pack("<q", 6)
        + f32(range(6))
        + pickle.dumps([(1, 0, 2, 3)], protocol=2)  # storage 1 = elements 2..4 of storage 0
    )

    def tensor_entry(key: int, storage: int, size: tuple, stride: tuple, offset: int) -> bytes:
        header = torch_pickle((key, storage, Global("torch", "FloatTensor")))
        rank = len(size)
        dims = struct.pack(f"<i4x{rank}q{rank}qq", rank, *size, *stride, offset)
        return header + dims

    tensors = (
        pickle.dumps(2, protocol=2)
        + tensor_entry(10, 0, (2, 3), (1, 2), 0)  # transposed 3x2 view
        + tensor_entry(11, 1, (3,), (1,), 0)
    )
    main = torch_pickle({"weight": Persistent("10"), "bias": Persistent("11")})
    sys_info = pickle.dumps({"little_endian": True}, protocol=2)
    path = write_tar(
        tmp_path / "t.tar",
        {"sys_info": sys_info, "storages": storages, "tensors": tensors, "pickle": main},
    )
    got = read_pytorch(path)
    np.testing.assert_array_equal(got["weight"], np.arange(6, dtype=F32).reshape(3, 2).T)
    np.testing.assert_array_equal(got["bias"], [2, 3, 4])


def test_empty_file_raises(tmp_path: Path) -> None:
    (tmp_path / "t.pt").write_bytes(b"")
    with pytest.raises(PyTorchReadError, match="empty"):
        read_pytorch(tmp_path / "t.pt")


def test_plain_pickle_without_magic_is_not_a_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "t.pt").write_bytes(pickle.dumps({"weight": [1.0, 2.0]}, protocol=2))
    with pytest.raises(PyTorchReadError, match="not a PyTorch checkpoint"):
        read_pytorch(tmp_path / "t.pt")


def test_error_notes_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "t.pt").write_bytes(b"garbage")
    with pytest.raises(PyTorchReadError) as caught:
        read_pytorch(tmp_path / "t.pt")
    assert any("t.pt" in note for note in caught.value.__notes__)


# --- pickles that would run code -------------------------------------------------------------


class RunShell:
    """Unpickles into ``os.system(command)``."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple:
        return (os.system, (self.command,))


class RunPython:
    """Unpickles into ``builtins.exec(source)``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __reduce__(self) -> tuple:
        return (builtins.exec, (self.source,))


def payloads(marker: Path) -> dict[str, bytes]:
    return {
        "os.system": pickle.dumps({"w": RunShell(f"touch '{marker}'")}, protocol=2),
        "builtins.exec": pickle.dumps(
            {"w": RunPython(f"open({str(marker)!r}, 'w').close()")}, protocol=2
        ),
    }


@pytest.mark.parametrize("kind", ["os.system", "builtins.exec"])
def test_payload_really_runs_under_plain_pickle(tmp_path: Path, kind: str) -> None:
    """Guards the refusal tests below: their payloads are live."""
    marker = tmp_path / "pwned"
    pickle.loads(payloads(marker)[kind])
    assert marker.exists()


def wrap(layout: str, path: Path, payload: bytes) -> Path:
    """Put an object pickle in each layout's place for it ("bare": the pickle is the file)."""
    if layout == "bare":
        path.write_bytes(payload)
    elif layout == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("archive/data.pkl", payload)
    elif layout == "legacy":
        header = [pickle.dumps(v, protocol=2) for v in (0x1950A86A20F9469CFC6C, 1001, {})]
        path.write_bytes(b"".join(header) + payload + pickle.dumps([], protocol=2))
    else:
        storages = pickle.dumps(0, protocol=2)
        write_tar(path, {"storages": storages, "pickle": payload})
    return path


@pytest.mark.parametrize("layout", ["bare", "zip", "legacy", "tar"])
@pytest.mark.parametrize("kind", ["os.system", "builtins.exec"])
def test_code_running_pickle_is_refused_without_running(
    tmp_path: Path, layout: str, kind: str
) -> None:
    marker = tmp_path / "pwned"
    path = wrap(layout, tmp_path / "evil.pt", payloads(marker)[kind])
    with pytest.raises(UnsafePickleError) as caught:
        read_pytorch(path)
    # Protocol 2 writes Python 3 module names in their Python 2 spelling.
    refused = {"os.system": f"{os.system.__module__}.system", "builtins.exec": "__builtin__.exec"}
    assert caught.value.global_name == refused[kind]
    assert not marker.exists()


def test_full_model_save_is_refused_naming_the_class(tmp_path: Path) -> None:
    model = Call(Global("__main__", "Net"), ())
    with pytest.raises(UnsafePickleError, match="'__main__.Net'"):
        read_pytorch(write_zip(tmp_path / "t.pt", {"model": model}, {}))


def test_build_cannot_alter_the_shared_storage_stand_ins(tmp_path: Path) -> None:
    # BUILD(torch.FloatStorage, (None, {'dtype': 'int8'})) would rewrite the stand-in's dtype
    # for every later load if the stand-ins were mutable.
    attack = b"\x80\x02ctorch\nFloatStorage\nN}(X\x05\x00\x00\x00dtypeX\x04\x00\x00\x00int8u\x86b."
    with zipfile.ZipFile(tmp_path / "t.pt", "w") as archive:
        archive.writestr("archive/data.pkl", attack)
    with pytest.raises(PyTorchReadError, match="read-only"):
        read_pytorch(tmp_path / "t.pt")
    assert read_pytorch(fixture("reader", "float32.pt"))["tensor"].dtype == F32


# --- arbitrary bytes ---------------------------------------------------------------------------


def read_bytes_as_checkpoint(data: bytes) -> None:
    """Read ``data`` from a file; only PyTorchReadError may escape."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.pt"
        path.write_bytes(data)
        try:
            read_pytorch(path)
        except PyTorchReadError:
            pass


SEEDS = ["reader/float32.pt", "reader/simple_legacy.pt", "reader/tar_weight_bias.tar"]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_truncation_raises_only_pytorch_read_error(seed: str) -> None:
    data = fixture(*seed.split("/")).read_bytes()
    for end in range(0, len(data), max(1, len(data) // 300)):
        read_bytes_as_checkpoint(data[:end])


@pytest.mark.parametrize("seed", SEEDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=8))
def test_corrupted_bytes_raise_only_pytorch_read_error(
    seed: str, flips: list[tuple[int, int]]
) -> None:
    data = bytearray(fixture(*seed.split("/")).read_bytes())
    for position, value in flips:
        data[position % len(data)] = value
    read_bytes_as_checkpoint(bytes(data))


# --- ranks and dtypes Burn lacks ------------------------------------------------------------------


def test_tensor_of_65_dimensions_is_a_pytorch_read_error_in_every_reader(tmp_path: Path) -> None:
    from burnpack.interop import convert

    rank = 65
    root = {"t": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,) * rank, (1,) * rank)}
    path = write_zip(tmp_path / "t.pt", root, {"0": f32([1])})
    for read in (read_pytorch, pytorch_reader.read_pytorch_object, lambda p: convert(p, tmp_path / "t.bpk")):
        with pytest.raises(PyTorchReadError, match="65 dimensions"):
            read(path)


def tensor_v3(storage: object, size: tuple, stride: tuple, dtype: str) -> Call:
    """torch >= 2.3's record for dtypes without a typed storage: an untyped storage plus a dtype."""
    hooks = Call(Global("collections", "OrderedDict"), ())
    args = (storage, 0, size, stride, False, hooks, Global("torch", dtype))
    return Call(Global("torch._utils", "_rebuild_tensor_v3"), args)


def test_untyped_storages_read_as_the_dtype_torch_names(tmp_path: Path) -> None:
    raw = np.array([1, 2, 3], "<u2").tobytes()
    root = {"u": tensor_v3(storage_ref("0", "UntypedStorage", len(raw)), (3,), (1,), "uint16")}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": raw}))["u"]
    assert got.dtype == np.uint16 and got.tolist() == [1, 2, 3]


def test_big_endian_untyped_storages_are_byte_swapped(tmp_path: Path) -> None:
    raw = np.array([1, 70000], ">u4").tobytes()
    root = {"u": tensor_v3(storage_ref("0", "UntypedStorage", len(raw)), (2,), (1,), "uint32")}
    got = read_pytorch(write_zip(tmp_path / "t.pt", root, {"0": raw}, byteorder="big"))["u"]
    assert got.tolist() == [1, 70000]


@pytest.mark.parametrize(
    ("record", "named"),
    [
        (lambda: tensor_v3(storage_ref("0", "UntypedStorage", 16), (2,), (1,), "float8_e4m3fn"), "torch.float8_e4m3fn"),
        (lambda: tensor_v3(storage_ref("0", "UntypedStorage", 16), (2,), (1,), "bits8"), "torch.bits8"),
        (lambda: tensor(storage_ref("0", "ComplexFloatStorage", 2), 0, (2,), (1,)), "torch.complex64"),
        (lambda: tensor(storage_ref("0", "QInt8Storage", 2), 0, (2,), (1,)), "torch.qint8"),
    ],
    ids=["fp8", "bits", "complex", "qint"],
)
def test_a_legitimate_dtype_burn_lacks_is_unsupported_not_unsafe(tmp_path: Path, record: object, named: str) -> None:
    path = write_zip(tmp_path / "t.pt", {"t": record()}, {"0": bytes(16)})  # type: ignore[operator]
    with pytest.raises(PyTorchReadError, match=f"unsupported dtype {named}") as caught:
        read_pytorch(path)
    assert not isinstance(caught.value, UnsafePickleError)


def test_a_sparse_tensor_is_unsupported_not_unsafe(tmp_path: Path) -> None:
    layout = Call(Global("torch.serialization", "_get_layout"), ("torch.sparse_coo",))
    indices = tensor(storage_ref("0", "LongStorage", 2), 0, (1, 2), (2, 1))
    values = tensor(storage_ref("1", "FloatStorage", 2), 0, (2,), (1,))
    sparse = Call(Global("torch._utils", "_rebuild_sparse_tensor"), (layout, (indices, values, (2,), True)))
    path = write_zip(tmp_path / "t.pt", {"t": sparse}, {"0": bytes(16), "1": f32([1, 2])})
    with pytest.raises(PyTorchReadError, match="unsupported sparse tensor") as caught:
        read_pytorch(path)
    assert not isinstance(caught.value, UnsafePickleError)
