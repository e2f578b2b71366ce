"""The one rule for loading an optional compiled kernel (burnpack.codec._kernels), and what reports it.

A kernel is used only when it is built from this version's sources (its ``INTERFACE`` is the one
``KERNELS`` names); ``burnpack --version`` says so by the same rule; under ``CI=true`` every
kernel must be built (``BURNPACK_BUILD_KERNELS=1`` in ``.ci/run``), so that no agreement test
skips for want of one.
"""

from __future__ import annotations

import os
import re
import sys
import types
from pathlib import Path

import pytest

from burnpack.codec._kernels import KERNELS, kernel_states, load_kernel

ROOT = Path(__file__).resolve().parents[2]


def _source(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".c")


def _stand_in(module: str, interface: int | None) -> types.ModuleType:
    kernel = types.ModuleType(module)
    if interface is not None:
        kernel.INTERFACE = interface  # type: ignore[attr-defined]
    return kernel


def test_a_kernel_that_is_not_built_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "burnpack.codec._cskip", None)  # as when the optional build failed
    assert load_kernel("burnpack.codec._cskip") is None


@pytest.mark.parametrize("module", KERNELS)
def test_every_kernel_source_declares_the_interface_its_callers_are_written_for(module: str) -> None:
    declared = re.findall(r'PyModule_AddIntConstant\(m, "INTERFACE", (\d+)\)', _source(module).read_text())
    assert declared == [str(KERNELS[module].interface)]


@pytest.mark.parametrize("module", KERNELS)
@pytest.mark.parametrize("declared", ["none", "older", "newer"])
def test_every_kernel_refuses_a_stale_build_of_itself(monkeypatch: pytest.MonkeyPatch, module: str, declared: str) -> None:
    interface = {"none": None, "older": KERNELS[module].interface - 1, "newer": KERNELS[module].interface + 1}[declared]
    monkeypatch.setitem(sys.modules, module, _stand_in(module, interface))
    assert load_kernel(module) is None
    assert kernel_states()[module] == "stale"


@pytest.mark.parametrize("module", KERNELS)
def test_a_build_of_the_current_sources_is_used(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    kernel = _stand_in(module, KERNELS[module].interface)
    monkeypatch.setitem(sys.modules, module, kernel)
    assert load_kernel(module) is kernel
    assert kernel_states()[module] == "built"


def test_the_states_follow_the_rule_that_loads_kernels() -> None:
    """Each kernel as found on disk (not imported yet: read from its file) is reported by the
    same rule that decides whether it is used."""
    states = kernel_states()
    assert states == {module: "built" if load_kernel(module) is not None else "not built" for module in KERNELS}


def test_version_reports_a_stale_kernel_as_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from burnpack.cli.main import version_text

    for module, (_, interface) in KERNELS.items():
        monkeypatch.setitem(sys.modules, module, _stand_in(module, interface + (module == "burnpack.view._cstats")))
    assert load_kernel("burnpack.view._cstats") is None
    assert version_text().endswith(
        "(compiled kernels built from other sources, not used until rebuilt: view statistics (Python and numpy do that work))"
    )


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only CI requires every kernel (elsewhere Python and numpy stand in)")
def test_under_ci_every_kernel_is_built_from_these_sources() -> None:
    assert kernel_states() == dict.fromkeys(KERNELS, "built"), "CI builds with BURNPACK_BUILD_KERNELS=1: every kernel must load"
