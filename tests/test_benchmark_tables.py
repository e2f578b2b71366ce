"""The documentation's figure tables are generated from checked-in results files, every ratio shown."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import burnpack
from benchmarks import _results, bench, reach_bench, tables
from burnpack.core import atomic

REPO = tables.ROOT
TABLE_SPECS = [m["spec"] for page in tables.PAGES for m in tables.BLOCK.finditer(page.read_text())]


@pytest.mark.parametrize("page", tables.PAGES, ids=lambda page: page.relative_to(tables.ROOT).as_posix())
def test_every_table_of_a_page_is_what_its_results_files_give(page):
    text = page.read_text()
    assert tables.regenerate(text) == text, "run python benchmarks/tables.py --write"


def test_the_pages_have_the_benchmark_tables():
    kinds = {spec.split()[0] for spec in TABLE_SPECS}
    assert {"bench", "replace", "reach", "cbor_decoder_ab", "quant", "headline", "ab_tiny", "fuzz_campaigns", "conformance_fuzz"} <= kinds


@pytest.mark.parametrize("spec", TABLE_SPECS)
def test_every_results_file_a_table_names_is_in_the_repository(spec):
    for name in spec.split()[1:]:
        assert (tables.ROOT / name).is_file(), name


def _bench_file(tmp_path: Path, drop: str | None = None) -> str:
    """A copy of the documented bench results file under ``tmp_path`` (one operation dropped)."""
    spec = next(s for s in TABLE_SPECS if s.startswith("bench "))  # the first: a run before the newest rows
    source = spec.split()[1]
    record = json.loads((REPO / source).read_text())
    if drop is not None:
        for workload in record["workloads"].values():
            workload["samples_s"].pop(drop, None)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench.json").write_text(json.dumps(record))
    return "results/bench.json"


def test_every_ratio_the_benchmark_defines_is_a_row(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    rendered = tables.bench(_bench_file(tmp_path))
    for label, ratio in bench.RATIOS.items():
        assert f"| {label} |" in rendered and ratio.like in rendered


def test_a_ratio_whose_peer_was_not_measured_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    peer = bench.RATIOS["open + names / `safe_open` + `keys()`"].peer
    row = next(line for line in tables.bench(_bench_file(tmp_path, drop=peer)).splitlines() if "`keys()`" in line)
    assert "not measured in this run" in row


def test_a_changed_sample_changes_the_table(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    name = _bench_file(tmp_path)
    before = tables.bench(name)
    record = json.loads((tmp_path / name).read_text())
    samples = next(iter(record["workloads"].values()))["samples_s"]["open+names: burnpack"]
    samples[:] = [s * 3 for s in samples]
    (tmp_path / name).write_text(json.dumps(record))
    assert tables.bench(name) != before


def test_the_caption_says_when_a_run_was_not_on_a_quiet_machine():
    record = {"commit": "abc", "loadavg_before": [0.2, 0, 0], "loadavg_after": [0.98, 0, 0]}
    assert "not a quiet machine" in tables.caption("x.json", record)
    assert "(quiet)" in tables.caption("x.json", {**record, "loadavg_after": [0.3, 0, 0]})
    assert "load average not recorded" in tables.caption("x.json", {"commit": "abc"})


def _run(monkeypatch, tmp_path, loads, busy, own=(0.0, 0.0)):
    """A results record whose run saw these load averages, machine busy CPU seconds and own CPU seconds."""
    loads, busy, own = iter(loads), iter(busy), iter(own)
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(_results, "_busy_cpu_seconds", lambda: next(busy))
    monkeypatch.setattr(_results, "_own_cpu_seconds", lambda: next(own))
    return _results.finish(_results.environment(tmp_path))


def test_a_results_file_records_the_load_before_and_after_and_the_file_system(tmp_path, monkeypatch):
    record = _run(monkeypatch, tmp_path, [(0.2, 0.1, 0.1), (0.7, 0.2, 0.1)], [100.0, 101.0], [0.0, 1.0])
    assert record["loadavg_before"][0] == 0.2 and record["loadavg_after"][0] == 0.7
    assert record["filesystem"]["type"] != "" and {"commit", "dirty", "packages", "started"} <= record.keys()


def test_a_run_whose_only_busy_process_is_the_benchmark_is_quiet_whatever_the_load_after(tmp_path, monkeypatch):
    record = _run(monkeypatch, tmp_path, [(0.2, 0.1, 0.1), (0.9, 0.2, 0.1)], [100.0, 101.0], [0.0, 1.0])
    assert record["other_processes"]["cpu_s"] == 0.0 and record["quiet"] is True


def test_a_run_beside_other_busy_processes_is_not_quiet(tmp_path, monkeypatch):
    record = _run(monkeypatch, tmp_path, [(0.2, 0.1, 0.1), (0.9, 0.2, 0.1)], [100.0, 1e6], [0.0, 1.0])
    assert record["other_processes"]["cpus_busy"] > 0.5 and record["quiet"] is False


def test_a_run_started_on_a_loaded_machine_is_not_quiet(tmp_path, monkeypatch):
    record = _run(monkeypatch, tmp_path, [(0.7, 0.1, 0.1), (0.2, 0.2, 0.1)], [100.0, 100.0])
    assert record["quiet"] is False


def test_the_raw_write_peer_does_the_file_operations_writer_write_does(tmp_path, monkeypatch):
    bench.raw_write([b"x"], tmp_path / "probe.bin")  # the once-per-file-system O_TMPFILE probe, outside the count
    calls: list[str] = []
    for name in ("_open_unnamed", "_open_named", "_link_to_new_scratch", "_fsync_dir"):
        real = getattr(atomic, name)
        monkeypatch.setattr(atomic, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda *a: calls.append("replace") or real_replace(*a))
    tensors = {f"t{i}": np.full(3 + 100 * (i % 2), i, np.float32) for i in (3, 1, 2, 0)}
    writer = burnpack.Writer([burnpack.Tensor.from_numpy(k, v) for k, v in tensors.items()])
    writer.write(tmp_path / "a.bpk")
    ours, calls[:] = list(calls), []
    pieces = bench.raw_pieces(tensors, large=400)  # the two tensors of 412 bytes from their arrays
    assert sum(isinstance(piece, memoryview) for piece in pieces) == 2
    bench.raw_write(pieces, tmp_path / "b.bpk")
    assert calls == ours and "replace" in ours
    assert (tmp_path / "a.bpk").read_bytes() == (tmp_path / "b.bpk").read_bytes()


def test_a_fuzz_run_writes_a_results_file(tmp_path):
    from conformance.fuzz import fuzz

    out = tmp_path / "fuzz.json"
    assert fuzz(seconds=30, engine="hypothesis", save_dir=tmp_path / "findings", seed=1, max_examples=20, json_out=out) == 0
    record = json.loads(out.read_text())
    assert record["inputs"] >= 20 and record["failures"] == [] and record["engine"] == "hypothesis"
    assert {"commit", "loadavg_before", "loadavg_after", "inputs_by_kind", "seed"} <= record.keys()
    shutil.rmtree(tmp_path / "findings", ignore_errors=True)


def test_interleaved_operations_change_neighbours_from_turn_to_turn():
    order = ["ours", "peer", "other", "last"]
    turns = [bench.turned(order, turn) for turn in range(4)]
    assert all(sorted(turn) == sorted(order) for turn in turns)
    before_peer = {turn[turn.index("peer") - 1] for turn in turns if turn.index("peer")}
    assert "ours" in before_peer and len(before_peer) > 1
    assert {turn[0] for turn in turns} == set(order)


@pytest.mark.parametrize("offset", [0, 256, 816, 3328])
def test_the_safetensors_peer_file_puts_its_data_at_the_page_offset_asked(tmp_path, offset):
    arrays = {f"t{i:02d}": np.full(5, i, np.float32) for i in range(64)}
    path = tmp_path / "m.safetensors"
    reach_bench.save_matching_page_offset(arrays, path, offset)
    assert reach_bench.data_start_of(path) % reach_bench.PAGE == offset
    from safetensors.numpy import load_file

    assert all((load_file(str(path))[k] == v).all() for k, v in arrays.items())


@pytest.mark.parametrize("offset", [0, 256, 3328])
def test_the_padded_bpk_puts_its_data_at_the_page_offset_asked(tmp_path, offset):
    arrays = {f"t{i:02d}": np.full(5, i, np.float32) for i in range(64)}
    path = tmp_path / "m.bpk"
    reach_bench.save_bpk_at_page_offset(arrays, path, offset)
    with burnpack.load(path) as pack:
        assert pack.data_section_start % reach_bench.PAGE == offset
        assert all((pack[k].numpy() == v).all() for k, v in arrays.items())


@pytest.mark.parametrize("script", ["open_bench.py", "cbor_decoder_bench.py"])
def test_a_base_label_without_a_base_checkout_is_refused(script):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, str(tables.ROOT / "benchmarks" / script), "--base-label", "abc1234"],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 2 and "--base-label names the checkout given by --base" in result.stderr


def test_a_results_file_goes_to_the_benchmarks_one_current_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "HERE", tmp_path)
    (tmp_path / "results").mkdir()
    record = _results.finish(_results.environment(tmp_path))
    assert _results.save(record, "bench") == tmp_path / "results" / "bench.json"
    assert _results.save(record, "bench") == tmp_path / "results" / "bench.json"  # a new run replaces it


def test_the_results_folder_holds_one_current_file_per_benchmark_each_cited():
    files = {path.name for path in (REPO / "benchmarks" / "results").glob("*.json")}
    cited = {Path(name).name for spec in TABLE_SPECS for name in spec.split()[1:]}
    pages = "".join(page.read_text() for page in tables.PAGES) + (REPO / "docs" / "benchmarks.md").read_text()
    assert all(file in cited or f"benchmarks/results/{file}" in pages for file in files), files - cited
    assert all("-" not in file and "_vs_" not in file and "issue" not in file for file in files)  # named by benchmark


def _record(results: dict) -> dict:
    return {"started": "2026-01-01T00:00:00+00:00", "commit": "0" * 40, "dirty": False, "loadavg_before": [0.1] * 3,
            "loadavg_after": [0.1] * 3, "other_processes": {"cpus_busy": 0.01}, "quiet": True, "packages": {}, **results}


def test_the_quant_table_shows_numpys_path_where_the_run_measured_it_beside(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    entry = {"ratio": 0.9, "ratio_of_minimums": 0.8, "path": "compiled", "numpy_ratio": 2.0, "numpy_ratio_of_minimums": 1.9}
    (tmp_path / "q.json").write_text(json.dumps(_record({"results": {"q4s block 32": entry}})))
    assert "| q4s block 32 | 0.90 (0.80) [compiled] | 2.00 (1.90) |" in tables.quant("q.json")


def test_the_view_stats_table_has_a_row_per_statistics_path_the_run_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    run = {"min_cpu_s": 1.0, "min_wall_s": 2.0}
    runs = {f"{what}_{cache}": run for what in ("read_once", "value_stats", "value_stats_numpy") for cache in ("warm", "cold")}
    model = {"size_mib": 1, "tensors": 1, "dtype": "F32"}
    (tmp_path / "v.json").write_text(json.dumps(_record({"runs": runs, "model": model, "kernel": "compiled"})))
    rendered = tables.view_stats("v.json")
    assert "statistics (compiled) / read once + sum, warm" in rendered and "statistics (numpy) / read once + sum, cold" in rendered


def test_another_checkout_is_imported_under_its_own_name_and_loads_its_own_kernels(tmp_path):
    from benchmarks._checkout import import_checkout

    other = tmp_path / "other"
    (other / "burnpack").mkdir(parents=True)
    (other / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "0"\n[tool.setuptools]\npackages = ["burnpack"]\n')
    (other / "burnpack" / "__init__.py").write_text('import importlib\nKERNEL = "burnpack.codec._cskip"\nNAME = __name__\n')
    package = import_checkout(other, "burnpack_other_checkout", tmp_path / "scratch")
    assert package.NAME == "burnpack_other_checkout" and package.KERNEL == "burnpack_other_checkout.codec._cskip"


def test_the_startup_table_shows_instruction_ratios_when_the_run_counted_them(tmp_path):
    spec = next(s for s in TABLE_SPECS if s.startswith("startup "))
    record = json.loads((REPO / spec.split()[1]).read_text())
    record.pop("instructions", None)
    record["ratios"].pop("instructions", None)
    path = tmp_path / "startup.json"
    path.write_text(json.dumps(record))
    assert "instructions" not in tables.startup(str(path))  # a run without them: no column
    record["instructions"] = {"import numpy": 400_000_000, "burnpack --version": 190_000_000, "burnpack inspect": 480_000_000}
    record["ratios"]["instructions"] = {"burnpack --version": 0.475, "burnpack inspect": 1.2}
    path = tmp_path / "startup.json"
    path.write_text(json.dumps(record))
    lines = tables.startup(str(path)).splitlines()
    assert lines[2].split(" | ")[3] == "instructions (one run)"
    assert [line.split(" | ")[3] for line in lines[4:]] == ["0.475", "1.200", "400,000,000"]
