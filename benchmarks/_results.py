"""What every benchmark's results file records about the run, besides its samples.

``environment(directory)`` before the run and ``finish(record)`` after it give: the commit and
whether the tree was clean, Python, platform, CPUs, package versions, the file system the
benchmark wrote to (type and mount options: ``auto_da_alloc`` and friends decide what a write
costs), the load average before and after, and whether the machine was quiet (load average
below ``QUIET_LOAD`` before and after).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUIET_LOAD = 0.5
"""A run is quiet when the 1-minute load average is below this before and after it."""


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


def environment(directory: Path, *packages: str) -> dict[str, Any]:
    """The record's head, taken before the run (``directory``: where the benchmark writes files)."""
    return {
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv[1:],
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
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
    record["quiet"] = record["loadavg_before"][0] < QUIET_LOAD and record["loadavg_after"][0] < QUIET_LOAD
    return record


def save(record: dict[str, Any], name: str, path: Path | None = None) -> Path:
    """Write ``record`` to ``path``, or to ``results/<name>-<UTC start time>.json``; say where and how loaded."""
    print(f"load average before {record['loadavg_before']}, after {record['loadavg_after']} (quiet: {record['quiet']})")
    started = datetime.fromisoformat(record["started"])
    out = path or HERE / "results" / f"{name}-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"raw results: {out}")
    return out
