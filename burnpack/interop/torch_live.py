"""Live torch objects: ``state_dict``s and ``nn.Module``s in, ``.pt`` files and state dicts out.

Nothing here imports torch until a caller hands over a torch object or asks for torch output,
so the rest of ``burnpack.interop`` works without it. Reading ``.pt`` *files* never needs torch
(see :mod:`burnpack.interop.pytorch`); writing them does (``torch.save`` of a state dict).

Dtypes: torch ``bool`` ↔ ``Bool(...)`` (any store back to ``torch.bool``), ``bfloat16`` ↔ BF16
through its bit pattern, ``Flex32`` → ``float32``; ``uint16/32/64`` where the installed torch
has them. Tensors on other devices are copied to the CPU.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..codec._generated.metadata import BoolStore
from ..core.dtypes import numpy_dtype
from ..core.frameworks import TorchModule, import_torch, is_torch_module, is_torch_tensor, numpy_to_torch, torch_to_numpy
from ._io import atomic_output, entries_from_arrays
from ..errors import ConversionError, interrupt_behind
from .tensors import TensorSet, dtype_name, flatten_nested

__all__ = ["is_torch_object", "module_types_of", "read_torch", "to_state_dict", "torch_save", "write_pytorch"]


def is_torch_object(value: object) -> bool:
    """A ``torch.nn.Module``, a torch tensor, or a mapping holding torch tensors somewhere (in
    nested mappings, lists or tuples)."""
    if is_torch_module(value) or is_torch_tensor(value):
        return True
    return isinstance(value, Mapping) and _holds_tensors(value.values())


def _holds_tensors(values: Any) -> bool:
    for value in values:
        if is_torch_tensor(value):
            return True
        if isinstance(value, Mapping):
            value = value.values()
        if isinstance(value, (list, tuple, type({}.values()))) and _holds_tensors(value):
            return True
    return False


def module_types_of(module: TorchModule, prefix: str = "") -> dict[str, str]:
    """``{module path: Burn module type}`` of a ``torch.nn.Module``'s submodules."""
    from .adapters import ModuleTypes

    return ModuleTypes.from_torch_module(module, prefix)


def read_torch(obj: Any, *, top_level_key: str | None = None, bool_store: str | BoolStore = BoolStore.U8) -> TensorSet:
    """A ``state_dict`` (nested dicts, lists and tuples flatten to dotted names; non-tensor leaves
    are listed in ``skipped``) or an
    ``nn.Module`` (its ``state_dict()``; its submodule types become the set's module types)."""
    types: dict[str, str] = {}
    if is_torch_module(obj):
        types = module_types_of(obj)
        tree: Any = obj.state_dict()
    elif is_torch_tensor(obj):
        raise TypeError("a single tensor has no name; pass a state_dict or an nn.Module")
    else:
        tree = obj
        if top_level_key is not None:
            tree = obj[top_level_key]
            if is_torch_module(tree):
                types = module_types_of(tree)
                tree = tree.state_dict()
    arrays = []
    seen: dict[int, np.ndarray] = {}
    skipped: dict[str, str] = {}
    for name, tensor in flatten_nested(tree, is_torch_tensor, skipped):
        array = seen.get(id(tensor))
        if array is None:
            array = seen[id(tensor)] = torch_to_numpy(tensor)
        arrays.append((name, array))
    return TensorSet(entries_from_arrays(arrays, bool_store), format="torch", module_types=types, top_level_key=top_level_key, skipped=skipped)


def to_state_dict(tset: TensorSet) -> OrderedDict[str, Any]:
    """The tensors as torch tensors in data order (copies).

    Args:
        tset: The tensors.

    Returns:
        An ``OrderedDict[str, torch.Tensor]``.

    Raises:
        ImportError: torch is not installed.
    """
    out: OrderedDict[str, Any] = OrderedDict()
    for entry in tset.entries:
        out[entry.name] = numpy_to_torch(entry.numpy(), entry.dtype, name=entry.name)
    return out


def write_pytorch(
    tset: TensorSet, path: str | os.PathLike[str], *, overwrite: bool = False, progress: Callable[[int], None] | None = None
) -> Path:
    """``torch.save`` of the state dict, written atomically. Needs torch; metadata, scalars and
    param ids have no place in a state dict and are not written. Tied entries (``Entry.tie``)
    are one tensor under their names, which torch saves once."""
    for entry in tset.entries:
        if entry.dtype.is_quantized:
            raise ConversionError(f"tensor {entry.name!r}: a .pt file cannot hold {dtype_name(entry.dtype)}")
    _torch_for_writing()
    state = OrderedDict()
    made: dict[str, Any] = {}  # tie → its tensor: tied weights stay one tensor, saved once
    for entry in tset.entries:
        if entry.tie is not None and entry.tie in made:
            state[entry.name] = made[entry.tie]
            continue
        array = entry.numpy()
        if array.dtype != numpy_dtype(entry.dtype):
            array = array.astype(numpy_dtype(entry.dtype))
        state[entry.name] = numpy_to_torch(array, entry.dtype, name=entry.name, copy=False)
        if entry.tie is not None:
            made[entry.tie] = state[entry.name]
    torch_save(state, Path(path), overwrite=overwrite, progress=progress)
    return Path(path)


def torch_save(obj: Any, path: Path, *, overwrite: bool = False, progress: Callable[[int], None] | None = None) -> None:
    """``torch.save(obj)`` into ``path``, atomically; ``progress`` is fed the bytes as torch
    writes them. Needs torch (the error names the ``[torch]`` extra).

    Ctrl-C while torch writes stays a ``KeyboardInterrupt``: torch's zip writer, unwinding,
    raises a ``RuntimeError`` of its own ("unexpected pos") that would hide it.
    """
    torch = _torch_for_writing()
    try:
        with atomic_output(path, overwrite=overwrite) as stream:
            torch.save(obj, stream if progress is None else _Counted(stream, progress))
    except Exception as exc:
        interrupt = interrupt_behind(exc)
        if interrupt is None:
            raise
        raise interrupt from None


def _torch_for_writing() -> Any:
    try:
        return import_torch()
    except ImportError as exc:
        raise ConversionError("writing a .pt file needs torch: pip install 'burnpack[torch]' (reading one does not)") from exc


class _Counted:
    """A binary stream that tells ``progress`` how many bytes each write took."""

    def __init__(self, stream: Any, progress: Callable[[int], None]) -> None:
        self._stream, self._progress = stream, progress

    def write(self, data: Any) -> int:
        written = self._stream.write(data)
        self._progress(memoryview(data).nbytes)
        return int(written)

    def flush(self) -> None:
        self._stream.flush()
