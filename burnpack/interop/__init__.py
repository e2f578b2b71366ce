"""Moving weights and training state between Burn's ``.bpk`` and the PyTorch / Hugging Face world.

Formats: one table, ``registry`` (names, extensions, detection, capabilities; adding a format is a
module plus an entry), read and written by ``formats``: burnpack, safetensors (validating reader, byte-identical writer),
PyTorch ``.pt`` / ``.pth`` read without torch and without running pickled code (``pytorch``)
and written with ``torch.save``, ``.npz``; live torch ``state_dict``s and ``nn.Module``s
(``torch_live``).

Burn's transformations (``remap``, ``adapters``): key remapping, path filters,
``map_indices_contiguous``, enum variants, the PyTorch ↔ Burn, half-precision and float-cast
adapters with the module types they act on; ``layouts`` (with ``layout_*``): one registry of
module kinds, each with its PyTorch ↔ Burn layout — LSTM, GRU, RNN, attention and transformer
layers included.

Entry points:

* ``convert`` — one file (or object) to another, returning a ``ConversionReport``;
* ``transform``, ``read_tensors``, ``write_tensors`` — the same in steps;
* ``load_record`` / ``load_into`` — the transformations as options of the record loader;
* ``pytorch_to_burn_checkpoint`` / ``burn_checkpoint_to_pytorch`` — whole training
  checkpoints (model + optimizer + LR scheduler) ↔ a Burn Learner checkpoint directory.

The ``burnpack convert`` and ``burnpack convert-checkpoint`` commands wrap them. Everything is
imported on first use.
"""

from __future__ import annotations

from ..core._lazy import lazy_exports

_EXPORTS = {
    "..errors": ("ConversionError", "OutputExistsError", "UnmatchedOptionError", "UnknownModuleType", "PyTorchReadError",
                 "UnsafePickleError", "SafetensorsError"),
    ".converter": ("convert", "transform", "ConversionReport"),
    ".format": ("Format",),
    ".registry": ("read_tensors", "write_tensors", "detect_format"),
    ".tensors": ("Entry", "TensorSet"),
    ".remap": ("KeyRemapper", "PathFilter", "map_indices_contiguous", "strip_enum_variants",
               "insert_enum_variants"),
    ".adapters": ("ModuleAdapter", "IdentityAdapter", "ChainAdapter", "PyTorchToBurnAdapter",
                  "BurnToPyTorchAdapter", "HalfPrecisionAdapter", "FloatCastAdapter", "ModuleTypes",
                  "parse_adapter"),
    ".loader": ("load_record", "load_into"),
    ".checkpoint": ("pytorch_to_burn_checkpoint", "burn_checkpoint_to_pytorch", "read_torch_training_state",
                    "CheckpointReport", "TorchTrainingState"),
    ".pytorch": ("read_pytorch", "read_pytorch_object"),
    ".safetensors": ("read_safetensors", "parse_safetensors", "write_safetensors", "serialize_safetensors"),
    ".torch_live": ("to_state_dict",),
}  # fmt: skip
"""Each public name once, by the module that defines it (``__init__.pyi`` gives their types)."""
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
