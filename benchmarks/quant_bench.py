"""Dequantize throughput against a plain numpy ``astype(float32) * scale`` over the same values.

For each scheme a 4096×4096 weight is quantized, written into a pack and read back; then
``view.dequantize()`` (from the mapped pack), the same with numpy's path forced, and the peer —
the same int8 values, already unpacked, ``values.astype(np.float32) * scale`` — are timed in
turn in this process, so machine load hits all three alike. The ratio is ours / peer (target ≤ 2), of the medians and of the
minimums (the least disturbed runs, the steadier figure on a busy machine). numpy runs these loops on
one thread. Raw samples, the commit, the load average and package versions go to the JSON.
"Ours" takes the compiled kernel where it is built and covers the scheme (``burnpack.quant.KERNEL``,
``kernel_covers``); numpy's path is measured beside it. Results go to ``benchmarks/results/quant.json``:

    python benchmarks/quant_bench.py [--repeat 9] [--side 4096] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import burnpack
from burnpack import QuantStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402
from burnpack.quant import KERNEL, describe, kernel_covers, parse_scheme

SCHEMES = {
    "q8s per tensor (Native)": dict(value="q8s"),
    "q8s block 32 F16 (Native)": dict(value="q8s", block=32, scale_dtype="f16"),
    "q4s block 32 F32 (PackedU32)": dict(value="q4s", block=32, store=QuantStore.PackedU32(0)),
    "q8s block 32 UE4M3 + tensor F32 (Native)": dict(value="q8s", block=32, scale_dtype="ue4m3", global_scale=True),
    "q2s per tensor BF16 (PackedU32)": dict(value="q2s", scale_dtype="bf16", store=QuantStore.PackedU32(0)),
}


def measure(side: int, repeat: int) -> dict:
    x = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    out = {}
    for label, spec in SCHEMES.items():
        spec = dict(spec)
        scheme = parse_scheme(spec.pop("value"), **spec)
        q = burnpack.quantize(x, scheme)
        pack = burnpack.load(burnpack.save_bytes({"w": q}))
        view = pack["w"]
        def ours_dequantize(compiled: bool | None = None) -> np.ndarray:  # what view.dequantize() calls, with the path chosen
            return burnpack.quant.dequantize(view.memoryview(), scheme, view.shape, name=view.name, compiled=compiled)

        values, scale = np.ascontiguousarray(q.values), np.float32(q.effective_scales().reshape(-1)[0])
        assert ours_dequantize().tobytes() == ours_dequantize(False).tobytes() == view.dequantize().tobytes() == q.dequantize().tobytes()
        sides: dict[str, Callable[[], object]] = {
            "ours": ours_dequantize, "numpy": lambda: ours_dequantize(False), "peer": lambda: values.astype(np.float32) * scale
        }
        samples: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(repeat):  # in turn, so load changes hit every side
            for side, run in sides.items():
                start = time.perf_counter()
                run()
                samples[side].append(time.perf_counter() - start)
        ours, numpy_path, peer = samples["ours"], samples["numpy"], samples["peer"]
        out[label] = {
            "scheme": describe(scheme),
            "payload_bytes": view.byte_len,
            "path": "compiled" if KERNEL == "compiled" and kernel_covers(scheme, view.shape) else "numpy",
            "ours_seconds": ours,
            "numpy_seconds": numpy_path,
            "peer_seconds": peer,
            "ours_median": statistics.median(ours),
            "numpy_median": statistics.median(numpy_path),
            "peer_median": statistics.median(peer),
            "ratio": statistics.median(ours) / statistics.median(peer),
            "ratio_of_minimums": min(ours) / min(peer),
            "numpy_ratio": statistics.median(numpy_path) / statistics.median(peer),
            "numpy_ratio_of_minimums": min(numpy_path) / min(peer),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args()
    record = environment(Path.cwd(), "ml_dtypes")
    record.update(benchmark="quant_bench", shape=[args.side, args.side], repeat=args.repeat, kernel=KERNEL)
    record["results"] = results = measure(args.side, args.repeat)
    finish(record)
    for label, r in results.items():
        print(
            f"{label:42s} [{r['path']}] median: ours {r['ours_median'] * 1e3:6.1f} ms, numpy's path {r['numpy_median'] * 1e3:6.1f} ms, "
            f"peer {r['peer_median'] * 1e3:6.1f} ms; ratios {r['ratio']:.2f} and {r['numpy_ratio']:.2f}"
        )
    save(record, "quant", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
