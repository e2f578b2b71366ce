"""The validating safetensors reader and writer, against the ``safetensors`` package itself.

Round trips go both ways through ``safetensors.numpy`` (its ``load`` cannot decode BF16, so that
direction leaves BF16 out); corrupt files are built by hand, one defect each.
"""

from __future__ import annotations

import json
import mmap
import struct
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from burnpack.errors import SafetensorsError
from burnpack.interop.pytorch import read_pytorch
from burnpack.interop.safetensors import (
    parse_safetensors,
    read_safetensors,
    serialize_safetensors,
    write_safetensors,
)
from tests.conftest import PYTORCH_FIXTURES, require

DTYPES = {
    "BOOL": np.bool_,
    "U8": np.uint8,
    "I8": np.int8,
    "I16": np.int16,
    "U16": np.uint16,
    "F16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "I32": np.int32,
    "U32": np.uint32,
    "F32": np.float32,
    "F64": np.float64,
    "I64": np.int64,
    "U64": np.uint64,
}


def sample(dtype: type, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Deterministic values that exercise every byte of the element type."""
    values = np.random.default_rng(seed).integers(0, 256, size=(*shape, np.dtype(dtype).itemsize))
    if dtype is np.bool_:
        return (values[..., 0] % 2).astype(np.bool_)
    raw = values.astype(np.uint8)
    return raw.view(dtype).reshape(shape)


def all_dtypes() -> dict[str, np.ndarray]:
    return {
        f"t.{code}": sample(dtype, (2, 3), seed)
        for seed, (code, dtype) in enumerate(DTYPES.items())
    }


def assert_same_tensors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    for name, expected in want.items():
        assert got[name].dtype == expected.dtype, name
        assert got[name].shape == expected.shape, name
        assert got[name].tobytes() == np.ascontiguousarray(expected).tobytes(), name


# --- agreement with the safetensors package ----------------------------------------------------


@pytest.mark.parametrize("metadata", [None, {}, {"format": "np"}])
def test_serialized_bytes_equal_safetensors_save(metadata: dict[str, str] | None) -> None:
    tensors = all_dtypes() | {
        "scalar": np.array(1.5, np.float32),
        "empty": np.zeros((0, 4), np.int8),
    }
    assert serialize_safetensors(tensors, metadata) == safetensors.numpy.save(tensors, metadata)


def test_written_file_equals_safetensors_save_file(tmp_path: Path) -> None:
    tensors = all_dtypes()
    write_safetensors(tensors, tmp_path / "ours.safetensors", {"k": "v"})
    safetensors.numpy.save_file(tensors, tmp_path / "theirs.safetensors", {"k": "v"})
    ours = (tmp_path / "ours.safetensors").read_bytes()
    assert ours == (tmp_path / "theirs.safetensors").read_bytes()


def test_reader_reads_what_safetensors_writes(tmp_path: Path) -> None:
    tensors = all_dtypes()
    safetensors.numpy.save_file(tensors, tmp_path / "t.safetensors", {"a": "1", "b": "2"})
    got, metadata = read_safetensors(tmp_path / "t.safetensors")
    assert_same_tensors(got, tensors)
    assert metadata == {"a": "1", "b": "2"}


def test_safetensors_reads_what_the_writer_writes(tmp_path: Path) -> None:
    tensors = {name: array for name, array in all_dtypes().items() if name != "t.BF16"}
    write_safetensors(tensors, tmp_path / "t.safetensors")
    assert_same_tensors(safetensors.numpy.load_file(tmp_path / "t.safetensors"), tensors)


def test_multiple_metadata_keys_are_written_sorted() -> None:
    data = serialize_safetensors({}, {"zeta": "1", "alpha": "2"})
    assert data[8:].startswith(b'{"__metadata__":{"alpha":"2","zeta":"1"}}')
    assert parse_safetensors(safetensors.numpy.save({}, {"zeta": "1", "alpha": "2"}))[1] == {
        "zeta": "1",
        "alpha": "2",
    }


def test_names_and_metadata_with_escapes_and_unicode_match_safetensors() -> None:
    tensors = {
        'quote"back\\slash': np.ones(1, np.uint8),
        "tab\tnew\nlíne\x7f✓": np.zeros(1, np.uint8),
    }
    metadata = {"ctrl\x01": "é\u2028"}
    assert serialize_safetensors(tensors, metadata) == safetensors.numpy.save(tensors, metadata)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda name: name != "__metadata__"),
        st.sampled_from(sorted(DTYPES)).flatmap(
            lambda code: hnp.arrays(
                np.dtype(DTYPES[code]) if code != "BF16" else np.dtype(np.uint16),
                hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
            ).map(lambda array, code=code: array.view(DTYPES[code]))
        ),
        max_size=5,
    )
)
def test_round_trip_preserves_any_tensors_bit_for_bit(tensors: dict[str, np.ndarray]) -> None:
    data = serialize_safetensors(tensors)
    assert data == safetensors.numpy.save(tensors)
    got, metadata = parse_safetensors(data)
    assert_same_tensors(got, tensors)
    assert metadata == {}


# --- inputs that are not C-contiguous little-endian ----------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda: np.arange(24, dtype=np.float32).reshape(4, 6)[::2, 1::2], id="strided"
        ),
        pytest.param(
            lambda: np.asfortranarray(np.arange(12, dtype=np.int64).reshape(3, 4)), id="fortran"
        ),
        pytest.param(lambda: np.arange(6, dtype=">f8").reshape(2, 3), id="big-endian"),
        pytest.param(lambda: np.arange(6, dtype=">i4").reshape(2, 3).T, id="big-endian-transposed"),
        pytest.param(
            lambda: np.broadcast_to(np.arange(3, dtype=np.uint16), (4, 3)), id="broadcast"
        ),
    ],
)
def test_any_layout_is_written_as_c_order_little_endian(make) -> None:
    array = make()
    canonical = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    assert serialize_safetensors({"x": array}) == safetensors.numpy.save({"x": canonical})
    got, _ = parse_safetensors(serialize_safetensors({"x": array}))
    np.testing.assert_array_equal(got["x"], array)


# --- reading -----------------------------------------------------------------------------------


def test_file_tensors_are_read_only_views_of_the_mapped_file(tmp_path: Path) -> None:
    write_safetensors({"w": np.arange(8, dtype=np.float32)}, tmp_path / "t.safetensors")
    array = read_safetensors(tmp_path / "t.safetensors")[0]["w"]
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)
    assert not array.flags.writeable


def test_tensors_come_back_in_file_order() -> None:
    data = serialize_safetensors(
        {"b": np.zeros(1, np.int8), "a": np.zeros(1, np.int8), "c": np.zeros(1, np.float64)}
    )
    assert list(parse_safetensors(data)[0]) == ["c", "a", "b"]


def test_bytes_tensors_are_read_only_even_from_a_bytearray() -> None:
    got, _ = parse_safetensors(bytearray(serialize_safetensors({"w": np.ones(2, np.int32)})))
    assert not got["w"].flags.writeable


def fixture(*parts: str) -> Path:
    return require(PYTORCH_FIXTURES.joinpath(*parts))


@pytest.mark.parametrize("name", ["examples/mnist.safetensors", "modules/multi_layer.safetensors"])
def test_burn_fixture_reads_like_safetensors_and_rewrites_byte_identically(name: str) -> None:
    path = fixture(*name.split("/"))
    tensors, metadata = read_safetensors(path)
    assert_same_tensors(tensors, safetensors.numpy.load_file(path))
    assert metadata == {}
    assert serialize_safetensors(tensors) == path.read_bytes()


def test_multi_layer_fixture_holds_the_model_state_dict() -> None:
    tensors, _ = read_safetensors(fixture("modules", "multi_layer.safetensors"))
    shapes = {name: (array.shape, array.dtype) for name, array in tensors.items()}
    norm = {
        f"norm1.{stat}": ((4,), np.float32)
        for stat in ("weight", "bias", "running_mean", "running_var")
    }
    assert shapes == norm | {
        "norm1.num_batches_tracked": ((), np.int64),
        "conv1.weight": ((4, 3, 3, 3), np.float32),
        "conv1.bias": ((4,), np.float32),
        "fc1.weight": ((16, 256), np.float32),
        "fc1.bias": ((16,), np.float32),
    }


def test_mnist_pt_and_safetensors_hold_the_same_tensor_names_shapes_and_dtypes() -> None:
    """Burn's two MNIST exports come from different training runs (``num_batches_tracked`` is
    3752 in the .pt file and 7504 in the .safetensors file), so only the layout can agree; the
    values of each are checked against an independent decoding instead."""
    from_pt = read_pytorch(fixture("examples", "mnist.pt"))
    from_st, _ = read_safetensors(fixture("examples", "mnist.safetensors"))
    assert {k: (v.shape, v.dtype) for k, v in from_pt.items()} == {
        k: (v.shape, v.dtype) for k, v in from_st.items()
    }


def test_mnist_pt_values_are_its_raw_storage_records() -> None:
    """Each state-dict entry of mnist.pt owns storage record ``mnist/data/<i>`` in order."""
    path = fixture("examples", "mnist.pt")
    tensors = read_pytorch(path)
    with zipfile.ZipFile(path) as archive:
        for index, (name, array) in enumerate(tensors.items()):
            assert array.tobytes() == archive.read(f"mnist/data/{index}"), name


# --- corrupt files -----------------------------------------------------------------------------


def build(header: object, data: bytes = b"", *, raw_header: bytes | None = None) -> bytes:
    """A safetensors file from a header (JSON-encoded unless ``raw_header`` is given)."""
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def entry(dtype: str, shape: list, begin: int, end: int) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


CORRUPT = {
    "shorter than the length prefix": b"\x08\x00\x00",
    "header length past the end": struct.pack("<Q", 64) + b"{}",
    "header length over the limit": struct.pack("<Q", 100_000_001) + b"{}",
    "header not utf-8": build(None, raw_header=b'{"\xff": 1}'),
    "header not an object": build([1, 2]),
    "header with leading space": build(None, raw_header=b" {}"),
    "header not json": build(None, raw_header=b"{not json}"),
    "header with NaN": build(None, raw_header=b'{"__metadata__": {"a": NaN}}'),
    "duplicate tensor name": build(
        None,
        raw_header=b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},'
        b' "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}',
        data=b"\x00\x00",
    ),
    "lone surrogate in a name": build(
        None,
        raw_header=b'{"\\ud800": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}',
        data=b"\x00",
    ),
    "duplicate metadata key": build(None, raw_header=b'{"__metadata__": {"k": "1", "k": "2"}}'),
    "metadata value not a string": build({"__metadata__": {"k": 1}}),
    "metadata not an object": build({"__metadata__": "k"}),
    "entry not an object": build({"a": [1]}),
    "entry without data_offsets": build({"a": {"dtype": "U8", "shape": [1]}}, b"\x00"),
    "unknown dtype": build({"a": entry("F8_E4M3", [1], 0, 1)}, b"\x00"),
    "dtype not a string": build({"a": entry(4, [1], 0, 1)}, b"\x00"),
    "negative dimension": build({"a": entry("U8", [-1], 0, 0)}),
    "float dimension": build({"a": entry("U8", [1.0], 0, 1)}, b"\x00"),
    "bool dimension": build({"a": entry("U8", [True], 0, 1)}, b"\x00"),
    "shape not a list": build({"a": entry("U8", 1, 0, 1)}, b"\x00"),
    "offsets reversed": build({"a": entry("U8", [0], 1, 0)}, b"\x00"),
    "offsets not a pair": build(
        {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}}, b"\x00"
    ),
    "byte length not shape x itemsize": build({"a": entry("F32", [2], 0, 4)}, b"\x00" * 4),
    "first tensor not at offset 0": build({"a": entry("U8", [1], 1, 2)}, b"\x00\x00"),
    "gap between tensors": build(
        {"a": entry("U8", [1], 0, 1), "b": entry("U8", [1], 2, 3)}, b"\x00" * 3
    ),
    "overlapping tensors": build(
        {"a": entry("U16", [1], 0, 2), "b": entry("U8", [1], 1, 2)}, b"\x00" * 2
    ),
    "bytes after the last tensor": build({"a": entry("U8", [1], 0, 1)}, b"\x00\x00"),
    "data shorter than the offsets": build({"a": entry("U8", [4], 0, 4)}, b"\x00"),
    "shape larger than the file": build({"a": entry("F64", [2**40, 2**40], 0, 8)}, b"\x00" * 8),
    "zero-sized shape numpy cannot hold": build({"a": entry("U8", [0, 2**70], 0, 0)}),
    "rank above numpy's limit": build({"a": entry("U8", [1] * 65, 0, 1)}, b"\x00"),
    "bool byte other than 0 or 1": build({"a": entry("BOOL", [2], 0, 2)}, b"\x01\x02"),
}


@pytest.mark.parametrize("defect", sorted(CORRUPT))
def test_corrupt_file_raises_safetensors_error(defect: str) -> None:
    with pytest.raises(SafetensorsError):
        parse_safetensors(CORRUPT[defect])


# Defects the format's README forbids but the safetensors package lets through.
LIBRARY_ACCEPTS = {
    "bool byte other than 0 or 1",
    "duplicate metadata key",
    "header with leading space",
}


@pytest.mark.parametrize("defect", sorted(CORRUPT))
def test_safetensors_package_agrees_on_each_defect_but_three(defect: str) -> None:
    """Guards the corrupt cases: each is refused by the reference reader too (with assorted
    exception types), except the three it is lenient about."""
    if defect in LIBRARY_ACCEPTS:
        safetensors.numpy.load(CORRUPT[defect])
    else:
        with pytest.raises(Exception):  # noqa: B017
            safetensors.numpy.load(CORRUPT[defect])


def test_short_file_on_disk_raises_safetensors_error(tmp_path: Path) -> None:
    (tmp_path / "t.safetensors").write_bytes(b"\x00" * 7)
    with pytest.raises(SafetensorsError, match="too short"):
        read_safetensors(tmp_path / "t.safetensors")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_bytes_raise_only_safetensors_error(data: st.DataObject) -> None:
    valid = bytearray(serialize_safetensors(all_dtypes(), {"k": "v"}))
    for _ in range(data.draw(st.integers(1, 6))):
        valid[data.draw(st.integers(0, len(valid) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(valid)))
    try:
        parse_safetensors(bytes(valid[:cut]))
    except SafetensorsError:
        pass


# --- writing errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tensors", "metadata"),
    [
        pytest.param({"x": np.zeros(2, np.complex64)}, None, id="complex dtype"),
        pytest.param({"x": np.array(["a"])}, None, id="string dtype"),
        pytest.param({"x": [1.0, 2.0]}, None, id="not an array"),
        pytest.param({"__metadata__": np.zeros(1)}, None, id="reserved name"),
        pytest.param({1: np.zeros(1)}, None, id="non-string name"),
        pytest.param({"x": np.zeros(1)}, {"k": 1}, id="non-string metadata"),
        pytest.param({"\ud800": np.zeros(1)}, None, id="lone surrogate name"),
    ],
)
def test_unwritable_input_raises_safetensors_error(tensors: dict, metadata: dict | None) -> None:
    with pytest.raises(SafetensorsError):
        serialize_safetensors(tensors, metadata)


def test_failed_write_leaves_no_partial_header(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    with pytest.raises(SafetensorsError):
        write_safetensors({"x": np.zeros(1, np.complex64)}, path)
    assert not path.exists()


def test_written_file_reads_back_through_the_path_api(tmp_path: Path) -> None:
    tensors = all_dtypes()
    write_safetensors(tensors, tmp_path / "t.safetensors", {"format": "np"})
    got, metadata = read_safetensors(tmp_path / "t.safetensors")
    assert_same_tensors(got, tensors)
    assert metadata == {"format": "np"}


@pytest.mark.parametrize("entry", [[1], {"dtype": "F32", "shape": [2]}, {"dtype": "\x1b[2J" * 3000, "shape": [], "data_offsets": [0, 0]}])
def test_header_errors_quote_a_name_as_a_short_escaped_excerpt(entry: object) -> None:
    name = "\x1b]0;title\x07\u202e" + "n" * 10_000
    header = json.dumps({name: entry}).encode()
    with pytest.raises(SafetensorsError) as caught:
        parse_safetensors(struct.pack("<Q", len(header)) + header)
    message = str(caught.value)
    assert not any(c in message for c in "\x1b\x07\u202e") and len(message) < 600
