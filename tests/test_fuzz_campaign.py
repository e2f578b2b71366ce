"""The fuzz campaign's oracle and input generation (benchmarks/fuzz_campaign.py).

The campaign itself runs in CI as its own 60-second step (.ci/run); these tests make sure its
oracle can fail and its inputs can be replayed.
"""

from __future__ import annotations

import random
import signal
import warnings
from pathlib import Path

import pytest

import burnpack
from benchmarks import fuzz_campaign as campaign


@pytest.fixture
def alarm():
    previous = signal.signal(signal.SIGPROF, campaign._on_alarm)
    yield
    signal.signal(signal.SIGPROF, previous)


def _judge(read, data: bytes = b"x" * 100):
    return campaign.judge("bpk", data, Path("/nonexistent"), random.Random(0), read)


def test_a_burnpack_error_is_an_accepted_rejection(alarm):
    def read(data, path, rng):
        raise burnpack.ValidationError("bad")

    assert _judge(read) is None


def test_an_exception_outside_the_burnpack_tree_is_a_failure(alarm):
    def read(data, path, rng):
        return {}["missing"]

    assert _judge(read)[0] == "foreign"


def test_allocating_beyond_the_memory_bound_is_a_failure_even_when_wrapped(alarm):
    def read(data, path, rng):
        try:
            bytearray(campaign.memory_bound(len(data)) + (64 << 20))
        except MemoryError as exc:
            raise burnpack.ValidationError("wrapped") from exc

    assert _judge(read)[0] == "over_memory"


def test_cpu_time_beyond_the_bound_is_a_failure(alarm, monkeypatch):
    monkeypatch.setattr(campaign, "TIME_BASE", 0.001)
    monkeypatch.setattr(campaign, "TIME_PER_MB", 0.0)

    def read(data, path, rng):
        while True:  # interrupted by the CPU-time alarm at TIME_KILL_FACTOR x the bound
            pass

    assert _judge(read)[0] == "over_time"


def test_inputs_are_a_function_of_seed_and_index_only():
    corpus = campaign.seed_corpus()
    first = [campaign.generate(corpus, 5, i) for i in range(40)]
    again = [campaign.generate(corpus, 5, i) for i in range(40)]
    assert first == again
    assert {reader for reader, _ in first} == set(campaign.READERS)


def test_a_short_campaign_covers_every_reader_without_failures(alarm):
    with warnings.catch_warnings():  # the in-process worker silences warnings, as workers do
        result = campaign.run_campaign(seconds=600, workers=1, seed=3, limit=100 * len(campaign.READERS))
    assert result["inputs"] == 100 * len(campaign.READERS)
    assert all(count == 100 for count in result["inputs_per_reader"].values())
    assert result["failures"] == 0, result["failure_samples"][:5]
