"""Save/load speed of burnpack against safetensors.numpy, like with like, in one interleaved run.

Workloads: (a) float32 in 64 large tensors, (b) many tiny tensors, (c) the metadata of a pack of
100,000 tensors (open against a bare ``cbor2.loads`` of the same bytes). Every repeat runs each
operation once, in turn, so load changes hit both sides alike; the report gives medians and
burnpack/peer ratios of medians (< 1 means burnpack is faster).

Fair comparisons: saves at equal durability (``burnpack.save`` = scratch, fsync, rename, directory
fsync, against ``save_file`` given the same steps; ``Writer.write`` of built tensors against
writing the same bytes to a scratch file renamed into place, and from the arrays against a plain
``save_file``), ``os.sync()`` before each timed write, every timed write to
a new name (nothing replaces a file a timed step just wrote), and loads reported three ways: open
+ names (lazy), open + sum of every tensor (the fair figure), eager copies.

    python benchmarks/bench.py [--repeat 7] [--big-mib 1024] [--tiny 20000] [--many 100000]

Raw samples, the commit, the load average and package versions go to
``benchmarks/results/bench-<UTC time>.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import cbor2
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import burnpack

HERE = Path(__file__).resolve().parent
_names = itertools.count()


def workload_big(mib: int) -> dict[str, np.ndarray]:
    per_tensor = mib * (1 << 20) // 64 // 4
    rng = np.random.default_rng(0)
    return {f"layers.{i}.weight": rng.standard_normal(per_tensor, dtype=np.float32) for i in range(64)}


def workload_tiny(count: int) -> dict[str, np.ndarray]:
    return {f"layers.{i}.bias": np.full(4, i, dtype=np.float32) for i in range(count)}


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_save_file(tensors: dict[str, np.ndarray], path: Path) -> None:
    """``save_file`` given burnpack.save's steps: scratch file, fsync, rename, directory fsync."""
    scratch = path.with_name(f".{path.name}.tmp")
    save_file(tensors, str(scratch))
    fd = os.open(scratch, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(scratch, path)
    fsync_dir(path.parent)


def raw_write(data: bytes, path: Path) -> None:
    """The same bytes as ``Writer.write`` writes, through a scratch file renamed into place."""
    scratch = path.with_name(f".{path.name}.tmp")
    with open(scratch, "wb") as stream:
        stream.write(data)
    os.rename(scratch, path)


def sum_all(arrays: object) -> None:
    for array in arrays:  # type: ignore[attr-defined]
        array.sum()


def write_ops(tensors: dict[str, np.ndarray], tmp: Path) -> dict[str, Callable[[Path], object]]:
    data = burnpack.save_bytes(tensors)
    built = [burnpack.Tensor.from_numpy(k, v) for k, v in tensors.items()]
    return {
        "save: burnpack.save (scratch+fsync+rename+dir fsync)": lambda p: burnpack.save(tensors, p),
        "save: save_file, same steps": lambda p: durable_save_file(tensors, p),
        "write: Writer.write of built Tensors (no fsync)": lambda p: burnpack.Writer(built).write(p),
        "write: raw write of the same bytes": lambda p: raw_write(data, p),
        "write: Writer.write from the arrays (no fsync)": lambda p: burnpack.Writer([burnpack.Tensor.from_numpy(k, v) for k, v in tensors.items()]).write(p),
        "write: save_file (no fsync)": lambda p: save_file(tensors, str(p)),
    }


def read_ops(bpk: Path, st: Path) -> dict[str, Callable[[], object]]:
    def bpk_names() -> None:
        with burnpack.load(bpk) as pack:
            pack.names

    def bpk_numpy() -> None:
        with burnpack.load(bpk) as pack:
            pack.numpy()

    def bpk_sum() -> None:
        with burnpack.load(bpk) as pack:
            sum_all(pack.numpy().values())

    def bpk_eager() -> None:
        with burnpack.load(bpk) as pack:
            {name: array.copy() for name, array in pack.numpy().items()}

    def st_names() -> None:
        with safe_open(str(st), framework="np") as f:
            list(f.keys())

    def st_safe_open_sum() -> None:
        with safe_open(str(st), framework="np") as f:
            for name in f.keys():
                f.get_tensor(name).sum()

    return {
        "open+names: burnpack": bpk_names,
        "open+names: safe_open keys": st_names,
        "open+numpy(): burnpack (zero-copy views)": bpk_numpy,
        "load: load_file (copies)": lambda: load_file(str(st)),
        "load+sum: burnpack": bpk_sum,
        "load+sum: load_file": lambda: sum_all(load_file(str(st)).values()),
        "load+sum: safe_open+get_tensor": st_safe_open_sum,
        "eager copy: burnpack numpy()+copy": bpk_eager,
    }


def run_files(tensors: dict[str, np.ndarray], repeat: int, tmp: Path) -> dict[str, list[float]]:
    """Interleaved samples (seconds) of every write and read operation."""
    bpk, st = tmp / "w.bpk", tmp / "w.safetensors"
    burnpack.save(tensors, bpk)
    save_file(tensors, str(st))
    writes, reads = write_ops(tensors, tmp), read_ops(bpk, st)
    samples: dict[str, list[float]] = {name: [] for name in [*writes, *reads]}
    for _ in range(repeat):
        for name, op in writes.items():
            target = tmp / f"out{next(_names)}.bin"  # a new name: nothing a timed step wrote is replaced
            os.sync()  # one writer's fsync never pays for another's dirty pages
            start = time.perf_counter()
            op(target)
            samples[name].append(time.perf_counter() - start)
            target.unlink()
        for name, read in reads.items():
            start = time.perf_counter()
            read()
            samples[name].append(time.perf_counter() - start)
    return samples


def run_many(count: int, repeat: int) -> dict[str, list[float]]:
    """Opening a pack of ``count`` tensors against a bare ``cbor2.loads`` of its metadata."""
    data = burnpack.save_bytes({f"model.layers.{i}.mlp.up_proj.bias": np.full(2, i, np.float32) for i in range(count)})
    metadata = bytes(data[10 : 10 + int.from_bytes(data[6:10], "little")])
    ops: dict[str, Callable[[], object]] = {
        "open: burnpack.load(bytes)": lambda: burnpack.load(data),
        "decode: cbor2.loads(metadata)": lambda: cbor2.loads(metadata),
    }
    samples: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(repeat):
        for name, op in ops.items():
            start = time.perf_counter()
            op()
            samples[name].append(time.perf_counter() - start)
    return samples


RATIOS = {
    "load+sum: burnpack / load_file+sum (fair)": ("load+sum: burnpack", "load+sum: load_file"),
    "load+sum: burnpack / safe_open+get_tensor+sum": ("load+sum: burnpack", "load+sum: safe_open+get_tensor"),
    "open+numpy(): burnpack / load_file": ("open+numpy(): burnpack (zero-copy views)", "load: load_file (copies)"),
    "open+names: burnpack / load_file": ("open+names: burnpack", "load: load_file (copies)"),
    "open+names: burnpack / safe_open keys": ("open+names: burnpack", "open+names: safe_open keys"),
    "eager copy: burnpack / load_file": ("eager copy: burnpack numpy()+copy", "load: load_file (copies)"),
    "save (durable): burnpack.save / save_file same steps": (
        "save: burnpack.save (scratch+fsync+rename+dir fsync)",
        "save: save_file, same steps",
    ),
    "write: Writer.write of built Tensors / raw write of the same bytes": (
        "write: Writer.write of built Tensors (no fsync)",
        "write: raw write of the same bytes",
    ),
    "write: Writer.write from the arrays / save_file (no fsync)": ("write: Writer.write from the arrays (no fsync)", "write: save_file (no fsync)"),
    "open, many tensors: burnpack.load / cbor2.loads of its metadata": ("open: burnpack.load(bytes)", "decode: cbor2.loads(metadata)"),
}


def summarize(samples: dict[str, list[float]]) -> dict[str, object]:
    medians = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {label: medians[a] / medians[b] for label, (a, b) in RATIOS.items() if a in medians and b in medians}
    return {"median_ms": {k: round(v * 1000, 3) for k, v in medians.items()}, "ratios": {k: round(v, 3) for k, v in ratios.items()}}


README_ROWS = [
    "load+sum: burnpack / load_file+sum (fair)",
    "load+sum: burnpack / safe_open+get_tensor+sum",
    "eager copy: burnpack / load_file",
    "open+numpy(): burnpack / load_file",
    "open+names: burnpack / load_file",
    "save (durable): burnpack.save / save_file same steps",
    "write: Writer.write of built Tensors / raw write of the same bytes",
    "write: Writer.write from the arrays / save_file (no fsync)",
    "open, many tensors: burnpack.load / cbor2.loads of its metadata",
]


def markdown(result: dict[str, Any]) -> str:
    """The README's table: one row per ratio, one column per workload (ratios of medians)."""
    names = list(result["workloads"])
    lines = ["| ratio of medians (< 1: burnpack faster) | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for row in README_ROWS:
        cells = [result["workloads"][name]["ratios"].get(row) for name in names]
        if any(cell is not None for cell in cells):
            lines.append(f"| {row} | " + " | ".join("" if cell is None else f"{cell:.2f}" for cell in cells) + " |")
    return "\n".join(lines)


def environment() -> dict[str, object]:
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip())
    return {
        "commit": commit,
        "dirty": dirty,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "packages": {name: version(name) for name in ("burnpack", "numpy", "safetensors", "cbor2")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--tiny", type=int, default=20_000)
    parser.add_argument("--many", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table", type=Path, help="print the README table of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(markdown(json.loads(args.table.read_text())))
        return
    started = datetime.now(timezone.utc)
    out: dict[str, object] = {"started": started.isoformat(timespec="seconds"), "argv": sys.argv[1:], **environment()}
    out["loadavg_before"] = os.getloadavg()
    workloads: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        if args.big_mib:
            samples = run_files(workload_big(args.big_mib), args.repeat, Path(tmp))
            workloads[f"(a) {args.big_mib} MiB float32 in 64 tensors"] = {**summarize(samples), "samples_s": samples}
        if args.tiny:
            samples = run_files(workload_tiny(args.tiny), args.repeat, Path(tmp))
            workloads[f"(b) {args.tiny} tiny tensors"] = {**summarize(samples), "samples_s": samples}
    if args.many:
        samples = run_many(args.many, args.repeat)
        workloads[f"(c) {args.many}-tensor pack, metadata only"] = {**summarize(samples), "samples_s": samples}
    out["loadavg_after"] = os.getloadavg()
    out["workloads"] = workloads
    for name, result in workloads.items():
        print(f"## {name}")
        for label, value in result["ratios"].items():
            print(f"  {label}: {value}")
        for label, value in result["median_ms"].items():
            print(f"    {label}: {value} ms")
    print(f"load average before {out['loadavg_before']}, after {out['loadavg_after']}")
    path = args.json or HERE / "results" / f"bench-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"raw results: {path}")


if __name__ == "__main__":
    main()
