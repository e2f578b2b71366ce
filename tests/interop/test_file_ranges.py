"""Tensors whose bytes are a range of a file: a writer writing to a file copies them in the kernel
(``os.copy_file_range``), every other output reads them, and the result is the same bytes."""

from __future__ import annotations

import errno
import io
import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

import burnpack
from burnpack import DType, FileRange, Tensor, TensorBytesSizeMismatch, ValidationError, Writer
from burnpack.interop import convert
from burnpack.interop.formats import burnpack_writer
from burnpack.interop.registry import read_tensors

pytestmark = pytest.mark.skipif(not hasattr(os, "copy_file_range"), reason="os.copy_file_range is Linux-only")

ROWS = 1 << 15  # 128 KiB float32 tensors: above the size the writer batches in memory
ARRAYS = {
    "embed.weight": np.arange(ROWS, dtype=np.float32),
    "layers.0.weight": np.full(ROWS, 2, np.float32),
    "layers.0.bias": np.ones(3, np.float32),  # small: read into the writer's batch
    "layers.1.weight": np.arange(ROWS, dtype=np.float16),
}
BIG = [n for n, a in ARRAYS.items() if a.nbytes >= 64 << 10]
SHARDS = {"model-00001-of-00002.safetensors": ["embed.weight", "layers.0.weight"],
          "model-00002-of-00002.safetensors": ["layers.0.bias", "layers.1.weight"]}  # fmt: skip


@pytest.fixture
def model(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for shard, names in SHARDS.items():
        save_file({n: ARRAYS[n] for n in names}, folder / shard)
    weight_map = {n: shard for shard, names in SHARDS.items() for n in names}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return folder


@pytest.fixture
def kernel_copies(monkeypatch):
    """Every ``os.copy_file_range`` call the writer makes, as (bytes asked, bytes copied)."""
    calls: list[tuple[int, int]] = []
    real = os.copy_file_range

    def counting(src, dst, count, offset_src=None, offset_dst=None):
        copied = real(src, dst, count, offset_src, offset_dst)
        calls.append((count, copied))
        return copied

    monkeypatch.setattr(os, "copy_file_range", counting)
    return calls


def _no_kernel_copy(monkeypatch, code=errno.ENOSYS):
    def unsupported(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "copy_file_range", unsupported)


def _expected_pack():
    return burnpack.save_bytes({n: ARRAYS[n] for names in SHARDS.values() for n in names}, metadata={})


def test_converting_a_sharded_folder_copies_the_tensor_bytes_in_the_kernel(tmp_path, model, kernel_copies):
    convert(model, tmp_path / "out.bpk", stamp=False)
    assert sum(copied for _, copied in kernel_copies) == sum(ARRAYS[n].nbytes for n in BIG)
    with burnpack.load(tmp_path / "out.bpk") as pack:
        for name, array in ARRAYS.items():
            assert np.array_equal(pack[name].numpy(), array)


def test_the_kernel_copy_writes_the_same_bytes_as_reading(tmp_path, model, kernel_copies):
    convert(model, tmp_path / "kernel.bpk", stamp=False)
    with read_tensors(model, "safetensors-shards") as tset:
        read = burnpack_writer(tset).to_bytes()  # an in-memory output reads the ranges
    assert (tmp_path / "kernel.bpk").read_bytes() == read == _expected_pack()


def test_an_unsupported_kernel_copy_falls_back_to_the_same_bytes(tmp_path, model, monkeypatch):
    _no_kernel_copy(monkeypatch, errno.EXDEV)
    convert(model, tmp_path / "out.bpk", stamp=False)
    assert (tmp_path / "out.bpk").read_bytes() == _expected_pack()


def test_in_memory_outputs_read_the_ranges(tmp_path, model, kernel_copies):
    with read_tensors(model, "safetensors-shards") as tset:
        writer = burnpack_writer(tset)
        stream = io.BytesIO()
        writer.write_stream(stream)
        buffer = bytearray(writer.size())
        writer.write_into(buffer)
        assert stream.getvalue() == writer.to_bytes() == bytes(buffer) == _expected_pack()
    assert kernel_copies == []


def test_an_adapter_that_changes_the_bytes_is_not_kernel_copied(tmp_path, model, kernel_copies):
    convert(model, tmp_path / "out.bpk", adapter="cast=f16", remap=[(r"^layers\.", "blocks.")])
    assert sum(copied for _, copied in kernel_copies) == ARRAYS["layers.1.weight"].nbytes  # already F16: unchanged
    with burnpack.load(tmp_path / "out.bpk") as pack:
        assert np.array_equal(pack["blocks.0.weight"].numpy(), ARRAYS["layers.0.weight"].astype(np.float16))
        assert np.array_equal(pack["blocks.1.weight"].numpy(), ARRAYS["layers.1.weight"])


def test_a_shard_truncated_after_planning_is_refused_and_nothing_is_written(tmp_path, model, kernel_copies):
    out = tmp_path / "out" / "model.bpk"
    out.parent.mkdir()
    with read_tensors(model, "safetensors-shards") as tset:
        writer = burnpack_writer(tset)
        writer.plan()
        shard = model / "model-00002-of-00002.safetensors"
        os.truncate(shard, shard.stat().st_size - 100)
        with pytest.raises(TensorBytesSizeMismatch, match=r"tensor 'layers\.1\.weight'.*expected 65536, got 65436"):
            writer.write_atomic(out)
        with pytest.raises(TensorBytesSizeMismatch, match="expected 65536, got 65436"):
            writer.to_bytes()
    assert os.listdir(out.parent) == []


def test_a_tensor_can_be_a_file_range(tmp_path, kernel_copies):
    data = np.arange(1 << 16, dtype=np.int32)
    (tmp_path / "raw").write_bytes(b"head" + data.tobytes())
    tensor = Tensor.deferred("t", DType.I32, data.shape, data.nbytes, FileRange(tmp_path / "raw", 4, data.nbytes))
    renamed = tensor.with_name("u")
    assert renamed.file_range == tensor.file_range and np.array_equal(renamed.numpy(), data)
    Writer([renamed]).write(tmp_path / "t.bpk")
    assert sum(copied for _, copied in kernel_copies) == data.nbytes
    assert (tmp_path / "t.bpk").read_bytes() == burnpack.save_bytes({"u": data})


def test_a_stream_keeps_its_position_after_a_kernel_copy(tmp_path, kernel_copies):
    data = np.arange(1 << 16, dtype=np.int32)
    (tmp_path / "raw").write_bytes(data.tobytes())
    writer = Writer([Tensor.deferred("t", DType.I32, data.shape, data.nbytes, FileRange(tmp_path / "raw", 0, data.nbytes))])
    with open(tmp_path / "out", "wb") as stream:
        stream.write(b"prefix")
        writer.write_stream(stream)
        assert stream.tell() == 6 + writer.size()
        stream.write(b"suffix")
    assert (tmp_path / "out").read_bytes() == b"prefix" + burnpack.save_bytes({"t": data}) + b"suffix"
    assert kernel_copies


def test_a_file_range_must_hold_the_declared_bytes(tmp_path):
    with pytest.raises(ValidationError, match="byte_len 8 but its FileRange"):
        Tensor.deferred("t", DType.F32, (2,), 8, FileRange(tmp_path / "raw", 0, 4))
    with pytest.raises(ValidationError, match="non-negative int"):
        FileRange(tmp_path / "raw", -1, 4)


def test_an_entry_whose_file_range_holds_other_than_its_bytes_is_refused(tmp_path):
    from burnpack.interop import Entry

    with pytest.raises(ValidationError, match=r"tensor 'w': 8 bytes, but its FileRange\(.*length=4\) holds 4"):
        Entry("w", DType.F32, (2,), lambda: np.zeros(2, np.float32), file_range=FileRange(tmp_path / "raw", 0, 4))


def test_a_closed_source_file_is_an_io_error(tmp_path, model):
    with read_tensors(model, "safetensors-shards") as tset:
        writer = burnpack_writer(tset)
    with pytest.raises(burnpack.IoError, match="tensor 'embed.weight'.*closed file"):
        writer.write(tmp_path / "out.bpk")
    assert not (tmp_path / "out.bpk").exists()


@pytest.fixture
def packed(tmp_path):
    path = tmp_path / "in.bpk"
    burnpack.save(ARRAYS, path)
    return path


def test_a_view_of_a_pack_opened_from_a_path_names_its_range_of_the_file(packed):
    with burnpack.load(packed) as pack:
        view = pack["embed.weight"]
        where = view.file_range
        assert (where.offset, where.length) == (pack.data_section_start + view.data_offsets[0], view.byte_len)
        assert os.pread(where.file.fileno(), where.length, where.offset) == view.tobytes()


def test_a_view_of_a_pack_in_memory_has_no_file_range(packed):
    with burnpack.load(packed.read_bytes()) as pack:
        assert pack["embed.weight"].file_range is None


def test_rewriting_an_open_packs_views_copies_them_in_the_kernel(tmp_path, packed, kernel_copies):
    with burnpack.load(packed) as pack:
        Writer([pack[name] for name in ARRAYS]).write(tmp_path / "out.bpk")
    assert sum(copied for _, copied in kernel_copies) == sum(ARRAYS[n].nbytes for n in BIG)
    assert (tmp_path / "out.bpk").read_bytes() == packed.read_bytes()


def test_converting_a_pack_copies_only_its_unchanged_tensors_in_the_kernel(tmp_path, packed, kernel_copies):
    convert(packed, tmp_path / "out.bpk", stamp=False, adapter="cast=f16")  # F32 → F16; layers.1 is F16 already
    assert sum(copied for _, copied in kernel_copies) == ARRAYS["layers.1.weight"].nbytes
    with burnpack.load(tmp_path / "out.bpk") as pack:
        assert pack["embed.weight"].dtype == DType.F16
        assert np.array_equal(pack["embed.weight"].numpy(), ARRAYS["embed.weight"].astype(np.float16))
        assert np.array_equal(pack["layers.1.weight"].numpy(), ARRAYS["layers.1.weight"])


def test_a_view_written_after_its_pack_was_closed_is_an_io_error(tmp_path, packed):
    with burnpack.load(packed) as pack:
        view = pack["embed.weight"]
    with pytest.raises(burnpack.IoError, match="embed.weight"):
        Writer([view]).write(tmp_path / "out.bpk")
    assert not (tmp_path / "out.bpk").exists()


def test_the_repack_command_copies_the_tensors_in_the_kernel(tmp_path, packed, kernel_copies):
    from burnpack.cli.main import main

    assert main(["repack", str(packed), str(tmp_path / "out.bpk")]) == 0
    assert sum(copied for _, copied in kernel_copies) == sum(ARRAYS[n].nbytes for n in BIG)
    assert (tmp_path / "out.bpk").read_bytes() == packed.read_bytes()
