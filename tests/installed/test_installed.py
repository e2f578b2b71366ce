"""burnpack as installed: its version, its kernels, its commands and its conformance corpus."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from conftest import EXPECTED, command

import burnpack
from burnpack.codec._kernels import KERNELS


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300)


def built_kernels() -> set[str]:
    return {module for module in KERNELS if importlib.util.find_spec(module) is not None}


def test_the_version_is_the_package_metadata_version() -> None:
    assert burnpack.__version__ == metadata.version("burnpack")


@pytest.mark.parametrize("name", ["burnpack", "burnpack-conformance"])
def test_each_command_reports_the_package_metadata_version(name: str) -> None:
    result = run(command(name), "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == [name, metadata.version("burnpack")]


def test_the_kernels_are_all_built_or_none() -> None:
    built = built_kernels()
    assert built in (set(), set(KERNELS)), f"a partial set of kernels: {sorted(built)}"
    if EXPECTED:
        assert built == (set(KERNELS) if EXPECTED == "all" else set())


def test_the_version_line_says_which_kernels_are_built() -> None:
    line = run(command("burnpack"), "--version").stdout
    expected = "every compiled kernel built" if built_kernels() else "no compiled kernel built"
    assert expected in line


def test_a_saved_pack_is_read_back_by_the_commands(tmp_path: Path) -> None:
    path = tmp_path / "model.bpk"
    burnpack.save({"fc.weight": np.arange(12, dtype=np.float32).reshape(4, 3), "fc.bias": np.zeros(4, np.float32)},
                  path, metadata={"producer": "installed-test"})
    inspect = run(command("burnpack"), "inspect", str(path))
    assert inspect.returncode == 0, inspect.stderr
    assert "fc.weight" in inspect.stdout and "producer" in inspect.stdout
    assert run(command("burnpack"), "validate", "--strict", str(path)).returncode == 0
    dump = json.loads(run(command("burnpack"), "dump", str(path)).stdout)
    assert [t["name"] for t in dump["tensors"]] == ["fc.bias", "fc.weight"]
    with burnpack.load(path) as pack:
        np.testing.assert_array_equal(pack["fc.weight"].numpy(), np.arange(12, dtype=np.float32).reshape(4, 3))


def test_python_dash_m_runs_the_same_command() -> None:
    result = run(sys.executable, "-m", "burnpack", "--version")
    assert result.returncode == 0 and result.stdout == run(command("burnpack"), "--version").stdout


_LARGE = "limits/tensor_count_*"
"""The vectors of 100,000 tensors, generated at run time: seconds each, so a test of their own."""


@pytest.mark.parametrize("chosen", [("--exclude", _LARGE), ("--select", _LARGE.replace("*", "at_limit")), ("--select", _LARGE.replace("*", "over_limit"))],
                         ids=["every-other-vector", "tensor-count-at-limit", "tensor-count-over-limit"])  # fmt: skip
def test_the_installed_conformance_corpus_passes_against_burnpack(tmp_path: Path, chosen: tuple[str, str]) -> None:
    result = run(command("burnpack-conformance"), "run", "--self-test", *chosen, "--progress", "never", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "PASS:" in result.stdout and " 0 failed" in result.stdout


def test_the_package_is_typed() -> None:
    package = Path(burnpack.__file__).parent
    assert (package / "py.typed").is_file()
    # the lazy facades' names, for type checkers (generated from their _EXPORTS tables)
    assert all((package / facade / "__init__.pyi").is_file() for facade in ("", "interop", "records"))
