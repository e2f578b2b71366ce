"""What Burn's reader (ciborium 0.2.2 + serde) accepts and rejects in the CBOR metadata.

One case per row of ../shared/spec/format.md §2.6; each was verified against Burn's own code.
"""

from __future__ import annotations

import cbor2
import pytest

from burnpack import DType, MetadataDeserializationError, Scalar
from burnpack.core.metadata import decode_metadata

A = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
BASE = cbor2.dumps({"tensors": {"a": A}})


def patched(old: bytes, new: bytes, blob: bytes = BASE) -> bytes:
    assert old in blob
    return blob.replace(old, new, 1)


ACCEPTED = {
    "a tag before a value is ignored": cbor2.dumps({"tensors": {"a": {**A, "dtype": cbor2.CBORTag(100, "F32")}}}),
    "a self-describe tag on the top map is ignored": bytes.fromhex("d9d9f7") + BASE,
    "a tag before a struct key is ignored": cbor2.dumps({"tensors": {"a": {cbor2.CBORTag(7, "dtype"): "F32", "shape": [2], "data_offsets": [0, 8]}}}),
    "a bignum where an integer is expected": patched(b"\x65shape\x81\x02", b"\x65shape\x81\xc2\x41\x02"),
    "a byte string as the shape": patched(b"\x65shape\x81\x02", b"\x65shape\x42\x02\x02"),
    "a byte-string struct key": patched(b"\x65shape", b"\x45shape"),
    "non-shortest integers": patched(b"\x82\x00\x08", b"\x82\x1b\x00\x00\x00\x00\x00\x00\x00\x00\x19\x00\x08"),
    "indefinite-length maps and arrays": bytes.fromhex("bf6774656e736f7273bf6161bf65647479706563463332657368617065") + b"\x9f\x02\xff" + bytes.fromhex("6c646174615f6f66667365747382000" + "8ffffff"),
    "chunked text for a tensor name": patched(b"\x61a", b"\x7f\x61a\xff"),
    "param_id undefined reads as absent": cbor2.dumps({"tensors": {"a": {**A, "param_id": cbor2.undefined}}}),
    "param_id null reads as absent": cbor2.dumps({"tensors": {"a": {**A, "param_id": None}}}),
    "unknown keys anywhere are skipped": cbor2.dumps({"x": [1, {"y": b"z"}], "tensors": {"a": {**A, "strides": [1]}}}),
    "a third data_offsets element at the very end is left unread": patched(b"\x82\x00\x08", b"\x83\x00\x08\x07"),
    "trailing bytes after the item are ignored": BASE + b"\xde\xad",
    "a duplicate tensor name: the last entry wins": bytes.fromhex("a16774656e736f7273a2") + cbor2.dumps("a") + cbor2.dumps({**A, "shape": [9]}) + cbor2.dumps("a") + cbor2.dumps(A),
}


@pytest.mark.parametrize("blob", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_burn_accepts(blob):
    tensor = decode_metadata(blob).tensors["a"]
    assert tensor.dtype == DType.F32 and tensor.data_offsets == (0, 8) and tensor.param_id is None
    assert tensor.shape in ((2,), (2, 2))


def test_a_negative_bignum_scalar_reads_as_its_value():
    blob = cbor2.dumps({"tensors": {}, "scalars": {"x": {"Int": cbor2.CBORTag(3, b"\x05")}}})
    assert decode_metadata(blob).scalars == {"x": Scalar.Int(-6)}


def test_a_sixteen_byte_bignum_in_an_ignored_field_is_skipped():
    blob = cbor2.dumps({"tensors": {}, "x": cbor2.CBORTag(2, b"\xff" * 16)})
    assert decode_metadata(blob).tensors == {}


REJECTED = {
    "an empty metadata blob": (b"", 'Io(Error { kind: UnexpectedEof, message: "failed to fill whole buffer" })'),
    "an array instead of the top map": (cbor2.dumps([{"tensors": {}}]), 'Semantic(None, "invalid type: sequence, expected map")'),
    "a unit variant given as a map": (patched(b"\x63F32", b"\xa1\x63F32\xf6"), 'Semantic(None, "invalid type: null, expected str or bytes")'),
    "the pre-2026 bare Bool dtype": (patched(b"\x63F32", b"\x64Bool"), 'Semantic(None, "unknown variant `shape`, expected one of `Native`, `U8`, `U32`")'),
    "an enum map with two entries": (patched(b"\x63F32", b"\xa2\x64Bool\x66Native\x61x\x00"), 'Semantic(None, "invalid type: map, expected enum")'),
    "an integer struct key": (cbor2.dumps({"tensors": {"a": {**A, 5: 1}}}), 'Semantic(None, "invalid type: integer `5`, expected str or bytes")'),
    "a struct key longer than 4096 bytes": (cbor2.dumps({"tensors": {}, "k" * 5000: 1}), 'Semantic(None, "invalid type: string, expected str or bytes")'),
    "an unknown simple value": (cbor2.dumps({"tensors": {}, "x": 1})[:-1] + b"\xf0", 'Semantic(None, "invalid type: simple, expected known simple value")'),
    "metadata: null": (cbor2.dumps({"tensors": {}, "metadata": None}), 'Semantic(None, "invalid type: null, expected map")'),
    "scalars: null": (cbor2.dumps({"tensors": {}, "scalars": None}), 'Semantic(None, "invalid type: null, expected map")'),
    "an Int above i64::MAX": (cbor2.dumps({"tensors": {}, "scalars": {"x": {"Int": 2**63}}}), 'Semantic(None, "integer too large")'),
    "an integer for a Bool scalar": (cbor2.dumps({"tensors": {}, "scalars": {"x": {"Bool": 1}}}), 'Semantic(Some(27), "expected bool")'),
    "a u8 out of range": (
        cbor2.dumps({"tensors": {"q": {"dtype": {"QFloat": {"value": "Q8S", "store": "Native", "mode": "Symmetric", "tensor": None, "block": {"size": {"storage": [300, 1, 1, 1, 1], "len": 1}, "dtype": "F32"}}}, "shape": [1], "data_offsets": [0, 1]}}}),
        'Semantic(None, "invalid value: integer `300`, expected u8")',
    ),
    "129 nested arrays": (cbor2.dumps({"tensors": {}, "x": 1})[:-1] + b"\x81" * 128 + b"\x00", "RecursionLimitExceeded"),
    "a float where an integer is expected": (patched(b"\x65shape\x81\x02", b"\x65shape\x81\xf9\x40\x00"), 'Semantic(None, "invalid type: floating point `2.0`, expected integer")'),
}


@pytest.mark.parametrize("blob, payload", REJECTED.values(), ids=REJECTED.keys())
def test_burn_rejects(blob, payload):
    with pytest.raises(MetadataDeserializationError) as info:
        decode_metadata(blob)
    assert info.value.payload == payload


def test_127_nested_arrays_in_an_unknown_field_are_still_accepted():
    blob = cbor2.dumps({"tensors": {}, "x": 1})[:-1] + b"\x81" * 126 + b"\x00"
    assert decode_metadata(blob).tensors == {}


# ciborium's Decoder::push re-encodes a pushed-back header in its shortest form and steps the offset
# back by *that* length (ciborium-ll dec.rs push_title), and Decoder::text pushes the header before
# reading the segments. So a Syntax offset taken while a non-shortest header is pushed back points
# inside the header, not at its first byte.
SYNTAX_OFFSET_AFTER_PUSH = {
    "a definite tensor name, shortest header": (b"\xa1\x67tensors\xa1\x62\xff\xfe" + cbor2.dumps(A), "Syntax(10)"),
    "a definite tensor name, 1-byte length header": (b"\xa1\x67tensors\xa1\x78\x02\xff\xfe" + cbor2.dumps(A), "Syntax(11)"),
    "a definite tensor name, 2-byte length header": (b"\xa1\x67tensors\xa1\x79\x00\x02\xff\xfe" + cbor2.dumps(A), "Syntax(12)"),
    "a struct key in a definite map (never pushed back)": (b"\xa1\x78\x02\xff\xfe\x00", "Syntax(1)"),
    "a struct key in an indefinite map (pushed back by the map access)": (b"\xbf\x78\x02\xff\xfe\x00\xff", "Syntax(2)"),
    "a unit variant name (pushed back by deserialize_enum)": (patched(b"\x63F32", b"\x78\x03\xff\xfe\xfd"), "Syntax(20)"),
    "an ignored text value (pushed back by deserialize_any)": (b"\xa2\x61x\x78\x02\xff\xfe\x67tensors\xa0", "Syntax(4)"),
    "a chunk of an indefinite text (read fresh)": (b"\xa2\x61x\x7f\x61a\x78\x01\xff\xff\x67tensors\xa0", "Syntax(6)"),
}


@pytest.mark.parametrize("blob, payload", SYNTAX_OFFSET_AFTER_PUSH.values(), ids=SYNTAX_OFFSET_AFTER_PUSH.keys())
def test_syntax_offset_of_a_pushed_back_non_shortest_header(blob, payload):
    with pytest.raises(MetadataDeserializationError) as info:
        decode_metadata(blob)
    assert info.value.payload == payload


def test_unknown_variant_with_a_combining_mark_is_escaped_as_rust_debug_does():
    # Rust's str Debug escapes Grapheme_Extend characters (combining marks) as \u{..}, even
    # though they are printable; Python's isprintable() would keep them raw.
    with pytest.raises(MetadataDeserializationError) as info:
        decode_metadata(patched(b"\x63F32", cbor2.dumps("e\u0301")))
    assert info.value.payload.startswith('Semantic(None, "unknown variant `e\\u{301}`, expected one of `F64`')
