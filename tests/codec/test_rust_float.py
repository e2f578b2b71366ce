"""Floats in error payloads are Rust's ``Display`` text (core::num::flt2dec shortest digits)."""

from __future__ import annotations

import random
import struct
from decimal import Decimal
from fractions import Fraction

import cbor2
import pytest

from burnpack import MetadataDeserializationError
from burnpack.codec._cbor import rust_float
from burnpack.core.metadata import decode_metadata


def python_display(value: float) -> str:
    text = format(Decimal(repr(value)), "f")
    return text if "." in text else text + ".0"


@pytest.mark.parametrize(
    "value, text",
    [
        (951.04351806640625, "951.0435180664063"),  # Python's repr: ...062 (round half to even)
        (0.5, "0.5"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e21, "1000000000000000000000.0"),
        (1.5e-7, "0.00000015"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (float("nan"), "NaN"),
        (5e-324, "0." + "0" * 323 + "5"),
        (2.0**-1022, format(Decimal(repr(2.0**-1022)), "f")),
    ],
)
def test_rust_display_text(value, text):
    assert rust_float(value) == text


def _f32_widened_samples(n):
    rng = random.Random(11)
    for _ in range(n):
        value = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
        if value == value and abs(value) != float("inf"):
            yield value


def test_on_a_tie_between_two_shortest_forms_rust_takes_the_larger_magnitude():
    ties = 0
    for value in _f32_widened_samples(20000):  # f32 values widened to f64 are where ties live
        ours, python = rust_float(value), python_display(value)
        assert float(ours) == value
        if ours != python:
            ties += 1
            exact = Fraction(value)
            assert abs(Fraction(ours) - exact) == abs(Fraction(python) - exact)
            assert abs(Fraction(ours)) > abs(Fraction(python))
    assert ties > 10


def test_away_from_ties_the_digits_are_the_shortest_round_trip_ones():
    rng = random.Random(7)
    for _ in range(20000):
        bits = rng.getrandbits(64) if rng.random() < 0.8 else rng.getrandbits(52)  # some subnormals
        value = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if value != value or abs(value) == float("inf"):
            continue
        ours, python = rust_float(value), python_display(value)
        assert float(ours) == value
        exact = Fraction(value)
        assert ours == python or abs(Fraction(ours) - exact) == abs(Fraction(python) - exact)


def test_a_metadata_error_payload_carries_rusts_text_for_a_tie():
    blob = cbor2.dumps({"tensors": {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}})
    blob = blob.replace(b"\x65shape\x81\x02", b"\x65shape\x81\xfa" + struct.pack(">f", 951.04351806640625), 1)
    with pytest.raises(MetadataDeserializationError) as info:
        decode_metadata(blob)
    assert info.value.payload == 'Semantic(None, "invalid type: floating point `951.0435180664063`, expected integer")'
