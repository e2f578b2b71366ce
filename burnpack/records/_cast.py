"""Element casts as Burn's ``TensorData::try_cast`` performs them (burn-std ``element/cast.rs``).

* float → float: IEEE rounding to nearest (``as``; large values saturate to ±inf);
* int → int: exact, and an error when the value does not fit (Burn panics:
  "Element cannot be represented in the target type");
* float → int: truncation toward zero, an error for NaN and values outside the target range;
* int/float → bool: ``x != 0``; bool → number: 0 / 1;
* QFloat: no conversion at all.
"""

from __future__ import annotations

import numpy as np

from ..codec._generated.metadata import BoolStore, DType
from ..core.dtypes import debug, numpy_dtype
from ..errors import RecordCastError

def _kind(dtype: DType) -> str:
    if dtype.is_float:
        return "float"
    if dtype.is_int or dtype.is_uint:
        return "int"
    if dtype.is_bool:
        # Burn reads Bool(U8) / Bool(U32) data as its integer store (cast.rs try_cast_clone).
        return "bool" if dtype.value is BoolStore.Native else "int"
    return "qfloat"


def is_float(dtype: DType) -> bool:
    """Burn's ``DType::is_float``: F64, F32, Flex32, F16, BF16."""
    return _kind(dtype) == "float"


def cast_array(array: np.ndarray, src: DType, dst: DType, *, where: str) -> np.ndarray:
    """``array`` (holding ``src`` elements) converted to ``dst`` elements, as Burn converts them."""
    if src == dst:
        return array
    src_kind, dst_kind = _kind(src), _kind(dst)
    if "qfloat" in (src_kind, dst_kind):
        raise RecordCastError(f"{where}: cannot convert {debug(src)} to {debug(dst)} (quantized data; apply(..., dequantize=True) loads its dequantized values)")
    out_dtype = numpy_dtype(dst)
    if dst.is_bool:
        return (array != 0).astype(out_dtype)
    if src_kind == "bool":
        return array.astype(np.uint8).astype(out_dtype)
    if dst_kind == "float":
        with np.errstate(over="ignore", invalid="ignore"):
            return array.astype(out_dtype)
    info = np.iinfo(out_dtype)
    if src_kind == "float":
        wide = array.astype(np.float64)
        truncated = np.trunc(wide)
        ok = np.isfinite(truncated) & (truncated >= float(info.min)) & (truncated < float(int(info.max) + 1))
        if not bool(np.all(ok)):
            bad = wide[~ok].reshape(-1)[0]
            raise RecordCastError(
                f"{where}: {bad!r} cannot be represented in {debug(dst)} (Float cannot be represented in the target int type)"
            )
        return truncated.astype(out_dtype)
    if array.size:
        lo, hi = int(array.min()), int(array.max())
        if lo < int(info.min) or hi > int(info.max):
            bad = lo if lo < int(info.min) else hi
            raise RecordCastError(
                f"{where}: {bad} cannot be represented in {debug(dst)} (Element cannot be represented in the target type)"
            )
    return array.astype(out_dtype)
