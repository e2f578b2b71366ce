"""Exact statistics of ``burnpack view`` against reading the same model once.

Writes a model of ``--size-mib`` MiB of F32 tensors and times, on its own and per repeat:

- reading once: every tensor's bytes read in 8 MiB ranges into numpy and summed (``view.read``
  + ``np.frombuffer`` + ``sum``: every byte read and touched once, as a program would);
- ``value_stats`` over every tensor (two streamed passes: moments, then the histogram), with the
  compiled kernel when it is built (``burnpack.view.stats.KERNEL``), and with numpy's path.

Both with the page cache warm (after a first read; reading is then a memory copy) and cold
(the file's pages evicted with ``posix_fadvise(DONTNEED)`` and the pack reopened before each
run; reading is then the storage's speed). Times are the minimum of ``--repeat`` runs, CPU time
for warm runs, wall time for cold ones (waiting for the disk is no CPU time). The issue asks for
statistics in at most 2x the time of reading once:

    python benchmarks/view_stats.py --size-mib 1024    # writes benchmarks/results/view_stats.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

import burnpack
from burnpack.view.stats import CHUNK_ELEMENTS, KERNEL, value_stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402

READ = 8 << 20


def read_once(pack: burnpack.Pack) -> float:
    total = 0.0
    for view in pack.tensors():
        for offset in range(0, view.byte_len, READ):
            total += float(np.frombuffer(view.read(offset, READ), np.float32).sum())
    return total


def stats_all(pack: burnpack.Pack, compiled: bool | None = None) -> int:
    return sum(value_stats(view, compiled=compiled)["count"] for view in pack.tensors())


def evict(path: Path) -> None:
    """Drop the file's pages from the page cache (no mapping of it may be open)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(fn: Callable[[burnpack.Pack], object], path: Path, repeat: int, *, cold: bool) -> dict[str, object]:
    cpu, wall = [], []
    for _ in range(repeat):
        if cold:
            evict(path)
        c, w = time.process_time(), time.perf_counter()
        with burnpack.load(path) as pack:
            fn(pack)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return {"cpu_s": [round(x, 4) for x in cpu], "wall_s": [round(x, 4) for x in wall], "min_cpu_s": round(min(cpu), 4),
            "min_wall_s": round(min(wall), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--tensors", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    per = args.size_mib * (1 << 20) // 4 // args.tensors
    values = args.size_mib * (1 << 20) // 4
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.bpk"
        burnpack.save({f"layers.{i}.weight": rng.standard_normal(per, np.float32).reshape(-1, 1024) for i in range(args.tensors)}, path)
        record = environment(Path(tmp))
        record.update(benchmark="view_stats", model={"size_mib": args.size_mib, "tensors": args.tensors, "dtype": "F32"},
                      chunk_elements=CHUNK_ELEMENTS, kernel=KERNEL)
        with burnpack.load(path) as pack:
            read_once(pack)  # warm the page cache
        paths = {"": partial(stats_all, compiled=None), "_numpy": partial(stats_all, compiled=False)} if KERNEL == "compiled" else {"": stats_all}
        runs = {}
        for cache, cold in (("warm", False), ("cold", True)):
            runs[f"read_once_{cache}"] = timed(read_once, path, args.repeat, cold=cold)
            for suffix, statistics in paths.items():
                runs[f"value_stats{suffix}_{cache}"] = timed(statistics, path, args.repeat, cold=cold)
    record["runs"] = runs
    record["ratios"] = {
        f"{suffix.strip('_') or KERNEL}": {
            "warm_cpu": round(runs[f"value_stats{suffix}_warm"]["min_cpu_s"] / runs["read_once_warm"]["min_cpu_s"], 2),
            "cold_wall": round(runs[f"value_stats{suffix}_cold"]["min_wall_s"] / runs["read_once_cold"]["min_wall_s"], 2),
        }
        for suffix in paths
    }
    record["ns_per_value_cpu"] = {k: round(v["min_cpu_s"] / values * 1e9, 2) for k, v in runs.items()}
    finish(record)
    print(json.dumps(record["ratios"], indent=1))
    save(record, "view_stats", args.json)


if __name__ == "__main__":
    main()
