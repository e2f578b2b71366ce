"""The one bridge to torch: tensors and modules in and out, without importing torch until asked.

Nothing here imports torch unless a caller hands over a torch object or asks for torch output,
so reading and writing burnpack never needs it. Dtypes follow the generated table
(``burnpack.dtypes.torch_dtype`` / ``dtype_from_torch``): any Bool store becomes ``torch.bool``,
Flex32 ``float32``; a type numpy has only from ml_dtypes (bfloat16) travels through its bit pattern.
"""

from __future__ import annotations

import importlib
import math
import sys
import warnings
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, Protocol, TypeGuard

import numpy as np

from ..codec._generated.metadata import DTYPE_INFO, NUMPY_EXTENSION_TYPES, DType
from .dtypes import TorchDType, TorchTensor, debug, dtype_from_numpy, dtype_from_torch, element_size, is_extension_type, numpy_dtype, torch_dtype
from ..errors import ValidationError


class TorchModule(Protocol):
    """What burnpack reads of a ``torch.nn.Module``: typed by its shape, so that a signature can
    name it without importing torch (any ``nn.Module`` is one; a mapping is not)."""

    def state_dict(self) -> Mapping[str, Any]: ...

    def named_modules(self) -> Iterator[tuple[str, Any]]: ...

    def named_parameters(self) -> Iterator[tuple[str, TorchTensor]]: ...


def is_torch_tensor(value: object) -> TypeGuard[TorchTensor]:
    """True for a ``torch.Tensor`` (or ``Parameter``), without importing torch."""
    module = type(value).__module__ or ""
    return module.startswith("torch") and hasattr(value, "detach") and hasattr(value, "dtype")


def is_torch_module(value: object) -> bool:
    """True for a ``torch.nn.Module``, without importing torch."""
    return any((cls.__module__ or "").startswith("torch.nn") and cls.__name__ == "Module" for cls in type(value).__mro__)


def torch_available() -> bool:
    """Whether torch can be imported."""
    try:
        importlib.import_module("torch")
    except ImportError:
        return False
    return True


def as_numpy(value: TorchTensor | np.typing.ArrayLike) -> np.ndarray:
    """An array from numpy data, a torch tensor (bf16 included) or anything ``np.asarray`` takes."""
    if is_torch_tensor(value):
        return torch_to_numpy(value)
    return np.asarray(value)


def torch_to_numpy(tensor: TorchTensor) -> np.ndarray:
    """A CPU numpy view-or-copy of a torch tensor of any layout or device."""
    import torch  # only reached when the caller handed us a torch object

    try:
        burn = dtype_from_torch(tensor.dtype)
    except ValueError:
        raise ValidationError(
            f"torch dtype {str(tensor.dtype).removeprefix('torch.')} has no Burn DType (Burn has "
            f"{', '.join(DTYPE_INFO)}): convert the tensor first, e.g. .to(torch.float32)"
        ) from None
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    if DTYPE_INFO[burn.variant].numpy in NUMPY_EXTENSION_TYPES:  # numpy has it from ml_dtypes: torch hands over its bits
        extension = numpy_dtype(burn)
        return tensor.view(getattr(torch, f"int{8 * extension.itemsize}")).numpy().view(extension)  # type: ignore[no-any-return]
    return tensor.numpy()  # type: ignore[no-any-return]


def numpy_to_torch(
    array: np.ndarray, dtype: DType | None = None, *, name: str = "tensor", copy: bool = True, device: str | None = None
) -> TorchTensor:
    """A torch tensor of ``array``, typed per its Burn ``dtype`` (from the array when None).

    ``copy=False`` shares the array's memory where the layout allows; only for tensors that are
    read (e.g. by ``torch.save``), since torch has no read-only tensors. Raises ValueError for
    dtypes torch cannot hold (QFloat, or uint16-64 in an old torch).
    """
    import torch

    if dtype is not None and dtype.is_quantized:
        raise ValueError(f"tensor {name!r}: torch cannot hold {debug(dtype)}")
    if (dtype is not None and dtype.is_bool) or array.dtype == np.bool_:
        tensor = torch.from_numpy(np.array(array != 0, dtype=np.bool_))
    else:
        want = torch_dtype(dtype) if dtype is not None else None
        if dtype is not None and element_size(dtype) is not None and array.dtype != numpy_dtype(dtype):
            array = array.astype(numpy_dtype(dtype))
        elif copy or not array.flags.c_contiguous:
            array = np.array(array, copy=True)  # (ascontiguousarray would make a 0-d array 1-d)
        extension = is_extension_type(array.dtype)  # torch takes its bits, then views them as its type
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "non-writable NumPy array": only read
            tensor = torch.from_numpy(array.view(f"i{array.dtype.itemsize}") if extension else array)
        if extension:
            tensor = tensor.view(torch_dtype(dtype_from_numpy(array.dtype)))
        if want is not None and tensor.dtype != want:
            tensor = tensor.to(want)
    return tensor if device is None else tensor.to(device)


TORCH_EXTRA_HINT = "torch tensors need PyTorch: pip install 'burnpack[torch]'"


def import_torch() -> ModuleType:
    """The ``torch`` module, or an ImportError naming the ``[torch]`` extra."""
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError(TORCH_EXTRA_HINT, name="torch") from None
    return torch


def torch_view_dtype(dtype: DType, *, name: str = "tensor") -> TorchDType:
    """The torch dtype a tensor's bytes are viewed as in place: ``torch_dtype``, except that a
    Bool store is viewed as its own integer type (``uint8``, ``uint32``) and checked before it
    becomes ``torch.bool``. QFloat has none: a TypeError says so (its raw bytes stay in numpy)."""
    torch = import_torch()
    if dtype.is_quantized:
        raise TypeError(f"tensor {name!r} is {debug(dtype)}, which torch has no dtype for; read its raw bytes with .numpy()")
    if dtype.is_bool:
        return torch.uint8 if element_size(dtype) == 1 else torch.uint32
    try:
        return torch_dtype(dtype)
    except ValueError as exc:
        raise TypeError(f"tensor {name!r}: {exc}") from None


def torch_from_buffer(buffer: memoryview | bytearray, offset: int, shape: tuple[int, ...], dtype: DType, *, name: str = "tensor") -> TorchTensor:
    """A torch tensor viewing ``buffer`` at ``offset`` (no copy), typed and shaped as a Burn tensor.

    ``buffer`` must be writable memory the tensor may own a view of (torch has no read-only
    tensors): a copy-on-write file mapping or a fresh copy. Bool stores become ``torch.bool``:
    ``Native``/``U8`` in place when every byte is 0 or 1, otherwise (and for ``U32``) as ``!= 0``.
    """
    torch = import_torch()
    raw = torch_view_dtype(dtype, name=name)
    count = math.prod(shape)
    if count == 0:
        try:
            tensor = torch.empty(shape, dtype=raw)
        except RuntimeError:  # an empty shape whose other dimensions overflow torch's size
            raise ValidationError(f"tensor {name!r} of shape {list(shape)} holds more elements than torch can index", where="torch()") from None
    else:
        if sys.byteorder == "big" and raw.itemsize > 1:
            raise TypeError("zero-copy torch tensors of little-endian data need a little-endian host")
        tensor = torch.frombuffer(buffer, dtype=raw, count=count, offset=offset).view(shape)
    if not dtype.is_bool:
        return tensor
    if raw.itemsize == 1 and (count == 0 or int(tensor.max()) <= 1):
        return tensor.view(torch.bool)
    return tensor != 0
