"""Burn's transformations as options of the record loader (``load_record`` / ``load_into``)."""

from __future__ import annotations

import numpy as np
import pytest

import burnpack
from burnpack import DType
from burnpack.errors import ConversionError
from burnpack.interop.loader import load_into, load_record
from burnpack.interop.pytorch import read_pytorch
from burnpack.records import Variant
from tests.conftest import PYTORCH_FIXTURES, require


def fixture(name: str):
    return require(PYTORCH_FIXTURES / "modules" / name)


def zeros(*shape):
    return np.zeros(shape, np.float32)


def test_load_into_a_structure_with_an_enum_variant():
    target = {"conv": Variant("DwsConv", {"dconv": {"weight": zeros(2, 1, 3, 3), "bias": zeros(2)},
                                          "pconv": {"weight": zeros(2, 2, 1, 1), "bias": zeros(2)}})}  # fmt: skip
    result, report = load_into(target, fixture("enum_module__enum_depthwise_true.pt"))
    assert report.renamed["conv.dconv.weight"] == "conv.DwsConv.dconv.weight"
    raw = read_pytorch(fixture("enum_module__enum_depthwise_true.pt"))
    np.testing.assert_array_equal(result.numpy()["conv.DwsConv.pconv.weight"], raw["conv.pconv.weight"])


def test_load_into_with_adapter_and_contiguous_indices():
    target = {"fc": [{"weight": zeros(2, 2, 3, 3), "bias": zeros(2)} for _ in range(5)]}
    result, _ = load_into(target, fixture("non_contiguous_indexes__non_contiguous_indexes.pt"), adapter="pytorch", map_indices_contiguous=True)
    raw = read_pytorch(fixture("non_contiguous_indexes__non_contiguous_indexes.pt"))
    np.testing.assert_array_equal(result.numpy()["fc.4.bias"], raw["fc.8.bias"])
    assert all(p.param_id is not None for p in result.params.values())


def test_load_into_fails_on_missing_unless_partial_and_never_on_unused():
    target = {"fc1": {"weight": zeros(2, 3), "bias": zeros(3)}, "extra": {"weight": np.full(2, 7, np.float32)}}
    with pytest.raises(ConversionError, match="extra.weight"):
        load_into(target, fixture("linear__linear.pt"), adapter="pytorch", module_types={"fc1": "Linear"})
    result, report = load_into(target, fixture("linear__linear.pt"), adapter="pytorch", module_types={"fc1": "Linear"}, allow_partial=True)
    assert report.missing == ["extra.weight"] and report.unused == ["fc2.weight"]
    assert result.numpy()["extra.weight"].tolist() == [7, 7]  # untouched
    assert result.numpy()["fc1.weight"].shape == (2, 3)


def test_load_into_refuses_shape_mismatches_unless_validate_false():
    target = {"fc1": {"weight": zeros(3, 2), "bias": zeros(3)}}  # PyTorch layout: the adapter was forgotten
    with pytest.raises(ConversionError, match="shape mismatch"):
        load_into(target, fixture("linear__linear_with_bias.pt"), adapter="pytorch", module_types={"fc1": "Linear"})
    result, report = load_into(target, fixture("linear__linear_with_bias.pt"), adapter="pytorch", module_types={"fc1": "Linear"},
                               validate=False, allow_partial=True)  # fmt: skip
    assert report.errors and not result.numpy()["fc1.weight"].any()


def test_load_into_casts_to_the_module_dtype_on_request(tmp_path):
    burnpack.save({"w": np.arange(3, dtype=np.float16)}, tmp_path / "h.bpk")
    result, _ = load_into({"w": zeros(3)}, tmp_path / "h.bpk", dtype_policy="CastToModule")
    assert result.params["w"].dtype == DType.F32 and result.numpy()["w"].dtype == np.float32
    result, _ = load_into({"w": zeros(3)}, tmp_path / "h.bpk")
    assert result.params["w"].dtype == DType.F16


def test_load_record_gives_fresh_ids_to_foreign_tensors_and_keeps_burns(tmp_path):
    record, report = load_record(fixture("batch_norm__batch_norm2d.pt"), adapter="pytorch", module_types={"norm1": "BatchNorm"},
                                 exclude=r"num_batches_tracked$")  # fmt: skip
    assert record.paths == ["norm1.gamma", "norm1.beta", "norm1.running_mean", "norm1.running_var"]
    assert len(set(record.param_ids.values())) == 4 and report.skipped == ["norm1.num_batches_tracked"]
    record.save(tmp_path / "m.bpk")
    again, _ = load_record(tmp_path / "m.bpk")
    assert again.param_ids == record.param_ids


def test_load_into_a_torch_module_takes_types_from_it(tmp_path):
    torch = pytest.importorskip("torch")
    from burnpack.interop.converter import convert

    convert(fixture("linear__linear.pt"), tmp_path / "burn.bpk", adapter="pytorch", module_types={"fc1": "Linear", "fc2": "Linear"})

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(2, 3)
            self.fc2 = torch.nn.Linear(3, 4, bias=False)

    net = Net()
    load_into(net, tmp_path / "burn.bpk", adapter="to-pytorch")
    raw = read_pytorch(fixture("linear__linear.pt"))
    for name, value in net.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), raw[name])
