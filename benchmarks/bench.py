"""Save/load speed of burnpack against safetensors.numpy, measured in the same process.

Two workloads (issue 2 §6): (a) ~1 GiB of float32 in 64 tensors, (b) 20,000 tiny tensors.
Each operation is timed ``--repeat`` times; the report gives medians and burnpack/peer ratios
(< 1 means burnpack is faster). Files go to a temporary directory on the same disk.

    python benchmarks/bench.py [--repeat 5] [--big-mib 1024] [--tiny 20000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import burnpack


def median_seconds(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def workload_big(mib: int) -> dict[str, np.ndarray]:
    per_tensor = mib * (1 << 20) // 64 // 4
    rng = np.random.default_rng(0)
    return {f"layers.{i}.weight": rng.standard_normal(per_tensor, dtype=np.float32) for i in range(64)}


def workload_tiny(count: int) -> dict[str, np.ndarray]:
    return {f"layers.{i}.bias": np.full(4, i, dtype=np.float32) for i in range(count)}


def bpk_load_views(path: Path) -> None:
    with burnpack.load(path) as pack:
        pack.numpy()


def bpk_load_sum(path: Path) -> None:
    with burnpack.load(path) as pack:
        for array in pack.numpy().values():
            array.sum()


def st_safe_open(path: Path) -> None:
    with safe_open(str(path), framework="np") as f:
        for name in f.keys():
            f.get_tensor(name)


def st_safe_open_sum(path: Path) -> None:
    with safe_open(str(path), framework="np") as f:
        for name in f.keys():
            f.get_tensor(name).sum()


def run(name: str, tensors: dict[str, np.ndarray], repeat: int, tmp: Path) -> dict[str, float]:
    bpk, st = tmp / f"{name}.bpk", tmp / f"{name}.safetensors"
    r: dict[str, float] = {}
    r["save burnpack (write)"] = median_seconds(lambda: burnpack.Writer([burnpack.Tensor.from_numpy(k, v) for k, v in tensors.items()]).write(bpk), repeat)
    r["save burnpack (save: atomic + fsync)"] = median_seconds(lambda: burnpack.save(tensors, bpk), repeat)
    r["save safetensors (save_file)"] = median_seconds(lambda: save_file(tensors, str(st)), repeat)
    r["load burnpack (load + numpy(), zero-copy)"] = median_seconds(lambda: bpk_load_views(bpk), repeat)
    r["load safetensors (load_file)"] = median_seconds(lambda: load_file(str(st)), repeat)
    r["load safetensors (safe_open + get_tensor)"] = median_seconds(lambda: st_safe_open(st), repeat)
    r["load+sum burnpack"] = median_seconds(lambda: bpk_load_sum(bpk), repeat)
    r["load+sum safetensors (safe_open)"] = median_seconds(lambda: st_safe_open_sum(st), repeat)
    return r


def report(name: str, r: dict[str, float]) -> list[str]:
    ratios = {
        "save: burnpack write / save_file": r["save burnpack (write)"] / r["save safetensors (save_file)"],
        "save: burnpack save (atomic+fsync) / save_file": r["save burnpack (save: atomic + fsync)"] / r["save safetensors (save_file)"],
        "load: burnpack / load_file": r["load burnpack (load + numpy(), zero-copy)"] / r["load safetensors (load_file)"],
        "load: burnpack / safe_open+get_tensor": r["load burnpack (load + numpy(), zero-copy)"] / r["load safetensors (safe_open + get_tensor)"],
        "load+sum: burnpack / safe_open": r["load+sum burnpack"] / r["load+sum safetensors (safe_open)"],
    }
    lines = [f"## {name}", "", "| operation | median |", "| --- | --- |"]
    lines += [f"| {op} | {seconds * 1000:.1f} ms |" for op, seconds in r.items()]
    lines += ["", "| ratio (burnpack / safetensors; < 1 = burnpack faster) | value |", "| --- | --- |"]
    lines += [f"| {op} | {value:.3f} |" for op, value in ratios.items()]
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--tiny", type=int, default=20_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        results[f"(a) {args.big_mib} MiB float32 in 64 tensors"] = run("big", workload_big(args.big_mib), args.repeat, Path(tmp))
        results[f"(b) {args.tiny} tiny tensors"] = run("tiny", workload_tiny(args.tiny), args.repeat, Path(tmp))
    for name, r in results.items():
        print("\n".join(report(name, r)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
