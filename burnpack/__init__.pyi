# generated from the _EXPORTS table of burnpack/__init__.py by schema/generate.py — do not edit
"""The types of the names burnpack/__init__.py imports on first use."""

from .codec._generated.metadata import BlockScale as BlockScale, BlockSize as BlockSize, BoolStore as BoolStore, DType as DType, QuantMode as QuantMode, QuantScheme as QuantScheme, QuantStore as QuantStore, QuantValue as QuantValue, Scalar as Scalar, ScaleDtype as ScaleDtype, TensorDescriptor as TensorDescriptor
from .errors import BurnpackError as BurnpackError, InvalidHeader as InvalidHeader, InvalidMagicNumber as InvalidMagicNumber, InvalidVersion as InvalidVersion, InvalidQuantizedData as InvalidQuantizedData, IoError as IoError, LegacyFormatError as LegacyFormatError, LegacyFormatWarning as LegacyFormatWarning, MetadataDeserializationError as MetadataDeserializationError, MetadataSerializationError as MetadataSerializationError, QuantizationError as QuantizationError, TensorBytesSizeMismatch as TensorBytesSizeMismatch, TensorNotFound as TensorNotFound, UnsupportedQuantization as UnsupportedQuantization, ValidationError as ValidationError
from .core.quant import QuantizedTensor as QuantizedTensor, quantize as quantize
from .core.reader import Pack as Pack, TensorView as TensorView, load as load
from .core.writer import FileRange as FileRange, Tensor as Tensor, Writer as Writer, save as save, save_bytes as save_bytes
from .records import LrSchedulerRecord as LrSchedulerRecord, ModuleRecord as ModuleRecord, OptimizerRecord as OptimizerRecord

__version__: str
__all__ = ['BlockScale', 'BlockSize', 'BoolStore', 'BurnpackError', 'DType', 'FileRange', 'InvalidHeader', 'InvalidMagicNumber', 'InvalidQuantizedData', 'InvalidVersion', 'IoError', 'LegacyFormatError', 'LegacyFormatWarning', 'LrSchedulerRecord', 'MetadataDeserializationError', 'MetadataSerializationError', 'ModuleRecord', 'OptimizerRecord', 'Pack', 'QuantMode', 'QuantScheme', 'QuantStore', 'QuantValue', 'QuantizationError', 'QuantizedTensor', 'Scalar', 'ScaleDtype', 'Tensor', 'TensorBytesSizeMismatch', 'TensorDescriptor', 'TensorNotFound', 'TensorView', 'UnsupportedQuantization', 'ValidationError', 'Writer', 'load', 'quantize', 'save', 'save_bytes']
