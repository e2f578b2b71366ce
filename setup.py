"""Builds the optional compiled kernels; everything else is declared in ``pyproject.toml``.

The kernels are the modules listed in ``burnpack/codec/_kernels.py`` (``KERNELS``, the one list: each is
built from the C file of the same path). ``BURNPACK_BUILD_KERNELS`` decides what a build does with
them, as ``CBOR2_BUILD_C_EXTENSION`` does for cbor2:

* ``1``: every kernel must build; a kernel that fails to compile fails the build (CI sets it, so
  that no agreement test skips for want of a kernel; cibuildwheel sets it for every platform wheel).
* ``0``: none is built (a pure-Python install and a ``py3-none-any`` wheel; kernels already built
  in place stay where they are).
* unset or empty: every kernel is tried; if one fails to compile, none is kept (in place too) and
  the wheel is pure Python — never a platform wheel without its kernels. ``pip install`` without a
  compiler takes this path and works, slower (docs/install.md, docs/kernels.md).

Any other value fails the build, naming the three.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError, CompileError

ROOT = Path(__file__).resolve().parent
SWITCH = "BURNPACK_BUILD_KERNELS"


def kernel_modules() -> list[str]:
    """The kernels' module names: the keys of ``KERNELS`` in ``burnpack/codec/_kernels.py``, read
    without importing burnpack (its dependencies are not in the build environment)."""
    tree = ast.parse((ROOT / "burnpack" / "codec" / "_kernels.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "KERNELS" and isinstance(node.value, ast.Dict):
            return [ast.literal_eval(key) for key in node.value.keys if key is not None]
    raise SystemExit("setup.py: burnpack/codec/_kernels.py defines no KERNELS")


def kernels_mode() -> str:
    """``required``, ``none`` or ``optional``, from ``BURNPACK_BUILD_KERNELS``."""
    value = os.environ.get(SWITCH, "")
    modes = {"1": "required", "0": "none", "": "optional"}
    if value not in modes:
        raise SystemExit(f"{SWITCH}={value!r}: use 1 (every kernel must build), 0 (build none) or leave it unset")
    return modes[value]


class BuildKernels(build_ext):
    """``build_ext`` with the all-or-none rule: in the optional mode a failed kernel removes every
    kernel built so far (in place too) and leaves a pure-Python build."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (CCompilerError, BaseError, OSError) as exc:
            if kernels_mode() == "optional":
                raise KernelFailed(ext.name, exc) from exc
            raise CompileError(f"the compiled kernel {ext.name} ({ext.sources[0]}) failed to build: {exc}") from exc

    def run(self) -> None:
        if kernels_mode() != "optional":
            super().run()
            return
        try:
            super().run()
        except KernelFailed as failed:
            for ext in self.extensions:
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            self.extensions.clear()
            self.distribution.ext_modules = []
            self.warn(f"burnpack: the compiled kernel {failed.module} failed to build ({failed.cause}); building none — "
                      f"Python and numpy do their work (set {SWITCH}=1 to make this an error)")


class KernelFailed(Exception):
    """A kernel that did not compile, and why."""

    def __init__(self, module: str, cause: BaseException) -> None:
        super().__init__(module, cause)
        self.module, self.cause = module, cause


class Wheel(bdist_wheel):
    """A wheel tagged by what the build produced: a platform wheel when the kernels were built, a
    pure ``py3-none-any`` wheel when none were."""

    def run(self) -> None:
        if not self.skip_build:
            self.run_command("build")
        self.root_is_pure = not self.distribution.has_ext_modules()
        super().run()


KERNELS = [] if kernels_mode() == "none" else [
    Extension(module, sources=[str(Path(*module.split(".")).with_suffix(".c"))]) for module in kernel_modules()
]

setup(
    ext_modules=KERNELS,
    # The conformance suite installs as ``burnpack_conformance`` (``conformance`` is too generic a
    # top-level name); the repository keeps its ``conformance/`` folder.
    packages=[*find_packages(include=["burnpack", "burnpack.*"]), "burnpack_conformance"],
    package_dir={"burnpack_conformance": "conformance"},
    cmdclass={"build_ext": BuildKernels, "bdist_wheel": Wheel},
)
