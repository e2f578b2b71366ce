"""Dequantize throughput against a plain numpy ``astype(float32) * scale`` over the same values.

For each scheme a 4096×4096 weight is quantized, written into a pack and read back; then
``view.dequantize()`` (from the mapped pack) and the peer — the same int8 values, already
unpacked, ``values.astype(np.float32) * scale`` — are timed alternately in this process, so
machine load hits both alike. The ratio is ours / peer (target ≤ 2), of the medians and of the
minimums (the least disturbed runs, the steadier figure on a busy machine). numpy runs these loops on
one thread. Raw samples, the commit, the load average and package versions go to the JSON.
"Ours" takes the compiled kernel where it is built and covers the scheme (``burnpack.quant.KERNEL``,
``kernel_covers``), numpy's path under ``--numpy``.

    python benchmarks/quant_bench.py [--repeat 9] [--side 4096] [--numpy] [--json benchmarks/results/quant.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
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


def measure(side: int, repeat: int, numpy_path: bool) -> dict:
    x = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    out = {}
    for label, spec in SCHEMES.items():
        spec = dict(spec)
        scheme = parse_scheme(spec.pop("value"), **spec)
        q = burnpack.quantize(x, scheme)
        pack = burnpack.load(burnpack.save_bytes({"w": q}))
        view = pack["w"]
        compiled = False if numpy_path else None

        def ours_dequantize() -> np.ndarray:  # what view.dequantize() calls, with the path chosen
            return burnpack.quant.dequantize(view.memoryview(), scheme, view.shape, name=view.name, compiled=compiled)

        values, scale = np.ascontiguousarray(q.values), np.float32(q.effective_scales().reshape(-1)[0])
        assert ours_dequantize().tobytes() == view.dequantize().tobytes() == q.dequantize().tobytes()
        ours, peer = [], []
        for _ in range(repeat):  # alternate, so load changes hit both
            start = time.perf_counter()
            ours_dequantize()
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            values.astype(np.float32) * scale
            peer.append(time.perf_counter() - start)
        out[label] = {
            "scheme": describe(scheme),
            "payload_bytes": view.byte_len,
            "path": "compiled" if KERNEL == "compiled" and not numpy_path and kernel_covers(scheme, view.shape) else "numpy",
            "ours_seconds": ours,
            "peer_seconds": peer,
            "ours_median": statistics.median(ours),
            "peer_median": statistics.median(peer),
            "ratio": statistics.median(ours) / statistics.median(peer),
            "ratio_of_minimums": min(ours) / min(peer),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--numpy", action="store_true", help="numpy's dequantize path even where the compiled kernel is built")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args()
    record = environment(Path.cwd(), "ml_dtypes")
    record.update(benchmark="quant_bench", shape=[args.side, args.side], repeat=args.repeat, kernel="numpy" if args.numpy else KERNEL)
    record["results"] = results = measure(args.side, args.repeat, args.numpy)
    finish(record)
    for label, r in results.items():
        print(
            f"{label:42s} [{r['path']}] median: ours {r['ours_median'] * 1e3:6.1f} ms, peer {r['peer_median'] * 1e3:6.1f} ms, "
            f"ratio {r['ratio']:.2f}; ratio of minimums {r['ratio_of_minimums']:.2f}"
        )
    save(record, "quant", args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
