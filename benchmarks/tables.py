"""The documentation's figure tables, each generated from checked-in results files.

A table in README.md or a page under docs/ sits between ``<!-- table: KIND FILE [FILE ...] -->`` and
``<!-- /table -->``; this script renders KIND from the named files (paths relative to the
repository), caption included: which run, which commit, the load before and after, whether the
machine was quiet, package versions and file system where the file records them. Every ratio a
benchmark defines is a row (``bench.RATIOS``: a row goes only by deleting it there), each naming
its peer and the kind of comparison; operations a file measured that no ratio uses are listed too.

    python benchmarks/tables.py            print every table the pages hold
    python benchmarks/tables.py --write    rewrite the pages' tables from their files
    python benchmarks/tables.py --check    exit 1 when a page differs (a test runs this)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # where tables may sit
QUIET_LOAD = 0.5  # as benchmarks/_results.py
BLOCK = re.compile(r"(<!-- table: (?P<spec>[^>]*?) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def _load(path: str) -> dict[str, Any]:
    return json.loads((ROOT / path).read_text())


def _num(x: float, digits: int = 2) -> str:
    """``digits`` decimals; a ratio below 0.1 with two significant digits instead (0.0012, not 0.00)."""
    return f"{x:.2g}" if 0 < x < 0.1 and digits == 2 else f"{x:.{digits}f}"


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:,.0f} ms"


def _load_text(record: dict[str, Any]) -> str:
    """The load around the run and whether it was quiet, by the rule the file was written under:
    with the other processes' CPU time (``other_processes``), the load before and that; in older
    files, the load before and after."""
    before, after = record.get("loadavg_before"), record.get("loadavg_after")
    if before is None and after is None:
        return "load average not recorded"
    parts = []
    if before is not None:
        parts.append(f"{before[0]:.2f} before")
    parts.append(f"{after[0]:.2f} after" if after is not None else "not recorded after")
    others = (record.get("other_processes") or {}).get("cpus_busy")
    if others is not None:
        quiet = before is not None and before[0] < QUIET_LOAD and others < QUIET_LOAD
        text = f"load average {', '.join(parts)}; other processes kept {others:.2f} CPUs busy during the run"
    else:
        quiet = before is not None and after is not None and before[0] < QUIET_LOAD and after[0] < QUIET_LOAD
        text = f"load average {', '.join(parts)}"
    return f"{text} ({'quiet' if quiet else 'not a quiet machine: expect noise'})"


def caption(path: str, record: dict[str, Any]) -> str:
    """One line on the run: file, commit, tree, date, load, packages, file system."""
    commit = str(record.get("commit", "not recorded"))[:9]
    dirty = record.get("dirty", record.get("tree_dirty"))
    tree = "" if dirty is None else (", uncommitted changes" if dirty else ", clean tree")
    when = record.get("started") or record.get("date") or record.get("date_utc") or record.get("started_utc")
    packages = record.get("packages") or record.get("versions") or {}
    versions = ", ".join(f"{k} {v}" for k, v in packages.items() if k != "burnpack")
    fs = record.get("filesystem")
    fs_text = f"file system {fs['type']}" + (f" ({fs['options']})" if fs.get("options") else "") if fs else "file system not recorded"
    bits = [f"`{path}`: commit {commit}{tree}", str(when)[:19] if when else "date not recorded", _load_text(record)]
    if versions:
        bits.append(versions)
    bits.append(fs_text)
    return "; ".join(bits) + "."


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]


# -- benchmarks/bench.py ------------------------------------------------------------------------
def bench(path: str) -> str:
    """Every ratio of ``bench.RATIOS`` per workload, from the raw samples (ratio of medians)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench import RATIOS

    record = _load(path)
    workloads = record["workloads"]
    medians = {w: {op: statistics.median(s) for op, s in data["samples_s"].items()} for w, data in workloads.items()}
    rows = []
    used: set[str] = set()
    for label, ratio in RATIOS.items():
        used.update((ratio.ours, ratio.peer))
        cells = []
        for w in workloads:
            m = medians[w]
            if ratio.ours in m and ratio.peer in m:
                cells.append(f"{_num(m[ratio.ours] / m[ratio.peer])} ({_ms(m[ratio.ours])} vs {_ms(m[ratio.peer])})")
            elif ratio.ours in m or ratio.peer in m:
                cells.append("not measured in this run")
            else:
                cells.append("")
        rows.append([label, *cells, ratio.like])
    lines = [caption(path, record), ""]
    lines += _table(["ratio of medians (< 1: burnpack faster)", *workloads, "like for like"], rows)
    extra = [f"{op}, {w.split()[0]}: {_ms(m[op])}" for w, m in medians.items() for op in m if op not in used]
    if extra:
        lines += ["", "Also measured in this run, in no ratio: " + "; ".join(extra) + "."]
    return "\n".join(lines)


# -- benchmarks/replace_bench.py ----------------------------------------------------------------
def replace(path: str) -> str:
    sys.path.insert(0, str(ROOT))
    from benchmarks.replace_bench import RATIOS

    record = _load(path)
    medians = {op: statistics.median(s) for op, s in record["samples_s"].items()}
    rows = []
    for label, (ours, peer, like) in RATIOS.items():
        if ours in medians and peer in medians:
            rows.append([label, f"{_num(medians[ours] / medians[peer])} ({_ms(medians[ours])} vs {_ms(medians[peer])})", like])
        else:
            rows.append([label, "not measured in this run", like])
    head = f"{record['mib']} MiB over an existing file, {len(next(iter(record['samples_s'].values())))} interleaved repeats"
    return "\n".join([caption(path, record), "", *_table(["ratio of medians", head, "like for like"], rows)])


# -- runs side by side ------------------------------------------------------------------------
# -- benchmarks/cbor_decoder_bench.py -----------------------------------------------------------
def cbor_decoder_ab(path: str) -> str:
    """One run with ``--base``: this checkout's exact decoder, the other's and cbor2, interleaved."""
    record = _load(path)
    base = f"`{record['base_checkout']}`"
    rows = [[name, f"{w['exact_mb_s']}", f"{w['base_mb_s']}", f"{w['cbor2_mb_s']}", _num(w["new_over_base_time"], 3),
             _num(min(w["exact_samples_s"]) / min(w["cbor2_samples_s"]), 3)] for name, w in record["workloads"].items()]  # fmt: skip
    header = ["workload (best of the run's repeats)", "this: MB/s", f"{base}: MB/s", "cbor2: MB/s", f"time: this / {base}", "time: this / cbor2"]
    return "\n".join([caption(path, record), "", *_table(header, rows)])


# -- benchmarks/quant_bench.py ------------------------------------------------------------------
def quant(path: str) -> str:
    """One row per scheme: the default path (the compiled kernel where it covers the scheme) and,
    in runs that measured it beside, numpy's path, each against the peer."""
    record = _load(path)
    both = all("numpy_ratio" in res for res in record["results"].values())
    header = ["scheme (dequantize / `astype(float32) * scale`)", "kernel where built: medians (minimums)"]
    header += ["numpy's path: medians (minimums)"] if both else []
    rows = []
    for name, res in record["results"].items():
        row = [name, f"{_num(res['ratio'])} ({_num(res['ratio_of_minimums'])}) [{res.get('path', record.get('kernel', 'numpy'))}]"]
        if both:
            row.append(f"{_num(res['numpy_ratio'])} ({_num(res['numpy_ratio_of_minimums'])})")
        rows.append(row)
    return "\n".join([caption(path, record), "", *_table(header, rows)])


# -- benchmarks/ab_tiny.py ----------------------------------------------------------------------
def ab_tiny(*paths: str) -> str:
    records = [_load(p) for p in paths]
    names = list(records[0]["results"])
    header = ["new / old (CPU time, minimum)"] + [
        f"`{Path(p).name}`: {r['commits']['new']} / {r['commits']['old']}" for p, r in zip(paths, records)
    ]
    rows = [[name] + [_num(r["results"][name]["new/old"]) if name in r["results"] else "not measured" for r in records] for name in names]
    return "\n".join(_table(header, rows))


# -- benchmarks/fuzz_campaign.py ----------------------------------------------------------------
def fuzz_campaigns(*paths: str) -> str:
    rows = []
    for p in paths:
        r = _load(p)
        kinds = r["failures_by_kind"]
        rows.append([f"`{Path(p).name}`", r["commit"][:9], str(r["seed"]), f"{r['inputs']:,}", f"{r['wall_seconds']:,.0f} s",
                     str(kinds["foreign"]), str(kinds["over_time"]), str(kinds["over_memory"])])
    return "\n".join(_table(["file", "commit", "seed", "inputs", "wall time", "outside burnpack", "over time", "over memory"], rows))


# -- burnpack-conformance fuzz --json ------------------------------------------------------------
def conformance_fuzz(*paths: str) -> str:
    rows = []
    for p in paths:
        r = _load(p)
        kinds = ", ".join(f"{k} {v:,}" for k, v in r["inputs_by_kind"].items())
        rows.append([f"`{Path(p).name}`", r["engine"], r["commit"][:9], f"{r['wall_seconds']:,.0f} s", f"{r['inputs']:,} ({kinds})",
                     str(len(r["failures"])), _load_text(r)])
    return "\n".join(_table(["file", "engine", "commit", "wall time", "inputs", "failing", "load"], rows))


# -- benchmarks/reach_bench.py ------------------------------------------------------------------
def reach(path: str) -> str:
    r = _load(path)
    s, t, remote = r["sharded"], r["torch"], r["remote"]
    gib = s["bytes"] / (1 << 30)
    med = statistics.median
    convert, cp, cp_fsync = med(x["seconds"] for x in s["runs"]), med(s["cp_runs"]), med(s["cp_fsync_runs"])
    write = med(x["seconds"] for x in s["write_runs"])
    extra = max(x["extra_mib"] for x in s["runs"])
    n = len(s["runs"])
    rows = [
        [f"sharded {gib:.0f} GiB, {len(s['shards'])} shards → one `.bpk`: RSS high-water mark above the baseline",
         f"{extra:.2f} MiB (largest tensor {s['largest_tensor_mib']:.0f} MiB)", "≤ largest tensor + 128 MiB", "—"],
        ["… `convert` / `cp -r` of the shards + fsync of each copy", f"{_num(convert / cp_fsync)}× ({convert:.2f} s vs {cp_fsync:.2f} s, medians of {n})",
         "≤ 1.3×", "durable vs durable"],
        ["… `read_tensors` of the shard folder + `Writer.write` / plain `cp -r`", f"{_num(write / cp)}× ({write:.2f} s vs {cp:.2f} s)", "≤ 1.3×",
         "neither fsyncs; not the same file operations: cp creates each file in place, the conversion renames a scratch file into place"],
        ["… `convert` / plain `cp -r`", f"{_num(convert / cp)}×", "—",
         "no fair peer: durable against a copy that returns before its bytes reach the disk"],
        *_torch_rows(t),
    ]
    rows += [[f"remote: {label}", value, target, "—"] for label, value, target in _remote_rows(remote)]
    if "numpy_vs_get" in remote:  # runs from before it was measured have no such row
        g = remote["numpy_vs_get"]
        ours, get = med(g["burnpack_runs"]), med(g["get_runs"])
        rows.append([f"remote: every tensor of a {g['file_bytes'] / (1 << 20):.0f} MiB pack, `load(url).numpy()` / one plain GET of the file",
                     f"{_num(ours / get)}× ({_ms(ours)} vs {_ms(get)}, medians of {len(g['burnpack_runs'])}; {g['burnpack_requests']} requests)",
                     "≤ 1.2×", "the same HTTP client (fsspec) and server: range requests, several at once, against one GET"])
    return "\n".join([caption(path, r), "", *_table(["measure", "result", "target", "like for like"], rows)])


def _torch_rows(t: dict[str, Any]) -> list[list[str]]:
    """The torch rows of a reach run: each pair's ratio of medians, and the page-offset sweep."""
    med = statistics.median

    def pair(key: str) -> tuple[float, float, int]:
        return med(t[key]["burnpack_runs"]), med(t[key]["safetensors_runs"]), len(t[key]["burnpack_runs"])

    def ratio(key: str, first: bool = False) -> str:
        ours, peer, n = pair(key)
        return f"{_num(ours / peer)}× ({_ms(ours)} vs {_ms(peer)}{f', medians of {n}' if first else ''})"

    page = t["page_offset"]
    same = f"torch vs torch; both files' data at byte {page['burnpack']} of a page"
    sweep = {int(o): med(runs) for o, runs in t["sum_by_page_offset"].items()}
    slow, fast = max(sweep, key=sweep.__getitem__), min(sweep, key=sweep.__getitem__)
    return [
        [f"{t['mib']} MiB, {t['tensors']} tensors: `burnpack.torch.load_file` / `safetensors.torch.load_file` (no tensor touched)",
         ratio("load_file", first=True), "—", "torch vs torch; each file as its writer lays it out"],
        ["… `load_file` + sum of every tensor / `safetensors.torch.load_file` + sum", ratio("load_file_sum"), "≤ 1.0×", same],
        ["… the same, both files padded to put their data at byte 0 of a page", ratio("load_file_sum_page_start"), "≤ 1.0×",
         "torch vs torch; both files' data at byte 0 of a page"],
        ["… the same, each file as its writer lays it out", ratio("load_file_sum_as_written"), "—",
         f"torch vs torch; the data at byte {page['burnpack']} of a page in the `.bpk`, {page['safetensors_as_written']} in the "
         "safetensors file, which alone moves torch's sum (next-but-one row)"],
        ["… `load(framework=\"pt\")` + `get_tensor` + sum / `safe_open(framework=\"pt\")` + …", ratio("open_get_sum"), "≤ 1.1×",
         f"{same}; lazy vs lazy"],
        [f"torch's sum of the same {t['sum_by_page_offset_mib']} MiB at each 256-byte offset within a page: slowest / fastest",
         f"{_num(sweep[slow] / sweep[fast])}× (byte {slow}: {_ms(sweep[slow])}; byte {fast}: {_ms(sweep[fast])})", "—",
         "no peer: one library, the same bytes at 16 offsets"],
        [f"{t['tiny_tensors']:,} tiny tensors: `burnpack.torch.load_file` + sum / `safetensors.torch.load_file` + sum",
         ratio("tiny_load_file_sum"), "≤ 0.7×", "torch vs torch"],
        ["… `load_file` alone", ratio("tiny_load_file"), "—", "torch vs torch"],
    ]


def _remote_rows(remote: dict[str, Any]) -> list[tuple[str, str, str]]:
    o, one, every = remote["open"], remote["one_4mib_tensor"], remote["numpy_all"]
    return [
        (f"open a {remote['file_bytes'] / (1 << 30):.0f} GiB pack on local HTTP",
         f"{o['requests']} requests ({o['range_requests']} range), {o['bytes']:,} bytes", "≤ 64 KiB"),
        ("… one 4 MiB tensor", f"{one['requests']} request, {one['bytes']:,} bytes (the tensor: {one['tensor_bytes']:,})",
         "≤ 4 MiB + 64 KiB"),
        (f"… `pack.numpy()` ({every['tensors']} tensors)", f"{every['requests']} requests, {every['bytes']:,} bytes", "coalesced"),
    ]


# -- benchmarks/view_stats.py ------------------------------------------------------------------
def view_stats(path: str) -> str:
    """One row per statistics path the run measured (the kernel, and numpy's beside it) and cache state."""
    r = _load(path)
    runs, model = r["runs"], r["model"]
    values = model["size_mib"] * (1 << 20) // 4
    paths = {"": r.get("kernel", "numpy")} | ({"_numpy": "numpy"} if "value_stats_numpy_warm" in runs else {})
    rows = []
    for suffix, kernel in paths.items():
        for cache, clock, note in (("warm", "cpu", "page cache warm: reading is a memory copy (CPU time)"),
                                   ("cold", "wall", "file evicted from the page cache before each run (wall time)")):
            ours, peer = runs[f"value_stats{suffix}_{cache}"][f"min_{clock}_s"], runs[f"read_once_{cache}"][f"min_{clock}_s"]
            rows.append([f"statistics ({kernel}) / read once + sum, {cache}", f"{_num(ours / peer)}× ({_ms(ours)} vs {_ms(peer)})",
                         f"{ours / values * 1e9:.1f} ns", "≤ 2×", note])
    return "\n".join([caption(path, r), "", *_table(
        [f"{model['size_mib']} MiB {model['dtype']}, {model['tensors']} tensors", "result (minimum of runs)",
         "statistics per value (same clock)", "target", "like for like"], rows)])


# -- benchmarks/view_pages.py ------------------------------------------------------------------
def _seconds(seconds: float) -> str:
    return _ms(seconds) if seconds < 1 else f"{seconds:.1f} s"


def view_pages(path: str) -> str:
    """Per input: the page's size with and without statistics, the command's time and Chromium's."""
    record = _load(path)
    pages, opened = record["pages"], record["open"]
    rows = []
    for name, label in record["inputs"].items():
        row = [label]
        for page in (f"{name}.html", f"{name}-no-stats.html"):
            made = pages[page]
            load = opened.get(page, {}).get("min_load_ms")
            size = f"{made['bytes'] / 1e3:.1f} kB" if made["bytes"] < 1e6 else f"{made['bytes'] / 1e6:.1f} MB"
            row += [f"{size} ({made['bytes']:,} bytes)", _seconds(made["min_make_s"]), "not measured" if load is None else _seconds(load / 1000)]
        rows.append(row)
    browser = opened.get("skipped") or f"headless Chromium {opened['chromium_version']}, navigation to the end of the load event"
    header = ["input", "page", "`burnpack view`", "opened", "page, `--no-stats`", "`burnpack view --no-stats`", "opened"]
    return "\n".join([caption(path, record) + f" Best of {record['repeat']}; opened: {browser}.", "", *_table(header, rows)])


# -- benchmarks/open_bench.py ------------------------------------------------------------------
def open_bench(path: str) -> str:
    """Every ratio of medians the run computed (CPU time), one row per workload and measure."""
    record = _load(path)
    rows = []
    for workload, entry in record["workloads"].items():
        for pair, ratios in entry["ratios"].items():
            rows.extend([workload, measure, pair.replace("base", f"`{record.get('base_checkout', 'base')}`"), _num(ratio)]
                        for measure, ratio in ratios.items())
    return "\n".join([caption(path, record), "", *_table(["workload", "measure", "which / which", "ratio of medians (CPU time)"], rows)])


# -- benchmarks/skip_bench.py ------------------------------------------------------------------
SKIP_COLUMNS = (("load_kernel_s", "`load`, compiled kernel"), ("load_python_s", "`load`, Python walk"),
                ("cbor2_loads_s", "`cbor2.loads`"), ("regex_scan_s", "one regex pass"), ("bytes_count_s", "`bytes.count`"))


def skip(*paths: str) -> str:
    """Per run and mix: the best time of each way over the same metadata bytes ("not measured" where a run lacks it)."""
    records = [(path, _load(path)) for path in paths]
    rows = []
    for i, (_, r) in enumerate(records):
        for mix, row in r["mixes"].items():
            cells = [_ms(min(row[key])) if key in row else "not measured" for key, _ in SKIP_COLUMNS]
            rows.append([f"run {i + 1}: {mix}, {row['metadata_bytes'] / 1e6:.0f} MB", *cells])
    captions = [f"Run {i + 1}: {caption(path, r)}" for i, (path, r) in enumerate(records)]
    return "\n".join([*captions, "", *_table(["mix (best of the run's repeats)", *(name for _, name in SKIP_COLUMNS)], rows)])


# -- benchmarks/kernels_bench.py -------------------------------------------------------------------
def kernels(path: str) -> str:
    """Per kernel and workload: the kernel's, its library's and its Python twin's ratio to the
    workload's peer against the target, and whether the library meets every target."""
    record = _load(path)
    rows = []
    for module, kernel in record["kernels"].items():
        verdict = ("**library meets every target: the kernel goes**" if kernel["library_meets_target"]
                   else f"library misses (worst: {kernel['library_worst_over_target']:.2f}× its target)")  # fmt: skip
        for i, r in enumerate(kernel["rows"]):
            ratios, medians = r["ratios"], r["medians_s"]
            cells = [f"{_num(ratios[side])}× ({_ms(medians[side])})" if side in ratios else "—" for side in ("kernel", "library", "twin")]
            target = "—" if r["target"] is None else f"≤ {r['target']:g}×"
            clock = "CPU" if r["clock"] == "cpu" else "wall"
            rows.append([f"`{module.rsplit('.', 1)[1]}`" if i == 0 else "", f"{r['workload']} / {r['peer']} ({_ms(medians[r['peer']])}, {clock})",
                         target, *cells, verdict if i == 0 else ""])  # fmt: skip
        rows[-len(kernel["rows"])][0] += f" ({kernel['library']})"
    header = ["kernel (library)", "workload / peer (its median, clock)", "target", "kernel", "library", "Python twin", "verdict"]
    return "\n".join([caption(path, record), "", *_table(header, rows)])


# -- benchmarks/startup_bench.py ----------------------------------------------------------------
def startup(path: str) -> str:
    """Each command's ratio of medians to ``import numpy`` (CPU time, the target's measure, and
    wall time; instructions, when the run counted them), with the target, and ``import numpy``'s
    own medians."""
    record = _load(path)
    ratios, medians, targets = record["ratios"], record["medians"], record["targets"]
    counted = "instructions" in ratios
    rows = [[f"`{name}`" + (" (small pack)" if name == "burnpack inspect" else ""), _num(ratios["cpu"][name]), _num(ratios["wall"][name]),
             *([f"{ratios['instructions'][name]:.3f}"] if counted else []), f"≤ {target}×"] for name, target in targets.items()]  # fmt: skip
    base = "import numpy"
    rows.append([f"`{base}` itself ({record['repeat']} runs)", _ms(medians["cpu"][base]), _ms(medians["wall"][base]),
                 *([f"{record['instructions'][base]:,}"] if counted else []), "—"])  # fmt: skip
    header = ["ratio of medians to `python -c \"import numpy\"`", "CPU time", "wall time", *(["instructions (one run)"] if counted else []),
              "target (CPU time)"]  # fmt: skip
    return "\n".join([caption(path, record), "", *_table(header, rows)])


# -- the README's headline table ------------------------------------------------------------------
def headline(bench_path: str, open_path: str, reach_path: str, quant_path: str) -> str:
    """The README's speed table: a few rows of bench.py, open_bench.py, reach_bench.py and
    quant_bench.py, each against its peer in the same run; no captions (the pages under docs/ show
    every row of each run, with its commit and machine)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench import RATIOS

    b, o, r, q = (_load(path) for path in (bench_path, open_path, reach_path, quant_path))
    med = statistics.median

    def workload(prefix: str) -> tuple[str, dict[str, float]]:
        name = next(w for w in b["workloads"] if w.startswith(prefix))
        return name[len(prefix) + 1 :], {op: med(s) for op, s in b["workloads"][name]["samples_s"].items()}

    def from_bench(prefix: str, label: str) -> str:
        m = workload(prefix)[1]
        return f"{_num(m[RATIOS[label].ours] / m[RATIOS[label].peer])}×"

    def from_reach(key: str) -> str:
        return f"{_num(med(r['torch'][key]['burnpack_runs']) / med(r['torch'][key]['safetensors_runs']))}×"

    tiny = workload("(b)")[0]
    small = next(w for w in o["workloads"] if w.startswith("64-tensor"))
    q4 = next(v for k, v in q["results"].items() if k.startswith("q4s block 32"))
    get = r["remote"]["numpy_vs_get"]
    names, numpy_each = "open + names / `safe_open` + `keys()`", "open + `numpy()` of each / `safe_open` + `get_tensor` of each"
    rows = [
        [f"open {tiny}, list names", "`safe_open` + `keys()`", from_bench("(b)", names)],
        ["… and read each as numpy", "`safe_open` + `get_tensor`", from_bench("(b)", numpy_each)],
        [f"save {tiny}, durably", "`save_file` + the same fsyncs", from_bench("(b)", "save, durable: `burnpack.save` / `save_file` + same steps")],
        ["open a 1 MiB file, list names (CPU time, 200 calls)", "`safe_open` + `keys()`",
         f"{_num(o['workloads'][small]['ratios']['this / safe_open']['open+names'])}×"],
        [f"open a {workload('(a)')[0].split(' in ')[0]} file, list names (one cold call)", "`safe_open` + `keys()`", from_bench("(a)", names)],
        [f"write {workload('(a)')[0].split(' in ')[0]}", "a raw write of the same bytes", from_bench("(a)", "`Writer.write` of built tensors / raw write of its bytes")],
        [f"torch: `load_file` + sum, {r['torch']['mib']} MiB", "`safetensors.torch`, data at the same page offset", from_reach("load_file_sum")],
        ["… each file as its writer lays it out", "`safetensors.torch`", from_reach("load_file_sum_as_written")],
        [f"torch: `load_file` + sum, {r['torch']['tiny_tensors']:,} tiny tensors", "`safetensors.torch`", from_reach("tiny_load_file_sum")],
        ["dequantize packed Q4, blocks of 32", "`astype(float32) * scale`", f"{_num(q4['ratio'])}×"],
        [f"read every tensor of a {get['file_bytes'] / (1 << 20):.0f} MiB pack over HTTP", "one plain GET of the file",
         f"{_num(med(get['burnpack_runs']) / med(get['get_runs']))}×"],
    ]
    return "\n".join(_table(["burnpack", "against", "time ratio"], rows))


# -- benchmarks/layouts_bench.py ----------------------------------------------------------------
def layouts(path: str) -> str:
    """Each way's median time and memory peaks, then every ratio the run defines, with its peer."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.layouts_bench import RATIOS

    record = _load(path)
    samples = record["samples"]
    medians = {name: statistics.median(s["seconds"] for s in runs) for name, runs in samples.items()}
    rows = [[f"`{name}`", _ms(medians[name]), _ms(statistics.median(s["cpu_seconds"] for s in runs)),
             f"{max(s['rss_peak_mib'] for s in runs) - record['baseline_rss_mib']:.0f} MiB", f"{record['heap_peak_mib'][name]:.1f} MiB"]
            for name, runs in samples.items()]  # fmt: skip
    head = (f"{record['input_mib']:.0f} MiB float32 in {record['blocks']} LSTM + {record['blocks']} encoder layers "
            f"(largest tensor {record['largest_tensor_mib']:.1f} MiB), {record['repeat']} repeats")
    header = ["way", f"median time: {head}", "median CPU time (all threads)", "RSS peak over a bare interpreter", "heap peak (an untimed run)"]
    lines = [caption(path, record), "", *_table(header, rows), ""]
    ratio_rows = [[label, f"{_num(medians[ours] / medians[peer])} ({_ms(medians[ours])} vs {_ms(medians[peer])})", like]
                  for label, (ours, peer, like) in RATIOS.items()]  # fmt: skip
    return "\n".join(lines + _table(["ratio of medians", "result", "what it compares"], ratio_rows))


RENDERERS: dict[str, Callable[..., str]] = {
    "bench": bench, "replace": replace, "quant": quant, "ab_tiny": ab_tiny,
    "fuzz_campaigns": fuzz_campaigns, "conformance_fuzz": conformance_fuzz, "reach": reach, "view_stats": view_stats, "view_pages": view_pages,
    "skip": skip, "open_bench": open_bench, "headline": headline, "cbor_decoder_ab": cbor_decoder_ab, "layouts": layouts, "kernels": kernels,
    "startup": startup,
}


def render(spec: str) -> str:
    kind, *files = spec.split()
    return RENDERERS[kind](*files)


def regenerate(text: str) -> str:
    """``text`` with every table block replaced by what its files give."""
    return BLOCK.sub(lambda m: m.group(1) + render(m["spec"]) + "\n" + m.group(4), text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for page in PAGES:
        text = page.read_text()
        fresh = regenerate(text)
        if args.write and fresh != text:
            page.write_text(fresh)
        elif args.check and fresh != text:
            stale.append(page.relative_to(ROOT).as_posix())
        elif not args.write and not args.check:
            for m in BLOCK.finditer(text):
                print(f"{page.relative_to(ROOT).as_posix()}:\n<!-- table: {m['spec']} -->\n{render(m['spec'])}\n")
    if stale:
        print(f"tables in {', '.join(stale)} differ from their results files: run python benchmarks/tables.py --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
