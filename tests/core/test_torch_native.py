"""``pack.torch()`` / ``view.torch()``, ``load(framework=...)`` and ``burnpack.torch``: tensors
that share the pack's memory, every dtype torch has, and tied weights handled like safetensors."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import burnpack  # noqa: E402
import burnpack.torch as bt  # noqa: E402
from burnpack import BoolStore, DType, Tensor  # noqa: E402

EVERY_DTYPE = {
    "f64": (np.arange(6, dtype="<f8").reshape(2, 3), torch.float64),
    "f32": (np.arange(6, dtype="<f4").reshape(3, 2), torch.float32),
    "f16": (np.arange(4, dtype="<f2"), torch.float16),
    "bf16": (np.arange(4).astype(ml_dtypes.bfloat16), torch.bfloat16),
    "i64": (np.array([-1, 2**62], "<i8"), torch.int64),
    "i32": (np.array([-1, 7], "<i4"), torch.int32),
    "i16": (np.array([-1, 7], "<i2"), torch.int16),
    "i8": (np.array([-1, 7], "i1"), torch.int8),
    "u64": (np.array([2**64 - 1, 3], "<u8"), torch.uint64),
    "u32": (np.array([2**32 - 1, 3], "<u4"), torch.uint32),
    "u16": (np.array([65535, 3], "<u2"), torch.uint16),
    "u8": (np.array([255, 3], "u1"), torch.uint8),
    "bool": (np.array([True, False, True]), torch.bool),
}


@pytest.fixture
def every_dtype_pack(tmp_path):
    return burnpack.save({name: array for name, (array, _) in EVERY_DTYPE.items()}, tmp_path / "all.bpk")


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def test_view_torch_has_the_torch_dtype_shape_and_bytes_of_every_burn_dtype(every_dtype_pack):
    with burnpack.load(every_dtype_pack) as pack:
        for name, (array, torch_dtype) in EVERY_DTYPE.items():
            tensor = pack[name].torch()
            assert tensor.dtype == torch_dtype, name
            assert tuple(tensor.shape) == array.shape
            raw = tensor.view(torch.int16) if torch_dtype == torch.bfloat16 else tensor
            assert _bits(raw.numpy()) == _bits(array), name


def test_pack_torch_equals_view_torch_for_every_tensor(every_dtype_pack):
    with burnpack.load(every_dtype_pack) as pack:
        bulk = pack.torch()
        assert list(bulk) == pack.names
        for name in pack:
            assert torch.equal(bulk[name], pack[name].torch())


def test_torch_tensors_of_a_file_share_the_mapped_memory(tmp_path):
    path = burnpack.save({"w": np.arange(1024, dtype=np.float32)}, tmp_path / "w.bpk")
    with burnpack.load(path) as pack:
        mapped = pack._source.writable_buffer()
        start = pack.data_section_start + pack["w"].data_offsets[0]
        address = np.frombuffer(mapped, np.uint8, 1, start).ctypes.data
        assert pack["w"].torch().data_ptr() == address
        assert pack.torch()["w"].data_ptr() == address


def test_writing_into_a_torch_tensor_never_changes_the_file(tmp_path):
    path = burnpack.save({"w": np.zeros(8, dtype=np.float32)}, tmp_path / "w.bpk")
    before = path.read_bytes()
    with burnpack.load(path) as pack:
        tensor = pack["w"].torch()
        tensor += 5
        assert pack["w"].numpy().sum() == 0  # numpy views stay on the file's bytes
    assert path.read_bytes() == before
    assert bt.load_file(path)["w"].sum() == 0


def test_numpy_views_of_a_file_refuse_writes(tmp_path):
    path = burnpack.save({"w": np.zeros(8, dtype=np.float32)}, tmp_path / "w.bpk")
    with burnpack.load(path) as pack, pytest.raises(ValueError, match="read-only"):
        pack["w"].numpy()[0] = 1


def test_torch_of_immutable_bytes_is_a_private_copy():
    data = burnpack.save_bytes({"w": np.ones(4, dtype=np.float32)})
    tensor = burnpack.load(data)["w"].torch()
    tensor.zero_()
    assert burnpack.load(data)["w"].numpy().sum() == 4


def test_torch_of_a_bytearray_shares_it():
    data = bytearray(burnpack.save_bytes({"w": np.ones(4, dtype=np.float32)}))
    pack = burnpack.load(data)
    pack["w"].torch().zero_()
    assert pack["w"].numpy().sum() == 0


def test_bool_stores_become_torch_bool():
    stores = {
        "native": (BoolStore.Native, np.array([1, 0, 1], "u1")),
        "u8": (BoolStore.U8, np.array([1, 0, 1], "u1")),
        "u32": (BoolStore.U32, np.array([1, 0, 7], "<u4")),
        "u8_nonbinary": (BoolStore.U8, np.array([2, 0, 1], "u1")),
    }
    data = burnpack.save_bytes([Tensor(n, DType.Bool(s), (3,), a.tobytes()) for n, (s, a) in stores.items()])
    pack = burnpack.load(data)
    for name in stores:
        tensor = pack[name].torch()
        assert tensor.dtype == torch.bool
        assert tensor.tolist() == [True, False, True], name


def test_qfloat_has_no_torch_dtype_and_says_so():
    from burnpack import QuantMode, QuantScheme, QuantStore, QuantValue

    scheme = QuantScheme(QuantValue.Q8S, QuantStore.Native, QuantMode.Symmetric)
    data = burnpack.save_bytes([Tensor("q", DType.QFloat(scheme), (4,), bytes(8))])
    with pytest.raises(TypeError, match="QFloat.*numpy"):
        burnpack.load(data)["q"].torch()


def test_load_framework_pt_makes_get_tensor_return_torch(every_dtype_pack):
    with burnpack.load(every_dtype_pack, framework="pt") as pack:
        assert isinstance(pack.get_tensor("f32"), torch.Tensor)
    with burnpack.load(every_dtype_pack) as pack:
        assert isinstance(pack.get_tensor("f32"), np.ndarray)


def test_load_refuses_an_unknown_framework(every_dtype_pack):
    with pytest.raises(ValueError, match="framework"):
        burnpack.load(every_dtype_pack, framework="tf")


def test_missing_torch_is_one_line_naming_the_extra(every_dtype_pack):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import burnpack\n"
        f"p = burnpack.load({str(every_dtype_pack)!r})\n"
        "print(p['f32'].numpy().sum())\n"
        "try:\n    p['f32'].torch()\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["15.0", "torch tensors need PyTorch: pip install 'burnpack[torch]'"]


def test_save_file_load_file_round_trip_every_torch_dtype(tmp_path):
    tensors = {name: torch.from_numpy(array.view(np.int16)).view(torch.bfloat16) if dt == torch.bfloat16 else torch.from_numpy(array)
               for name, (array, dt) in EVERY_DTYPE.items()}  # fmt: skip
    path = bt.save_file(tensors, tmp_path / "t.bpk", metadata={"k": "v"})
    loaded = bt.load_file(path)
    assert list(loaded) == sorted(tensors)
    for name, tensor in tensors.items():
        assert loaded[name].dtype == tensor.dtype and torch.equal(loaded[name], tensor), name
    assert burnpack.load(path).metadata == {"k": "v"}


def test_save_file_writes_non_contiguous_tensors_in_c_order(tmp_path):
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    path = bt.save_file({"t": base.t()}, tmp_path / "t.bpk")
    assert torch.equal(bt.load_file(path)["t"], base.t().contiguous())


def test_save_file_refuses_tied_weights_naming_them(tmp_path):
    weight = torch.ones(3, 2)
    with pytest.raises(burnpack.ValidationError, match=r"share memory.*\['a', 'b'\].*save_model"):
        bt.save_file({"a": weight, "b": weight, "c": torch.ones(2)}, tmp_path / "t.bpk")
    assert not (tmp_path / "t.bpk").exists()


def test_save_file_refuses_overlapping_views(tmp_path):
    weight = torch.arange(6.0)
    with pytest.raises(burnpack.ValidationError, match="share memory"):
        bt.save_file({"a": weight[:4], "b": weight[2:]}, tmp_path / "t.bpk")


def test_shared_tensors_ignores_disjoint_views_of_one_storage():
    weight = torch.arange(6.0)
    assert bt.shared_tensors({"a": weight[:3], "b": weight[3:]}) == []


class Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight


def test_save_model_keeps_one_name_per_tied_group_and_load_model_reties(tmp_path):
    model = Tied()
    path = bt.save_model(model, tmp_path / "m.bpk")
    assert burnpack.load(path).names == ["embed.weight"]
    fresh = Tied()
    assert bt.load_model(fresh, path) == ([], [])
    assert torch.equal(fresh.head.weight, model.embed.weight)
    assert fresh.head.weight.data_ptr() == fresh.embed.weight.data_ptr()


def test_load_model_strict_reports_missing_names(tmp_path):
    path = bt.save_file({"embed.weight": torch.zeros(5, 3)}, tmp_path / "m.bpk")

    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(5, 3)
            self.head = torch.nn.Linear(3, 5, bias=False)

    with pytest.raises(burnpack.ValidationError, match=r"missing \['head.weight'\]"):
        bt.load_model(Two(), path)
    assert bt.load_model(Two(), path, strict=False) == (["head.weight"], [])
