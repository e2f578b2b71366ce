"""Resource bounds of the PyTorch and npz readers on hostile files (docs/bounds.md).

Every test bounds memory with tracemalloc or checks the refusal; none times anything.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from burnpack.interop.converter import convert
from burnpack.interop.formats import read_npz
from burnpack.errors import ConversionError, PyTorchReadError
from burnpack.interop.limits import DEFAULT_LIMITS
from burnpack.interop.pytorch import read_pytorch
from tests.conftest import peak_bytes
from tests.interop.test_pytorch_reader import f32, storage_ref, tensor, torch_pickle, write_zip

MIB = 1024 * 1024


def _raises_within(error: type[Exception], match: str, func, limit: int = 8 * MIB) -> None:
    def call() -> None:
        with pytest.raises(error, match=match):
            func()

    assert peak_bytes(call) < limit


def _pickle_zip(path: Path, pickle: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickle)
    return path


# -- pickle opcodes ---------------------------------------------------------------------------------
def test_a_memo_index_beyond_the_pickle_is_refused_before_the_memo_grows(tmp_path):
    # EMPTY_DICT, LONG_BINPUT 0x7fffffff, STOP: the C unpickler would size its memo to 2**31 slots.
    path = _pickle_zip(tmp_path / "t.pt", b"\x80\x02}r\xff\xff\xff\x7f.")
    _raises_within(PyTorchReadError, "memo index", lambda: read_pytorch(path))


def test_a_pickle_building_an_object_per_byte_is_refused_before_unpickling(tmp_path):
    path = _pickle_zip(tmp_path / "t.pt", b"\x80\x02" + b"]" * 3_000_000 + b".")  # 3M empty lists
    _raises_within(PyTorchReadError, "objects", lambda: read_pytorch(path), limit=16 * MIB)


@pytest.mark.parametrize("opcode", [b"\x82\x01", b"\x83\x01\x00", b"\x84\x01\x00\x00\x00"])
def test_extension_opcodes_are_refused_whatever_copyreg_holds(tmp_path, opcode):
    path = _pickle_zip(tmp_path / "t.pt", b"\x80\x02" + opcode + b".")
    with pytest.raises(PyTorchReadError, match="EXT"):
        read_pytorch(path)


# -- compressed records -----------------------------------------------------------------------------
def _deflated_zeros(path: Path, name: str, size: int, pickle: bytes) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("archive/data.pkl", pickle)
        with archive.open(name, "w") as member:
            chunk = bytes(MIB)
            for _ in range(size // MIB):
                member.write(chunk)
    return path


def test_a_deflated_storage_beyond_the_inflation_limit_is_refused_before_inflating(tmp_path):
    numel = (DEFAULT_LIMITS.max_inflate_bytes + 16 * MIB) // 4
    root = {"w": tensor(storage_ref("0", "FloatStorage", numel), 0, (numel,), (1,))}
    path = _deflated_zeros(tmp_path / "t.pt", "archive/data/0", numel * 4, torch_pickle(root))
    assert path.stat().st_size < 1 * MIB
    _raises_within(PyTorchReadError, "inflation limit", lambda: read_pytorch(path))


def test_a_storage_whose_record_size_disagrees_with_its_pickle_is_refused_before_reading(tmp_path):
    root = {"w": tensor(storage_ref("0", "FloatStorage", 1 << 28), 0, (1,), (1,))}
    path = write_zip(tmp_path / "t.pt", root, {"0": f32([1])})
    _raises_within(PyTorchReadError, "holds 4 bytes", lambda: read_pytorch(path))


def test_a_record_declaring_more_than_deflate_can_expand_is_refused(tmp_path):
    path = _pickle_zip(tmp_path / "t.pt", torch_pickle({}))
    raw = bytearray(path.read_bytes())
    # Rewrite the central directory's uncompressed size of data.pkl (stored) to 1 GiB.
    central = raw.rindex(b"PK\x01\x02")
    raw[central + 24 : central + 28] = (1 << 30).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    _raises_within(PyTorchReadError, "declares", lambda: read_pytorch(path))


def test_a_stored_record_declaring_more_bytes_than_the_archive_is_refused_before_reading(tmp_path):
    path = _pickle_zip(tmp_path / "t.pt", torch_pickle({}))
    raw = bytearray(path.read_bytes())
    central = raw.rindex(b"PK\x01\x02")  # data.pkl (stored): 3 GB compressed and uncompressed
    raw[central + 20 : central + 28] = (3 << 30).to_bytes(4, "little") * 2
    path.write_bytes(bytes(raw))
    _raises_within(PyTorchReadError, "more than the archive", lambda: read_pytorch(path))


# -- tar ----------------------------------------------------------------------------------------------
def test_a_sparse_tar_member_is_refused(tmp_path):
    sparse_map = b"1\n0\n1\n".ljust(512, b"\0")  # one region: offset 0, 1 byte
    info = tarfile.TarInfo("pickle")
    info.size = len(sparse_map) + 512
    info.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": "pickle",
        "GNU.sparse.realsize": str(1 << 34),
    }
    path = tmp_path / "t.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(sparse_map + b"\x80".ljust(512, b"\0")))
    _raises_within(PyTorchReadError, "sparse", lambda: read_pytorch(path))


# -- views that repeat elements -----------------------------------------------------------------------
def test_a_stride_zero_view_beyond_the_expansion_limit_is_refused_without_copying(tmp_path):
    side = 1 << 14  # 2**28 float32 elements: 1 GiB from one stored element
    root = {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (side, side), (0, 0))}
    path = write_zip(tmp_path / "t.pt", root, {"0": f32([1])})
    assert side * side * 4 > DEFAULT_LIMITS.max_view_expansion
    _raises_within(PyTorchReadError, "expansion limit", lambda: read_pytorch(path))


def test_a_small_stride_zero_view_is_converted(tmp_path):
    root = {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (2, 3), (0, 0))}
    path = write_zip(tmp_path / "t.pt", root, {"0": f32([7])})
    assert read_pytorch(path)["w"].tolist() == [[7.0] * 3] * 2


# -- npz ----------------------------------------------------------------------------------------------
def _npz(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, raw in members.items():
            archive.writestr(name, raw)
    return path


def _npy_header(text: str) -> bytes:
    """A version 1.0 ``.npy`` header holding ``text`` verbatim (padded as numpy pads)."""
    raw = text.encode("latin1")
    raw += b" " * (-(10 + len(raw) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(raw).to_bytes(2, "little") + raw


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def test_an_npz_bomb_is_refused_before_inflating(tmp_path):
    head = _npy(np.zeros(0, np.uint8))  # replaced below by a header announcing the zeros
    size = DEFAULT_LIMITS.max_inflate_bytes + 16 * MIB
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, np.uint8)) | {"shape": (size,)}
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, header)
    assert head
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("x.npy", "w") as member:
            member.write(stream.getvalue())
            for _ in range(size // MIB):
                member.write(bytes(MIB))
    assert path.stat().st_size < 1 * MIB
    _raises_within(ConversionError, "inflation limit", lambda: read_npz(path))


def test_an_npy_header_announcing_more_than_its_member_holds_is_refused_before_allocating(tmp_path):
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, np.float64)) | {"shape": (1 << 40,)}
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, header)
    path = _npz(tmp_path / "t.npz", {"x.npy": stream.getvalue() + bytes(8)})
    _raises_within(ConversionError, "declares", lambda: read_npz(path))


@pytest.mark.parametrize(
    "members, compression",
    [
        ({"x.npy": b"\x93NUMPY\x01\x00" + b"\xff\xfe"}, zipfile.ZIP_STORED),  # header length past the end
        ({"x.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}"}, zipfile.ZIP_STORED),  # header not a full dict
        ({"x.npy": b"\x93NUMPY\x01\x00\x04\x00\xff\xfe\xfd\n"}, zipfile.ZIP_STORED),  # header not text
        ({"x.npy": b"\x93NUMPY\x01\x00\x46\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }" + b" " * 13 + b"\n"}, zipfile.ZIP_STORED),
        ({"x.npy": b"\x93NUMPY\x07\x00"}, zipfile.ZIP_STORED),  # unknown version
        ({"x.txt": b"hello"}, zipfile.ZIP_STORED),  # not an array
        ({"x.npy": b"not numpy at all"}, zipfile.ZIP_DEFLATED),
        ({"x.npy": _npy(np.arange(4, dtype=np.float32))[:-3]}, zipfile.ZIP_DEFLATED),  # truncated data
        ({"x.npy": _npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': " + "[" * 3000 + "]" * 3000 + "}")}, zipfile.ZIP_STORED),
        ({"x.npy": _npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}")}, zipfile.ZIP_STORED),
        ({"x.npy": _npy_header("{'descr': 'V0', 'fortran_order': False, 'shape': (5,)}")}, zipfile.ZIP_STORED),
        ({"x.npy": _npy_header("{'descr': '<f4', b'fortran_order': False, 'shape': (1,)}")}, zipfile.ZIP_STORED),  # mixed key types
        # metadata text holding a code point past U+10FFFF (numpy's str() lets it through)
        ({"__metadata__.npy": _npy_header("{'descr': '<U1', 'fortran_order': False, 'shape': ()}") + (0x110000).to_bytes(4, "little")}, zipfile.ZIP_STORED),
    ],
)
def test_a_corrupt_npz_is_a_conversion_error_from_convert(tmp_path, members, compression):
    path = _npz(tmp_path / "t.npz", members, compression)
    with pytest.raises(ConversionError):
        convert(path, tmp_path / "out.bpk")


@pytest.mark.parametrize("damage", [slice(36, 44), slice(-22, -18), slice(30, 40), slice(-10, None)])
def test_a_damaged_zip_is_a_conversion_error_from_convert(tmp_path, damage):
    path = _npz(tmp_path / "t.npz", {"x.npy": _npy(np.arange(4, dtype=np.float32))}, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    raw[damage] = b"\xff" * len(raw[damage])
    path.write_bytes(bytes(raw))
    with pytest.raises(ConversionError):
        convert(path, tmp_path / "out.bpk")


def test_an_npz_still_round_trips_its_arrays(tmp_path):
    path = tmp_path / "ok.npz"
    np.savez_compressed(path, a=np.arange(6, dtype=np.int32).reshape(2, 3), b=np.asfortranarray(np.eye(2)))
    tensors = read_npz(path).numpy()
    assert tensors["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert tensors["b"].tolist() == [[1.0, 0.0], [0.0, 1.0]]
