"""Metadata cut short anywhere: every decoding tier rejects it as Burn does.

ciborium reads a definite-length item token by token; when any head, length argument or payload
runs past the end of the metadata, serde gets an I/O ``UnexpectedEof`` and Burn's reader fails with
``MetadataDeserializationError``. A strict prefix of valid metadata therefore never opens.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import burnpack
from burnpack import MetadataDeserializationError, QuantMode, QuantScheme, QuantStore, QuantValue, Scalar, Tensor, Writer
from burnpack.codec._generated.metadata import BlockScale, BlockSize, DType, ScaleDtype
from burnpack.core.metadata import decode_metadata, decode_metadata_exact

EOF = 'Io(Error { kind: UnexpectedEof, message: "failed to fill whole buffer" })'


_BLOCKED = QuantScheme(
    QuantValue.Q8S, QuantStore.Native, QuantMode.Symmetric, None, BlockScale(BlockSize((32, 1, 1, 1, 1), 1), ScaleDtype.F32)
)


def _tensors(n, *, name=lambda i: f"t{i}", shape=(3, 2), param_id=None):
    return [
        Tensor.from_numpy(name(i), np.zeros(shape, np.float32), param_id=param_id)
        for i in range(n)
    ]


SHAPES = {
    "no tensors": lambda: Writer(),
    "one tensor": lambda: Writer(_tensors(1)),
    "24 tensors (a one-byte map length)": lambda: Writer(_tensors(24)),
    "256 tensors (a two-byte map length)": lambda: Writer(_tensors(256, shape=(1,))),
    "long names (one- and two-byte text lengths)": lambda: Writer(
        _tensors(2, name=lambda i: ("n" * 30, "m" * 300)[i])
    ),
    "large dims and a param id": lambda: Writer(
        [Tensor.deferred("big", DType.U8, (70000, 70000), 70000 * 70000, lambda: b"", param_id=2**40)]
    ),
    "metadata and scalars": lambda: Writer(
        _tensors(1),
        metadata={"k": "v", "long" * 10: "x" * 300},
        scalars={"f": 951.04351806640625, "i": -(2**40), "u": Scalar.UInt(2**64 - 1), "b": True},
    ),
    "a quantized dtype": lambda: Writer(
        [Tensor.deferred("q", DType.QFloat(_BLOCKED), (4,), 8, lambda: b"\0" * 8)]
    ),
}


def _prefix_lengths(blob: bytes) -> list[int]:
    if len(blob) <= 3000:
        return list(range(len(blob)))
    return list(range(400)) + list(range(len(blob) - 400, len(blob)))


@pytest.mark.parametrize("make", SHAPES.values(), ids=SHAPES.keys())
def test_every_strict_prefix_of_valid_metadata_is_an_unexpected_eof(make):
    blob, _, _ = make().plan()
    assert decode_metadata(blob) == decode_metadata_exact(blob)
    for n in _prefix_lengths(blob):
        with pytest.raises(MetadataDeserializationError) as exact:
            decode_metadata_exact(blob[:n])
        assert exact.value.payload == EOF, n
        with pytest.raises(MetadataDeserializationError) as tiered:
            decode_metadata(blob[:n])
        assert tiered.value.payload == EOF, n


@pytest.mark.parametrize("width, present", [(w, p) for w in (1, 2, 4, 8) for p in range(w)])
def test_a_tensors_map_head_whose_length_is_cut_off_does_not_open(width, present):
    head = {1: b"\xb8", 2: b"\xb9", 4: b"\xba", 8: b"\xbb"}[width]
    meta = b"\xa1\x67tensors" + head + b"\0" * present
    file = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    with pytest.raises(MetadataDeserializationError) as info:
        burnpack.load(file)
    assert info.value.payload == EOF
