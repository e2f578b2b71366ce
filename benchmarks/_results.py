"""What every benchmark's results file records about the run, besides its samples.

``environment(directory)`` before the run and ``finish(record)`` after it give: the commit and
whether the tree was clean, Python, platform, CPUs, package versions, the file system the
benchmark wrote to (type and mount options: ``auto_da_alloc`` and friends decide what a write
costs), the load average before and after, the CPU time the rest of the machine used while it
ran, and whether the machine was quiet.

Quiet: the 1-minute load average below ``QUIET_LOAD`` before the run, and the other processes'
CPU time during it (every CPU's busy time in ``/proc/stat`` less this process's and its
children's) below ``QUIET_LOAD`` of a CPU on average. The load average *after* a run counts the
benchmark's own process (one busy CPU for a minute reads as about 0.6), so it is recorded but not
the test; the other processes' CPU time is what shows nothing else was running.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import resource
import time
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUIET_LOAD = 0.5
"""A run is quiet when the 1-minute load average before it, and the CPUs the other processes kept
busy on average during it, are below this."""


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def filesystem(path: Path) -> dict[str, str]:
    """The mount holding ``path``: its file system type, device and options (Linux), else unknown."""
    best: tuple[str, str, str, str] | None = None
    target = os.path.realpath(path)
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                device, point, kind, options = line.split()[:4]
                point = point.replace("\\040", " ")
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and (best is None or len(point) >= len(best[1])):
                    best = (device, point, kind, options)
    except OSError:
        pass
    if best is None:
        return {"type": "unknown"}
    return {"type": best[2], "mount": best[1], "device": best[0], "options": best[3]}


def versions(*names: str) -> dict[str, str]:
    out = {}
    for name in ("burnpack", "numpy", *names):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def _busy_cpu_seconds() -> float | None:
    """Every CPU's busy time since boot (user, nice, system, irq, softirq, steal), Linux only."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


_CLOCKS: dict[str, tuple[float, float | None, float]] = {}


def environment(directory: Path, *packages: str) -> dict[str, Any]:
    """The record's head, taken before the run (``directory``: where the benchmark writes files)."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    _CLOCKS[started] = (time.monotonic(), _busy_cpu_seconds(), _own_cpu_seconds())
    return {
        "started": started,
        "argv": sys.argv[1:],
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--", ":(top)", ":(top,exclude)benchmarks/results")),  # code, not results
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "packages": versions(*packages),
        "filesystem": filesystem(directory),
        "loadavg_before": list(os.getloadavg()),
    }


def finish(record: dict[str, Any]) -> dict[str, Any]:
    """Add the load average after the run and whether the machine was quiet throughout."""
    record["loadavg_after"] = list(os.getloadavg())
    wall0, busy0, own0 = _CLOCKS[record["started"]]
    busy1, wall = _busy_cpu_seconds(), time.monotonic() - wall0
    others = None if busy0 is None or busy1 is None else max(0.0, (busy1 - busy0) - (_own_cpu_seconds() - own0))
    record["other_processes"] = {"wall_s": round(wall, 3), "cpu_s": None if others is None else round(others, 3),
                                 "cpus_busy": None if others is None else round(others / wall, 3)}
    record["quiet"] = record["loadavg_before"][0] < QUIET_LOAD and others is not None and others / wall < QUIET_LOAD
    return record


def save(record: dict[str, Any], name: str, path: Path | None = None) -> Path:
    """Write ``record`` to ``path``, or to ``results/<name>.json`` (the benchmark's one current
    results file, which a new run replaces: earlier runs live in git and in the history table of
    docs/benchmarks.md); say where and how loaded."""
    print(f"load average before {record['loadavg_before']}, after {record['loadavg_after']}; other processes kept "
          f"{record['other_processes']['cpus_busy']} CPUs busy (quiet: {record['quiet']})")
    out = path or HERE / "results" / f"{name}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"raw results: {out}")
    return out
