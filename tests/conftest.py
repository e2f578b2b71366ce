"""Shared test fixtures: where the Burn-produced ground truth lives.

The fixtures stay in ``../shared`` (beside the checkout); ``BURNPACK_SHARED`` overrides the
location. Tests that need them skip with the reason when they are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("BURNPACK_SHARED", REPO_ROOT.parent / "shared"))
BURN_PACK_FIXTURES = SHARED_DIR / "fixtures" / "burn-pack"
BURN_EXAMPLES = SHARED_DIR / "fixtures" / "burn-examples"
PYTORCH_FIXTURES = SHARED_DIR / "fixtures" / "pytorch"


def require(path: Path) -> Path:
    """Return ``path`` or skip the calling test, naming what is missing."""
    if not path.exists():
        pytest.skip(f"Burn fixtures not found at {path} (set BURNPACK_SHARED to the shared/ folder)")
    return path
