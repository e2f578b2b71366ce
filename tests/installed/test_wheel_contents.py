"""What the wheel put on disk is exactly what runs: the two packages, their data, the kernels when
the wheel is a platform wheel — no C sources, tests, build leftovers or other top-level names."""

from __future__ import annotations

from importlib import metadata
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import PurePosixPath

import pytest
from conftest import installed_from_wheel

from burnpack.codec._kernels import KERNELS

pytestmark = pytest.mark.skipif(not installed_from_wheel(), reason="burnpack is an editable install here: .ci/wheels checks the built wheels")

DIST = metadata.distribution("burnpack")
INFO = f"burnpack-{DIST.version}.dist-info"
FILES = [PurePosixPath(str(f)) for f in DIST.files or []]
# Paths inside the environment: site-packages entries, and the console scripts (``../../../bin``).
PACKAGE_FILES = [f for f in FILES if f.parts[0] in ("burnpack", "burnpack_conformance")]


def wheel_tag() -> str:
    return next(line.split(": ", 1)[1] for line in DIST.read_text("WHEEL").splitlines() if line.startswith("Tag: "))


def is_kernel(path: PurePosixPath) -> bool:
    return any(path.name.endswith(suffix) for suffix in EXTENSION_SUFFIXES if suffix != ".py")


def test_only_burnpack_and_its_conformance_suite_are_installed() -> None:
    tops = {f.parts[0] for f in FILES if not f.parts[0].startswith("..")}
    assert tops == {"burnpack", "burnpack_conformance", INFO}


def test_the_conformance_suite_has_no_generic_top_level_name() -> None:
    assert (DIST.read_text("top_level.txt") or "").split() == ["burnpack", "burnpack_conformance"]


def test_no_source_test_or_build_leftover_is_installed() -> None:
    allowed = {".py", ".pyi", ".pyc", ".typed", ".md", ".json", ".bpk"}  # code, stubs, marker, the suite's docs, schemas and corpus
    strays = [str(f) for f in PACKAGE_FILES if not is_kernel(f) and f.suffix not in allowed]
    assert strays == []
    assert not [str(f) for f in PACKAGE_FILES if f.suffix in (".c", ".h", ".o") or "tests" in f.parts or "build" in f.parts]


def test_a_platform_wheel_holds_every_kernel_and_a_pure_one_none() -> None:
    kernels = {".".join((*f.parent.parts, f.name.split(".")[0])) for f in PACKAGE_FILES if is_kernel(f)}
    if wheel_tag() == "py3-none-any":
        assert kernels == set()
    else:
        assert kernels == set(KERNELS)
        assert "manylinux" in wheel_tag() or not wheel_tag().split("-")[-1].startswith("linux"), f"not repaired: {wheel_tag()}"


def test_the_conformance_command_ships_its_corpus() -> None:
    vectors = [f for f in PACKAGE_FILES if f.parts[:2] == ("burnpack_conformance", "vectors")]
    assert any(f.name == "manifest.json" for f in vectors), "the corpus manifest is not installed"
    assert len(vectors) > 100
