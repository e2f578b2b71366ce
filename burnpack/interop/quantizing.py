"""The ``quantize`` / ``dequantize`` steps of a conversion: float tensors ↔ QFloat tensors.

By default the weights Burn quantizes for deployment are selected — float tensors of rank ≥ 2
named ``weight`` (Linear and convolution kernels) — while norms, biases and embeddings stay
float; ``include`` (a regex searched in the output name) selects any float tensors instead. Each
selected tensor is quantized while it is written (one at a time), and the report records its
error against the float values: the largest absolute difference and the RMSE. ``dequantize``
turns every QFloat tensor back into F32 values, as Burn's dequantize computes them (e.g. to
write a quantized Burn model as safetensors).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..codec._generated.metadata import DType, QuantScheme
from ..errors import ConversionError, QuantizationError
from ..core.patterns import compile_pattern
from ..core.quant import check_decodable, check_quantizable, describe, dequantize, quantize, quantized_data_len
from .tensors import Entry, is_float

__all__ = ["default_selection", "dequantize_entries", "quantize_entries"]

_EMBEDDING = re.compile(r"(^|\.)(embed[^.]*|wte|wpe|tok_embeddings)(\.|$)", re.IGNORECASE)


def default_selection(entry: Entry) -> bool:
    """Linear/conv weights: float, rank ≥ 2, named ``weight``, not an embedding table."""
    if entry.module_type is not None and entry.module_type.lower().startswith("embedding"):
        return False
    return entry.rank >= 2 and entry.name.rpartition(".")[2] == "weight" and not _EMBEDDING.search(entry.name)


def quantize_entries(
    entries: Iterable[Entry],
    scheme: QuantScheme,
    include: str | None,
    errors: dict[str, dict[str, Any]],
    warnings: list[str],
    *,
    backend: str = "ndarray",
) -> list[Entry]:
    """``entries`` with the selected float tensors replaced by lazily quantized QFloat ones.

    ``errors[name]`` receives ``{"scheme", "max_abs", "rmse"}`` when the tensor is written.
    Raises :class:`ConversionError` when nothing is selected.
    """
    pattern = compile_pattern(include, "quantization include regex") if include is not None else None
    out, selected = [], 0
    for entry in entries:
        chosen = pattern.search(entry.name) is not None if pattern is not None else default_selection(entry)
        if not chosen or not is_float(entry.dtype):
            out.append(entry)
            continue
        selected += 1
        check_quantizable(scheme, entry.shape)
        out.append(_quantized(entry, scheme, errors, backend))
        block = scheme.block.size.storage[: scheme.block.size.len] if scheme.block is not None else ()
        if block and any(d % b for d, b in zip(entry.shape[::-1], block[::-1])):
            warnings.append(
                f"{entry.name}: block {list(block)} does not divide shape {list(entry.shape)}; edge blocks are partial "
                "(Burn reads them; its NdArray backend would refuse to compute them)"
            )
    if not selected:
        what = f"--include {include!r}" if include is not None else "the default selection (float weights of rank >= 2)"
        raise ConversionError(f"quantize: {what} selected no float tensor")
    return out


def _quantized(entry: Entry, scheme: QuantScheme, errors: dict[str, dict[str, Any]], backend: str) -> Entry:
    def load() -> np.ndarray:
        x = np.asarray(entry.numpy(), np.float32)
        q = quantize(x, scheme, backend=backend)
        diff = q.dequantize().astype(np.float64) - x
        errors[entry.name] = {
            "scheme": describe(scheme),
            "max_abs": float(np.abs(diff).max()) if diff.size else 0.0,
            "rmse": math.sqrt(float(np.mean(diff * diff))) if diff.size else 0.0,
        }
        return np.frombuffer(q.tobytes(), np.uint8)

    return entry.replace(dtype=DType.QFloat(scheme), load=load, byte_len=quantized_data_len(scheme, entry.shape), step=f"{entry.dtype.variant} -> {describe(scheme)}")


def dequantize_entries(entries: Iterable[Entry]) -> list[Entry]:
    """``entries`` with every QFloat tensor replaced by its F32 values (computed while written).

    Raises :class:`ConversionError` when there is no QFloat tensor, or one that cannot be
    dequantized (checked here, before anything is written).
    """
    out, found = [], 0
    for entry in entries:
        if not entry.dtype.is_quantized:
            out.append(entry)
            continue
        found += 1
        scheme = entry.dtype.value
        try:
            check_decodable(scheme)
            expected = quantized_data_len(scheme, entry.shape)
        except QuantizationError as exc:
            raise ConversionError(f"dequantize: tensor {entry.name!r}: {exc.payload}") from None
        if entry.byte_len is not None and entry.byte_len != expected:
            raise ConversionError(f"dequantize: tensor {entry.name!r} holds {entry.byte_len} bytes but {describe(scheme)} on shape {list(entry.shape)} needs {expected}")

        def load(entry: Entry = entry, scheme: QuantScheme = scheme) -> np.ndarray:
            return dequantize(np.ascontiguousarray(entry.numpy()), scheme, entry.shape, name=entry.name)

        out.append(entry.replace(dtype=DType.F32, load=load, step=f"{describe(scheme)} -> F32"))
    if not found:
        raise ConversionError("dequantize: the source holds no quantized (QFloat) tensor")
    return out
