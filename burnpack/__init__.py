"""burnpack: the reference Python implementation of Burn's ``.bpk`` container.

Read with ``load``, write with ``save`` / ``save_bytes`` (or ``Writer`` for deferred tensors,
caller buffers and streams). Files are byte-identical with Burn's ``burn-pack`` crate.

The names below are imported on first use (PEP 562), so that ``import burnpack`` and the
command line start without loading what a run does not need.
"""

from __future__ import annotations

from .core._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    ".codec._generated.metadata": ("BlockScale", "BlockSize", "BoolStore", "DType", "QuantMode", "QuantScheme", "QuantStore", "QuantValue",
                          "Scalar", "ScaleDtype", "TensorDescriptor"),
    ".errors": ("BurnpackError", "InvalidHeader", "InvalidMagicNumber", "InvalidVersion", "InvalidQuantizedData", "IoError",
                "LegacyFormatError", "LegacyFormatWarning", "MetadataDeserializationError", "MetadataSerializationError",
                "QuantizationError", "TensorBytesSizeMismatch", "TensorNotFound", "UnsupportedQuantization", "ValidationError"),
    ".core.quant": ("QuantizedTensor", "quantize"),
    ".core.reader": ("Pack", "TensorView", "load"),
    ".core.writer": ("FileRange", "Tensor", "Writer", "save", "save_bytes"),
    ".records": ("LrSchedulerRecord", "ModuleRecord", "OptimizerRecord"),
}  # fmt: skip
"""Each public name once, by the module that defines it (``__init__.pyi`` gives their types)."""
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS, submodules=True)
