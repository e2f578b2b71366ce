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
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return SERDE["to_serde"](self)

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
        return SERDE["from_serde_Metadata"](data)


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
        return SERDE["to_serde"](self)

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
        return SERDE["from_serde_TensorDescriptor"](data)


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
        return SERDE["to_serde"](self)

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
        return SERDE["from_serde_QuantScheme"](data)


class BlockScale(NamedTuple):
    """Per-block scales: the block shape and the scale dtype."""

    size: BlockSize
    dtype: ScaleDtype

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return SERDE["to_serde"](self)

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
        return SERDE["from_serde_BlockScale"](data)


class BlockSize(NamedTuple):
    """Block shape: `len` dims kept in `storage`, unused slots filled with 1."""

    storage: tuple[int, int, int, int, int]
    len: int

    def to_serde(self) -> Any:
        """Burn's serde form of this value, as plain data (what serde_json would write).

        Returns:
            Dicts, lists, strings and numbers, ready for ``json.dumps``.
        """
        return SERDE["to_serde"](self)

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
        return SERDE["from_serde_BlockSize"](data)


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
        return SERDE["to_serde"](self)

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
        return SERDE["to_serde"](self)

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
        return SERDE["to_serde"](self)

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