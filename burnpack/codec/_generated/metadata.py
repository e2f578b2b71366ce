# generated from schema/metadata.toml and schema/layout.py by schema/generate.py — do not edit

"""The burnpack metadata types, as declared in schema/metadata.toml, and their codec: per type an
encoder, a fast validator, an exact (ciborium-equivalent) decoder and Burn's serde form both ways.
"""

from __future__ import annotations

import enum
import re
import struct
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

from .._cbor import (
    I64_MAX,
    I64_MIN,
    encode,
    map_head,
    text_bytes,
    byte_string,
    uint_array,
    uint_bytes,
    U64_MAX,
    Decoder,
    Fallback,
    ShortestFloat,
    bits_to_float,
    fast_loads,
    float_to_bits,
    map_header,
    semantic,
    uints,
)
from .layout import CBOR_SCRATCH_SIZE, MAX_CBOR_DEPTH


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
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> Metadata:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_Metadata(data)


class TensorDescriptor(NamedTuple):
    """Where one tensor's bytes are and how to interpret them."""

    dtype: DType
    shape: tuple[int, ...]
    data_offsets: tuple[int, int]
    param_id: int | None = None

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> TensorDescriptor:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_TensorDescriptor(data)


class QuantScheme(NamedTuple):
    """How a QFloat tensor is quantized (cubecl quant/scheme.rs:31-46)."""

    value: QuantValue
    store: QuantStore
    mode: QuantMode
    tensor: ScaleDtype | None = None
    block: BlockScale | None = None

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> QuantScheme:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_QuantScheme(data)


class BlockScale(NamedTuple):
    """Per-block scales: the block shape and the scale dtype."""

    size: BlockSize
    dtype: ScaleDtype

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> BlockScale:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_BlockScale(data)


class BlockSize(NamedTuple):
    """Block shape: `len` dims kept in `storage`, unused slots filled with 1."""

    storage: tuple[int, int, int, int, int]
    len: int

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> BlockSize:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_BlockSize(data)


class DType:
    """Element type of a tensor (burn-std dtype.rs:9-26); variant order is Burn's.

    Unit variants are constants (``DType.F64``, ``DType.F32``, ``DType.Flex32``, ``DType.F16``, ``DType.BF16``, ``DType.I64``, ``DType.I32``, ``DType.I16``, ``DType.I8``, ``DType.U64``, ``DType.U32``, ``DType.U16``, ``DType.U8``); newtype
    variants are built by calling them (``DType.Bool(x)``, ``DType.QFloat(x)``).

    Args:
        variant: The variant's name, one of ``DType.VARIANTS``.
        value: The newtype variant's value; None for a unit variant.

    Raises:
        ValueError: The variant is unknown, or takes a value and got none (or the reverse).
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
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> DType:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_DType(data)

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
        """The ``Bool`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('Bool', value)

    @classmethod
    def QFloat(cls, value: QuantScheme) -> DType:
        """The ``QFloat`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
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

    Args:
        variant: The variant's name, one of ``QuantStore.VARIANTS``.
        value: The newtype variant's value; None for a unit variant.

    Raises:
        ValueError: The variant is unknown, or takes a value and got none (or the reverse).
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
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> QuantStore:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_QuantStore(data)

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
        """Whether the value fits the variant's type (e.g. ``Int``: an int in the i64 range).

        Returns:
            True when it fits.
        """
        if self.variant == 'PackedNative':
            return type(self.value) is int and 0 <= self.value <= 18446744073709551615
        if self.variant == 'PackedU32':
            return type(self.value) is int and 0 <= self.value <= 18446744073709551615
        return self.value is None

    @classmethod
    def PackedNative(cls, value: int) -> QuantStore:
        """The ``PackedNative`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('PackedNative', value)

    @classmethod
    def PackedU32(cls, value: int) -> QuantStore:
        """The ``PackedU32`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('PackedU32', value)

QuantStore.Native = QuantStore('Native')


class Scalar:
    """A typed scalar value stored beside the tensors (base.rs:178-188).

    Unit variants are constants (none); newtype
    variants are built by calling them (``Scalar.Int(x)``, ``Scalar.UInt(x)``, ``Scalar.Float(x)``, ``Scalar.Bool(x)``).

    Args:
        variant: The variant's name, one of ``Scalar.VARIANTS``.
        value: The newtype variant's value; None for a unit variant.

    Raises:
        ValueError: The variant is unknown, or takes a value and got none (or the reverse).
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
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return serde(self)

    @classmethod
    def from_serde(cls, data: Any) -> Scalar:
        """Parse Burn's serde form.

        Args:
            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).

        Returns:
            The value.

        Raises:
            ValueError: ``data`` is not a serde form of this type.
        """
        return from_serde_Scalar(data)

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
        """Whether the value fits the variant's type (e.g. ``Int``: an int in the i64 range).

        Returns:
            True when it fits.
        """
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
        """The ``Int`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('Int', value)

    @classmethod
    def UInt(cls, value: int) -> Scalar:
        """The ``UInt`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('UInt', value)

    @classmethod
    def Float(cls, value: float) -> Scalar:
        """The ``Float`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('Float', value)

    @classmethod
    def Bool(cls, value: bool) -> Scalar:
        """The ``Bool`` variant.

        Args:
            value: Its value.

        Returns:
            The variant.
        """
        return cls('Bool', value)



class ElementInfo(NamedTuple):
    """An element type: its kind, size in bytes, its names in numpy, torch and safetensors and the
    storage class a pickled torch file names (``Float`` for ``torch.FloatStorage``)."""

    kind: str | None
    size: int | None
    numpy: str | None
    torch: str | None
    safetensors: str | None
    torch_storage: str | None


DTYPE_INFO: dict[str, ElementInfo] = {
    # DType variant -> element info (Bool: see BOOL_STORE_INFO; QFloat: bit-packed, no size)
    'F64': ElementInfo('float', 8, '<f8', 'float64', 'F64', 'Double'),
    'F32': ElementInfo('float', 4, '<f4', 'float32', 'F32', 'Float'),
    'Flex32': ElementInfo('float', 4, '<f4', 'float32', 'F32', 'Float'),
    'F16': ElementInfo('float', 2, '<f2', 'float16', 'F16', 'Half'),
    'BF16': ElementInfo('float', 2, 'bfloat16', 'bfloat16', 'BF16', 'BFloat16'),
    'I64': ElementInfo('int', 8, '<i8', 'int64', 'I64', 'Long'),
    'I32': ElementInfo('int', 4, '<i4', 'int32', 'I32', 'Int'),
    'I16': ElementInfo('int', 2, '<i2', 'int16', 'I16', 'Short'),
    'I8': ElementInfo('int', 1, 'i1', 'int8', 'I8', 'Char'),
    'U64': ElementInfo('uint', 8, '<u8', 'uint64', 'U64', None),
    'U32': ElementInfo('uint', 4, '<u4', 'uint32', 'U32', None),
    'U16': ElementInfo('uint', 2, '<u2', 'uint16', 'U16', None),
    'U8': ElementInfo('uint', 1, 'u1', 'uint8', 'U8', 'Byte'),
    'Bool': ElementInfo('bool', None, None, 'bool', 'BOOL', 'Bool'),
    'QFloat': ElementInfo('quantized', None, None, None, None, None),
}

BOOL_STORE_INFO: dict[str, ElementInfo] = {
    # BoolStore variant -> how a Bool tensor stores each element
    'Native': ElementInfo('bool', 1, '?', None, None, None),
    'U8': ElementInfo('bool', 1, 'u1', None, None, None),
    'U32': ElementInfo('bool', 4, '<u4', None, None, None),
}

DTYPE_ALIASES: dict[str, str] = {
    # further spelling (lower case) -> DType variant
    'double': 'F64',
    'float': 'F32',
    'half': 'F16',
}

NUMPY_EXTENSION_TYPES: frozenset[str] = frozenset(('bfloat16', 'float8_e4m3fn'))
"""The numpy names above that are ml_dtypes types (``ml_dtypes.bfloat16``), not numpy's own."""

SAFETENSORS_CODE_ORDER: tuple[str, ...] = ('BOOL', 'U8', 'I8', 'I16', 'U16', 'F16', 'BF16', 'I32', 'U32', 'F32', 'F64', 'I64', 'U64')
"""safetensors' dtype codes in the order of its ``Dtype`` enum (by increasing alignment)."""


class QuantValueInfo(NamedTuple):
    """A quantized value type: ``int`` or ``minifloat``, ``QuantValue::size_bits``, the integer range
    quantizing clamps to (None for minifloats) and the values per stored element under
    ``QuantStore::PackedNative``."""

    kind: str
    bits: int
    range: tuple[int, int] | None
    packed_native: int


QUANT_VALUE_INFO: dict[QuantValue, QuantValueInfo] = {
    QuantValue.Q8F: QuantValueInfo('int', 8, (-128, 127), 1),
    QuantValue.E5M2: QuantValueInfo('minifloat', 8, None, 1),
    QuantValue.E4M3: QuantValueInfo('minifloat', 8, None, 1),
    QuantValue.Q4F: QuantValueInfo('int', 4, (-8, 7), 1),
    QuantValue.E2M1: QuantValueInfo('minifloat', 4, None, 2),
    QuantValue.Q2F: QuantValueInfo('int', 2, (-2, 1), 1),
    QuantValue.Q8S: QuantValueInfo('int', 8, (-127, 127), 1),
    QuantValue.Q4S: QuantValueInfo('int', 4, (-7, 7), 1),
    QuantValue.Q2S: QuantValueInfo('int', 2, (-1, 1), 1),
}


class ScaleDtypeInfo(NamedTuple):
    """A scale type: bytes per stored scale, ``ScaleDtype::max_representable``, the f32 grid
    ``ScaleDtype::round_up`` moves scales onto — (bit step on the f32 pattern, (smallest normal,
    subnormal spacing) or None) — or None when Burn has no rounding for it, and the numpy (or
    ml_dtypes) type its bytes are (None: Burn has no codec for it)."""

    size: int
    max: float
    grid: tuple[int, tuple[float, float] | None] | None
    numpy: str | None


SCALE_DTYPE_INFO: dict[ScaleDtype, ScaleDtypeInfo] = {
    ScaleDtype.F32: ScaleDtypeInfo(4, 3.4028234663852886e+38, (1, None), '<f4'),
    ScaleDtype.F16: ScaleDtypeInfo(2, 65504.0, (8192, (6.103515625e-05, 5.960464477539063e-08)), '<f2'),
    ScaleDtype.BF16: ScaleDtypeInfo(2, 3.3895313892515355e+38, (65536, None), 'bfloat16'),
    ScaleDtype.UE8M0: ScaleDtypeInfo(1, 1.7014118346046923e+38, None, None),
    ScaleDtype.UE4M3: ScaleDtypeInfo(1, 448.0, (1048576, (0.015625, 0.001953125)), 'float8_e4m3fn'),
}

QUANTIZABLE_VALUES: tuple[QuantValue, ...] = (QuantValue.Q8S, QuantValue.Q8F, QuantValue.Q4S, QuantValue.Q4F, QuantValue.Q2S, QuantValue.Q2F)
"""The values Burn's CPU backends quantize to (those with an integer range), widest first,
symmetric before full range."""
QUANTIZABLE_SCALES: tuple[ScaleDtype, ...] = (ScaleDtype.F32, ScaleDtype.F16, ScaleDtype.BF16, ScaleDtype.UE4M3)
"""The scale dtypes Burn rounds scales onto (``ScaleDtype::round_up``), so quantizes with."""


def debug_DType(value: DType) -> str:
    """Rust's ``{:?}`` of a DType: a unit variant's name, a newtype variant's name and its
    payload in parentheses (float and struct payloads: their Python repr)."""
    if value.value is None:
        return value.variant
    if value.variant == 'Bool':
        return f"Bool({value.value.name})"
    if value.variant == 'QFloat':
        return f"QFloat({repr(value.value)})"
    raise AssertionError(value.variant)


def debug_QuantStore(value: QuantStore) -> str:
    """Rust's ``{:?}`` of a QuantStore: a unit variant's name, a newtype variant's name and its
    payload in parentheses (float and struct payloads: their Python repr)."""
    if value.value is None:
        return value.variant
    if value.variant == 'PackedNative':
        return f"PackedNative({str(value.value)})"
    if value.variant == 'PackedU32':
        return f"PackedU32({str(value.value)})"
    raise AssertionError(value.variant)


def debug_Scalar(value: Scalar) -> str:
    """Rust's ``{:?}`` of a Scalar: a unit variant's name, a newtype variant's name and its
    payload in parentheses (float and struct payloads: their Python repr)."""
    if value.value is None:
        return value.variant
    if value.variant == 'Int':
        return f"Int({str(value.value)})"
    if value.variant == 'UInt':
        return f"UInt({str(value.value)})"
    if value.variant == 'Float':
        return f"Float({repr(value.value)})"
    if value.variant == 'Bool':
        return f"Bool({str(value.value).lower()})"
    raise AssertionError(value.variant)


# -----------------------------------------------------------------------------------------------
# The codec
# -----------------------------------------------------------------------------------------------
_ABSENT = object()


def _byte(b: int) -> int:
    return b


def _in_context(d: Decoder, key: str, read: Callable[[], Any]) -> Any:
    d.context = key
    return read()


def _fast_or_exact(d: Decoder, fast: Callable[[Any], Any], exact: Callable[[Decoder], Any]) -> Any:
    """One map value: cbor2 + the fast validator when that reads it as Burn does, else the exact path."""
    value = d.fast_item(fast)
    return exact(d) if value is None else value


def encode_Metadata(v: Metadata) -> dict:
    """Metadata as ciborium writes it: keys in declaration order."""
    out: dict[str, Any] = {'tensors': {k: encode_TensorDescriptor(v.tensors[k]) for k in sorted(v.tensors)}}
    if v.metadata:
        out['metadata'] = {k: v.metadata[k] for k in sorted(v.metadata)}
    if v.scalars:
        out['scalars'] = {k: encode_Scalar(v.scalars[k]) for k in sorted(v.scalars)}
    return out


def encode_TensorDescriptor(v: TensorDescriptor) -> dict:
    """TensorDescriptor as ciborium writes it: keys in declaration order."""
    out: dict[str, Any] = {'dtype': encode_DType(v.dtype), 'shape': list(v.shape), 'data_offsets': list(v.data_offsets)}
    if v.param_id is not None:
        out['param_id'] = v.param_id
    return out


def encode_QuantScheme(v: QuantScheme) -> dict:
    """QuantScheme as ciborium writes it: keys in declaration order."""
    return {'value': v.value.value, 'store': encode_QuantStore(v.store), 'mode': v.mode.value, 'tensor': (None if v.tensor is None else v.tensor.value), 'block': (None if v.block is None else encode_BlockScale(v.block))}


def encode_BlockScale(v: BlockScale) -> dict:
    """BlockScale as ciborium writes it: keys in declaration order."""
    return {'size': encode_BlockSize(v.size), 'dtype': v.dtype.value}


def encode_BlockSize(v: BlockSize) -> dict:
    """BlockSize as ciborium writes it: keys in declaration order."""
    return {'storage': list(v.storage), 'len': v.len}


def encode_DType(v: DType) -> Any:
    """Unit variants as text, newtype variants as a one-entry map."""
    if v.value is None:
        return v.variant
    if v.variant == 'Bool' and isinstance(v.value, BoolStore):
        return {'Bool': v.value.value}
    if v.variant == 'QFloat' and isinstance(v.value, QuantScheme):
        return {'QFloat': encode_QuantScheme(v.value)}
    raise AssertionError(v.variant)


def encode_QuantStore(v: QuantStore) -> Any:
    """Unit variants as text, newtype variants as a one-entry map."""
    if v.value is None:
        return v.variant
    if v.variant == 'PackedNative' and type(v.value) is int:
        return {'PackedNative': v.value}
    if v.variant == 'PackedU32' and type(v.value) is int:
        return {'PackedU32': v.value}
    raise AssertionError(v.variant)


def encode_Scalar(v: Scalar) -> Any:
    """Unit variants as text, newtype variants as a one-entry map."""
    if v.value is None:
        return v.variant
    if v.variant == 'Int' and type(v.value) is int:
        return {'Int': v.value}
    if v.variant == 'UInt' and type(v.value) is int:
        return {'UInt': v.value}
    if v.variant == 'Float' and isinstance(v.value, float):
        return {'Float': ShortestFloat(float_to_bits(v.value))}
    if v.variant == 'Bool' and isinstance(v.value, bool):
        return {'Bool': v.value}
    raise AssertionError(v.variant)


def fast_DType(raw: Any) -> DType:
    if type(raw) is str:
        return _DType_UNITS[raw]
    if type(raw) is not dict or len(raw) != 1:
        raise Fallback
    ((name, payload),) = raw.items()
    if name == 'Bool':
        value_Bool = fast_BoolStore(payload)
        return DType('Bool', value_Bool)
    if name == 'QFloat':
        value_QFloat = fast_QuantScheme(payload)
        return DType('QFloat', value_QFloat)
    raise Fallback
_DType_UNITS = {name: getattr(DType, name) for name in ('F64', 'F32', 'Flex32', 'F16', 'BF16', 'I64', 'I32', 'I16', 'I8', 'U64', 'U32', 'U16', 'U8')}


def fast_BoolStore(raw: Any) -> BoolStore:
    if type(raw) is not str:
        raise Fallback
    return BoolStore[raw]


def fast_QuantValue(raw: Any) -> QuantValue:
    if type(raw) is not str:
        raise Fallback
    return QuantValue[raw]


def fast_QuantStore(raw: Any) -> QuantStore:
    if type(raw) is str:
        return _QuantStore_UNITS[raw]
    if type(raw) is not dict or len(raw) != 1:
        raise Fallback
    ((name, payload),) = raw.items()
    if name == 'PackedNative':
        if type(payload) is not int or payload < 0 or payload > U64_MAX:
            raise Fallback
        value_PackedNative = payload
        return QuantStore('PackedNative', value_PackedNative)
    if name == 'PackedU32':
        if type(payload) is not int or payload < 0 or payload > U64_MAX:
            raise Fallback
        value_PackedU32 = payload
        return QuantStore('PackedU32', value_PackedU32)
    raise Fallback
_QuantStore_UNITS = {name: getattr(QuantStore, name) for name in ('Native',)}


def fast_QuantMode(raw: Any) -> QuantMode:
    if type(raw) is not str:
        raise Fallback
    return QuantMode[raw]


def fast_ScaleDtype(raw: Any) -> ScaleDtype:
    if type(raw) is not str:
        raise Fallback
    return ScaleDtype[raw]


def fast_Scalar(raw: Any) -> Scalar:
    if type(raw) is str:
        raise Fallback
    if type(raw) is not dict or len(raw) != 1:
        raise Fallback
    ((name, payload),) = raw.items()
    if name == 'Int':
        if type(payload) is not int or payload < I64_MIN or payload > I64_MAX:
            raise Fallback
        value_Int = payload
        return Scalar('Int', value_Int)
    if name == 'UInt':
        if type(payload) is not int or payload < 0 or payload > U64_MAX:
            raise Fallback
        value_UInt = payload
        return Scalar('UInt', value_UInt)
    if name == 'Float':
        if type(payload) is not float or payload != payload:
            raise Fallback  # NaN payloads need the exact decoder
        value_Float = payload
        return Scalar('Float', value_Float)
    if name == 'Bool':
        if type(payload) is not bool:
            raise Fallback
        value_Bool = payload
        return Scalar('Bool', value_Bool)
    raise Fallback


_Metadata_FIELDS = frozenset(['tensors', 'metadata', 'scalars'])


def fast_Metadata(raw: Any) -> Metadata:
    if type(raw) is not dict or not raw.keys() <= _Metadata_FIELDS:
        raise Fallback
    f_tensors = raw['tensors']
    if type(f_tensors) is not dict:
        raise Fallback
    f_tensors_out: dict[str, Any] = {}
    for key, val in f_tensors.items():
        if type(key) is not str:
            raise Fallback
        f_tensors_item = fast_TensorDescriptor(val)
        f_tensors_out[key] = f_tensors_item
    f_tensors = f_tensors_out
    f_metadata = raw.get('metadata', _ABSENT)
    if f_metadata is _ABSENT:
        f_metadata = {}
    else:
        if type(f_metadata) is not dict:
            raise Fallback
        for key, val in f_metadata.items():
            if type(key) is not str or type(val) is not str:
                raise Fallback
    f_scalars = raw.get('scalars', _ABSENT)
    if f_scalars is _ABSENT:
        f_scalars = {}
    else:
        if type(f_scalars) is not dict:
            raise Fallback
        f_scalars_out: dict[str, Any] = {}
        for key, val in f_scalars.items():
            if type(key) is not str:
                raise Fallback
            f_scalars_item = fast_Scalar(val)
            f_scalars_out[key] = f_scalars_item
        f_scalars = f_scalars_out
    return tuple.__new__(Metadata, (f_tensors, f_metadata, f_scalars,))


_TensorDescriptor_FIELDS = frozenset(['dtype', 'shape', 'data_offsets', 'param_id'])


def fast_TensorDescriptor(raw: Any) -> TensorDescriptor:
    if type(raw) is not dict or not raw.keys() <= _TensorDescriptor_FIELDS:
        raise Fallback
    f_dtype = raw['dtype']
    f_dtype = fast_DType(f_dtype)
    f_shape = raw['shape']
    if type(f_shape) is not list:
        raise Fallback
    for e in f_shape:
        if type(e) is not int or e < 0 or e > U64_MAX:
            raise Fallback
    f_shape = tuple(f_shape)
    f_data_offsets = raw['data_offsets']
    if type(f_data_offsets) is not list:
        raise Fallback
    if len(f_data_offsets) != 2:
        raise Fallback
    for e in f_data_offsets:
        if type(e) is not int or e < 0 or e > U64_MAX:
            raise Fallback
    f_data_offsets = tuple(f_data_offsets)
    f_param_id = raw.get('param_id', None)
    if f_param_id is None:
        f_param_id = None
    else:
        if type(f_param_id) is not int or f_param_id < 0 or f_param_id > U64_MAX:
            raise Fallback
    return tuple.__new__(TensorDescriptor, (f_dtype, f_shape, f_data_offsets, f_param_id,))


_QuantScheme_FIELDS = frozenset(['value', 'store', 'mode', 'tensor', 'block'])


def fast_QuantScheme(raw: Any) -> QuantScheme:
    if type(raw) is not dict or not raw.keys() <= _QuantScheme_FIELDS:
        raise Fallback
    f_value = raw['value']
    f_value = fast_QuantValue(f_value)
    f_store = raw['store']
    f_store = fast_QuantStore(f_store)
    f_mode = raw['mode']
    f_mode = fast_QuantMode(f_mode)
    f_tensor = raw.get('tensor', None)
    if f_tensor is None:
        f_tensor = None
    else:
        f_tensor = fast_ScaleDtype(f_tensor)
    f_block = raw.get('block', None)
    if f_block is None:
        f_block = None
    else:
        f_block = fast_BlockScale(f_block)
    return tuple.__new__(QuantScheme, (f_value, f_store, f_mode, f_tensor, f_block,))


_BlockScale_FIELDS = frozenset(['size', 'dtype'])


def fast_BlockScale(raw: Any) -> BlockScale:
    if type(raw) is not dict or not raw.keys() <= _BlockScale_FIELDS:
        raise Fallback
    f_size = raw['size']
    f_size = fast_BlockSize(f_size)
    f_dtype = raw['dtype']
    f_dtype = fast_ScaleDtype(f_dtype)
    return tuple.__new__(BlockScale, (f_size, f_dtype,))


_BlockSize_FIELDS = frozenset(['storage', 'len'])


def fast_BlockSize(raw: Any) -> BlockSize:
    if type(raw) is not dict or not raw.keys() <= _BlockSize_FIELDS:
        raise Fallback
    f_storage = raw['storage']
    if type(f_storage) is not list:
        raise Fallback
    if len(f_storage) != 5:
        raise Fallback
    for e in f_storage:
        if type(e) is not int or e < 0 or e > 0xFF:
            raise Fallback
    f_storage = tuple(f_storage)
    f_len = raw['len']
    if type(f_len) is not int or f_len < 0 or f_len > 0xFF:
        raise Fallback
    return tuple.__new__(BlockSize, (f_storage, f_len,))


def exact_DType(d: Decoder) -> DType:
    name, value = d.enum(('F64', 'F32', 'Flex32', 'F16', 'BF16', 'I64', 'I32', 'I16', 'I8', 'U64', 'U32', 'U16', 'U8', 'Bool', 'QFloat'), {'Bool': lambda: exact_BoolStore(d), 'QFloat': lambda: exact_QuantScheme(d)})
    return DType(name, value)


def exact_BoolStore(d: Decoder) -> BoolStore:
    name, value = d.enum(('Native', 'U8', 'U32'), {})
    return BoolStore[name]


def exact_QuantValue(d: Decoder) -> QuantValue:
    name, value = d.enum(('Q8F', 'E5M2', 'E4M3', 'Q4F', 'E2M1', 'Q2F', 'Q8S', 'Q4S', 'Q2S'), {})
    return QuantValue[name]


def exact_QuantStore(d: Decoder) -> QuantStore:
    name, value = d.enum(('Native', 'PackedNative', 'PackedU32'), {'PackedNative': d.u64, 'PackedU32': d.u64})
    return QuantStore(name, value)


def exact_QuantMode(d: Decoder) -> QuantMode:
    name, value = d.enum(('Symmetric', 'Lookup'), {})
    return QuantMode[name]


def exact_ScaleDtype(d: Decoder) -> ScaleDtype:
    name, value = d.enum(('F32', 'F16', 'BF16', 'UE8M0', 'UE4M3'), {})
    return ScaleDtype[name]


def exact_Scalar(d: Decoder) -> Scalar:
    name, value = d.enum(('Int', 'UInt', 'Float', 'Bool'), {'Int': d.i64, 'UInt': d.u64, 'Float': lambda: bits_to_float(d.f64_bits()), 'Bool': d.boolean})
    return Scalar(name, value)


def exact_Metadata(d: Decoder) -> Metadata:
    got = d.struct({'tensors': lambda: d.map(d.string, lambda key: _in_context(d, key, lambda: _fast_or_exact(d, fast_TensorDescriptor, exact_TensorDescriptor))), 'metadata': lambda: d.map(d.string, lambda key: _in_context(d, key, d.string)), 'scalars': lambda: d.map(d.string, lambda key: _in_context(d, key, lambda: _fast_or_exact(d, fast_Scalar, exact_Scalar)))})
    if 'tensors' not in got:
        raise semantic("missing field `tensors`")
    return Metadata(got['tensors'], got.get('metadata', {}), got.get('scalars', {}))


def exact_TensorDescriptor(d: Decoder) -> TensorDescriptor:
    got = d.struct({'dtype': lambda: exact_DType(d), 'shape': lambda: tuple(d.seq(d.u64, _byte)), 'data_offsets': lambda: d.fixed(2, d.u64, _byte, 'a tuple of size 2'), 'param_id': lambda: d.option(d.u64)})
    if 'dtype' not in got:
        raise semantic("missing field `dtype`")
    if 'shape' not in got:
        raise semantic("missing field `shape`")
    if 'data_offsets' not in got:
        raise semantic("missing field `data_offsets`")
    return TensorDescriptor(got['dtype'], got['shape'], got['data_offsets'], got.get('param_id', None))


def exact_QuantScheme(d: Decoder) -> QuantScheme:
    got = d.struct({'value': lambda: exact_QuantValue(d), 'store': lambda: exact_QuantStore(d), 'mode': lambda: exact_QuantMode(d), 'tensor': lambda: d.option(lambda: exact_ScaleDtype(d)), 'block': lambda: d.option(lambda: exact_BlockScale(d))})
    if 'value' not in got:
        raise semantic("missing field `value`")
    if 'store' not in got:
        raise semantic("missing field `store`")
    if 'mode' not in got:
        raise semantic("missing field `mode`")
    return QuantScheme(got['value'], got['store'], got['mode'], got.get('tensor', None), got.get('block', None))


def exact_BlockScale(d: Decoder) -> BlockScale:
    got = d.struct({'size': lambda: exact_BlockSize(d), 'dtype': lambda: exact_ScaleDtype(d)})
    if 'size' not in got:
        raise semantic("missing field `size`")
    if 'dtype' not in got:
        raise semantic("missing field `dtype`")
    return BlockScale(got['size'], got['dtype'])


def exact_BlockSize(d: Decoder) -> BlockSize:
    got = d.struct({'storage': lambda: d.fixed(5, d.u8, _byte, 'an array of length 5'), 'len': d.u8})
    if 'storage' not in got:
        raise semantic("missing field `storage`")
    if 'len' not in got:
        raise semantic("missing field `len`")
    return BlockSize(got['storage'], got['len'])


DType_SCAN: dict[bytes, DType] = {b'cF64': DType.F64, b'cF32': DType.F32, b'fFlex32': DType.Flex32, b'cF16': DType.F16, b'dBF16': DType.BF16, b'cI64': DType.I64, b'cI32': DType.I32, b'cI16': DType.I16, b'bI8': DType.I8, b'cU64': DType.U64, b'cU32': DType.U32, b'cU16': DType.U16, b'bU8': DType.U8, b'\xa1dBoolfNative': DType.Bool(BoolStore.Native), b'\xa1dBoolbU8': DType.Bool(BoolStore.U8), b'\xa1dBoolcU32': DType.Bool(BoolStore.U32)}
"""The CBOR bytes of each DType the scanner matches → the value."""
TensorDescriptor_RE = re.compile(rb"([\xa3-\xa4])\x65\x64\x74\x79\x70\x65(\xa1\x64\x42\x6f\x6f\x6c\x66\x4e\x61\x74\x69\x76\x65|\xa1\x64\x42\x6f\x6f\x6c\x63\x55\x33\x32|\xa1\x64\x42\x6f\x6f\x6c\x62\x55\x38|\x66\x46\x6c\x65\x78\x33\x32|\x64\x42\x46\x31\x36|\x63\x46\x36\x34|\x63\x46\x33\x32|\x63\x46\x31\x36|\x63\x49\x36\x34|\x63\x49\x33\x32|\x63\x49\x31\x36|\x63\x55\x36\x34|\x63\x55\x33\x32|\x63\x55\x31\x36|\x62\x49\x38|\x62\x55\x38)\x65\x73\x68\x61\x70\x65((?:[\x80-\x97]|\x98[\x00-\xff]|\x99[\x00-\xff]{2}))((?:(?:[\x00-\x17]|\x18[\x00-\xff]|\x19[\x00-\xff]{2}|\x1a[\x00-\xff]{4}|\x1b[\x00-\xff]{8}))*?)\x6c\x64\x61\x74\x61\x5f\x6f\x66\x66\x73\x65\x74\x73\x82((?:[\x00-\x17]|\x18[\x00-\xff]|\x19[\x00-\xff]{2}|\x1a[\x00-\xff]{4}|\x1b[\x00-\xff]{8}))((?:[\x00-\x17]|\x18[\x00-\xff]|\x19[\x00-\xff]{2}|\x1a[\x00-\xff]{4}|\x1b[\x00-\xff]{8}))(?:\x68\x70\x61\x72\x61\x6d\x5f\x69\x64((?:[\x00-\x17]|\x18[\x00-\xff]|\x19[\x00-\xff]{2}|\x1a[\x00-\xff]{4}|\x1b[\x00-\xff]{8})))?")
"""One TensorDescriptor exactly as Burn writes it, from its struct head; the groups are
head, dtype, shape_head, shape, data_offsets_0, data_offsets_1, param_id."""
TensorDescriptor_HEAD = 0xa3
"""The struct head of a TensorDescriptor without its optional fields (one more per field present)."""
TensorDescriptor_LITERAL_BYTES = 26
"""Bytes of a match the groups do not capture: the keys (and tuple heads) of the required fields."""
TensorDescriptor_OPTIONAL_LITERAL_BYTES: dict[str, int] = {'param_id': 9}
"""The same for each optional field, when present."""
METADATA_FIRST_KEY = b'gtensors'
"""The CBOR text of the metadata's first key, which Burn writes first."""


def scan_Metadata(buf: bytes) -> Metadata:
    """Decode metadata whose 'tensors' map is exactly as Burn writes it; else raise Fallback."""
    fields = buf[0] - 0xA0
    if not 1 <= fields <= 3 or not buf.startswith(b'gtensors', 1):
        raise Fallback
    count, pos = map_header(buf, 9)
    entries = {}
    match = TensorDescriptor_RE.match
    for _ in range(count):
        text_head = buf[pos]  # the name: a definite text string
        if 0x60 <= text_head < 0x78:
            name_end = pos + 1 + text_head - 0x60
            name = buf[pos + 1 : name_end]
        elif 0x78 <= text_head <= 0x7B:
            width = 1 << (text_head - 0x78)
            name_end = pos + 1 + width + int.from_bytes(buf[pos + 1 : pos + 1 + width], 'big')
            name = buf[pos + 1 + width : name_end]
        else:
            raise Fallback
        if name_end > len(buf):
            raise Fallback  # the name (or its length) runs past the end: the exact decoder says how
        m = match(buf, name_end)
        if m is None:
            raise Fallback
        head, v_dtype, v_shape_head, v_shape, v_data_offsets_0, v_data_offsets_1, v_param_id = m.groups()
        if head[0] - 0xA0 != 3 + (v_param_id is not None):
            raise Fallback  # the struct's entry count disagrees with the fields present
        values = (DType_SCAN[v_dtype], (tuple(v_shape) if len(v_shape_head) == 1 and len(v_shape) == v_shape_head[0] - 0x80 and max(v_shape, default=0) < 0x18 else uints(v_shape_head, v_shape)), ((v_data_offsets_0[0] if len(v_data_offsets_0) == 1 else int.from_bytes(v_data_offsets_0[1:], 'big')), (v_data_offsets_1[0] if len(v_data_offsets_1) == 1 else int.from_bytes(v_data_offsets_1[1:], 'big')), ), (None if v_param_id is None else (v_param_id[0] if len(v_param_id) == 1 else int.from_bytes(v_param_id[1:], 'big'))),)
        if values[1] is None:
            raise Fallback
        entries[name.decode()] = tuple.__new__(TensorDescriptor, values)
        pos = m.end()
    rest = fast_loads(bytes([0xA0 + fields - 1]) + buf[pos:])
    if type(rest) is not dict or 'tensors' in rest:
        raise Fallback
    others = fast_Metadata({'tensors': {}, **rest})
    return others._replace(tensors=entries)


_DType_BYTES = {v: b for b, v in DType_SCAN.items()}
_DType_UNIT_BYTES = {v.variant: b for v, b in _DType_BYTES.items() if v.value is None}


def TensorDescriptor_layout(dtype: DType, shape: tuple[int, ...], param_id_present: bool) -> bytes:
    """A 'tensors' entry from its struct head to the key of 'data_offsets': the bytes every
    TensorDescriptor of one dtype/shape shares, which a writer encodes once per kind."""
    return byte_string[0xa3 + param_id_present] + b'edtype' + (_DType_UNIT_BYTES[dtype.variant] if dtype.value is None else (_DType_BYTES.get(dtype) or encode(encode_DType(dtype)))) + b'eshape' + uint_array(shape) + b'ldata_offsets'


def encode_TensorDescriptor_entry_with(name: str, layout: bytes, data_offsets: tuple[int, int], param_id: int | None) -> bytes:
    """One entry of the 'tensors' map from its name, its ``TensorDescriptor_layout`` and the rest."""
    return b''.join((text_bytes(name), layout, b'\x82' + uint_bytes(data_offsets[0]) + uint_bytes(data_offsets[1]), (b'' if param_id is None else b'hparam_id' + uint_bytes(param_id))))


def encode_TensorDescriptor_entry(name: str, dtype: DType, shape: tuple[int, ...], data_offsets: tuple[int, int], param_id: int | None) -> bytes:
    """One entry of the 'tensors' map (name and TensorDescriptor) exactly as ciborium writes it."""
    layout = TensorDescriptor_layout(dtype, shape, param_id is not None)
    return encode_TensorDescriptor_entry_with(name, layout, data_offsets, param_id)


def encode_Metadata_entries(entries: dict[str, bytes], metadata: dict[str, str], scalars: dict[str, Scalar]) -> bytes:
    """The metadata from pre-encoded 'tensors' entries (name → ``encode_TensorDescriptor_entry``)."""
    return encode_Metadata_map(len(entries), b''.join([entries[name] for name in sorted(entries)]), metadata, scalars)


def encode_Metadata_map(count: int, entries: bytes, metadata: dict[str, str], scalars: dict[str, Scalar]) -> bytes:
    """The metadata from its 'tensors' map's ``count`` entries, already encoded and in name order."""
    rest = encode_Metadata(Metadata({}, metadata, scalars))
    del rest['tensors']
    return b''.join((bytes([0xA1 + len(rest)]), b'gtensors', map_head(count), entries, encode(rest)[1:]))


def encode_Metadata_bytes(metadata: Metadata) -> bytes:
    """``encode(encode_Metadata(metadata))``, with the tensors map written directly."""
    entries = {name: encode_TensorDescriptor_entry(name, *v) for name, v in metadata.tensors.items()}
    return encode_Metadata_entries(entries, metadata.metadata, metadata.scalars)


_ENCODERS: dict[type, Callable[[Any], Any]] = {Metadata: encode_Metadata, TensorDescriptor: encode_TensorDescriptor, QuantScheme: encode_QuantScheme, BlockScale: encode_BlockScale, BlockSize: encode_BlockSize, DType: encode_DType, QuantStore: encode_QuantStore, Scalar: encode_Scalar}


def _plain(tree: Any) -> Any:
    if type(tree) is dict:
        return {k: _plain(v) for k, v in tree.items()}
    if type(tree) is list:
        return [_plain(v) for v in tree]
    if type(tree) is ShortestFloat:
        return bits_to_float(tree.bits)
    return tree


def serde(value: Any) -> Any:
    """Burn's serde form of a metadata value, as plain data."""
    return _plain(_ENCODERS[type(value)](value))


def _has_nan(data: Any) -> bool:
    if type(data) is dict:
        return any(_has_nan(v) for v in data.values())
    if type(data) in (list, tuple):
        return any(_has_nan(v) for v in data)
    return type(data) is float and data != data


def _tree(data: Any) -> Any:
    """Plain data as an encoder tree: floats keep their exact bits (NaN payloads included)."""
    if type(data) is dict:
        return {k: _tree(v) for k, v in data.items()}
    if type(data) in (list, tuple):
        return [_tree(v) for v in data]
    if type(data) is float:
        return ShortestFloat(float_to_bits(data))
    return data


def from_serde_Metadata(data: Any) -> Metadata:
    try:
        return fast_Metadata(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of Metadata: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_Metadata(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of Metadata: {data!r}") from None


def from_serde_TensorDescriptor(data: Any) -> TensorDescriptor:
    try:
        return fast_TensorDescriptor(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of TensorDescriptor: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_TensorDescriptor(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of TensorDescriptor: {data!r}") from None


def from_serde_QuantScheme(data: Any) -> QuantScheme:
    try:
        return fast_QuantScheme(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of QuantScheme: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_QuantScheme(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of QuantScheme: {data!r}") from None


def from_serde_BlockScale(data: Any) -> BlockScale:
    try:
        return fast_BlockScale(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of BlockScale: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_BlockScale(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of BlockScale: {data!r}") from None


def from_serde_BlockSize(data: Any) -> BlockSize:
    try:
        return fast_BlockSize(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of BlockSize: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_BlockSize(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of BlockSize: {data!r}") from None


def from_serde_DType(data: Any) -> DType:
    try:
        return fast_DType(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of DType: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_DType(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of DType: {data!r}") from None


def from_serde_QuantStore(data: Any) -> QuantStore:
    try:
        return fast_QuantStore(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of QuantStore: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_QuantStore(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of QuantStore: {data!r}") from None


def from_serde_Scalar(data: Any) -> Scalar:
    try:
        return fast_Scalar(data)
    except Exception:
        if not _has_nan(data):
            raise ValueError(f"not Burn's serde form of Scalar: {data!r}") from None
    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder
        return exact_Scalar(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))
    except Exception:
        raise ValueError(f"not Burn's serde form of Scalar: {data!r}") from None
