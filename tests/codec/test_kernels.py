"""The one rule for loading an optional compiled kernel (burnpack.codec._kernels.load_kernel)."""

from __future__ import annotations

import sys
import types

import pytest

from burnpack.codec._kernels import load_kernel


def test_a_kernel_that_is_not_built_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "burnpack._absent_kernel", None)  # as when the optional build failed
    assert load_kernel("burnpack._absent_kernel") is None


@pytest.mark.parametrize(("declared", "asked", "used"), [(None, 1, True), (None, 2, False), (2, 2, True), (3, 2, False)])
def test_a_kernel_is_used_only_at_the_interface_its_caller_unpacks(monkeypatch: pytest.MonkeyPatch, declared: int | None, asked: int, used: bool) -> None:
    kernel = types.ModuleType("burnpack._stand_in_kernel")
    if declared is not None:
        kernel.INTERFACE = declared  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "burnpack._stand_in_kernel", kernel)
    assert (load_kernel("burnpack._stand_in_kernel", interface=asked) is kernel) is used
