"""The columnar tensors table (burnpack.core.table) reads every map exactly as the per-entry decoders do."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import burnpack
import burnpack.core.table
from burnpack import DType, Tensor, Writer
from burnpack.core.metadata import decode_metadata_exact
from burnpack.core.table import TensorTable, scan_table
from tests.strategies import packs


def _metadata_blob(data: bytes) -> bytes:
    size = int.from_bytes(data[6:10], "little")
    return data[10 : 10 + size]


def _pack(tensors: list[Tensor], **kw: object) -> bytes:
    return Writer(tensors, **kw).to_bytes()  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packs())
def test_table_gives_the_descriptors_the_exact_decoder_gives(spec):
    blob = _metadata_blob(_pack(spec.tensors, metadata=spec.metadata, scalars=spec.scalars))
    exact = decode_metadata_exact(blob)
    table = scan_table(blob)
    if table is None:  # maps it cannot prove it reads as Burn does (QFloat, long names, NaN scalars...)
        return
    assert dict(table.tensors.items()) == exact.tensors
    assert list(table.tensors) == sorted(exact.tensors)
    assert (table.metadata, table.scalars) == (exact.metadata, exact.scalars)


def test_long_short_and_mixed_names_large_offsets_and_param_ids_decode_alike():
    tensors = [Tensor.from_numpy("a" * n, np.arange(n % 7 + 300, dtype=np.float32), param_id=n * 1_000_003 if n % 2 else None) for n in (1, 23, 24, 200, 255)]
    tensors.append(Tensor.from_numpy("scalar", np.float64(2.5)))
    tensors.append(Tensor.from_numpy("mask", np.array([[True, False]])))
    blob = _metadata_blob(_pack(tensors))
    table = scan_table(blob)
    assert isinstance(table.tensors, TensorTable)
    assert dict(table.tensors.items()) == decode_metadata_exact(blob).tensors


@pytest.mark.parametrize("name", ["b\x00a", "z" * 256])
def test_names_the_table_cannot_split_are_left_to_the_per_entry_decoder(name):
    blob = _metadata_blob(_pack([Tensor.from_numpy(name, np.zeros(2, np.float32))]))
    assert scan_table(blob) is None
    assert burnpack.load(_pack([Tensor.from_numpy(name, np.zeros(2, np.float32))])).names == [name]


def test_an_unsorted_map_is_left_to_the_per_entry_decoder():
    blob = bytearray(_metadata_blob(_pack([Tensor.from_numpy(n, np.zeros(1, np.float32)) for n in ("a", "b")])))
    first, second = blob.index(b"aa"), blob.index(b"ab")
    blob[first + 1], blob[second + 1] = ord("b"), ord("a")  # swap the two names: still valid CBOR
    assert scan_table(bytes(blob)) is None
    assert sorted(decode_metadata_exact(bytes(blob)).tensors) == ["a", "b"]


def test_opening_and_listing_names_builds_no_descriptor(monkeypatch):
    built = []
    real = TensorTable.__getitem__
    monkeypatch.setattr(TensorTable, "__getitem__", lambda self, name: built.append(name) or real(self, name))
    data = _pack([Tensor.from_numpy(f"t{i:03}", np.full(2, i, np.int16)) for i in range(100)])
    pack = burnpack.load(data)
    assert len(pack.names) == 100 and len(pack) == 100
    arrays = pack.numpy()
    assert built == []
    assert [int(a[0]) for a in arrays.values()] == list(range(100))


def test_opening_and_listing_names_decodes_the_end_offsets_only(monkeypatch):
    monkeypatch.setattr(burnpack.core.table, "_ctable", None)  # the regex scan (the compiled scan decodes both in its pass)
    decoded = []
    real = burnpack.core.table._uint_column
    monkeypatch.setattr(burnpack.core.table, "_uint_column", lambda column: decoded.append(len(column)) or real(column))
    pack = burnpack.load(_pack([Tensor.from_numpy(f"t{i:03}", np.full(2, i, np.int16)) for i in range(100)]))
    assert len(pack.names) == 100
    assert decoded == [100]  # the ends: the open checks the largest against the file's size
    assert int(pack.numpy()["t042"][0]) == 42
    assert decoded == [100, 100]  # the starts, once the data is asked for


def test_bulk_arrays_view_the_pack_and_match_each_tensor():
    tensors = [Tensor.from_numpy(f"g{i}", np.arange(6, dtype=np.float32).reshape(2, 3) + i) for i in range(5)]
    tensors += [Tensor.from_numpy(f"h{i}", np.arange(i + 1, dtype=np.int64)) for i in range(5)]
    tensors += [Tensor.from_numpy("s", np.float32(7)), Tensor.from_numpy("bf", np.ones(3, np.float16), dtype=DType.BF16)]
    data = bytearray(_pack(tensors))
    pack = burnpack.load(data)
    bulk = pack.numpy()
    assert list(bulk) == pack.names
    for name, array in bulk.items():
        single = pack[name].numpy()
        assert array.dtype == single.dtype and array.shape == single.shape and array.tobytes() == single.tobytes()
    bulk["g0"][0, 0] = 42  # a writable source gives writable views of its own bytes (no copy)
    assert pack["g0"].numpy()[0, 0] == 42


def test_names_holding_the_struct_head_bytes_still_decode_as_a_table():
    names = ["a£", "b¤x", "c\xa3edtype"]  # UTF-8 0xC2 0xA3 / 0xC2 0xA4 inside the name
    blob = _metadata_blob(_pack([Tensor.from_numpy(n, np.zeros(3, np.float32)) for n in names]))
    table = scan_table(blob)
    assert isinstance(table.tensors, TensorTable)
    assert table.tensors.names == sorted(names, key=str.encode)
    assert dict(table.tensors.items()) == decode_metadata_exact(blob).tensors


@pytest.mark.parametrize("count", [3, 600])  # below and above the one-by-one column threshold
def test_offsets_of_every_width_decode_alike_in_small_and_large_tables(count):
    sizes = [1, 7, 300, 70_000]  # offsets crossing the 1-, 2-, 3- and 5-byte CBOR widths
    tensors = [Tensor.from_numpy(f"t{i:04}", np.zeros(sizes[i % 4], np.uint8)) for i in range(count)]
    blob = _metadata_blob(_pack(tensors))
    table = scan_table(blob)
    assert isinstance(table.tensors, TensorTable)
    assert dict(table.tensors.items()) == decode_metadata_exact(blob).tensors


def test_shapes_of_one_rank_are_told_apart_by_their_dimensions():
    shapes = [(2, 3), (3, 2), (6, 1), (1, 6), (300, 2), (2, 300)]  # one rank; dims of one and of two bytes
    tensors = [Tensor.from_numpy(f"t{i}", np.zeros(shape, np.float32)) for i, shape in enumerate(shapes)]
    blob = _metadata_blob(_pack(tensors))
    table = scan_table(blob)
    assert isinstance(table.tensors, TensorTable)
    assert [table.tensors[f"t{i}"].shape for i in range(len(shapes))] == shapes
    assert [array.shape for array in burnpack.load(_pack(tensors)).numpy().values()] == shapes


def test_tensors_of_one_dtype_and_of_several_dtypes_are_grouped_by_dtype_and_shape():
    one_dtype = [Tensor.from_numpy(f"a{i}", np.zeros(shape, np.float32)) for i, shape in enumerate([(2,), (3,), (2,), (2, 1)])]
    mixed = one_dtype + [Tensor.from_numpy("b0", np.zeros(2, np.int32)), Tensor.from_numpy("b1", np.zeros(2, np.float64))]
    for tensors in (one_dtype, mixed):
        table = scan_table(_metadata_blob(_pack(tensors))).tensors
        groups = {(dtype, shape): sorted(table.names[i] for i in index) for dtype, shape, index in table.groups()}
        expected: dict = {}
        for t in tensors:
            expected.setdefault((t.dtype, t.shape), []).append(t.name)
        assert groups == {key: sorted(names) for key, names in expected.items()}
    assert scan_table(_metadata_blob(_pack([]))).tensors.groups() == []


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.skipif(burnpack.core.table.KERNEL != "compiled", reason="the compiled table scan is not built"))])
@pytest.mark.parametrize("count", [1, 3, 700])
def test_the_scan_reports_the_largest_end_offset_of_its_table(count, compiled):
    sizes = [(i * 7919) % 13 for i in range(count)]  # the largest tensor anywhere, empty ones too
    data = _pack([Tensor.from_numpy(f"t{i:05d}", np.zeros(n, np.float32)) for i, n in enumerate(sizes)])
    table = scan_table(_metadata_blob(data), compiled=compiled).tensors
    assert isinstance(table, TensorTable)
    assert table.max_end == max(end for _, end in (d.data_offsets for d in table.values())) == int(table.ends.max())
    assert type(table.max_end) is int


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.skipif(burnpack.core.table.KERNEL != "compiled", reason="the compiled table scan is not built"))])
def test_a_tables_offset_columns_are_read_only(compiled):
    table = scan_table(_metadata_blob(_pack([Tensor.from_numpy("a", np.zeros(3, np.float32))])), compiled=compiled).tensors
    with pytest.raises(ValueError):
        table.starts[0] = 7
    with pytest.raises(ValueError):
        table.ends[0] = 7
    if compiled:  # arrays over the scan's bytes: not even their flag turns back
        with pytest.raises(ValueError):
            table.ends.flags.writeable = True
