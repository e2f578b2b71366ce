"""``burnpack dump --json --batch``: the dump protocol for many files from one process.

Reads one request per line on standard input — ``{"path": "...", "level": "compatible" | "strict"}``
(or a bare path) — and answers each with one line holding the ``dump --json`` object, flushed at
once. Used by ``burnpack-conformance run --reader-batch`` to avoid starting a process per file.
"""

from __future__ import annotations

import json
from typing import TextIO

from ..core.dump import dump
from ..core.sidefile import parse_json


REQUEST_MAX_CHARS = 1 << 20
"""Default cap on one request line: a path and a level need far less."""


def serve(stdin: TextIO, stdout: TextIO, *, strict: bool = False, max_line: int = REQUEST_MAX_CHARS) -> int:
    """Answer requests until end of input; returns the exit status (0).

    A line longer than ``max_line`` characters (default :data:`REQUEST_MAX_CHARS`) is answered
    with a ``ProtocolError`` without being held in memory; a JSON request is parsed with the JSON
    checks of :func:`burnpack.core.sidefile.parse_json`.
    """
    while True:
        line = stdin.readline(max_line + 1)
        if not line:
            return 0
        if len(line) > max_line and not line.endswith("\n"):
            while (rest := stdin.readline(max_line)) and not rest.endswith("\n"):
                pass  # the rest of the line is dropped, a bounded piece at a time
            _answer(stdout, _protocol_error(f"request line longer than {max_line} characters"))
            continue
        line = line.strip()
        if not line:
            continue
        try:
            request = parse_json(line, ValueError, "request") if line.startswith("{") else {"path": line}
            path = request["path"]
            level = request.get("level", "strict" if strict else "compatible")
            if level not in ("compatible", "strict") or not isinstance(path, str):
                raise ValueError(f"bad request {line!r}")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            result = _protocol_error(str(exc))
        else:
            result = dump(path, strict=level == "strict")
        _answer(stdout, result)


def _protocol_error(message: str) -> dict:
    return {"ok": False, "error": {"variant": "ProtocolError", "stage": "open", "message": message}}


def _answer(stdout: TextIO, result: dict) -> None:
    stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    stdout.flush()
