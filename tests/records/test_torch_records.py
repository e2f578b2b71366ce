"""torch objects as record sources and targets (skipped without torch); torch stays optional."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from burnpack import ModuleRecord


def test_records_never_import_torch_for_numpy_data():
    code = (
        "import sys, numpy as np\n"
        "from burnpack import ModuleRecord\n"
        "r = ModuleRecord.from_module({'w': np.ones(2, np.float32)})\n"
        "ModuleRecord.from_bytes(r.into_bytes()).apply({'w': np.zeros(2, np.float32)})\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _net():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 3), torch.nn.Linear(3, 1)])

    return torch, Net()


def test_torch_module_paths_are_its_state_dict_keys():
    _, net = _net()
    record = ModuleRecord.from_module(net)
    assert record.paths == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    np.testing.assert_array_equal(record["layers.0.bias"].numpy(), net.layers[0].bias.detach().numpy())


def test_record_loads_into_a_torch_module_in_place():
    torch, net = _net()
    source = {k: np.full(tuple(v.shape), 2.0, np.float32) for k, v in net.state_dict().items()}
    record = ModuleRecord.from_module(source, param_ids={"layers.1.bias": 9})
    weight = net.layers[0].weight
    result = record.apply(net)
    assert result.module is net and net.layers[0].weight is weight
    assert torch.all(net.layers[1].bias == 2.0) and result.param_ids["layers.1.bias"] == 9


def test_cast_to_module_keeps_a_torch_modules_dtype():
    torch, net = _net()
    net = net.to(torch.float16)
    record = ModuleRecord.from_module({k: np.ones(tuple(v.shape), np.float32) for k, v in net.state_dict().items()})
    record.cast_to_module_dtype().apply(net)
    assert net.layers[0].weight.dtype == torch.float16 and torch.all(net.layers[0].weight == 1)


def test_from_record_policy_gives_torch_parameters_the_records_dtype():
    torch, net = _net()
    net = net.to(torch.float16)
    record = ModuleRecord.from_module({k: np.ones(tuple(v.shape), np.float32) for k, v in net.state_dict().items()})
    record.apply(net)
    assert net.layers[0].weight.dtype == torch.float32 and isinstance(net.layers[0].weight, torch.nn.Parameter)


def test_torch_bfloat16_tensors_become_bf16_records():
    torch = pytest.importorskip("torch")
    record = ModuleRecord.from_module({"w": torch.tensor([1.5, -2.0], dtype=torch.bfloat16)})
    assert record["w"].dtype.variant == "BF16"
    assert record["w"].numpy().astype(np.float32).tolist() == [1.5, -2.0]


def test_torch_buffers_load_like_running_state():
    torch = pytest.importorskip("torch")
    net = torch.nn.BatchNorm1d(3)
    source = {k: np.full(tuple(v.shape), 3, np.float32 if v.dtype == torch.float32 else np.int64) for k, v in net.state_dict().items()}
    record = ModuleRecord.from_module(source, param_ids={"running_mean": 5, "weight": 6})
    result = record.apply(net)
    assert result.param_ids["weight"] == 6 and result.param_ids["running_mean"] != 5
    assert torch.all(net.running_mean == 3) and int(net.num_batches_tracked) == 3
