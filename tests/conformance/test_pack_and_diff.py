"""`burnpack pack SPEC OUT`, `burnpack diff A B`, the batch dump, and the protocol's JSON Schemas."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import burnpack
from burnpack.cli import main as cli
from burnpack.cli.batch import serve
from burnpack.core.spec import spec_from_pack, writer_from_spec
from burnpack.errors import SpecError
from conformance.reference import dump

HERE = Path(__file__).resolve().parents[2] / "conformance"


def _schema(name: str):
    schema = json.loads((HERE / name).read_text())
    registry_schema = json.loads((HERE / "dump.schema.json").read_text())
    from referencing import Registry, Resource

    registry = Registry().with_resource("dump.schema.json", Resource.from_contents(registry_schema))
    return jsonschema.Draft202012Validator(schema, registry=registry)


def test_every_reference_dump_of_the_corpus_matches_the_json_schema(vectors):
    validator = _schema("dump.schema.json")
    for v in vectors.readers:
        if v.path is not None:
            for level in ("compatible", "strict"):
                validator.validate(dump(v.path, level))
            if v.expect.dump is not None:
                validator.validate(v.expect.dump)


def test_every_writer_spec_of_the_corpus_matches_the_json_schema(vectors):
    validator = _schema("spec.schema.json")
    for w in vectors.writers:
        if not w.refusal:
            validator.validate(w.spec)


def test_pack_builds_the_exact_file_of_a_spec(vectors, tmp_path):
    w = next(w for w in vectors.writers if w.id == "scalars/nan_payloads")
    (tmp_path / "spec.json").write_text(json.dumps(w.spec))
    assert cli.main(["pack", str(tmp_path / "spec.json"), str(tmp_path / "out.bpk")]) == 0
    assert (tmp_path / "out.bpk").read_bytes() == w.expected()


def test_pack_refuses_what_burns_writer_refuses_and_writes_nothing(vectors, tmp_path, capsys):
    w = next(w for w in vectors.writers if w.id == "writer_refusal/duplicate_name")
    (tmp_path / "spec.json").write_text(json.dumps(w.spec))
    assert cli.main(["pack", "--json", str(tmp_path / "spec.json"), str(tmp_path / "out.bpk")]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["variant"] == "ValidationError"
    assert not (tmp_path / "out.bpk").exists()


def test_pack_reports_a_malformed_spec_with_exit_2(tmp_path):
    (tmp_path / "spec.json").write_text('{"tensors": [{"name": "w"}]}')
    assert cli.main(["pack", str(tmp_path / "spec.json"), str(tmp_path / "out.bpk")]) == 2
    with pytest.raises(SpecError, match="dtype"):
        writer_from_spec({"tensors": [{"name": "w"}]})


def test_spec_from_pack_round_trips_a_file_in_its_data_order(vectors):
    v = next(v for v in vectors.readers if v.id == "layout/data_order_reversed")
    with burnpack.load(v.data()) as pack:
        spec = spec_from_pack(pack)
    assert [t["name"] for t in spec["tensors"]] == ["z", "m", "a"]
    assert writer_from_spec(spec).to_bytes() == v.data()


def _save(path: Path, tensors: dict, **kw) -> str:
    burnpack.save(tensors, path, **kw)
    return str(path)


def test_diff_of_a_file_with_itself_is_identical_with_exit_0(tmp_path, capsys):
    a = _save(tmp_path / "a.bpk", {"w": np.arange(4, dtype=np.float32)})
    assert cli.main(["diff", a, a]) == 0
    assert capsys.readouterr().out.strip() == "identical"


def test_diff_reports_added_removed_and_changed_tensors_with_numeric_stats(tmp_path, capsys):
    a = _save(tmp_path / "a.bpk", {"w": np.array([1.0, 2.0, 4.0], np.float32), "gone": np.zeros(1, np.int8),
                                   "m": np.zeros(2, np.int64)}, metadata={"k": "v"}, scalars={"lr": 0.1})
    b = _save(tmp_path / "b.bpk", {"w": np.array([1.0, 2.5, 4.0], np.float32), "new": np.zeros(1, np.int8),
                                   "m": np.zeros((1, 2), np.int64)}, metadata={"k": "w"}, scalars={"lr": 0.2, "step": 3})
    assert cli.main(["diff", "--json", a, b]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["added"] == ["new"] and result["removed"] == ["gone"]
    changed = {c["name"]: c for c in result["changed"]}
    assert changed["w"]["max_abs"] == 0.5 and changed["w"]["max_rel"] == pytest.approx(0.2) and changed["w"]["elements_differ"] == 1
    assert changed["m"]["changes"] == {"shape": {"a": [2], "b": [1, 2]}}
    assert result["metadata"] == {"k": {"a": "v", "b": "w"}}
    assert set(result["scalars"]) == {"lr", "step"}


def test_diff_reports_dtype_and_param_id_changes(tmp_path, capsys):
    x = np.arange(3, dtype=np.float32)
    a = _save(tmp_path / "a.bpk", [burnpack.Tensor.from_numpy("w", x, param_id=1)])
    b = _save(tmp_path / "b.bpk", [burnpack.Tensor.from_numpy("w", x.astype(np.float16), param_id=2)])
    assert cli.main(["diff", a, b]) == 1
    out = capsys.readouterr().out
    assert "dtype F32 -> F16" in out and "param_id 1 -> 2" in out


def test_diff_tolerances_make_close_tensors_equal(tmp_path):
    a = _save(tmp_path / "a.bpk", {"w": np.array([1.0, 2.0], np.float32)})
    b = _save(tmp_path / "b.bpk", {"w": np.array([1.0, 2.0001], np.float32)})
    assert cli.main(["diff", a, b]) == 1
    assert cli.main(["diff", "--atol", "1e-3", a, b]) == 0


def test_diff_counts_nan_payload_and_signed_zero_changes_as_byte_differences(tmp_path, capsys):
    a = _save(tmp_path / "a.bpk", {"w": np.array([0.0, np.nan], np.float32)})
    b = _save(tmp_path / "b.bpk", {"w": np.array([-0.0, -np.nan], np.float32)})
    assert cli.main(["diff", a, b]) == 1
    assert "values equal" in capsys.readouterr().out


def test_diff_ignores_layout_when_the_content_is_the_same(tmp_path, capsys):
    x, y = np.arange(3, dtype=np.uint8), np.arange(5, dtype=np.float64)
    a = _save(tmp_path / "a.bpk", {"x": x, "y": y})
    b = _save(tmp_path / "b.bpk", {"y": y, "x": x})
    assert cli.main(["diff", a, b]) == 0
    assert "different layout" in capsys.readouterr().out


def test_diff_of_an_unreadable_file_exits_2(tmp_path):
    a = _save(tmp_path / "a.bpk", {"w": np.zeros(1)})
    (tmp_path / "bad.bpk").write_bytes(b"BURN")
    assert cli.main(["diff", a, str(tmp_path / "bad.bpk")]) == 2


def test_batch_dump_answers_one_line_per_request(vectors):
    paths = [v.path for v in vectors.readers if v.path is not None][:5]
    requests = "".join(json.dumps({"path": str(p), "level": "strict"}) + "\n" for p in paths) + "not json\n"
    out = io.StringIO()
    assert serve(io.StringIO(requests), out) == 0
    lines = out.getvalue().splitlines()
    assert [json.loads(line) for line in lines[:5]] == [dump(p, "strict") for p in paths]
    assert json.loads(lines[5])["ok"] is False
