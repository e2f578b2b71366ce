# generated from the _EXPORTS table of burnpack/interop/__init__.py by schema/generate.py — do not edit
"""The types of the names burnpack/interop/__init__.py imports on first use."""

from ..errors import ConversionError as ConversionError, OutputExistsError as OutputExistsError, UnmatchedOptionError as UnmatchedOptionError, UnknownModuleType as UnknownModuleType, PyTorchReadError as PyTorchReadError, UnsafePickleError as UnsafePickleError, SafetensorsError as SafetensorsError
from .converter import convert as convert, transform as transform, ConversionReport as ConversionReport
from .format import Format as Format
from .registry import read_tensors as read_tensors, write_tensors as write_tensors, detect_format as detect_format
from .tensors import Entry as Entry, TensorSet as TensorSet
from .remap import KeyRemapper as KeyRemapper, PathFilter as PathFilter, map_indices_contiguous as map_indices_contiguous, strip_enum_variants as strip_enum_variants, insert_enum_variants as insert_enum_variants
from .adapters import ModuleAdapter as ModuleAdapter, IdentityAdapter as IdentityAdapter, ChainAdapter as ChainAdapter, PyTorchToBurnAdapter as PyTorchToBurnAdapter, BurnToPyTorchAdapter as BurnToPyTorchAdapter, HalfPrecisionAdapter as HalfPrecisionAdapter, FloatCastAdapter as FloatCastAdapter, ModuleTypes as ModuleTypes, parse_adapter as parse_adapter
from .loader import load_record as load_record, load_into as load_into
from .checkpoint import pytorch_to_burn_checkpoint as pytorch_to_burn_checkpoint, burn_checkpoint_to_pytorch as burn_checkpoint_to_pytorch, read_torch_training_state as read_torch_training_state, CheckpointReport as CheckpointReport, TorchTrainingState as TorchTrainingState
from .pytorch import read_pytorch as read_pytorch, read_pytorch_object as read_pytorch_object
from .safetensors import read_safetensors as read_safetensors, parse_safetensors as parse_safetensors, write_safetensors as write_safetensors, serialize_safetensors as serialize_safetensors
from .torch_live import to_state_dict as to_state_dict

__all__ = ['BurnToPyTorchAdapter', 'ChainAdapter', 'CheckpointReport', 'ConversionError', 'ConversionReport', 'Entry', 'FloatCastAdapter', 'Format', 'HalfPrecisionAdapter', 'IdentityAdapter', 'KeyRemapper', 'ModuleAdapter', 'ModuleTypes', 'OutputExistsError', 'PathFilter', 'PyTorchReadError', 'PyTorchToBurnAdapter', 'SafetensorsError', 'TensorSet', 'TorchTrainingState', 'UnknownModuleType', 'UnmatchedOptionError', 'UnsafePickleError', 'burn_checkpoint_to_pytorch', 'convert', 'detect_format', 'insert_enum_variants', 'load_into', 'load_record', 'map_indices_contiguous', 'parse_adapter', 'parse_safetensors', 'pytorch_to_burn_checkpoint', 'read_pytorch', 'read_pytorch_object', 'read_safetensors', 'read_tensors', 'read_torch_training_state', 'serialize_safetensors', 'strip_enum_variants', 'to_state_dict', 'transform', 'write_safetensors', 'write_tensors']
