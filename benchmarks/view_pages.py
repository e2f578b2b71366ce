"""How large ``burnpack view`` pages are, and how long they take to make and to open.

Makes four pages with ``burnpack view`` as a user does: Burn's MNIST model
(``../shared/fixtures/burn-examples/mnist-model.bpk``, or under ``BURNPACK_SHARED``) and a pack of
``--tensors`` (100,000) one-element F32 tensors named ``blocks.N.w``, each with and without
``--no-stats``. For each page it records the size in bytes (the figures docs/view.md quotes), the
wall time of the command (the minimum of ``--repeat`` runs) and, when Playwright and Chromium are
at hand (``--chromium``, default Debian's ``/usr/bin/chromium``), the time from navigation to the
end of the page's load event in headless Chromium (the page's script has drawn it by then), the
minimum of ``--repeat`` opens in a fresh context each:

    python benchmarks/view_pages.py --json benchmarks/results/view_pages.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import burnpack
from burnpack.cli.main import main as burnpack_main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._results import environment, finish, save  # noqa: E402


def mnist_model() -> Path:
    shared = Path(os.environ.get("BURNPACK_SHARED") or ROOT.parent / "shared")
    path = shared / "fixtures" / "burn-examples" / "mnist-model.bpk"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: set BURNPACK_SHARED to the shared folder")
    return path


def many_tensors(path: Path, count: int) -> Path:
    one = np.zeros(1, np.float32)
    burnpack.save((burnpack.Tensor.from_numpy(f"blocks.{i}.w", one) for i in range(count)), path)
    return path


def make_page(source: Path, page: Path, stats: bool, repeat: int) -> dict[str, Any]:
    """``burnpack view SOURCE -o PAGE [--no-stats]``: the page's size and the command's best time."""
    times = []
    for _ in range(repeat):
        argv = ["view", str(source), "-o", str(page), "--overwrite", *([] if stats else ["--no-stats"])]
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            if burnpack_main(argv) != 0:
                raise SystemExit(f"burnpack {' '.join(argv)} failed")
        times.append(time.perf_counter() - start)
    return {"bytes": page.stat().st_size, "make_s": [round(t, 3) for t in times], "min_make_s": round(min(times), 3)}


def open_times(pages: list[Path], chromium: str, repeat: int) -> dict[str, Any]:
    """Per page: milliseconds from navigation to the end of the load event, each open in a fresh context."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "playwright is not installed (pip install 'burnpack[test]')"}
    if not Path(chromium).is_file():
        return {"skipped": f"no chromium at {chromium}"}
    out: dict[str, Any] = {"chromium": chromium}
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        browser = playwright.chromium.launch(executable_path=chromium, args=args)
        out["chromium_version"] = browser.version
        for page_path in pages:
            times = []
            for _ in range(repeat):
                context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
                page = context.new_page()
                page.goto(page_path.resolve().as_uri(), timeout=120_000)
                times.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
                context.close()
            out[page_path.name] = {"load_ms": [round(t) for t in times], "min_load_ms": round(min(times))}
        browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=100_000, help="tensors in the large pack")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chromium", default=os.environ.get("BURNPACK_CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--json", type=Path, help="the results file (default: benchmarks/results/view_pages.json)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = {"mnist": mnist_model(), "many": many_tensors(work / "many.bpk", args.tensors)}
        record = environment(work, "playwright")
        record.update(benchmark="view_pages", inputs={"mnist": "Burn's MNIST model (mnist-model.bpk)", "many": f"{args.tensors:,} one-element F32 tensors"},
                      repeat=args.repeat)  # fmt: skip
        pages, made = [], {}
        for name, source in inputs.items():
            for stats in (True, False):
                page = work / f"{name}{'' if stats else '-no-stats'}.html"
                made[page.name] = make_page(source, page, stats, args.repeat)
                pages.append(page)
        record["pages"] = made
        record["open"] = open_times(pages, args.chromium, args.repeat)
    save(finish(record), "view_pages", args.json)


if __name__ == "__main__":
    main()
