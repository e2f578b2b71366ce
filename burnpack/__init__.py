"""burnpack: the reference Python implementation of Burn's ``.bpk`` container.

Read with ``load``, write with ``save`` / ``save_bytes`` (or ``Writer`` for deferred tensors,
caller buffers and streams). Files are byte-identical with Burn's ``burn-pack`` crate.

The names below are imported on first use (PEP 562), so that ``import burnpack`` and the
command line start without loading what a run does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core._lazy import lazy_exports

if TYPE_CHECKING:
    from .codec._generated.metadata import (
        BlockScale,
        BlockSize,
        BoolStore,
        DType,
        QuantMode,
        QuantScheme,
        QuantStore,
        QuantValue,
        Scalar,
        ScaleDtype,
        TensorDescriptor,
    )
    from .errors import (
        BurnpackError,
        InvalidHeader,
        InvalidMagicNumber,
        InvalidVersion,
        InvalidQuantizedData,
        IoError,
        LegacyFormatError,
        LegacyFormatWarning,
        MetadataDeserializationError,
        MetadataSerializationError,
        QuantizationError,
        TensorBytesSizeMismatch,
        TensorNotFound,
        UnsupportedQuantization,
        ValidationError,
    )
    from .core.quant import QuantizedTensor, quantize
    from .core.reader import Pack, TensorView, load
    from .core.writer import FileRange, Tensor, Writer, save, save_bytes
    from .records import LrSchedulerRecord, ModuleRecord, OptimizerRecord

__version__ = "0.1.0"

__all__ = [
    "BlockScale",
    "BlockSize",
    "BoolStore",
    "BurnpackError",
    "DType",
    "FileRange",
    "InvalidHeader",
    "InvalidMagicNumber",
    "InvalidQuantizedData",
    "InvalidVersion",
    "IoError",
    "LegacyFormatError",
    "LegacyFormatWarning",
    "LrSchedulerRecord",
    "MetadataDeserializationError",
    "MetadataSerializationError",
    "ModuleRecord",
    "OptimizerRecord",
    "Pack",
    "QuantMode",
    "QuantScheme",
    "QuantStore",
    "QuantValue",
    "QuantizationError",
    "QuantizedTensor",
    "Scalar",
    "ScaleDtype",
    "Tensor",
    "TensorBytesSizeMismatch",
    "TensorDescriptor",
    "TensorNotFound",
    "UnsupportedQuantization",
    "TensorView",
    "ValidationError",
    "Writer",
    "load",
    "quantize",
    "save",
    "save_bytes",
]

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
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, submodules=True)
