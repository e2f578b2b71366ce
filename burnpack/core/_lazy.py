"""Package attributes imported on first use (PEP 562), so that importing a package — and
starting the command line — loads only what a run needs.

A lazy package lists each public name once, in its ``_EXPORTS`` table; type checkers read the
same names from the package's ``__init__.pyi``, which ``python -m schema.generate`` writes from
that table (a test fails when it is stale)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Iterable[str]], *, submodules: bool = False
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """A package's ``__getattr__``, ``__dir__`` and ``__all__``: ``exports`` maps each module
    (relative to ``package``, e.g. ``".reader"``) to the public names it defines; with
    ``submodules``, any other name is tried as a submodule (``burnpack.errors``)."""
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
        elif submodules and not name.startswith("__"):
            try:
                value = importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(module_of))

    return __getattr__, __dir__, sorted(module_of)
