"""Throughput of the exact (fallback) CBOR decoder, against cbor2's C decoder in the same process.

The exact decoder (``burnpack.core.metadata.decode_metadata_exact``) is what reads metadata the fast
paths refuse (a tag, an indefinite length, a duplicate key anywhere), so hostile or unusual
metadata up to the 100 MiB limit goes through it. Each workload is a metadata item that forces
it; the peer is ``cbor2.loads`` of the same bytes, the two called in turn. Reported: MB/s of each
(best of ``--repeat``) and the ratio exact / cbor2 (the machine-independent figure); every sample
goes to ``benchmarks/results/cbor_decoder-<UTC time>.json`` (or ``--json``).

    python benchmarks/cbor_decoder_bench.py
    python benchmarks/cbor_decoder_bench.py --tree /path/to/other/checkout   # measure another version
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
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
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    record = environment(Path.cwd(), "cbor2")
    sys.path.insert(0, str(args.tree.resolve()))
    import cbor2

    from burnpack.core.metadata import decode_metadata_exact

    record.update(tool="benchmarks/cbor_decoder_bench.py", scale=args.scale, repeat=args.repeat,
                  commit=subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.tree, capture_output=True, text=True).stdout.strip())
    results = record["workloads"] = {}
    for name, blob in workloads(args.scale).items():
        exact_s, peer_s = [], []
        for _ in range(args.repeat):  # interleaved: load changes hit both alike
            exact_s += samples(lambda: decode_metadata_exact(blob), 1)
            peer_s += samples(lambda: cbor2.loads(blob), 1)
        exact, peer = len(blob) / min(exact_s) / 1e6, len(blob) / min(peer_s) / 1e6
        results[name] = {"bytes": len(blob), "exact_mb_s": round(exact, 2), "cbor2_mb_s": round(peer, 2), "ratio": round(exact / peer, 4),
                         "exact_samples_s": exact_s, "cbor2_samples_s": peer_s}
        print(f"{name:40} {len(blob):>9} B  exact {exact:8.2f} MB/s  cbor2 {peer:8.2f} MB/s  ratio {exact / peer:.4f}")
    save(finish(record), "cbor_decoder", args.json)


if __name__ == "__main__":
    main()
