"""The reader: lazy zero-copy access, Burn's open-time checks, strict mode and legacy files."""

from __future__ import annotations

import gc
import os
import struct
import warnings

import cbor2
import numpy as np
import pytest

import burnpack
from burnpack import DType, Tensor, Writer


def f32(name, values, **kw):
    return Tensor.from_numpy(name, np.asarray(values, dtype=np.float32), **kw)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.bpk"
    Writer([f32("b", [1, 2, 3]), f32("a", [[4, 5], [6, 7]], param_id=7)], metadata={"k": "v"}, scalars={"s": 1}).write(path)
    return path


def _file(metadata: dict | bytes, data: bytes = b"", *, version: int = 1, pad: bool = True) -> bytes:
    """A file around hand-written metadata (for cases our writer refuses to produce)."""
    blob = metadata if isinstance(metadata, bytes) else cbor2.dumps(metadata)
    head = b"NRUB" + struct.pack("<HI", version, len(blob)) + blob
    return head + bytes(-len(head) % 256 if pad else 0) + data


def test_tensors_are_exposed_sorted_by_name_with_their_descriptors(small):
    pack = burnpack.load(small)
    assert list(pack) == ["a", "b"] and len(pack) == 2 and "a" in pack
    a = pack["a"]
    assert (a.dtype, a.shape, a.data_offsets, a.param_id, a.byte_len) == (DType.F32, (2, 2), (256, 272), 7, 16)
    assert pack.metadata == {"k": "v"} and pack.scalars == {"s": burnpack.Scalar.Int(1)}
    assert (pack.version, pack.data_section_start) == (1, 256)


def test_arrays_from_a_file_are_read_only_zero_copy_views_of_the_mapping(small):
    pack = burnpack.load(small)
    first, second = pack["a"].numpy(), pack["a"].numpy()
    assert np.shares_memory(first, second)
    assert not first.flags.writeable
    np.testing.assert_array_equal(first, [[4, 5], [6, 7]])


def test_arrays_from_bytes_view_the_callers_buffer():
    data = bytearray(burnpack.save_bytes({"a": np.arange(4, dtype=np.int32)}))
    pack = burnpack.load(data)
    array = pack["a"].numpy()
    data[pack["a"].data_offsets[0] + pack.data_section_start] = 9
    assert array[0] == 9


def test_a_slice_of_one_tensor_can_be_read_without_the_rest(small):
    pack = burnpack.load(small)
    assert pack["a"].read(4, 8) == np.array([5, 6], np.float32).tobytes()
    assert pack["a"].read(12) == np.float32(7).tobytes()


def test_an_unknown_tensor_name_is_tensor_not_found(small):
    with pytest.raises(burnpack.TensorNotFound, match="missing"):
        burnpack.load(small)["missing"]


def test_an_extensionless_path_that_does_not_exist_gets_bpk_appended(small):
    assert burnpack.load(small.with_suffix("")).names == ["a", "b"]


def test_an_existing_extensionless_file_is_read_as_is(small, tmp_path):
    plain = tmp_path / "plain"
    plain.write_bytes(small.read_bytes())
    assert burnpack.load(plain).names == ["a", "b"]


def test_a_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(burnpack.IoError, match="No such file"):
        burnpack.load(tmp_path / "nope.bpk")


def test_a_file_shorter_than_the_header_is_an_io_error_but_bytes_are_an_invalid_header(tmp_path):
    (tmp_path / "short.bpk").write_bytes(b"NRUB")
    with pytest.raises(burnpack.IoError):
        burnpack.load(tmp_path / "short.bpk")
    with pytest.raises(burnpack.InvalidHeader):
        burnpack.load(b"NRUB")


def test_version_zero_is_accepted_like_version_one():
    assert burnpack.load(_file({"tensors": {}}, version=0)).version == 0


def test_every_dtype_is_viewed_as_its_numpy_type():
    expected = {"F64": "<f8", "F32": "<f4", "Flex32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1"}
    tensors = [Tensor(name, getattr(DType, name), (2,), bytes(2 * np.dtype(npd).itemsize)) for name, npd in expected.items()]
    tensors.append(Tensor("BF16", DType.BF16, (2,), bytes(4)))
    pack = burnpack.load(Writer(tensors).to_bytes())
    for name, npd in expected.items():
        assert pack[name].numpy().dtype == np.dtype(npd)
    assert pack["BF16"].numpy().dtype.name == "bfloat16"


def test_a_length_that_disagrees_with_the_shape_is_readable_as_bytes_but_not_as_an_array():
    data = _file({"tensors": {"a": {"dtype": "F32", "shape": [3, 3], "data_offsets": [0, 16]}}}, bytes(16))
    view = burnpack.load(data)["a"]
    assert len(view.tobytes()) == 16
    with pytest.raises(burnpack.ValidationError, match="holds 16 bytes but its shape"):
        view.numpy()


# -- strict mode -----------------------------------------------------------------------------
def test_strict_mode_rejects_version_zero():
    with pytest.raises(burnpack.InvalidVersion):
        burnpack.load(_file({"tensors": {}}, version=0), strict=True)


def test_strict_mode_rejects_non_canonical_metadata_and_says_where():
    canonical = cbor2.dumps({"tensors": {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}})
    wide_zero = canonical.replace(b"\x82\x00\x04", b"\x82\x18\x00\x04")
    burnpack.load(_file(canonical, bytes(4)), strict=True)
    burnpack.load(_file(wide_zero, bytes(4))).tensors()
    at = canonical.index(b"\x82\x00\x04") + 1
    with pytest.raises(burnpack.MetadataDeserializationError, match=f"metadata byte {at}:"):
        burnpack.load(_file(wide_zero, bytes(4)), strict=True)


def test_strict_mode_rejects_struct_keys_out_of_declaration_order():
    swapped = cbor2.dumps({"tensors": {"a": {"shape": [1], "dtype": "F32", "data_offsets": [0, 4]}}})
    burnpack.load(_file(swapped, bytes(4))).tensors()
    with pytest.raises(burnpack.MetadataDeserializationError, match="not the canonical encoding"):
        burnpack.load(_file(swapped, bytes(4)), strict=True)


def test_strict_mode_rejects_non_zero_padding():
    data = bytearray(burnpack.save_bytes({"a": np.zeros(1, np.float32)}))
    data[200] = 1
    burnpack.load(bytes(data))
    with pytest.raises(burnpack.ValidationError, match="non-zero byte"):
        burnpack.load(bytes(data), strict=True)


def test_strict_mode_rejects_trailing_bytes():
    data = burnpack.save_bytes({"a": np.zeros(1, np.float32)}) + b"\x00"
    with pytest.raises(burnpack.ValidationError, match="trailing bytes"):
        burnpack.load(data, strict=True)


def test_strict_mode_rejects_truncation_inside_the_padding_gap():
    data = burnpack.save_bytes({"a": np.zeros(1, np.float32), "b": np.zeros(1, np.float32)})[:-3]
    burnpack.load(data)  # Burn's truncation check misses this by design
    with pytest.raises(burnpack.ValidationError, match="truncated"):
        burnpack.load(data, strict=True)


@pytest.mark.parametrize(
    "offsets, problem",
    [([[0, 4], [4, 8]], "starts at 4"), ([[0, 4], [0, 4]], "starts at 0"), ([[0, 4], [512, 516]], "starts at 512")],
    ids=["unaligned", "overlapping", "gap"],
)
def test_strict_mode_rejects_offsets_burns_writer_would_not_produce(offsets, problem):
    tensors = {n: {"dtype": "F32", "shape": [1], "data_offsets": o} for n, o in zip("ab", offsets)}
    data = _file({"tensors": tensors}, bytes(max(o[1] for o in offsets)))
    burnpack.load(data).tensors()
    with pytest.raises(burnpack.ValidationError, match=problem):
        burnpack.load(data, strict=True)


def test_strict_mode_rejects_a_quantized_tensor_ending_before_its_start_on_open():
    scheme = {"value": "Q8S", "store": "Native", "mode": "Symmetric", "tensor": "F32", "block": None}
    tensors = {"a": {"dtype": "U8", "shape": [5], "data_offsets": [0, 5]},
               "q": {"dtype": {"QFloat": scheme}, "shape": [4], "data_offsets": [256, 10]}}
    data = _file({"tensors": tensors}, bytes(10))  # a QFloat length is never checked: only the order shows it
    with pytest.raises(burnpack.ValidationError):
        burnpack.load(data).tensors()  # Burn fails on tensor access
    with pytest.raises(burnpack.ValidationError, match="'q' ends at 10, before its start 256"):
        burnpack.load(data, strict=True)


def test_strict_mode_rejects_a_length_that_disagrees_with_the_shape():
    data = _file({"tensors": {"a": {"dtype": "F32", "shape": [3, 3], "data_offsets": [0, 16]}}}, bytes(16))
    with pytest.raises(burnpack.ValidationError, match="spans 16 bytes"):
        burnpack.load(data, strict=True)


# -- legacy files ----------------------------------------------------------------------------
def _prealignment_file() -> bytes:
    """What burn-store wrote before 2025-12-02: tensors packed right after the metadata."""
    metadata = {"tensors": {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "U8", "shape": [3], "data_offsets": [8, 11]}}}
    blob = cbor2.dumps(metadata)
    return b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob + np.array([1.5, 2.5], "<f4").tobytes() + b"\x07\x08\x09"


def test_a_prealignment_file_opens_with_a_warning_and_fails_whole_reads_with_the_diagnosis():
    with pytest.warns(burnpack.LegacyFormatWarning, match="pre-alignment layout"):
        pack = burnpack.load(_prealignment_file())
    assert pack.legacy_layout
    with pytest.raises(burnpack.LegacyFormatError, match="legacy_ok=True"):
        pack.tensors()


def test_an_in_range_tensor_of_a_prealignment_looking_file_reads_as_burn_reads_it():
    # Indistinguishable from a modern file cut at 10 + M + max_end, whose in-range bytes are right;
    # the warning on opening is the diagnosis.
    metadata = {"tensors": {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [396], "data_offsets": [4, 400]}}}
    blob = cbor2.dumps(metadata)
    data = b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob + bytes(range(256)) + bytes(144)
    with pytest.warns(burnpack.LegacyFormatWarning):
        pack = burnpack.load(data)
    assert pack["a"].tobytes() == data[pack.data_section_start : pack.data_section_start + 4]


def test_a_prealignment_file_reads_as_written_when_the_caller_opts_in():
    pack = burnpack.load(_prealignment_file(), legacy_ok=True)
    np.testing.assert_array_equal(pack["a"].numpy(), [1.5, 2.5])
    assert pack["b"].tobytes() == b"\x07\x08\x09"


def test_a_current_file_is_never_taken_for_a_prealignment_one():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not burnpack.load(burnpack.save_bytes({"a": np.zeros(3, np.float32)})).legacy_layout


def test_the_old_bool_dtype_is_rejected_like_burn_with_a_diagnosis():
    data = _file({"tensors": {"m": {"dtype": "Bool", "shape": [2], "data_offsets": [0, 2]}}}, b"\x01\x00")
    with pytest.raises(burnpack.MetadataDeserializationError, match="of a Burn 0.19-0.20 file") as info:
        burnpack.load(data)
    assert "unknown variant" in info.value.payload
    pack = burnpack.load(data, legacy_ok=True)
    assert pack["m"].dtype == DType.Bool(burnpack.BoolStore.Native)
    assert pack["m"].numpy().tolist() == [True, False]


def test_an_old_quant_scheme_is_accepted_like_burn_but_warned_about_and_read_right_on_request():
    old = {"value": "Q8S", "param": "F16", "store": "Native", "level": {"Block": {"storage": [32, 1, 1, 1, 1], "len": 1}}, "mode": "Symmetric"}
    data = _file({"tensors": {"q": {"dtype": {"QFloat": old}, "shape": [32], "data_offsets": [0, 34]}}}, bytes(34))
    with pytest.warns(burnpack.LegacyFormatWarning, match="pre-2026-08-19"):
        misread = burnpack.load(data)["q"].dtype.value
    assert misread.block is None  # what current Burn reads
    scheme = burnpack.load(data, legacy_ok=True)["q"].dtype.value
    assert scheme.block == burnpack.BlockScale(burnpack.BlockSize((32, 1, 1, 1, 1), 1), burnpack.ScaleDtype.F16)


class CountingSource:
    """A stand-in for a remote source: only ``size`` and ``read``, and a log of the ranges read."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.reads: list[tuple[int, int]] = []

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self._data[offset : offset + length]


def test_opening_reads_only_the_header_and_the_metadata():
    data = burnpack.save_bytes({"a": np.arange(1000, dtype=np.float32), "b": np.ones(3, np.int64)})
    source = CountingSource(data)
    pack = burnpack.load(source)
    assert source.reads == [(0, 10), (10, pack.metadata_size)]


def test_a_range_source_reads_just_the_accessed_tensor_or_slice():
    data = burnpack.save_bytes({"a": np.arange(1000, dtype=np.float32), "b": np.ones(3, np.int64)})
    source = CountingSource(data)
    pack = burnpack.load(source)
    source.reads.clear()
    np.testing.assert_array_equal(pack["b"].numpy(), [1, 1, 1])
    assert source.reads == [(pack.data_section_start + pack["b"].data_offsets[0], 24)]
    source.reads.clear()
    assert pack["a"].read(8, 4) == np.float32(2).tobytes()
    assert source.reads == [(pack.data_section_start + 8, 4)]


def test_the_big_endian_host_path_for_bfloat16_keeps_the_values(monkeypatch):
    import ml_dtypes

    from burnpack.core import dtypes

    values = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    data = burnpack.save_bytes({"h": values})
    monkeypatch.setattr(dtypes, "_BIG_ENDIAN_HOST", True)
    np.testing.assert_array_equal(burnpack.load(data)["h"].numpy(), values)


def test_a_file_over_100_gib_is_refused_before_its_header_is_read(tmp_path):
    huge = tmp_path / "huge.bpk"
    with open(huge, "wb") as f:
        try:
            f.truncate(100 * 2**30 + 1)  # sparse: no disk space is used
        except OSError:
            pytest.skip("this filesystem has no sparse files")
    with pytest.raises(burnpack.ValidationError, match="File size 107374182401 bytes exceeds maximum allowed size of 107374182400 bytes"):
        burnpack.load(huge)


def test_a_directory_is_an_io_error(tmp_path):
    with pytest.raises(burnpack.IoError, match="os error"):
        burnpack.load(tmp_path)


def test_the_bulk_path_views_a_tensor_whose_start_is_not_a_multiple_of_its_element_size():
    data = _file({"tensors": {"a": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}}, b"\x00\x00" + np.float32(1.5).tobytes())
    assert burnpack.load(data).numpy()["a"].tolist() == [1.5]


def test_the_bulk_path_reports_the_first_bad_tensor_in_name_order_as_burn_does():
    tensors = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [1], "data_offsets": [8, 4]}}
    with pytest.raises(burnpack.ValidationError, match="Tensor 'b' has corrupted offset data: end"):
        burnpack.load(_file({"tensors": tensors}, bytes(8))).numpy()


def test_a_file_cut_to_exactly_metadata_end_plus_max_end_fails_on_access_with_burns_messages(tmp_path):
    # 10 + M + max_end is also the signature of a pre-alignment file; Burn knows nothing of that
    # and reports the range it could not view, so the error's variant and payload are Burn's.
    full = Writer([Tensor("weight", DType.F32, [4], bytes(16))]).to_bytes()
    metadata_size = int.from_bytes(full[6:10], "little")
    cut = full[: 10 + metadata_size + 16]
    path = tmp_path / "cut.bpk"
    path.write_bytes(cut)
    n = len(cut)
    expected = {
        "bytes": (f"Tensor 'weight' data range 256..272 could not be viewed (source is {n} bytes)",
                  f"Tensor data range 256..272 is out of bounds (buffer is {n} bytes)"),
        "file": (f"Tensor 'weight' data range 256..272 could not be viewed (source is {n} bytes)",
                 "Tensor 'weight' data range 256..272 could not be viewed"),
    }
    for kind, source in (("bytes", cut), ("file", str(path))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", burnpack.LegacyFormatWarning)
            pack = burnpack.load(source)
        with pytest.raises(burnpack.ValidationError) as info:
            pack.tensors()
        assert (info.value.variant, info.value.payload) == ("ValidationError", expected[kind][0])
        with pytest.raises(burnpack.ValidationError) as info:
            pack["weight"].tobytes()
        assert (info.value.variant, info.value.payload) == ("ValidationError", expected[kind][1])
        pack.close()


def test_a_prealignment_looking_file_reports_the_tensor_burn_fails_on_not_the_first_one():
    # 'a' still lies inside the file at the aligned start; Burn's into_tensors fails on 'b'.
    metadata = {"tensors": {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [396], "data_offsets": [4, 400]}}}
    blob = cbor2.dumps(metadata)
    data = b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob + bytes(400)
    with pytest.warns(burnpack.LegacyFormatWarning):
        pack = burnpack.load(data)
    with pytest.raises(burnpack.LegacyFormatError) as info:
        pack.tensors()
    assert info.value.payload == f"Tensor 'b' data range 260..656 could not be viewed (source is {len(data)} bytes)"


def test_load_refuses_what_is_neither_a_path_bytes_nor_a_source():
    with pytest.raises(TypeError, match="a path, a bytes-like object or a Source"):
        burnpack.load(42)


VIEW_READS = ["numpy", "read", "tobytes", "memoryview", "slice", "torch", "file_range"]
PACK_READS = ["pack.numpy", "pack.torch", "pack.tensors"]


def _view_reads(view) -> dict:
    return {
        "numpy": view.numpy,
        "read": view.read,
        "tobytes": view.tobytes,
        "memoryview": view.memoryview,
        "slice": lambda: view.slice[:1],
        "torch": view.torch,
        "file_range": lambda: view.file_range,
    }


def _pack_reads(pack) -> dict:
    return {"pack.numpy": pack.numpy, "pack.torch": pack.torch, "pack.tensors": pack.tensors}


@pytest.mark.parametrize("method", VIEW_READS + PACK_READS)
def test_reading_a_tensor_after_its_pack_was_closed_is_an_io_error(tmp_path, method):
    path = tmp_path / "a.bpk"
    burnpack.save({"w": np.arange(4, dtype=np.float32)}, path)
    pack = burnpack.load(path)
    view = pack["w"]
    kept = view.numpy()  # an array taken before keeps the mapping alive: reads after close must still fail
    pack.close()
    with pytest.raises(burnpack.IoError, match="the pack is closed"):
        {**_view_reads(view), **_pack_reads(pack)}[method]()
    assert kept.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("method", VIEW_READS + PACK_READS)
def test_reading_a_file_truncated_while_mapped_is_an_io_error_not_a_crash(tmp_path, method):
    path = tmp_path / "a.bpk"
    burnpack.save({"w": np.arange(4096, dtype=np.float32)}, path)
    with burnpack.load(path) as pack:
        os.truncate(path, 4096)  # what Burn's writer does to a file it rewrites in place
        with pytest.raises(burnpack.IoError, match=r"the file shrank from \d+ to 4096 bytes"):
            {**_view_reads(pack["w"]), **_pack_reads(pack)}[method]()


@pytest.mark.parametrize("decoder", ["auto", "exact"])
def test_opening_a_pack_of_many_tensors_sets_off_no_garbage_collection(decoder):
    data = burnpack.save_bytes({f"b{i}": np.zeros(1, np.float32) for i in range(5000)})  # unpaused: 20+ young collections
    burnpack.load(data, decoder=decoder)  # the first open imports modules (their collections are not the open's)
    gc.collect()  # start from empty generations
    before = [generation["collections"] for generation in gc.get_stats()]
    pack = burnpack.load(data, decoder=decoder)
    after = [generation["collections"] for generation in gc.get_stats()]
    assert len(pack) == 5000
    assert after[0] - before[0] <= 1 and after[1:] == before[1:]  # the paused one runs once, when resumed
    assert gc.isenabled()


def test_opening_leaves_a_disabled_garbage_collector_disabled():
    gc.disable()
    try:
        burnpack.load(burnpack.save_bytes({"w": np.zeros(2, np.float32)}))
        assert not gc.isenabled()
    finally:
        gc.enable()
