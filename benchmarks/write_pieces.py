"""The size of each write into a file, both ways it shows: how long ``Writer.write`` takes, and how
long summing the file it wrote takes through ``load`` (zero-copy views of the page cache) just after.

``Writer.write`` writes a file ``_PIECE`` bytes a write (``burnpack/core/writer.py``). The page cache
holds what one write brings in folios of about its size, and a folio is what a read of a mapping
maps in one fault: small writes make many small folios, so reading the file back through a mapping
while it is cached takes a fault every few pages; large writes make large folios, which on a
virtual machine that returns its free memory to the host (free page reporting) must first be
faulted in by the host, which can make a large write many times slower, by a factor that changes
with the host's memory. This measures both for each piece size, in turn, in one process: a fresh
512 MiB pack (64 float32 tensors) written with each size, then summed whole through ``load``.

    python benchmarks/write_pieces.py [--mib 512] [--repeat 5] [--json FILE]

The results go to ``benchmarks/results/write_pieces.json`` (or ``--json``); docs/benchmarks.md
cites them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402

import burnpack  # noqa: E402
from burnpack.core import writer  # noqa: E402

SIZES = {"64 KiB": 64 << 10, "256 KiB": 256 << 10, "1 MiB": 1 << 20, "8 MiB": 8 << 20}
"""The piece sizes tried: the writer's (64 KiB) and larger ones, up to its former 8 MiB."""


def summed(path: Path) -> float:
    with burnpack.load(path) as pack:
        return sum(float(array.sum()) for array in pack.numpy().values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    per_tensor = args.mib * (1 << 20) // 64 // 4
    tensors = [burnpack.Tensor.from_numpy(f"t{i}", rng.standard_normal(per_tensor, dtype=np.float32)) for i in range(64)]
    pack = burnpack.Writer(tensors)
    pack.plan()
    default = writer._PIECE
    writes: dict[str, list[float]] = {size: [] for size in SIZES}
    sums: dict[str, list[float]] = {size: [] for size in SIZES}
    with tempfile.TemporaryDirectory(dir=Path.cwd(), prefix=".write-pieces-") as tmp:
        record = environment(Path(tmp))
        try:
            for turn in range(args.repeat):  # in turn, forwards and backwards, so that load changes hit every size
                for size in list(SIZES) if turn % 2 == 0 else list(SIZES)[::-1]:
                    writer._PIECE = SIZES[size]
                    path = Path(tmp) / "m.bpk"
                    start = time.perf_counter()
                    pack.write(path)
                    writes[size].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    summed(path)
                    sums[size].append(time.perf_counter() - start)
                    os.unlink(path)
        finally:
            writer._PIECE = default
    finish(record)
    record.update(mib=args.mib, repeat=args.repeat, writer_piece=default, write_s=writes, sum_after_write_s=sums)
    record["medians_ms"] = {
        size: {"write": round(statistics.median(writes[size]) * 1000, 1), "sum_after_write": round(statistics.median(sums[size]) * 1000, 1)}
        for size in SIZES
    }
    for size, m in record["medians_ms"].items():
        print(f"{size:>8}: Writer.write {m['write']:8.1f} ms (runs {[round(x * 1000) for x in writes[size]]}); "
              f"then load + sum {m['sum_after_write']:6.1f} ms (runs {[round(x * 1000) for x in sums[size]]})")  # fmt: skip
    save(record, "write_pieces", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
