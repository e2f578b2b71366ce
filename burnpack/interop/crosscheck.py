"""Reading a file with its format's own library instead of burnpack's reader.

``burnpack diff x.pt x.bpk`` after ``burnpack convert x.pt x.bpk`` would compare burnpack's
reading of ``x.pt`` with what burnpack wrote from that same reading: a tensor the reader missed
would be missing on both sides, and the diff would say "identical". So ``diff`` reads the file
with a library that shares no code with burnpack's reader — ``safetensors``
(numpy, or torch for BF16), ``numpy.load`` for ``.npz`` members, ``torch.load(weights_only=True)``
when torch is installed — so that such a bug shows up as a difference. Each reader here is a
format's ``crosscheck`` in the format table; a format without one is read by burnpack.
"""

from __future__ import annotations

import os
import pickle
import zipfile
import zlib
from typing import Any

import numpy as np

from ..codec._generated.metadata import BoolStore
from ..errors import ConversionError, cause
from ..core.frameworks import torch_available
from ._io import entry_from_array
from .formats import _npz_tensor_set
from .tensors import TensorSet

__all__ = ["with_numpy_load", "with_safetensors", "with_torch_load"]


def with_numpy_load(path: str | os.PathLike[str], bool_store: str | BoolStore = BoolStore.U8) -> tuple[TensorSet, str]:
    """A ``.npz`` file's tensors as ``numpy.load`` reads them (the npz format's ``crosscheck``)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise _refused(path, "numpy.load", exc) from None
    return _npz_tensor_set(path, arrays, bool_store), "numpy.load"


def with_torch_load(path: str | os.PathLike[str], bool_store: str | BoolStore = BoolStore.U8) -> tuple[TensorSet, str] | None:
    """A ``torch.save`` file's tensors as ``torch.load(weights_only=True)`` reads them (the pytorch
    format's ``crosscheck``); None without torch."""
    if not torch_available():
        return None
    import torch

    from .torch_live import read_torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _refused(path, "torch.load", exc) from None
    return read_torch(state, bool_store=bool_store), "torch.load"


def _refused(path: str | os.PathLike[str], library: str, exc: Exception) -> ConversionError:
    """The error for a file ``library`` cannot read, with what the library says as an excerpt (it
    may quote the file: zipfile's member names and header bytes, a JSON parser's strings); it names
    ``path`` as ``blame`` does (the command line shows it once, before the kind)."""
    error = ConversionError(f"{library} cannot read it: {cause(exc)}")
    error.burnpack_path = os.fspath(path)  # type: ignore[attr-defined]
    return error


def with_safetensors(path: str | os.PathLike[str], bool_store: str | BoolStore = BoolStore.U8) -> tuple[TensorSet, str] | None:
    """A ``.safetensors`` file's tensors and metadata as the safetensors library reads them (the
    safetensors format's ``crosscheck``): with numpy, or torch for BF16; None without the library
    (the ``crosscheck`` extra), or without torch for a BF16 file."""
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:  # the crosscheck extra is not installed
        return None

    try:
        with safe_open(os.fspath(path), framework="np") as handle:
            metadata = dict(handle.metadata() or {})
            names = list(handle.keys())
            try:
                arrays: dict[str, Any] = {name: handle.get_tensor(name) for name in names}
                library = "safetensors.numpy"
            except (TypeError, ValueError):  # numpy has no BF16: torch reads it, when installed
                if not torch_available():
                    return None
                from safetensors.torch import load_file

                from ..core.frameworks import torch_to_numpy

                arrays = {name: torch_to_numpy(t) for name, t in load_file(os.fspath(path)).items()}
                library = "safetensors.torch"
    except SafetensorError as exc:
        raise _refused(path, "safetensors", exc) from None
    entries = [entry_from_array(name, np.asarray(arrays[name]), bool_store) for name in names]
    return TensorSet(entries, metadata, format="safetensors"), library
