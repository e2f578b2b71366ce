"""Command-line start-up: ``burnpack --version`` and ``burnpack inspect SMALL.bpk`` against
``python -c "import numpy"``, each a fresh process, interleaved, ratios of medians.

    python benchmarks/startup_bench.py [--repeat 21] [--json benchmarks/results/startup.json] [--table FILE]

Every repeat runs the three commands once, in turn, so that a busy machine slows all three
alike; the ratios compare medians of wall time and of CPU time (user + system of the child,
which a busy machine disturbs less). Bytecode is cached as an installed package has it (in a
scratch ``PYTHONPYCACHEPREFIX``, warmed by one untimed run), whatever ``PYTHONDONTWRITEBYTECODE``
says. The small pack holds two float32 tensors, one metadata entry and one scalar. The results
file records the raw samples, the commit, the load average before and after, and the versions;
``--table FILE`` prints the README row of a results file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from bench import environment  # commit, clean tree, versions: as bench.py records them

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def commands(small: Path) -> dict[str, list[str]]:
    """The timed commands, each a fresh interpreter (``-m burnpack`` is what the script runs)."""
    return {
        "import numpy": [sys.executable, "-c", "import numpy"],
        "burnpack --version": [sys.executable, "-m", "burnpack", "--version"],
        "burnpack inspect": [sys.executable, "-m", "burnpack", "inspect", str(small)],
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def markdown(result: dict) -> str:
    """The README table of a results file: ratios of medians, CPU time and wall time."""
    rows = ["| ratio of medians to `python -c \"import numpy\"` | CPU time | wall time |", "|---|---|---|"]
    for name in ("burnpack --version", "burnpack inspect"):
        label = f"`{name}`" + (" (small pack)" if name == "burnpack inspect" else "")
        rows.append(f"| {label} | {result['ratios']['cpu'][name]:.2f} | {result['ratios']['wall'][name]:.2f} |")
    base = result["medians"]
    rows.append(f"| `import numpy` itself | {base['cpu']['import numpy'] * 1000:.0f} ms | {base['wall']['import numpy'] * 1000:.0f} ms |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table", type=Path, help="print the README row of a results file and exit")
    args = parser.parse_args()
    if args.table:
        print(markdown(json.loads(args.table.read_text())))
        return
    import burnpack

    out: dict = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "argv": sys.argv[1:], **environment()}
    out["loadavg_before"] = os.getloadavg()
    out["repeat"] = args.repeat
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "small.bpk"
        burnpack.save({"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}, small, metadata={"producer": "bench"}, scalars={"epoch": 3})
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        runs = commands(small)
        for argv in runs.values():  # warm the page cache and the bytecode caches
            run_once(argv, env)
        samples: dict[str, dict[str, list[float]]] = {"wall": {name: [] for name in runs}, "cpu": {name: [] for name in runs}}
        for _ in range(args.repeat):
            for name, argv in runs.items():
                wall, cpu = run_once(argv, env)
                samples["wall"][name].append(wall)
                samples["cpu"][name].append(cpu)
    out["loadavg_after"] = os.getloadavg()
    out["samples"] = samples
    out["medians"] = {kind: {name: statistics.median(v) for name, v in by_name.items()} for kind, by_name in samples.items()}
    out["ratios"] = {
        kind: {name: median / medians["import numpy"] for name, median in medians.items() if name != "import numpy"}
        for kind, medians in out["medians"].items()
    }
    out["note"] = "2 cores shared with other work: the load average says how busy the machine was"
    print(markdown(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
