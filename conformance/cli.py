"""``burnpack-conformance``: export the corpus, run a reader or writer against it, fuzz.

Exit codes: 0 everything passed (or the command succeeded); 1 at least one vector failed,
crashed or hung (``run``), or the fuzzer found a failing input (``fuzz``); 2 usage errors, an
unreadable vectors directory, or a corpus that is out of date (``generate --check``); 130 when
interrupted (Ctrl-C). Output piped into a reader that stops early (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from burnpack import __version__
from burnpack.cli.common import missing_extra
from burnpack.core.progress import finish, progress_for

from . import corpus as corpus_mod
from .corpus import DEFAULT_VECTORS, CorpusError, Vectors, load_vectors
from .crosscheck import cross_check
from .generate import build_corpus
from .runner import ExternalBatchReader, ExternalReader, ExternalWriter, PythonReader, PythonWriter, Report, run_readers, run_writers

def _export(args: argparse.Namespace) -> int:
    out: Path = args.dir
    if out.exists() and any(out.iterdir()) and not args.force:
        print(f"burnpack-conformance: {out} is not empty (use --force to overwrite)", file=sys.stderr)
        return 2
    if out.exists() and args.force:
        for sub in ("reader", "writer"):
            shutil.rmtree(out / sub, ignore_errors=True)
    manifest = corpus_mod.write_corpus(out, include_runtime=not args.skip_runtime)
    (out / "README.md").write_text(corpus_mod.readme_text(manifest), encoding="utf-8")
    for extra in ("PROTOCOL.md", "dump.schema.json", "spec.schema.json"):
        src = corpus_mod.PACKAGE_DIR / extra
        if src.exists():
            shutil.copyfile(src, out / extra)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"exported {manifest['counts']['reader']} reader and {manifest['counts']['writer']} writer vectors "
          f"to {out} ({size / 1e6:.1f} MB)")
    return 0


def _generate(args: argparse.Namespace) -> int:
    if not args.check:
        return regenerate(["--out", str(args.out)])
    import filecmp
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        manifest = corpus_mod.write_corpus(Path(tmp))
        fresh = {p.relative_to(tmp) for p in Path(tmp).rglob("*") if p.is_file()}
        have = {p.relative_to(args.out) for p in args.out.rglob("*") if p.is_file()}
        stale = sorted(str(p) for p in fresh ^ have)
        stale += sorted(str(p) for p in fresh & have if not filecmp.cmp(Path(tmp) / p, args.out / p, shallow=False))
    if _is_package_corpus(args.out) and corpus_mod.README.read_text(encoding="utf-8") != corpus_mod.readme_text(manifest):
        stale.append(f"{corpus_mod.README.name} (its manifest example)")
    if stale:
        print(f"{args.out} is out of date ({len(stale)} files differ, e.g. {stale[:5]}): run burnpack-conformance generate")
        return 2
    print(f"{args.out} is up to date")
    return 0


def _is_package_corpus(out: Path) -> bool:
    """The checked-in corpus, beside VECTORS.md (whose manifest example is rendered from it)."""
    return out.resolve() == DEFAULT_VECTORS.resolve()


def _reference_reader() -> PythonReader:
    from .reference import dump

    return PythonReader(dump, name="burnpack (in-process)")


def _write_reports(report: Report, args: argparse.Namespace) -> None:
    if args.json_report:
        Path(args.json_report).write_text(json.dumps(report.to_json(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if args.junit:
        Path(args.junit).write_text(report.to_junit(), encoding="utf-8")


def _progress(args: argparse.Namespace, total: int) -> tuple[Callable[[Any], None], Callable[[int], None]]:
    """``N/M`` on stderr as vectors finish (a bar on a terminal, lines with ``--progress always``);
    ``--verbose`` adds one line per vector. Results arrive from worker threads."""
    bar = progress_for(args.progress, total, "vectors", show=str, threshold=1)
    lock = threading.Lock()
    done = 0

    def progress(r: Any) -> None:
        nonlocal done
        with lock:
            done += 1
            if args.verbose:
                level = f" [{r.level}]" if r.level else ""
                print(f"[{done}/{total}] {r.status:>7} {r.kind} {r.id}{level}" + (f": {r.message}" if r.message else ""),
                      file=sys.stderr, flush=True)  # fmt: skip
            bar(1)

    return progress, bar


def _chosen(args: argparse.Namespace) -> Vectors:
    """The vectors ``--select`` and ``--exclude`` leave; a glob that matches no vector is an
    error (a typo would otherwise run everything, or nothing, without a word)."""
    vectors = load_vectors(args.vectors)
    for flag, globs in (("--select", args.select), ("--exclude", args.exclude)):
        for glob in globs or ():
            matched = vectors.select([glob])
            if not matched.readers and not matched.writers:
                raise _UnmatchedGlob(f"{flag} {glob!r} matches no vector id or category")
    return vectors.select(args.select or (), args.exclude or ())


class _UnmatchedGlob(ValueError):
    """A ``--select`` or ``--exclude`` glob that matches no vector."""


def _run(args: argparse.Namespace) -> int:
    try:
        vectors = _chosen(args)
    except _UnmatchedGlob as exc:
        print(f"burnpack-conformance: {exc}", file=sys.stderr)
        return 2
    except (CorpusError, OSError, ValueError, KeyError) as exc:
        print(f"burnpack-conformance: cannot load vectors: {exc}", file=sys.stderr)
        return 2
    levels = ("compatible", "strict") if args.level == "both" else (args.level,)
    total = (len(vectors.readers) * len(levels) if args.reader or args.reader_batch or args.self_test else 0) + (
        len(vectors.writers) if args.writer or args.self_test else 0)  # fmt: skip
    progress, bar = _progress(args, total)
    report: Report | None = None
    try:
        if args.reader or args.reader_batch or args.self_test:
            if args.reader:
                reader = ExternalReader(args.reader, args.timeout)
            elif args.reader_batch:
                reader = ExternalBatchReader(args.reader_batch, args.timeout)
            else:
                reader = _reference_reader()
            report = run_readers(vectors, reader, levels=levels, jobs=args.jobs, progress=progress)
        if args.writer or args.self_test:
            if args.writer:
                writer = ExternalWriter(args.writer, args.timeout)
            else:
                from .reference import write

                writer = PythonWriter(write, name="burnpack (in-process)")
            wreport = run_writers(vectors, writer, jobs=args.jobs, progress=progress)
            report = wreport if report is None else report.merge(wreport)
    except ValueError as exc:
        print(f"burnpack-conformance: {exc}", file=sys.stderr)
        return 2
    finish(bar)
    assert report is not None
    if not report.results:
        print("burnpack-conformance: no vectors selected", file=sys.stderr)
        return 2
    print(report.summary(args.max_diffs))
    _write_reports(report, args)
    return report.exit_code


def _list(args: argparse.Namespace) -> int:
    try:
        vectors = _chosen(args)
    except _UnmatchedGlob as exc:
        print(f"burnpack-conformance: {exc}", file=sys.stderr)
        return 2
    for v in vectors.readers:
        e = v.expect
        print(f"reader  {v.id:<55} compatible={e.compatible.outcome:<21} strict={e.strict.outcome:<21} {v.description}")
    for w in vectors.writers:
        print(f"writer  {w.id:<55} {'refuse ' + '|'.join(w.refusal) if w.refusal else 'bytes':<51} {w.description}")
    return 0


def _fuzz(args: argparse.Namespace) -> int:
    from .fuzz import fuzz

    return fuzz(seconds=args.seconds, engine=args.engine, save_dir=args.save_dir, reader=args.reader, seed=args.seed,
                timeout=args.timeout, max_examples=args.max_examples, hypothesis_dir=args.hypothesis_dir, json_out=args.json)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="burnpack-conformance", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"burnpack-conformance {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("export", help="write the corpus (every vector, manifest, README, protocol) to DIR")
    p.add_argument("dir", type=Path)
    p.add_argument("--force", action="store_true", help="overwrite a non-empty DIR")
    p.add_argument("--skip-runtime", action="store_true", help="leave out the large generated vectors (they stay in the manifest)")
    p.set_defaults(func=_export)

    p = sub.add_parser("run", help="run a reader or a writer over the corpus")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--reader", metavar="CMD", help="reader command, e.g. 'burnpack dump --json {path}' ({level} also works)")
    who.add_argument("--reader-batch", metavar="CMD", help="a long-running reader answering JSON-line requests, "
                     "e.g. 'burnpack dump --json --batch' (see PROTOCOL.md)")
    who.add_argument("--writer", metavar="CMD", help="writer command, e.g. 'burnpack pack {spec} {out}'")
    who.add_argument("--self-test", action="store_true", help="run burnpack itself in-process (reader and writer)")
    p.add_argument("--level", choices=("compatible", "strict", "both"), default="compatible")
    p.add_argument("--vectors", type=Path, default=DEFAULT_VECTORS, help="a corpus directory, or Burn's fixture folder (index.json)")
    p.add_argument("--select", action="append", metavar="GLOB", help="only vectors whose id or category matches (repeatable)")
    p.add_argument("--exclude", action="append", metavar="GLOB", help="leave out vectors whose id or category matches (repeatable)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per vector (default 20)")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="vectors run in parallel (default: CPUs)")
    p.add_argument("--max-diffs", type=int, default=5, help="mismatches shown in detail (default 5)")
    p.add_argument("--json-report", metavar="FILE", help="write a JSON report")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    p.add_argument("-v", "--verbose", action="store_true", help="print every vector as it finishes")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="N/M progress on stderr: auto = on a terminal; always = also as lines without one")  # fmt: skip
    p.set_defaults(func=_run)

    p = sub.add_parser("list", help="list the vectors and their expected outcomes")
    p.add_argument("--vectors", type=Path, default=DEFAULT_VECTORS)
    p.add_argument("--select", action="append", metavar="GLOB")
    p.add_argument("--exclude", action="append", metavar="GLOB")
    p.set_defaults(func=_list)

    p = sub.add_parser("fuzz", help="fuzz burnpack (or a reader command) for N seconds; failing inputs become vectors")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto",
                   help="auto: atheris (coverage-guided) when installed, else Hypothesis")
    p.add_argument("--reader", metavar="CMD", help="also compare an external reader with the reference on every input (slow)")
    p.add_argument("--save-dir", type=Path, default=Path("fuzz-findings"), help="where failing inputs are saved as vectors")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per external reader call")
    p.add_argument("--max-examples", type=int, default=None, help="stop after this many inputs (Hypothesis engine)")
    p.add_argument("--hypothesis-dir", type=Path, default=None,
                   help="keep Hypothesis's example database and caches here (default: a temporary directory, "
                        "so nothing is written to the current directory)")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help="write the run's record (engine, seed, inputs per kind, failures, load average) to FILE")
    p.set_defaults(func=_fuzz)

    p = sub.add_parser("generate", help="regenerate the checked-in corpus from the generators")
    p.add_argument("--out", type=Path, default=DEFAULT_VECTORS)
    p.add_argument("--check", action="store_true", help="only check that --out is up to date (exit 2 if not)")
    p.set_defaults(func=_generate)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CorpusError as exc:
        print(f"burnpack-conformance: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("burnpack-conformance: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `burnpack-conformance list | head`: stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except ImportError as exc:
        advice = missing_extra(exc)
        if advice is None:
            raise
        print(f"burnpack-conformance: {advice}", file=sys.stderr)
        return 2


def regenerate(argv: list[str] | None = None) -> int:
    """Regenerate the checked-in corpus (after cross-checking it against burnpack)."""
    parser = argparse.ArgumentParser(prog="python -m conformance.generate", description="regenerate conformance/vectors")
    parser.add_argument("--out", type=Path, default=DEFAULT_VECTORS)
    parser.add_argument("--no-check", action="store_true", help="skip the cross-check against the reference implementation")
    args = parser.parse_args(argv)
    corpus = build_corpus()
    if not args.no_check:
        problems = cross_check(corpus)
        if problems:
            for p in problems:
                print(p)
            print(f"{len(problems)} disagreements between the declared expectations and burnpack: not written")
            return 1
    if args.out.exists():
        shutil.rmtree(args.out / "reader", ignore_errors=True)
        shutil.rmtree(args.out / "writer", ignore_errors=True)
    manifest = corpus_mod.write_corpus(args.out, corpus)
    if _is_package_corpus(args.out):
        corpus_mod.README.write_text(corpus_mod.readme_text(manifest), encoding="utf-8")
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"wrote {manifest['counts']['reader']} reader and {manifest['counts']['writer']} writer vectors "
          f"to {os.path.relpath(args.out)} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
