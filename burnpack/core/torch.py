"""PyTorch convenience functions shaped like ``safetensors.torch``.

``load_file`` returns tensors viewing the file (copy-on-write: writing into one never changes
the file); ``save_file`` writes a ``{name: tensor}`` dict and refuses tensors that share memory
(tied weights), which ``save_model`` / ``load_model`` handle as ``safetensors.torch`` does:
one name per shared tensor on disk, re-tied by the module itself on load. Needs torch
(``pip install 'burnpack[torch]'``); the rest of burnpack never does.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dtypes import TorchTensor
from .frameworks import import_torch
from ..errors import ValidationError
from .reader import load
from .writer import Tensor, save

if TYPE_CHECKING:  # the module is imported when a function runs (import_torch)
    import torch

__all__ = ["load_file", "load_model", "save_file", "save_model", "shared_tensors"]

PathLike = str | os.PathLike[str]


def load_file(path: PathLike, device: str = "cpu") -> dict[str, TorchTensor]:
    """Every tensor of a ``.bpk`` file as torch tensors, keyed by name, as ``safetensors.torch.load_file``.

    Args:
        path: The file.
        device: Where the tensors go; on ``"cpu"`` they share the file's mapped memory (copy-on-write).

    Returns:
        The torch tensors by name.

    Raises:
        BurnpackError: The file is not a valid burnpack, or holds a tensor torch cannot (QFloat).
        ImportError: torch is not installed (``burnpack[torch]``).
    """
    torch = import_torch()
    with load(path, framework="pt") as pack:
        tensors = pack.torch()
    if torch.device(device).type != "cpu":
        tensors = {name: tensor.to(device) for name, tensor in tensors.items()}
    return tensors


def save_file(tensors: Mapping[str, TorchTensor], path: PathLike, metadata: Mapping[str, str] | None = None) -> Path:
    """Write ``{name: torch tensor}`` atomically, in the dict's order, as ``safetensors.torch.save_file``.

    Args:
        tensors: The torch tensors by name.
        path: Where to write.
        metadata: User metadata, string to string.

    Returns:
        The path written.

    Raises:
        ValidationError: Tensors share memory (``save_model`` keeps one of each tied group), or
            a tensor's dtype has no Burn dtype.
    """
    import_torch()
    groups = shared_tensors(tensors)
    if groups:
        raise ValidationError(
            f"some tensors share memory (tied weights): {groups}; saving each would duplicate the memory on disk "
            "and untie them on load. Save the module with burnpack.torch.save_model, which keeps one name per "
            "shared tensor, or .clone() the tensors that should be separate"
        )
    return save(_writer_tensors(tensors), path, metadata=metadata)


def save_model(model: torch.nn.Module, path: PathLike, metadata: Mapping[str, str] | None = None) -> Path:
    """Write a module's ``state_dict``, keeping one name per group of tied tensors (the first by name).

    Args:
        model: A ``torch.nn.Module``.
        path: Where to write.
        metadata: User metadata, string to string.

    Returns:
        The path written.

    Raises:
        ValidationError: A tensor's dtype has no Burn dtype.
    """
    import_torch()
    state = model.state_dict()
    dropped = _aliases(state)
    return save(_writer_tensors({k: v for k, v in state.items() if k not in dropped}), path, metadata=metadata)


def load_model(model: torch.nn.Module, path: PathLike, strict: bool = True, device: str = "cpu") -> tuple[list[str], list[str]]:
    """Load a file written by ``save_model`` into ``model`` (copying into its parameters).

    Names ``save_model`` dropped as aliases of a tied tensor are not missing: the module's own
    tying fills them.

    Args:
        model: A ``torch.nn.Module``.
        path: The file.
        strict: Raise when a name is missing or unexpected, as ``load_state_dict(strict=True)``.
        device: Where the file's tensors are loaded before copying.

    Returns:
        The missing names and the unexpected names.

    Raises:
        ValidationError: ``strict`` and a name is missing or unexpected.
    """
    state = load_file(path, device=device)
    result = model.load_state_dict(state, strict=False)
    aliases = _aliases(model.state_dict())
    missing = [name for name in result.missing_keys if name not in aliases]
    unexpected = list(result.unexpected_keys)
    if strict and (missing or unexpected):
        raise ValidationError(f"loading {os.fspath(path)!r} into {type(model).__name__}: missing {missing}, unexpected {unexpected}")
    return missing, unexpected


def shared_tensors(tensors: Mapping[str, TorchTensor]) -> list[list[str]]:
    """Groups of names whose tensors overlap in memory, as ``safetensors`` detects them.

    Args:
        tensors: The torch tensors by name.

    Returns:
        Each group of two or more names, sorted.
    """
    by_storage: dict[tuple[Any, int], list[str]] = defaultdict(list)
    for name, tensor in tensors.items():
        if tensor.device.type == "meta" or tensor.untyped_storage().nbytes() == 0:
            continue
        by_storage[(tensor.device, tensor.untyped_storage().data_ptr())].append(name)
    groups = []
    for names in by_storage.values():
        spans = sorted((_byte_span(tensors[name]), name) for name in names)
        group: list[str] = []
        reach = -1
        for (start, end), name in spans:
            if group and start >= reach:
                groups.append(group)
                group = []
            group.append(name)
            reach = max(reach, end)
        groups.append(group)
    return sorted(sorted(group) for group in groups if len(group) > 1)


def _byte_span(tensor: Any) -> tuple[int, int]:
    size = tensor.element_size()
    start = tensor.storage_offset() * size
    if tensor.numel() == 0:
        return start, start
    extent = 1 + sum((dim - 1) * abs(stride) for dim, stride in zip(tensor.shape, tensor.stride()))
    return start, start + extent * size


def _aliases(state: Mapping[str, Any]) -> set[str]:
    """Names to drop from a state dict so that each tied group keeps one name.

    A group can only be saved once when its tensors are the same view of the whole shared memory;
    anything else (a slice of another tensor) is refused.
    """
    dropped: set[str] = set()
    for group in shared_tensors(state):
        first = state[group[0]]
        whole = first.untyped_storage().nbytes() == first.numel() * first.element_size()
        same = all(_same_view(first, state[name]) for name in group[1:])
        if not (whole and same):
            raise ValidationError(
                f"tensors {group} share memory but are different views of it; burnpack cannot keep one of them "
                "for all: .clone() the ones that should be separate"
            )
        dropped.update(group[1:])
    return dropped


def _same_view(a: Any, b: Any) -> bool:
    return (a.dtype, a.shape, a.stride(), a.storage_offset()) == (b.dtype, b.shape, b.stride(), b.storage_offset())


def _writer_tensors(tensors: Mapping[str, Any]) -> list[Tensor]:
    out = []
    for name, tensor in tensors.items():
        if type(name) is not str:
            raise ValidationError(f"tensor names must be str, got {name!r}")
        out.append(Tensor.from_numpy(name, tensor))  # any layout or device; bf16 through its bits
    return out
