"""Numpy arrays and torch tensors of every Burn dtype, in any layout, through save and back."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

import burnpack
from burnpack import BoolStore, DType, Tensor
from burnpack.codec._generated.metadata import DTYPE_INFO
from burnpack.dtypes import dtype_from_numpy, dtype_from_safetensors, dtype_from_torch, element_size, numpy_dtype, safetensors_code

torch = pytest.importorskip("torch")

UNIT = [getattr(DType, name) for name in sorted(DType.UNIT_VARIANTS)]


def test_every_dtype_has_one_row_in_the_generated_table():
    assert set(DTYPE_INFO) == set(DType.VARIANTS)


@pytest.mark.parametrize("dtype", UNIT, ids=repr)
def test_numpy_dtype_maps_back_to_a_dtype_of_the_same_bytes(dtype):
    back = dtype_from_numpy(numpy_dtype(dtype))
    assert back == dtype or (dtype == DType.Flex32 and back == DType.F32)
    assert element_size(back) == numpy_dtype(dtype).itemsize


@pytest.mark.parametrize("dtype", UNIT, ids=repr)
def test_torch_and_safetensors_names_map_back(dtype):
    code = safetensors_code(dtype)
    assert code is not None and element_size(dtype_from_safetensors(code)) == element_size(dtype)
    torch_type = getattr(torch, DTYPE_INFO[dtype.variant].torch, None)
    if torch_type is not None:
        assert element_size(dtype_from_torch(torch_type)) == element_size(dtype)


def test_save_takes_a_bfloat16_torch_tensor(tmp_path):
    path = burnpack.save({"w": torch.ones(2, 3, dtype=torch.bfloat16)}, tmp_path / "w.bpk")
    with burnpack.load(path) as pack:
        assert pack["w"].dtype == DType.BF16 and pack["w"].shape == (2, 3)
        assert pack["w"].numpy().astype(np.float32).tolist() == [[1.0] * 3] * 2


TORCH_CASES = [
    (torch.float64, DType.F64), (torch.float32, DType.F32), (torch.float16, DType.F16), (torch.bfloat16, DType.BF16),
    (torch.int64, DType.I64), (torch.int32, DType.I32), (torch.int16, DType.I16), (torch.int8, DType.I8),
    (torch.uint8, DType.U8), (torch.bool, DType.Bool(BoolStore.Native)),
]  # fmt: skip
TORCH_CASES += [(getattr(torch, n), d) for n, d in (("uint16", DType.U16), ("uint32", DType.U32), ("uint64", DType.U64)) if hasattr(torch, n)]


@pytest.mark.parametrize(("torch_dtype", "dtype"), TORCH_CASES, ids=lambda x: repr(x))
def test_save_takes_torch_tensors_of_every_dtype_and_layout(torch_dtype, dtype):
    base = (torch.arange(12) % 2).to(torch_dtype).reshape(3, 4)
    transposed = base.t()  # not contiguous
    data = burnpack.save_bytes({"c": base, "t": transposed})
    with burnpack.load(data) as pack:
        assert pack["c"].dtype == dtype and pack["t"].shape == (4, 3)
        got = pack["t"].numpy()
        want = transposed.to(torch.float32).numpy()
        assert np.array_equal(got.astype(np.float32), want)


def test_writer_takes_numpy_arrays_of_any_byte_order_and_layout():
    array = np.arange(6, dtype=">i4").reshape(2, 3).T
    data = burnpack.Writer([Tensor.from_numpy("x", array)]).to_bytes()
    assert burnpack.load(data)["x"].numpy().tolist() == array.tolist()


def test_bfloat16_arrays_round_trip_through_torch():
    from burnpack.core.frameworks import numpy_to_torch, torch_to_numpy

    array = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    tensor = numpy_to_torch(array, DType.BF16)
    assert tensor.dtype == torch.bfloat16
    assert torch_to_numpy(tensor).tobytes() == array.tobytes()


def test_quantized_tensors_are_refused_by_torch_with_a_value_error():
    from burnpack.core.frameworks import numpy_to_torch

    scheme = burnpack.QuantScheme(burnpack.QuantValue.Q8S, burnpack.QuantStore.Native, burnpack.QuantMode.Symmetric)
    with pytest.raises(ValueError, match="torch cannot hold"):
        numpy_to_torch(np.zeros(4, np.uint8), DType.QFloat(scheme))


def test_reading_never_imports_torch(tmp_path):
    import subprocess

    path = burnpack.save({"a": np.zeros(2, np.float32)}, tmp_path / "a.bpk")
    code = (
        "import sys, burnpack; p = burnpack.load(sys.argv[1]); p.numpy(); p['a'].numpy();"
        "import burnpack.interop; assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
