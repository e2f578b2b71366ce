"""A real browser for the page tests: headless Chromium from the system (Debian's ``chromium``),
driven by Playwright. Without it the browser tests skip with the reason, and fail under CI=true.

Every page is opened from a file:// URL in an offline context; a test fails on any console error,
uncaught exception, dialog (``alert``) or request for anything but the page itself."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BURN_EXAMPLES, require

from .runs import training_run

CHROMIUM = os.environ.get("BURNPACK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true requires the browser tests", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")  # closed before other modules run (their asyncio loops stay undisturbed)
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install 'burnpack[test]')")
    if CHROMIUM is None:
        _unavailable("no chromium on PATH (Debian: apt-get install chromium)")
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield instance
        instance.close()


class Opened:
    """A page opened from a file:// URL, with everything that went wrong on it."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.url = url
        self.problems: list[str] = []
        self.requests: list[str] = []


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[[Path], Any]]:
    opened: list[Opened] = []

    def open_(path: Path, width: int = 1280) -> Any:
        context = browser.new_context(offline=True, viewport={"width": width, "height": 900})
        page = context.new_page()
        url = path.resolve().as_uri()
        record = Opened(page, url)
        page.on("console", lambda m: record.problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: record.problems.append(f"uncaught: {e}"))
        page.on("dialog", lambda d: (record.problems.append(f"dialog: {d.message}"), d.dismiss()))
        page.on("request", lambda r: record.requests.append(r.url))
        page.goto(url)
        opened.append(record)
        return page

    yield open_
    try:
        for record in opened:
            assert record.problems == [], record.problems
            assert set(record.requests) <= {record.url}, record.requests
    finally:
        for record in opened:
            record.page.context.close()


@pytest.fixture(scope="session")
def mnist() -> Path:
    return require(BURN_EXAMPLES / "mnist-model.bpk")


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory, mnist: Path) -> Path:
    """A Learner artifact directory: checkpoints of five epochs and Burn's metric logs."""
    artifact = tmp_path_factory.mktemp("run") / "artifact"
    training_run(artifact, mnist)
    return artifact
