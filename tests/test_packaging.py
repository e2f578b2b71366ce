"""The release's sources: one version, its changelog entry, and the wheel of a tree in which one
kernel fails to compile (the build switch's other cases: tests/codec/test_build_switch.py).

The built wheels themselves are checked by ``.ci/wheels`` and ``tests/installed``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import burnpack
from burnpack.codec._kernels import KERNELS

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_has_one_source() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "burnpack.__version__"}


def test_the_changelog_s_newest_release_is_the_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    version, date = headings[1]
    assert version == burnpack.__version__ and date, "the newest release entry must be the version, dated"


def test_every_kernel_is_built_from_its_c_file_and_every_c_file_is_a_kernel() -> None:
    sources = {".".join(path.relative_to(ROOT).with_suffix("").parts) for path in (ROOT / "burnpack").rglob("*.c")}
    assert sources == set(KERNELS)


def build_wheel(tree: Path, out: Path, switch: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BURNPACK_BUILD_KERNELS"}
    if switch is not None:
        env["BURNPACK_BUILD_KERNELS"] = switch
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(out), str(tree)],
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def tree_with_a_broken_kernel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package sources in which the last kernel does not compile."""
    tree = tmp_path_factory.mktemp("tree")
    for name in ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy(ROOT / name, tree / name)
    for package in ("burnpack", "conformance"):
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    broken = tree.joinpath(*list(KERNELS)[-1].split(".")).with_suffix(".c")
    broken.write_text(broken.read_text(encoding="utf-8") + "\n#error this kernel does not compile\n", encoding="utf-8")
    return tree


def test_a_kernel_that_fails_to_compile_gives_the_pure_wheel_with_no_kernel(tree_with_a_broken_kernel: Path, tmp_path: Path) -> None:
    result = build_wheel(tree_with_a_broken_kernel, tmp_path, None)
    assert result.returncode == 0, result.stderr
    assert f"the compiled kernel {list(KERNELS)[-1]} failed to build" in result.stdout + result.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))]
    assert "burnpack_conformance/vectors/manifest.json" in names
