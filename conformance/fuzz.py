"""Fuzzing: the round-trip and robustness properties, driven by atheris or Hypothesis.

Properties, checked on every input:

* **files** (any bytes): burnpack's reader never raises anything but a ``BurnpackError`` and
  answers within a time bound, at both levels; what it reports equals what the expectation rules
  (``conformance.rules``) derive; its two CBOR decoders (the cbor2 fast path and the exact
  ciborium emulation) agree; an accepted file re-written canonically reads back to the same
  content (read → write → read).
* **specs** (valid writer input, Hypothesis only): this package's spec-derived writer and
  burnpack's writer produce the same bytes; the strict reader accepts them; reading them back
  and writing again is the identity (write → read → write).

``fuzz(seconds=N)`` uses atheris (coverage-guided, seeded with the corpus) when it is installed,
Hypothesis otherwise; it prints how many inputs it tried and saves each failing input as a new
vector (a corpus directory that ``burnpack-conformance run --vectors DIR`` reads).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import burnpack
from burnpack.errors import BurnpackError, LegacyFormatWarning
from burnpack.core.metadata import decode_metadata, decode_metadata_exact

from . import rules
from .corpus import FORMAT, load_vectors
from .model import HEADER_SIZE, MAX_METADATA_SIZE, PackSpec, header
from .reference import decode_content
from .reference import dump as reference_dump
from .runner import Crash, ExternalReader, check_reader_result

TIME_BOUND = 5.0  # seconds any single read may take (inputs are at most a few MB)


# -- properties --------------------------------------------------------------------------------------
def _decoders_agree(data: bytes) -> str | None:
    if len(data) < HEADER_SIZE or data[:4] != b"NRUB":
        return None
    m = int.from_bytes(data[6:10], "little")
    if m > MAX_METADATA_SIZE or len(data) < HEADER_SIZE + m:
        return None
    blob = data[HEADER_SIZE : HEADER_SIZE + m]
    results = []
    for decode in (decode_metadata, decode_metadata_exact):
        try:
            results.append(("ok", decode(blob)))
        except BurnpackError as exc:
            results.append(("error", exc.variant))
        except Exception as exc:  # noqa: BLE001
            return f"{decode.__name__} raised {type(exc).__name__}: {exc}"
    if results[0] != results[1]:
        return f"fast and exact CBOR decoders disagree: {str(results[0])[:200]} vs {str(results[1])[:200]}"
    return None


def _rewrite_round_trip(data: bytes) -> str | None:
    """An accepted file, re-written canonically in its data order, reads back the same."""
    from burnpack.core.spec import bytes_from_spec, spec_from_pack

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyFormatWarning)
        try:
            with burnpack.load(data) as pack:
                spec = spec_from_pack(pack)
                before = reference_dump(data)
        except BurnpackError:
            return None
        try:
            rewritten = bytes_from_spec(spec)
        except BurnpackError:
            return None  # e.g. a length that does not match the shape: the writer refuses, as Burn's does
        after = reference_dump(rewritten, "strict")
        if not after["ok"] and _beyond_burns_api(rewritten):
            # Burn's writer writes such content as it was read; only strict mode refuses it. The
            # rewrite must still be canonical: rewriting it again gives the same bytes.
            after = reference_dump(rewritten)
            with burnpack.load(rewritten) as again:
                if bytes_from_spec(spec_from_pack(again)) != rewritten:
                    return "rewriting a canonical rewrite changed its bytes"
    if not after["ok"]:
        return f"canonical rewrite of an accepted file is not strictly valid: {after['error']}"
    keys = ("name", "dtype", "shape", "param_id", "byte_len", "sha256")
    strip = lambda d: ([{k: t[k] for k in keys} for t in d["tensors"]], d["metadata"], d["scalars"])  # noqa: E731
    if strip(before) != strip(after):
        return "read → write → read changed the content"
    return None


def _beyond_burns_api(data: bytes) -> bool:
    """Whether a tensor's dtype or element count is one no Burn API constructs (a QFloat block size
    outside ``BlockSize::new``'s form, a count of 2^64 or more) though Burn reads and writes it."""
    import math

    from burnpack.codec._cbor import U64_MAX
    from burnpack.dtypes import element_size, unconstructible

    with burnpack.load(data) as pack:
        return any(unconstructible(d.dtype) is not None or (element_size(d.dtype) or 0) * math.prod(d.shape) > U64_MAX
                   for d in pack.descriptors.values())


def check_file(data: bytes, reader: ExternalReader | None = None) -> list[str]:
    """Every property of an arbitrary input file; returns the problems found."""
    problems: list[str] = []
    try:
        exp = rules.expect(data, decode_content)
    except Exception as exc:  # noqa: BLE001 - the oracle's decoder is burnpack's: a crash is a finding
        return [f"decoding the metadata raised {type(exc).__name__}: {exc} ({_where(exc)})"]
    for level in ("compatible", "strict"):
        start = time.perf_counter()
        try:
            got = reference_dump(data, level)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"[{level}] reader raised {type(exc).__name__}, not a BurnpackError: {exc} ({_where(exc)})")
            continue
        elapsed = time.perf_counter() - start
        if elapsed > TIME_BOUND:
            problems.append(f"[{level}] reading took {elapsed:.1f} s")
        ok, message, _ = check_reader_result(exp.level(level), exp.dump, got)
        if not ok:
            problems.append(f"[{level}] burnpack disagrees with the rules: {message}")
    problem = _decoders_agree(data)
    if problem:
        problems.append(problem)
    if exp.compatible.outcome == rules.ACCEPT:
        try:
            problem = _rewrite_round_trip(data)
        except Exception as exc:  # noqa: BLE001
            problem = f"read → write → read raised {type(exc).__name__}: {exc} ({_where(exc)})"
        if problem:
            problems.append(problem)
    if reader is not None:
        with tempfile.NamedTemporaryFile(suffix=".bpk") as f:
            f.write(data)
            f.flush()
            for level in ("compatible", "strict"):
                try:
                    got = reader(Path(f.name), level)
                except Crash as exc:
                    problems.append(f"[{level}] external reader {exc.status}: {exc}")
                    continue
                ok, message, _ = check_reader_result(exp.level(level), exp.dump, got)
                if not ok:
                    problems.append(f"[{level}] external reader: {message}")
    return problems


def check_spec(spec: PackSpec) -> list[str]:
    """Round-trip properties of a valid writer input."""
    from burnpack.core.spec import bytes_from_spec, spec_from_pack

    problems = []
    expected = spec.build()
    try:
        written = bytes_from_spec(spec.to_json())
    except Exception as exc:  # noqa: BLE001
        return [f"burnpack's writer refused a valid spec: {type(exc).__name__}: {exc}"]
    if written != expected:
        at = next((i for i, (a, b) in enumerate(zip(written, expected)) if a != b), min(len(written), len(expected)))
        problems.append(f"burnpack's writer differs from the spec at byte {at}")
    try:
        with burnpack.load(written, strict=True) as pack:
            again = bytes_from_spec(spec_from_pack(pack))
    except Exception as exc:  # noqa: BLE001
        return problems + [f"strict reader rejected the writer's output: {type(exc).__name__}: {exc}"]
    if again != written:
        problems.append("write → read → write is not the identity")
    problems += [p for p in check_file(written) if p not in problems]
    return problems


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"


# -- findings ------------------------------------------------------------------------------------------
class Findings:
    """Failing inputs, saved as a corpus directory (manifest + reader vectors)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.entries: dict[str, dict] = {}

    def save(self, data: bytes, problems: list[str], spec: PackSpec | None = None) -> str:
        digest = hashlib.sha256(data).hexdigest()
        id = f"fuzz/{digest[:16]}"
        if id in self.entries:
            return id
        rel = f"reader/{id}"
        (self.root / "reader" / "fuzz").mkdir(parents=True, exist_ok=True)
        (self.root / f"{rel}.bpk").write_bytes(data)
        try:
            exp = rules.expect(data, decode_content)
            expect = {"compatible": exp.compatible.to_json(), "strict": exp.strict.to_json()}
            dump, review = exp.dump, False
        except Exception:  # noqa: BLE001 - the oracle itself failed: a human decides
            expect = {"compatible": {"outcome": "reject_open", "error": ["MetadataDeserializationError"]},
                      "strict": {"outcome": "reject_open", "error": ["MetadataDeserializationError"]}}
            dump, review = None, True
        side = {"id": id, "category": "fuzz", "description": "; ".join(problems)[:500], "expect": expect, "dump": dump,
                "needs_review": review, "problems": problems}
        if spec is not None:
            side["writer_spec"] = spec.to_json()
        (self.root / f"{rel}.json").write_text(json.dumps(side, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        self.entries[id] = {"id": id, "kind": "reader", "category": "fuzz", "description": side["description"],
                            "file": f"{rel}.bpk", "expected": f"{rel}.json", "size": len(data), "sha256": digest,
                            "compatible": expect["compatible"]["outcome"], "strict": expect["strict"]["outcome"]}
        manifest = {"format": FORMAT, "source": {"fuzz": "burnpack-conformance fuzz"}, "counts": {"reader": len(self.entries), "writer": 0},
                    "vectors": list(self.entries.values())}
        (self.root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return id


# -- engines -------------------------------------------------------------------------------------------
class Stats:
    def __init__(self, seconds: float) -> None:
        self.start = time.monotonic()
        self.deadline = self.start + seconds
        self.counts: Counter[str] = Counter()
        self.failures: list[tuple[str, list[str]]] = []
        self.last_report = self.start

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def tick(self, kind: str) -> None:
        self.counts[kind] += 1
        now = time.monotonic()
        if now - self.last_report >= 30:
            self.last_report = now
            print(f"fuzz: {now - self.start:.0f} s, {self.total} inputs, {len(self.failures)} failing", file=sys.stderr, flush=True)

    def done(self) -> bool:
        return time.monotonic() >= self.deadline

    def record(self, engine: str, seed: int | None, seconds: float, started: str, loadavg_before: list[float]) -> dict[str, Any]:
        """The run as a results file keeps it: what ran, on what, how many inputs, what failed."""
        import platform
        import subprocess
        from importlib.metadata import version

        def git(*args: str) -> str:
            try:
                return subprocess.run(["git", "-C", str(Path(__file__).parent), *args], capture_output=True, text=True,
                                      check=True).stdout.strip()
            except (OSError, subprocess.CalledProcessError):
                return "unknown"

        return {
            "tool": "burnpack-conformance fuzz", "engine": engine, "seed": seed, "started_utc": started,
            "commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "seconds_requested": seconds, "wall_seconds": round(time.monotonic() - self.start, 1),
            "burnpack": version("burnpack"), "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_before": loadavg_before, "loadavg_after": list(os.getloadavg()),
            "inputs": self.total, "inputs_by_kind": dict(sorted(self.counts.items())),
            "failures": [{"vector": id, "problems": problems} for id, problems in self.failures],
        }

    def summary(self, engine: str) -> str:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (f"fuzz ({engine}): {self.total} inputs tried in {time.monotonic() - self.start:.0f} s ({parts}); "
                f"{len(self.failures)} failing input(s)")


def _property(stats: Stats, kind: str, check: Callable[[Any], list[str]], failing: dict[str, Any]) -> Callable[[Any], None]:
    def prop(value: Any) -> None:
        if stats.done() and "value" not in failing:
            return  # time is up: let the batch finish without doing work (shrinking still runs)
        stats.tick(kind)
        problems = check(value)
        if problems:
            failing["value"], failing["problems"] = value, problems
            raise AssertionError("; ".join(problems))

    return prop


def _run_hypothesis(
    stats: Stats, findings: Findings, reader: ExternalReader | None, seed: int | None, max_examples: int | None,
    home: Path | None = None,
) -> None:  # fmt: skip
    """Hypothesis keeps its example database and caches in ``home`` when given, else in a
    temporary directory: never in the current directory (its default) unless asked."""
    from hypothesis.configuration import set_hypothesis_home_dir

    with tempfile.TemporaryDirectory(prefix="burnpack-fuzz-") as scratch:
        set_hypothesis_home_dir(home if home is not None else scratch)
        try:
            _hypothesis_batches(stats, findings, reader, seed, max_examples, home)
        finally:
            set_hypothesis_home_dir(None)


def _hypothesis_batches(
    stats: Stats, findings: Findings, reader: ExternalReader | None, seed: int | None, max_examples: int | None,
    home: Path | None,
) -> None:  # fmt: skip
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis.database import DirectoryBasedExampleDatabase

    database = DirectoryBasedExampleDatabase(home / "examples") if home is not None else None

    from . import strategies as bst

    checks: list[tuple[str, Any, Callable[[Any], list[str]]]] = [
        ("spec", bst.pack_specs(), check_spec),
        ("mutated", bst.mutated_files(), lambda d: check_file(d, reader)),
        ("random", bst.random_files(), lambda d: check_file(d, reader)),
        ("hostile", bst.hostile_files(), lambda d: check_file(d, reader)),
    ]
    seen_problems: set[str] = set()
    batch = 0
    while not stats.done() and (max_examples is None or stats.total < max_examples):
        for kind, strategy, check in checks:
            if stats.done() or (max_examples is not None and stats.total >= max_examples):
                break
            failing: dict[str, Any] = {}
            prop = _property(stats, kind, check, failing)
            test = settings(max_examples=50, deadline=None, database=database, derandomize=False, print_blob=False,
                            phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))(given(strategy)(prop))
            if seed is not None:
                test = hseed(seed + batch)(test)
            batch += 1
            try:
                test()
            except AssertionError:
                pass
            except Exception as exc:  # noqa: BLE001 - hypothesis-level trouble (a bug here): stop
                raise RuntimeError(f"fuzz: {kind}: {type(exc).__name__}: {exc}") from exc
            if "value" in failing:
                key = failing["problems"][0].split(":")[0]
                value = failing["value"]
                data, spec = (value.build(), value) if isinstance(value, PackSpec) else (value, None)
                id = findings.save(data, failing["problems"], spec)
                stats.failures.append((id, failing["problems"]))
                if key not in seen_problems:
                    seen_problems.add(key)
                    print(f"fuzz: FAILING input saved as {findings.root / id}.bpk: {failing['problems'][0]}", file=sys.stderr, flush=True)


def _run_atheris(stats: Stats, findings: Findings, reader: ExternalReader | None, seed: int | None,
                 write_record: Callable[[str], None]) -> None:  # pragma: no cover
    import atheris

    seeds = Path(tempfile.mkdtemp(prefix="bpk-fuzz-seeds-"))
    for i, v in enumerate(load_vectors().readers):
        if v.path is not None:
            data = v.data()
            (seeds / f"{i:04d}-file").write_bytes(b"\x00" + data)
            if len(data) >= 10:
                m = int.from_bytes(data[6:10], "little")
                (seeds / f"{i:04d}-blob").write_bytes(b"\x01" + data[10 : 10 + m])

    def one_input(raw: bytes) -> None:
        if stats.done():
            _finish()
        if not raw:
            return
        if raw[0] & 1:  # a metadata item: wrap it in a header and a data section
            blob = raw[1:]
            data = header(len(blob)) + blob + bytes(-(HEADER_SIZE + len(blob)) % 256) + bytes(range(256)) * 2
            kind = "blob"
        else:
            data, kind = raw[1:], "file"
        stats.tick(kind)
        problems = check_file(data, reader)
        if problems:
            id = findings.save(data, problems)
            if not any(f[0] == id for f in stats.failures):
                stats.failures.append((id, problems))
                print(f"fuzz: FAILING input saved as {findings.root / id}.bpk: {problems[0]}", file=sys.stderr, flush=True)

    def _finish() -> None:
        print(stats.summary("atheris, coverage-guided"), flush=True)
        write_record("atheris")
        for id, problems in stats.failures:
            print(f"  {id}: {problems[0]}", flush=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1 if stats.failures else 0)

    atheris.instrument_all()
    argv = [sys.argv[0], "-rss_limit_mb=8192", "-max_len=65536", f"-seed={seed or 0}", str(seeds)]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    _finish()


def fuzz(*, seconds: float = 60.0, engine: str = "auto", save_dir: Path = Path("fuzz-findings"), reader: str | None = None,
         seed: int | None = None, timeout: float = 20.0, max_examples: int | None = None,
         hypothesis_dir: Path | None = None, json_out: Path | None = None) -> int:
    """Run the properties for ``seconds``; 0 when nothing failed, 1 otherwise. ``hypothesis_dir``
    keeps Hypothesis's database (default: none, and its caches in a temporary directory);
    ``json_out`` receives the run's record (``Stats.record``)."""
    from datetime import datetime, timezone

    started, loadavg_before = datetime.now(timezone.utc).isoformat(timespec="seconds"), list(os.getloadavg())

    def write_record(engine: str) -> None:
        if json_out is not None:
            record = stats.record(engine, seed, seconds, started, loadavg_before)
            Path(json_out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")

    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "hypothesis"
    external = ExternalReader(reader, timeout) if reader else None
    stats = Stats(seconds)
    findings = Findings(Path(save_dir))
    warnings.simplefilter("ignore", LegacyFormatWarning)
    print(f"fuzz: engine {engine}, {seconds:g} s, failing inputs go to {save_dir}/", file=sys.stderr, flush=True)
    if engine == "atheris":
        _run_atheris(stats, findings, external, seed, write_record)  # exits the process
    _run_hypothesis(stats, findings, external, seed, max_examples, hypothesis_dir)
    print(stats.summary("hypothesis"), flush=True)
    write_record("hypothesis")
    for id, problems in stats.failures:
        print(f"  {id}: {problems[0]}")
    return 1 if stats.failures else 0
