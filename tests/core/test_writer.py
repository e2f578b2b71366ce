"""The writer: Burn's layout, its errors before any I/O, deferred sources and atomic files."""

from __future__ import annotations

import gc
import io
import os

import numpy as np
import pytest

import burnpack
from burnpack import DType, Scalar, Tensor, Writer
from burnpack.core.writer import resolve_write_path
from tests.conftest import python_calls

EMPTY_PACK = bytes.fromhex("4e52554201000a000000a16774656e736f7273a0") + bytes(236)


def f32(name, values, **kw):
    return Tensor.from_numpy(name, np.asarray(values, dtype=np.float32), **kw)


def test_an_empty_pack_is_exactly_256_bytes():
    assert Writer().to_bytes() == EMPTY_PACK


def test_tensor_names_are_sorted_in_metadata_but_data_keeps_write_order():
    data = Writer([f32("zebra", [1]), f32("alpha", [2]), f32("mango", [3])]).to_bytes()
    pack = burnpack.load(data)
    assert pack.names == ["alpha", "mango", "zebra"]
    assert [pack[n].data_offsets for n in ("zebra", "alpha", "mango")] == [(0, 4), (256, 260), (512, 516)]


def test_empty_tensors_share_the_next_aligned_start():
    tensors = [f32("zeta", [1, 2, 3]), f32("empty_mid", np.zeros((0, 4))), Tensor.from_numpy("Alpha", np.int64(7))]
    pack = burnpack.load(Writer(tensors).to_bytes())
    assert [pack[n].data_offsets for n in ("zeta", "empty_mid", "Alpha")] == [(0, 12), (256, 256), (256, 264)]


def test_an_empty_last_tensor_pads_the_file_to_its_aligned_start():
    data = Writer([f32("a", [1]), Tensor.from_numpy("e", np.zeros(0, np.uint8))]).to_bytes()
    pack = burnpack.load(data)
    assert pack["e"].data_offsets == (256, 256)
    assert len(data) == pack.data_section_start + 256


def test_size_is_known_before_writing_and_equals_the_output_length():
    writer = Writer([f32("a", [1, 2, 3]), f32("b", [4])])
    assert writer.size() == len(writer.to_bytes())


def test_write_into_fills_a_caller_buffer():
    writer = Writer([f32("a", [1, 2, 3, 4])])
    buffer = bytearray(writer.size() + 10)
    assert writer.write_into(buffer) == writer.size()
    assert bytes(buffer[: writer.size()]) == writer.to_bytes()


def test_write_into_a_buffer_one_byte_too_small_fails_with_burns_message():
    writer = Writer([f32("a", [1])])
    with pytest.raises(burnpack.IoError, match=f"Buffer too small: need {writer.size()} bytes, got {writer.size() - 1} bytes"):
        writer.write_into(bytearray(writer.size() - 1))


def test_float_scalars_use_the_shortest_exact_cbor_width():
    cases = [
        (0.0, "f90000"), (-0.0, "f98000"), (1.0, "f93c00"), (65504.0, "f97bff"), (5.960464477539063e-08, "f90001"),
        (float("inf"), "f97c00"), (float("-inf"), "f9fc00"), (float("nan"), "f97e00"), (65505.0, "fa477fe100"),
        (100000.0, "fa47c35000"), (0.001, "fb3f50624dd2f1a9fc"),
    ]
    for value, encoding in cases:
        blob = Writer(scalars={"x": Scalar.Float(value)}).plan()[0]
        assert blob.endswith(bytes.fromhex("a165466c6f6174" + encoding)), value


def test_nan_payloads_and_sign_survive_the_scalar_encoding():
    import struct

    for bits, encoding in [(0xFFF8000000000000, "f9fe00"), (0x7FF8400000000000, "f97e10"), (0x7FF8000020000000, "fa7fc00001"), (0x7FF0000000000001, "fb7ff0000000000001")]:
        value = struct.unpack("<d", struct.pack("<Q", bits))[0]
        blob = Writer(scalars={"x": Scalar.Float(value)}).plan()[0]
        assert blob.endswith(bytes.fromhex(encoding))


def test_plain_python_scalars_map_to_burn_kinds():
    writer = Writer(scalars={"flag": True, "lr": 0.5, "offset": -3})
    assert writer.scalars == {"flag": Scalar.Bool(True), "lr": Scalar.Float(0.5), "offset": Scalar.Int(-3)}


def test_an_int_beyond_i64_needs_an_explicit_uint_scalar():
    with pytest.raises(burnpack.ValidationError, match="Scalar.UInt"):
        Writer(scalars={"big": 2**63})
    assert Writer(scalars={"big": Scalar.UInt(2**64 - 1)}).scalars["big"].value == 2**64 - 1


def test_a_scalar_value_outside_its_kind_is_refused():
    with pytest.raises(burnpack.ValidationError):
        Writer(scalars={"x": Scalar.UInt(-1)})


def test_duplicate_names_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(burnpack.ValidationError, match="Duplicate tensor name 'w'"):
        Writer([f32("w", [1]), f32("w", [2])]).write(tmp_path / "x.bpk")
    assert list(tmp_path.iterdir()) == []


def test_byte_length_must_match_shape_times_element_size():
    with pytest.raises(burnpack.ValidationError, match=r"declares 12 bytes but its shape \[2, 2\] and dtype F32 need 16"):
        Writer([Tensor("w", DType.F32, (2, 2), bytes(12))]).size()


def test_a_byte_length_mismatch_is_found_after_a_tensor_of_the_same_kind_was_planned():
    with pytest.raises(burnpack.ValidationError, match=r"tensor 'b' declares 12 bytes but its shape \[2, 2\] and dtype F32 need 16"):
        Writer([Tensor("a", DType.F32, (2, 2), bytes(16)), Tensor("b", DType.F32, (2, 2), bytes(12))]).size()


def test_qfloat_byte_length_is_not_checked_against_the_shape():
    scheme = burnpack.QuantScheme(burnpack.QuantValue.Q4S, burnpack.QuantStore("PackedU32", 0), burnpack.QuantMode.Symmetric)
    writer = Writer([Tensor("q", DType.QFloat(scheme), (3,), bytes(8))])
    assert burnpack.load(writer.to_bytes())["q"].byte_len == 8


def test_a_name_that_is_not_valid_unicode_is_refused():
    with pytest.raises(burnpack.ValidationError, match="not valid Unicode"):
        f32("bad\ud800", [1])


@pytest.mark.parametrize(
    "layout",
    [
        lambda a: np.asfortranarray(a),
        lambda a: a[:, ::2],
        lambda a: a.astype(">f4"),
        lambda a: a.T,
    ],
    ids=["fortran", "strided", "big_endian", "transposed"],
)
def test_numpy_arrays_are_written_c_order_little_endian_whatever_their_layout(layout):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    array = layout(base)
    pack = burnpack.load(burnpack.save_bytes({"a": array}))
    np.testing.assert_array_equal(pack["a"].numpy(), np.asarray(array, dtype=np.float32))
    assert pack["a"].tobytes() == np.ascontiguousarray(array, dtype="<f4").tobytes()


def test_zero_dimensional_and_zero_size_arrays_round_trip():
    pack = burnpack.load(burnpack.save_bytes({"s": np.float32(2.5), "z": np.zeros((3, 0), np.int64)}))
    assert pack["s"].shape == () and pack["s"].numpy() == np.float32(2.5)
    assert pack["z"].shape == (3, 0) and pack["z"].byte_len == 0


class Provider:
    def __init__(self, data, log, name):
        self.data, self.log, self.name = data, log, name

    def __call__(self):
        self.log.append(self.name)
        return self.data


def _deferred(name, n, log, produce=None):
    data = np.arange(n, dtype=np.float32).tobytes()
    return Tensor.deferred(name, DType.F32, (n,), 4 * n, Provider(produce if produce is not None else data, log, name))


def test_planning_a_deferred_tensor_does_not_produce_it():
    log = []
    writer = Writer([_deferred("a", 4, log)])
    writer.size()
    assert log == []


def test_each_deferred_tensor_is_produced_once_in_write_order():
    log = []
    Writer([_deferred("c", 2, log), _deferred("a", 3, log), _deferred("b", 1, log)]).to_bytes()
    assert log == ["c", "a", "b"]


def test_deferred_and_resident_inputs_produce_identical_files():
    log = []
    deferred = Writer([_deferred("a", 3, log), _deferred("b", 5, log)]).to_bytes()
    resident = Writer([f32("a", np.arange(3)), f32("b", np.arange(5))]).to_bytes()
    assert deferred == resident


def test_a_deferred_source_of_the_wrong_length_is_a_size_mismatch():
    with pytest.raises(burnpack.TensorBytesSizeMismatch, match=r"tensor 'a': deferred source has inconsistent length \(expected 16, got 8\)"):
        Writer([_deferred("a", 4, [], produce=bytes(8))]).to_bytes()


def test_a_failing_deferred_source_is_an_io_error_naming_the_tensor():
    def boom():
        raise RuntimeError("disk on fire")

    with pytest.raises(burnpack.IoError, match="tensor 'a': disk on fire"):
        Writer([Tensor.deferred("a", DType.U8, (1,), 1, boom)]).to_bytes()


def test_atomic_write_replaces_the_file_and_leaves_no_scratch(tmp_path):
    target = tmp_path / "m.bpk"
    target.write_bytes(b"old")
    Writer([f32("a", [1])]).write_atomic(target)
    assert burnpack.load(str(target)).names == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bpk"]


def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_scratch(tmp_path):
    target = tmp_path / "m.bpk"
    target.write_bytes(b"precious")

    def boom():
        raise RuntimeError("late failure")

    with pytest.raises(burnpack.IoError):
        Writer([f32("a", [1]), Tensor.deferred("b", DType.U8, (1,), 1, boom)]).write_atomic(target)
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bpk"]


def test_an_atomic_write_whose_rename_fails_leaves_no_scratch(tmp_path):
    target = tmp_path / "dir.bpk"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(burnpack.IoError):
        Writer([f32("a", [1])]).write_atomic(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.bpk"]


def test_a_plain_write_that_fails_midway_keeps_the_old_file_unlike_burn(tmp_path):
    target = tmp_path / "m.bpk"
    target.write_bytes(b"old")

    def boom():
        raise RuntimeError("late failure")

    writer = Writer([f32("a", [1]), Tensor.deferred("b", DType.U8, (1,), 1, boom)])
    with pytest.raises(burnpack.IoError):
        writer.write(target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.bpk"]


@pytest.mark.parametrize(
    "given, written",
    [("model", "model.bpk"), (".hidden", ".hidden.bpk"), ("trail.", "trail."), ("a.tar.gz", "a.tar.gz"), ("m.bpk", "m.bpk")],
)
def test_the_bpk_extension_is_added_exactly_when_rust_sees_no_extension(tmp_path, given, written):
    assert resolve_write_path(tmp_path / given).name == written
    Writer().write(tmp_path / given)
    assert (tmp_path / written).exists()


def test_save_writes_a_name_to_array_mapping_atomically(tmp_path):
    path = burnpack.save({"w": np.ones((2, 2), np.float32)}, tmp_path / "model", metadata={"producer": "me"})
    assert path.name == "model.bpk"
    pack = burnpack.load(tmp_path / "model")
    assert pack.metadata == {"producer": "me"} and pack["w"].shape == (2, 2)


def test_writer_output_is_written_unchanged_to_a_stream(tmp_path):
    writer = Writer([f32("a", [1, 2])], metadata={"k": "v"})
    with open(tmp_path / "s.bpk", "wb") as stream:
        assert writer.write_stream(stream) == writer.size()
    assert (tmp_path / "s.bpk").read_bytes() == writer.to_bytes()


def test_only_one_deferred_payload_is_alive_at_a_time(tmp_path):
    import gc
    import weakref

    alive: list = []

    class Payload(bytearray):
        pass

    def make(i):
        def produce():
            gc.collect()
            alive.append(sum(ref() is not None for ref in refs))
            payload = Payload(1 << 20)
            refs.append(weakref.ref(payload))
            return payload

        return produce

    refs: list = []
    tensors = [Tensor.deferred(f"t{i}", DType.U8, (1 << 20,), 1 << 20, make(i)) for i in range(4)]
    Writer(tensors).write(tmp_path / "big.bpk")
    assert alive == [0, 0, 0, 0]
    assert os.path.getsize(tmp_path / "big.bpk") >= 4 << 20


def test_a_quant_scheme_that_cannot_be_encoded_is_a_metadata_serialization_error():
    bad = burnpack.QuantScheme("Q4S", burnpack.QuantStore.Native, burnpack.QuantMode.Symmetric)  # value not a QuantValue
    with pytest.raises(burnpack.MetadataSerializationError, match="tensor 'q'"):
        Writer([Tensor("q", DType.QFloat(bad), (2,), bytes(2))]).size()


def test_metadata_and_scalar_names_must_be_text():
    with pytest.raises(burnpack.ValidationError, match="str → str"):
        Writer(metadata={"k": 1})
    with pytest.raises(burnpack.ValidationError, match="scalar names must be str"):
        Writer(scalars={1: 1.0})


def test_saving_a_mapping_of_many_arrays_sets_off_one_young_collection_at_most():
    arrays = {f"b{i}": np.zeros(1, np.float32) for i in range(5000)}  # unpaused: 26 young, 2 older collections
    gc.collect()  # start from empty generations
    before = [generation["collections"] for generation in gc.get_stats()]
    burnpack.save_bytes(arrays)
    after = [generation["collections"] for generation in gc.get_stats()]
    assert after[0] - before[0] <= 1 and after[1:] == before[1:]  # the paused one runs once, when resumed
    assert gc.isenabled()


def test_saving_leaves_a_disabled_garbage_collector_disabled():
    gc.disable()
    try:
        burnpack.save_bytes({"w": np.zeros(2, np.float32)})
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_bytes_of_many_tensors_in_memory_are_produced_with_no_call_per_tensor():
    writer = Writer([Tensor.from_numpy(f"t{i}", np.full(i % 5 + 1, i, np.float32)) for i in range(5_000)])
    writer.plan()
    assert python_calls(writer.to_bytes) < 100  # one join of them all; 5,000 tensors made about 15,000 before


def _array_cases() -> dict[str, object]:
    import ml_dtypes

    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return {
        "float32": base,
        "0-d": np.float64(2.5) * np.ones((), np.float64),
        "empty": np.zeros((0, 3), np.int16),
        "bool": np.array([True, False, True]),
        "uint8": np.arange(7, dtype=np.uint8),
        "big-endian": base.astype(">f4"),
        "transposed": base.T,
        "strided": base[:, ::2],
        "bfloat16": base.astype(ml_dtypes.bfloat16),
        "Fortran order": np.asfortranarray(base),
    }


@pytest.mark.parametrize("case", sorted(_array_cases()))
def test_saving_a_mapping_writes_each_array_as_tensor_from_numpy_does(case):
    arrays = {"a.weight": np.arange(5, dtype=np.int64), f"{case}.x": _array_cases()[case], "z": np.ones(3, np.float16)}
    expected = Writer([Tensor.from_numpy(name, array) for name, array in arrays.items()]).to_bytes()
    assert burnpack.save_bytes(arrays) == expected


def test_saving_a_mapping_with_a_non_ascii_name_or_a_tensor_value_writes_what_the_tensors_give():
    arrays = {"größe": np.arange(3, dtype=np.float32), "t": Tensor.from_numpy("t", np.ones(2, np.int32))}
    expected = Writer([Tensor.from_numpy("größe", arrays["größe"]), arrays["t"]]).to_bytes()
    assert burnpack.save_bytes(arrays) == expected


def test_a_writer_of_arrays_gives_the_tensors_from_numpy_gives_when_asked():
    arrays = {f"t{i}": np.full(i + 1, i, np.float32) for i in range(4)}
    writer = Writer._of_arrays(arrays, metadata=None, scalars=None)
    assert writer is not None
    assert all(a.same_content(Tensor.from_numpy(n, v)) for a, (n, v) in zip(writer.tensors, arrays.items(), strict=True))


def test_saving_a_mapping_of_many_arrays_builds_no_tensor_per_array(tmp_path):
    arrays = {f"layers.{i}.bias": np.full(i % 5 + 1, i, np.float32) for i in range(5_000)}
    burnpack.save({"warm": np.zeros(1)}, tmp_path / "warm.bpk")  # the modules a first save imports
    # the generated encoder's entry is the one thing done per array (about 9 calls); 27 before columns
    assert python_calls(lambda: burnpack.save(arrays, tmp_path / "m.bpk")) < 10 * len(arrays)
    assert burnpack.load(tmp_path / "m.bpk").numpy()["layers.4999.bias"].tolist() == [4999.0] * 5


class RecordingFile(io.RawIOBase):
    """A regular file whose stream writes are recorded (its descriptor is the file's)."""

    def __init__(self, file):
        self.file, self.sizes = file, []

    def write(self, data):
        self.sizes.append(memoryview(data).nbytes)
        return self.file.write(data)

    def fileno(self):
        return self.file.fileno()

    def seekable(self):
        return True

    def seek(self, *args):
        return self.file.seek(*args)

    def tell(self):
        return self.file.tell()


def test_every_write_into_a_file_is_at_most_64_kib(tmp_path):
    """What the kernel's own copy moves at a time: larger writes make the page cache take large
    folios, which a virtual machine may have handed back to its host."""
    arrays = {"big": np.ones(1 << 20, np.uint8), "late": np.arange(1 << 16, dtype=np.int32)}
    late = Tensor.deferred("late", DType.I32, (1 << 16,), 1 << 18, lambda: arrays["late"])
    with open(tmp_path / "t.bpk", "wb", buffering=0) as file:
        stream = RecordingFile(file)
        Writer([Tensor.from_numpy("big", arrays["big"]), late]).write_stream(stream)
    assert max(stream.sizes) == 64 << 10 and sum(stream.sizes) == os.path.getsize(tmp_path / "t.bpk")
    assert (tmp_path / "t.bpk").read_bytes() == burnpack.save_bytes(arrays)


@pytest.mark.parametrize("name", ["a'b", "line\nbreak", "\x1b[31mred", "tab\there"])
def test_a_tensor_name_in_an_error_is_quoted_as_python_quotes_it(name):
    """A name cannot end the quotes around it or forge a line of the message."""
    with pytest.raises(burnpack.ValidationError) as caught:
        Tensor(name, DType.F32, [-1], b"")
    assert str(caught.value).startswith(f"tensor {name!r}: ") and "\n" not in str(caught.value) and "\x1b" not in str(caught.value)
