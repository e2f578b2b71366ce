"""Strict mode rejects what no Burn writer can construct, even when the bytes re-encode identically."""

from __future__ import annotations

import struct

import pytest

import burnpack
from burnpack import DType, QuantMode, QuantScheme, QuantStore, QuantValue, Tensor, Writer
from burnpack._generated.types import BlockScale, BlockSize, Metadata, ScaleDtype, TensorDescriptor
from burnpack.cli import main
from burnpack.metadata import encode_metadata


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


def test_the_writer_refuses_an_element_count_of_2_to_the_64_and_says_why():
    with pytest.raises(burnpack.ValidationError, match=r"18446744073709551616 elements.*2\^64 or more"):
        Writer([Tensor.deferred("a", DType.U8, (2**32, 2**32), 0, lambda: b"")]).size()


def test_validate_strict_prints_the_reason(tmp_path, capsys):
    path = tmp_path / "wrapped.bpk"
    path.write_bytes(_file({"a": TensorDescriptor(DType.F32, (2**32, 2**32), (0, 0))}, 0))
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--strict", str(path)]) == 1
    assert "2^64 or more" in capsys.readouterr().err


def test_the_writer_refuses_a_block_size_no_burn_writer_can_construct():
    with pytest.raises(burnpack.ValidationError, match="not in BlockSize::new's canonical form"):
        Writer([Tensor.deferred("q", _blocked((1, 32, 1, 1, 1), 2), (64,), 68, lambda: bytes(68))]).size()
