"""The corpus's declared expectations against the reference implementation (``burnpack``).

Every generated vector's expectation is compared with what burnpack does, so a generator mistake
(or a burnpack bug) is caught before the corpus is written.
"""

from __future__ import annotations

from typing import Any

from .corpus import expectation_of
from .reference import dump, write
from .runner import check_reader_result, check_writer_result, writer_outcome_of


def cross_check(corpus: Any) -> list[str]:
    """Every disagreement between the corpus's declared expectations and burnpack."""
    problems = []
    for case in corpus.readers:
        if case.runtime:
            continue
        data, exp = expectation_of(case)
        for level in ("compatible", "strict"):
            ok, message, _ = check_reader_result(exp.level(level), exp.dump, dump(data, level))
            if not ok:
                problems.append(f"reader {case.id} [{level}]: {message}")
    for case in corpus.writers:
        outcome = writer_outcome_of(lambda spec: write(spec), case.spec)
        expected = next((r for r in corpus.readers if r.id == case.expected_reader), None)
        expected_bytes = expected.build()[0] if expected is not None else None
        ok, message, _ = check_writer_result(expected_bytes, (case.refusal,) if case.refusal else (), outcome)
        if not ok:
            problems.append(f"writer {case.id}: {message}")
    return problems
