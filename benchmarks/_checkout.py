"""Another checkout's burnpack, imported beside this one under its own name, with its own kernels.

An A/B run (``open_bench.py --base``, ``cbor_decoder_bench.py --base``, ``ab_tiny.py``) times two
versions in one process, interleaved. Each side must run its own code, compiled kernels
included: the other checkout is copied into a scratch folder, its optional C kernels are built
there from its own sources (as ``pip install`` builds them), and its package is imported as
``label`` with every absolute ``"burnpack.…"`` module name it hands to ``importlib`` (the kernels
it loads by name) renamed to ``"label.…"``, so that it never picks up this checkout's kernels,
whatever the two trees call them.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

_NAMED = re.compile(r"""(["'])burnpack\.""")


def import_checkout(checkout: Path, label: str, scratch: Path) -> ModuleType:
    """``checkout``'s ``burnpack`` package as the module ``label`` (its kernels built in ``scratch``)."""
    project = scratch / f"{label}-project"
    shutil.copytree(checkout, project, ignore=shutil.ignore_patterns(".git", ".venv", "*.so", "build", "__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "build_ext", "--inplace", "-q"],
                   cwd=project, check=True, capture_output=True)  # fmt: skip
    package = scratch / label
    shutil.copytree(project / "burnpack", package)
    for source in package.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        renamed = _NAMED.sub(lambda m: f"{m[1]}{label}.", text)
        if renamed != text:
            source.write_text(renamed, encoding="utf-8")
    if str(scratch) not in sys.path:
        sys.path.insert(0, str(scratch))
    return importlib.import_module(label)


def kernels(package: ModuleType) -> dict[str, bool]:
    """Which of a package's compiled kernels are built (its ``KERNELS`` table, by its own names)."""
    table = importlib.import_module(f"{package.__name__}.codec._kernels" if _has(package, "codec") else f"{package.__name__}._kernels").KERNELS
    found = {}
    for module in table:
        try:
            importlib.import_module(module)
            found[module] = True
        except ImportError:
            found[module] = False
    return found


def _has(package: ModuleType, sub: str) -> bool:
    return (Path(package.__file__ or "").parent / sub).is_dir()
