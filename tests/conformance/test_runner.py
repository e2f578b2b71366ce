"""The runner: external readers and writers, crashes and hangs, reports and exit codes."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import conformance
from conformance import cli, doubles, reference
from conformance.runner import (
    CRASH,
    FAIL,
    PASS,
    TIMEOUT,
    ExternalBatchReader,
    ExternalReader,
    ExternalWriter,
    PythonReader,
    run_readers,
    run_writers,
)
from tests.conftest import BURN_PACK_FIXTURES, require

BIN = Path(sys.executable).parent
BURNPACK = str(BIN / "burnpack")
PY = sys.executable


def _sample(vectors, per_category: int = 2):
    """A few vectors of every category (the full corpus goes through batch mode)."""
    keep, seen = [], {}
    for v in vectors.readers:
        if v.path is not None and seen.get(v.category, 0) < per_category:
            seen[v.category] = seen.get(v.category, 0) + 1
            keep.append(v.id)
    return vectors.select(keep)


_GENERATED = [v.id for v in conformance.load_vectors().readers if v.path is None]
"""The vectors generated at run time (too big to check in), a test each: 100,000 tensors take seconds."""


@pytest.mark.parametrize("level", ["compatible", "strict"])
@pytest.mark.parametrize("chosen", [None, *_GENERATED], ids=["checked-in", *_GENERATED])
def test_reference_reader_passes_every_vector_through_burnpack_dump_batch(vectors, level, chosen):
    keep = [v.id for v in vectors.readers if v.id == chosen or (chosen is None and v.path is not None)]
    report = run_readers(vectors.select(keep), ExternalBatchReader(f"{BURNPACK} dump --json --batch", timeout=60), levels=(level,), jobs=2)
    assert report.ok, report.summary()
    assert len(report.results) == len(keep) >= 1


def test_reference_reader_passes_a_sample_of_every_category_one_process_per_file(vectors):
    sample = _sample(vectors, per_category=1)
    report = run_readers(sample, ExternalReader(f"{BURNPACK} dump --json {{--strict}} {{path}}"), levels=("compatible", "strict"), jobs=2)
    assert report.ok, report.summary()
    assert len(report.results) == 2 * len(sample.readers) >= 2 * 12


def test_reference_writer_passes_every_refusal_and_a_sample_of_every_category_through_burnpack_pack(vectors):
    seen: dict[str, int] = {}
    keep = []
    for w in vectors.writers:
        if w.refusal or seen.get(w.category, 0) < 1:
            seen[w.category] = seen.get(w.category, 0) + 1
            keep.append(w.id)
    sample = vectors.select(keep)
    report = run_writers(sample, ExternalWriter(f"{BURNPACK} pack --json {{spec}} {{out}}"), jobs=2)
    assert report.ok, report.summary()
    assert len(report.results) >= 15


def test_reference_passes_burns_fixture_folder_at_both_levels():
    vectors = conformance.load_vectors(require(BURN_PACK_FIXTURES))
    readers = run_readers(vectors, ExternalBatchReader(f"{BURNPACK} dump --json --batch"), levels=("compatible", "strict"), jobs=2)
    writers = run_writers(vectors, conformance.PythonWriter(reference.write))
    assert readers.ok, readers.summary()
    assert writers.ok, writers.summary()
    assert len(readers.results) == 2 * len(vectors.readers) and len(writers.results) == len(vectors.writers)


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return f"{PY} {path}"


def test_a_hanging_reader_is_a_timeout_of_that_vector_not_a_hung_run(vectors, tmp_path):
    cmd = _script(tmp_path, "hang", "import sys, time\nif 'empty' in sys.argv[1]: time.sleep(60)\nprint('{\"ok\": false}')\nsys.exit(1)\n")
    sample = vectors.select(["layout/empty_pack", "dtype/f32"])
    report = run_readers(sample, ExternalReader(cmd + " {path}", timeout=1.0))
    status = {r.id: r.status for r in report.results}
    assert status["layout/empty_pack"] == TIMEOUT
    assert status["dtype/f32"] == FAIL  # answered (wrongly) and judged


def test_a_crashing_reader_is_a_crash_of_that_vector(vectors, tmp_path):
    cmd = _script(tmp_path, "crash", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    report = run_readers(vectors.select(["dtype/f32"]), ExternalReader(cmd + " {path}"))
    (result,) = report.results
    assert result.status == CRASH and "SIGSEGV" in result.message


def test_a_reader_printing_a_traceback_is_a_crash(vectors, tmp_path):
    cmd = _script(tmp_path, "raise", "raise RuntimeError('boom')\n")
    (result,) = run_readers(vectors.select(["dtype/f32"]), ExternalReader(cmd + " {path}")).results
    assert result.status == CRASH and "exactly one JSON object on standard output" in result.message
    assert result.stderr.endswith("RuntimeError: boom") and result.stdout == "(empty)"


def test_batch_reader_survives_a_crash_and_serves_the_next_vector(vectors, tmp_path):
    body = ("import sys, json, os\nfrom burnpack_conformance.reference import dump\n"
            "for line in sys.stdin:\n    req = json.loads(line)\n"
            "    if 'empty_pack' in req['path']: os._exit(3)\n"
            "    print(json.dumps(dump(req['path'], req['level'])), flush=True)\n")
    cmd = _script(tmp_path, "batch", body)
    report = run_readers(vectors.select(["layout/*"]), ExternalBatchReader(cmd, timeout=30))
    bad = {r.id: r.status for r in report.failures}
    assert bad == {"layout/empty_pack": CRASH}
    assert sum(r.passed for r in report.results) == len(report.results) - 1


def test_batch_reader_that_hangs_is_killed_and_replaced(vectors, tmp_path):
    body = ("import sys, json, time\nfrom burnpack_conformance.reference import dump\n"
            "for line in sys.stdin:\n    req = json.loads(line)\n"
            "    if 'empty_pack' in req['path']: time.sleep(60)\n"
            "    print(json.dumps(dump(req['path'], req['level'])), flush=True)\n")
    report = run_readers(vectors.select(["layout/*"]), ExternalBatchReader(_script(tmp_path, "bhang", body), timeout=6))
    assert {r.id: r.status for r in report.failures} == {"layout/empty_pack": TIMEOUT}


def test_a_writer_that_refuses_but_leaves_a_file_fails(vectors, tmp_path):
    cmd = _script(tmp_path, "leave", "import sys\nopen(sys.argv[2], 'wb').write(b'partial')\nsys.exit(1)\n")
    (result,) = run_writers(vectors.select(["writer_refusal/duplicate_name"]), ExternalWriter(cmd + " {spec} {out}")).results
    assert result.status == FAIL and "left an output file" in result.message


def test_writer_byte_mismatch_names_the_offset_and_region(vectors):
    def off_by_one(spec):
        data = bytearray(reference.write(spec))
        data[12] ^= 1
        return bytes(data)

    (result,) = conformance.run_writer(off_by_one, vectors=vectors, select=["dtype/f32"]).results
    assert result.status == FAIL
    assert "offset 12 (metadata byte 2)" in result.message and result.diff


def test_reader_mismatch_shows_which_field_differs_and_a_diff(vectors):
    report = conformance.run_reader(doubles.nan_sign_dropped, vectors=vectors, select=["scalars/nan_payloads"])
    (result,) = report.results
    assert result.status == FAIL
    assert result.message.startswith("scalars ")
    assert "f64_bits" in result.diff and result.diff.startswith("--- expected")


def test_summary_lists_every_category_and_the_first_mismatches(vectors):
    report = conformance.run_reader(doubles.names_sorted_utf16, vectors=vectors, select=["names", "dtype"])
    text = report.summary(max_diffs=1)
    assert "names" in text and "dtype" in text and "<--" in text
    assert "first 1 of" in text and "names/astral_vs_bmp" in text
    assert text.rstrip().splitlines()[-1].startswith("FAIL:")


def test_json_report_carries_totals_categories_and_every_result(vectors):
    report = conformance.run_reader(reference.dump, vectors=vectors, select=["header"], levels=("compatible", "strict"))
    data = json.loads(json.dumps(report.to_json()))
    assert data["ok"] is True and data["exit_code"] == 0
    assert data["totals"][PASS] == len(data["results"]) == 2 * len(vectors.select(["header"]).readers)
    assert set(data["categories"]) == {"reader[compatible]/header", "reader[strict]/header"}


def test_junit_report_is_valid_xml_with_failures_and_errors(vectors):
    def flaky(path, level):
        if "empty" in path:
            raise RuntimeError("\x00 crash")
        return doubles.magic_big_endian(path, level)

    report = run_readers(vectors.select(["header", "layout"]), PythonReader(flaky))
    root = ET.fromstring(report.to_junit())
    assert root.tag == "testsuites"
    assert int(root.get("failures")) > 0 and int(root.get("errors")) > 0
    assert {s.get("name") for s in root} == {"reader.compatible.header", "reader.compatible.layout"}


def test_cli_run_exit_code_is_0_on_pass_and_1_on_failure(tmp_path, capsys):
    ok = cli.main(["run", "--self-test", "--select", "names", "--json-report", str(tmp_path / "r.json"),
                   "--junit", str(tmp_path / "r.xml")])
    assert ok == 0 and json.loads((tmp_path / "r.json").read_text())["ok"] is True
    ET.parse(tmp_path / "r.xml")
    cmd = f"{PY} -m conformance.doubles reader names_sorted_utf16 {{path}}"
    assert cli.main(["run", "--reader", cmd, "--select", "names/astral_vs_bmp"]) == 1
    assert "names/astral_vs_bmp" in capsys.readouterr().out


def test_cli_run_exit_code_is_2_for_a_bad_vectors_directory(tmp_path):
    assert cli.main(["run", "--self-test", "--vectors", str(tmp_path)]) == 2
    assert cli.main(["run", "--self-test", "--select", "no-such-vector"]) == 2


def test_cli_reads_burns_fixture_folder_form(capsys):
    assert cli.main(["run", "--self-test", "--level", "both", "--vectors", str(require(BURN_PACK_FIXTURES))]) == 0
    assert "corrupt" in capsys.readouterr().out


def test_export_writes_a_vendorable_corpus_with_readme_and_protocol(tmp_path):
    out = tmp_path / "export"
    assert cli.main(["export", str(out), "--skip-runtime"]) == 0
    for name in ("README.md", "PROTOCOL.md", "dump.schema.json", "spec.schema.json", "manifest.json"):
        assert (out / name).is_file(), name
    exported = conformance.load_vectors(out)
    assert [v.id for v in exported.readers] == [v.id for v in conformance.load_vectors().readers]
    assert cli.main(["export", str(out)]) == 2  # not empty, no --force


def test_the_exported_corpus_carries_the_protocol_and_a_readme_true_to_its_manifest(tmp_path):
    from conformance import corpus

    out = tmp_path / "export"
    assert cli.main(["export", str(out), "--skip-runtime"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert readme == corpus.readme_text(manifest) and f'"counts": {json.dumps(manifest["counts"])}' in readme
    protocol = (out / "PROTOCOL.md").read_text(encoding="utf-8")
    assert protocol == (corpus.PACKAGE_DIR / "PROTOCOL.md").read_text(encoding="utf-8")
    for rule in ("exit with status **0**", "BigInt", "`f64_bits` is compared", "pre-alignment layout", "**in this order**",
                 "Stage and variant", "checked_add", "quiet bit", "every tag is a level", "U+FEFF"):  # fmt: skip
        assert rule in protocol, rule


def test_in_process_api_runs_a_python_reader_and_writer(vectors):
    everything_but_the_100k_tensor_files = vectors.select([v.id for v in vectors.readers if v.path is not None])
    assert conformance.run_reader(reference.dump, vectors=everything_but_the_100k_tensor_files, levels=("compatible", "strict")).ok
    assert conformance.run_writer(reference.write, vectors=vectors).ok


def test_an_in_process_reader_that_hangs_is_abandoned_after_its_timeout(vectors):
    import threading

    release = threading.Event()

    def slow(path, level):
        release.wait(30)
        return reference.dump(path, level)

    try:
        report = conformance.run_reader(slow, vectors=vectors, select=["dtype/f32"], timeout=0.5)
    finally:
        release.set()
    assert report.results[0].status == TIMEOUT


def test_reader_command_needs_a_path_placeholder():
    with pytest.raises(ValueError, match="{path}"):
        ExternalReader("burnpack dump --json")
    with pytest.raises(ValueError, match="{spec}"):
        ExternalWriter("burnpack pack x")


def test_level_placeholder_is_substituted(vectors, tmp_path):
    body = ("import sys, json\nfrom burnpack_conformance.reference import dump\nout = dump(sys.argv[1], sys.argv[2])\n"
            "print(json.dumps(out))\nsys.exit(0 if out['ok'] else 1)\n")
    cmd = _script(tmp_path, "lvl", body) + " {path} {level}"
    report = run_readers(vectors.select(["header/version_0"]), ExternalReader(cmd), levels=("compatible", "strict"))
    assert report.ok, report.summary()


