"""The schema is the source of truth: generated code is fresh, the CDDL and construct agree."""

from __future__ import annotations

import json

import cbor2
import construct
import pycddl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import burnpack
from burnpack.codec._cbor import fast_loads
from burnpack.codec._cbor import Fallback
from burnpack.codec._generated import layout as generated_layout
from schema import generate, layout
from tests.conftest import BURN_EXAMPLES, BURN_PACK_FIXTURES, fixture_params
from tests.strategies import packs

CDDL = pycddl.Schema(generate.CDDL.read_text())


def test_generated_code_matches_the_schema():
    assert generate.stale_files() == []


def test_generated_header_format_is_the_construct_declaration():
    assert generated_layout.HEADER.size == layout.Header.sizeof() == generated_layout.HEADER_SIZE == 10
    assert generated_layout.MAGIC == layout.MAGIC
    assert generated_layout.MAGIC_BYTES == b"NRUB"


@given(st.binary(min_size=10, max_size=10))
def test_fast_header_parser_agrees_with_construct_on_every_input(head):
    magic, version, metadata_size = generated_layout.HEADER.unpack(head)
    try:
        parsed = layout.Header.parse(head)
    except construct.ConstError:
        assert magic != layout.MAGIC
    else:
        assert (magic, version, metadata_size) == (parsed.magic, parsed.version, parsed.metadata_size)


@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF))
def test_fast_header_writer_agrees_with_construct(version, metadata_size):
    built = layout.Header.build({"version": version, "metadata_size": metadata_size})
    assert built == generated_layout.HEADER.pack(generated_layout.MAGIC, version, metadata_size)


@given(st.integers(0, 1 << 20))
def test_data_section_start_agrees_with_construct_preamble(metadata_size):
    assert generated_layout.data_section_start(metadata_size) == layout.data_section_start(metadata_size)
    start = generated_layout.data_section_start(metadata_size)
    assert start % 256 == 0 and 10 + metadata_size <= start < 10 + metadata_size + 256


def test_construct_preamble_builds_the_empty_pack():
    blob = bytes.fromhex("a16774656e736f7273a0")
    preamble = layout.Preamble.build({"header": {"version": 1, "metadata_size": len(blob)}, "metadata": blob})
    assert preamble == burnpack.save_bytes({})


def _valid_burn_metadata():
    def params() -> list:
        blobs = []
        for sidecar in sorted(BURN_PACK_FIXTURES.glob("*.json")) + [BURN_EXAMPLES / "mnist-model.json"]:
            data = json.loads(sidecar.read_text())
            if data.get("kind") in ("writer", "burn_example"):
                blobs.append(pytest.param(bytes.fromhex(data["metadata_cbor_hex"]), id=data["case"]))
        return blobs

    return fixture_params(BURN_PACK_FIXTURES, params)


@pytest.mark.parametrize("blob", _valid_burn_metadata())
def test_every_valid_burn_fixture_validates_against_the_cddl(blob):
    CDDL.validate_cbor(blob)


@given(packs())
def test_every_metadata_blob_the_writer_produces_validates_against_the_cddl(pack):
    blob = burnpack.Writer(pack.tensors, metadata=pack.metadata, scalars=pack.scalars).plan()[0]
    CDDL.validate_cbor(blob)


def test_cddl_rejects_an_unknown_dtype():
    blob = cbor2.dumps({"tensors": {"a": {"dtype": "F8", "shape": [], "data_offsets": [0, 0]}}})
    with pytest.raises(Exception):
        CDDL.validate_cbor(blob)


def test_fast_decoder_refuses_every_tag():
    for tag in [*range(0, 70_000, 1), 2**32, 2**64 - 1]:
        for payload in ("x", 5, b"ab", [1, 2], {"a": 1}):
            with pytest.raises(Fallback):
                fast_loads(cbor2.dumps(cbor2.CBORTag(tag, payload)))


def test_metadata_encoder_matches_spec_appendix_b():
    expected = bytes.fromhex(
        "a26774656e736f7273a166776569676874a4656474797065634633326573686170658202026c646174615f6f6666736574"
        "7382001068706172616d5f6964182a686d65746164617461a16870726f64756365726e6275726e2d7061636b20646f6373"
    )
    weight = burnpack.Tensor("weight", burnpack.DType.F32, (2, 2), bytes(16), param_id=42)
    writer = burnpack.Writer([weight], metadata={"producer": "burn-pack docs"})
    assert writer.plan()[0] == expected


def test_metadata_types_round_trip_burns_serde_form():
    scheme = burnpack.QuantScheme(
        burnpack.QuantValue.Q4S,
        burnpack.QuantStore.PackedU32(0),
        burnpack.QuantMode.Symmetric,
        burnpack.ScaleDtype.F32,
        burnpack.BlockScale(burnpack.BlockSize((32, 1, 1, 1, 1), 1), burnpack.ScaleDtype.F16),
    )
    serde = {
        "QFloat": {
            "value": "Q4S",
            "store": {"PackedU32": 0},
            "mode": "Symmetric",
            "tensor": "F32",
            "block": {"size": {"storage": [32, 1, 1, 1, 1], "len": 1}, "dtype": "F16"},
        }
    }
    assert burnpack.DType.QFloat(scheme).to_serde() == serde
    assert burnpack.DType.from_serde(serde) == burnpack.DType.QFloat(scheme)
    assert burnpack.DType.Bool(burnpack.BoolStore.U8).to_serde() == {"Bool": "U8"}
    assert burnpack.Scalar.from_serde({"UInt": 2**64 - 1}) == burnpack.Scalar.UInt(2**64 - 1)


def test_from_serde_refuses_anything_else_with_a_value_error():
    for bad in ("f32", {"Bool": "U16"}, {"F32": None}, 5):
        with pytest.raises(ValueError, match="serde form of DType"):
            burnpack.DType.from_serde(bad)
