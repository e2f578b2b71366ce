"""Command-line start-up: ``burnpack --version`` and ``burnpack inspect SMALL.bpk`` against
``python -c "import numpy"``, each a fresh process, interleaved, ratios of medians.

    python benchmarks/startup_bench.py [--repeat 41] [--instructions] [--json FILE]

The commands are run as a user types them: the ``burnpack`` script installed beside the Python
running this (``.venv/bin/burnpack``; ``python -m burnpack`` where there is none). Every repeat
runs the three commands once each, in an order that rotates from repeat to repeat, so that a busy
machine slows all three alike. Each run's CPU time (user + system of that child alone, from
``wait4``) is the figure to trust on a shared machine; wall time is recorded too. Bytecode is
cached as an installed package has it (in a scratch ``PYTHONPYCACHEPREFIX``, warmed by untimed
runs), whatever ``PYTHONDONTWRITEBYTECODE`` says. The small pack holds two float32 tensors, one
metadata entry and one scalar.

``--instructions`` also counts each command's instructions, once, under valgrind's callgrind: a
figure the rest of the machine does not disturb (OpenBLAS's threads kept to one, whose spinning
would otherwise change the count; hash seed fixed; address randomization off where ``setarch``
can). It is not the target's measure (an instruction of the dynamic loader costs more than one of
the interpreter), but it tells on a busy machine whether a change made start-up cheaper.

Targets (issue 29): ``inspect`` at most 1.3x and ``--version`` at most 1.2x the CPU time of
``import numpy``. The results file (``benchmarks/_results.py``: commit, load, whether the machine
was quiet) goes to ``benchmarks/results/startup.json`` (the one current file) or ``--json``;
``benchmarks/tables.py`` shows it in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._results import environment, finish, save  # noqa: E402

TARGETS = {"burnpack --version": 1.2, "burnpack inspect": 1.3}
"""The most each command may take, as a ratio of medians of CPU time to ``import numpy``."""


def burnpack_command() -> list[str]:
    """``burnpack`` as installed beside this Python, else ``python -m burnpack``."""
    script = Path(sys.executable).with_name("burnpack")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "burnpack"]


def commands(small: Path) -> dict[str, list[str]]:
    """The timed commands, each a fresh interpreter."""
    return {
        "import numpy": [sys.executable, "-c", "import numpy"],
        "burnpack --version": [*burnpack_command(), "--version"],
        "burnpack inspect": [*burnpack_command(), "inspect", str(small)],
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (the child's own rusage, from ``wait4``)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv} failed with exit status {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """The instructions one run of ``argv`` executes, counted by callgrind (all its threads)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    setarch = shutil.which("setarch")
    prefix = [setarch, os.uname().machine, "-R"] if setarch else []
    counted = {**env, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    result = subprocess.run([*prefix, valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=counted)  # fmt: skip
    found = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(f"{argv} under callgrind failed with exit status {result.returncode}:\n{result.stderr[-2000:]}")
    return int(found[1])


def measure(runs: dict[str, list[str]], repeat: int, env: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    """``repeat`` rounds of every command once, the order rotated each round."""
    names = list(runs)
    samples: dict[str, dict[str, list[float]]] = {"wall": {n: [] for n in names}, "cpu": {n: [] for n in names}}
    for i in range(repeat):
        for name in names[i % len(names):] + names[: i % len(names)]:
            wall, cpu = run_once(runs[name], env)
            samples["wall"][name].append(wall)
            samples["cpu"][name].append(cpu)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--instructions", action="store_true", help="also count each command's instructions under callgrind")
    parser.add_argument("--json", type=Path, help="the results file (default: benchmarks/results/startup.json)")
    args = parser.parse_args()
    import burnpack

    with tempfile.TemporaryDirectory() as tmp:
        record = environment(Path(tmp))
        record["repeat"] = args.repeat
        small = Path(tmp) / "small.bpk"
        burnpack.save({"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)}, small, metadata={"producer": "bench"}, scalars={"epoch": 3})
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        runs = commands(small)
        record["commands"] = {name: [shutil.which(a) or a if i == 0 else a for i, a in enumerate(argv)] for name, argv in runs.items()}
        measure(runs, 2, env)  # untimed: bytecode written, page cache warm
        samples = measure(runs, args.repeat, env)
        if args.instructions:
            record["instructions"] = {name: instructions(argv, env) for name, argv in runs.items()}
    record["samples"] = samples
    record["medians"] = {kind: {name: statistics.median(v) for name, v in by_name.items()} for kind, by_name in samples.items()}
    record["ratios"] = {
        kind: {name: median / medians["import numpy"] for name, median in medians.items() if name != "import numpy"}
        for kind, medians in record["medians"].items()
    }
    if args.instructions:
        counts = record["instructions"]
        record["ratios"]["instructions"] = {name: n / counts["import numpy"] for name, n in counts.items() if name != "import numpy"}
    record["targets"] = TARGETS
    finish(record)
    for name, target in TARGETS.items():
        cpu, wall = record["ratios"]["cpu"][name], record["ratios"]["wall"][name]
        counted = f", {record['ratios']['instructions'][name]:.3f}x its instructions" if args.instructions else ""
        print(f"{name}: {cpu:.2f}x CPU time, {wall:.2f}x wall time{counted} of import numpy (target <= {target}x CPU time)")
    base = record["medians"]
    print(f"import numpy itself: {base['cpu']['import numpy'] * 1000:.0f} ms CPU, {base['wall']['import numpy'] * 1000:.0f} ms wall")
    save(record, "startup", args.json)


if __name__ == "__main__":
    main()
