"""Loading a record into a ``torch.nn.Module`` (imported only when a caller passes one).

The module's ``state_dict()`` keys are the paths; a hit replaces the tensor's data in place
(``copy_`` when the dtype stays, ``.data`` / buffer reassignment when the dtype policy changes it),
so optimizers holding the parameters keep working. Torch has no ``Bool(U8)`` / ``Flex32``: those
load as ``torch.bool`` / ``torch.float32``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._generated.types import BoolStore, DType
from ._common import new_param_id
from .tree import Param, RunningState


def _tables() -> tuple[dict[Any, DType], dict[str, Any]]:
    import torch

    to_burn: dict[Any, DType] = {
        torch.float64: DType.F64,
        torch.float32: DType.F32,
        torch.float16: DType.F16,
        torch.bfloat16: DType.BF16,
        torch.int64: DType.I64,
        torch.int32: DType.I32,
        torch.int16: DType.I16,
        torch.int8: DType.I8,
        torch.uint8: DType.U8,
        torch.bool: DType.Bool(BoolStore.Native),
    }
    for name, dtype in (("uint16", DType.U16), ("uint32", DType.U32), ("uint64", DType.U64)):
        if hasattr(torch, name):
            to_burn[getattr(torch, name)] = dtype
    to_torch = {dtype.variant if dtype.variant != "Bool" else "Bool": t for t, dtype in to_burn.items()}
    to_torch["Flex32"] = torch.float32
    return to_burn, to_torch


def dtype_from_torch(dtype: Any) -> DType:
    to_burn, _ = _tables()
    try:
        return to_burn[dtype]
    except KeyError:
        raise TypeError(f"torch dtype {dtype} has no Burn equivalent") from None


def numpy_to_torch(data: np.ndarray, dtype: DType, device: Any) -> Any:
    import torch

    _, to_torch = _tables()
    if dtype.variant == "Bool":
        return torch.from_numpy(np.ascontiguousarray(data != 0)).to(device)
    if dtype.variant == "BF16":
        bits = np.ascontiguousarray(data).view(np.int16).copy()
        return torch.from_numpy(bits).view(torch.bfloat16).to(device)
    if dtype.variant not in to_torch:
        raise TypeError(f"Burn dtype {dtype!r} has no torch equivalent in this torch version")
    return torch.from_numpy(np.array(data, dtype=data.dtype, copy=True)).to(device=device, dtype=to_torch[dtype.variant])


def _assign(module: Any, path: str, old: Any, new: Any) -> Any:
    import torch

    owner_path, _, name = path.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    with torch.no_grad():
        if old.dtype == new.dtype:
            old.copy_(new)
            return old
        if name in owner._parameters:
            old.data = new
            return old
        owner._buffers[name] = new
        return new


def apply_to_module(module: Any, resolve: Callable[..., Any], params: dict[str, Param], *, dry_run: bool) -> Any:
    taken: set[int] = set()
    parameters = {name for name, _ in module.named_parameters()}
    for path, tensor in module.state_dict(keep_vars=True).items():
        hit = resolve(path, lambda t=tensor: dtype_from_torch(t.dtype), tuple(int(d) for d in tensor.shape))
        kind = Param if path in parameters else RunningState  # buffers: running statistics
        if hit is None:
            params[path] = kind(tensor, new_param_id(taken), None)
            continue
        entry, dtype, data = hit
        value = _assign(module, path, tensor, numpy_to_torch(data, dtype, tensor.device))
        params[path] = kind(value, entry.param_id if kind is Param else new_param_id(taken), dtype)
    return module
