"""Every compiled kernel built a second time with AddressSanitizer and UBSan, and checked there.

The checkout's files are copied to a scratch folder (the kernels built in place stay as they are)
and the kernels built in that copy with ``-fsanitize=address,undefined,float-cast-overflow
-fno-sanitize-recover=all`` and ``BURNPACK_BUILD_KERNELS=1`` (a kernel that does not build fails the run). Against those builds
it runs the kernels' agreement tests (each kernel against its Python or numpy twin, edge values,
alignments, changing bytes, threads) and a bounded differential fuzz campaign
(``benchmarks/kernel_fuzz.py``: random, structure-aware and changing inputs). Any sanitizer report
aborts the process that made it, so the run fails.

A Python not built with ASan loads ASan-built extensions only with the runtimes preloaded
(``LD_PRELOAD`` of the compiler's ``libasan.so`` and ``libubsan.so``); leak detection is off
(CPython keeps allocations to the end on purpose). ``.ci/run`` runs it after the test suite:

    python benchmarks/sanitize.py --fuzz-seconds 30

Exit status 0 when every step passed; the first failing step's status otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANITIZERS = "address,undefined,float-cast-overflow"
"""ASan, UBSan, and the float-to-integer overflow check, which UBSan's group leaves out."""
FLAGS = f"-fsanitize={SANITIZERS} -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
AGREEMENT_TESTS = [
    "tests/codec/test_kernels.py",
    "tests/codec/test_skip_kernel.py",
    "tests/core/test_table_kernel.py",
    "tests/core/test_quant_kernel.py",
    "tests/view/test_view_stats_kernel.py",
]
"""Each kernel against its twin, and the rule that loads them."""


def _copy_checkout(into: Path) -> None:
    """The checkout's tracked and untracked (not ignored) files, without built kernels."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if not name or name.endswith(".so") or not source.is_file():
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _runtime(name: str) -> str:
    """The compiler's sanitizer runtime library ``name`` (e.g. libasan.so)."""
    compiler = os.environ.get("CC", "gcc").split()[0]
    path = subprocess.run([compiler, f"-print-file-name={name}"], capture_output=True, text=True, check=True).stdout.strip()
    if not os.path.isabs(path):
        raise SystemExit(f"{compiler} has no {name}: a compiler with AddressSanitizer and UBSan is needed")
    return path


def _step(what: str, command: list[str], cwd: Path, env: dict[str, str]) -> int:
    started = time.monotonic()
    print(f"sanitize: {what}", flush=True)
    status = subprocess.run(command, cwd=cwd, env=env).returncode
    print(f"sanitize: {what}: {'ok' if status == 0 else f'FAILED (exit {status})'} in {time.monotonic() - started:.0f} s", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuzz-seconds", type=float, default=30.0, help="the differential fuzz campaign's time")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000, help="the campaign's seed (printed; default: the clock)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (its path is printed)")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="burnpack-sanitize-"))
    try:
        _copy_checkout(scratch)
        env = dict(os.environ)
        shared = Path(env.get("BURNPACK_SHARED", ROOT.parent / "shared"))
        if shared.is_dir():
            env["BURNPACK_SHARED"] = str(shared.resolve())  # the copy has no ../shared beside it
        build = dict(env, BURNPACK_BUILD_KERNELS="1", CFLAGS=f"{env.get('CFLAGS', '')} {FLAGS}".strip(),
                     LDFLAGS=f"{env.get('LDFLAGS', '')} -fsanitize={SANITIZERS}".strip())  # fmt: skip
        status = _step("build every kernel with ASan + UBSan", [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--force"], scratch, build)
        if status:
            return status
        run = dict(env, LD_PRELOAD=f"{_runtime('libasan.so')} {_runtime('libubsan.so')}",
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1",
                   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1", PYTHONDONTWRITEBYTECODE="1")  # fmt: skip
        run.pop("PYTHONPATH", None)
        check = "from burnpack.codec._kernels import kernel_states; s = kernel_states(); assert set(s.values()) == {'built'}, s"
        steps = [
            ("the sanitized kernels load", [sys.executable, "-c", check]),
            ("the kernels' agreement tests", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *AGREEMENT_TESTS]),
            (f"the differential fuzz campaign, seed {args.seed}",
             [sys.executable, "benchmarks/kernel_fuzz.py", "--seconds", str(args.fuzz_seconds), "--seed", str(args.seed)]),
        ]  # fmt: skip
        for what, command in steps:
            status = _step(what, command, scratch, run)
            if status:
                return status
        return 0
    finally:
        if args.keep:
            print(f"sanitize: the scratch copy is {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
