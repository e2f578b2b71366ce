"""Atomic output: the destination gets all of the new bytes or keeps what it had."""

from __future__ import annotations

import pytest

from burnpack.atomic import DestinationExists, atomic_file


def test_the_bytes_land_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "out.bin"
    with atomic_file(target) as stream:
        stream.write(b"new")
        assert not target.exists()
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failing_block_keeps_the_old_file_and_removes_the_scratch(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as stream:
            stream.write(b"partial")
            raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_without_replace_a_destination_that_appears_meanwhile_is_kept(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(DestinationExists):
        with atomic_file(target, replace=False) as stream:
            stream.write(b"new")
            target.write_bytes(b"someone else's")
    assert target.read_bytes() == b"someone else's"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_file_exists_error_from_the_callers_block_is_not_taken_for_a_collision(tmp_path):
    with pytest.raises(FileExistsError) as info:
        with atomic_file(tmp_path / "out.bin", replace=False):
            raise FileExistsError("the caller's own")
    assert not isinstance(info.value, DestinationExists)
