"""Two checkouts of burnpack on the many-tiny-tensors paths, interleaved in one process.

A busy machine makes wall-clock ratios between separate runs meaningless; this loads both
packages side by side (copied under two names), alternates the calls and keeps the minimum CPU
time of each, so the ratio compares code, not load:

    python benchmarks/ab_tiny.py /path/to/old/checkout /path/to/new/checkout [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from types import ModuleType

import numpy as np


def cases(bp: ModuleType, arrays: dict[str, np.ndarray]) -> dict[str, object]:
    tensors = [bp.Tensor.from_numpy(k, v) for k, v in arrays.items()]
    data = bp.Writer(tensors).to_bytes()
    return {
        "Tensor.from_numpy x 20000": lambda: [bp.Tensor.from_numpy(k, v) for k, v in arrays.items()],
        "Writer(tensors).to_bytes()": lambda: bp.Writer(tensors).to_bytes(),
        "save_bytes({name: array})": lambda: bp.save_bytes(arrays),
        "load(bytes).numpy()": lambda: bp.load(data).numpy(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    arrays = {f"layers.{i}.bias": np.full(4, i, dtype=np.float32) for i in range(20_000)}
    with tempfile.TemporaryDirectory() as tmp:
        for label, checkout in (("burnpack_old", args.old), ("burnpack_new", args.new)):
            shutil.copytree(checkout / "burnpack", Path(tmp) / label)  # relative imports: any name works
        sys.path.insert(0, tmp)
        old, new = (cases(importlib.import_module(label), arrays) for label in ("burnpack_old", "burnpack_new"))
        result = {}
        for name in old:
            t_old, t_new = [], []
            for _ in range(args.repeat):
                t_old.append(timeit.timeit(old[name], number=1, timer=time.process_time))  # type: ignore[arg-type]
                t_new.append(timeit.timeit(new[name], number=1, timer=time.process_time))  # type: ignore[arg-type]
            result[name] = {"old_ms": round(min(t_old) * 1000, 1), "new_ms": round(min(t_new) * 1000, 1), "new/old": round(min(t_new) / min(t_old), 3)}
    commits = {
        side: subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        for side, path in (("old", args.old), ("new", args.new))
    }
    out = {"commits": commits, "cpu_time_min_of": args.repeat, "results": result}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
