"""QFloat tensors: Burn's quantized byte layout, dequantizing it and quantizing as Burn's CPU backends do.

A QFloat tensor's bytes are ``VALUES ‖ SCALES ‖ [GLOBAL]`` (../shared/spec/quant.md §2): the
quantized integers (one ``i8`` per value for ``Native``, LSB-first fields of little-endian ``u32``
words for ``PackedU32(d)``), then one scale per block of the rectangular block grid (or one per
tensor) in the scale dtype, then, for a two-level scheme, the per-tensor scale. Dequantizing is
``fl32(S·q)`` with ``S = s`` (one level) or ``S = fl32(g·s_b)`` (two levels), bit for bit as Burn's
NdArray and Flex backends compute it. ``quantize`` reproduces the bytes NdArray (division, round
half away from zero) or Flex (reciprocal multiply) store, scales rounded up onto the scale dtype's
grid first (quant.md §3.2).

What cannot be dequantized from a file alone — Lookup mode (the table is not in the bytes), UE8M0
scales (Burn has no codec for them), fp8/fp4 values (what Burn's writers store for them is not
determinable at the pinned revision, quant.md §3.5) — raises ``UnsupportedQuantization``;
bytes that do not fit the scheme raise ``InvalidQuantizedData`` naming both lengths.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..codec._generated.metadata import (
    QUANT_VALUE_INFO,
    QUANTIZABLE_VALUES,
    SCALE_DTYPE_INFO,
    BlockScale,
    BlockSize,
    DType,
    QuantMode,
    QuantScheme,
    QuantStore,
    QuantValue,
    ScaleDtype,
)
# describe and dtype_label name schemes and dtypes for people: defined beside the other dtype names
# (listing a pack needs them, not this codec) and exported here too, where QFloat users look
from .dtypes import ArrayData, ResolvedTable, describe, dtype_label, is_float_array, numpy_dtype_named, view_bytes_as
from ..codec._kernels import load_kernel, use_kernel
from ..errors import InvalidQuantizedData, OptionError, QuantizationError, UnsupportedQuantization
from .tensor import BytesLike, Tensor

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from .sidefile import JSON

_cquant: Any = load_kernel("burnpack.core._cquant")  # Any: its functions are untyped C
"""The optional compiled kernel; None when not built: numpy unpacks and scales."""

KERNEL = "numpy" if _cquant is None else "compiled"
"""Which path ``dequantize`` takes by default for the schemes the kernel covers (``kernel_covers``):
``"compiled"`` (``_cquant.c``) or ``"numpy"``."""

__all__ = [
    "KERNEL",
    "QuantizedTensor",
    "decode",
    "dequantize",
    "describe",
    "dtype_label",
    "kernel_covers",
    "parse_scheme",
    "quantize",
    "quantized_data_len",
    "round_up_scale",
]

# -- the value and scale types (cubecl quant/scheme.rs:357-483; facts from the schema) -----------

VALUE_BITS: dict[QuantValue, int] = {value: info.bits for value, info in QUANT_VALUE_INFO.items()}
"""``QuantValue::size_bits``."""

VALUE_RANGE: dict[QuantValue, tuple[int, int]] = {v: info.range for v, info in QUANT_VALUE_INFO.items() if info.range is not None}
"""``QuantValue::range`` of the integer values: what quantizing clamps to."""

SCALE_SIZE: dict[ScaleDtype, int] = {dtype: info.size for dtype, info in SCALE_DTYPE_INFO.items()}
"""Bytes per stored scale (burn-std ``scale_size``)."""

MAX_REPRESENTABLE: dict[ScaleDtype, np.float32] = {dtype: np.float32(info.max) for dtype, info in SCALE_DTYPE_INFO.items()}
"""``ScaleDtype::max_representable``."""

# (bit step on the f32 pattern, (smallest normal, subnormal spacing) or None): ``ScaleDtype::f32_grid``
_GRID: dict[ScaleDtype, tuple[int, tuple[np.float32, np.float32] | None]] = {
    dtype: (info.grid[0], None if info.grid[1] is None else (np.float32(info.grid[1][0]), np.float32(info.grid[1][1])))
    for dtype, info in SCALE_DTYPE_INFO.items()
    if info.grid is not None
}
_SCALE_NUMPY: Mapping[ScaleDtype, np.dtype] = ResolvedTable(
    {dtype: info.numpy for dtype, info in SCALE_DTYPE_INFO.items() if info.numpy is not None}, numpy_dtype_named
)
"""The numpy type each scale dtype Burn has a codec for is stored as (ml_dtypes' imported when met)."""

_F32_MIN_POSITIVE = np.float32(np.finfo(np.float32).tiny)
_INTEGER_VALUES = "/".join(v.name for v in QUANTIZABLE_VALUES)


# -- the layout ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """Where each region of a QFloat tensor's bytes lies, for one scheme and shape."""

    value_bytes: int
    block: tuple[int, ...] | None  # block extent per tensor axis, or None for one scale per tensor
    grid: tuple[int, ...]  # the scale grid (``(1,)`` per tensor)
    scale_dtype: ScaleDtype
    global_dtype: ScaleDtype | None

    @property
    def scale_bytes(self) -> int:
        return math.prod(self.grid) * SCALE_SIZE[self.scale_dtype]

    @property
    def global_bytes(self) -> int:
        return 0 if self.global_dtype is None else SCALE_SIZE[self.global_dtype]

    @property
    def total(self) -> int:
        return self.value_bytes + self.scale_bytes + self.global_bytes


def _scale_dtype(scheme: QuantScheme) -> ScaleDtype:
    """The dtype of the innermost stored scales (``QuantScheme::scale_dtype``)."""
    if scheme.block is not None:
        return scheme.block.dtype
    return scheme.tensor if scheme.tensor is not None else ScaleDtype.F32


def _global_dtype(scheme: QuantScheme) -> ScaleDtype | None:
    """The per-tensor scale block scales are relative to: set only when both levels are."""
    return scheme.tensor if scheme.block is not None else None


def _block_dims(size: BlockSize, rank: int) -> tuple[int, ...]:
    """``BlockSize::to_dim_vec``: the stored dims right-aligned to ``rank``, missing ones 1.

    Like Burn, a block with more dims than the tensor keeps its *first* ``rank`` dims.
    """
    storage, length = tuple(size.storage), size.len
    if length > len(storage):
        raise InvalidQuantizedData(f"block size len {length} exceeds its {len(storage)} storage slots")
    dims = storage[: min(rank, length)]
    if any(d == 0 for d in dims):
        raise InvalidQuantizedData(f"block size {list(storage[:length])} has a zero extent")
    return (1,) * (rank - len(dims)) + tuple(dims)


def _grid(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    """The block grid: blocks per axis, the last one of each axis partial."""
    return tuple(-(-dim // b) for dim, b in zip(shape, block))


def _value_bytes(scheme: QuantScheme, shape: tuple[int, ...]) -> int:
    """``storage_elements · ceil(size_bits_stored / 8)``: packed stores pad each packed line."""
    bits = VALUE_BITS[scheme.value]
    store = scheme.store
    if store == QuantStore.Native:
        return math.prod(shape) * ((bits + 7) // 8)
    if store.is_packed_native:
        stored_bits = bits * QUANT_VALUE_INFO[scheme.value].packed_native
        per_element, stored_bytes = stored_bits // bits, (stored_bits + 7) // 8
    else:
        per_element, stored_bytes = 32 // bits, 4
    if per_element > 1 and shape:
        axis = len(shape) - 1 - store.value
        if not 0 <= axis < len(shape):
            raise InvalidQuantizedData(f"{store!r} packs along dim {store.value} from the innermost, which a rank-{len(shape)} tensor lacks")
        storage = list(shape)
        storage[axis] = -(-storage[axis] // per_element)
        return math.prod(storage) * stored_bytes
    return -(-math.prod(shape) // per_element) * stored_bytes


def _layout(scheme: QuantScheme, shape: tuple[int, ...]) -> _Layout:
    block = None if scheme.block is None else _block_dims(scheme.block.size, len(shape))
    grid = (1,) if block is None else _grid(shape, block)
    return _Layout(_value_bytes(scheme, shape), block, grid, _scale_dtype(scheme), _global_dtype(scheme))


def quantized_data_len(scheme: QuantScheme, shape: tuple[int, ...] | list[int]) -> int:
    """Bytes a tensor of ``shape`` takes under ``scheme`` (burn-std ``quantized_data_len``).

    Args:
        scheme: The quantization scheme.
        shape: The tensor's logical shape.

    Returns:
        The payload's length in bytes.
    """
    return _layout(scheme, tuple(shape)).total


def parse_scheme(
    value: str | QuantValue,
    *,
    block: int | tuple[int, ...] | list[int] | None = None,
    scale_dtype: str | ScaleDtype = ScaleDtype.F32,
    global_scale: bool = False,
    store: QuantStore | None = None,
) -> QuantScheme:
    """A ``QuantScheme`` from short names, built as Burn's ``per_tensor`` / ``per_block`` builders do.

    ``parse_scheme("q8s", block=32, scale_dtype="f16")`` is ``Q8S``, Native, one F16 scale per
    32 values along the last axis.

    Args:
        value: The value type, by name (``"q8s"``, ``"q4f"``, ``"e4m3"``, …) or as a ``QuantValue``.
        block: The block size (an int along the last axis, or one extent per axis); None is one
            scale per tensor.
        scale_dtype: The scales' dtype, by name or as a ``ScaleDtype``.
        global_scale: Add Burn's F32 per-tensor level over the block scales (a two-level scheme).
        store: The store; None takes Burn's builder default for the value type.

    Returns:
        The scheme.

    Raises:
        QuantizationError: A name is unknown or the combination is one Burn cannot build.
    """
    try:
        value = value if isinstance(value, QuantValue) else QuantValue[str(value).upper()]
        dtype = scale_dtype if isinstance(scale_dtype, ScaleDtype) else ScaleDtype[str(scale_dtype).upper()]
    except KeyError as exc:
        raise QuantizationError(f"unknown quantization name {exc.args[0]!r}") from None
    store = QuantStore.Native if store is None else store
    if block is None:
        if global_scale:
            raise QuantizationError("a per-tensor scale over block scales needs a block size")
        return QuantScheme(value, store, QuantMode.Symmetric, dtype, None)
    dims = [block] if isinstance(block, int) else list(block)
    if not dims or not all(isinstance(d, int) and 1 <= d <= 255 for d in dims):
        raise QuantizationError(f"block size {block!r}: each extent must be an int in 1..=255")
    while len(dims) > 1 and dims[0] == 1:  # BlockSize::new drops leading unit dims
        dims = dims[1:]
    if len(dims) > 5:
        raise QuantizationError(f"block size {block!r} has more than 5 dims")
    size = BlockSize(tuple(dims + [1] * (5 - len(dims))), len(dims))  # type: ignore[arg-type]
    return QuantScheme(value, store, QuantMode.Symmetric, ScaleDtype.F32 if global_scale else None, BlockScale(size, dtype))


# -- scales --------------------------------------------------------------------------------------


def round_up_scale(scales: ArrayData, dtype: ScaleDtype) -> np.ndarray:
    """``ScaleDtype::round_up``: each f32 scale moved up to the smallest ``dtype`` value not below it.

    Burn stores (and quantizes with) this rather than the nearest value, so the largest
    magnitude of a block never clips. F32 is the identity; NaN is kept.

    Args:
        scales: The f32 scales.
        dtype: The scale dtype to round onto.

    Returns:
        The rounded scales, as float32.

    Raises:
        UnsupportedQuantization: The scale dtype is UE8M0.
    """
    s = np.array(scales, dtype=np.float32)
    if dtype not in _GRID:
        raise UnsupportedQuantization(f"{dtype.name} scales: Burn has no rounding or codec for them (ScaleDtype::round_up answers None)")
    step, subnormals = _GRID[dtype]
    if step == 1 and subnormals is None:  # f32's own grid
        return s
    maxrep = MAX_REPRESENTABLE[dtype]
    bits = s.view(np.uint32).astype(np.uint64)
    out = ((bits + (step - 1)) & ~np.uint64(step - 1) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    if subnormals is not None:
        min_normal, spacing = subnormals
        low = s < min_normal
        out = np.where(low, np.ceil(s / spacing) * spacing, out)
    out = np.where(s >= maxrep, maxrep, out)
    return np.where(np.isnan(s), s, out).astype(np.float32)


def _decode_scales(buffer: Any, dtype: ScaleDtype) -> np.ndarray:
    """Stored scales → float32 (exact: every scale dtype is a subset of f32)."""
    if SCALE_DTYPE_INFO[dtype].numpy is None:
        raise UnsupportedQuantization(f"{dtype.name} scales: Burn has no decoder for them (decode_scales is unimplemented)")
    stored = _SCALE_NUMPY[dtype]
    return view_bytes_as(buffer, 0, -1, stored).astype(np.float32)


def _encode_scales(scales: np.ndarray, dtype: ScaleDtype) -> bytes:
    """float32 scales → stored bytes, converting to nearest as Burn's ``encode_scales`` does."""
    if SCALE_DTYPE_INFO[dtype].numpy is None:
        raise UnsupportedQuantization(f"{dtype.name} scales: Burn has no encoder for them (encode_scales is unimplemented)")
    stored = np.asarray(scales, np.float32).reshape(-1).astype(_SCALE_NUMPY[dtype])
    if stored.dtype.byteorder in "<|" or stored.itemsize == 1:
        return stored.tobytes()
    return stored.view(f"u{stored.itemsize}").astype(f"<u{stored.itemsize}", copy=False).tobytes()  # native-endian types


# -- values --------------------------------------------------------------------------------------


@functools.cache
def _field_table(bits: int, per_row: int) -> np.ndarray:
    """``per_row`` sign-extended fields per row, row ``i`` unpacking the bit pattern ``i`` LSB first,
    as one unsigned item per row (so a gather copies single items)."""
    index = np.arange(1 << (bits * per_row), dtype=np.uint32)[:, None]
    fields = (index >> (np.arange(per_row, dtype=np.uint32) * bits)) & ((1 << bits) - 1)
    sign = 1 << (bits - 1)
    table = ((fields ^ sign).astype(np.int32) - sign).astype(np.int8)
    return table.view(np.uint32 if per_row == 4 else np.uint16).reshape(-1)


def _fields(raw: np.ndarray, bits: int) -> np.ndarray:
    """Every ``bits``-wide field of a byte stream, LSB first, sign-extended to int8.

    The sign extension is Burn's ``((raw << (8 - bits)) as i8) >> (8 - bits)``, looked up in a
    table of every pattern: four fields per u16 (Q4) or per byte (Q2).
    """
    if bits == 8:
        return raw.view(np.int8)
    if bits == 4 and raw.size % 2 == 0:
        return np.take(_field_table(4, 4), raw.view("<u2")).view(np.int8)
    return np.take(_field_table(bits, 8 // bits), raw).view(np.int8)


def _unpack_words(buffer: Any, bits: int, shape: tuple[int, ...], packed_dim: int) -> np.ndarray:
    """``PackedU32(packed_dim)`` words (LE) → int8 values in the logical shape."""
    raw = np.frombuffer(buffer, np.uint8)
    per_word = 32 // bits
    if not shape:
        return _fields(raw[:4], bits)[:1].reshape(())
    axis = len(shape) - 1 - packed_dim
    storage = list(shape)
    storage[axis] = -(-shape[axis] // per_word)
    fields = _fields(raw, bits).reshape(*storage, per_word)
    if axis != len(shape) - 1:
        fields = np.moveaxis(fields, -1, axis + 1)
    padded = shape[:axis] + (storage[axis] * per_word,) + shape[axis + 1 :]
    fields = fields.reshape(padded)
    if padded[axis] != shape[axis]:
        fields = fields[(slice(None),) * axis + (slice(0, shape[axis]),)]
    return np.ascontiguousarray(fields)


def _pack_words(values: np.ndarray, bits: int, packed_dim: int) -> bytes:
    """int8 values → ``PackedU32(packed_dim)`` words (LE, LSB first, zero-padded per line)."""
    shape = values.shape
    per_word = 32 // bits
    fields = (values.astype(np.uint8) & np.uint8((1 << bits) - 1)).astype(np.uint32)
    if not shape:
        fields = fields.reshape(1, 1)
        axis = 0
    else:
        axis = len(shape) - 1 - packed_dim
    pad = (-fields.shape[axis]) % per_word
    if pad:
        widths = [(0, 0)] * fields.ndim
        widths[axis] = (0, pad)
        fields = np.pad(fields, widths)
    split = fields.shape[:axis] + (fields.shape[axis] // per_word, per_word) + fields.shape[axis + 1 :]
    fields = np.moveaxis(fields.reshape(split), axis + 1, -1)
    words = np.bitwise_or.reduce(fields << (np.arange(per_word, dtype=np.uint32) * bits), axis=-1)
    return np.ascontiguousarray(words, dtype="<u4").tobytes()


# -- the structured form -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class QuantizedTensor:
    """A QFloat tensor in parts: integer ``values`` in the logical shape, ``scales`` over the block
    grid (shape ``(1,)`` per tensor), the two-level ``global_scale``, and the ``scheme``.

    ``view.quantized()`` returns one; ``burnpack.quantize`` makes one. ``save({"w": q}, path)``
    and ``Writer`` accept it (``to_bytes()`` is the tensor's QFloat payload).

    Args:
        scheme: The quantization scheme.
        values: The integer values, in the tensor's logical shape.
        scales: The scales, one per block of the block grid.
        global_scale: The F32 per-tensor scale of a two-level scheme, else None.
    """

    scheme: QuantScheme
    values: np.ndarray
    scales: np.ndarray
    global_scale: np.float32 | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's logical shape (that of ``values``)."""
        return tuple(self.values.shape)

    @property
    def dtype(self) -> DType:
        """The tensor's Burn dtype: ``QFloat`` of its scheme."""
        return DType.QFloat(self.scheme)

    def effective_scales(self) -> np.ndarray:
        """The scale each block's values are multiplied by: ``fl32(g·s_b)``, or ``s_b``.

        Returns:
            The float32 scales over the block grid.
        """
        if self.global_scale is None:
            return self.scales
        with np.errstate(over="ignore", invalid="ignore"):  # fl32(g·s_b) may overflow to infinity, as in Burn
            return np.float32(self.global_scale) * self.scales

    def dequantize(self) -> np.ndarray:
        """The float32 values, ``fl32(S·q)`` per element: bit-exact with Burn's CPU backends (int8
        values in C order through the compiled kernel where it covers the scheme, numpy otherwise).

        Returns:
            The float32 array, of the tensor's shape.

        Raises:
            InvalidQuantizedData: The parts do not fit the scheme.
        """
        try:
            out = np.empty(self.values.shape, np.float32)
        except ValueError as exc:  # a zero-element shape whose dims overflow numpy's size
            raise InvalidQuantizedData(f"shape {list(self.shape)}: {exc}") from None
        block = None if self.scheme.block is None else _block_dims(self.scheme.block.size, out.ndim)
        scales = self.effective_scales()
        if block is None:
            scales = np.asarray(scales).reshape(-1)[:1]  # one scale per tensor: the first
        elif np.size(scales) != math.prod(grid := _grid(self.shape, block)):
            raise InvalidQuantizedData(f"{np.size(scales)} scales for the {list(grid)} blocks of shape {list(self.shape)}")
        with np.errstate(over="ignore", invalid="ignore"):  # fl32(S·q) of an infinite or NaN scale, as the kernel
            _apply_per_block(self.values, scales, block, np.multiply, out)
        return out

    def to_tensor(self, name: str, *, param_id: int | None = None) -> Tensor:
        """This QFloat tensor as a ``burnpack.Tensor``: its payload in its logical shape.

        Args:
            name: The tensor's name.
            param_id: Burn's parameter id, if any.

        Returns:
            The tensor, ready to write.
        """
        return Tensor(name, self.dtype, self.shape, self.tobytes(), param_id=param_id)

    def tobytes(self) -> bytes:
        """The QFloat payload: values ‖ scales ‖ [global], as Burn's ``QuantizedBytes`` lays it out.

        Returns:
            The payload's bytes.
        """
        scheme, values = self.scheme, self.values
        bits = VALUE_BITS[scheme.value]
        if scheme.store.is_packed_u32:
            out = _pack_words(values, bits, scheme.store.value)
        else:
            out = values.astype(np.int8).tobytes()
        scales = self.scales if scheme.block is not None else self.scales.reshape(-1)[:1]
        out += _encode_scales(scales, _scale_dtype(scheme))
        gdtype = _global_dtype(scheme)
        if gdtype is not None:
            out += _encode_scales(np.array([self.global_scale], np.float32), gdtype)
        return out

    def __repr__(self) -> str:
        g = "" if self.global_scale is None else f", global_scale={float(self.global_scale)!r}"
        return f"QuantizedTensor({describe(self.scheme)}, shape={list(self.shape)}, scales={list(self.scales.shape)}{g})"


def _apply_per_block(x: np.ndarray, scales: np.ndarray, block: tuple[int, ...] | None, op: Any, out: np.ndarray) -> None:
    """``out = op(x, scale of its block)`` (float32) for rectangular blocks, in one pass.

    ``x`` may be int8: the ufunc converts each value exactly on the fly.
    """
    if block is None:
        op(x, np.float32(scales.reshape(-1)[0]), out=out)
        return
    shape = x.shape
    grid = _grid(shape, block)
    scales = scales.reshape(grid)
    if all(d % b == 0 for d, b in zip(shape, block)):
        split = tuple(v for g, b in zip(grid, block) for v in (g, b))
        spread = tuple(v for g in grid for v in (g, 1))
        op(x.reshape(split), scales.reshape(spread), out=out.reshape(split))
        return
    full = scales
    for axis, b in enumerate(block):
        if b > 1:
            full = np.repeat(full, b, axis=axis)
    op(x, full[tuple(slice(0, d) for d in shape)], out=out)


# -- reading -------------------------------------------------------------------------------------


def check_decodable(scheme: QuantScheme) -> None:
    """Raise ``UnsupportedQuantization`` for a scheme whose values the bytes alone cannot give."""
    if scheme.mode is QuantMode.Lookup:
        raise UnsupportedQuantization(
            "Lookup mode: each field indexes a 2^bits-entry table that travels beside the tensor, not in its "
            "bytes (Burn refuses it too: lookup quantization does not travel as a QFloat tensor)"
        )
    if QUANT_VALUE_INFO[scheme.value].kind == "minifloat":
        raise UnsupportedQuantization(
            f"{scheme.value.name} values: what Burn's writers store for fp8/fp4 values at its pinned revision is "
            "not determinable (cubek rounds to integers before packing, Flex saturates to i8; quant.md §3.5), "
            "so these bytes cannot be dequantized reliably"
        )
    for scale in (_scale_dtype(scheme), _global_dtype(scheme)):
        if scale is not None and SCALE_DTYPE_INFO[scale].numpy is None:
            raise UnsupportedQuantization(f"{scale.name} scales: Burn has no codec for them (encode/decode are unimplemented)")
    if scheme.store.is_packed_native:
        raise UnsupportedQuantization(
            f"{scheme.value.name} in a PackedNative store: that store is defined only for E2M1 and no Burn backend "
            "reads or writes it for integer values"
        )


def decode(data: BytesLike | np.ndarray, scheme: QuantScheme, shape: tuple[int, ...] | list[int], *, name: str | None = None) -> QuantizedTensor:
    """Split a QFloat payload into its parts, checking its length against the scheme and shape.

    Native values are a zero-copy view of ``data``; packed fields are unpacked to int8.

    Args:
        data: The payload's bytes (any bytes-like object).
        scheme: The quantization scheme.
        shape: The tensor's logical shape.
        name: The tensor's name, for errors.

    Returns:
        The tensor in parts.

    Raises:
        InvalidQuantizedData: The payload's length does not fit the scheme and shape.
    """
    shape = tuple(int(d) for d in shape)
    layout, region, scales, global_scale = _split(data, scheme, shape, name)
    try:
        values = _values(region, scheme, shape)
    except ValueError as exc:  # numpy refusing a shape no memory could hold (only with zero elements)
        raise InvalidQuantizedData(f"shape {list(shape)}: {exc}", where=_where(name)) from None
    return QuantizedTensor(scheme, values, scales, global_scale)


def dequantize(
    data: BytesLike | np.ndarray, scheme: QuantScheme, shape: tuple[int, ...] | list[int], *, name: str | None = None, compiled: bool | None = None
) -> np.ndarray:
    """A QFloat payload's float32 values, bit-identical with ``decode(...).dequantize()``.

    On the numpy path, packed sub-byte values of a large tensor are unpacked and scaled a band
    of rows at a time, so their int8 form stays in cache.

    Args:
        data: The payload's bytes (any bytes-like object).
        scheme: The quantization scheme.
        shape: The tensor's logical shape.
        name: The tensor's name, for errors.
        compiled: True runs the compiled kernel (an error when it is not built or does not cover
            the scheme, see ``kernel_covers``), False numpy, None the kernel where it covers the
            scheme.

    Returns:
        The float32 array, of ``shape``.

    Raises:
        InvalidQuantizedData: The payload's length does not fit the scheme and shape.
        OptionError: ``compiled=True`` and the kernel is not built or does not cover the scheme.
    """
    shape = tuple(int(d) for d in shape)
    kernel = use_kernel(_cquant, "burnpack.core._cquant", compiled)
    layout, region, scales, global_scale = _split(data, scheme, shape, name)
    parts = QuantizedTensor(scheme, np.empty(0, np.int8), scales, global_scale)
    plan = _kernel_plan(scheme, shape, layout.block) if kernel else None
    if compiled and plan is None:
        raise OptionError(f"compiled=True: the compiled dequantize kernel does not cover {describe(scheme)} on shape {list(shape)}")
    if plan is not None:
        return _kernel_into(region, plan, parts.effective_scales(), np.empty(shape, np.float32))
    rows = _band_rows(scheme, shape, layout)
    if rows is None:
        try:
            return QuantizedTensor(scheme, _values(region, scheme, shape), scales, global_scale).dequantize()
        except ValueError as exc:
            raise InvalidQuantizedData(f"shape {list(shape)}: {exc}", where=_where(name)) from None
    effective = parts.effective_scales()
    out = np.empty(shape, np.float32)
    row_bytes = layout.value_bytes // shape[0]
    block0 = 1 if layout.block is None else layout.block[0]
    for start in range(0, shape[0], rows):
        stop = min(start + rows, shape[0])
        band = _values(region[start * row_bytes : stop * row_bytes], scheme, (stop - start,) + shape[1:])
        band_scales = effective if layout.block is None else effective[start // block0 : -(-stop // block0)]
        with np.errstate(over="ignore", invalid="ignore"):
            _apply_per_block(band, band_scales, layout.block, np.multiply, out[start:stop])
    return out


def kernel_covers(scheme: QuantScheme, shape: tuple[int, ...] | list[int]) -> bool:
    """Whether the compiled kernel dequantizes ``scheme`` on ``shape`` (when it is built).

    It covers integer values in a Native or ``PackedU32(0)`` store, one scale per tensor or per
    block of extent 1 on every axis but the last two, a non-empty shape.

    Args:
        scheme: The quantization scheme.
        shape: The tensor's logical shape.

    Returns:
        True when the kernel covers them.
    """
    shape = tuple(int(d) for d in shape)
    try:
        check_decodable(scheme)
        block = None if scheme.block is None else _block_dims(scheme.block.size, len(shape))
    except QuantizationError:
        return False
    return _kernel_plan(scheme, shape, block) is not None


def _kernel_plan(scheme: QuantScheme, shape: tuple[int, ...], block: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The kernel's ``(bits, outer, rows, cols, block_rows, block_cols)`` for a decodable scheme,
    or None where numpy dequantizes."""
    bits = VALUE_BITS[scheme.value]
    if scheme.store != QuantStore.PackedU32(0) or bits not in (2, 4) or 0 in shape:
        return None
    rank = len(shape)
    cols = shape[-1] if rank else 1
    if block is None:
        rows = math.prod(shape[:-1])
        return bits, 1, rows, cols, rows, cols
    if any(b != 1 for b in block[:-2]):
        return None
    rows, block_rows = (shape[-2], block[-2]) if rank >= 2 else (1, 1)
    block_cols = block[-1] if rank else 1
    return bits, math.prod(shape[:-2]), rows, cols, block_rows, block_cols


def _kernel_into(values: Any, plan: tuple[int, ...], scales: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out`` filled by the kernel with ``plan``'s values times their block's scale."""
    try:
        _cquant.dequantize(values, *plan, np.ascontiguousarray(scales, np.float32), out)
    except ValueError as exc:  # parts that do not fit together (a QuantizedTensor built by hand)
        raise InvalidQuantizedData(f"{exc.args[0]} for shape {list(out.shape)}") from None
    return out


_BAND = 1 << 18
"""Values per band when dequantizing packed fields (their int8 form: 256 KiB, cache-sized)."""


def _band_rows(scheme: QuantScheme, shape: tuple[int, ...], layout: _Layout) -> int | None:
    """Rows of axis 0 per band (a multiple of the block's extent there), or None for one pass."""
    if scheme.store != QuantStore.PackedU32(0) or VALUE_BITS[scheme.value] == 8 or len(shape) < 2:
        return None
    numel = math.prod(shape)
    if numel <= 2 * _BAND:
        return None
    block0 = 1 if layout.block is None else layout.block[0]
    rows = max(1, _BAND // (numel // shape[0]) // block0) * block0
    return rows if rows < shape[0] else None


def _where(name: str | None) -> str | None:
    return f"tensor {name!r}" if name is not None else None


def _split(data: Any, scheme: QuantScheme, shape: tuple[int, ...], name: str | None) -> tuple[_Layout, memoryview, np.ndarray, np.float32 | None]:
    """The layout, the values region, the scales (block grid) and the global scale, after checking
    that the scheme is decodable and the length is the one it needs."""
    where = _where(name)
    try:
        check_decodable(scheme)
        layout = _layout(scheme, shape)
    except QuantizationError as exc:
        raise type(exc)(exc.payload, where=where) from None
    buffer = memoryview(data).cast("B")
    if buffer.nbytes != layout.total:
        raise InvalidQuantizedData(
            f"holds {buffer.nbytes} bytes but {describe(scheme)} on shape {list(shape)} needs {layout.total} "
            f"({layout.value_bytes} value + {layout.scale_bytes} scale + {layout.global_bytes} global bytes)",
            where=where,
        )
    scale_end = layout.value_bytes + layout.scale_bytes
    global_scale = None
    if layout.global_dtype is not None:
        global_scale = np.float32(_decode_scales(buffer[scale_end:], layout.global_dtype)[0])
    try:
        scales = _decode_scales(buffer[layout.value_bytes : scale_end], layout.scale_dtype).reshape(layout.grid)
    except ValueError as exc:
        raise InvalidQuantizedData(f"shape {list(shape)}: {exc}", where=where) from None
    return layout, buffer[: layout.value_bytes], scales, global_scale


def _values(region: memoryview, scheme: QuantScheme, shape: tuple[int, ...]) -> np.ndarray:
    """The int8 values in the logical shape (Native: a view of ``region``)."""
    if scheme.store.is_packed_u32:
        return _unpack_words(region, VALUE_BITS[scheme.value], shape, scheme.store.value)
    return np.frombuffer(region, np.int8).reshape(shape)


# -- legacy schemes (quant.md §5) ----------------------------------------------------------------

_LEGACY_RELEASES = "Burn 0.19 to 0.22.0-pre.2 (before commit a8f9b960f, 2026-08-19)"


def _release(raw: Mapping[str, Any]) -> str:
    return "Burn 0.19" if raw.get("store") == "U32" else _LEGACY_RELEASES


def legacy_refusal(raw: Mapping[str, JSON]) -> str:
    """Why an old-shape scheme is not dequantized as current Burn would read it."""
    return (
        f"its QFloat scheme has the shape written by {_release(raw)} (keys {sorted(raw)}); current Burn reads it as a "
        "default per-tensor scheme and misreads the bytes; open the file with legacy_ok=True to dequantize it as "
        "its writer meant"
    )


def decode_legacy(data: BytesLike | np.ndarray, raw: Mapping[str, JSON], scheme: QuantScheme, shape: tuple[int, ...], *, name: str | None = None) -> QuantizedTensor:
    """Decode a tensor written before the target layout, as its writer meant it (quant.md §5).

    Those writers packed ``U32`` values as one flat word stream, and stored scales as f32 (CPU up
    to 0.21) or at the ``param`` dtype (GPU, and CPU from 0.22.0-pre.1): the byte length tells
    which. CPU blocks were flat chunks and GPU blocks rectangles; a block shape on which the two
    differ is refused, as is the 0.22.0-pre.2 two-level level (never implemented on CPU).
    """
    shape = tuple(int(d) for d in shape)
    where = f"tensor {name!r}" if name is not None else None
    level = raw.get("level", "Tensor")
    if isinstance(level, Mapping) and "BlockTensor" in level:
        raise UnsupportedQuantization(
            "two-level scheme from Burn 0.22.0-pre.2: its CPU backends left it unimplemented and no layout for "
            "it is specified, so it cannot be dequantized as its writer meant", where=where)  # fmt: skip
    try:
        check_decodable(scheme)
        numel, bits = math.prod(shape), VALUE_BITS[scheme.value]
        packed = scheme.store.is_packed_u32
        value_bytes = -(-numel * bits // 32) * 4 if packed else numel
        block = None
        if scheme.block is not None:
            block = _block_dims(scheme.block.size, len(shape))
            chunk = math.prod(block)
            if not _chunks_are_blocks(shape, block) or numel % chunk:
                raise UnsupportedQuantization(
                    f"block {list(block)} on shape {list(shape)} from {_release(raw)}: Burn's CPU backends used "
                    "flat chunks and its GPU backends rectangles, which differ here, so the writer's layout is ambiguous")  # fmt: skip
    except QuantizationError as exc:
        raise type(exc)(exc.payload, where=where) from None
    num_scales = 1 if block is None else numel // math.prod(block)
    buffer = memoryview(data).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer
    param = _scale_dtype(scheme)
    widths = [4] if param is ScaleDtype.F32 else [4, SCALE_SIZE[param]]
    for width in widths:
        if buffer.nbytes == value_bytes + num_scales * width:
            break
    else:
        expected = " or ".join(str(value_bytes + num_scales * w) for w in widths)
        raise InvalidQuantizedData(
            f"holds {buffer.nbytes} bytes but a {list(shape)} tensor under {describe(scheme)} written by "
            f"{_release(raw)} takes {expected}", where=where)  # fmt: skip
    region = buffer[:value_bytes]
    if packed:
        values = _fields(np.frombuffer(region, np.uint8), bits)[:numel].reshape(shape)
    else:
        values = np.frombuffer(region, np.int8).reshape(shape)
    dtype = ScaleDtype.F32 if width == 4 else param
    scales = _decode_scales(buffer[value_bytes:], dtype)
    grid = (1,) if block is None else tuple(d // b for d, b in zip(shape, block))
    modern = scheme._replace(store=QuantStore.Native) if not packed else scheme._replace(store=QuantStore.PackedU32(0))
    return QuantizedTensor(modern, np.ascontiguousarray(values), scales.reshape(grid), None)


def _chunks_are_blocks(shape: tuple[int, ...], block: tuple[int, ...]) -> bool:
    """Whether flat chunks of ``prod(block)`` elements are exactly the rectangular blocks.

    True when the block spans whole trailing dims after its first non-unit axis (``[k, full...]``),
    e.g. a 1-D block dividing the last dim.
    """
    axes = [i for i, b in enumerate(block) if b != 1]
    if not axes:
        return True
    first = axes[0]
    return shape[first] % block[first] == 0 and all(block[i] == shape[i] for i in range(first + 1, len(shape)))


# -- writing -------------------------------------------------------------------------------------


def _round_half_away(y: np.ndarray) -> np.ndarray:
    """Rust's ``f32::round``: to nearest, ties away from zero (numpy's ``rint`` ties to even)."""
    t = np.trunc(y)
    return t + np.where(np.abs(y - t) >= np.float32(0.5), np.sign(y), np.float32(0))


def quantize(array: ArrayData, scheme: QuantScheme, *, backend: str = "ndarray") -> QuantizedTensor:
    """Quantize ``array`` as Burn's CPU backend stores it (``quantize_dynamic``, MinMax calibration).

    ``backend="ndarray"`` (the reference): ``q = clamp(round(x / S))`` rounding half away from
    zero; an all-zero block stores scale 0. ``backend="flex"`` (Burn's default CPU device):
    ``q = clamp(round(x · fl32(1/S)))``; a zero scale is replaced by the dtype's rounding of
    ``f32::MIN_POSITIVE``. Scales are ``fl32(2·max|x| / (b−a))`` per tensor or per rectangular
    block, rounded up onto the scale dtype (two levels: normalized by an F32 per-tensor scale
    first). The input is converted to float32 first, as Burn quantizes f32 data.

    Args:
        array: The values (anything ``numpy.asarray`` takes, or a torch tensor).
        scheme: The quantization scheme.
        backend: ``"ndarray"`` or ``"flex"``: whose rounding to reproduce.

    Returns:
        The tensor in parts.

    Raises:
        QuantizationError: The backend is unknown, or the scheme or shape is one Burn cannot quantize.
    """
    if backend not in ("ndarray", "flex"):
        raise QuantizationError(f"backend must be 'ndarray' or 'flex', got {backend!r}")
    if not isinstance(scheme, QuantScheme):
        raise QuantizationError(f"scheme must be a burnpack.QuantScheme, got {type(scheme).__name__}")
    x = np.asarray(array)
    if not is_float_array(x):
        raise QuantizationError(f"only float arrays can be quantized, got {x.dtype}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    check_quantizable(scheme, x.shape)
    if not np.isfinite(x).all():
        raise QuantizationError("the array holds NaN or infinite values, which have no quantized form")
    a, b = VALUE_RANGE[scheme.value]
    block = None if scheme.block is None else _block_dims(scheme.block.size, x.ndim)
    dtype = _scale_dtype(scheme)
    with np.errstate(over="ignore"):
        raw = np.float32(2) * _block_max_abs(x, block) / np.float32(b - a)
    if not np.isfinite(raw).all():
        raise QuantizationError(
            "values above f32::MAX / 2 in magnitude overflow Burn's scale 2·max|x| / (b−a) to infinity "
            "(NdArray would store an infinite scale and zeros); scale the array down first"
        )
    global_scale = None
    if _global_dtype(scheme) is not None:
        peak = raw.max() if raw.size else np.float32(0)
        global_scale = np.float32(max(np.float32(peak / MAX_REPRESENTABLE[dtype]), _F32_MIN_POSITIVE))
        raw = raw / global_scale
    scales = round_up_scale(raw, dtype)
    if backend == "flex":
        scales = np.where((scales > 0) & np.isfinite(scales), scales, round_up_scale(_F32_MIN_POSITIVE, dtype)).astype(np.float32)
    parts = QuantizedTensor(scheme, np.empty(0, np.int8), scales, global_scale)
    divisor = parts.effective_scales()
    y = np.empty_like(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if backend == "flex":  # a subnormal scale has an infinite reciprocal: 0 · inf is NaN there
            _apply_per_block(x, np.float32(1) / divisor, block, np.multiply, y)
        else:  # NdArray's valid_scale: divide by 0.1 where the scale is 0
            _apply_per_block(x, np.where(divisor == 0, np.float32(0.1), divisor).astype(np.float32), block, np.divide, y)
        rounded = np.clip(_round_half_away(y), a, b)
    values = np.where(np.isnan(rounded), 0, rounded).astype(np.int8)  # Rust's `NaN as i8` is 0
    values.flags.writeable = scales.flags.writeable = False  # the parts stay what was quantized
    return QuantizedTensor(scheme, values, scales, global_scale)


def check_quantizable(scheme: QuantScheme, shape: tuple[int, ...]) -> None:
    """Refuse what Burn's CPU quantizers refuse, with their reason."""
    if scheme.mode is not QuantMode.Symmetric:
        raise UnsupportedQuantization("only Symmetric quantization can be computed; Lookup needs a table Burn does not store")
    if scheme.value not in VALUE_RANGE:
        raise UnsupportedQuantization(f"{scheme.value.name}: Burn's CPU backends quantize integer values only ({_INTEGER_VALUES})")
    store = scheme.store
    if store.is_packed_native:
        raise UnsupportedQuantization("PackedNative stores only E2M1 values; use QuantStore.Native or PackedU32(0)")
    if store.is_packed_u32:
        per_word = 32 // VALUE_BITS[scheme.value]
        if store.value != 0 or not shape or shape[-1] % per_word:
            raise UnsupportedQuantization(
                f"{store!r} on shape {list(shape)}: Burn packs u32 words only along the last dim and only when it is "
                f"a multiple of {per_word} (\"Can't store in u32\"); use QuantStore.Native as its CPU backends do")  # fmt: skip
    dtype, gdtype = _scale_dtype(scheme), _global_dtype(scheme)
    for scale in (dtype, gdtype):
        if scale is not None and scale not in _GRID:
            raise UnsupportedQuantization(f"{scale.name} scales: Burn cannot quantize with them (ScaleDtype::round_up answers None)")
    if gdtype is not None and (gdtype is not ScaleDtype.F32 or MAX_REPRESENTABLE[dtype] > MAX_REPRESENTABLE[ScaleDtype.F16]):
        raise UnsupportedQuantization(
            "a two-level scheme needs an F32 per-tensor scale and block scales no wider than F16's range "
            f"(burn-std quantizable); got block {dtype.name}, tensor {gdtype.name}")  # fmt: skip


def _block_max_abs(x: np.ndarray, block: tuple[int, ...] | None) -> np.ndarray:
    """``max|x|`` over the whole tensor (shape ``(1,)``) or over each rectangular block (the grid)."""
    magnitude = np.abs(x)
    if block is None:
        return np.array([magnitude.max() if magnitude.size else 0], np.float32)
    pad = [(0, (-d) % b) for d, b in zip(x.shape, block)]
    if any(p for _, p in pad):
        magnitude = np.pad(magnitude, pad)
    grid = tuple(d // b for d, b in zip(magnitude.shape, block))
    split = tuple(v for g, b in zip(grid, block) for v in (g, b))
    if 0 in split:
        return np.zeros(grid, np.float32)
    return magnitude.reshape(split).max(axis=tuple(range(1, len(split), 2))).astype(np.float32)
