"""Burn's path rules (burnpack.core.paths) and the file source's descriptor."""

from __future__ import annotations

import copy
import gc
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import burnpack
from burnpack.core.paths import has_extension, resolve_read_path
from burnpack.core.source import FileSource
from burnpack.core.tensor import gc_paused


def _as_rust_does(text: str) -> str:
    """The rule stated with ``Path``: Rust's ``extension()`` on the file name, ``exists()`` on the
    text as given, and ``set_extension`` leaving a path without a file name as it is."""
    p = Path(text)
    if not has_extension(p) and not os.path.exists(text) and p.name not in ("", ".."):
        return str(p.with_name(p.name + ".bpk"))
    return text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab./", max_size=12))
def test_a_read_path_resolves_from_its_text_as_rust_resolves_it(tmp_path_factory, text):
    folder = tmp_path_factory.getbasetemp()  # nothing named like the drawn texts exists in it
    path = f"{folder}/{text}" if text else text
    assert resolve_read_path(path) == _as_rust_does(path)


def test_a_file_named_with_a_trailing_slash_is_not_that_file(tmp_path):
    file = tmp_path / "model"
    file.write_bytes(b"")
    assert resolve_read_path(f"{file}/") == f"{file}.bpk"  # stat("model/") fails in Rust as here
    assert resolve_read_path(str(file)) == str(file)


def test_an_empty_path_is_an_io_error():
    with pytest.raises(burnpack.IoError):
        burnpack.load("")


def test_a_path_whose_fspath_is_bytes_is_a_type_error():
    class BytesPath:
        def __fspath__(self) -> bytes:
            return b"model.bpk"

    with pytest.raises(TypeError, match="must be text"):
        burnpack.load(BytesPath())  # type: ignore[arg-type]


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


def test_a_copied_file_source_closes_its_descriptor_once(tmp_path):
    source = FileSource(burnpack.save({"w": np.ones(3, np.float32)}, tmp_path / "a.bpk"))
    twin = copy.copy(source)
    twin.close()
    other = os.open(tmp_path / "a.bpk", os.O_RDONLY)  # may get the freed number
    try:
        source.close()  # finds it closed: never closes the number again
        os.fstat(other)
    finally:
        os.close(other)
    with pytest.raises(ValueError, match="closed"):
        source.fileno()
    assert source.current_size() == source.size  # no descriptor asked once closed


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
