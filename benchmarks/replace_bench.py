"""What replacing the file on every write costs, against rewriting it in place as Burn does.

``Writer.write`` never truncates a file a reader may have mapped: the bytes go to a scratch file
that replaces the destination (``burnpack.atomic``). This times, interleaved in one process and
over an existing file, (1) the old in-place rewrite (``open(path, "wb")`` + ``write_stream``),
(2) a scratch file renamed over it with ``os.replace``, (3) ``Writer.write`` (which exchanges the
names where it can) and (4) ``Writer.write_atomic`` (plus fsync), and reports medians and ratios
to the in-place rewrite.

    python benchmarks/replace_bench.py [--mib 256] [--repeat 9] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import burnpack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    per_tensor = args.mib * (1 << 20) // 64 // 4
    writer = burnpack.Writer([burnpack.Tensor.from_numpy(f"t{i}", rng.standard_normal(per_tensor, dtype=np.float32)) for i in range(64)])
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as tmp:
        path = Path(tmp) / "m.bpk"

        def in_place() -> None:
            with open(path, "wb") as stream:
                writer.write_stream(stream)

        def rename_over() -> None:  # what Writer.write would cost with a plain rename
            scratch = path.with_name("scratch")
            with open(scratch, "wb") as stream:
                writer.write_stream(stream)
            os.replace(scratch, path)

        runs = {"in place (open wb)": in_place, "scratch + os.replace": rename_over, "Writer.write (replace)": lambda: writer.write(path),
                "Writer.write_atomic (replace + fsync)": lambda: writer.write_atomic(path)}
        in_place()
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeat):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    result = {"commit": commit, "mib": args.mib, "repeat": args.repeat, "median_ms": medians,
              "ratio_replace_over_in_place": medians["Writer.write (replace)"] / medians["in place (open wb)"],
              "ratio_os_replace_over_in_place": medians["scratch + os.replace"] / medians["in place (open wb)"]}
    for name, ms in medians.items():
        print(f"{name:<40} {ms:9.1f} ms")
    print(f"ratio Writer.write / in place: {result['ratio_replace_over_in_place']:.3f}")
    print(f"ratio os.replace / in place: {result['ratio_os_replace_over_in_place']:.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
