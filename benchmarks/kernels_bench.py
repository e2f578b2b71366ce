"""Does each compiled kernel earn its place? Each against the maintained library that could do its
job, on the benchmark that justified it, in one run.

For each kernel the workload of the issue that asked for it, the ratio that issue set as its
target, and the sides: the kernel, the library already in the dependency set that could do the
same job, and the kernel's Python or numpy twin. Sides take turns (forwards, backwards, rotated:
``bench.turned``) and are timed in CPU time, each sample the mean of a few calls, so that a busy
machine slows every side alike; ratios are of medians. A kernel earns its place where the
library's ratio misses the target on some row.

- ``_cskip`` (skipping ignored metadata; issue 17: skipping costs what scanning the bytes costs,
  taken here as at most 1.5× one regex pass over them): ``load`` of 20 MB ignored under an unknown
  key against one regex pass; the library: ``cbor2.loads`` of the same metadata (cbor2's C
  decoder decoding and dropping the value).
- ``_ctable`` (scanning the tensors map; issue 19): the 100,000-tensor open against
  ``cbor2.loads`` of its metadata (target 0.5), open + names of 20,000 tiny tensors and of a
  64-tensor file against ``safe_open`` + ``keys()`` (1.0 and 1.5); the library: the open with the
  tensors map decoded by cbor2 (the table and scanner tiers off: cbor2's C decoder and the
  generated validators).
- ``_cquant`` (dequantizing; issues 12 and 19: at most 2× ``values.astype(float32) * scale``,
  1.3× for packed Q4 blocks of 32); the library: numpy (the numpy path). The kernel covers packed
  sub-byte values only: 8-bit values have no kernel side, numpy meeting their target.
- ``_cstats`` (``burnpack view`` statistics; issue 21: over a 1 GiB model at most 2× reading it
  once, page cache warm); the library: numpy (the numpy path).

    python benchmarks/kernels_bench.py --repeat 15 --json benchmarks/results/kernels.json   # the quiet run
    python benchmarks/kernels_bench.py --smoke                                                # small, to see it run
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import cbor2
import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402
from benchmarks.bench import read_ops, turned  # noqa: E402
from benchmarks.quant_bench import SCHEMES  # noqa: E402
from benchmarks.skip_bench import MIXES, ignored, pack_with  # noqa: E402
from benchmarks.view_stats import read_once, stats_all  # noqa: E402

import burnpack  # noqa: E402
from burnpack.codec import _cbor  # noqa: E402
from burnpack.core import quant  # noqa: E402
from burnpack.codec._kernels import KERNELS, load_kernel  # noqa: E402
from burnpack.codec._cbor import Fallback  # noqa: E402
from burnpack.quant import parse_scheme  # noqa: E402

Op = Callable[[], object]


def cpu_per_call(op: Op, number: int) -> float:
    start = time.process_time()
    for _ in range(number):
        op()
    return (time.process_time() - start) / number


def interleaved(sides: dict[str, Op], repeat_: int, number: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {side: [] for side in sides}
    for turn in range(repeat_):
        for side in turned(list(sides), turn):
            samples[side].append(cpu_per_call(sides[side], number))
    return samples


def row(workload: str, peer: str, target: float, samples: dict[str, list[float]]) -> dict[str, Any]:
    """One comparison: every side's median over the peer's, against the target."""
    medians = {side: statistics.median(v) for side, v in samples.items()}
    return {
        "workload": workload,
        "peer": peer,
        "target": target,
        "clock": "cpu",
        "ratios": {side: round(m / medians[peer], 4) for side, m in medians.items() if side != peer},
        "medians_s": {side: round(m, 7) for side, m in medians.items()},
        "samples_s": {side: [round(x, 7) for x in v] for side, v in samples.items()},
    }


# -- _cskip ---------------------------------------------------------------------------------------
def skip_rows(mb: float, repeat_: int) -> list[dict[str, Any]]:
    rows = []
    pattern = re.compile(rb"[\x1c-\x1e]")  # reserved heads: a pass over every byte finding few matches
    for mix in MIXES:
        data, blob = pack_with(ignored(mix, int(mb * 1e6)))

        def python_walk(data: bytes = data) -> object:
            with mock.patch.object(_cbor, "skip_plain", _cbor.python_skip_plain):
                return burnpack.load(data)

        sides: dict[str, Op] = {
            "kernel": lambda data=data: burnpack.load(data),
            "library": lambda blob=blob: cbor2.loads(blob),
            "twin": python_walk,
            "one regex pass": lambda blob=blob: pattern.findall(blob),
        }
        rows.append(row(f"{mix}, {mb:g} MB ignored", "one regex pass", 1.5, interleaved(sides, repeat_, 1)))
    return rows


# -- _ctable --------------------------------------------------------------------------------------
@contextlib.contextmanager
def tensors_map_by(side: str) -> Iterator[None]:
    """The open's tensors map read by the compiled scan (``kernel``), the regex scan (``twin``) or
    cbor2's C decoder with the generated validators (``library``: the table and scanner tiers off)."""
    with contextlib.ExitStack() as stack:
        if side == "twin":
            stack.enter_context(mock.patch("burnpack.core.table._ctable", None))
        if side == "library":
            stack.enter_context(mock.patch("burnpack.core.reader.scan_table", lambda blob: None))
            stack.enter_context(mock.patch("burnpack.core.metadata.scan_Metadata", mock.Mock(side_effect=Fallback)))
        yield


def _by(side: str, op: Op) -> Op:
    def run() -> object:
        with tensors_map_by(side):
            return op()

    return run


def table_rows(tmp: Path, repeat_: int, many: int, tiny: int) -> list[dict[str, Any]]:
    rows = []
    data = burnpack.save_bytes({f"model.layers.{i}.mlp.up_proj.bias": np.full(2, i, np.float32) for i in range(many)})
    blob = bytes(data[10 : 10 + int.from_bytes(data[6:10], "little")])
    sides: dict[str, Op] = {side: _by(side, lambda: burnpack.load(data)) for side in ("kernel", "library", "twin")}
    sides["cbor2.loads"] = lambda: cbor2.loads(blob)
    rows.append(row(f"{many:,}-tensor pack in memory: open", "cbor2.loads", 0.5, interleaved(sides, repeat_, 1)))
    for label, arrays, number, target in (
        (f"{tiny:,} tiny tensors: open + names", {f"layers.{i}.bias": np.full(4, i, np.float32) for i in range(tiny)}, 3, 1.0),
        ("64-tensor file (1 MiB): open + names", {f"layers.{i}.weight": np.full(4096, i, np.float32) for i in range(64)}, 200, 1.5),
    ):
        bpk, st = tmp / "t.bpk", tmp / "t.safetensors"
        burnpack.save(arrays, bpk)
        save_file(arrays, str(st))

        def names(bpk: Path = bpk) -> None:
            with burnpack.load(bpk) as pack:
                pack.names

        sides = {side: _by(side, names) for side in ("kernel", "library", "twin")}
        sides["safe_open + keys()"] = read_ops(bpk, st)["open+names: safe_open keys"]
        rows.append(row(label, "safe_open + keys()", target, interleaved(sides, repeat_, number)))
    return rows


# -- _cquant --------------------------------------------------------------------------------------
def quant_rows(side: int, repeat_: int) -> list[dict[str, Any]]:
    rows = []
    x = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    for label, spec in SCHEMES.items():
        spec = dict(spec)
        scheme = parse_scheme(spec.pop("value"), **spec)
        q = burnpack.quantize(x, scheme)
        with burnpack.load(burnpack.save_bytes({"w": q})) as pack:
            payload = bytes(pack["w"].memoryview())
        shape = (side, side)
        values, scale = np.ascontiguousarray(q.values), np.float32(q.effective_scales().reshape(-1)[0])
        sides: dict[str, Op] = {
            "library": lambda payload=payload, scheme=scheme: quant.dequantize(payload, scheme, shape, compiled=False),
            "astype(float32) * scale": lambda values=values, scale=scale: values.astype(np.float32) * scale,
        }
        if quant.kernel_covers(scheme, shape):  # sub-byte packed values; numpy takes 8-bit ones
            sides["kernel"] = lambda payload=payload, scheme=scheme: quant.dequantize(payload, scheme, shape, compiled=True)
        target = 1.3 if label.startswith("q4s block 32") else 2.0
        rows.append(row(f"{side}x{side} {label}", "astype(float32) * scale", target, interleaved(sides, repeat_, 1)))
    return rows


# -- _cstats --------------------------------------------------------------------------------------
def stats_rows(tmp: Path, mib: int, repeat_: int) -> list[dict[str, Any]]:
    path = tmp / "stats.bpk"
    per_tensor = mib * (1 << 20) // 16 // 4
    rng = np.random.default_rng(0)
    burnpack.save({f"layers.{i}.weight": rng.standard_normal(per_tensor, dtype=np.float32) for i in range(16)}, path)

    def on_pack(fn: Callable[[burnpack.Pack], object]) -> Op:
        def run() -> None:
            with burnpack.load(path) as pack:
                fn(pack)

        return run

    sides: dict[str, Op] = {
        "kernel": on_pack(lambda pack: stats_all(pack, compiled=True)),
        "library": on_pack(lambda pack: stats_all(pack, compiled=False)),
        "read once + sum": on_pack(read_once),
    }
    return [row(f"{mib} MiB F32 in 16 tensors, page cache warm", "read once + sum", 2.0, interleaved(sides, repeat_, 1))]


LIBRARIES = {
    "burnpack.codec._cskip": "cbor2.loads (cbor2's C decoder)",
    "burnpack.core._ctable": "cbor2's C decoder + the generated validators",
    "burnpack.core._cquant": "numpy",
    "burnpack.view._cstats": "numpy",
}
"""The maintained library that could do each kernel's job."""


def verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the library meets every target of a kernel's rows, and whether they are met with
    the kernel where it runs (the library where it does not)."""
    judged = [r for r in rows if r["target"] is not None]
    library = all(r["ratios"]["library"] <= r["target"] for r in judged)
    kernel = all(r["ratios"].get("kernel", r["ratios"]["library"]) <= r["target"] for r in judged)
    worst = max(judged, key=lambda r: r["ratios"]["library"] / r["target"])
    return {"library_meets_target": library, "kernel_meets_target": kernel,
            "library_worst_row": worst["workload"], "library_worst_over_target": round(worst["ratios"]["library"] / worst["target"], 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="small workloads and 3 repeats: to see the script run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    missing = [m for m in KERNELS if load_kernel(m) is None]
    if missing:
        parser.error(f"every kernel must be built (BURNPACK_BUILD_KERNELS=1 pip install -e .): {', '.join(missing)} is not")
    repeat_ = 3 if args.smoke else args.repeat
    tmp = Path(tempfile.mkdtemp(dir=Path.cwd(), prefix=".kernels-bench-"))
    try:
        record: dict[str, Any] = environment(tmp, "cbor2", "safetensors")
        record["smoke"] = args.smoke
        rows = {
            "burnpack.codec._cskip": skip_rows(1 if args.smoke else 20, repeat_),
            "burnpack.core._ctable": table_rows(tmp, repeat_, 10_000 if args.smoke else 100_000, 2_000 if args.smoke else 20_000),
            "burnpack.core._cquant": quant_rows(512 if args.smoke else 4096, repeat_),
            "burnpack.view._cstats": stats_rows(tmp, 32 if args.smoke else 1024, repeat_),
        }
        record["kernels"] = {
            module: {"does": KERNELS[module].what, "library": LIBRARIES[module], "rows": found, **verdict(found)} for module, found in rows.items()
        }
        finish(record)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for module, kernel in record["kernels"].items():
        print(f"{module} ({kernel['does']}): library meets the target: {kernel['library_meets_target']} "
              f"(worst row {kernel['library_worst_over_target']}x its target: {kernel['library_worst_row']}); "
              f"met with the kernel where it runs: {kernel['kernel_meets_target']}")  # fmt: skip
        for r in kernel["rows"]:
            print(f"    {r['workload']} / {r['peer']} (target {r['target']}): {r['ratios']}")
    save(record, "kernels", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
