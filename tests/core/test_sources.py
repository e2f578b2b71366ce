"""Where a pack can come from: paths, bytes, memoryviews, file objects, and URLs through fsspec
(see test_remote.py)."""

from __future__ import annotations

import io
import os
import sys

import numpy as np
import pytest

import burnpack
from burnpack.core.source import FileSource, coalesce, prefault

TENSORS = {f"t{i:02d}": np.full((64, 64), i, dtype=np.float32) for i in range(24)}  # 16 KiB each
DATA = burnpack.save_bytes(TENSORS, metadata={"producer": "test"})


def _same(pack: burnpack.Pack) -> None:
    assert pack.names == sorted(TENSORS) and pack.metadata == {"producer": "test"}
    arrays = pack.numpy()
    for name, array in TENSORS.items():
        assert np.array_equal(arrays[name], array)
        assert np.array_equal(pack[name].numpy(), array)


# -- in-process sources ------------------------------------------------------------------------
@pytest.mark.parametrize("make", [bytes, bytearray, memoryview, io.BytesIO], ids=lambda f: f.__name__)
def test_bytes_like_and_file_objects_read_the_same(make):
    _same(burnpack.load(make(DATA)))


def test_a_file_object_of_a_regular_file_is_memory_mapped(tmp_path):
    (tmp_path / "p.bpk").write_bytes(DATA)
    with open(tmp_path / "p.bpk", "rb") as file, burnpack.load(file) as pack:
        assert isinstance(pack._source, FileSource)
        _same(pack)


def test_a_bytesio_bulk_read_is_one_read():
    class Counting(io.BytesIO):
        reads = 0

        def read(self, n: int = -1) -> bytes:
            Counting.reads += 1
            return super().read(n)

    pack = burnpack.load(Counting(DATA))
    Counting.reads = 0
    pack.numpy()
    assert Counting.reads == 1


@pytest.mark.parametrize("kind", ["file", "bytesio"])
def test_a_file_object_is_read_from_its_current_position(tmp_path, kind):
    (tmp_path / "p.bpk").write_bytes(b"a header of another format" + DATA)
    with open(tmp_path / "p.bpk", "rb") if kind == "file" else io.BytesIO(b"a header of another format" + DATA) as file:
        file.seek(len(b"a header of another format"))
        with burnpack.load(file) as pack:
            assert pack.file_size == len(DATA)
            _same(pack)


@pytest.mark.parametrize("module", ["gzip", "bz2", "lzma"])
def test_a_compressed_stream_is_refused_with_advice_not_mapped_as_its_compressed_bytes(tmp_path, module):
    import importlib

    compressed = importlib.import_module(module)
    path = tmp_path / f"p.bpk.{module}"
    with compressed.open(path, "wb") as out:
        out.write(DATA)
    with compressed.open(path, "rb") as stream:
        with pytest.raises(burnpack.IoError, match=rf"a {module}\.\w+ is a compressed stream.*load\(stream.read\(\)\)"):
            burnpack.load(stream)
        _same(burnpack.load(stream.read()))


def test_a_text_file_object_is_refused(tmp_path):
    (tmp_path / "p.bpk").write_bytes(DATA)
    with pytest.raises(TypeError, match="binary mode"):
        burnpack.load(io.StringIO("NRUB" + "x" * 20))


class _Overanswering(io.BytesIO):
    """A file object whose ``read(n)`` answers more than ``n`` bytes (``extra`` of them), and that
    records what it was asked."""

    def __init__(self, data: bytes, extra: int, claimed: int | None = None) -> None:
        super().__init__(data)
        self.extra, self.claimed, self.asked = extra, claimed, []

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == io.SEEK_END and self.claimed is not None:
            return super().seek(0, io.SEEK_END) and self.claimed
        return super().seek(offset, whence)

    def read(self, n: int = -1) -> bytes:
        self.asked.append(n)
        return super().read(n) + b"\0" * self.extra


@pytest.mark.parametrize("extra", [1, 64 << 20], ids=["one byte", "64 MiB"])
def test_a_file_object_answering_more_than_asked_is_an_io_error(extra):
    with pytest.raises(burnpack.IoError, match=r"the file object's read\(\d+\) returned \d+ bytes, more than asked"):
        burnpack.load(_Overanswering(DATA, extra))


def test_a_file_object_claiming_a_huge_size_is_read_a_bounded_piece_at_a_time():
    """Its size comes from seek(0, 2), a claim: a range is asked for 64 MiB at a time, so what is
    held is what the object really answers (here: its bytes, far fewer than claimed)."""
    from burnpack.core.source import FILE_OBJECT_PIECE, FileObjectSource

    file = _Overanswering(DATA, 0, claimed=1 << 40)
    source = FileObjectSource(file)
    assert source.size == 1 << 40 and source.read(0, 1 << 34) == DATA
    assert max(file.asked) <= FILE_OBJECT_PIECE


def test_a_side_file_stream_answering_more_than_asked_is_an_io_error():
    from burnpack.core.sidefile import read_capped

    with pytest.raises(burnpack.IoError, match=r"read\(11\) returned 4098 bytes, more than asked"):
        read_capped(_Overanswering(b"{}", 4096), max_bytes=10, where="stdin")


def test_a_truncated_file_object_fails_like_a_truncated_file():
    with pytest.raises(burnpack.ValidationError, match="truncated"):
        burnpack.load(io.BytesIO(DATA[:-100]))


def test_storage_options_without_a_url_is_an_error():
    with pytest.raises(ValueError, match="storage_options"):
        burnpack.load(DATA, storage_options={"anon": True})


def test_coalesce_groups_neighbours_within_gap_and_block():
    ranges = [(0, 10), (300, 10), (5000, 10), (20, 10)]
    assert coalesce(ranges, max_gap=300, max_block=1 << 20) == [(0, 310, [0, 3, 1]), (5000, 5010, [2])]
    assert coalesce(ranges, max_gap=300, max_block=100) == [(0, 30, [0, 3]), (300, 310, [1]), (5000, 5010, [2])]


def _linux_at_least(major: int, minor: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    release = os.uname().release.split(".")
    return (int(release[0]), int(release[1].split("-")[0])) >= (major, minor)


@pytest.mark.skipif(not _linux_at_least(5, 14), reason="MADV_POPULATE_READ came with Linux 5.14")
def test_prefault_maps_every_page_of_a_mapped_array_before_it_is_read(tmp_path):
    """A transpose reads its source across the rows: the pages are mapped in one call, not a fault at a time."""
    import mmap

    (tmp_path / "raw").write_bytes(bytes(8 << 20))

    def resident_kib(address: int) -> int:
        """The Rss of the mapping holding ``address``, from /proc/self/smaps."""
        with open("/proc/self/smaps") as smaps:
            inside = False
            for line in smaps:
                head = line.split()[0]
                if "-" in head and not head.endswith(":"):
                    low, high = (int(x, 16) for x in head.split("-"))
                    inside = low <= address < high
                elif inside and head == "Rss:":
                    return int(line.split()[1])
        raise AssertionError("no mapping holds the array")

    with open(tmp_path / "raw", "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapping:
        array = np.frombuffer(mapping, np.uint8)[100:]  # from inside the first page
        before = resident_kib(array.ctypes.data)
        prefault(array)
        after = resident_kib(array.ctypes.data)
        del array
    assert before < 1024 and after == 8 << 10
