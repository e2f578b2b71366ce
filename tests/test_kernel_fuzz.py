"""The kernels' differential fuzz campaign (benchmarks/kernel_fuzz.py) and its changing files.

CI runs the campaign under AddressSanitizer and UBSan (benchmarks/sanitize.py); these tests make
sure its oracle can fail, that a changing file really changes while it is read, and that the
kernels hold their invariants on bytes another process rewrites while they read them.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from benchmarks import kernel_fuzz
from burnpack.codec._kernels import KERNELS, load_kernel

needs_kernels = pytest.mark.skipif(any(load_kernel(m) is None for m in KERNELS), reason="the compiled kernels are not all built")


def test_a_changing_file_changes_while_it_is_read():
    first, second = bytes(4096), b"\xff" * 4096
    seen = set()
    with kernel_fuzz.ChangingFile([first, second]) as shared:
        for _ in range(10_000):  # a look a millisecond: the rewriting process gets a CPU on a busy machine too
            seen.add(shared.view[2048])
            if len(seen) == 2:
                break
            time.sleep(0.001)
    assert seen == {0, 255}


@needs_kernels
@pytest.mark.parametrize("target", kernel_fuzz.TARGETS)
def test_the_oracle_fails_when_a_kernel_disagrees_with_its_twin(monkeypatch, target):
    from burnpack.codec import _cbor
    from burnpack.core import quant
    from burnpack.core import table
    from burnpack.view import stats

    broken = {
        "skip": (_cbor, "python_skip_plain", lambda *a: (0, 0, False)),
        "table": (table, "python_columns", lambda *a: None),
        "quant": (quant, "_values", lambda *a: np.zeros(1, np.int8)),
        "stats": (stats, "_numpy_moments", lambda work, chunk: (chunk.size, 0, -1.0, 1.0, 0.0, 0.0, (0, 0, 0))),
    }[target]
    monkeypatch.setattr(*broken)
    found = [kernel_fuzz.run_one(7, target, i) for i in range(60) if i % kernel_fuzz.CHANGING_EVERY != kernel_fuzz.CHANGING_EVERY - 1]
    assert any(found), target


def test_an_input_is_the_same_every_time_it_is_made():
    made = [kernel_fuzz._skip_input(random.Random("3:skip:5")) for _ in range(2)]
    assert made[0] == made[1]


@needs_kernels
def test_a_short_campaign_finds_no_disagreement(tmp_path):
    result = kernel_fuzz.campaign(2.5, seed=11)
    assert result["failures"] == [] and all(result["inputs"].values())
