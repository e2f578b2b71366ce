"""Tensors made in ``Bands``: a band of rows at a time into buffers the writer lends, so a computed
tensor (a transpose, a concatenation) is never whole while it is written; into a file, one band is
written from a second thread while the next is made. Every output gives the same bytes."""

from __future__ import annotations

import ctypes
import errno
import io
import os
import threading

import numpy as np
import pytest

import burnpack
from burnpack import DType, Tensor, ValidationError, Writer
from burnpack.core import tensor as tensor_module
from burnpack.core.tensor import Bands
from tests.conftest import peak_bytes

ROWS, COLUMNS = 200, 300  # 234 KiB of float32: above the size the writer batches in memory
SOURCE = np.arange(ROWS * COLUMNS, dtype=np.float32).reshape(COLUMNS, ROWS)


def turned(lent: list[np.ndarray] | None = None, fail_at: int | None = None) -> Bands:
    """``SOURCE.T`` made a band at a time; ``lent`` collects every array a band is made into."""

    def begin():
        def fill(out, row):
            if row == fail_at:
                raise ValueError("the source went away")
            if lent is not None:
                lent.append(out)
            out[...] = SOURCE[:, row : row + len(out)].T

        return fill

    return Bands((ROWS, COLUMNS), np.float32, begin)


def span(array: np.ndarray) -> tuple[int, int]:
    """Where a contiguous array's bytes are: its first address and one past its last."""
    start = array.__array_interface__["data"][0]
    return start, start + array.nbytes


def tensor(bands: Bands, name: str = "t") -> Tensor:
    return Tensor.deferred(name, DType.F32, bands.shape, bands.nbytes, bands)


@pytest.fixture
def small_bands(monkeypatch):
    """Bands of 16 rows (of 1,200 bytes): many bands, and a last one cut short."""
    monkeypatch.setattr(tensor_module, "BAND", 16 * COLUMNS * 4)


def expected() -> bytes:
    return burnpack.save_bytes({"t": np.ascontiguousarray(SOURCE.T)})


def test_every_output_of_a_bands_tensor_gives_the_whole_arrays_bytes(tmp_path, small_bands):
    writer = Writer([tensor(turned())])
    stream = io.BytesIO()
    writer.write_stream(stream)  # not a file: band by band in one buffer
    buffer = bytearray(writer.size())
    writer.write_into(buffer)
    writer.write(tmp_path / "t.bpk")  # a file: band by band from a second thread
    assert (tmp_path / "t.bpk").read_bytes() == stream.getvalue() == bytes(buffer) == writer.to_bytes() == expected()
    np.testing.assert_array_equal(tensor(turned()).numpy(), SOURCE.T)  # read whole: every band into one array


def test_bands_hold_at_most_a_third_of_the_tensor_and_a_band_of_rows():
    assert tensor_module.HELD == 3
    assert Bands((10, 3), np.float32, lambda: None).band_rows == 4  # the three a writer holds: 12 rows at most
    assert Bands((1, 3), np.float32, lambda: None).band_rows == 1
    assert Bands((1 << 22, 2), np.float32, lambda: None).band_rows == tensor_module.BAND // 8
    assert Bands((4, 1 << 30), np.uint8, lambda: None).band_rows == 1  # a row longer than a band: one row


def test_a_file_gets_three_buffers_lent_and_other_outputs_one(tmp_path, small_bands):
    to_file: list[np.ndarray] = []
    Writer([tensor(turned(to_file))]).write(tmp_path / "t.bpk")
    to_stream: list[np.ndarray] = []
    Writer([tensor(turned(to_stream))]).write_stream(io.BytesIO())
    assert len(to_file) == len(to_stream) == -(-ROWS // 16)
    assert {span(out)[0] for out in to_file} == {span(out)[0] for out in to_file[:3]}
    assert len({span(out)[0] for out in to_file[:3]}) == 3
    assert len({span(out)[0] for out in to_stream}) == 1
    assert max(out.nbytes for out in to_file + to_stream) == 16 * COLUMNS * 4


def test_writing_a_bands_tensor_never_holds_the_whole_tensor(tmp_path, monkeypatch):
    monkeypatch.setattr(tensor_module, "BAND", 64 << 10)
    big = Bands((1 << 12, 1 << 10), np.float32, lambda: lambda out, row: out.fill(row))  # 16 MiB, made from nothing
    writer = Writer([tensor(big)])
    assert peak_bytes(lambda: writer.write(tmp_path / "big.bpk")) < 4 * (64 << 10)  # three bands
    buffer = bytearray(writer.size())
    assert peak_bytes(lambda: writer.write_into(buffer)) < 2 * (64 << 10)  # one band


def test_a_band_is_never_made_into_the_buffer_being_written(tmp_path, small_bands, monkeypatch):
    """The second thread writes slowly: the bands made meanwhile go into the other buffers."""
    writing: list[tuple[int, int]] = []
    overlaps: list[int] = []
    real_pwrite = os.pwrite

    def slow_pwrite(fd, data, position):
        low, high = span(np.frombuffer(data, np.uint8))
        writing.append((low, high))
        threading.Event().wait(0.002)
        try:
            return real_pwrite(fd, data, position)
        finally:
            writing.remove((low, high))

    def begin():
        def fill(out, row):
            low, high = span(out)
            overlaps.extend(1 for a, b in list(writing) if a < high and low < b)
            out[...] = SOURCE[:, row : row + len(out)].T

        return fill

    monkeypatch.setattr(os, "pwrite", slow_pwrite)
    Writer([tensor(Bands((ROWS, COLUMNS), np.float32, begin))]).write(tmp_path / "t.bpk")
    assert overlaps == []
    assert (tmp_path / "t.bpk").read_bytes() == expected()


def test_bands_are_written_64_kib_at_a_time(tmp_path, monkeypatch):
    sizes: list[int] = []
    real_pwrite = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda fd, data, at: sizes.append(len(data)) or real_pwrite(fd, data, at))
    Writer([tensor(turned())]).write(tmp_path / "t.bpk")
    assert max(sizes) == 64 << 10 and sum(sizes) == SOURCE.nbytes
    assert (tmp_path / "t.bpk").read_bytes() == expected()


def test_a_failing_band_names_its_tensor_and_leaves_no_file_and_no_thread(tmp_path, small_bands):
    threads = threading.active_count()
    with pytest.raises(burnpack.IoError, match="tensor 't': the source went away"):
        Writer([tensor(turned(fail_at=32))]).write_atomic(tmp_path / "t.bpk")
    assert os.listdir(tmp_path) == [] and threading.active_count() == threads


def test_a_failing_write_is_raised_and_leaves_no_file_and_no_thread(tmp_path, small_bands, monkeypatch):
    def full(fd, data, position):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    threads = threading.active_count()
    with pytest.raises(burnpack.IoError, match="No space left on device"):
        Writer([tensor(turned())]).write(tmp_path / "t.bpk")
    assert os.listdir(tmp_path) == [] and threading.active_count() == threads


@pytest.fixture
def claims(monkeypatch):
    """Every range the writer claims disk blocks for, as (offset, length); the claims still made."""
    from burnpack.core import atomic

    made: list[tuple[int, int]] = []
    real = atomic.preallocate

    def record(fd, offset, length):
        made.append((offset, length))
        real(fd, offset, length)

    monkeypatch.setattr(burnpack.core.writer, "preallocate", record)
    return made


def test_a_bands_tensors_blocks_are_claimed_before_its_bands_are_written(tmp_path, claims):
    writer = Writer([Tensor.from_numpy("a", np.ones(3, np.float32)), tensor(turned(), "t")])
    writer.write(tmp_path / "t.bpk")
    assert claims == [(writer.size() - SOURCE.nbytes, SOURCE.nbytes)]  # the last tensor, band-made, only
    assert burnpack.load(tmp_path / "t.bpk")["t"].numpy().tobytes() == np.ascontiguousarray(SOURCE.T).tobytes()


def test_a_disk_without_room_for_a_bands_tensor_fails_before_its_first_band(tmp_path, monkeypatch):
    from burnpack.core import atomic

    def no_room(fd, mode, offset, length):
        ctypes.set_errno(errno.ENOSPC)
        return -1

    lent: list[np.ndarray] = []
    monkeypatch.setattr(atomic, "_fallocate", no_room)
    with pytest.raises(burnpack.IoError, match="No space left on device"):
        Writer([tensor(turned(lent))]).write(tmp_path / "t.bpk")
    assert lent == [] and os.listdir(tmp_path) == []


def test_a_file_system_that_cannot_claim_blocks_gets_the_bands_written_as_they_come(tmp_path, monkeypatch, small_bands):
    from burnpack.core import atomic

    calls: list[int] = []

    def unsupported(fd, mode, offset, length):
        calls.append(offset)
        ctypes.set_errno(errno.EOPNOTSUPP)
        return -1

    monkeypatch.setattr(atomic, "_fallocate", unsupported)
    Writer([tensor(turned())]).write(tmp_path / "t.bpk")
    assert len(calls) == 1 and (tmp_path / "t.bpk").read_bytes() == expected()


def test_a_claim_interrupted_by_a_signal_is_made_again(tmp_path, monkeypatch):
    from burnpack.core import atomic

    calls: list[int] = []
    real = atomic._fallocate

    def interrupted_once(fd, mode, offset, length):
        calls.append(offset)
        if len(calls) == 1:
            ctypes.set_errno(errno.EINTR)
            return -1
        return real(fd, mode, offset, length)

    monkeypatch.setattr(atomic, "_fallocate", interrupted_once)
    Writer([tensor(turned())]).write(tmp_path / "t.bpk")
    assert len(calls) == 2 and calls[0] == calls[1] and (tmp_path / "t.bpk").read_bytes() == expected()


def test_a_bands_tensor_keeps_its_bands_when_renamed_or_reshaped():
    made = tensor(turned())
    assert made.replace(name="u").bands is made.bands
    assert made.replace(shape=(COLUMNS, ROWS)).bands is made.bands
    assert "deferred" in repr(made)


def test_bands_that_make_another_byte_count_are_refused():
    with pytest.raises(ValidationError, match=r"tensor 't': byte_len 4 but its Bands\(\[200, 300\], float32"):
        Tensor.deferred("t", DType.F32, (1,), 4, turned())
    with pytest.raises(ValidationError, match="at least one non-negative int dimension"):
        Bands((), np.float32, lambda: None)
    with pytest.raises(AttributeError, match="immutable"):
        turned().shape = (1, 1)  # type: ignore[misc]

