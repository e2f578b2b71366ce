"""``BURNPACK_BUILD_KERNELS`` (setup.py): what a build does with the optional compiled kernels.

Unset: every kernel is tried, and one that fails leaves none built; ``1``: a kernel that does not
compile fails the build (CI sets it); ``0``: no kernel is built; anything else is refused. Each
case builds a copy of the build files with a compiler that always fails (``CC=false``), so that
nothing is compiled and only the switch decides. (A tree in which only one kernel fails, and the
wheel it makes: tests/test_packaging.py.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from burnpack.codec._kernels import KERNELS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def build_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("build")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    # the packages: setup.py reads the kernels from burnpack/codec/_kernels.py, the version from burnpack/
    for package in ("burnpack", "conformance"):
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    assert all((tree / Path(*module.split("."))).with_suffix(".c").is_file() for module in KERNELS)
    return tree


def _build(tree: Path, switch: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BURNPACK_BUILD_KERNELS"}
    if switch is not None:
        env["BURNPACK_BUILD_KERNELS"] = switch
    env["CC"] = shutil.which("false") or "false"
    command = [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--force"]
    return subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)


def test_unset_a_kernel_that_does_not_compile_is_skipped(build_tree: Path) -> None:
    result = _build(build_tree, None)
    assert result.returncode == 0, result.stderr
    assert "_cskip" in result.stderr and not list(build_tree.rglob("*.so"))


def test_one_makes_a_kernel_that_does_not_compile_fail_the_build(build_tree: Path) -> None:
    result = _build(build_tree, "1")
    assert result.returncode != 0 and "_cskip.c" in result.stderr


def test_zero_builds_no_kernel(build_tree: Path) -> None:
    result = _build(build_tree, "0")
    assert result.returncode == 0 and "_cskip" not in result.stderr, result.stderr


@pytest.mark.parametrize("switch", ["yes", "true", "2", " 1"])
def test_any_other_value_is_refused_naming_the_three(build_tree: Path, switch: str) -> None:
    result = _build(build_tree, switch)
    assert result.returncode != 0
    assert f"BURNPACK_BUILD_KERNELS={switch!r}: use 1 (every kernel must build), 0 (build none) or leave it unset" in result.stderr
