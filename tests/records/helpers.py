"""Small models shared by the record tests."""

from __future__ import annotations

import numpy as np

from burnpack.records import ModuleRecord, Param

MNIST_PATHS = [
    "conv1.conv.weight", "conv1.conv.bias",
    "conv1.norm.gamma", "conv1.norm.beta", "conv1.norm.running_mean", "conv1.norm.running_var",
    "conv2.conv.weight", "conv2.conv.bias",
    "conv2.norm.gamma", "conv2.norm.beta", "conv2.norm.running_mean", "conv2.norm.running_var",
    "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias",
]  # fmt: skip
"""Field order of the MNIST example's Model: Burn's data order in the file."""

# A two-layer model `struct M { fc1: Linear(2→3), fc2: Linear(3→1) }` with fixed ids.
IDS = {
    "fc1.weight": 10777079075451239370,
    "fc1.bias": 9505838338724798577,
    "fc2.weight": 42,
    "fc2.bias": 18446744073709551615,
}


def two_layer_arrays() -> dict[str, np.ndarray]:
    return {
        "fc1.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
        "fc1.bias": np.array([0.5, -0.5, 1.5], np.float32),
        "fc2.weight": np.array([[1.0], [2.0], [3.0]], np.float32),
        "fc2.bias": np.array([-1.0], np.float32),
    }


def two_layer_model() -> dict[str, dict[str, Param]]:
    arrays = two_layer_arrays()
    return {
        layer: {leaf: Param(arrays[f"{layer}.{leaf}"], IDS[f"{layer}.{leaf}"]) for leaf in ("weight", "bias")}
        for layer in ("fc1", "fc2")
    }


def two_layer_record() -> ModuleRecord:
    return ModuleRecord.from_module(two_layer_model())
