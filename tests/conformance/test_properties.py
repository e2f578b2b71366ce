"""Round-trip and robustness properties with small Hypothesis budgets (the long runs are `fuzz`)."""

from __future__ import annotations

import json
import sys
import tracemalloc

from hypothesis import HealthCheck, given, settings

import burnpack
from conformance import cli, fuzz, rules
from conformance import strategies as bst
from conformance.corpus import load_vectors
from conformance.reference import dump

SMALL = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SMALL
@given(bst.pack_specs())
def test_write_read_write_is_the_identity_and_matches_the_spec_derived_writer(spec):
    assert fuzz.check_spec(spec) == []


@SMALL
@given(bst.valid_files())
def test_strict_reader_accepts_what_the_writer_writes(case):
    data, spec = case
    with burnpack.load(data, strict=True) as pack:
        assert pack.names == sorted(t.name for t in spec.tensors)
        assert [v.tobytes() for v in pack.tensors()] == [next(t.data for t in spec.tensors if t.name == n) for n in pack.names]


@SMALL
@given(bst.mutated_files())
def test_reader_on_mutated_files_raises_only_burnpack_errors_and_follows_the_rules(data):
    assert fuzz.check_file(data) == []


@SMALL
@given(bst.random_files())
def test_reader_on_random_bytes_raises_only_burnpack_errors_and_follows_the_rules(data):
    assert fuzz.check_file(data) == []


@settings(max_examples=25, deadline=None)
@given(bst.hostile_files())
def test_hostile_sizes_are_refused_within_bounded_work_and_memory(data):
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event in ("call", "c_call")

    tracemalloc.start()
    sys.setprofile(count)
    try:
        for level in ("compatible", "strict"):
            dump(data, level)
    finally:
        sys.setprofile(None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert calls < 5_000 + 20 * len(data)  # work follows the bytes, not the sizes they claim
    assert peak < 8 * 1024 * 1024 + 200 * len(data)


def test_a_huge_shape_over_a_few_bytes_never_allocates_its_numel():
    from conformance.model import Content, Desc, assemble

    content = Content({"t": Desc("F32", [1 << 32, 1 << 32], (0, 16))})
    data = assemble(content.canonical_cbor(), [(0, bytes(16))])
    tracemalloc.start()
    try:
        with burnpack.load(data) as pack:
            try:
                pack["t"].numpy()
            except burnpack.BurnpackError:
                pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_reader_decoders_and_rules_agree_on_every_corpus_vector(vectors):
    for v in vectors.readers:
        if v.path is not None:
            assert fuzz.check_file(v.data()) == [], v.id


def test_expected_outcome_strategy_helper_is_the_rules_oracle(vectors):
    v = next(v for v in vectors.readers if v.id == "truncation/last_byte")
    exp = bst.expected_outcome(v.data())
    assert (exp.compatible.outcome, exp.strict.outcome) == (rules.REJECT_ACCESS, rules.REJECT_OPEN)


def test_fuzz_command_reports_inputs_tried_and_exits_0_when_nothing_fails(tmp_path, capsys):
    code = cli.main(["fuzz", "--seconds", "3", "--engine", "hypothesis", "--seed", "1", "--save-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "inputs tried" in out and "0 failing" in out
    assert int(out.split("): ")[1].split()[0]) > 10


def test_fuzz_saves_a_failing_input_as_a_new_vector(tmp_path, monkeypatch, capsys):
    real = fuzz.check_file

    def planted(data, reader=None):
        return ["planted problem"] if len(data) % 5 == 0 else real(data, reader)

    monkeypatch.setattr(fuzz, "check_file", planted)
    code = cli.main(["fuzz", "--seconds", "20", "--engine", "hypothesis", "--seed", "2", "--max-examples", "150",
                     "--save-dir", str(tmp_path)])
    assert code == 1
    found = load_vectors(tmp_path)
    assert found.readers and all(v.category == "fuzz" for v in found.readers)
    side = json.loads(next((tmp_path / "reader" / "fuzz").glob("*.json")).read_text())
    assert "planted problem" in side["problems"]
    assert "FAILING input saved" in capsys.readouterr().err
