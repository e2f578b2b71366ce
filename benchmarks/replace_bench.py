"""What each write mode costs over an existing file, against raw writes doing the same file operations.

Every write goes through ``burnpack.core.atomic``: a scratch file renamed over the destination (a new
inode; readers that mapped the old file keep it). Timed interleaved in one process, over an
existing file each time: ``Writer.write`` (fast: no fsync; the rename over an existing file makes
ext4 start writing the new one back, ``auto_da_alloc``) and ``Writer.write_atomic`` (durable: file
and directory fsynced), each against writing the same bytes in the same chunks through the same
``atomic_file`` call (the same file operations, so the ratio is the writer's own cost), and Burn's
``write_to_file`` way — truncate and rewrite in place — for reference (other file operations).

    python benchmarks/replace_bench.py [--mib 256] [--repeat 9] [--json out.json]

Every sample, the commit, load average before and after, versions and the file system go to
``benchmarks/results/replace.json`` (or ``--json``); ``benchmarks/tables.py`` makes
the table in docs/writes.md from it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import burnpack
from burnpack.core.atomic import atomic_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402

CHUNK = 64 << 10  # the writer's own writes (burnpack/core/writer.py _PIECE): the same file operations

RATIOS = {
    "fast: `Writer.write` / raw write, same file operations": (
        "Writer.write (fast)", "raw write via atomic_file (fast)", "fast vs fast, the same file operations"),
    "durable: `Writer.write_atomic` / raw write, same file operations": (
        "Writer.write_atomic (durable)", "raw write via atomic_file (durable)", "durable vs durable, the same file operations"),
    "fast: `Writer.write` / in-place rewrite (Burn's `write_to_file`)": (
        "Writer.write (fast)", "in place: open(wb) + write_stream",
        "not the same file operations: the peer truncates the file in place (a reader of it can die of SIGBUS, a failure leaves it truncated)"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    per_tensor = args.mib * (1 << 20) // 64 // 4
    writer = burnpack.Writer([burnpack.Tensor.from_numpy(f"t{i}", rng.standard_normal(per_tensor, dtype=np.float32)) for i in range(64)])
    data = memoryview(writer.to_bytes())
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        record = environment(Path(tmp))
        path = Path(tmp) / "m.bpk"

        def raw(durable: bool) -> Callable[[], None]:
            def run() -> None:
                with atomic_file(path, durable=durable) as stream:
                    for start in range(0, len(data), CHUNK):
                        stream.write(data[start : start + CHUNK])
            return run

        def in_place() -> None:
            with open(path, "wb") as stream:
                writer.write_stream(stream)

        runs: dict[str, Callable[[], object]] = {
            "Writer.write (fast)": lambda: writer.write(path),
            "raw write via atomic_file (fast)": raw(False),
            "Writer.write_atomic (durable)": lambda: writer.write_atomic(path),
            "raw write via atomic_file (durable)": raw(True),
            "in place: open(wb) + write_stream": in_place,
        }
        in_place()
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                samples[name].append(time.perf_counter() - start)
    finish(record)
    record.update(mib=args.mib, samples_s=samples)
    medians = {name: statistics.median(t) for name, t in samples.items()}
    for label, (ours, peer, _) in RATIOS.items():
        print(f"{label}: {medians[ours] / medians[peer]:.3f} ({medians[ours] * 1000:.1f} ms vs {medians[peer] * 1000:.1f} ms)")
    save(record, "replace", args.json)


if __name__ == "__main__":
    main()
