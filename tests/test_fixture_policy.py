"""Missing fixtures are reported, never silently dropped: skipped locally, a failure under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO_ROOT

SELECTION = ["tests/test_schema.py::test_every_valid_burn_fixture_validates_against_the_cddl", "tests/test_burn_fixtures.py::test_every_fixture_case_is_covered"]


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
