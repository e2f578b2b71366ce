# generated from schema/metadata.toml and schema/layout.py by schema/generate.py — do not edit

"""Header format, layout constants and the limits Burn enforces."""

import struct

MAGIC = 0x4255524e
MAGIC_BYTES = b'NRUB'
FORMAT_VERSION = 1
HEADER_SIZE = 10
HEADER_FIELDS = ('magic', 'version', 'metadata_size')
HEADER = struct.Struct('<LHL')
MAGIC_FIELD_MAX = 4294967295
VERSION_FIELD_MAX = 65535
METADATA_SIZE_FIELD_MAX = 4294967295
TENSOR_ALIGNMENT = 256

MAX_METADATA_SIZE = 104857600
MAX_TENSOR_COUNT = 100000
MAX_TENSOR_SIZE = 10737418240
MAX_FILE_SIZE = 107374182400
MAX_CBOR_DEPTH = 128
CBOR_SCRATCH_SIZE = 4096


def align(offset: int) -> int:
    """Round up to the next multiple of TENSOR_ALIGNMENT."""
    return -(-offset // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT


def data_section_start(metadata_size: int) -> int:
    """Absolute offset of the data section for a metadata blob of this size."""
    return align(HEADER_SIZE + metadata_size)
