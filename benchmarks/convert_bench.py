"""Conversion speed and peak memory of ``burnpack.interop.convert``, one conversion per process.

Each case runs in a fresh subprocess; it reports the heap peak (tracemalloc: Python objects and
numpy buffers) and the RSS high-water mark (which also counts memory-mapped input pages). Inputs: a
safetensors file of ``--mib`` MiB of float32 in 64 tensors (2-D, so the PyTorch adapter has
Linear weights to transpose), the ``.bpk`` made from it, and (with torch) a ``.pt`` of it.

    python benchmarks/convert_bench.py [--mib 1024] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CASE = r"""
import json, sys, time, tracemalloc
from burnpack.interop import convert
def hwm():  # the high-water mark of this process's own memory (ru_maxrss survives exec)
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024
src, dst, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if dst.endswith(".pt"):
    import torch
base = hwm()
tracemalloc.start()
start = time.perf_counter()
report = convert(src, dst, overwrite=True, **options)
seconds = time.perf_counter() - start
heap = tracemalloc.get_traced_memory()[1] / 2**20
print(json.dumps({"seconds": seconds, "peak_mib": hwm(), "extra_mib": hwm() - base, "heap_mib": heap,
                  "tensors": len(report.applied), "transformed": len(report.transformed)}))
"""

def run(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temporary directory; /dev/shm takes the disk out)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from burnpack.interop import write_safetensors

    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        side = int(((args.mib << 20) / 64 / 4) ** 0.5)
        rng = np.random.default_rng(0)
        tensors = {f"layers.{i}.fc.weight": rng.standard_normal((side, side), dtype=np.float32) for i in range(64)}
        write_safetensors(tensors, tmp / "in.safetensors")
        del tensors
        size = (tmp / "in.safetensors").stat().st_size
        cases = [
            ("safetensors -> bpk", "in.safetensors", "out.bpk", {}),
            ("bpk -> safetensors", "out.bpk", "back.safetensors", {}),
            ("bpk -> bpk (repack)", "out.bpk", "copy.bpk", {}),
            ("safetensors -> npz", "in.safetensors", "out.npz", {}),
            ("safetensors -> bpk, pytorch adapter (64 transposes)", "in.safetensors", "t.bpk",
             {"adapter": "pytorch", "type_rules": [[r"\.fc$", "Linear"]]}),
            ("safetensors -> bpk, cast=bf16", "in.safetensors", "h.bpk", {"adapter": "cast=bf16"}),
        ]
        try:
            import torch  # noqa: F401

            cases.append(("bpk -> pt (torch.save)", "out.bpk", "out.pt", {}))
            cases.append(("pt -> bpk (pickle-free reader)", "out.pt", "again.bpk", {}))
        except ImportError:
            pass
        for label, src, dst, options in cases:
            start = time.perf_counter()
            result = run(CASE, str(tmp / src), str(tmp / dst), json.dumps(options))
            result.update(label=label, wall=time.perf_counter() - start, gib_per_s=size / (1 << 30) / result["seconds"])
            rows.append(result)
            print(f"{label:55s} {result['seconds']:6.2f} s  {result['gib_per_s']:5.2f} GiB/s  heap peak {result['heap_mib']:7.1f} MiB  RSS peak +{result['extra_mib']:6.0f} MiB")
    print(f"input: {size / (1 << 20):.0f} MiB in 64 tensors. heap = Python and numpy allocations (tracemalloc; torch's own")
    print("are not traced); RSS also counts the memory-mapped input pages, which the kernel can drop at will.")
    if args.json:
        args.json.write_text(json.dumps({"input_mib": size / (1 << 20), "cases": rows}, indent=1))


if __name__ == "__main__":
    main()
