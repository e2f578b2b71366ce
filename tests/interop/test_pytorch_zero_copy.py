"""Zip checkpoints: stored storages are zero-copy views of the mapped file, still CRC-checked."""

from __future__ import annotations

import mmap
import zipfile

import numpy as np
import pytest

from burnpack.interop.pytorch import read_pytorch
from burnpack.errors import PyTorchReadError
from tests.interop.test_pytorch_reader import f32, storage_ref, tensor, write_zip

VALUES = [1.0, 2.0, 3.0, 4.0]


def checkpoint(path):
    root = {"w": tensor(storage_ref("0", "FloatStorage", 4), 0, (2, 2), (2, 1))}
    return write_zip(path, root, {"0": f32(VALUES)})


def owner(array: np.ndarray) -> object:
    """What finally holds the memory: follow ``.base`` (arrays, as_strided's wrapper) and
    memoryviews' ``.obj``."""
    base: object = array
    while True:
        if isinstance(base, memoryview):
            base = base.obj
        elif getattr(base, "base", None) is not None:
            base = base.base
        else:
            return base


def test_stored_storage_is_a_view_of_the_mapped_file(tmp_path):
    w = read_pytorch(checkpoint(tmp_path / "c.pt"))["w"]
    assert w.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert not w.flags.owndata and not w.flags.writeable
    assert isinstance(owner(w), mmap.mmap)


def test_corrupted_stored_storage_fails_its_crc_check(tmp_path):
    path = checkpoint(tmp_path / "c.pt")
    data = bytearray(path.read_bytes())
    at = bytes(data).find(f32(VALUES))
    data[at + 5] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(PyTorchReadError, match="Bad CRC-32"):
        read_pytorch(path)


def test_compressed_storages_are_still_read(tmp_path):
    path = tmp_path / "c.pt"
    from tests.interop.test_pytorch_reader import torch_pickle

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", torch_pickle({"w": tensor(storage_ref("0", "FloatStorage", 4), 0, (4,), (1,))}))
        archive.writestr("archive/data/0", f32(VALUES))
    assert read_pytorch(path)["w"].tolist() == VALUES
