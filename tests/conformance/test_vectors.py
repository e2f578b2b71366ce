"""The checked-in corpus: generated from the spec, deterministic, complete, small, verified."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conformance import corpus as corpus_mod
from conformance import generate
from conformance.crosscheck import cross_check
from conformance.corpus import DEFAULT_VECTORS, CorpusError, load_vectors
from tests.conftest import BURN_PACK_FIXTURES, require

ISSUE_CATEGORIES = {"dtype", "shape", "names", "param_id", "metadata", "scalars", "layout", "header", "truncation",
                    "offsets", "cbor", "legacy", "check_order", "limits", "writer_refusal"}


def test_checked_in_corpus_is_what_the_generators_produce(tmp_path):
    corpus_mod.write_corpus(tmp_path)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    have = sorted(p.relative_to(DEFAULT_VECTORS) for p in DEFAULT_VECTORS.rglob("*") if p.is_file())
    assert fresh == have
    stale = [str(p) for p in fresh if (tmp_path / p).read_bytes() != (DEFAULT_VECTORS / p).read_bytes()]
    assert stale == [], "run `burnpack-conformance generate`"


def test_the_readmes_manifest_example_is_rendered_from_the_checked_in_manifest():
    manifest = json.loads((DEFAULT_VECTORS / "manifest.json").read_text(encoding="utf-8"))
    text = corpus_mod.README.read_text(encoding="utf-8")
    assert text == corpus_mod.readme_text(manifest), "run `burnpack-conformance generate`"
    counts = manifest["counts"]
    assert f'"counts": {{"reader": {counts["reader"]}, "writer": {counts["writer"]}}}' in text


def test_a_stale_manifest_example_is_reported_by_generate_check(tmp_path, monkeypatch, capsys):
    from conformance import cli

    stale = tmp_path / "VECTORS.md"
    stale.write_text(corpus_mod.README.read_text(encoding="utf-8").replace('"counts": {"reader": ', '"counts": {"reader": 1'))
    monkeypatch.setattr(corpus_mod, "README", stale)
    assert cli.main(["generate", "--check"]) == 2
    assert "VECTORS.md (its manifest example)" in capsys.readouterr().out


def test_the_documentation_states_the_corpus_counts():
    import re

    counts = json.loads((DEFAULT_VECTORS / "manifest.json").read_text(encoding="utf-8"))["counts"]
    page = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text(encoding="utf-8")
    stated = re.search(r"(\d+) reader vectors and (\d+) writer vectors", page)
    assert stated and (int(stated[1]), int(stated[2])) == (counts["reader"], counts["writer"]), "update docs/conformance.md"


def test_generators_are_deterministic(corpus):
    again = generate.build_corpus()
    assert [c.build()[0] for c in again.readers if not c.runtime] == [c.build()[0] for c in corpus.readers if not c.runtime]
    assert [w.spec for w in again.writers] == [w.spec for w in corpus.writers]


def test_declared_expectations_agree_with_the_reference_implementation(corpus):
    assert cross_check(corpus) == []


def test_corpus_has_every_category_the_issue_lists(vectors):
    categories = {v.category for v in vectors.readers} | {w.category for w in vectors.writers}
    assert ISSUE_CATEGORIES <= categories


def test_corpus_has_the_specific_cases_the_issue_names(vectors):
    ids = {v.id for v in vectors.readers} | {w.id for w in vectors.writers}
    for needed in ["dtype/bool_native", "dtype/bool_u8", "dtype/bool_u32", "shape/scalar_0d", "shape/zero_size_1d",
                   "names/astral_vs_bmp", "param_id/above_i64_max", "scalars/nan_payloads", "scalars/float_subnormals",
                   "scalars/float_zero_signs", "scalars/float_infinities", "layout/data_order_reversed", "layout/empty_pack",
                   "layout/metadata_end_256", "truncation/inside_padding_gap", "offsets/end_before_start",
                   "offsets/start_overflow", "offsets/beyond_file", "offsets/overlapping", "offsets/unaligned_start",
                   "cbor/indefinite_top_and_tensors", "cbor/tag_self_describe", "cbor/bignum_param_id", "cbor/nonshortest_ints",
                   "cbor/depth_127_arrays", "cbor/depth_128_arrays", "cbor/utf8_invalid_name", "cbor/trailing_bytes_in_region",
                   "cbor/dup_tensor_name", "cbor/dup_descriptor_field", "cbor/missing_tensors", "cbor/unknown_key_descriptor",
                   "legacy/prealignment_two_tensors", "legacy/old_bool_dtype", "legacy/old_quant_scheme_per_block",
                   "limits/tensor_count_over_limit", "writer_refusal/duplicate_name", "writer_refusal/length_short",
                   # issue 32: decoder conveniences, the undocumented rules, the strict check order
                   "names/leading_bom", "metadata/leading_bom", "scalars/leading_bom_name", "cbor/dtype_leading_bom",
                   "names/normalization_forms", "names/line_breaks", "cbor/utf8_cesu8_pair_name", "cbor/scalar_signalling_nan_f32",
                   "cbor/depth_tags_127", "cbor/tags_200_on_param_id", "offsets/byte_size_wraps_to_zero",
                   "check_order/prealignment_and_noncanonical_metadata", "check_order/truncated_and_version_0"]:
        assert needed in ids, needed
    qfloat = [v for v in vectors.readers if v.id.startswith("dtype/qfloat_")]
    assert len({json.dumps(v.expect.dump["tensors"][0]["dtype"]) for v in qfloat}) >= 8


def test_every_outcome_occurs_at_both_levels(vectors):
    seen = {(level, v.expect.level(level).outcome) for v in vectors.readers for level in ("compatible", "strict")}
    for level in ("compatible", "strict"):
        for outcome in ("accept", "reject_open"):
            assert (level, outcome) in seen
    assert ("compatible", "reject_tensor_access") in seen


def test_checked_in_corpus_stays_small():
    size = sum(p.stat().st_size for p in DEFAULT_VECTORS.rglob("*") if p.is_file())
    assert size < 3_000_000


def test_metadata_end_vector_lands_exactly_on_a_256_boundary(vectors):
    v = next(v for v in vectors.readers if v.id == "layout/metadata_end_256")
    data = v.data()
    assert 10 + int.from_bytes(data[6:10], "little") == 256 == v.expect.dump["data_section_start"]


def test_writer_vectors_expect_the_bytes_of_the_reader_vector_with_their_id(vectors):
    readers = {v.id: v for v in vectors.readers}
    for w in vectors.writers:
        if w.expected is not None:
            assert w.expected() == readers[w.id].data()


def test_runtime_vectors_are_regenerated_and_verified(vectors):
    runtime = [v for v in vectors.readers if v.path is None]
    assert {v.id for v in runtime} == {
        "limits/tensor_count_at_limit",
        "limits/tensor_count_over_limit",
        "header/empty_file",
        "header/metadata_size_zero",
        "layout/empty_pack",
    }
    manifest = json.loads((DEFAULT_VECTORS / "manifest.json").read_text())
    sha = {e["id"]: e["sha256"] for e in manifest["vectors"] if e.get("runtime")}
    for v in runtime:
        assert hashlib.sha256(v.data()).hexdigest() == sha[v.id]


def test_no_checked_in_vector_is_byte_identical_with_a_burn_fixture():
    fixtures = require(BURN_PACK_FIXTURES)
    burn = {hashlib.sha256(p.read_bytes()).hexdigest() for p in fixtures.glob("*.bpk")}
    ours = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in DEFAULT_VECTORS.rglob("*") if p.is_file()}
    assert [p for p, digest in ours.items() if digest in burn] == []


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "vectors"
    shutil.copytree(DEFAULT_VECTORS, dst)
    return dst


def test_a_tampered_vector_file_is_refused(tmp_path):
    root = _copy(tmp_path)
    target = root / "reader" / "dtype" / "f32.bpk"
    target.write_bytes(target.read_bytes()[:-1] + b"\x00")
    vector = next(v for v in load_vectors(root).readers if v.id == "dtype/f32")
    with pytest.raises(CorpusError, match="sha256"):
        vector.data()


def test_a_runtime_vector_whose_hash_does_not_match_is_refused(tmp_path):
    root = _copy(tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    for e in manifest["vectors"]:
        if e["id"] == "limits/tensor_count_over_limit":
            e["sha256"] = "0" * 64
    (root / "manifest.json").write_text(json.dumps(manifest))
    corpus_mod._RUNTIME_CACHE.pop("limits/tensor_count_over_limit", None)
    vector = next(v for v in load_vectors(root).readers if v.id == "limits/tensor_count_over_limit")
    with pytest.raises(CorpusError, match="sha256"):
        vector.data()


def test_a_directory_without_manifest_or_index_is_refused(tmp_path):
    with pytest.raises(CorpusError, match="manifest.json"):
        load_vectors(tmp_path)


def test_select_keeps_matching_ids_and_categories(vectors):
    chosen = vectors.select(["scalars", "cbor/tag_*"])
    assert {v.category for v in chosen.readers} == {"scalars", "cbor"}
    assert all(v.category == "scalars" or v.id.startswith("cbor/tag_") for v in chosen.readers)
