"""Differential fuzzing of each compiled kernel against its Python or numpy twin.

CI runs it under AddressSanitizer and UBSan (``benchmarks/sanitize.py`` builds the kernels so and
runs this campaign and the kernels' agreement tests against them): a report there aborts the
process, and the campaign's nonzero exit fails CI.

Targets, one per kernel, each input derived from ``(seed, target, index)`` alone (``--replay``):

- ``skip``: ``_cskip.skip_plain`` against ``_cbor.python_skip_plain`` (random bytes, token soups,
  valid CBOR of every kind, cut and mutated; any depth, scratch and stack);
- ``table``: ``scan_table(blob, compiled=True)`` against ``compiled=False`` (metadata of generated
  packs, mutated and cut, and random bytes);
- ``quant``: ``quant.dequantize(..., compiled=True)`` against ``compiled=False`` bit for bit (every
  covered scheme, random value and scale bytes, NaN and infinite scales, any alignment);
- ``stats``: ``value_stats(..., compiled=True)`` against ``compiled=False`` (every kernel type, edge
  values, one to many bins, any chunk size), and the kernel's two passes on buffers at any
  alignment.

Every fourth input is a *changing* one: the kernel reads a file mapping that a child process keeps
rewriting between two versions of the bytes (another process rewriting a mapped file while the
kernel runs), and ``stats`` also reads a pack whose second pass sees other bytes. There the oracle
is each kernel's invariant (``skip``: a position inside the range and a well-formed stack; ``quant``: a
result of the right shape; ``stats``: counts inside the counts and summing to what the call says
it counted, a result or an ``IoError`` from ``value_stats`` on both paths; ``table``: a mapping
refused, as the scan takes bytes only) — and, under the sanitizers, no report.

    python benchmarks/kernel_fuzz.py --seconds 30 [--seed 1] [--json out.json]
    python benchmarks/kernel_fuzz.py --replay stats:123 [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import math
import mmap
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the checkout's burnpack, as the tests import it
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cbor2
import numpy as np

import burnpack
from burnpack.codec import _cbor
from burnpack.codec._generated.metadata import BoolStore, DType
from burnpack.codec._kernels import KERNELS, load_kernel
from burnpack.core import quant, table
from burnpack.dtypes import numpy_dtype
from burnpack.errors import BurnpackError, IoError
from burnpack import QuantStore, QuantValue, ScaleDtype
from burnpack.quant import parse_scheme
from burnpack.view import stats

TARGETS = ("skip", "table", "quant", "stats")
CHANGING_EVERY = 4
"""Every fourth input of a target is a changing one."""
CALLS_PER_CHANGING = 8
"""Kernel calls per changing input (the flipping process runs all the while)."""

_FLIPPER = r"""
import mmap, os, random, sys
parent, path, size, *versions = sys.argv[1:]
size = int(size)
data = [open(p, "rb").read() for p in versions]
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), size)
    rng = random.Random(0)
    print("ready", flush=True)
    while os.getppid() == int(parent):  # ends with its parent, also one that crashed
        for _ in range(4096):
            v = data[rng.randrange(len(data))]
            i = rng.randrange(size)
            j = min(size, i + rng.choice((1, 3, 8, 64, size)))
            m[i:j] = v[i:j]
"""


class ChangingFile:
    """A shared file mapping that a child process keeps rewriting, a random stretch at a time,
    from one of ``versions`` (byte strings of one length): what a kernel meets when another
    process rewrites a mapped file while it reads it. ``view`` is this process's mapping."""

    def __init__(self, versions: list[bytes]) -> None:
        size = len(versions[0])
        if size == 0 or any(len(v) != size for v in versions):
            raise ValueError("versions must be non-empty byte strings of one length")
        self._folder = tempfile.mkdtemp(prefix="burnpack-changing-")
        path = os.path.join(self._folder, "shared")
        paths = []
        for k, version in enumerate(versions):
            paths.append(os.path.join(self._folder, f"v{k}"))
            Path(paths[-1]).write_bytes(version)
        Path(path).write_bytes(versions[0])
        self._file = open(path, "r+b")  # noqa: SIM115 - closed in close()
        self._map = mmap.mmap(self._file.fileno(), size)
        self.view = memoryview(self._map)
        self._child = subprocess.Popen([sys.executable, "-c", _FLIPPER, str(os.getpid()), path, str(size), *paths], stdout=subprocess.PIPE)
        assert self._child.stdout is not None and self._child.stdout.readline() == b"ready\n"

    def close(self) -> None:
        self._child.kill()
        self._child.wait()
        if self._child.stdout is not None:
            self._child.stdout.close()
        try:
            self.view.release()
            self._map.close()
        except BufferError:  # an array still views it: unmapped when that is freed
            pass
        self._file.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> ChangingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Failure(Exception):
    """The kernel and its twin disagree, or the kernel broke its invariant."""


def _aligned_at(data: bytes, offset: int) -> memoryview:
    """``data`` as a buffer starting ``offset`` bytes past an aligned address."""
    return memoryview(bytearray(offset) + data)[offset:]


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "value", call()
    except Exception as exc:  # noqa: BLE001 - the type is the outcome compared
        return "raised", type(exc).__name__


# -- skip -------------------------------------------------------------------------------------------
_TOKENS = [bytes.fromhex(t) for t in (
    "00 17 18ff 1903e8 1a00010000 1b0000000100000000 20 3801 39ffff 3bffffffffffffffff f4 f5 f6 f7 f0 f818 f93c00 "
    "fa3f8ccccd fb3ff0000000000000 fc ff 40 4100 5803aabbcc 60 6161 62c3a9 62c3 63e282ac 63eda080 62c0af 64f4908080 "
    "6180 780161 7801 5bffffffffffffffff 80 81 82 9803 a0 a1 a2 9f bf 5f 7f 9b0000000100000000 c6 d903e8 c2 c3 c24101 d8 1c"
).split()]


def _cbor_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([0, 1, 23, 24, 255, 256, -1, -25, 2**64 - 1, -(2**64), 2**70, rng.getrandbits(40)])
    if kind == 1:
        return rng.choice([0.0, -0.0, 1.5, math.inf, math.nan, 1e300, 3.4e38])
    if kind == 2:
        return "".join(rng.choice("aé€😀\x00") for _ in range(rng.randrange(70)))
    if kind == 3:
        return rng.randbytes(rng.randrange(70))
    if kind == 4:
        return rng.choice([True, False, None, cbor2.undefined])
    if kind == 5:
        return cbor2.CBORSimpleValue(rng.choice([0, 19, 32, 255]))
    if kind == 6:
        return [_cbor_value(rng, depth + 1) for _ in range(rng.randrange(6))]
    if kind == 7:
        return {str(k): _cbor_value(rng, depth + 1) for k in range(rng.randrange(5))}
    return cbor2.CBORTag(rng.choice([0, 1, 6, 1000, 55799]), _cbor_value(rng, depth + 1))


def _mutated(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(4)):
        if not out:
            break
        choice = rng.randrange(4)
        i = rng.randrange(len(out))
        if choice == 0:
            out[i] = rng.randrange(256)
        elif choice == 1:
            del out[i:]
        elif choice == 2:
            out[i:i] = rng.randbytes(rng.randrange(1, 9))
        else:
            del out[i : i + rng.randrange(1, 9)]
    return bytes(out)


def _skip_input(rng: random.Random) -> tuple[bytes, int, int, int, list[int]]:
    style = rng.randrange(3)
    if style == 0:
        buf = rng.randbytes(rng.randrange(200))
    elif style == 1:
        buf = b"".join(rng.choice(_TOKENS) for _ in range(rng.randrange(60)))
    else:
        buf = _mutated(rng, cbor2.dumps([_cbor_value(rng) for _ in range(rng.randrange(1, 8))]))
    depth = rng.choice([0, 1, 2, 5, 128, 300])
    scratch = rng.choice([0, 5, 64, 1 << 20])
    stack = [rng.choice([1, 2, 5, -2, -3, 2**63, 2**64 - 1, 2 * (2**64 - 1)]) for _ in range(rng.randrange(1, 4))]
    return buf, len(buf), depth, scratch, stack


def check_skip(rng: random.Random, changing: bool) -> None:
    kernel = load_kernel("burnpack.codec._cskip")
    buf, end, depth, scratch, stack = _skip_input(rng)
    if not changing:
        expected = _outcome(lambda: (_cbor.python_skip_plain(buf, 0, end, depth, scratch, twin := list(stack)), twin))
        got = _outcome(lambda: (kernel.skip_plain(buf, 0, end, depth, scratch, mine := list(stack)), mine))
        if got != expected:
            raise Failure(f"skip_plain: kernel {got!r}, Python {expected!r}")
        return
    if not buf:
        return
    other = bytes(rng.randrange(256) for _ in buf)
    with ChangingFile([buf, other]) as shared:
        for _ in range(CALLS_PER_CHANGING):
            mine = list(stack)
            try:
                pos, left, done = kernel.skip_plain(shared.view, 0, end, depth, scratch, mine)
            except (ValueError, OverflowError, TypeError):
                continue  # a stack entry outside what the walk takes: refused before any byte is read
            if not 0 <= pos <= end or not 0 <= left <= depth + len(stack) or not all(type(e) is int for e in mine):
                raise Failure(f"skip_plain on changing bytes: pos {pos}, depth {left}, stack {mine!r}")


# -- table ------------------------------------------------------------------------------------------
_DTYPES = [DType.F32, DType.F16, DType.BF16, DType.I64, DType.U8, DType.Bool(BoolStore.U8), DType.F64, DType.I8]


def _names(rng: random.Random, count: int) -> list[str]:
    alphabet = rng.choice(["abc.", "abcdefghij.0123456789_", "aé€😀.\x00\x7f", "\xa3\xa4x"])
    names = {"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(count)}
    return sorted(names)


def _table_blob(rng: random.Random) -> bytes:
    if rng.randrange(8) == 0:
        return rng.randbytes(rng.randrange(300))
    tensors = []
    for name in _names(rng, rng.randrange(1, 40)):
        dtype = rng.choice([np.float32, np.float16, np.int64, np.uint8, np.bool_])
        shape = tuple(rng.randrange(4) for _ in range(rng.randrange(4)))
        tensors.append(burnpack.Tensor.from_numpy(name, np.zeros(shape, dtype), param_id=rng.choice([None, None, rng.getrandbits(64)])))
    data = burnpack.Writer(tensors, metadata={"k": "v"} if rng.randrange(2) else {}).to_bytes()
    blob = data[10 : 10 + int.from_bytes(data[6:10], "little")]
    return _mutated(rng, blob) if rng.randrange(2) else blob


def _table_snapshot(meta: Any) -> Any:
    if meta is None:
        return None
    tensors = meta.tensors
    return meta._replace(tensors=None), list(tensors.items())


def check_table(rng: random.Random, changing: bool) -> None:
    blob = _table_blob(rng)
    if not changing:
        got = _outcome(lambda: _table_snapshot(table.scan_table(blob, compiled=True)))
        expected = _outcome(lambda: _table_snapshot(table.scan_table(blob, compiled=False)))
        if got != expected:
            raise Failure(f"scan_table: kernel {got!r}, regex scan {expected!r}")
        return
    if not blob:
        return
    with ChangingFile([blob, _mutated(rng, blob).ljust(len(blob), b"\0")[: len(blob)]]) as shared:
        try:
            table._ctable.scan_entries(shared.view, 0, 1, table._KERNEL_SPEC)
        except TypeError:
            return
        raise Failure("scan_entries read a buffer that can change under it (it takes bytes only)")


# -- quant ------------------------------------------------------------------------------------------
_SCALE_BITS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF, 0x00000001, 0x3F800000]


def _quant_input(rng: random.Random) -> tuple[bytes, Any, tuple[int, ...]]:
    value = rng.choice([QuantValue.Q8S, QuantValue.Q4S, QuantValue.Q2S, QuantValue.Q8F, QuantValue.Q4F, QuantValue.Q2F])
    store = rng.choice([QuantStore.Native, QuantStore.PackedU32(0)])
    shape = tuple(rng.randrange(1, 40) for _ in range(rng.randrange(0, 4)))
    while math.prod(shape) > 4000:
        shape = shape[1:]
    block = None if rng.randrange(3) == 0 else [rng.randrange(1, 40) for _ in range(rng.randrange(1, 3))]
    scale_dtype = rng.choice([ScaleDtype.F32, ScaleDtype.F16, ScaleDtype.BF16])
    scheme = parse_scheme(value, block=block, scale_dtype=scale_dtype, store=store)
    layout = quant._layout(scheme, shape)
    width = quant.SCALE_SIZE[scale_dtype]
    scales = b"".join(
        (struct.pack("<I", rng.choice(_SCALE_BITS))[4 - width :] if rng.randrange(2) else rng.randbytes(width))
        for _ in range(layout.scale_bytes // width)
    )
    payload = rng.randbytes(layout.value_bytes) + scales + rng.randbytes(layout.global_bytes)
    return payload, scheme, shape


def check_quant(rng: random.Random, changing: bool) -> None:
    payload, scheme, shape = _quant_input(rng)
    if not quant.kernel_covers(scheme, shape):
        return
    if not changing:
        data = _aligned_at(payload, rng.randrange(8))
        got = _outcome(lambda: quant.dequantize(data, scheme, shape, compiled=True).tobytes())
        expected = _outcome(lambda: quant.dequantize(payload, scheme, shape, compiled=False).tobytes())
        if got != expected:
            raise Failure(f"dequantize {scheme} {shape}: kernel {got!r:.200}, numpy {expected!r:.200}")
        return
    with ChangingFile([payload, rng.randbytes(len(payload))]) as shared:
        for _ in range(CALLS_PER_CHANGING):
            for compiled in (True, False):
                out = quant.dequantize(shared.view, scheme, shape, compiled=compiled)
                if out.shape != shape or out.dtype != np.float32:
                    raise Failure(f"dequantize on changing bytes gave {out.dtype} {out.shape}")


# -- stats ------------------------------------------------------------------------------------------
def _stats_values(rng: random.Random) -> np.ndarray:
    dtype = numpy_dtype(getattr(DType, rng.choice(["F32", "F64", "F16", "BF16", "I8", "U8", "I16", "U16", "I32", "U32", "I64", "U64"])))
    n = rng.choice([0, 1, 7, 128, 129, 1000, 5000])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = [info.min, info.max, 0, 1, int(info.min) + 1, int(info.max) - 1]
        values = [rng.choice(pool) if rng.randrange(3) == 0 else rng.randrange(int(info.min), int(info.max) + 1) for _ in range(n)]
        return np.array(values, dtype)
    big = float(np.finfo(np.float32).max) if dtype.itemsize <= 4 else float(np.finfo(np.float64).max)
    pool = [math.nan, math.inf, -math.inf, 0.0, -0.0, big, -big, 5e-324, 1e-40, 1.0, -1.0]
    scale = rng.choice([1.0, 1e-30, 1e30])
    with np.errstate(over="ignore"):
        return np.array([rng.choice(pool) if rng.randrange(4) == 0 else rng.uniform(-4, 4) * scale for _ in range(n)]).astype(dtype)


def _stats_agree(by_kernel: dict | None, by_numpy: dict | None) -> bool:
    if by_kernel is None or by_numpy is None:
        return by_kernel is by_numpy
    exact = ("count", "finite", "zeros", "nan", "posinf", "neginf", "min", "max", "hist", "edges", "no_histogram")
    if any(by_kernel.get(k) != by_numpy.get(k) for k in exact):
        return False
    for key in ("mean", "std"):
        a, b = by_kernel[key], by_numpy[key]
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            if repr(a) != repr(b):
                return False
        elif not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12 * max(abs(by_numpy["min"]), abs(by_numpy["max"]))):
            return False
    return True


class ChangingAnswers:
    """A pack source serving ``first``, except that a range asked for again is answered from
    ``second``: a server answering the same range differently, a file rewritten between passes."""

    def __init__(self, first: bytes, second: bytes) -> None:
        self.size, self._first, self._second, self._seen = len(first), first, second, set()

    def read(self, offset: int, length: int) -> bytes:
        data = self._second if (offset, length) in self._seen else self._first
        self._seen.add((offset, length))
        return data[offset : offset + length]

    def buffer(self) -> None:
        return None


def check_stats(rng: random.Random, changing: bool) -> None:
    values = _stats_values(rng)
    bins = rng.choice([1, 2, 7, 32, 64, 65, 300])
    chunk = rng.choice([1, 3, 64, 129, 1 << 16])
    simd = stats.SIMD
    try:
        stats.SIMD = bool(rng.randrange(2))
        if not changing:
            got = stats.value_stats(stats._Array(values), bins=bins, chunk_elements=chunk, compiled=True)
            expected = stats.value_stats(stats._Array(values), bins=bins, chunk_elements=chunk, compiled=False)
            if not _stats_agree(got, expected):
                raise Failure(f"value_stats of {values.dtype}[{values.size}], {bins} bins: kernel {got!r:.300}, numpy {expected!r:.300}")
            _check_unaligned(rng, values)
            return
        with np.errstate(all="ignore"):
            other = _stats_values(rng).astype(values.dtype)[: values.size]
        if other.size != values.size or not values.size:
            return
        first, second = (burnpack.save_bytes({"t": v}) for v in (values, other))
        for compiled in (True, False):
            with burnpack.load(ChangingAnswers(first, second)) as pack:
                try:
                    stats.value_stats(pack["t"], bins=bins, chunk_elements=chunk, compiled=compiled)
                except IoError:
                    pass
        _check_changing_histogram(rng, values, other)
    finally:
        stats.SIMD = simd


def _check_unaligned(rng: random.Random, values: np.ndarray) -> None:
    kind = stats._kernel_kind(values.dtype)
    finite = values.astype(np.float64)
    finite = finite[np.isfinite(finite)]
    if kind is None or not finite.size:
        return
    shifted = _aligned_at(values.tobytes(), rng.randrange(1, 8))
    if repr(stats._cstats.moments(shifted, *kind, stats.SIMD)) != repr(stats._cstats.moments(values, *kind, stats.SIMD)):
        raise Failure(f"moments of {values.dtype} differ at another alignment")


def _check_changing_histogram(rng: random.Random, values: np.ndarray, other: np.ndarray) -> None:
    kind = stats._kernel_kind(values.dtype)
    finite = values.astype(np.float64)
    finite = finite[np.isfinite(finite)]
    if kind is None or not finite.size:
        return
    low, high = float(finite.min()), float(finite.max())
    if not low < high or not math.isfinite(high - low):
        return
    bins = rng.choice([1, 7, 32, 64])
    edges = np.histogram_bin_edges(np.empty(0), bins, range=(low, high))
    with ChangingFile([values.tobytes(), other.tobytes()]) as shared:
        data = np.frombuffer(shared.view, values.dtype)
        for _ in range(CALLS_PER_CHANGING):
            stats._cstats.moments(data, *kind, stats.SIMD)
            guarded = np.zeros(bins + 2, np.int64)
            counted = stats._cstats.histogram(data, *kind, low, high, bins / (high - low), 1e-6, edges, guarded[1:-1], stats.SIMD)
            if guarded[0] or guarded[-1] or int(guarded.sum()) != counted or not 0 <= counted <= values.size:
                raise Failure(f"histogram on changing bytes: counted {counted}, counts {guarded.tolist()}")
        del data


CHECKS: dict[str, Callable[[random.Random, bool], None]] = {
    "skip": check_skip, "table": check_table, "quant": check_quant, "stats": check_stats,
}


def run_one(seed: int, target: str, index: int) -> str | None:
    """Input ``index`` of ``target``: None when the kernel and its twin agree, else what differs."""
    rng = random.Random(f"{seed}:{target}:{index}")
    try:
        CHECKS[target](rng, index % CHANGING_EVERY == CHANGING_EVERY - 1)
    except Failure as exc:
        return str(exc)
    except BurnpackError:
        return None  # both paths refused it the same way (or a changing input's honest refusal)
    except Exception:  # noqa: BLE001 - any other exception is a finding
        return traceback.format_exc(limit=6)
    return None


def campaign(seconds: float, seed: int, targets: tuple[str, ...] = TARGETS) -> dict[str, Any]:
    missing = [name for name in KERNELS if load_kernel(name) is None]
    if missing:
        raise SystemExit(f"kernels not built (BURNPACK_BUILD_KERNELS=1 pip install -e .): {', '.join(missing)}")
    started = time.monotonic()
    counts = dict.fromkeys(targets, 0)
    failures = []
    for t, target in enumerate(targets):
        until = started + seconds * (t + 1) / len(targets)
        while time.monotonic() < until:
            index = counts[target]
            found = run_one(seed, target, index)
            counts[target] += 1
            if found is not None:
                failures.append({"target": target, "index": index, "failure": found})
    return {
        "seed": seed,
        "seconds": seconds,
        "inputs": counts,
        "changing_inputs": {t: n // CHANGING_EVERY for t, n in counts.items()},
        "failures": failures,
        "kernels": sorted(KERNELS),
        "wall_s": round(time.monotonic() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="total time, shared evenly by the targets")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target", action="append", choices=TARGETS, help="only these targets (default: all)")
    parser.add_argument("--replay", metavar="TARGET:INDEX", help="run one input again and print what it found")
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    if args.replay:
        target, _, index = args.replay.partition(":")
        if target not in CHECKS or not index.isdigit():
            parser.error("--replay takes TARGET:INDEX, e.g. stats:12")
        found = run_one(args.seed, target, int(index))
        print(found or "agree")
        return 1 if found else 0
    result = campaign(args.seconds, args.seed, tuple(args.target or TARGETS))
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print(json.dumps({k: result[k] for k in ("inputs", "wall_s")}), f"failures: {len(result['failures'])}")
    for failure in result["failures"][:10]:
        print(f"{failure['target']}:{failure['index']}: {failure['failure']}", file=sys.stderr)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
