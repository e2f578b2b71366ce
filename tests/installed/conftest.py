"""The installed-package tests: they exercise burnpack as ``pip install`` leaves it, and need nothing
from the source tree (no fixtures, no checkout on ``sys.path``).

They run in the main suite against the development install, and in ``.ci/wheels`` (and
cibuildwheel) against each built wheel installed in a fresh venv, copied out of the checkout.
There ``BURNPACK_WHEEL_KERNELS`` says what the wheel must hold: ``all`` (a platform wheel, every
kernel) or ``none`` (the pure-Python wheel); the session then refuses to run against anything but
a non-editable install.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import pytest

EXPECTED = os.environ.get("BURNPACK_WHEEL_KERNELS", "")
BIN = Path(sys.executable).parent


def command(name: str) -> str:
    """The installed console script ``name``, beside this interpreter."""
    path = BIN / (name + (".exe" if os.name == "nt" else ""))
    assert path.is_file(), f"{name} is not installed beside {sys.executable}"
    return str(path)


def installed_from_wheel() -> bool:
    """Whether the burnpack imported here is the one a wheel installed: its distribution has a
    ``WHEEL`` file and a ``RECORD`` listing the imported ``burnpack/__init__.py`` (an editable
    install records only its import hook; a checkout's ``*.egg-info`` has no ``WHEEL``)."""
    import burnpack

    dist = metadata.distribution("burnpack")
    if dist.read_text("WHEEL") is None:
        return False
    recorded = [f for f in dist.files or [] if str(f).replace("\\", "/") == "burnpack/__init__.py"]
    return bool(recorded) and Path(str(dist.locate_file(recorded[0]))).resolve() == Path(burnpack.__file__).resolve()


def pytest_sessionstart(session: pytest.Session) -> None:
    if EXPECTED not in ("", "all", "none"):
        raise pytest.UsageError(f"BURNPACK_WHEEL_KERNELS={EXPECTED!r}: use all or none")
    if EXPECTED and not installed_from_wheel():
        raise pytest.UsageError("BURNPACK_WHEEL_KERNELS is set, but burnpack is an editable install: install the built wheel")
