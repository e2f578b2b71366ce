"""Running a reader or a writer over the corpus, and judging what it did.

A *reader* is anything that turns a file path into the ``dump --json`` object (PROTOCOL.md): an
external command (``ExternalReader``, with a per-vector timeout; a crash, a hang, an exit status
that is not 0 for an accepted file and 1 for a rejected one, or output that is not one JSON object
is a failure of that vector, never of the run), a long-running one (``ExternalBatchReader``) or a
Python callable (``PythonReader``). Every answer is validated against ``dump.schema.json`` before
it is compared. A *writer* turns a spec into bytes or refuses it (``ExternalWriter``,
``PythonWriter``). ``run_readers`` / ``run_writers`` return a ``Report`` (per-category summary,
readable diffs of mismatches, JSON and JUnit XML, an exit code); each failure carries the
vector's description and the rule behind its expectation, and from a process a bounded tail of
its stderr and an escaped excerpt of output that broke the protocol.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from burnpack.core.display import printable, printable_lines

from .corpus import ReaderVector, Vectors, WriterVector
from .model import HEADER_SIZE, data_section_start
from .rules import ACCEPT, REJECT_OPEN, Expected
from .schema import dump_schema

PASS, FAIL, CRASH, TIMEOUT = "pass", "fail", "crash", "timeout"
STAGE_OF = {REJECT_OPEN: "open", "reject_tensor_access": "tensor_access"}
TENSOR_KEYS = ("name", "dtype", "shape", "data_offsets", "param_id", "byte_len", "sha256")


# ==================================================================================================
# judging one result
# ==================================================================================================
def _norm_scalar(s: Any) -> Any:
    if not isinstance(s, dict):
        return s
    if s.get("type") == "Float" and "f64_bits" in s:
        bits = s["f64_bits"]
        try:
            bits = f"0x{int(bits, 16) if isinstance(bits, str) else int(bits):016x}"
        except (TypeError, ValueError):
            pass
        return {"type": "Float", "f64_bits": bits}
    return {"type": s.get("type"), "value": s.get("value")}


def normalize_dump(d: dict, like: dict) -> dict:
    """The comparable part of a dump: optional fields only where ``like`` (the actual) has them."""
    out: dict[str, Any] = {"ok": True}
    if "header" in like:
        h = d.get("header") or {}
        out["header"] = {"version": h.get("version"), "metadata_size": h.get("metadata_size")}
    if "data_section_start" in like:
        out["data_section_start"] = d.get("data_section_start")
    tensors = d.get("tensors")
    out["tensors"] = [{k: t.get(k) for k in TENSOR_KEYS} if isinstance(t, dict) else t for t in tensors] if isinstance(tensors, list) else tensors
    out["metadata"] = d.get("metadata")
    scalars = d.get("scalars")
    out["scalars"] = {n: _norm_scalar(s) for n, s in scalars.items()} if isinstance(scalars, dict) else scalars
    return out


def show_name(name: Any) -> str:
    """A name as Python shows it, plus its code points when it has non-ASCII characters: names
    that look the same (U+00E9 and e + U+0301, a leading U+FEFF) must read differently."""
    if not isinstance(name, str) or name.isascii():
        return repr(name)
    points = " ".join(f"U+{ord(ch):04X}" for ch in name[:12]) + (" …" if len(name) > 12 else "")
    return f"{name!r} ({points})"


def _names(names: list) -> str:
    return ", ".join(show_name(n) for n in names[:5]) + (f", … ({len(names) - 5} more)" if len(names) > 5 else "")


def _pretty(obj: Any) -> list[str]:
    """Indented JSON lines with every invisible character escaped (U+FEFF, U+2028, U+200B, …)."""
    return printable_lines(json.dumps(obj, ensure_ascii=False, indent=1, default=repr)).splitlines()


def unified(expected: Any, actual: Any, limit: int = 40) -> str:
    lines = list(difflib.unified_diff(_pretty(expected), _pretty(actual), "expected", "actual", n=2, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def _first_difference(exp: dict, act: dict) -> str:
    et, at = exp.get("tensors"), act.get("tensors")
    if isinstance(et, list) and isinstance(at, list):
        en, an = [t.get("name") for t in et], [t.get("name") if isinstance(t, dict) else t for t in at]
        if en != an:
            missing = [n for n in en if n not in an]
            extra = [n for n in an if n not in en]
            if missing or extra:
                return f"tensor names differ: missing [{_names(missing)}], unexpected [{_names(extra)}]"
            if len(an) != len(set(an)):
                return f"a tensor name is listed twice: [{_names(sorted({n for n in an if an.count(n) > 1}))}]"
            return "tensors are not listed in name (byte-wise UTF-8) order"
        for e, a in zip(et, at):
            for k in TENSOR_KEYS:
                if e.get(k) != (a.get(k) if isinstance(a, dict) else None):
                    return f"tensor {show_name(e['name'])}: {k} expected {e.get(k)!r}, got {a.get(k) if isinstance(a, dict) else a!r}"
    elif et != at:
        return "'tensors' differs"
    for section in ("metadata", "scalars", "header", "data_section_start"):
        if exp.get(section) != act.get(section):
            e, a = exp.get(section), act.get(section)
            if isinstance(e, dict) and isinstance(a, dict):
                for k in sorted(set(e) | set(a)):
                    if e.get(k) != a.get(k):
                        got = "nothing" if k not in a else repr(a[k])
                        return f"{section} {show_name(k)}: expected {'nothing' if k not in e else repr(e[k])}, got {got}"
            return f"{section}: expected {e!r}, got {a!r}"
    return "dumps differ"


def _describe(actual: dict) -> str:
    if actual.get("ok") is True:
        return "accept"
    err = actual.get("error") if isinstance(actual.get("error"), dict) else {}
    stage = err.get("stage")
    outcome = {"open": "reject_open", "tensor_access": "reject_tensor_access"}.get(stage, f"reject (stage {stage!r})")
    message = f": {err.get('message')}" if err.get("message") else ""
    return f"{outcome} {err.get('variant')}{message}"


def check_reader_result(expected: Expected, dump: dict | None, actual: Any) -> tuple[bool, str, str]:
    """(passed, one-line message, readable diff) for one reader output against one level.

    The output must first follow ``dump.schema.json`` (a reader printing ``"value": "NaN!"`` or a
    shape of ``2.0`` fails here, whatever else it got right); then it is compared (PROTOCOL §1.3).
    """
    problem = dump_schema().first_problem(actual)
    if problem is not None:
        return False, f"output breaks {RULE_SCHEMA}: {problem}", ""
    if expected.outcome == ACCEPT:
        if not actual["ok"]:
            return False, f"expected accept, got {_describe(actual)}", ""
        exp_view, act_view = normalize_dump(dump or {}, actual), normalize_dump(actual, actual)
        if exp_view != act_view:
            return False, _first_difference(exp_view, act_view), unified(exp_view, act_view)
        return True, "", ""
    kinds = "|".join(expected.errors)
    if actual["ok"]:
        return False, f"expected {expected.outcome} {kinds}, got accept", ""
    err = actual.get("error")
    if not isinstance(err, dict):
        return False, "'ok' is false but there is no 'error' object", ""
    if err.get("stage") != STAGE_OF[expected.outcome] or err.get("variant") not in expected.errors:
        return False, f"expected {expected.outcome} {kinds}, got {_describe(actual)}", ""
    return True, "", ""


@dataclass
class WriterOutcome:
    status: str  # "wrote" | "refused" | CRASH | TIMEOUT
    data: bytes | None = None
    error: str | None = None  # the refusal's error kind, when the writer told it
    message: str = ""
    leftover: bool = False  # a refusing writer left an output file behind
    stderr: str = ""  # a bounded tail of an external writer's stderr


def writer_outcome_of(fn: Callable[[dict], bytes], spec: dict) -> WriterOutcome:
    """Run an in-process writer: bytes → wrote, an exception → refused (kind = ``.variant`` or class)."""
    try:
        data = fn(spec)
    except Exception as exc:  # noqa: BLE001 - any exception is this writer's refusal
        return WriterOutcome("refused", error=getattr(exc, "variant", type(exc).__name__), message=str(exc))
    return WriterOutcome("wrote", data=bytes(data))


def _region(data: bytes, at: int) -> str:
    if at < 4:
        return "magic"
    if at < 6:
        return "version"
    if at < HEADER_SIZE:
        return "metadata_size"
    m = int.from_bytes(data[6:10], "little") if len(data) >= 10 else 0
    if at < HEADER_SIZE + m:
        return f"metadata byte {at - HEADER_SIZE}"
    d = data_section_start(m)
    if at < d:
        return "padding before the data section"
    return f"data section byte {at - d}"


def check_writer_result(expected: bytes | None, refusal: tuple[str, ...], outcome: WriterOutcome) -> tuple[bool, str, str]:
    if outcome.status in (CRASH, TIMEOUT):
        return False, outcome.message, ""
    if refusal:
        if outcome.status == "wrote":
            return False, f"expected a refusal ({'|'.join(refusal)}), the writer produced {len(outcome.data or b'')} bytes", ""
        if outcome.error is not None and outcome.error not in refusal:
            return False, f"refused with {outcome.error}, expected {'|'.join(refusal)}: {outcome.message}", ""
        if outcome.leftover:
            return False, "refused, but left an output file behind (Burn plans before any I/O)", ""
        return True, "", ""
    if outcome.status == "refused":
        return False, f"expected {len(expected or b'')} bytes, the writer refused: {outcome.error}: {outcome.message}", ""
    got = outcome.data or b""
    if got == expected:
        return True, "", ""
    exp = expected or b""
    at = next((i for i, (a, b) in enumerate(zip(exp, got)) if a != b), min(len(exp), len(got)))
    message = f"bytes differ at offset {at} ({_region(exp, at)}): expected {exp[at:at + 8].hex(' ') or 'EOF'}, got {got[at:at + 8].hex(' ') or 'EOF'}"
    if 6 <= at < HEADER_SIZE:  # a different metadata length: also show where the metadata first differs
        later = next((i for i, (a, b) in enumerate(zip(exp[HEADER_SIZE:], got[HEADER_SIZE:]), HEADER_SIZE) if a != b), None)
        if later is not None:
            message += f"; first difference after the header at offset {later} ({_region(exp, later)})"
            at = later
    if len(exp) != len(got):
        message += f"; length expected {len(exp)}, got {len(got)}"
    lo = max(0, at - 16) // 16 * 16
    lines = difflib.unified_diff(_hexdump(exp, lo), _hexdump(got, lo), "expected", "actual", n=2, lineterm="")
    return False, message, "\n".join(list(lines)[:24])


def _hexdump(data: bytes, start: int, rows: int = 6) -> list[str]:
    return [f"{o:08x}  {data[o:o + 16].hex(' ')}" for o in range(start, min(len(data), start + 16 * rows), 16)] or ["<end of file>"]


# ==================================================================================================
# implementations under test
# ==================================================================================================
RULE_EXIT = "PROTOCOL §1: exit status 0 when the file is accepted, 1 when it is rejected"
RULE_ONE_OBJECT = "PROTOCOL §1: exactly one JSON object on standard output"
RULE_BATCH = "PROTOCOL §1.4: one JSON object on one line per request"
RULE_SCHEMA = "dump.schema.json (PROTOCOL §1.1-1.2)"
STDERR_LINES, STDERR_CHARS, LINE_CHARS = 20, 2000, 300  # the stderr tail shown for a failure
EXCERPT_CHARS = 160  # the stdout excerpt shown for output that breaks the protocol


class Crash(Exception):
    """The implementation crashed, hung, or broke the protocol (exit status, not one JSON object).

    ``stderr`` is a bounded tail of what it wrote there, ``stdout`` a bounded escaped excerpt of
    its output when that output is the problem.
    """

    def __init__(self, message: str, status: str = CRASH, *, stderr: str = "", stdout: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.stderr = stderr
        self.stdout = stdout


def stderr_tail(err: bytes, lines: int = STDERR_LINES, chars: int = STDERR_CHARS) -> str:
    """The last ``lines`` lines of ``err`` (each cut to 300 characters), at most ``chars`` in all:
    a crash's message is often above the runtime's last words (Node ends with ``Node.js v20``)."""
    text = err.decode("utf-8", "surrogateescape").rstrip().splitlines()
    kept: list[str] = []
    size = 0
    for line in reversed(text[-lines:]):
        line = printable(_undecodable_as_hex(line[:LINE_CHARS] + ("…" if len(line) > LINE_CHARS else "")))
        if kept and size + len(line) + 1 > chars:
            break
        kept.append(line)
        size += len(line) + 1
    dropped = len(text) - len(kept)
    return "\n".join(([f"[… {dropped} earlier line{'s' if dropped > 1 else ''}]"] if dropped else []) + kept[::-1])


def _undecodable_as_hex(text: str) -> str:
    """Bytes ``surrogateescape`` kept (U+DC80..U+DCFF) as ``\\xNN``."""
    return re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}", text)


def _literal(text: str) -> str:
    """``text`` as a one-line double-quoted literal: quotes, backslashes, controls and invisible
    characters escaped (display's rule), undecodable bytes as ``\\xNN``."""
    return '"' + printable(_undecodable_as_hex(text.replace("\\", "\\\\").replace('"', '\\"'))) + '"'


def stdout_excerpt(data: bytes, at: int | None = None, width: int = EXCERPT_CHARS) -> str:
    """A bounded excerpt of output as an escaped string literal: its start, and the place ``at``
    (a character offset into the decoded text) where parsing failed when that is further on."""
    text = data.decode("utf-8", "surrogateescape")
    if not text:
        return "(empty)"
    size = f"{len(data)} bytes"
    if at is None or at < width - 20:
        return f"{size}: {_literal(text[:width])}" + ("…" if len(text) > width else "")
    lo = max(width // 2, at - width // 2)
    return f"{size}: {_literal(text[: width // 2])}… at character {at}: …{_literal(text[lo : lo + width])}" + (
        "…" if len(text) > lo + width else "")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (a Float's value is \"nan\", \"inf\" or \"-inf\")")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {show_name(twice)} appears twice in one object")
    return out


def parse_output(data: bytes, rule: str, stderr: str = "") -> dict:
    """The one JSON object of a reader's output, or a Crash naming ``rule`` with an excerpt."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = len(data[: exc.start].decode("utf-8", "surrogateescape"))
        raise Crash(f"output is not UTF-8 ({exc.reason} at byte {exc.start}) ({rule})", stderr=stderr,
                    stdout=stdout_excerpt(data, at)) from None  # fmt: skip
    try:
        obj = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        reason = "nothing was printed" if not text.strip() else f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        raise Crash(f"output is not one JSON object ({rule}): {reason}", stderr=stderr, stdout=stdout_excerpt(data, exc.pos)) from None
    except ValueError as exc:
        raise Crash(f"output is not one JSON object ({rule}): {exc}", stderr=stderr, stdout=stdout_excerpt(data)) from None
    if not isinstance(obj, dict):
        raise Crash(f"output is a JSON {type(obj).__name__.replace('dict', 'object').replace('list', 'array')}, not an object ({rule})",
                    stderr=stderr, stdout=stdout_excerpt(data))  # fmt: skip
    return obj


def _substitute(template: str, values: dict[str, str]) -> list[str]:
    """Split the command and fill its placeholders; an argument ``{--flag}`` is passed as ``--flag``
    at the strict level and left out at the compatible level."""
    argv = shlex.split(template)
    out = []
    for arg in argv:
        if arg.startswith("{--") and arg.endswith("}") and "level" in values:
            if values["level"] == "strict":
                out.append(arg[1:-1])
            continue
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def run_command(argv: list[str], timeout: float) -> tuple[int, bytes, bytes]:
    """Run argv in its own process group; on timeout kill the whole group. Raises Crash."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise Crash(f"cannot start {argv[0]!r}: {exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        out, err = proc.communicate()
        raise Crash(f"timed out after {timeout:g} s (process group killed)", TIMEOUT, stderr=stderr_tail(err)) from None
    return proc.returncode, out, err


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


@dataclass
class Answer:
    """What a reader said about one file: its output and, from a process, the tail of its stderr."""

    output: Any
    stderr: str = ""


class Reader(ABC):
    """A reader under test: ``answer(path, level)``; calling it gives just the output."""

    @abstractmethod
    def answer(self, path: Path, level: str) -> Answer:
        """The reader's answer for one file at one level; a Crash when it broke the protocol."""

    def __call__(self, path: Path, level: str) -> Any:
        return self.answer(path, level).output


class ExternalReader(Reader):
    """``CMD {path}`` printing the dump object; ``{level}`` is replaced by the level name too."""

    def __init__(self, template: str, timeout: float = 20.0) -> None:
        if "{path}" not in template:
            raise ValueError("the reader command must contain {path}")
        self.template = template
        self.timeout = timeout

    def __str__(self) -> str:
        return self.template

    def answer(self, path: Path, level: str) -> Answer:
        code, out, err = run_command(_substitute(self.template, {"path": str(path), "level": level}), self.timeout)
        tail = stderr_tail(err)
        if code < 0:
            raise Crash(f"killed by {_signal_name(code)}", stderr=tail, stdout=stdout_excerpt(out))
        if code not in (0, 1):
            raise Crash(f"exit status {code} ({RULE_EXIT}; anything else is a crash)", stderr=tail, stdout=stdout_excerpt(out))
        try:
            obj = parse_output(out, RULE_ONE_OBJECT, tail)
        except Crash as exc:
            raise Crash(f"exit status {code}, {exc}", stderr=exc.stderr, stdout=exc.stdout) from None
        ok = obj.get("ok")
        if isinstance(ok, bool) and code != (0 if ok else 1):
            raise Crash(f'exit status {code} with "ok": {json.dumps(ok)} ({RULE_EXIT})', stderr=tail)
        return Answer(obj, tail)


class ExternalBatchReader(Reader):
    """A long-running reader: one ``{"path", "level"}`` JSON line in, one dump object line out.

    ``CMD`` is started once per worker and kept; a vector that gets no answer within the timeout,
    or whose answer is not one JSON object, is a crash of that vector only: the process group is
    killed and a fresh process serves the next vector. Answers are split on ``\\n`` bytes only, so
    U+2028 and U+2029 may appear raw inside an answer.
    """

    def __init__(self, template: str, timeout: float = 20.0) -> None:
        self.template = template
        self.argv = shlex.split(template)
        if not self.argv:
            raise ValueError("empty reader command")
        self.timeout = timeout
        self._local = threading.local()
        self._all: list[subprocess.Popen] = []
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return self.template + " (batch)"

    def _start(self) -> tuple[subprocess.Popen, Any, Any]:
        import queue

        err = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        except OSError as exc:
            raise Crash(f"cannot start {self.argv[0]!r}: {exc}") from None
        lines: queue.Queue = queue.Queue()

        def pump() -> None:
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        with self._lock:
            self._all.append(proc)
        state = (proc, lines, err)
        self._local.state = state
        return state

    def _kill(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        self._local.state = None

    @staticmethod
    def _stderr(err: Any) -> str:
        """The tail of the process's stderr (a file shared by every request it served)."""
        err.seek(0, os.SEEK_END)
        size = err.tell()
        err.seek(max(0, size - 64 * STDERR_CHARS))
        return stderr_tail(err.read())

    def answer(self, path: Path, level: str) -> Answer:
        import queue

        state = getattr(self._local, "state", None)
        if state is None or state[0].poll() is not None:
            state = self._start()
        proc, lines, err = state
        try:
            proc.stdin.write((json.dumps({"path": str(path), "level": level}) + "\n").encode("utf-8"))
            proc.stdin.flush()
        except OSError:
            pass  # it died: the read below reports how
        try:
            line = lines.get(timeout=self.timeout)
        except queue.Empty:
            self._kill(proc)
            raise Crash(f"timed out after {self.timeout:g} s (process group killed)", TIMEOUT, stderr=self._stderr(err)) from None
        if line is None:
            code = proc.wait()
            self._local.state = None
            how = f"killed by {_signal_name(code)}" if code < 0 else f"exited with status {code} mid-run"
            raise Crash(f"{how} ({RULE_BATCH})", stderr=self._stderr(err))
        try:
            return Answer(parse_output(line, RULE_BATCH))
        except Crash as exc:
            self._kill(proc)
            exc.stderr = self._stderr(err)
            raise

    def close(self) -> None:
        with self._lock:
            procs, self._all = self._all, []
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.stdin.close()
                    proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    proc.wait()


class PythonReader(Reader):
    """An in-process reader: ``fn(path, level) -> dump dict``. Exceptions are crashes."""

    def __init__(self, fn: Callable[[str, str], dict], name: str | None = None, timeout: float | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self.timeout = timeout

    def __str__(self) -> str:
        return self.name

    def answer(self, path: Path, level: str) -> Answer:
        return Answer(_call_in_thread(lambda: self.fn(str(path), level), self.timeout))


def _call_in_thread(fn: Callable[[], Any], timeout: float | None) -> Any:
    """Run fn; an exception becomes a Crash. With a timeout, a hung call is abandoned (daemon thread)."""
    if timeout is None:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            raise Crash(f"raised {type(exc).__name__}: {exc} ({_where(exc)})") from exc
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise Crash(f"timed out after {timeout:g} s", TIMEOUT)
    if "error" in box:
        exc = box["error"]
        raise Crash(f"raised {type(exc).__name__}: {exc} ({_where(exc)})") from exc
    return box["value"]


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"


class ExternalWriter:
    """``CMD {spec} {out}``: exit 0 with the file at {out}, or a non-zero exit to refuse.

    A refusing writer may print ``{"ok": false, "error": {"variant": ...}}`` on stdout; the kind
    is then checked too.
    """

    def __init__(self, template: str, timeout: float = 20.0) -> None:
        if "{spec}" not in template or "{out}" not in template:
            raise ValueError("the writer command must contain {spec} and {out}")
        self.template = template
        self.timeout = timeout

    def __str__(self) -> str:
        return self.template

    def __call__(self, spec: dict, workdir: Path) -> WriterOutcome:
        spec_path, out = workdir / "spec.json", workdir / "out.bpk"
        spec_path.write_text(json.dumps(spec, ensure_ascii=True), encoding="utf-8")
        try:
            code, stdout, err = run_command(_substitute(self.template, {"spec": str(spec_path), "out": str(out)}), self.timeout)
        except Crash as exc:
            return WriterOutcome(exc.status, message=str(exc), stderr=exc.stderr)
        tail = stderr_tail(err)
        if code < 0:
            return WriterOutcome(CRASH, message=f"killed by {_signal_name(code)}", stderr=tail)
        if code == 0:
            if not out.exists():
                return WriterOutcome(CRASH, message="exit status 0 but no file at {out} (PROTOCOL §3)", stderr=tail)
            return WriterOutcome("wrote", data=out.read_bytes(), stderr=tail)
        variant = None
        try:
            obj = json.loads(stdout.decode("utf-8"))
            variant = obj["error"]["variant"] if isinstance(obj, dict) and obj.get("ok") is False else None
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            pass
        leftover = out.exists() or any(p.name.startswith("out.bpk") for p in workdir.iterdir())
        return WriterOutcome("refused", error=variant, message=f"exit status {code}", leftover=leftover, stderr=tail)


class PythonWriter:
    """An in-process writer: ``fn(spec) -> bytes``; raising refuses (kind from ``.variant``)."""

    def __init__(self, fn: Callable[[dict], bytes], name: str | None = None, timeout: float | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self.timeout = timeout

    def __str__(self) -> str:
        return self.name

    def __call__(self, spec: dict, workdir: Path) -> WriterOutcome:
        try:
            return _call_in_thread(lambda: writer_outcome_of(self.fn, spec), self.timeout)
        except Crash as exc:
            return WriterOutcome(exc.status, message=str(exc))


# ==================================================================================================
# reports
# ==================================================================================================
@dataclass
class Result:
    id: str
    category: str
    kind: str  # "reader" | "writer"
    level: str | None
    status: str  # PASS | FAIL | CRASH | TIMEOUT
    message: str = ""
    diff: str = ""
    expected: str = ""
    actual: str = ""
    seconds: float = 0.0
    source: str = ""
    description: str = ""  # the vector's description: what it is and which rule it holds
    why: str = ""  # the rule that decided the expected outcome at this level (rejections)
    stderr: str = ""  # a bounded tail of the implementation's stderr (failures of external commands)
    stdout: str = ""  # a bounded escaped excerpt of output that broke the protocol

    TEXT = ("message", "diff", "expected", "actual", "description", "why", "stderr", "stdout")

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def encodable(self) -> Result:
        """Every text field encodable as UTF-8: a lone surrogate a reader printed (``"\\ud800"`` is
        valid JSON) is shown as its escape, so reports and the console never fail to write."""
        for name in self.TEXT:
            setattr(self, name, getattr(self, name).encode("utf-8", "backslashreplace").decode("utf-8"))
        return self

    def to_json(self) -> dict:
        out = {"id": self.id, "category": self.category, "kind": self.kind, "level": self.level, "status": self.status,
               "expected": self.expected, "actual": self.actual, "seconds": round(self.seconds, 4)}
        for name in ("description", "why", "message", "diff", "stdout", "stderr"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        return out

    def details(self) -> list[str]:
        """The lines that explain a failure: the vector and its rule, expected and actual, the diff,
        the output excerpt and the stderr tail."""
        lines = []
        if self.description:
            lines.append(f"vector:   {self.description}")
        if self.why:
            lines.append(f"why:      {self.why}")
        if self.expected or self.actual:
            lines.append(f"expected: {self.expected}")
            lines.append(f"actual:   {self.actual}")
        if self.diff:
            lines.extend(self.diff.splitlines())
        if self.stdout:
            lines.append(f"stdout:   {self.stdout}")
        if self.stderr:
            lines.append("stderr (tail):")
            lines.extend("  | " + line for line in self.stderr.splitlines())
        return lines


@dataclass
class Report:
    subject: str
    kind: str
    levels: tuple[str, ...]
    vectors: str
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if not r.passed]

    @property
    def ok(self) -> bool:
        return bool(self.results) and not self.failures

    @property
    def exit_code(self) -> int:
        """0 when every vector passed, 1 otherwise (2 is kept for usage and corpus errors)."""
        return 0 if self.ok else 1

    def merge(self, other: Report) -> Report:
        return Report(f"{self.subject}; {other.subject}", f"{self.kind}+{other.kind}", tuple(dict.fromkeys(self.levels + other.levels)),
                      self.vectors, self.results + other.results, self.seconds + other.seconds)

    def by_category(self) -> dict[tuple[str, str], dict[str, int]]:
        table: dict[tuple[str, str], dict[str, int]] = {}
        for r in self.results:
            key = (f"{r.kind}" + (f"[{r.level}]" if r.level else ""), r.category)
            row = table.setdefault(key, {PASS: 0, FAIL: 0, CRASH: 0, TIMEOUT: 0})
            row[r.status] += 1
        return table

    def summary(self, max_diffs: int = 5) -> str:
        lines = [f"{self.kind} {self.subject!r} on {self.vectors}" + (f" at level {', '.join(self.levels)}" if self.levels else "")]
        table = self.by_category()
        width = max([len(k[1]) for k in table] + [8])
        lines.append(f"  {'run':<22} {'category':<{width}} {'pass':>5} {'fail':>5} {'crash':>5} {'hang':>5} {'total':>6}")
        totals = {PASS: 0, FAIL: 0, CRASH: 0, TIMEOUT: 0}
        for (run, category), row in table.items():
            for k in totals:
                totals[k] += row[k]
            mark = "" if row[FAIL] + row[CRASH] + row[TIMEOUT] == 0 else "  <--"
            lines.append(f"  {run:<22} {category:<{width}} {row[PASS]:>5} {row[FAIL]:>5} {row[CRASH]:>5} {row[TIMEOUT]:>5} {sum(row.values()):>6}{mark}")
        lines.append(f"  {'TOTAL':<22} {'':<{width}} {totals[PASS]:>5} {totals[FAIL]:>5} {totals[CRASH]:>5} {totals[TIMEOUT]:>5} {sum(totals.values()):>6}")
        failures = self.failures
        if failures:
            lines.append("")
            lines.append(f"first {min(max_diffs, len(failures))} of {len(failures)} mismatches:")
            for r in failures[:max_diffs]:
                level = f" [{r.level}]" if r.level else ""
                lines.append(f"- {r.kind} {r.id}{level}: {r.status}: {r.message}")
                lines.extend("    " + line for line in r.details())
        verdict = "PASS" if self.ok else "FAIL"
        lines.append("")
        lines.append(f"{verdict}: {totals[PASS]} passed, {len(failures)} failed ({totals[CRASH]} crashed, {totals[TIMEOUT]} hung) "
                     f"in {self.seconds:.1f} s")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "tool": "burnpack-conformance",
            "subject": self.subject,
            "kind": self.kind,
            "levels": list(self.levels),
            "vectors": self.vectors,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "totals": {s: sum(r.status == s for r in self.results) for s in (PASS, FAIL, CRASH, TIMEOUT)},
            "categories": {f"{run}/{cat}": row for (run, cat), row in self.by_category().items()},
            "results": [r.to_json() for r in self.results],
        }

    def to_junit(self) -> str:
        suites: dict[str, list[Result]] = {}
        for r in self.results:
            suites.setdefault(f"{r.kind}.{r.level or 'bytes'}.{r.category}", []).append(r)
        out = ['<?xml version="1.0" encoding="UTF-8"?>']
        fails = sum(r.status == FAIL for r in self.results)
        errors = len(self.results) - fails - sum(r.passed for r in self.results)
        out.append(f'<testsuites name="burnpack-conformance" tests="{len(self.results)}" failures="{fails}" errors="{errors}" '
                   f'time="{self.seconds:.3f}">')
        for name, results in suites.items():
            f = sum(r.status == FAIL for r in results)
            e = sum(r.status in (CRASH, TIMEOUT) for r in results)
            t = sum(r.seconds for r in results)
            out.append(f'  <testsuite name={quoteattr(name)} tests="{len(results)}" failures="{f}" errors="{e}" time="{t:.3f}">')
            for r in results:
                out.append(f'    <testcase classname={quoteattr("burnpack-conformance." + name)} name={quoteattr(r.id)} time="{r.seconds:.4f}">')
                body = escape("\n".join(line for line in r.details() if not line.startswith(("stderr (tail):", "  | "))))
                if r.status == FAIL:
                    out.append(f"      <failure message={quoteattr(_xml_text(r.message))}>{_xml_text(body)}</failure>")
                elif r.status in (CRASH, TIMEOUT):
                    out.append(f"      <error type={quoteattr(r.status)} message={quoteattr(_xml_text(r.message))}>{_xml_text(body)}</error>")
                if not r.passed and r.stderr:
                    out.append(f"      <system-err>{_xml_text(escape(r.stderr))}</system-err>")
                out.append("    </testcase>")
            out.append("  </testsuite>")
        out.append("</testsuites>")
        return "\n".join(out) + "\n"


def _xml_text(text: str) -> str:
    """Drop characters XML 1.0 cannot hold (control bytes from a crashing implementation)."""
    return "".join(ch for ch in text if ch in "\t\n\r" or (" " <= ch <= "\ud7ff") or ("\ue000" <= ch <= "\ufffd") or ch >= "\U00010000")


# ==================================================================================================
# running
# ==================================================================================================
def _expect_text(expected: Expected) -> str:
    return expected.outcome if expected.outcome == ACCEPT else f"{expected.outcome} {'|'.join(expected.errors)}"


def _run_one_reader(reader: Reader, vector: ReaderVector, level: str, scratch: Path) -> Result:
    expected = vector.expect.level(level)
    result = Result(vector.id, vector.category, "reader", level, PASS, expected=_expect_text(expected), source=vector.source,
                    description=vector.description, why=expected.why)  # fmt: skip
    if vector.problem is not None:
        result.status, result.message, result.actual = FAIL, vector.problem, "not run"
        return result.encodable()
    start = time.perf_counter()
    try:
        path = vector.path
        if path is None:  # runtime vector: materialise it once
            path = scratch / (vector.id.replace("/", "__") + ".bpk")
            if not path.exists():
                path.write_bytes(vector.data())
        answer = reader.answer(path, level)
    except Crash as exc:
        result.status, result.message, result.actual = exc.status, str(exc), exc.status
        result.stderr, result.stdout = exc.stderr, exc.stdout
        result.seconds = time.perf_counter() - start
        return result.encodable()
    result.seconds = time.perf_counter() - start
    actual = answer.output
    ok, message, diff = check_reader_result(expected, vector.expect.dump, actual)
    result.actual = _describe(actual) if isinstance(actual, dict) else repr(actual)[:200]
    if len(result.actual) > 300:
        result.actual = result.actual[:300] + "..."
    if not ok:
        result.status, result.message, result.diff, result.stderr = FAIL, message, diff, answer.stderr
    return result.encodable()


def run_readers(vectors: Vectors, reader: Reader | Callable[[str, str], dict], *, levels: Iterable[str] = ("compatible",),
                jobs: int = 1, progress: Callable[[Result], None] | None = None) -> Report:
    """Run a reader over every reader vector at each level (a plain callable runs as a ``PythonReader``)."""
    if not isinstance(reader, Reader):
        reader = PythonReader(reader)
    levels = tuple(levels)
    report = Report(str(reader), "reader", levels, str(vectors.root or "<memory>"))
    tasks = [(v, level) for level in levels for v in vectors.readers]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bpk-conformance-") as tmp:
        scratch = Path(tmp)
        # Runtime vectors are written before the pool starts, so workers never race on them.
        for v in vectors.readers:
            if v.path is None and v.problem is None:
                (scratch / (v.id.replace("/", "__") + ".bpk")).write_bytes(v.data())

        def work(task: tuple[ReaderVector, str]) -> Result:
            r = _run_one_reader(reader, task[0], task[1], scratch)
            if progress:
                progress(r)
            return r

        try:
            if jobs <= 1:
                report.results = [work(t) for t in tasks]
            else:
                with ThreadPoolExecutor(max_workers=jobs) as pool:
                    report.results = list(pool.map(work, tasks))
        finally:
            close = getattr(reader, "close", None)
            if close is not None:
                close()
    report.seconds = time.perf_counter() - start
    return report


def run_writers(vectors: Vectors, writer: Callable[[dict, Path], WriterOutcome], *, jobs: int = 1,
                progress: Callable[[Result], None] | None = None) -> Report:
    """Run a writer over every writer vector: exact bytes, or a refusal."""
    report = Report(str(writer), "writer", (), str(vectors.root or "<memory>"))
    start = time.perf_counter()

    def work(vector: WriterVector) -> Result:
        expected_text = f"refusal {'|'.join(vector.refusal)}" if vector.refusal else "bytes"
        result = Result(vector.id, vector.category, "writer", None, PASS, expected=expected_text, source=vector.source,
                        description=vector.description)  # fmt: skip
        if vector.problem is not None:
            result.status, result.message, result.actual = FAIL, vector.problem, "not run"
            if progress:
                progress(result.encodable())
            return result
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bpk-writer-") as tmp:
            outcome = writer(vector.spec, Path(tmp))
        result.seconds = time.perf_counter() - t0
        expected = vector.expected() if vector.expected is not None else None
        if expected is not None and not vector.refusal:
            result.expected = f"{len(expected)} bytes"
        result.actual = {"wrote": f"{len(outcome.data or b'')} bytes", "refused": f"refusal {outcome.error or '(kind not given)'}"}.get(
            outcome.status, outcome.status)
        ok, message, diff = check_writer_result(expected, vector.refusal, outcome)
        if not ok:
            result.status = outcome.status if outcome.status in (CRASH, TIMEOUT) else FAIL
            result.message, result.diff, result.stderr = message, diff, outcome.stderr
        result.encodable()
        if progress:
            progress(result)
        return result

    if jobs <= 1:
        report.results = [work(v) for v in vectors.writers]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            report.results = list(pool.map(work, vectors.writers))
    report.seconds = time.perf_counter() - start
    return report
