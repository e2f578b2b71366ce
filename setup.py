"""How the optional compiled kernels are built; everything else is in ``pyproject.toml``.

The kernels themselves are declared there (``[tool.setuptools] ext-modules``, each ``optional``:
a failed compile leaves the Python or numpy path). ``BURNPACK_BUILD_KERNELS`` decides what a
build does with them, as ``CBOR2_BUILD_C_EXTENSION`` does for cbor2:

- unset or empty: build each kernel the platform can build, skip (with setuptools' warning) one
  that fails;
- ``1``: every kernel must build: a kernel that fails to compile fails the build (CI sets it, so
  that no agreement test skips for want of a kernel);
- ``0``: build none (a pure-Python install; kernels already built in place stay where they are).

Any other value fails the build, naming the three.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_ext import build_ext

SWITCH = "BURNPACK_BUILD_KERNELS"


class build_kernels(build_ext):  # noqa: N801 - a setuptools command is named like one
    """``build_ext`` as ``BURNPACK_BUILD_KERNELS`` says (see the module docstring)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        mode = os.environ.get(SWITCH, "")
        if mode not in ("", "0", "1"):
            raise SystemExit(f"{SWITCH}={mode!r}: use 1 (every kernel must build), 0 (build none) or leave it unset")
        if mode == "0":
            self.extensions = []
        for extension in self.extensions:
            extension.optional = mode != "1"


setup(cmdclass={"build_ext": build_kernels})
