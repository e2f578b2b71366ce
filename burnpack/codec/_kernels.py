"""The optional compiled kernels: which there are, and the one rule for choosing one.

Each is a C extension built from the C file of its module's path by ``setup.py``, which reads
:data:`KERNELS` (optional: a failed build leaves the Python or numpy path, which computes the
same; ``setup.py`` says how the ``BURNPACK_BUILD_KERNELS`` switch changes that). A kernel is used only when it is built from the
sources of this version: its ``INTERFACE`` must be the one :data:`KERNELS` names (an in-place
build not redone since its C changed would answer in a shape its caller no longer unpacks, or
without the checks its caller relies on). ``burnpack --version`` reports each kernel by that same
rule (:func:`kernel_states`). A function with a ``compiled=`` keyword asks :func:`use_kernel`: True
demands the kernel (an error when it is not built), False the Python path, None the kernel when
it is built.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from ..errors import OptionError


class Kernel(NamedTuple):
    """What a kernel speeds up, and the ``INTERFACE`` its callers here are written for."""

    what: str
    interface: int


KERNELS = {
    "burnpack.codec._cskip": Kernel("skipping ignored metadata", 2),
    "burnpack.core._ctable": Kernel("scanning the tensors map", 3),
    "burnpack.core._cquant": Kernel("dequantizing", 3),
    "burnpack.view._cstats": Kernel("view statistics", 2),
}
"""Every kernel's module (``INTERFACE`` in its C source, checked by ``tests/codec/test_kernels.py``)."""


def _current(kernel: ModuleType, module: str) -> bool:
    """The one rule: a kernel built from the sources its callers are written for."""
    return getattr(kernel, "INTERFACE", None) == KERNELS[module].interface


def load_kernel(module: str) -> ModuleType | None:
    """The compiled kernel ``module`` (a key of :data:`KERNELS`), or None when it is not built
    or was built from sources of another ``INTERFACE``."""
    try:
        kernel = importlib.import_module(module)
    except ImportError:
        return None
    return kernel if _current(kernel, module) else None


def kernel_states() -> dict[str, str]:
    """Each kernel's state by :func:`load_kernel`'s rule: ``"built"``, ``"stale"`` (built from
    sources of another ``INTERFACE``: not used) or ``"not built"``. A kernel not imported yet is
    loaded from its file without importing the package it sits in (``burnpack --version`` starts
    without numpy)."""
    root = Path(__file__).resolve().parent.parent  # the package: kernels are named from it
    states = {}
    for module in KERNELS:
        kernel: ModuleType | None
        if module in sys.modules:
            kernel = sys.modules[module]  # None: blocked, as when the optional build failed
        else:
            *package, leaf = module.split(".")[1:]
            spec = importlib.machinery.PathFinder.find_spec(leaf, [str(root.joinpath(*package))])
            try:
                kernel = None if spec is None else importlib.util.module_from_spec(spec)
            except ImportError:
                kernel = None
        states[module] = "not built" if kernel is None else "built" if _current(kernel, module) else "stale"
    return states


def use_kernel(kernel: ModuleType | None, module: str, compiled: bool | None) -> bool:
    """Whether to run ``kernel`` (the imported ``module``, None when not built) for ``compiled``."""
    if kernel is None:
        if compiled:
            raise OptionError(f"compiled=True: the compiled kernel for {KERNELS[module].what} ({module}) is not built "
                              "(or not from this version's sources)")
        return False
    return compiled is not False
