# generated from schema/metadata.toml and schema/layout.py by schema/generate.py — do not edit

"""The burnpack metadata types, as declared in schema/metadata.toml."""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

SERDE: dict[str, Callable[[Any], Any]] = {}
"""Burn's serde form, both ways: filled in by ``codec`` (which this package imports first),
so that these types need not import the codec that is written in terms of them."""



class BoolStore(enum.Enum):
    """How a Bool tensor stores each element (dtype.rs:276-285)."""

    Native = 'Native'
    U8 = 'U8'
    U32 = 'U32'

    def __repr__(self) -> str:
        return f"BoolStore.{self.name}"


class QuantValue(enum.Enum):
    """Quantized value type (scheme.rs:357-377)."""

    Q8F = 'Q8F'
    E5M2 = 'E5M2'
    E4M3 = 'E4M3'
    Q4F = 'Q4F'
    E2M1 = 'E2M1'
    Q2F = 'Q2F'
    Q8S = 'Q8S'
    Q4S = 'Q4S'
    Q2S = 'Q2S'

    def __repr__(self) -> str:
        return f"QuantValue.{self.name}"


class QuantMode(enum.Enum):
    """Quantization mode (scheme.rs:458-468)."""

    Symmetric = 'Symmetric'
    Lookup = 'Lookup'

    def __repr__(self) -> str:
        return f"QuantMode.{self.name}"


class ScaleDtype(enum.Enum):
    """Element type of quantization scales (scheme.rs:471-483)."""

    F32 = 'F32'
    F16 = 'F16'
    BF16 = 'BF16'
    UE8M0 = 'UE8M0'
    UE4M3 = 'UE4M3'

    def __repr__(self) -> str:
        return f"ScaleDtype.{self.name}"


class Metadata(NamedTuple):
    """The whole CBOR metadata item."""

    tensors: dict[str, TensorDescriptor]
    metadata: dict[str, str] = {}  # a shared default: decoders always pass their own
    scalars: dict[str, Scalar] = {}  # a shared default: decoders always pass their own

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> Metadata:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_Metadata"](data)


class TensorDescriptor(NamedTuple):
    """Where one tensor's bytes are and how to interpret them."""

    dtype: DType
    shape: tuple[int, ...]
    data_offsets: tuple[int, int]
    param_id: int | None = None

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> TensorDescriptor:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_TensorDescriptor"](data)


class QuantScheme(NamedTuple):
    """How a QFloat tensor is quantized (cubecl quant/scheme.rs:31-46)."""

    value: QuantValue
    store: QuantStore
    mode: QuantMode
    tensor: ScaleDtype | None = None
    block: BlockScale | None = None

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> QuantScheme:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_QuantScheme"](data)


class BlockScale(NamedTuple):
    """Per-block scales: the block shape and the scale dtype."""

    size: BlockSize
    dtype: ScaleDtype

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> BlockScale:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_BlockScale"](data)


class BlockSize(NamedTuple):
    """Block shape: `len` dims kept in `storage`, unused slots filled with 1."""

    storage: tuple[int, int, int, int, int]
    len: int

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> BlockSize:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_BlockSize"](data)


class DType:
    """Element type of a tensor (burn-std dtype.rs:9-26); variant order is Burn's.

    Unit variants are constants (``DType.F64``, ``DType.F32``, ``DType.Flex32``, ``DType.F16``, ``DType.BF16``, ``DType.I64``, ``DType.I32``, ``DType.I16``, ``DType.I8``, ``DType.U64``, ``DType.U32``, ``DType.U16``, ``DType.U8``); newtype
    variants are built by calling them (``DType.Bool(x)``, ``DType.QFloat(x)``).
    """

    __slots__ = ("variant", "value")
    VARIANTS: ClassVar[tuple[str, ...]] = ('F64', 'F32', 'Flex32', 'F16', 'BF16', 'I64', 'I32', 'I16', 'I8', 'U64', 'U32', 'U16', 'U8', 'Bool', 'QFloat')
    UNIT_VARIANTS: ClassVar[frozenset[str]] = frozenset(['F64', 'F32', 'Flex32', 'F16', 'BF16', 'I64', 'I32', 'I16', 'I8', 'U64', 'U32', 'U16', 'U8'])
    F64: ClassVar[DType]
    F32: ClassVar[DType]
    Flex32: ClassVar[DType]
    F16: ClassVar[DType]
    BF16: ClassVar[DType]
    I64: ClassVar[DType]
    I32: ClassVar[DType]
    I16: ClassVar[DType]
    I8: ClassVar[DType]
    U64: ClassVar[DType]
    U32: ClassVar[DType]
    U16: ClassVar[DType]
    U8: ClassVar[DType]

    variant: str
    value: Any  # BoolStore | QuantScheme | None, by variant: use the is_* predicates to tell

    def __init__(self, variant: str, value: Any = None) -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"unknown DType variant {variant!r}")
        if (value is None) != (variant in self.UNIT_VARIANTS):
            raise ValueError(f"DType.{variant} takes {'no' if variant in self.UNIT_VARIANTS else 'a'} value")
        object.__setattr__(self, "variant", variant)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("DType is immutable")

    def _key(self) -> tuple:
        return (self.variant, self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DType) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"DType.{self.variant}" if self.value is None else f"DType.{self.variant}({self.value!r})"

    def __reduce__(self) -> tuple:
        return (DType, (self.variant, self.value))

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> DType:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_DType"](data)

    @property
    def is_float(self) -> bool:
        """True for ``F64``, ``F32``, ``Flex32``, ``F16``, ``BF16``."""
        return self.variant in ('F64', 'F32', 'Flex32', 'F16', 'BF16')

    @property
    def is_int(self) -> bool:
        """True for ``I64``, ``I32``, ``I16``, ``I8``."""
        return self.variant in ('I64', 'I32', 'I16', 'I8')

    @property
    def is_uint(self) -> bool:
        """True for ``U64``, ``U32``, ``U16``, ``U8``."""
        return self.variant in ('U64', 'U32', 'U16', 'U8')

    @property
    def is_bool(self) -> bool:
        """True for ``Bool``."""
        return self.variant == 'Bool'

    @property
    def is_quantized(self) -> bool:
        """True for ``QFloat``."""
        return self.variant == 'QFloat'

    @classmethod
    def Bool(cls, value: BoolStore) -> DType:
        """The ``Bool`` variant."""
        return cls('Bool', value)

    @classmethod
    def QFloat(cls, value: QuantScheme) -> DType:
        """The ``QFloat`` variant."""
        return cls('QFloat', value)

DType.F64 = DType('F64')
DType.F32 = DType('F32')
DType.Flex32 = DType('Flex32')
DType.F16 = DType('F16')
DType.BF16 = DType('BF16')
DType.I64 = DType('I64')
DType.I32 = DType('I32')
DType.I16 = DType('I16')
DType.I8 = DType('I8')
DType.U64 = DType('U64')
DType.U32 = DType('U32')
DType.U16 = DType('U16')
DType.U8 = DType('U8')


class QuantStore:
    """How quantized values are packed (scheme.rs:443-455); the payload is the packing dim.

    Unit variants are constants (``QuantStore.Native``); newtype
    variants are built by calling them (``QuantStore.PackedNative(x)``, ``QuantStore.PackedU32(x)``).
    """

    __slots__ = ("variant", "value")
    VARIANTS: ClassVar[tuple[str, ...]] = ('Native', 'PackedNative', 'PackedU32')
    UNIT_VARIANTS: ClassVar[frozenset[str]] = frozenset(['Native'])
    Native: ClassVar[QuantStore]

    variant: str
    value: Any  # int | None, by variant: use the is_* predicates to tell

    def __init__(self, variant: str, value: Any = None) -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"unknown QuantStore variant {variant!r}")
        if (value is None) != (variant in self.UNIT_VARIANTS):
            raise ValueError(f"QuantStore.{variant} takes {'no' if variant in self.UNIT_VARIANTS else 'a'} value")
        object.__setattr__(self, "variant", variant)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("QuantStore is immutable")

    def _key(self) -> tuple:
        return (self.variant, self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuantStore) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"QuantStore.{self.variant}" if self.value is None else f"QuantStore.{self.variant}({self.value!r})"

    def __reduce__(self) -> tuple:
        return (QuantStore, (self.variant, self.value))

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> QuantStore:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_QuantStore"](data)

    @property
    def is_native(self) -> bool:
        """True for ``Native``."""
        return self.variant == 'Native'

    @property
    def is_packed_native(self) -> bool:
        """True for ``PackedNative``."""
        return self.variant == 'PackedNative'

    @property
    def is_packed_u32(self) -> bool:
        """True for ``PackedU32``."""
        return self.variant == 'PackedU32'

    def payload_fits(self) -> bool:
        """Whether the value fits the variant's type (e.g. ``Int``: an int in the i64 range)."""
        if self.variant == 'PackedNative':
            return type(self.value) is int and 0 <= self.value <= 18446744073709551615
        if self.variant == 'PackedU32':
            return type(self.value) is int and 0 <= self.value <= 18446744073709551615
        return self.value is None

    @classmethod
    def PackedNative(cls, value: int) -> QuantStore:
        """The ``PackedNative`` variant."""
        return cls('PackedNative', value)

    @classmethod
    def PackedU32(cls, value: int) -> QuantStore:
        """The ``PackedU32`` variant."""
        return cls('PackedU32', value)

QuantStore.Native = QuantStore('Native')


class Scalar:
    """A typed scalar value stored beside the tensors (base.rs:178-188).

    Unit variants are constants (none); newtype
    variants are built by calling them (``Scalar.Int(x)``, ``Scalar.UInt(x)``, ``Scalar.Float(x)``, ``Scalar.Bool(x)``).
    """

    __slots__ = ("variant", "value")
    VARIANTS: ClassVar[tuple[str, ...]] = ('Int', 'UInt', 'Float', 'Bool')
    UNIT_VARIANTS: ClassVar[frozenset[str]] = frozenset([])

    variant: str
    value: Any  # int | float | bool, by variant: use the is_* predicates to tell

    def __init__(self, variant: str, value: Any = None) -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"unknown Scalar variant {variant!r}")
        if (value is None) != (variant in self.UNIT_VARIANTS):
            raise ValueError(f"Scalar.{variant} takes {'no' if variant in self.UNIT_VARIANTS else 'a'} value")
        object.__setattr__(self, "variant", variant)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Scalar is immutable")

    def _key(self) -> tuple:
        if self.variant in ('Float',):
            return (self.variant, struct.pack("<d", self.value))
        return (self.variant, self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scalar) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Scalar.{self.variant}" if self.value is None else f"Scalar.{self.variant}({self.value!r})"

    def __reduce__(self) -> tuple:
        return (Scalar, (self.variant, self.value))

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write)."""
        return SERDE["to_serde"](self)

    @classmethod
    def from_serde(cls, data: Any) -> Scalar:
        """Parse Burn's serde form; raises ValueError for anything else."""
        return SERDE["from_serde_Scalar"](data)

    @property
    def is_int(self) -> bool:
        """True for ``Int``."""
        return self.variant == 'Int'

    @property
    def is_uint(self) -> bool:
        """True for ``UInt``."""
        return self.variant == 'UInt'

    @property
    def is_float(self) -> bool:
        """True for ``Float``."""
        return self.variant == 'Float'

    @property
    def is_bool(self) -> bool:
        """True for ``Bool``."""
        return self.variant == 'Bool'

    def payload_fits(self) -> bool:
        """Whether the value fits the variant's type (e.g. ``Int``: an int in the i64 range)."""
        if self.variant == 'Int':
            return type(self.value) is int and -9223372036854775808 <= self.value <= 9223372036854775807
        if self.variant == 'UInt':
            return type(self.value) is int and 0 <= self.value <= 18446744073709551615
        if self.variant == 'Float':
            return type(self.value) is float
        if self.variant == 'Bool':
            return type(self.value) is bool
        return self.value is None

    @classmethod
    def Int(cls, value: int) -> Scalar:
        """The ``Int`` variant."""
        return cls('Int', value)

    @classmethod
    def UInt(cls, value: int) -> Scalar:
        """The ``UInt`` variant."""
        return cls('UInt', value)

    @classmethod
    def Float(cls, value: float) -> Scalar:
        """The ``Float`` variant."""
        return cls('Float', value)

    @classmethod
    def Bool(cls, value: bool) -> Scalar:
        """The ``Bool`` variant."""
        return cls('Bool', value)



class ElementInfo(NamedTuple):
    """An element type: its kind, size in bytes and its names in numpy, torch and safetensors."""

    kind: str | None
    size: int | None
    numpy: str | None
    torch: str | None
    safetensors: str | None


DTYPE_INFO: dict[str, ElementInfo] = {
    # DType variant -> element info (Bool: see BOOL_STORE_INFO; QFloat: bit-packed, no size)
    'F64': ElementInfo('float', 8, '<f8', 'float64', 'F64'),
    'F32': ElementInfo('float', 4, '<f4', 'float32', 'F32'),
    'Flex32': ElementInfo('float', 4, '<f4', 'float32', 'F32'),
    'F16': ElementInfo('float', 2, '<f2', 'float16', 'F16'),
    'BF16': ElementInfo('float', 2, 'bfloat16', 'bfloat16', 'BF16'),
    'I64': ElementInfo('int', 8, '<i8', 'int64', 'I64'),
    'I32': ElementInfo('int', 4, '<i4', 'int32', 'I32'),
    'I16': ElementInfo('int', 2, '<i2', 'int16', 'I16'),
    'I8': ElementInfo('int', 1, 'i1', 'int8', 'I8'),
    'U64': ElementInfo('uint', 8, '<u8', 'uint64', 'U64'),
    'U32': ElementInfo('uint', 4, '<u4', 'uint32', 'U32'),
    'U16': ElementInfo('uint', 2, '<u2', 'uint16', 'U16'),
    'U8': ElementInfo('uint', 1, 'u1', 'uint8', 'U8'),
    'Bool': ElementInfo('bool', None, None, 'bool', 'BOOL'),
    'QFloat': ElementInfo('quantized', None, None, None, None),
}

BOOL_STORE_INFO: dict[str, ElementInfo] = {
    # BoolStore variant -> how a Bool tensor stores each element
    'Native': ElementInfo('bool', 1, '?', None, None),
    'U8': ElementInfo('bool', 1, 'u1', None, None),
    'U32': ElementInfo('bool', 4, '<u4', None, None),
}
