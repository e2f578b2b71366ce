"""The lazy paths against safetensors' ``safe_open`` and against another checkout, in CPU time.

Opening a pack and listing its names, opening a small file, reading every tiny tensor, opening a
pack of 100,000 tensors: each measured in one process, interleaved (ours, the peer, the other
checkout, in turn), as CPU time (``time.process_time``), so a busy machine slows every side alike.
Every sample is kept in the results file; ratios are of medians::

    python benchmarks/open_bench.py [--base /path/to/other/checkout [--base-label COMMIT]] [--repeat 9] [--json out.json]

Without ``--base`` only this checkout and the peers are measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import cbor2
import numpy as np
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkout import import_checkout, kernels  # noqa: E402
from _results import environment, finish, save  # noqa: E402
from bench import read_ops, turned  # noqa: E402

import burnpack  # noqa: E402

Op = Callable[[], object]


def tiny(count: int) -> dict[str, np.ndarray]:
    return {f"layers.{i}.bias": np.full(4, i, dtype=np.float32) for i in range(count)}


def small_file(count: int = 64) -> dict[str, np.ndarray]:
    return {f"layers.{i}.weight": np.full(4096, i, dtype=np.float32) for i in range(count)}


def pack_ops(bp: ModuleType, bpk: Path) -> dict[str, Op]:
    def names() -> None:
        with bp.load(bpk) as pack:
            pack.names

    def numpy_each() -> None:
        with bp.load(bpk) as pack:
            pack.numpy()

    return {"open+names": names, "open+numpy()": numpy_each}


def peer_ops(bpk: Path, st: Path) -> dict[str, Op]:
    """safetensors' lazy reads, as ``bench.py`` measures them."""
    ops = read_ops(bpk, st)
    return {"open+names": ops["open+names: safe_open keys"], "open+numpy()": ops["open+get_tensor of each: safe_open"]}


def cpu_seconds(op: Op, number: int) -> float:
    start = time.process_time_ns()
    for _ in range(number):
        op()
    return (time.process_time_ns() - start) / number / 1e9


def interleave(sides: dict[str, dict[str, Op]], repeat: int, number: int) -> dict[str, dict[str, list[float]]]:
    """``samples[side][operation]``: CPU seconds per call, each sample the mean of ``number`` calls.

    The sides take turns going first, forwards and backwards (``bench.turned``): the first call
    after another side's bulk read pays for more than its own work (up to 2× on 20,000 tiny
    tensors, the collections that read's allocations left due), so no side may always follow
    the same one."""
    samples: dict[str, dict[str, list[float]]] = {side: {name: [] for name in ops} for side, ops in sides.items()}
    order = list(sides)
    for turn in range(repeat):
        for side in turned(order, turn):
            for name, op in sides[side].items():
                samples[side][name].append(cpu_seconds(op, number))
    return samples


def ratios(samples: dict[str, dict[str, list[float]]], peer: str) -> dict[str, dict[str, float]]:
    """Every side's median over ``peer``'s median, per operation both measured."""
    medians = {side: {name: statistics.median(v) for name, v in ops.items()} for side, ops in samples.items()}
    return {
        f"{side} / {peer}": {name: round(m / medians[peer][name], 3) for name, m in ops.items() if name in medians[peer]}
        for side, ops in medians.items()
        if side != peer
    }


def file_workload(label: str, arrays: dict[str, np.ndarray], packages: dict[str, ModuleType], tmp: Path, repeat: int, number: int) -> dict[str, Any]:
    bpk, st = tmp / f"{label}.bpk", tmp / f"{label}.safetensors"
    burnpack.save(arrays, bpk)
    save_file(arrays, str(st))
    sides = {side: pack_ops(bp, bpk) for side, bp in packages.items()}
    sides["safe_open"] = peer_ops(bpk, st)
    samples = interleave(sides, repeat, number)
    out: dict[str, Any] = {"calls_per_sample": number, "ratios": ratios(samples, "safe_open")}
    if "base" in packages:
        out["ratios"].update(ratios({k: samples[k] for k in ("this", "base")}, "base"))
    out["samples_cpu_s"] = samples
    return out


def many_workload(count: int, packages: dict[str, ModuleType], repeat: int) -> dict[str, Any]:
    data = burnpack.save_bytes({f"model.layers.{i}.mlp.up_proj.bias": np.full(2, i, np.float32) for i in range(count)})
    metadata = bytes(data[10 : 10 + int.from_bytes(data[6:10], "little")])
    sides: dict[str, dict[str, Op]] = {side: {"open": (lambda bp=bp: bp.load(data))} for side, bp in packages.items()}
    sides["cbor2.loads"] = {"open": lambda: cbor2.loads(metadata)}
    samples = interleave(sides, repeat, 1)
    out: dict[str, Any] = {"calls_per_sample": 1, "ratios": ratios(samples, "cbor2.loads")}
    if "base" in packages:
        out["ratios"].update(ratios({k: samples[k] for k in ("this", "base")}, "base"))
    out["samples_cpu_s"] = samples
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="another checkout (its burnpack/ is imported beside this one)")
    parser.add_argument("--base-label", help="what that checkout holds (e.g. the commit of a git archive), recorded and shown in place of its path")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--tiny", type=int, default=20_000)
    parser.add_argument("--many", type=int, default=100_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.base_label and not args.base:
        parser.error("--base-label names the checkout given by --base")
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp_name:
        tmp = Path(tmp_name)
        record: dict[str, Any] = environment(tmp, "safetensors", "cbor2")
        packages = {"this": burnpack}
        if args.base:
            packages["base"] = import_checkout(args.base, "burnpack_base", tmp)
            record["base_checkout"] = args.base_label or str(args.base)
            record["kernels"] = {"this": kernels(burnpack), "base": kernels(packages["base"])}
            if args.base_label:
                record["base_checkout_path"] = str(args.base)
        workloads = {
            f"{args.tiny} tiny tensors": file_workload("tiny", tiny(args.tiny), packages, tmp, args.repeat, 1),
            "64-tensor file (1 MiB)": file_workload("small", small_file(), packages, tmp, args.repeat, 200),
        }
        if args.many:
            workloads[f"{args.many}-tensor pack in memory, open only"] = many_workload(args.many, packages, args.repeat)
    finish(record)
    record["timer"] = "time.process_time_ns (CPU time of this process), interleaved, ratios of medians"
    record["workloads"] = workloads
    for name, result in workloads.items():
        print(f"## {name}")
        for pair, values in result["ratios"].items():
            print(f"  {pair}: " + ", ".join(f"{op} {value}" for op, value in values.items()))
    save(record, "open", args.json)


if __name__ == "__main__":
    main()
