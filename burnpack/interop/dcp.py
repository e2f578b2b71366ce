"""``torch.distributed.checkpoint`` (DCP) folders, read and written through torch's own DCP code.

``read_dcp`` lists the tensors from the checkpoint's metadata and loads each one on its own
(``dcp.load`` of a one-entry state dict, which reassembles FSDP/DDP shards into the full tensor),
so converting to ``.bpk`` holds one tensor at a time. Nested state dicts become DCP's flattened
dotted names (``model.fc.weight``, ``optim.state.0.exp_avg``); non-tensor entries are skipped.
``read_dcp_object`` gives the whole nested state (for training checkpoints); ``write_dcp`` and
``write_dcp_state`` save tensors or a whole training state so that ``dcp.load`` restores them. All of it runs in one process, no process group.

DCP's ``.metadata`` file is a pickle, read by torch: convert only checkpoints you trust.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._generated.types import BoolStore
from ..dtypes import numpy_dtype
from ..frameworks import import_torch, numpy_to_torch, torch_to_numpy
from ..sidefile import read_side_file
from ._io import ConversionError, OutputExistsError, entry_from_array
from .tensors import Entry, TensorSet

__all__ = ["is_dcp", "read_dcp", "read_dcp_object", "write_dcp", "write_dcp_state"]


def is_dcp(path: Any) -> bool:
    """A folder holding DCP's ``.metadata`` file."""
    return isinstance(path, (str, os.PathLike)) and (Path(path) / ".metadata").is_file()


@contextlib.contextmanager
def _quiet_dcp() -> Iterator[Any]:
    """torch's DCP module, with its warnings about running without a process group silenced."""
    import_torch()
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield dcp


def _reading(path: Path, what: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except ConversionError:
        raise
    except Exception as exc:  # torch's reader raises CheckpointException, pickle and OS errors
        raise ConversionError(f"{path}: cannot {what}: {type(exc).__name__}: {exc}") from exc


DCP_METADATA_MAX_BYTES = 256 << 20
"""Default cap on a DCP ``.metadata`` file: it lists tensors and chunks, far less for any real model."""


def read_dcp(
    path: str | os.PathLike[str],
    *,
    bool_store: str | BoolStore = "U8",
    top_level_key: str | None = None,
    max_metadata_bytes: int = DCP_METADATA_MAX_BYTES,
) -> TensorSet:
    """The tensors of a DCP checkpoint, each loaded only when asked for (``top_level_key``
    takes the tensors under ``"<key>."``, with that prefix removed). ``.metadata`` is read as a
    side file: a regular file of at most ``max_metadata_bytes`` (256 MiB by default)."""
    folder = Path(path)
    if not is_dcp(folder):
        raise ConversionError(f"{folder}: not a torch.distributed.checkpoint folder (no .metadata file)")
    raw = read_side_file(folder / ".metadata", max_bytes=max_metadata_bytes)
    with _quiet_dcp():
        from torch.distributed.checkpoint.metadata import TensorStorageMetadata

        metadata = _reading(folder, "read its metadata", lambda: pickle.loads(raw))  # as torch's FileSystemReader does
    prefix = f"{top_level_key}." if top_level_key is not None else ""
    entries = []
    skipped = 0
    for fqn, item in metadata.state_dict_metadata.items():
        if not isinstance(item, TensorStorageMetadata):
            skipped += 1
            continue
        if not fqn.startswith(prefix):
            continue
        shape = tuple(int(d) for d in item.size)
        torch_dtype = item.properties.dtype
        prototype = entry_from_array(fqn, torch_to_numpy(_empty(torch_dtype)), bool_store)
        entries.append(Entry(fqn[len(prefix) :], prototype.dtype, shape, _loader(folder, fqn, shape, torch_dtype, bool_store)))
    if prefix and not entries:
        raise ConversionError(f"{folder}: no tensors under {top_level_key!r}")
    return TensorSet(entries, {}, format="dcp", top_level_key=top_level_key)


def _empty(torch_dtype: Any, shape: tuple[int, ...] = (0,)) -> Any:
    import torch

    return torch.empty(shape, dtype=torch_dtype)


def _loader(folder: Path, fqn: str, shape: tuple[int, ...], torch_dtype: Any, bool_store: str | BoolStore) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        state = {fqn: _empty(torch_dtype, shape)}
        with _quiet_dcp() as dcp:
            _reading(folder, f"load {fqn!r}", lambda: dcp.load(state, checkpoint_id=folder, no_dist=True))
        return entry_from_array(fqn, torch_to_numpy(state[fqn]), bool_store).numpy()

    return load


def read_dcp_object(path: str | os.PathLike[str]) -> Any:
    """The whole nested state of a DCP checkpoint, as :func:`~burnpack.interop.pytorch.read_pytorch_object`
    returns a ``torch.save`` file's (torch's own ``dcp_to_torch_save``, then the same reader)."""
    from .pytorch import read_pytorch_object

    folder = Path(path)
    with _quiet_dcp(), tempfile.TemporaryDirectory(prefix="burnpack-dcp-") as scratch:
        from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

        target = Path(scratch) / "state.pt"
        _reading(folder, "load it", lambda: dcp_to_torch_save(folder, target))
        state = read_pytorch_object(target)
        return _owned(state)


def _owned(value: Any) -> Any:
    """Arrays copied out of the scratch file's mapping, so the file can go."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return type(value)((k, _owned(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_owned(v) for v in value)
    return value


def write_dcp(tset: TensorSet, folder: Path, *, overwrite: bool = False, progress: Callable[[int], None] = lambda n: None) -> Path:
    """A DCP checkpoint of the tensors (flat dotted names) that ``dcp.load`` restores."""
    state = {}
    for entry in tset.entries:
        if entry.dtype.is_quantized:
            raise ConversionError(f"tensor {entry.name!r}: a DCP checkpoint cannot hold {entry.dtype!r}")
        array = entry.numpy()
        if array.dtype != numpy_dtype(entry.dtype):
            array = array.astype(numpy_dtype(entry.dtype))
        state[entry.name] = numpy_to_torch(array, entry.dtype, name=entry.name, copy=False)
        progress(array.nbytes)
    return write_dcp_state(state, folder, overwrite=overwrite)


def write_dcp_state(state: dict[str, Any], folder: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """``dcp.save`` of a (nested) state dict of torch tensors, written to a scratch sibling folder
    and renamed into place, so a failure leaves no half-written checkpoint."""
    folder = Path(folder)
    if folder.exists() and not overwrite:
        raise OutputExistsError(folder)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        with _quiet_dcp() as dcp:
            dcp.save(state, checkpoint_id=scratch, no_dist=True)
        if folder.exists():
            shutil.rmtree(folder)
        os.rename(scratch, folder)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return folder
