"""Reach benchmarks: sharded conversion vs ``cp``, torch loading vs ``safetensors.torch``, and the
bytes a remote pack transfers. Ratios are taken in one run on one machine.

    python benchmarks/reach_bench.py [--only sharded] [--gib 2] [--repeat 3] [--torch-repeat 15] [--remote-repeat 7] [--dir /tmp] [--json out.json]

1. Sharded: a generated ``--gib`` GiB model in 4 HF safetensors shards (64 float32 tensors of
   equal size) converted to one ``.bpk`` in a fresh process: time and the RSS high-water mark
   (VmHWM, which counts mapped input pages too) above the process's baseline after imports,
   against ``cp -r`` of the same shards and ``cp -r`` + fsync of each copy. The JSON says whether
   the conversion fsynced (its ``os.fsync`` calls are counted) and so which copy is its fair peer.
2. Torch: 512 MiB in 64 float32 tensors and 20,000 tiny ones. ``burnpack.torch.load_file``
   (alone and + ``sum`` of every tensor) vs ``safetensors.torch.load_file``; ``load(framework="pt")``
   + ``get_tensor`` + ``sum`` vs ``safe_open(framework="pt")`` + ``get_tensor`` + ``sum``; torch's sum
   of the same bytes at each 256-byte offset within a page. ``--torch-repeat`` runs each, warm cache.
3. Remote: a 1 GiB pack of 256 tensors of 4 MiB on a local HTTP server with Range support: bytes
   and requests to open, to read one tensor, and for ``pack.numpy()``; then every tensor of a
   256 MiB pack (``load(url).numpy()``) against one plain GET of the file, ``--remote-repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._results import environment, finish, save  # noqa: E402



def seconds_of(action) -> float:
    """Wall time of one call."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start

CONVERT_CASE = r"""
import json, os, sys, time
from burnpack.interop import convert
fsyncs = []
real_fsync = os.fsync
def counting_fsync(fd):
    fsyncs.append(fd)
    real_fsync(fd)
os.fsync = counting_fsync
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024
base = hwm()
start = time.perf_counter()
if sys.argv[3] == "convert":  # the command: durable
    tensors = len(convert(sys.argv[1], sys.argv[2], overwrite=True).applied)
else:  # the same reading and writing engine, without fsync: Writer.write of the shards' tensors
    import burnpack
    from burnpack.interop.registry import read_tensors
    tset = read_tensors(sys.argv[1], "safetensors-shards")
    try:
        burnpack.Writer(tset.entries).write(sys.argv[2])
        tensors = len(tset.entries)
    finally:
        tset.close()
print(json.dumps({"seconds": time.perf_counter() - start, "peak_mib": hwm(), "extra_mib": hwm() - base,
                  "tensors": tensors, "fsyncs": len(fsyncs)}))
"""


def _fresh(*paths: Path) -> None:
    """Remove what an earlier step wrote and flush dirty pages, outside any timed step, so one
    step's deletes and writeback are not timed in another."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    os.sync()


def _copy(src: Path, dst: Path, fsync: bool) -> None:
    subprocess.run(["cp", "-r", str(src), str(dst)], check=True)
    if fsync:
        for path in dst.iterdir():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def sharded(tmp: Path, gib: float, repeat: int) -> dict:
    from burnpack.interop import convert

    count = 64
    elements = int(gib * (1 << 30) / count / 4)
    rng = np.random.default_rng(0)
    source = tmp / "one.bpk"
    import burnpack

    tensors = [burnpack.Tensor.deferred(f"layers.{i}.weight", burnpack.DType.F32, (elements,), elements * 4,
                                        lambda: rng.standard_normal(elements, dtype=np.float32)) for i in range(count)]  # fmt: skip
    burnpack.Writer(tensors).write(source)
    model = tmp / "hf"
    convert(source, model, max_shard_size=f"{gib * (1 << 30) / 4 / 1e6 + 1:.3f}MB")
    source.unlink()
    shards = sorted(p.name for p in model.iterdir() if p.suffix == ".safetensors")
    total = sum((model / s).stat().st_size for s in shards)
    runs, plain_runs, cps, cps_fsync = [], [], [], []

    def converted(how: str) -> dict:
        _fresh(tmp / "out.bpk", tmp / "copy")
        out = subprocess.run([sys.executable, "-c", CONVERT_CASE, str(model), str(tmp / "out.bpk"), how],
                             check=True, capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        return json.loads(out.stdout.strip().splitlines()[-1])

    for _ in range(repeat):
        runs.append(converted("convert"))
        plain_runs.append(converted("write"))
        _fresh(tmp / "out.bpk")
        cps.append(seconds_of(lambda: _copy(model, tmp / "copy", False)))  # alternate, so drift hits both
        _fresh(tmp / "copy")
        cps_fsync.append(seconds_of(lambda: _copy(model, tmp / "copy", True)))
    _fresh(tmp / "copy")
    cp, cp_fsync = statistics.median(cps), statistics.median(cps_fsync)
    seconds = statistics.median(r["seconds"] for r in runs)
    plain = statistics.median(r["seconds"] for r in plain_runs)
    durable = all(r["fsyncs"] > 0 for r in runs)
    assert not any(r["fsyncs"] for r in plain_runs)
    return {
        "convert_fsyncs": durable,
        "fair_peer": "cp_fsync" if durable else "cp",
        "fair_peer_why": "the conversion fsyncs its output (os.fsync calls counted in the converting process), so cp + fsync "
                         "of every copied file is the like-for-like copy" if durable else "the conversion does not fsync",
        "ratio_vs_fair_peer": seconds / (cp_fsync if durable else cp),
        "shards": shards,
        "bytes": total,
        "largest_tensor_mib": elements * 4 / 2**20,
        "convert_seconds": seconds,
        "cp_seconds": cp,
        "cp_fsync_seconds": cp_fsync,
        "ratio_vs_cp": seconds / cp,
        "ratio_vs_cp_fsync": seconds / cp_fsync,
        "write_seconds": plain,
        "write_what": "read_tensors of the shard folder + Writer.write: the conversion's reading and writing without fsync, against cp",
        "ratio_write_vs_cp": plain / cp,
        "peak_rss_mib": max(r["peak_mib"] for r in runs),
        "extra_rss_mib": max(r["extra_mib"] for r in runs),
        "runs": runs,
        "write_runs": plain_runs,
        "cp_runs": cps,
        "cp_fsync_runs": cps_fsync,
    }


def torch_loading(tmp: Path, repeat: int) -> dict:
    """Torch against torch: ``burnpack.torch.load_file`` and the lazy path against
    ``safetensors.torch`` on 512 MiB in 64 float32 tensors and on 20,000 tiny ones, interleaved
    (odd runs put safetensors first).

    torch's sum runs at a speed that depends on where the data sits within a page (on this VM
    two of the sixteen 256-byte offsets run slower, ``sum_by_page_offset``), and that offset
    follows from the metadata's length. So the large-file rows compare files whose data starts
    at the same page offset: a safetensors file padded (with ``__metadata__``) to burnpack's
    offset, and both padded to byte 0 of a page; one row reads the files as each writer lays
    them out."""
    import torch
    from safetensors import safe_open
    from safetensors.numpy import save_file
    from safetensors.torch import load_file as st_load_file

    import burnpack
    import burnpack.torch

    rng = np.random.default_rng(1)
    arrays = {f"t{i:02d}": rng.standard_normal((1 << 21,), dtype=np.float32) for i in range(64)}  # 8 MiB each
    bpk = burnpack.save(arrays, tmp / "g.bpk")
    with burnpack.load(bpk) as pack:
        offset = pack.data_section_start % PAGE
    as_written = tmp / "g.safetensors"
    save_file(arrays, as_written)
    matched = tmp / "g-matched.safetensors"
    save_matching_page_offset(arrays, matched, offset)
    bpk_page_start, st_page_start = tmp / "g0.bpk", tmp / "g0.safetensors"  # both files' data at byte 0 of a page
    save_bpk_at_page_offset(arrays, bpk_page_start, 0)
    save_matching_page_offset(arrays, st_page_start, 0)
    tiny = {f"layers.{i}.bias": np.full(4, i, dtype=np.float32) for i in range(20_000)}
    tiny_bpk = burnpack.save(tiny, tmp / "tiny.bpk")
    tiny_st = tmp / "tiny.safetensors"
    save_file(tiny, tiny_st)
    del arrays, tiny

    def load_file_sum(load: Callable[[Path], dict], path: Path) -> Callable[[], float]:
        return lambda: float(sum(tensor.sum() for tensor in load(path).values()))

    def lazy_sum_ours() -> float:
        with burnpack.load(bpk, framework="pt") as pack:
            return float(sum(pack.get_tensor(name).sum() for name in pack))

    def lazy_sum_theirs() -> float:
        with safe_open(matched, framework="pt") as f:
            return float(sum(f.get_tensor(k).sum() for k in f.keys()))

    ours_load, theirs_load = load_file_sum(burnpack.torch.load_file, bpk), load_file_sum(st_load_file, matched)
    assert abs(ours_load() - theirs_load()) < 1e-3 * abs(theirs_load()) + 1
    assert abs(lazy_sum_ours() - lazy_sum_theirs()) < 1e-3 * abs(theirs_load()) + 1
    pairs: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "load_file": (lambda: burnpack.torch.load_file(bpk), lambda: st_load_file(as_written)),
        "load_file_sum": (ours_load, theirs_load),
        "load_file_sum_page_start": (load_file_sum(burnpack.torch.load_file, bpk_page_start), load_file_sum(st_load_file, st_page_start)),
        "load_file_sum_as_written": (ours_load, load_file_sum(st_load_file, as_written)),
        "open_get_sum": (lazy_sum_ours, lazy_sum_theirs),
        "tiny_load_file": (lambda: burnpack.torch.load_file(tiny_bpk), lambda: st_load_file(tiny_st)),
        "tiny_load_file_sum": (load_file_sum(burnpack.torch.load_file, tiny_bpk), load_file_sum(st_load_file, tiny_st)),
    }
    result: dict[str, Any] = {"mib": 512, "tensors": 64, "tiny_tensors": 20_000, "torch": torch.__version__,
                              "page_offset": {"burnpack": offset, "safetensors_matched": data_start_of(matched) % PAGE,
                                              "safetensors_as_written": data_start_of(as_written) % PAGE}}  # fmt: skip
    for name, (ours, theirs) in pairs.items():
        ours(), theirs()  # warm the page cache and the code
        runs: dict[str, list[float]] = {"burnpack_runs": [], "safetensors_runs": []}
        for turn in range(repeat):
            sides = [("burnpack_runs", ours), ("safetensors_runs", theirs)]
            for key, action in sides[:: 1 if turn % 2 == 0 else -1]:
                runs[key].append(seconds_of(action))
        result[name] = runs
    result["sum_by_page_offset"] = sum_by_page_offset(bpk, repeat)
    result["sum_by_page_offset_mib"] = SWEEP_SLICES * 8
    return result


PAGE = 4096
SWEEP_SLICES = 63
"""Slices of 8 MiB the page-offset sweep sums (one fewer than the file holds: room to shift)."""


def data_start_of(path: Path) -> int:
    """Where a safetensors file's data starts: after the 8-byte length and the JSON header."""
    with open(path, "rb") as f:
        return 8 + int.from_bytes(f.read(8), "little")


def save_bpk_at_page_offset(arrays: dict[str, np.ndarray], path: Path, offset: int) -> None:
    """``burnpack.save`` with a metadata entry long enough to put the data section at ``offset``
    within a page (a multiple of 256, the format's alignment)."""
    import burnpack

    pad = 0
    for _ in range(4):  # the first padding also adds its key; a longer text may grow its CBOR head
        burnpack.save(arrays, path, metadata={"pad": "x" * pad} if pad else None)
        with burnpack.load(path) as pack:
            gap = (offset - pack.data_section_start) % PAGE
        if not gap:
            return
        pad += gap
    raise RuntimeError(f"could not place the data at page offset {offset}")


def save_matching_page_offset(arrays: dict[str, np.ndarray], path: Path, offset: int) -> None:
    """``save_file`` with ``__metadata__`` padding that puts the data at ``offset`` within a page
    (safetensors pads its header to a multiple of 8; ``offset`` is one too)."""
    from safetensors.numpy import save_file

    pad = 0
    for _ in range(4):  # the first padding also adds its key; after that each step lands exactly
        save_file(arrays, path, metadata={"pad": "x" * pad} if pad else None)
        gap = (offset - data_start_of(path)) % PAGE
        if not gap:
            return
        pad += gap
    raise RuntimeError(f"could not place the data at page offset {offset}")


def sum_by_page_offset(bpk: Path, repeat: int) -> dict[str, list[float]]:
    """torch's sum of the same ``SWEEP_SLICES`` slices of 8 MiB of one mapping, starting at each multiple of
    256 bytes within a page: what the data's page offset alone does to the sum."""
    import mmap
    import warnings

    import torch

    runs: dict[str, list[float]] = {str(o): [] for o in range(0, PAGE, 256)}
    with open(bpk, "rb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about the read-only buffer; nothing writes
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        whole = torch.frombuffer(mapping, dtype=torch.uint8)
        n = 8 << 20
        for turn in range(repeat):
            for key in runs if turn % 2 == 0 else list(runs)[::-1]:
                o = int(key)
                slices = [whole[o + k * n : o + (k + 1) * n].view(torch.float32) for k in range(SWEEP_SLICES)]
                runs[key].append(seconds_of(lambda: [float(s.sum()) for s in slices]))
        del whole, slices
        mapping.close()
    return runs


def remote(tmp: Path, repeat: int) -> dict:
    import burnpack
    from tests.servers import RangeServer

    rng = np.random.default_rng(2)
    tensors = [burnpack.Tensor.deferred(f"t{i:03d}", burnpack.DType.F32, (1 << 20,), 4 << 20,
                                        lambda: rng.standard_normal(1 << 20, dtype=np.float32)) for i in range(256)]  # fmt: skip
    data = burnpack.Writer(tensors).to_bytes()
    server = RangeServer()
    try:
        server.files["/big.bpk"] = data
        url = server.url("/big.bpk")
        start = time.perf_counter()
        pack = burnpack.load(url)
        open_seconds = time.perf_counter() - start
        opened = {"requests": len(server.requests), "range_requests": len(server.range_requests), "bytes": server.bytes_sent,
                  "seconds": open_seconds}  # fmt: skip
        server.reset_counts()
        pack["t100"].numpy()
        one = {"requests": len(server.requests), "bytes": server.bytes_sent, "tensor_bytes": 4 << 20}
        server.reset_counts()
        start = time.perf_counter()
        arrays = pack.numpy()
        everything = {"requests": len(server.requests), "bytes": server.bytes_sent, "seconds": time.perf_counter() - start,
                      "tensors": len(arrays)}  # fmt: skip
        file_bytes = len(data)
        del pack, arrays, data
        del server.files["/big.bpk"]  # only one pack in memory at a time
        every_vs_get = numpy_against_get(server, repeat)
    finally:
        server.close()
    return {"file_bytes": file_bytes, "open": opened, "one_4mib_tensor": one, "numpy_all": everything, "numpy_vs_get": every_vs_get}


def numpy_against_get(server, repeat: int) -> dict:
    """Every tensor of a 256 MiB pack (64 of 4 MiB) with ``load(url).numpy()`` against one plain
    GET of the file through the same HTTP client (fsspec's ``cat_file``), interleaved; wall seconds."""
    import fsspec

    import burnpack

    rng = np.random.default_rng(3)
    arrays = {f"t{i:02d}": rng.standard_normal(1 << 20, dtype=np.float32) for i in range(64)}
    server.files["/256.bpk"] = data = burnpack.save_bytes(arrays)
    url = server.url("/256.bpk")
    fs = fsspec.filesystem("http")

    def ours() -> None:
        with burnpack.load(url) as pack:
            assert len(pack.numpy()) == 64

    def get() -> None:
        assert len(fs.cat_file(url)) == len(data)

    runs: dict[str, Any] = {"burnpack_runs": [], "get_runs": []}
    for _ in range(repeat):
        server.reset_counts()
        runs["burnpack_runs"].append(seconds_of(ours))
        runs["burnpack_requests"] = len(server.requests)  # HEAD, the first 64 KiB, the blocks
        runs["get_runs"].append(seconds_of(get))
    runs["file_bytes"] = len(data)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=2.0, help="size of the sharded model")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the sharded conversion and of each copy")
    parser.add_argument("--torch-repeat", type=int, default=15, help="runs of each torch loading measure (tens of ms each)")
    parser.add_argument("--remote-repeat", type=int, default=7, help="runs of the 256 MiB remote read and of its plain GET")
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temporary directory)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", choices=("sharded", "torch", "remote"), action="append")
    args = parser.parse_args()
    parts = args.only or ["sharded", "torch", "remote"]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        results: dict = environment(tmp, "safetensors", "cbor2", "torch")
        if "sharded" in parts:
            results["sharded"] = sharded(tmp, args.gib, args.repeat)
            print(json.dumps({k: v for k, v in results["sharded"].items() if k != "runs"}), flush=True)
        if "torch" in parts:
            results["torch"] = torch_loading(tmp, args.torch_repeat)
            print(json.dumps({k: statistics.median(v["burnpack_runs"]) / statistics.median(v["safetensors_runs"])
                              for k, v in results["torch"].items() if isinstance(v, dict) and "burnpack_runs" in v}), flush=True)  # fmt: skip
        if "remote" in parts:
            results["remote"] = remote(tmp, args.remote_repeat)
            print(json.dumps(results["remote"]), flush=True)
    save(finish(results), "reach", args.json)


if __name__ == "__main__":
    main()
