"""Throughput of the exact (fallback) CBOR decoder, against cbor2's C decoder in the same process.

The exact decoder (``burnpack.core.metadata.decode_metadata_exact``) is what reads metadata the fast
paths refuse (a tag, an indefinite length, a duplicate key anywhere), so hostile or unusual
metadata up to the 100 MiB limit goes through it. Each workload is a metadata item that forces
it; the peer is ``cbor2.loads`` of the same bytes, the two called in turn. Reported: MB/s of each
(best of ``--repeat``) and the ratio exact / cbor2 (the machine-independent figure); every sample
goes to ``benchmarks/results/cbor_decoder.json`` (or ``--json``).

    python benchmarks/cbor_decoder_bench.py
    python benchmarks/cbor_decoder_bench.py --tree /path/to/other/checkout   # measure another version
    python benchmarks/cbor_decoder_bench.py --base /path/to/other/checkout --base-label COMMIT

With ``--base`` the other checkout's exact decoder runs in the same process, interleaved with
this one's and cbor2's, so ``new / base`` (ratio of best times) is a before/after from one run.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks._checkout import import_checkout  # noqa: E402
from benchmarks._results import environment, finish, save  # noqa: E402


def _tag() -> bytes:
    return b"\xd9\x03\xe8\x00"  # tag 1000 around 0: the fast paths refuse tags, Burn ignores them


def workloads(scale: int) -> dict[str, bytes]:
    import cbor2

    tensors = {
        f"encoder.layers.{i}.weight": {"dtype": "F32", "shape": [64, 128], "data_offsets": [i * 32768, (i + 1) * 32768], "param_id": i}
        for i in range(2_000 * scale)
    }
    descriptor_blob = cbor2.dumps({"tensors": tensors})
    metadata = {f"key{i}": "v" * 100 for i in range(2_000 * scale)}
    return {
        "tensor descriptors": b"\xa2" + descriptor_blob[1:] + b"\x61z" + _tag(),
        "metadata strings": b"\xa3" + cbor2.dumps({"tensors": {}})[1:] + cbor2.dumps("metadata") + cbor2.dumps(metadata)[:] + b"\x61z" + _tag(),
        "unknown field: small integers": b"\xa2" + cbor2.dumps({"tensors": {}})[1:] + b"\x61z" + cbor2.dumps([list(range(20))] * (5_000 * scale)),
        "unknown field: nested empty arrays": b"\xa2" + cbor2.dumps({"tensors": {}})[1:] + b"\x61z" + cbor2.dumps([[[]] * 8] * (10_000 * scale)),
        "unknown field: tagged items": b"\xa2" + cbor2.dumps({"tensors": {}})[1:] + b"\x61z" + b"\x9a" + (20_000 * scale).to_bytes(4, "big") + _tag() * (20_000 * scale),
    }


def samples(func, repeat: int) -> list[float]:
    """Seconds of each of ``repeat`` calls."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="checkout whose burnpack is measured")
    parser.add_argument("--scale", type=int, default=10, help="workload size multiplier (10: about 1-3 MB each)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another checkout whose exact decoder runs beside this one's, interleaved")
    parser.add_argument("--base-label", help="what that checkout holds (e.g. a commit), recorded in place of its path")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.base_label and not args.base:
        parser.error("--base-label names the checkout given by --base")
    record = environment(Path.cwd(), "cbor2")
    sys.path.insert(0, str(args.tree.resolve()))
    import cbor2

    from burnpack.core.metadata import decode_metadata_exact

    record.update(tool="benchmarks/cbor_decoder_bench.py", scale=args.scale, repeat=args.repeat,
                  commit=subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.tree, capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        if args.base:
            base = base_decoder(args.base, Path(tmp))
            record["base_checkout"] = args.base_label or str(args.base)
        record["workloads"] = {name: measure(name, blob, decode_metadata_exact, base, cbor2.loads, args.repeat)
                               for name, blob in workloads(args.scale).items()}  # fmt: skip
    save(finish(record), "cbor_decoder", args.json)


def base_decoder(checkout: Path, tmp: Path) -> Callable[[bytes], Any]:
    """The exact decoder of another checkout, imported under another name with its own kernels
    (``_checkout``), wherever its layout keeps it."""
    import_checkout(checkout, "burnpack_base", tmp)
    for module in ("burnpack_base.core.metadata", "burnpack_base.metadata"):
        try:
            return importlib.import_module(module).decode_metadata_exact
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"{checkout} has no decode_metadata_exact")


def measure(name: str, blob: bytes, exact: Callable[[bytes], Any], base: Callable[[bytes], Any] | None, peer: Callable[[bytes], Any], repeat: int) -> dict:
    """MB/s of each decoder (best of ``repeat``, called in turn) and the ratios."""
    runs: dict[str, list[float]] = {"exact_samples_s": [], "cbor2_samples_s": []}
    if base is not None:
        runs["base_samples_s"] = []
    for _ in range(repeat):  # interleaved: load changes hit every decoder alike
        runs["exact_samples_s"] += samples(lambda: exact(blob), 1)
        if base is not None:
            runs["base_samples_s"] += samples(lambda: base(blob), 1)
        runs["cbor2_samples_s"] += samples(lambda: peer(blob), 1)
    mb_s = {key: len(blob) / min(values) / 1e6 for key, values in runs.items()}
    exact_mb_s, peer_mb_s = mb_s["exact_samples_s"], mb_s["cbor2_samples_s"]
    out: dict[str, Any] = {"bytes": len(blob), "exact_mb_s": round(exact_mb_s, 2), "cbor2_mb_s": round(peer_mb_s, 2),
                           "ratio": round(exact_mb_s / peer_mb_s, 4), **runs}  # fmt: skip
    line = f"{name:40} {len(blob):>9} B  exact {exact_mb_s:8.2f} MB/s  cbor2 {peer_mb_s:8.2f} MB/s  ratio {exact_mb_s / peer_mb_s:.4f}"
    if base is not None:
        out["base_mb_s"] = round(mb_s["base_samples_s"], 2)
        out["new_over_base_time"] = round(min(runs["exact_samples_s"]) / min(runs["base_samples_s"]), 4)
        line += f"  base {mb_s['base_samples_s']:8.2f} MB/s  new/base time {out['new_over_base_time']:.4f}"
    print(line)
    return out


if __name__ == "__main__":
    main()
