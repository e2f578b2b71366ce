"""The expectation rules and the spec-derived encoder, checked against Burn's own fixtures."""

from __future__ import annotations

import json

import pytest

from conformance import cbor, rules
from conformance.corpus import load_burn_fixtures
from conformance.model import Content, Desc, PackSpec, T
from conformance.reference import decode_content
from tests.conftest import BURN_PACK_FIXTURES, require

OUTCOME = {"accepted": "accept", "rejected_on_open": "reject_open", "rejected_on_tensor_access": "reject_tensor_access"}


def _reader_cases():
    index = require(BURN_PACK_FIXTURES) / "index.json"
    return [c for c in json.loads(index.read_text())["cases"] if c["outcome"] != "writer_rejected"]


def _sidecar(case):
    return json.loads((BURN_PACK_FIXTURES / case["sidecar"]).read_text())


def test_rules_give_burns_outcome_stage_and_error_kind_for_every_fixture():
    for case in _reader_cases():
        side = _sidecar(case)
        exp = rules.expect((BURN_PACK_FIXTURES / case["file"]).read_bytes(), decode_content).compatible
        assert exp.outcome == OUTCOME[case["outcome"]], case["case"]
        if exp.outcome != "accept":
            entry = "" if exp.outcome == "reject_open" else "_into_tensors"
            burn = {side["reader"][f"from_bytes{entry}"]["error"]["variant"], side["reader"][f"from_file{entry}"]["error"]["variant"]}
            assert burn <= set(exp.errors), case["case"]


def test_rules_give_burns_content_for_every_accepted_fixture():
    for case in _reader_cases():
        if case["outcome"] != "accepted":
            continue
        side = _sidecar(case)
        dump = rules.expect((BURN_PACK_FIXTURES / case["file"]).read_bytes(), decode_content).dump
        keys = ("name", "dtype", "shape", "data_offsets", "param_id", "byte_len", "sha256")
        assert dump["tensors"] == [{k: t[k] for k in keys} for t in side["tensors"]], case["case"]
        assert dump["metadata"] == side["metadata"]
        assert {n: s.get("f64_bits", s["value"]) for n, s in dump["scalars"].items()} == {
            n: s.get("f64_bits", s["value"]) for n, s in side["scalars"].items()}
        assert dump["data_section_start"] == side["data_section_start"]


def test_rules_find_every_file_burns_writer_produced_strictly_valid():
    for case in _reader_cases():
        if case["kind"] == "writer":
            exp = rules.expect((BURN_PACK_FIXTURES / case["file"]).read_bytes(), decode_content)
            assert exp.strict.outcome == "accept", case["case"]


def test_spec_derived_writer_reproduces_burns_writer_fixtures_byte_for_byte():
    vectors = load_burn_fixtures(require(BURN_PACK_FIXTURES))
    for w in vectors.writers:
        if w.expected is None:
            continue
        assert PackSpec.from_json(w.spec).build() == w.expected(), w.id


def test_burn_fixture_folder_loads_every_case_as_a_vector():
    index = json.loads((require(BURN_PACK_FIXTURES) / "index.json").read_text())
    vectors = load_burn_fixtures(BURN_PACK_FIXTURES)
    assert len(vectors.readers) == sum(c["outcome"] != "writer_rejected" for c in index["cases"])
    assert len(vectors.writers) == sum(c["kind"] in ("writer", "writer_error") for c in index["cases"])


def test_truncation_rule_counts_from_the_metadata_end_not_the_data_start():
    spec = PackSpec([T("a", "U8", [3], b"abc")])
    data = spec.build()
    content, _ = spec.plan()
    m = int.from_bytes(data[6:10], "little")
    assert rules.expect(data[: 10 + m + 3], lambda b: content).compatible.outcome == "reject_tensor_access"
    assert rules.expect(data[: 10 + m + 2], lambda b: content).compatible.outcome == "reject_open"


def test_strict_rules_reject_what_compatible_accepts_when_the_cbor_is_not_canonical():
    content = Content({"a": Desc("U8", [1], (0, 1))})
    blob = content.canonical_cbor() + b"\x00"
    from conformance.model import assemble

    exp = rules.expect(assemble(blob, [(0, b"x")]), lambda b: content)
    assert exp.compatible.outcome == "accept"
    assert (exp.strict.outcome, exp.strict.errors) == ("reject_open", ("MetadataDeserializationError",))


@pytest.mark.parametrize(
    "bits, encoded",
    [  # format.md §2.3
        (0x0000000000000000, "f90000"), (0x8000000000000000, "f98000"), (0x3FF0000000000000, "f93c00"),
        (0x40EFFC0000000000, "f97bff"), (0x3E70000000000000, "f90001"), (0x7FF0000000000000, "f97c00"),
        (0xFFF0000000000000, "f9fc00"), (0x7FF8000000000000, "f97e00"), (0xFFF8000000000000, "f9fe00"),
        (0x7FF8400000000000, "f97e10"), (0x7FF8000020000000, "fa7fc00001"), (0x7FF8000000000001, "fb7ff8000000000001"),
        (0x7FF0000000000001, "fb7ff0000000000001"), (0x40EFFC2000000000, "fa477fe100"), (0x40F86A0000000000, "fa47c35000"),
        (0x3F50624DD2F1A9FC, "fb3f50624dd2f1a9fc"),
    ],
)
def test_spec_derived_float_encoder_matches_the_spec_table(bits, encoded):
    assert cbor.shortest_float(bits).hex() == encoded


def test_spec_derived_encoder_reproduces_the_spec_empty_pack():
    assert PackSpec().build() == bytes.fromhex("4e52554201000a000000a16774656e736f7273a0") + bytes(236)
