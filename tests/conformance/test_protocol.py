"""The runner holds readers to the protocol, and each failure explains itself, naming the rule.

Broken readers (``conformance.doubles``: processes under ``COMMANDS``, decoders under ``READERS``)
go through the runner; each must be caught, and its message must say which rule it broke.
"""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

import conformance
from conformance import doubles, reference
from conformance.runner import (
    CRASH,
    FAIL,
    PASS,
    Crash,
    ExternalBatchReader,
    ExternalReader,
    PythonReader,
    check_reader_result,
    parse_output,
    run_readers,
    stderr_tail,
    stdout_excerpt,
)
from conformance.rules import Expected

EXIT_RULE = "PROTOCOL §1: exit status 0 when the file is accepted, 1 when it is rejected"
ONE_OBJECT_RULE = "PROTOCOL §1: exactly one JSON object on standard output"


def _command(name: str) -> ExternalReader:
    return ExternalReader(f"{sys.executable} -m conformance.doubles command {name} {{path}} {{level}}")


def test_swapped_exit_codes_crash_each_vector_naming_the_exit_rule(vectors):
    report = run_readers(vectors.select(["dtype/f32", "header/bad_magic_first_byte"]), _command("swapped_exit_codes"))
    messages = {r.id: (r.status, r.message) for r in report.results}
    assert messages == {
        "dtype/f32": (CRASH, f'exit status 1 with "ok": true ({EXIT_RULE})'),
        "header/bad_magic_first_byte": (CRASH, f'exit status 0 with "ok": false ({EXIT_RULE})'),
    }
    assert report.exit_code == 1


def test_an_exit_status_other_than_0_or_1_is_a_crash_naming_the_rule(vectors, tmp_path):
    script = tmp_path / "three.py"
    script.write_text("import sys\nprint('{\"ok\": true}')\nsys.exit(3)\n")
    (result,) = run_readers(vectors.select(["dtype/f32"]), ExternalReader(f"{sys.executable} {script} {{path}}")).results
    assert result.status == CRASH and result.message == f"exit status 3 ({EXIT_RULE}; anything else is a crash)"


def test_output_the_schema_refuses_fails_naming_the_schema_and_the_place(vectors):
    report = run_readers(vectors.select(["scalars/nan_payloads", "scalars/float_f16_width"]), _command("nan_value_garbled"))
    status = {r.id: r for r in report.results}
    assert status["scalars/float_f16_width"].status == PASS  # no NaN there: nothing garbled
    bad = status["scalars/nan_payloads"]
    assert bad.status == FAIL
    assert bad.message == ('output breaks dump.schema.json (PROTOCOL §1.1-1.2): /scalars/canonical/value: "NaN!" is not a number, '
                           'nor one of "nan", "inf", "-inf"; /scalars/negative/value: "NaN!" is not a number, nor one of "nan", '
                           '"inf", "-inf"; /scalars/negative_payload/value: "NaN!" is not a number, nor one of "nan", "inf", "-inf"; '
                           'and 5 more')  # fmt: skip


def test_an_integer_printed_through_a_double_breaks_the_schema(vectors):
    path = vectors.select(["dtype/f32"]).readers[0].path
    dump = reference.dump(path)
    dump["tensors"][0]["shape"] = [10.0]
    ok, message, _ = check_reader_result(Expected("accept"), reference.dump(path), dump)
    assert not ok and message.endswith("/tensors/0/shape/0: 10.0 is not an integer")


def test_a_debug_line_on_stdout_is_a_crash_quoting_the_output(vectors):
    (result,) = run_readers(vectors.select(["dtype/f32"]), _command("debug_line_on_stdout")).results
    assert result.status == CRASH
    assert result.message == f"exit status 0, output is not one JSON object ({ONE_OBJECT_RULE}): Expecting value at line 1 column 1"
    assert re.fullmatch(r'\d+ bytes: "reading /\S+ at level compatible\\n\{\\"ok\\": true, .*"…', result.stdout)  # escaped, bounded


def test_a_crash_shows_a_bounded_tail_of_stderr_holding_the_real_error(vectors):
    (result,) = run_readers(vectors.select(["dtype/f32"]), _command("node_style_crash")).results
    assert result.status == CRASH and "nothing was printed" in result.message
    lines = result.stderr.splitlines()
    assert lines[0] == "[… 197 earlier lines]" and len(lines) == 21
    assert "TypeError: Cannot read properties of undefined (reading 'length')" in lines
    assert lines[-1] == "Node.js v20.20.2" and len(result.stderr) <= 2100


def test_the_stderr_tail_keeps_the_end_within_its_character_budget():
    long_lines = b"\n".join(b"x" * 1000 for _ in range(30)) + b"\nthe end\n"
    tail = stderr_tail(long_lines)
    assert tail.splitlines()[-1] == "the end" and len(tail) <= 2000 + 40
    assert all(len(line) <= 301 for line in tail.splitlines())
    assert stderr_tail(b"") == "" and stderr_tail(b"\xff\x1b[31mred\n") == "\\xff\\x1b[31mred"


def test_a_bom_stripping_decoder_fails_with_the_vector_saying_why(vectors):
    (result,) = conformance.run_reader(doubles.bom_stripped, vectors=vectors, select=["names/leading_bom"]).results
    assert result.status == FAIL
    assert result.message == ("tensor names differ: missing ['\\ufeffweight' (U+FEFF U+0077 U+0065 U+0069 U+0067 U+0068 U+0074)], "
                              "unexpected ['weight']")  # fmt: skip
    assert "U+FEFF (a byte-order mark) is kept whole" in result.description


def test_an_nfc_normalising_decoder_fails_naming_the_code_points(vectors):
    report = conformance.run_reader(doubles.nfc_normalised, vectors=vectors, select=["names/combining_vs_precomposed"])
    (result,) = report.results
    assert result.status == FAIL and "missing ['e\u0301' (U+0065 U+0301)]" in result.message
    assert "no normalisation" in result.description


def test_a_rejection_mismatch_shows_the_vector_and_its_rule_in_console_json_and_junit(vectors):
    report = conformance.run_reader(doubles.truncation_unchecked, vectors=vectors, select=["truncation/inside_padding_gap"])
    (result,) = report.results
    assert result.message == "expected reject_open ValidationError, got reject_tensor_access ValidationError: " + result.actual.split(": ", 1)[1]
    description = "file cut inside the zero padding before the data section"
    why = result.why
    assert why.startswith("file is ") and "< 10 + M + max end" in why
    summary = report.summary()
    assert f"    vector:   {description}" in summary and f"    why:      {why}" in summary
    entry = report.to_json()["results"][0]
    assert (entry["description"], entry["why"]) == (description, why)
    failure = ET.fromstring(report.to_junit()).find(".//failure")
    assert failure is not None and f"vector:   {description}" in failure.text and f"why:      {why}" in failure.text


def test_a_crash_carries_its_stderr_into_the_json_report_and_junit(vectors):
    report = run_readers(vectors.select(["dtype/f32"]), _command("node_style_crash"))
    assert "Node.js v20.20.2" in report.summary() and "  | TypeError: Cannot read" in report.summary()
    assert report.to_json()["results"][0]["stderr"].endswith("Node.js v20.20.2")
    system_err = ET.fromstring(report.to_junit()).find(".//system-err")
    assert system_err is not None and "TypeError" in system_err.text


def test_a_lone_surrogate_in_the_output_fails_and_every_report_still_writes(vectors, tmp_path):
    script = tmp_path / "surrogate.py"
    script.write_text("import json, sys\nfrom burnpack_conformance.reference import dump\nout = dump(sys.argv[1])\n"
                      "out['tensors'][0]['name'] = '\\ud800'\nprint(json.dumps(out))\n")  # fmt: skip
    report = run_readers(vectors.select(["dtype/f32"]), ExternalReader(f"{sys.executable} {script} {{path}}"))
    (result,) = report.results
    assert result.status == FAIL and "unexpected ['\\ud800' (U+D800)]" in result.message
    report.summary().encode("utf-8")
    json.dumps(report.to_json(), ensure_ascii=False).encode("utf-8")
    ET.fromstring(report.to_junit())


def test_batch_answers_are_split_on_newlines_only(vectors, tmp_path):
    body = ("import sys, json\nfrom burnpack_conformance.reference import dump\n"
            "for line in sys.stdin:\n    req = json.loads(line)\n"
            "    sys.stdout.write(json.dumps(dump(req['path'], req['level']), ensure_ascii=False) + '\\n')\n"
            "    sys.stdout.flush()\n")  # fmt: skip
    script = tmp_path / "raw.py"
    script.write_text(body)
    report = run_readers(vectors.select(["names/line_breaks", "metadata/line_breaks"]), ExternalBatchReader(f"{sys.executable} {script}"),
                         levels=("compatible", "strict"))  # fmt: skip
    assert report.ok, report.summary()


def test_a_batch_answer_on_several_lines_is_a_crash_naming_the_batch_rule(vectors, tmp_path):
    body = ("import sys, json\nfrom burnpack_conformance.reference import dump\n"
            "for line in sys.stdin:\n    req = json.loads(line)\n"
            "    print(json.dumps(dump(req['path'], req['level']), indent=1), flush=True)\n")  # fmt: skip
    script = tmp_path / "pretty.py"
    script.write_text(body)
    report = run_readers(vectors.select(["dtype/f32", "dtype/f64"]), ExternalBatchReader(f"{sys.executable} {script}"))
    for result in report.results:
        assert result.status == CRASH and "PROTOCOL §1.4: one JSON object on one line per request" in result.message
        assert result.stdout == '2 bytes: "{\\n"'


@pytest.mark.parametrize(
    "output, problem",
    [
        (b'{"ok": true, "ok": false}', "the key 'ok' appears twice in one object"),
        (b'{"ok": true, "scalars": {"x": {"type": "Float", "value": NaN}}}', "NaN is not JSON"),
        (b'[{"ok": true}]', "output is a JSON array, not an object"),
        (b'{"ok": true}\n{"ok": true}\n', "Extra data at line 2 column 1"),
        (b'{"ok": true, "n": "\xff"}', "output is not UTF-8 (invalid start byte at byte 19)"),
        (b"", "nothing was printed"),
    ],
    ids=["duplicate key", "NaN literal", "array", "two objects", "not UTF-8", "empty"],
)
def test_output_that_is_not_exactly_one_json_object_is_refused(output, problem):
    with pytest.raises(Crash, match=problem.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_output(output, ONE_OBJECT_RULE)
    assert ONE_OBJECT_RULE in str(info.value)


def test_the_stdout_excerpt_is_bounded_and_shows_where_parsing_stopped():
    data = b'{"ok": true, "tensors": [' + b'{"name": "t"}, ' * 100 + b"oops]}"
    excerpt = stdout_excerpt(data, data.index(b"oops"))
    assert excerpt.startswith(f'{len(data)} bytes: "{{\\"ok\\"') and f"at character {data.index(b'oops')}" in excerpt
    assert "oops" in excerpt and len(excerpt) < 400


def test_the_cli_exits_1_and_prints_the_rule_for_a_reader_with_swapped_exit_codes(capsys):
    from conformance import cli

    cmd = f"{sys.executable} -m conformance.doubles command swapped_exit_codes {{path}}"
    assert cli.main(["run", "--reader", cmd, "--select", "dtype/f32", "--jobs", "1"]) == 1
    assert EXIT_RULE in capsys.readouterr().out


def test_a_python_reader_returning_a_schema_invalid_object_fails_too(vectors):
    def no_stage(path, level):
        out = reference.dump(path, level)
        if not out["ok"]:
            del out["error"]["stage"]
        return out

    (result,) = run_readers(vectors.select(["header/bad_magic_first_byte"]), PythonReader(no_stage)).results
    assert result.status == FAIL and result.message.endswith('/error: missing key "stage"')
