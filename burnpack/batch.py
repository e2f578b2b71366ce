"""``burnpack dump --json --batch``: the dump protocol for many files from one process.

Reads one request per line on standard input — ``{"path": "...", "level": "compatible" | "strict"}``
(or a bare path) — and answers each with one line holding the ``dump --json`` object, flushed at
once. Used by ``burnpack-conformance run --reader-batch`` to avoid starting a process per file.
"""

from __future__ import annotations

import json
from typing import TextIO

from .dump import dump


def serve(stdin: TextIO, stdout: TextIO, *, strict: bool = False) -> int:
    """Answer requests until end of input; returns the exit status (0)."""
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line) if line.startswith("{") else {"path": line}
            path = request["path"]
            level = request.get("level", "strict" if strict else "compatible")
            if level not in ("compatible", "strict") or not isinstance(path, str):
                raise ValueError(f"bad request {line!r}")
        except (ValueError, KeyError, TypeError) as exc:
            result = {"ok": False, "error": {"variant": "ProtocolError", "stage": "open", "message": str(exc)}}
        else:
            result = dump(path, strict=level == "strict")
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        stdout.flush()
    return 0
