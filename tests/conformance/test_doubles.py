"""Every deliberately broken reader and writer is caught by the corpus (and by the vector aimed at it)."""

from __future__ import annotations

import pytest

import conformance
from conformance import doubles

# double → the vectors aimed at its bug (each must catch it)
READER_CATCHES = {
    "magic_big_endian": ["dtype/f32", "header/magic_big_endian"],
    "data_order_from_sorted_names": ["layout/data_order_reversed", "layout/data_order_interleaved"],
    "alignment_ignored": ["dtype/f32", "layout/metadata_end_255"],
    "truncation_unchecked": ["truncation/inside_padding_gap", "truncation/by_gap_plus_one"],
    "truncation_overchecked": ["truncation/last_byte", "truncation/by_gap_exactly"],
    "unknown_keys_rejected": ["cbor/unknown_key_descriptor", "cbor/unknown_key_top_level"],
    "nan_sign_dropped": ["scalars/nan_payloads"],
    "float_scalars_as_f32": ["scalars/float_f64_width"],
    "version_must_be_1": ["header/version_0"],
    "trailing_bytes_rejected": ["offsets/trailing_bytes"],
    "cbor2_decoder": ["cbor/dup_descriptor_field", "cbor/tag_on_param_id", "cbor/depth_128_arrays", "cbor/unknown_key_simple_value"],
    "param_id_signed": ["param_id/above_i64_max", "param_id/u64_max"],
    "names_sorted_utf16": ["names/astral_vs_bmp"],
    "length_checked": ["offsets/length_shorter_than_shape", "offsets/huge_shape_small_data"],
    "recursion_limit_127": ["cbor/depth_127_arrays"],
    "strict_is_compatible": ["header/version_0", "cbor/trailing_bytes_in_region"],
    "crashes_on_empty_tensors": ["shape/zero_size_1d", "shape/empty_middle"],
    "bom_stripped": ["names/leading_bom", "names/leading_bom_beside_plain", "metadata/leading_bom", "scalars/leading_bom_name",
                     "cbor/dtype_leading_bom", "cbor/struct_key_leading_bom"],
    "nfc_normalised": ["names/combining_vs_precomposed", "names/normalization_forms", "metadata/normalization_forms"],
}
WRITER_CATCHES = {
    "sorted_data_order": ["layout/data_order_reversed"],
    "no_alignment": ["dtype/f32"],
    "cbor2_canonical": ["dtype/f32", "names/prefix_order"],
    "cbor2_default_floats": ["scalars/float_f16_width", "scalars/float_zero_signs"],
    "writer_nan_sign_dropped": ["scalars/nan_payloads"],
    "writer_magic_big_endian": ["dtype/f32"],
    "param_id_null": ["param_id/absent"],
    "empty_maps_written": ["dtype/f32"],
    "struct_keys_sorted": ["dtype/f32"],
    "qfloat_nulls_omitted": ["dtype/qfloat_default_q8f"],
    "no_padding_for_empty_last": ["shape/empty_last"],
    "padding_after_last": ["dtype/f32"],
    "duplicates_allowed": ["writer_refusal/duplicate_name"],
    "length_unchecked": ["writer_refusal/length_short", "writer_refusal/bool_u32_length"],
    "keys_sorted_utf16": ["names/astral_vs_bmp"],
}


def test_every_double_has_the_vectors_aimed_at_it():
    assert set(READER_CATCHES) == set(doubles.READERS)
    assert set(WRITER_CATCHES) == set(doubles.WRITERS)
    assert len(doubles.READERS) >= 10 and len(doubles.WRITERS) >= 10


@pytest.mark.parametrize("name", sorted(READER_CATCHES))
def test_broken_reader_is_caught(name, vectors):
    report = conformance.run_reader(doubles.READERS[name][0], vectors=vectors, levels=("compatible", "strict"),
                                    select=READER_CATCHES[name])
    caught = {r.id for r in report.failures}
    assert caught, f"{name} ({doubles.READERS[name][1]}) passed every vector aimed at it"
    assert caught == set(READER_CATCHES[name]), f"{name} slipped through {set(READER_CATCHES[name]) - caught}"


@pytest.mark.parametrize("name", sorted(WRITER_CATCHES))
def test_broken_writer_is_caught(name, vectors):
    report = conformance.run_writer(doubles.WRITERS[name][0], vectors=vectors, select=WRITER_CATCHES[name])
    caught = {r.id for r in report.failures}
    assert caught == set(WRITER_CATCHES[name]), f"{name} ({doubles.WRITERS[name][1]}) slipped through"


def test_the_aimed_vectors_pass_the_reference_implementation(vectors):
    from conformance import reference

    ids = sorted({i for ids in list(READER_CATCHES.values()) + list(WRITER_CATCHES.values()) for i in ids})
    assert conformance.run_reader(reference.dump, vectors=vectors, levels=("compatible", "strict"), select=ids).ok
    assert conformance.run_writer(reference.write, vectors=vectors, select=ids).ok


def test_a_broken_reader_is_caught_through_the_external_command_path(vectors):
    import sys

    cmd = f"{sys.executable} -m conformance.doubles reader data_order_from_sorted_names {{path}}"
    report = conformance.run_readers(vectors.select(["layout/data_order_reversed", "dtype/f32"]), conformance.ExternalReader(cmd))
    assert {r.id: r.status for r in report.results} == {"layout/data_order_reversed": "fail", "dtype/f32": "pass"}
