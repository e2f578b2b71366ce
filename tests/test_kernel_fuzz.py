"""The kernels' differential fuzz campaign (benchmarks/kernel_fuzz.py) and its changing files.

CI runs the campaign under AddressSanitizer and UBSan (benchmarks/sanitize.py); these tests make
sure its oracle can fail, that a changing file really changes while it is read, and that the
kernels hold their invariants on bytes another process rewrites while they read them.
"""

from __future__ import annotations

import random
import subprocess
import sys
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
    from burnpack.core import metadata, table
    from burnpack.view import stats

    broken = {
        "skip": (_cbor, "python_skip_plain", lambda *a: (0, 0, False)),
        "table": (table, "python_columns", lambda *a: None),
        "encode": (metadata, "python_encode_entries", lambda *a: b"?"),
        "quant": (quant, "_values", lambda *a: np.zeros(1, np.int8)),
        "stats": (stats, "_numpy_moments", lambda work, chunk: (chunk.size, 0, -1.0, 1.0, 0.0, 0.0, (0, 0, 0))),
    }[target]
    monkeypatch.setattr(*broken)
    found = [kernel_fuzz.run_one(7, target, i) for i in range(60) if i % kernel_fuzz.CHANGING_EVERY != kernel_fuzz.CHANGING_EVERY - 1]
    assert any(found), target


def test_an_input_is_the_same_every_time_it_is_made():
    for target in ("skip", "encode"):
        made = [getattr(kernel_fuzz, f"_{'skip_input' if target == 'skip' else 'columns'}")(random.Random(f"3:{target}:5")) for _ in range(2)]
        assert made[0] == made[1]


@needs_kernels
def test_encoding_offsets_that_change_under_the_kernel_writes_the_entries_it_sized():
    """The offsets are read once: another process rewriting them between the kernel's sizing pass
    and its writing pass (small values to 9-byte ones) once made it write past the bytes it had
    sized. Run apart, so that such a write fails this test, not the run."""
    script = "import random\nfrom benchmarks import kernel_fuzz as k\nfor i in range(16):\n    k.check_encode(random.Random(i), True)\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


@needs_kernels
def test_a_short_campaign_finds_no_disagreement(tmp_path):
    result = kernel_fuzz.campaign(2.5, seed=11)
    assert result["failures"] == [] and all(result["inputs"].values())
