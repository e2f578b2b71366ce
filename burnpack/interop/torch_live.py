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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from .._generated.types import DType
from ..dtypes import numpy_dtype
from .tensors import TensorSet, dtype_name

__all__ = [
    "from_torch_tensor",
    "is_torch_object",
    "module_types_of",
    "read_torch",
    "to_state_dict",
    "to_torch_tensor",
    "torch_available",
    "write_pytorch",
]


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _is_torch(value: Any) -> bool:
    return (type(value).__module__ or "").startswith("torch")


def _is_tensor(value: Any) -> bool:
    return _is_torch(value) and hasattr(value, "detach") and hasattr(value, "dtype")


def _is_module(value: Any) -> bool:
    return any((cls.__module__ or "").startswith("torch.nn") and cls.__name__ == "Module" for cls in type(value).__mro__)


def is_torch_object(value: Any) -> bool:
    """A ``torch.nn.Module``, a torch tensor, or a mapping holding torch tensors somewhere."""
    if _is_module(value) or _is_tensor(value):
        return True
    if isinstance(value, Mapping):
        return any(is_torch_object(v) for v in value.values() if isinstance(v, Mapping) or _is_tensor(v))
    return False


def from_torch_tensor(tensor: Any) -> np.ndarray:
    """A CPU numpy copy-or-view of a torch tensor (bfloat16 through its 16-bit pattern)."""
    import torch

    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.numpy()


def _torch_dtypes() -> dict[str, Any]:
    import torch

    table = {
        "F64": torch.float64, "F32": torch.float32, "Flex32": torch.float32, "F16": torch.float16,
        "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
        "I8": torch.int8, "U8": torch.uint8, "Bool": torch.bool,
    }  # fmt: skip
    for name, attr in (("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")):
        if hasattr(torch, attr):
            table[name] = getattr(torch, attr)
    return table


def to_torch_tensor(array: np.ndarray, dtype: DType | None = None, *, name: str = "tensor", copy: bool = True) -> Any:
    """A torch tensor of ``array``, typed per its Burn ``dtype``: a copy, or with
    ``copy=False`` a tensor sharing the array's memory where the layout allows (only for
    tensors that are read, e.g. by ``torch.save``: torch has no read-only tensors)."""
    import warnings

    import torch

    variant = dtype.variant if dtype is not None else None
    if variant == "Bool" or array.dtype == np.bool_:
        return torch.from_numpy(np.array(array != 0, dtype=np.bool_))
    if variant is not None and variant != "BF16" and dtype.value is not None:
        raise ValueError(f"tensor {name!r}: torch cannot hold {dtype_name(dtype)}")
    want = None
    if variant is not None and variant != "BF16":
        table = _torch_dtypes()
        if variant not in table:
            raise ValueError(f"tensor {name!r}: this torch has no dtype for {variant}")
        want = table[variant]
    array = np.array(array, copy=True) if copy or not array.flags.c_contiguous else array  # (ascontiguousarray makes 0-d 1-d)
    is_bf16 = variant == "BF16" or array.dtype == np.dtype(ml_dtypes.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "non-writable NumPy array": only read
        tensor = torch.from_numpy(array.view(np.int16) if is_bf16 else array)
    if is_bf16:
        return tensor.view(torch.bfloat16)
    if want is not None and tensor.dtype != want:
        tensor = tensor.to(want)
    return tensor


def module_types_of(module: Any, prefix: str = "") -> dict[str, str]:
    """``{module path: Burn module type}`` of a ``torch.nn.Module``'s submodules."""
    from .adapters import ModuleTypes

    return ModuleTypes.from_torch_module(module, prefix)


def _walk(tree: Mapping[Any, Any], prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > 128:
        raise ValueError("dicts nest more than 128 deep")
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if _is_tensor(value):
            yield name, value
        elif isinstance(value, Mapping):
            yield from _walk(value, name + ".", depth + 1)


def read_torch(obj: Any, *, top_level_key: str | None = None, bool_store: str = "U8") -> TensorSet:
    """A ``state_dict`` (nested dicts flatten to dotted names, non-tensor leaves skipped) or an
    ``nn.Module`` (its ``state_dict()``; its submodule types become the set's module types)."""
    from .formats import _entry_from_array

    types: dict[str, str] = {}
    if _is_module(obj):
        types = module_types_of(obj)
        tree: Any = obj.state_dict()
    elif _is_tensor(obj):
        raise TypeError("a single tensor has no name; pass a state_dict or an nn.Module")
    else:
        tree = obj
        if top_level_key is not None:
            tree = obj[top_level_key]
            if _is_module(tree):
                types = module_types_of(tree)
                tree = tree.state_dict()
    entries = []
    seen: dict[int, np.ndarray] = {}
    for name, tensor in _walk(tree):
        array = seen.get(id(tensor))
        if array is None:
            array = seen[id(tensor)] = from_torch_tensor(tensor)
        entries.append(_entry_from_array(name, array, bool_store))
    return TensorSet(entries, format="torch", module_types=types, top_level_key=top_level_key)


def to_state_dict(tset: TensorSet) -> OrderedDict[str, Any]:
    """The tensors as an ``OrderedDict[str, torch.Tensor]`` in data order (copies)."""
    out: OrderedDict[str, Any] = OrderedDict()
    for entry in tset.entries:
        out[entry.name] = to_torch_tensor(entry.numpy(), entry.dtype, name=entry.name)
    return out


def write_pytorch(tset: TensorSet, path: str | os.PathLike[str], *, overwrite: bool = False, progress: Any = None) -> Path:
    """``torch.save`` of the state dict, written atomically. Needs torch; metadata, scalars and
    param ids have no place in a state dict and are not written."""
    try:
        import torch
    except ImportError as exc:
        from .formats import ConversionError

        raise ConversionError("writing a .pt file needs torch: pip install 'burnpack[torch]' (reading one does not)") from exc
    from .formats import atomic_output

    for entry in tset.entries:
        if entry.dtype.value is not None and entry.dtype.variant != "Bool":
            from .formats import ConversionError

            raise ConversionError(f"tensor {entry.name!r}: a .pt file cannot hold {dtype_name(entry.dtype)}")
    state = OrderedDict()
    for entry in tset.entries:
        array = entry.numpy()
        if array.dtype != numpy_dtype(entry.dtype):
            array = array.astype(numpy_dtype(entry.dtype))
        state[entry.name] = to_torch_tensor(array, entry.dtype, name=entry.name, copy=False)
        if progress is not None:
            progress(array.nbytes)
    with atomic_output(Path(path), overwrite=overwrite) as stream:
        torch.save(state, stream)
    return Path(path)
