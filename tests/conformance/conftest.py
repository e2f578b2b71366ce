"""Shared helpers for the conformance-suite tests (the corpus is loaded once per session)."""

from __future__ import annotations

import pytest

from conformance import generate, load_vectors


@pytest.fixture(scope="session")
def vectors():
    return load_vectors()


@pytest.fixture(scope="session")
def corpus():
    return generate.build_corpus()
