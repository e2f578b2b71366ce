"""Missing fixtures are reported, never silently dropped: skipped locally, a failure under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO_ROOT

SELECTION = ["tests/codec/test_schema.py::test_every_valid_burn_fixture_validates_against_the_cddl", "tests/core/test_burn_fixtures.py::test_every_fixture_case_is_covered"]


def _pytest_without_fixtures(ci: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BURNPACK_SHARED": str(REPO_ROOT / "no-such-shared-folder"), "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *SELECTION],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True,
    )


def test_fixture_parameterized_tests_are_collected_and_skipped_when_the_folder_is_absent():
    result = _pytest_without_fixtures("")
    assert result.returncode == 0, result.stdout
    assert "2 skipped" in result.stdout


def test_missing_fixtures_fail_the_run_under_ci():
    result = _pytest_without_fixtures("true")
    assert result.returncode != 0
    assert "CI=true requires every fixture" in result.stdout


def test_no_tracked_file_is_a_copy_of_a_fixture():
    """Fixtures stay in ../shared: a tracked file with a fixture's bytes (an empty ``__init__.py``
    is the empty-file fixture) would be a copy of one."""
    import hashlib

    from tests.conftest import SHARED_DIR, require

    fixtures = require(SHARED_DIR / "fixtures")
    digest = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in fixtures.rglob("*") if p.is_file() and p.suffix in (".bpk", ".pt", ".tar", ".safetensors")}
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout.split(b"\0")
    copies = [(name.decode(), digest[h]) for name in tracked if name and (REPO_ROOT / name.decode()).is_file()
              and (h := hashlib.sha256((REPO_ROOT / name.decode()).read_bytes()).hexdigest()) in digest]  # fmt: skip
    assert not copies, f"tracked files identical to fixtures: {copies}"
