"""Moving weights and training state between Burn's ``.bpk`` and the PyTorch / Hugging Face world.

Formats: one table, ``registry`` (names, extensions, detection, capabilities; adding a format is a
module plus an entry), read and written by ``formats``: burnpack, safetensors (validating reader, byte-identical writer),
PyTorch ``.pt`` / ``.pth`` read without torch and without running pickled code (``pytorch``)
and written with ``torch.save``, ``.npz``; live torch ``state_dict``s and ``nn.Module``s
(``torch_live``).

Burn's transformations (``remap``, ``adapters``): key remapping, path filters,
``map_indices_contiguous``, enum variants, the PyTorch ↔ Burn, half-precision and float-cast
adapters with the module types they act on.

Entry points:

* :func:`convert` — one file (or object) to another, returning a :class:`ConversionReport`;
* :func:`transform`, :func:`read_tensors`, :func:`write_tensors` — the same in steps;
* :func:`load_record` / :func:`load_into` — the transformations as options of the record loader;
* :func:`pytorch_to_burn_checkpoint` / :func:`burn_checkpoint_to_pytorch` — whole training
  checkpoints (model + optimizer + LR scheduler) ↔ a Burn Learner checkpoint directory.

The ``burnpack convert`` and ``burnpack convert-checkpoint`` commands wrap them. Everything but
:func:`convert` is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .converter import convert

_EXPORTS = {
    "transform": "converter",
    "ConversionReport": "converter",
    "UnmatchedOptionError": "converter",
    "read_tensors": "registry",
    "write_tensors": "registry",
    "detect_format": "registry",
    "Format": "registry",
    "ConversionError": "formats",
    "OutputExistsError": "formats",
    "Entry": "tensors",
    "TensorSet": "tensors",
    "KeyRemapper": "remap",
    "PathFilter": "remap",
    "map_indices_contiguous": "remap",
    "strip_enum_variants": "remap",
    "insert_enum_variants": "remap",
    "ModuleAdapter": "adapters",
    "IdentityAdapter": "adapters",
    "ChainAdapter": "adapters",
    "PyTorchToBurnAdapter": "adapters",
    "BurnToPyTorchAdapter": "adapters",
    "HalfPrecisionAdapter": "adapters",
    "FloatCastAdapter": "adapters",
    "ModuleTypes": "adapters",
    "UnknownModuleType": "adapters",
    "parse_adapter": "adapters",
    "load_record": "loader",
    "load_into": "loader",
    "pytorch_to_burn_checkpoint": "checkpoint",
    "burn_checkpoint_to_pytorch": "checkpoint",
    "read_torch_training_state": "checkpoint",
    "CheckpointReport": "checkpoint",
    "TorchTrainingState": "checkpoint",
    "read_pytorch": "pytorch",
    "read_pytorch_object": "pytorch",
    "PyTorchReadError": "pytorch",
    "UnsafePickleError": "pytorch",
    "read_safetensors": "safetensors",
    "parse_safetensors": "safetensors",
    "write_safetensors": "safetensors",
    "serialize_safetensors": "safetensors",
    "SafetensorsError": "safetensors",
    "to_state_dict": "torch_live",
}

__all__ = sorted([*_EXPORTS, "convert"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'burnpack.interop' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
