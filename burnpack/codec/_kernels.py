"""The optional compiled kernels: which there are, and the one rule for choosing one.

Each is a C extension listed in ``pyproject.toml`` (``ext-modules``, optional: a failed build
leaves the Python or numpy path, which computes the same). A function with a ``compiled=``
keyword asks :func:`use_kernel`: True demands the kernel (an error when it is not built), False
the Python path, None the kernel when it is built.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import OptionError

KERNELS = {
    "burnpack.codec._cskip": "skipping ignored metadata",
    "burnpack.core._ctable": "scanning the tensors map",
    "burnpack.core._cencode": "encoding the tensors map",
    "burnpack.core._cquant": "dequantizing",
    "burnpack.view._cstats": "view statistics",
}
"""Every kernel's module and what it speeds up (``burnpack --version`` says which are built)."""


def load_kernel(module: str, interface: int = 1) -> ModuleType | None:
    """The compiled kernel ``module``, or None when it is not built, or was built from sources
    of another ``interface`` (its ``INTERFACE``, 1 when absent): an in-place build not redone
    since its C changed would answer in a shape its caller no longer unpacks."""
    try:
        kernel = importlib.import_module(module)
    except ImportError:
        return None
    return kernel if getattr(kernel, "INTERFACE", 1) == interface else None


def use_kernel(kernel: ModuleType | None, module: str, compiled: bool | None) -> bool:
    """Whether to run ``kernel`` (the imported ``module``, None when not built) for ``compiled``."""
    if kernel is None:
        if compiled:
            raise OptionError(f"compiled=True: the compiled kernel for {KERNELS[module]} ({module}) is not built")
        return False
    return compiled is not False
