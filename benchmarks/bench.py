"""Save/load speed of burnpack against safetensors.numpy, like with like, in one interleaved run.

Workloads: (a) float32 in 64 large tensors, (b) many tiny tensors, (c) the metadata of a pack of
100,000 tensors (open against a bare ``cbor2.loads`` of the same bytes). Every repeat runs each
operation once, in turn (forwards, then backwards, rotated: see ``turned``), so load changes hit
both sides alike, and every read starts with the CPU's caches flushed (``FLUSH_BYTES``); the
report gives medians and burnpack/peer ratios of medians (< 1 means burnpack is faster).

Like with like: every ratio names its peer and what kind of comparison it is (lazy against
lazy, eager against eager, durable against durable, writes doing the same file operations), and
a ratio without a fair peer says so (``RATIOS``). Every timed write goes to a new name with
``os.sync()`` before it; ``benchmarks/tables.py`` turns a results file into the table in docs/benchmarks.md,
showing every ratio in ``RATIOS``.

    python benchmarks/bench.py [--repeat 7] [--big-mib 512] [--tiny 20000] [--many 100000]

Every sample, the commit, the load average before and after, package versions and the file
system go to ``benchmarks/results/bench.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import cbor2
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import burnpack
from burnpack.core.atomic import atomic_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402

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


def raw_pieces(tensors: dict[str, np.ndarray], large: int = 1 << 20) -> list[bytes | memoryview]:
    """The file ``burnpack.save_bytes(tensors)`` makes, as the pieces a hand-written writer with
    everything precomputed would write: each tensor of ``large`` bytes or more from its array's
    own memory, every run of smaller tensors, header, metadata and padding as one prepared blob.

    From the arrays, not from a copy of the file's bytes: a separate 1 GiB copy that only this
    peer touches wrote at a third of the speed in this benchmark (while the arrays are read by
    every other write), which measured where that copy's pages were, not the writing.
    """
    data = burnpack.save_bytes(tensors)
    with burnpack.load(data) as pack:
        spans = sorted((pack.data_section_start + pack[name].data_offsets[0], name) for name in tensors)
    pieces: list[bytes | memoryview] = []
    position = 0
    for start, name in spans:
        array = tensors[name]
        if array.nbytes < large:
            continue
        pieces.append(data[position:start])
        pieces.append(memoryview(array).cast("B"))
        assert pieces[-1] == data[start : start + array.nbytes]
        position = start + array.nbytes
    pieces.append(data[position:])
    return [piece for piece in pieces if len(piece)]


def raw_write(pieces: list[bytes | memoryview], path: Path, chunk: int = 64 << 10) -> None:
    """``pieces`` written with ``Writer.write``'s file operations: ``atomic_file`` without fsync
    (an unnamed scratch file linked in and renamed into place), in the same 64 KiB writes."""
    with atomic_file(path, durable=False) as stream:
        for piece in pieces:
            view = memoryview(piece)
            for start in range(0, len(view), chunk):
                stream.write(view[start : start + chunk])


def sum_all(arrays: object) -> None:
    for array in arrays:  # type: ignore[attr-defined]
        array.sum()


def write_ops(tensors: dict[str, np.ndarray], tmp: Path) -> dict[str, Callable[[Path], object]]:
    pieces = raw_pieces(tensors)
    built = [burnpack.Tensor.from_numpy(k, v) for k, v in tensors.items()]
    return {
        "save: burnpack.save (scratch+fsync+rename+dir fsync)": lambda p: burnpack.save(tensors, p),
        "save: save_file, same steps": lambda p: durable_save_file(tensors, p),
        "write: Writer.write of built Tensors (no fsync)": lambda p: burnpack.Writer(built).write(p),
        "write: raw write of the same bytes, same file operations": lambda p: raw_write(pieces, p),
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

    def st_get_each() -> None:
        with safe_open(str(st), framework="np") as f:
            for name in f.keys():
                f.get_tensor(name)

    def st_safe_open_sum() -> None:
        with safe_open(str(st), framework="np") as f:
            for name in f.keys():
                f.get_tensor(name).sum()

    return {
        "open+names: burnpack": bpk_names,
        "open+names: safe_open keys": st_names,
        "open+numpy(): burnpack (zero-copy views)": bpk_numpy,
        "open+get_tensor of each: safe_open": st_get_each,
        "load: load_file (copies)": lambda: load_file(str(st)),
        "load+sum: burnpack": bpk_sum,
        "load+sum: load_file": lambda: sum_all(load_file(str(st)).values()),
        "load+sum: safe_open+get_tensor": st_safe_open_sum,
        "eager copy: burnpack numpy()+copy": bpk_eager,
    }


def turned(order: list[str], turn: int) -> list[str]:
    """``order`` forwards on even turns and backwards on odd ones, rotated one step every two
    turns. Rotating alone keeps every operation behind the same neighbour, so the one timed right
    after a step that floods the caches (a 1 GiB copy) would always be the same side of a
    comparison, and its peer would always find the caches that first call warmed."""
    base = order if turn % 2 == 0 else order[::-1]
    shift = turn // 2 % len(order)
    return base[shift:] + base[:shift]


FLUSH_BYTES = 256 << 20
"""Memory no timed operation touches, overwritten before each read: what the caches held is gone."""


def run_files(tensors: dict[str, np.ndarray], repeat: int, tmp: Path) -> dict[str, list[float]]:
    """Interleaved samples (seconds) of every write and read operation."""
    bpk, st = tmp / "w.bpk", tmp / "w.safetensors"
    burnpack.save(tensors, bpk)
    save_file(tensors, str(st))
    writes, reads = write_ops(tensors, tmp), read_ops(bpk, st)
    samples: dict[str, list[float]] = {name: [] for name in [*writes, *reads]}
    order, write_order = list(reads), list(writes)
    flush = np.zeros(FLUSH_BYTES, np.uint8)
    for turn in range(repeat):
        # The writes take turns going first too: a write after another one's unlinked scratch file
        # (a file system mounted with ``discard`` trims its blocks at the next journal commit) can
        # pay for it, and turning the order spreads that over every write alike.
        for name in turned(write_order, turn):
            op = writes[name]
            target = tmp / f"out{next(_names)}.bin"  # a new name: nothing a timed step wrote is replaced
            os.sync()  # one writer's fsync never pays for another's dirty pages
            start = time.perf_counter()
            op(target)
            samples[name].append(time.perf_counter() - start)
            target.unlink()
        # Every read starts from the same state: right after a pass over memory larger than the
        # CPU's caches hold. Without it a read's time depended on what ran just before it (an
        # open + names took 0.09 ms after another open and 0.33 ms after a 512 MiB copy), so a
        # ratio of medians measured the order, not the libraries.
        for name in turned(order, turn):
            read = reads[name]
            np.add(flush, 1, out=flush)
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
    flush = np.zeros(FLUSH_BYTES, np.uint8)
    for turn in range(repeat):
        for name in turned(list(ops), turn):
            op = ops[name]
            np.add(flush, 1, out=flush)
            start = time.perf_counter()
            op()
            samples[name].append(time.perf_counter() - start)
    return samples


class Ratio(NamedTuple):
    """One row of the table: ``ours`` / ``peer`` (medians), and what kind of comparison it is."""

    ours: str
    peer: str
    like: str
    """Like for like: the kind of peer (``lazy vs lazy``, ...), or why there is no fair one."""


RATIOS = {
    "open + names / `safe_open` + `keys()`": Ratio(
        "open+names: burnpack", "open+names: safe_open keys", "lazy vs lazy"),
    "open + `numpy()` of each / `safe_open` + `get_tensor` of each": Ratio(
        "open+numpy(): burnpack (zero-copy views)", "open+get_tensor of each: safe_open",
        "lazy vs lazy (each library's read of every tensor: views here, copies in safetensors)"),
    "open + sum of every tensor / `safe_open` + `get_tensor` + sum": Ratio(
        "load+sum: burnpack", "load+sum: safe_open+get_tensor", "lazy vs lazy, every byte touched"),
    "open + sum of every tensor / `load_file` + sum": Ratio(
        "load+sum: burnpack", "load+sum: load_file", "every byte read on both sides (lazy vs eager)"),
    "eager copy (`numpy()` + copy) / `load_file`": Ratio(
        "eager copy: burnpack numpy()+copy", "load: load_file (copies)", "eager vs eager"),
    "open + `numpy()` (zero-copy) / `load_file`": Ratio(
        "open+numpy(): burnpack (zero-copy views)", "load: load_file (copies)",
        "no fair peer: lazy views against eager copies (the rows above are the fair ones)"),
    "save, durable: `burnpack.save` / `save_file` + same steps": Ratio(
        "save: burnpack.save (scratch+fsync+rename+dir fsync)", "save: save_file, same steps", "durable vs durable"),
    "`Writer.write` of built tensors / raw write of its bytes": Ratio(
        "write: Writer.write of built Tensors (no fsync)", "write: raw write of the same bytes, same file operations",
        "fast vs fast, the same file operations (scratch file renamed into place)"),
    "`Writer.write` from arrays / `save_file`": Ratio(
        "write: Writer.write from the arrays (no fsync)", "write: save_file (no fsync)",
        "neither fsyncs, but not the same file operations: save_file creates the file in place, Writer.write renames a scratch file into place"),
    "open (`load`) / bare `cbor2.loads` of the same metadata": Ratio(
        "open: burnpack.load(bytes)", "decode: cbor2.loads(metadata)",
        "no fair peer: no other library opens a .bpk; cbor2 only decodes the metadata, the open also builds the pack"),
}


def summarize(samples: dict[str, list[float]]) -> dict[str, object]:
    """Medians (ms) and every ratio of ``RATIOS`` whose two operations were measured."""
    medians = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {label: medians[r.ours] / medians[r.peer] for label, r in RATIOS.items() if r.ours in medians and r.peer in medians}
    return {"median_ms": {k: round(v * 1000, 3) for k, v in medians.items()}, "ratios": {k: round(v, 3) for k, v in ratios.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--big-mib", type=int, default=512)
    parser.add_argument("--tiny", type=int, default=20_000)
    parser.add_argument("--many", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        out: dict[str, Any] = environment(Path(tmp), "safetensors", "cbor2")
        workloads: dict[str, dict[str, Any]] = {}
        if args.big_mib:
            samples = run_files(workload_big(args.big_mib), args.repeat, Path(tmp))
            workloads[f"(a) {args.big_mib} MiB float32 in 64 tensors"] = {**summarize(samples), "samples_s": samples}
        if args.tiny:
            samples = run_files(workload_tiny(args.tiny), args.repeat, Path(tmp))
            workloads[f"(b) {args.tiny} tiny tensors"] = {**summarize(samples), "samples_s": samples}
        if args.many:
            samples = run_many(args.many, args.repeat)
            workloads[f"(c) {args.many}-tensor pack, metadata only"] = {**summarize(samples), "samples_s": samples}
    finish(out)
    out["workloads"] = workloads
    for name, result in workloads.items():
        print(f"## {name}")
        for label, value in result["ratios"].items():
            print(f"  {label}: {value}")
        for label, value in result["median_ms"].items():
            print(f"    {label}: {value} ms")
    save(out, "bench", args.json)


if __name__ == "__main__":
    main()
