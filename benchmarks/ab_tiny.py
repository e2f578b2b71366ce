"""This checkout against another on the many-tiny-tensors paths, interleaved in one process.

A busy machine makes wall-clock ratios between separate runs meaningless; this loads the other
checkout beside this one (``_checkout``: its own compiled kernels, under its own name), alternates
the calls and keeps the minimum CPU time of each, so the ratio compares code, not load::

    python benchmarks/ab_tiny.py --base /path/to/other/checkout [--base-label COMMIT] [--json out.json]

Results go to ``benchmarks/results/ab_tiny.json`` unless ``--json`` says otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import timeit
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkout import import_checkout, kernels  # noqa: E402
from _results import environment, finish, save  # noqa: E402

import burnpack  # noqa: E402


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
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (its burnpack/ is imported beside this one)")
    parser.add_argument("--base-label", help="what that checkout holds (e.g. a commit), recorded in place of its path")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    arrays = {f"layers.{i}.bias": np.full(4, i, dtype=np.float32) for i in range(20_000)}
    with tempfile.TemporaryDirectory() as tmp:
        record = environment(Path(tmp))
        base = import_checkout(args.base, "burnpack_base", Path(tmp))
        record["base_checkout"] = args.base_label or str(args.base)
        record["kernels"] = {"this": kernels(burnpack), "base": kernels(base)}
        old, new = cases(base, arrays), cases(burnpack, arrays)
        result = {}
        for name in old:
            t_old, t_new = [], []
            for _ in range(args.repeat):
                t_old.append(timeit.timeit(old[name], number=1, timer=time.process_time))  # type: ignore[arg-type]
                t_new.append(timeit.timeit(new[name], number=1, timer=time.process_time))  # type: ignore[arg-type]
            result[name] = {"old_ms": round(min(t_old) * 1000, 1), "new_ms": round(min(t_new) * 1000, 1), "new/old": round(min(t_new) / min(t_old), 3)}
            print(f"{name}: new/old {result[name]['new/old']} ({result[name]['new_ms']} ms vs {result[name]['old_ms']} ms)")
    finish(record)
    record.update(commits={"old": record["base_checkout"], "new": record["commit"][:9]}, cpu_time_min_of=args.repeat, results=result)
    save(record, "ab_tiny", args.json)


if __name__ == "__main__":
    main()
