"""Loading a record into a ``torch.nn.Module`` (imported only when a caller passes one).

The module's ``state_dict()`` keys are the paths; a hit replaces the tensor's data in place
(``copy_`` when the dtype stays, ``.data`` / buffer reassignment when the dtype policy changes it),
so optimizers holding the parameters keep working. Torch has no ``Bool(U8)`` / ``Flex32``: those
load as ``torch.bool`` / ``torch.float32``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.dtypes import dtype_from_torch
from ..core.frameworks import numpy_to_torch
from ._common import new_param_id
from .tree import Param, RunningState


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
        value = _assign(module, path, tensor, numpy_to_torch(data, dtype, name=path, device=tensor.device))
        params[path] = kind(value, entry.param_id if kind is Param else new_param_id(taken), dtype)
    return module
