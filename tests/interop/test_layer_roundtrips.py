"""PyTorch-layout weights of every layer type Burn maps → Burn's layout → back, unchanged.

The state dicts are generated here with PyTorch's parameter names and shapes (no torch
needed), saved as safetensors (as Hugging Face checkpoints are), converted to ``.bpk`` with the
PyTorch → Burn adapter, checked against the layout Burn's modules have, and converted back with
the Burn → PyTorch adapter; every name, dtype, shape and byte must come back.
"""

from __future__ import annotations

import numpy as np
import pytest

import burnpack
from burnpack.interop.converter import convert
from burnpack.interop.registry import read_tensors
from burnpack.interop.safetensors import serialize_safetensors

RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# kind: (PyTorch state dict, Burn type, {burn name: burn shape})
LAYERS = {
    "linear": ({"weight": rand(3, 2), "bias": rand(3)}, "Linear", {"weight": (2, 3), "bias": (3,)}),
    "linear_without_bias": ({"weight": rand(4, 3)}, "Linear", {"weight": (3, 4)}),
    "conv1d": ({"weight": rand(4, 2, 3), "bias": rand(4)}, "Conv1d", {"weight": (4, 2, 3), "bias": (4,)}),
    "conv2d": ({"weight": rand(4, 2, 3, 3), "bias": rand(4)}, "Conv2d", {"weight": (4, 2, 3, 3), "bias": (4,)}),
    "conv3d": ({"weight": rand(2, 1, 2, 2, 2)}, "Conv3d", {"weight": (2, 1, 2, 2, 2)}),
    "conv_transpose1d": ({"weight": rand(2, 4, 3), "bias": rand(4)}, "ConvTranspose1d", {"weight": (2, 4, 3), "bias": (4,)}),
    "conv_transpose2d": ({"weight": rand(2, 4, 3, 3), "bias": rand(4)}, "ConvTranspose2d", {"weight": (2, 4, 3, 3), "bias": (4,)}),
    "embedding": ({"weight": rand(10, 3)}, "Embedding", {"weight": (10, 3)}),
    "batch_norm": (
        {"weight": rand(5), "bias": rand(5), "running_mean": rand(5), "running_var": np.abs(rand(5)),
         "num_batches_tracked": np.array(7, np.int64)},
        "BatchNorm2d",
        {"gamma": (5,), "beta": (5,), "running_mean": (5,), "running_var": (5,), "num_batches_tracked": ()},
    ),  # fmt: skip
    "layer_norm": ({"weight": rand(6), "bias": rand(6)}, "LayerNorm", {"gamma": (6,), "beta": (6,)}),
    "group_norm": ({"weight": rand(6), "bias": rand(6)}, "GroupNorm", {"gamma": (6,), "beta": (6,)}),
    "rms_norm": ({"weight": rand(6)}, "RMSNorm", {"gamma": (6,)}),
    "instance_norm": ({"weight": rand(6), "bias": rand(6)}, "InstanceNorm2d", {"weight": (6,), "bias": (6,)}),
    "prelu": ({"weight": rand(1)}, "PReLU", {"weight": (1,)}),
}


def save_st(path, tensors):
    path.write_bytes(serialize_safetensors(tensors))
    return path


def contents(path):
    with read_tensors(path) as tset:
        return {e.name: (e.dtype, e.shape, np.ascontiguousarray(e.numpy()).tobytes()) for e in tset.entries}


@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_layer_round_trips_through_burns_layout(tmp_path, kind):
    torch_sd, burn_type, burn_shapes = LAYERS[kind]
    src = save_st(tmp_path / "torch.safetensors", {f"layer.{k}": v for k, v in torch_sd.items()})
    # the adapter leaves most layers alone: that it does is the point here, not a silent no-op
    convert(src, tmp_path / "burn.bpk", adapter="pytorch", module_types={"layer": burn_type}, allow_unmatched={"adapter"})
    with burnpack.load(tmp_path / "burn.bpk") as pack:
        assert {n: pack[n].shape for n in pack} == {f"layer.{k}": v for k, v in burn_shapes.items()}
        if kind.startswith("linear"):
            np.testing.assert_array_equal(pack["layer.weight"].numpy(), torch_sd["weight"].T)
    convert(tmp_path / "burn.bpk", tmp_path / "back.safetensors", adapter="to-pytorch", module_types={"layer": burn_type},
            allow_unmatched={"adapter"})
    assert contents(tmp_path / "back.safetensors") == contents(src)


def nested_enum_model() -> dict[str, np.ndarray]:
    """A PyTorch model with nested modules, a Sequential with gaps and an enum-like field."""
    sd = {}
    sd["encoder.embed.weight"] = rand(20, 8)
    for i in (0, 2):  # nn.Sequential(Linear, ReLU, Linear): indices 0 and 2
        sd[f"encoder.layers.{i}.fc.weight"], sd[f"encoder.layers.{i}.fc.bias"] = rand(8, 8), rand(8)
        sd[f"encoder.layers.{i}.norm.weight"], sd[f"encoder.layers.{i}.norm.bias"] = rand(8), rand(8)
    sd["block.dconv.weight"], sd["block.dconv.bias"] = rand(2, 1, 3, 3), rand(2)  # Burn: enum Block { Dws(..), Plain(..) }
    sd["head.weight"] = rand(3, 8)
    return sd


def test_nested_and_enum_like_model_round_trips(tmp_path):
    sd = nested_enum_model()
    src = save_st(tmp_path / "torch.safetensors", sd)
    forward_types = {"encoder.embed": "Embedding", "head": "Linear"}
    rules = [(r"\.fc$", "Linear"), (r"\.norm$", "LayerNorm")]
    report = convert(src, tmp_path / "burn.bpk", adapter="pytorch", module_types=forward_types, type_rules=rules,
                     map_indices_contiguous=True, enum_variants={"block": "Dws"})  # fmt: skip
    with burnpack.load(tmp_path / "burn.bpk") as pack:
        names = set(pack.names)
        assert "encoder.layers.1.fc.weight" in names and "encoder.layers.1.norm.gamma" in names
        assert "block.Dws.dconv.weight" in names
        np.testing.assert_array_equal(pack["encoder.layers.1.fc.weight"].numpy(), sd["encoder.layers.2.fc.weight"].T)
        np.testing.assert_array_equal(pack["head.weight"].numpy(), sd["head.weight"].T)
    assert report.renamed["encoder.layers.2.norm.weight"] == "encoder.layers.1.norm.gamma"
    # Back: the reverse adapter, variants dropped, and the Sequential's original indices restored.
    back = convert(tmp_path / "burn.bpk", tmp_path / "back.safetensors", adapter="to-pytorch", module_types=forward_types,
                   type_rules=rules, skip_enum_variants=True, remap=[(r"^encoder\.layers\.1\.", "encoder.layers.2.")])  # fmt: skip
    assert not back.warnings
    assert contents(tmp_path / "back.safetensors") == contents(src)


def test_inferred_types_round_trip_a_model_without_ambiguous_layers(tmp_path):
    sd = {k: v for k, v in nested_enum_model().items() if not k.startswith(("head", "encoder.embed"))}
    for i in (0, 2):  # a square weight with bias is ambiguous (torch's Linear or Hugging Face's Conv1D): make them [16, 8]
        sd[f"encoder.layers.{i}.fc.weight"], sd[f"encoder.layers.{i}.fc.bias"] = rand(16, 8), rand(16)
    src = save_st(tmp_path / "torch.safetensors", sd)
    report = convert(src, tmp_path / "burn.bpk", adapter="pytorch", infer_types=True)
    assert not report.warnings
    assert set(report.module_types.values()) == {"Struct:Linear", "Struct:LayerNorm", "Struct:Conv2d"}
    convert(tmp_path / "burn.bpk", tmp_path / "back.safetensors", adapter="to-pytorch", infer_types=True)
    assert contents(tmp_path / "back.safetensors") == contents(src)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_half_and_wide_floats_keep_their_dtype_through_the_adapter(tmp_path, dtype):
    sd = {"fc.weight": rand(3, 2, dtype=dtype), "fc.bias": rand(3, dtype=dtype)}
    src = save_st(tmp_path / "t.safetensors", sd)
    convert(src, tmp_path / "b.bpk", adapter="pytorch", module_types={"fc": "Linear"})
    convert(tmp_path / "b.bpk", tmp_path / "back.safetensors", adapter="to-pytorch", module_types={"fc": "Linear"})
    assert contents(tmp_path / "back.safetensors") == contents(src)
