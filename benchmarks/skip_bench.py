"""Skipping ignored metadata: ``burnpack.load`` of a pack whose metadata holds ~20 MB of varied,
non-repeating CBOR under an unknown top-level key (issue 17 §0.3), against ``cbor2.loads`` of the
same metadata bytes and against plain scans of them (``bytes.count``, one regex pass), with the compiled skip
kernel and with the Python walk (``burnpack.codec._cbor.python_skip_plain``).

Mixes (every item drawn at random, so no run repeats one shape):

* ``atoms``: integers of every width, floats of every width, false/true/null, short ASCII text
  and short byte strings.
* ``containers``: small arrays and maps (0-6 entries, up to 3 levels) of those atoms, some tagged.
* ``strings``: text (ASCII and not) and byte strings of 0-300 bytes.

Reported: seconds (best of ``--repeat``) and MB/s of each; raw samples go to
``benchmarks/results/skip.json`` (or ``--json``).

    python benchmarks/skip_bench.py
    python benchmarks/skip_bench.py --mb 2 --repeat 1     # a quick look
"""

from __future__ import annotations

import argparse
import random
import re
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks._results import environment, finish, save  # noqa: E402
from benchmarks.cbor_decoder_bench import samples  # noqa: E402

_WORDS = ["weight", "bias", "layer", "norm", "conv", "é", "ß", "日本", "😀", "x"]


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    for info, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | info]) + n.to_bytes(width, "big")
    raise ValueError(n)


def _atom(rng: random.Random) -> bytes:
    kind = rng.randrange(12)
    if kind == 0:
        return bytes([rng.choice([rng.randrange(24), 0x20 + rng.randrange(24), 0xF4, 0xF5, 0xF6])])
    if kind <= 4:  # integers of 1, 2, 4 or 8 bytes, either sign
        width = 1 << (kind - 1)
        return bytes([rng.choice([0x18, 0x38]) + kind - 1]) + rng.getrandbits(8 * width).to_bytes(width, "big")
    if kind == 5:
        return b"\xf9" + struct.pack(">e", rng.uniform(-100, 100))
    if kind == 6:
        return b"\xfa" + struct.pack(">f", rng.uniform(-1e6, 1e6))
    if kind == 7:
        return b"\xfb" + struct.pack(">d", rng.random())
    if kind <= 9:
        text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz._0123456789") for _ in range(rng.randrange(40)))
        return _head(3, len(text)) + text.encode()
    data = rng.randbytes(rng.randrange(40))
    return _head(2, len(data)) + data


def _container(rng: random.Random, level: int = 0) -> bytes:
    if level < 3 and rng.random() < 0.4:
        entries = rng.randrange(7)
        if rng.random() < 0.5:
            body = _head(4, entries) + b"".join(_container(rng, level + 1) for _ in range(entries))
        else:
            body = _head(5, entries) + b"".join(_atom(rng) + _container(rng, level + 1) for _ in range(entries))
        return (b"\xd9\x03\xe8" if rng.random() < 0.1 else b"") + body
    return _atom(rng)


def _string(rng: random.Random) -> bytes:
    length = rng.randrange(300)
    if rng.random() < 0.5:
        data = rng.randbytes(length)
        return _head(2, len(data)) + data
    text = "".join(rng.choice(_WORDS) for _ in range(length // 4)).encode()
    return _head(3, len(text)) + text


MIXES: dict[str, Callable[[random.Random], bytes]] = {"atoms": _atom, "containers": _container, "strings": _string}


def ignored(mix: str, size: int, seed: int = 17) -> bytes:
    """An array of items of ``mix`` drawn at random, about ``size`` bytes."""
    rng, items, total = random.Random(seed), [], 0
    while total < size:
        item = MIXES[mix](rng)
        items.append(item)
        total += len(item)
    return _head(4, len(items)) + b"".join(items)


def pack_with(junk: bytes) -> tuple[bytes, bytes]:
    """A pack whose metadata is ``{"tensors": {}, "z": junk}``, and its metadata bytes."""
    blob = b"\xa2\x67tensors\xa0\x61z" + junk
    head = b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob
    return head + bytes(-len(head) % 256), blob


_RARE_BYTES = re.compile(rb"[\x1c-\x1e]")
"""Reserved CBOR heads: a regex pass over every byte that finds few matches."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="megabytes of ignored metadata per mix")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python-repeat", type=int, default=2, help="repeats of the (slower) Python walk")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    record = environment(Path.cwd(), "cbor2")
    import cbor2

    import burnpack
    from burnpack.codec import _cbor

    record.update(tool="benchmarks/skip_bench.py", mb=args.mb, repeat=args.repeat, kernel=_cbor.SKIP_KERNEL)
    results = record["mixes"] = {}
    for mix in MIXES:
        pack, blob = pack_with(ignored(mix, int(args.mb * 1e6)))
        burnpack.load(pack)  # opens: the unknown field is skipped
        row: dict[str, object] = {"metadata_bytes": len(blob)}
        timings = {
            "cbor2_loads_s": lambda: samples(lambda: cbor2.loads(blob), args.repeat),
            "bytes_count_s": lambda: samples(lambda: blob.count(b"\x00"), args.repeat),
            "regex_scan_s": lambda: samples(lambda: _RARE_BYTES.findall(blob), args.repeat),
        }
        if _cbor.SKIP_KERNEL == "compiled":
            row["load_kernel_s"] = samples(lambda: burnpack.load(pack), args.repeat)
        for name, run in timings.items():
            row[name] = run()
        with mock.patch.object(_cbor, "skip_plain", _cbor.python_skip_plain):
            row["load_python_s"] = samples(lambda: burnpack.load(pack), args.python_repeat)
        line = [f"{mix:11} {len(blob) / 1e6:6.1f} MB"]
        for name in [key for key in ("load_kernel_s", "load_python_s", "cbor2_loads_s", "bytes_count_s", "regex_scan_s") if key in row]:
            seconds = min(row[name])  # type: ignore[type-var]
            row[name.replace("_s", "_mb_s")] = round(len(blob) / seconds / 1e6, 1)
            line.append(f"{name[:-2]} {seconds:6.3f} s ({len(blob) / seconds / 1e6:6.0f} MB/s)")
        print("  ".join(line), flush=True)
        results[mix] = row
    save(finish(record), "skip", args.json)


if __name__ == "__main__":
    main()
