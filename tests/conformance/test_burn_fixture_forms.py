"""A folder in Burn's fixture form: every documented form loads; a case that cannot be read fails alone."""

from __future__ import annotations

import json

import numpy as np

import burnpack
from conformance import cli
from conformance.corpus import load_burn_fixtures

ERROR = {"variant": "TensorBytesSizeMismatch", "payload": "tensor 'w': deferred source has inconsistent length",
         "display": "Tensor bytes size mismatch: ..."}


def _writer_error_case(name, size_ok):
    calls = {"write": {"ok": False, "error": ERROR}}
    calls["size"] = {"ok": True, "value": 260} if size_ok else {"ok": False, "error": {**ERROR, "variant": "ValidationError"}}
    tensor = {"name": "w", "dtype": "F32", "shape": [1], "param_id": None, "byte_len": 4, "data_hex": "0000803f0000"}
    if not size_ok:
        tensor = {**tensor, "byte_len": 6}
    return {"case": name, "description": name, "kind": "writer_error", "valid": False, "outcome": "writer_rejected",
            "writer_input": {"method": "Writer::write_to_file", "tensors": [tensor], "metadata_calls": [], "scalar_calls": []},
            "writer": calls}


def _folder(tmp_path):
    cases = []
    for name, size_ok in (("size_ok_write_fails", True), ("both_fail", False)):
        side = _writer_error_case(name, size_ok)
        (tmp_path / f"{name}.json").write_text(json.dumps(side))
        cases.append({"case": name, "description": name, "kind": "writer_error", "valid": False, "outcome": "writer_rejected",
                      "error_variant": "TensorBytesSizeMismatch", "file": None, "sidecar": f"{name}.json"})
    burnpack.save({"a": np.zeros(2, np.float32)}, tmp_path / "good.bpk")
    (tmp_path / "good.json").write_text(json.dumps({"case": "good"}))  # a sidecar without what the runner needs
    cases.append({"case": "good", "description": "unreadable sidecar", "kind": "writer", "valid": True, "outcome": "accepted",
                  "file": "good.bpk", "sidecar": "good.json"})
    cases.append({"case": "missing", "description": "no sidecar", "kind": "corrupt", "valid": False, "outcome": "rejected_on_open",
                  "file": "missing.bpk", "sidecar": "missing.json"})
    (tmp_path / "index.json").write_text(json.dumps({"case_count": len(cases), "cases": cases}))
    return tmp_path


def test_a_writer_error_whose_size_succeeds_and_write_fails_is_a_refusal_of_the_write(tmp_path):
    vectors = load_burn_fixtures(_folder(tmp_path))
    writers = {w.id: w for w in vectors.writers}
    assert writers["size_ok_write_fails"].refusal == ("TensorBytesSizeMismatch",)
    assert writers["size_ok_write_fails"].problem is None
    assert writers["both_fail"].refusal == ("ValidationError", "TensorBytesSizeMismatch")


def test_cases_the_runner_cannot_read_fail_with_a_reason_and_the_rest_still_run(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert cli.main(["run", "--self-test", "--vectors", str(folder), "--json-report", str(tmp_path / "r.json")]) == 1
    results = {(r["kind"], r["id"]): r for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert results[("writer", "size_ok_write_fails")]["status"] == "pass"
    assert results[("writer", "both_fail")]["status"] == "pass"
    for broken in ("good", "missing"):
        assert results[("reader", broken)]["status"] == "fail"
        assert "cannot read this case" in results[("reader", broken)]["message"]


def test_a_corpus_vector_the_runner_cannot_read_fails_alone(tmp_path):
    import shutil

    from conformance.corpus import DEFAULT_VECTORS, load_vectors

    corpus = tmp_path / "corpus"
    shutil.copytree(DEFAULT_VECTORS, corpus)
    (corpus / "reader" / "names" / "long_300.json").unlink()
    manifest = json.loads((corpus / "manifest.json").read_text())
    writer = next(e for e in manifest["vectors"] if e["kind"] == "writer")
    del writer["spec"]
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    vectors = load_vectors(corpus)
    broken = {v.id: v.problem for v in [*vectors.readers, *vectors.writers] if v.problem}
    assert set(broken) == {"names/long_300", writer["id"]}
    assert all("cannot read this case" in why for why in broken.values())
    assert len(vectors.readers) == manifest["counts"]["reader"]


def test_a_spec_byte_len_other_than_the_data_plans_then_fails_while_writing():
    import pytest

    from burnpack.core.spec import writer_from_spec

    writer = writer_from_spec({"tensors": [{"name": "w", "dtype": "F32", "shape": [1], "byte_len": 4, "data_hex": "0000803f00"}]})
    assert writer.size() == 260
    with pytest.raises(burnpack.TensorBytesSizeMismatch):
        writer.to_bytes()
