"""Shared test fixtures: where the Burn-produced ground truth lives.

The fixtures stay in ``../shared`` (beside the checkout); ``BURNPACK_SHARED`` overrides the
location. Tests that need them skip with the reason when they are absent, and fail instead
under ``CI=true``, where a missing folder means the run checks less than it claims.
Tests parameterized over a fixture folder are still collected when it is absent: one
``fixtures-missing`` case that skips (or fails) with the reason.
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.servers import RangeServer

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("BURNPACK_SHARED", REPO_ROOT.parent / "shared"))
BURN_PACK_FIXTURES = SHARED_DIR / "fixtures" / "burn-pack"
BURN_EXAMPLES = SHARED_DIR / "fixtures" / "burn-examples"
PYTORCH_FIXTURES = SHARED_DIR / "fixtures" / "pytorch"


IN_CI = os.environ.get("CI", "").strip().lower() in ("true", "1")


def require(path: Path) -> Path:
    """Return ``path``, or skip the calling test naming what is missing (fail it under CI=true)."""
    if not path.exists():
        reason = f"Burn fixtures not found at {path} (set BURNPACK_SHARED to the shared/ folder)"
        if IN_CI:
            pytest.fail(f"{reason}; CI=true requires every fixture", pytrace=False)
        pytest.skip(reason)
    return path


def fixture_params(folder: Path, params: Callable[[], list]) -> list:
    """``params()`` when ``folder`` exists; else one ``fixtures-missing`` case that ``require``s it."""
    if folder.exists():
        return params()
    return [pytest.param(None, id="fixtures-missing", marks=pytest.mark.fixtures_missing(folder))]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fixtures_missing(folder): the folder a parameterized test needs is absent")


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("fixtures_missing")
    if marker is not None:
        require(marker.args[0])


def peak_bytes(func: Callable[[], object]) -> int:
    """Peak bytes Python allocated while ``func`` ran (tracemalloc): for memory-bound tests."""
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def python_calls(func: Callable[[], object]) -> int:
    """Python and C function calls made while ``func`` ran (``sys.setprofile``): for work-bound tests."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        func()
    finally:
        sys.setprofile(None)
    return count


# -- servers for the remote-source tests, started on 127.0.0.1 and stopped by the tests --------------
@pytest.fixture
def http_server():
    server = RangeServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3 server on a free port; yields its URL (dummy credentials are set by the caller)."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
