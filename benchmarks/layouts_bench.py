"""Converting LSTM and transformer layers to Burn's layouts against the same bytes without adapters.

One safetensors file holds ``--mib`` MiB of float32 in PyTorch's names and layouts: ``--blocks``
blocks, each a 1-layer ``nn.LSTM`` (``rnn.{i}``: fused ``weight_ih_l0`` / ``weight_hh_l0`` and
biases) and a pre-norm ``nn.TransformerEncoderLayer`` (``enc.layers.{i}``: fused ``in_proj``,
``out_proj``, ``linear1``/``linear2``, two norms), ``d_model`` = hidden size chosen to fill the
size. Each repeat converts that file to ``.bpk`` three ways, in turn (the order rotates every
repeat), every conversion in a fresh subprocess so its memory is its own, the output of the last
repeat deleted and the disk synced first, outside the timing:

* ``layouts``: ``adapter="pytorch"`` with the module types given (LSTM gates split and
  transposed, attention split and transposed, norms renamed and swapped) — what is measured;
* ``plain``: no adapter, the same bytes written as they are (the issue's peer: within 1.2×);
* ``linear``: ``adapter="pytorch"`` with every 2-D weight renamed ``<name>.weight`` and typed a
  plain ``Linear`` — the same bytes transposed, whole, without the splits, so the cost of the
  structure alone shows.

Each case reports its wall time (median of the repeats), its CPU time (every thread's: the
layouts write from a second thread), its RSS high-water mark (``VmHWM`` of the subprocess: with
the input memory-mapped, the pages it touched count too) and its heap peak, against the input's
size and its largest tensor. The heap peak (tracemalloc: numpy's buffers included) comes from one
more conversion of each case, untimed, before the timed repeats (so no case's first run, on the
freshly written input, is timed): tracing every allocation slows the converter's Python by more
than a tenth of a second per GiB, and the way with more Python work more, so it stays out of the
timed runs.

    python benchmarks/layouts_bench.py --mib 1024 --repeat 5 [--dir /path] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._results import environment, finish, save  # noqa: E402
from benchmarks.convert_bench import run  # noqa: E402  (a case in a fresh interpreter, its last line as JSON)

PEAK = r"""
def peak_rss_mib():  # this process's RSS high-water mark (VmHWM starts afresh at exec; ru_maxrss does not)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
"""
CASE = PEAK + r"""
import json, sys, time
from burnpack.interop import convert
src, dst, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
start, cpu = time.perf_counter(), time.process_time()
report = convert(src, dst, **options)
seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "rss_peak_mib": peak_rss_mib(), "tensors": len(report.applied),
                  "modules": len(report.modules)}))
"""

HEAP = r"""
import json, sys, tracemalloc
from burnpack.interop import convert
src, dst, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
tracemalloc.start()
convert(src, dst, **options)
print(json.dumps({"heap_peak_mib": tracemalloc.get_traced_memory()[1] / 2**20}))
"""

BASELINE = PEAK + r"""
import json
from burnpack.interop import convert
print(json.dumps({"rss_peak_mib": peak_rss_mib()}))
"""

CASES = {
    "layouts": {"adapter": "pytorch", "type_rules": [[r"^rnn\.\d+$", "LSTM"], [r"^enc\.layers\.\d+$", "TransformerEncoderLayer(norm_first=true)"]]},
    "plain": {},
    "linear": {"adapter": "pytorch", "remap": [[r"\.(weight_ih|weight_hh)_l0$", r".\1.weight"], [r"\.in_proj_weight$", ".in_proj.weight"]],
               "type_rules": [[r"\.(weight_ih|weight_hh|in_proj|out_proj|linear1|linear2)$", "Linear"], [r"\.norm\d$", "LayerNorm"]],
               "allow_unmatched": True},
}
RATIOS = {
    "layouts / plain": ("layouts", "plain", "the issue's target (≤ 1.2×): the same bytes, every tensor converted against none"),
    "layouts / linear": ("layouts", "linear", "the same transposes and renames, with and without the splits: what the structure costs"),
}


def state(mib: int, blocks: int) -> dict[str, np.ndarray]:
    """``blocks`` × (LSTM layer of hidden ``d`` + pre-norm encoder layer of ``d_model`` ``d``,
    ``d_ff`` ``4d``): 8·d² + 12·d² floats per block."""
    d = int(math.sqrt((mib << 20) / blocks / 4 / 20))
    rng = np.random.default_rng(0)
    out = {}
    for i in range(blocks):
        rnn = f"rnn.{i}."
        out |= {rnn + "weight_ih_l0": rng.standard_normal((4 * d, d), np.float32), rnn + "weight_hh_l0": rng.standard_normal((4 * d, d), np.float32),
                rnn + "bias_ih_l0": rng.standard_normal(4 * d, np.float32), rnn + "bias_hh_l0": rng.standard_normal(4 * d, np.float32)}  # fmt: skip
        enc = f"enc.layers.{i}."
        out |= {enc + "self_attn.in_proj_weight": rng.standard_normal((3 * d, d), np.float32), enc + "self_attn.in_proj_bias": rng.standard_normal(3 * d, np.float32),
                enc + "self_attn.out_proj.weight": rng.standard_normal((d, d), np.float32), enc + "self_attn.out_proj.bias": rng.standard_normal(d, np.float32),
                enc + "linear1.weight": rng.standard_normal((4 * d, d), np.float32), enc + "linear1.bias": rng.standard_normal(4 * d, np.float32),
                enc + "linear2.weight": rng.standard_normal((d, 4 * d), np.float32), enc + "linear2.bias": rng.standard_normal(d, np.float32),
                enc + "norm1.weight": np.ones(d, np.float32), enc + "norm1.bias": np.zeros(d, np.float32),
                enc + "norm2.weight": np.ones(d, np.float32), enc + "norm2.bias": np.zeros(d, np.float32)}  # fmt: skip
    return out


def convert_args(tmp: Path, name: str) -> tuple[str, str, str]:
    """A case's arguments, its last output deleted and every dirty page written first: the
    timing holds neither the deletion of a file as large as the input nor another case's writes."""
    (tmp / f"{name}.bpk").unlink(missing_ok=True)
    os.sync()
    return str(tmp / "torch.safetensors"), str(tmp / f"{name}.bpk"), json.dumps(CASES[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temporary directory)")
    parser.add_argument("--json", type=Path, help="the results file (default: benchmarks/results/layouts.json, the one current file)")
    args = parser.parse_args()
    from burnpack.interop import write_safetensors

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp_name:
        tmp = Path(tmp_name)
        tensors = state(args.mib, args.blocks)
        largest = max(a.nbytes for a in tensors.values()) / 2**20
        write_safetensors(tensors, tmp / "torch.safetensors")
        del tensors
        size = (tmp / "torch.safetensors").stat().st_size / 2**20
        record = environment(tmp)
        record.update(input_mib=round(size, 1), largest_tensor_mib=round(largest, 1), blocks=args.blocks, repeat=args.repeat,
                      baseline_rss_mib=run(BASELINE)["rss_peak_mib"], samples={name: [] for name in CASES}, heap_peak_mib={})  # fmt: skip
        names = list(CASES)
        for name in names:  # untimed: each case's heap peak, and a first run of each before the timed ones
            record["heap_peak_mib"][name] = run(HEAP, *convert_args(tmp, name))["heap_peak_mib"]
            print(f"{name:8s} heap peak {record['heap_peak_mib'][name]:7.1f} MiB (an untimed run)")
        for r in range(args.repeat):
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                result = run(CASE, *convert_args(tmp, name))
                record["samples"][name].append(result)
                print(f"{name:8s} {result['seconds']:7.3f} s  CPU {result['cpu_seconds']:7.3f} s  RSS peak {result['rss_peak_mib']:7.1f} MiB")
        finish(record)
    medians = {name: statistics.median(s["seconds"] for s in samples) for name, samples in record["samples"].items()}
    record["ratios"] = {label: round(medians[ours] / medians[peer], 3) for label, (ours, peer, _) in RATIOS.items()}
    for label, ratio in record["ratios"].items():
        print(f"{label}: {ratio}× ({medians[RATIOS[label][0]]:.3f} s vs {medians[RATIOS[label][1]]:.3f} s, medians)")
    print(f"input {size:.0f} MiB, largest tensor {largest:.1f} MiB, a bare interpreter's RSS {record['baseline_rss_mib']:.0f} MiB")
    save(record, "layouts", args.json)


if __name__ == "__main__":
    main()
