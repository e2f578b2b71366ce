"""Burn's path rules (burnpack.core.paths) and the file source's descriptor."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import burnpack
from burnpack.core.paths import has_extension, resolve_read_path
from burnpack.core.source import FileSource
from burnpack.core.tensor import gc_paused


def _by_path_object(text: str) -> str:
    """The rule as ``Path`` states it: Rust's ``extension()`` on ``Path(text).name``."""
    p = Path(text)
    if not has_extension(p) and not os.path.exists(text):
        return str(p.with_name(p.name + ".bpk"))
    return text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab./", max_size=12))
def test_a_read_path_resolves_from_its_text_as_from_its_path_object(tmp_path_factory, text):
    folder = tmp_path_factory.getbasetemp()  # nothing named like the drawn texts exists in it
    path = f"{folder}/{text}" if text else text
    try:
        expected = _by_path_object(path)
    except ValueError:  # Path refuses to append to an empty name ("", "/", "a/.."): so must we
        expected = None
    try:
        assert resolve_read_path(path) == expected
    except ValueError:
        assert expected is None


def test_a_file_source_dropped_unclosed_closes_its_descriptor(tmp_path):
    path = burnpack.save({"w": np.ones(3, np.float32)}, tmp_path / "a.bpk")
    source = FileSource(path)
    fd = source.fileno()
    os.fstat(fd)
    del source
    gc.collect()
    try:
        os.fstat(fd)
    except OSError:
        pass
    else:  # the number may have been reused meanwhile, but never by this file
        assert not os.path.samestat(os.fstat(fd), os.stat(path))


def test_a_closed_file_source_has_no_descriptor(tmp_path):
    source = FileSource(burnpack.save({"w": np.ones(3, np.float32)}, tmp_path / "a.bpk"))
    source.close()
    try:
        source.fileno()
    except ValueError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("fileno() of a closed source")
    source.close()  # twice is harmless


def test_pausing_the_collector_restores_the_state_it_found():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
