"""Strict mode rejects what no Burn writer can construct, even when the bytes re-encode identically."""

from __future__ import annotations

import struct

import pytest

import burnpack
from burnpack import DType, QuantMode, QuantScheme, QuantStore, QuantValue, Tensor, Writer
from burnpack.codec._generated.metadata import BlockScale, BlockSize, Metadata, ScaleDtype, TensorDescriptor
from burnpack.cli.main import main
from burnpack.core.metadata import encode_metadata


def _file(tensors: dict[str, TensorDescriptor], data_size: int) -> bytes:
    blob = encode_metadata(Metadata(tensors, {}, {}))
    head = b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob
    return head + bytes(-len(head) % 256) + bytes(data_size)


def _blocked(storage, length):
    block = BlockScale(BlockSize(tuple(storage), length), ScaleDtype.F32)
    return DType.QFloat(QuantScheme(QuantValue.Q8S, QuantStore.Native, QuantMode.Symmetric, None, block))


def _quantized(storage, length) -> bytes:
    return _file({"q": TensorDescriptor(_blocked(storage, length), (64,), (0, 68))}, 68)


def test_a_canonical_block_size_is_strictly_valid():
    burnpack.load(_quantized((32, 1, 1, 1, 1), 1), strict=True)
    burnpack.load(_quantized((4, 1, 1, 1, 1), 2), strict=True)  # a kept 1 after the first dim


@pytest.mark.parametrize(
    "storage, length, problem",
    [
        ((32, 1, 1, 1, 1), 6, "len 6 exceeds its 5 storage slots"),
        ((32, 1, 1, 1, 1), 255, "len 255 exceeds"),
        ((32, 0, 0, 0, 0), 1, r"Burn writes \{storage: \[32, 1, 1, 1, 1\], len: 1\}"),
        ((1, 32, 1, 1, 1), 2, r"Burn writes \{storage: \[32, 1, 1, 1, 1\], len: 1\}"),
        ((1, 1, 1, 1, 1), 1, r"Burn writes \{storage: \[1, 1, 1, 1, 1\], len: 0\}"),
    ],
    ids=["len 6", "len 255", "unused slots not 1", "a leading 1 kept", "only a 1"],
)
def test_strict_mode_rejects_a_block_size_block_size_new_cannot_produce(storage, length, problem):
    data = _quantized(storage, length)
    assert burnpack.load(data).names == ["q"]  # Burn's reader opens it
    with pytest.raises(burnpack.ValidationError, match=problem):
        burnpack.load(data, strict=True)


def test_strict_mode_says_why_an_element_count_of_2_to_the_64_is_rejected():
    data = _file({"a": TensorDescriptor(DType.F32, (2**32, 2**32), (0, 0))}, 0)  # what Burn's release build writes
    assert burnpack.load(data).names == ["a"]
    with pytest.raises(burnpack.ValidationError, match=r"18446744073709551616 elements.*2\^64 or more.*wraps"):
        burnpack.load(data, strict=True)


def test_the_writer_writes_an_element_count_of_2_to_the_64_as_burns_release_build_does():
    data = _file({"a": TensorDescriptor(DType.F32, (2**32, 2**32), (0, 0))}, 0)
    assert Writer(burnpack.load(data).tensors()).to_bytes() == data  # the count wraps to 0 bytes, as in Burn


def test_the_writer_says_a_length_is_checked_against_the_wrapped_count():
    with pytest.raises(burnpack.ValidationError, match=r"need 0 \(73786976294838206464 modulo 2\^64"):
        Writer([Tensor.deferred("a", DType.F32, (2**32, 2**32), 4, lambda: bytes(4))]).size()


def test_validate_strict_prints_the_reason(tmp_path, capsys):
    path = tmp_path / "wrapped.bpk"
    path.write_bytes(_file({"a": TensorDescriptor(DType.F32, (2**32, 2**32), (0, 0))}, 0))
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--strict", str(path)]) == 1
    assert "2^64 or more" in capsys.readouterr().err


@pytest.mark.parametrize(
    "storage, length",
    [((32, 1, 1, 1, 1), 6), ((32, 0, 0, 0, 0), 1), ((1, 32, 1, 1, 1), 2), ((1, 1, 1, 1, 1), 1)],
    ids=["len 6", "unused slots not 1", "a leading 1 kept", "only a 1"],
)
def test_the_writer_writes_a_block_size_burn_read_back_byte_for_byte(storage, length):
    data = _quantized(storage, length)
    assert Writer(burnpack.load(data).tensors()).to_bytes() == data  # Burn's writer writes what its reader read


def test_repack_writes_a_file_with_a_non_canonical_block_size_byte_for_byte(tmp_path):
    source, out = tmp_path / "q.bpk", tmp_path / "out.bpk"
    source.write_bytes(_quantized((1, 32, 1, 1, 1), 2))
    assert main(["repack", str(source), str(out)]) == 0
    assert out.read_bytes() == source.read_bytes()


def test_the_writer_reports_burns_first_error_before_its_own_limits():
    big = Tensor.deferred("big", DType.U8, (11 << 30,), 11 << 30, bytes)  # over MAX_TENSOR_SIZE: burnpack's limit
    with pytest.raises(burnpack.ValidationError, match="Duplicate tensor name 'a'"):
        Writer([big, Tensor.deferred("a", DType.U8, (1,), 1, bytes), Tensor.deferred("a", DType.U8, (1,), 1, bytes)]).size()
    with pytest.raises(burnpack.ValidationError, match="exceeds the maximum of 10737418240 bytes"):
        Writer([big]).size()
