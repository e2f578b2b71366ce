"""Each lazy facade (``burnpack``, ``burnpack.records``, ``burnpack.interop``) lists in ``__all__``
exactly the names it imports on first use: what ``from ... import *``, documentation tools and
readers of ``__all__`` see is what the package offers."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["burnpack", "burnpack.records", "burnpack.interop"])
def test_a_facade_lists_exactly_what_it_exports(package):
    module = importlib.import_module(package)
    exported = {name for names in module._EXPORTS.values() for name in names}
    assert sorted(exported - set(module.__all__)) == [] and sorted(set(module.__all__) - exported) == []
    assert all(getattr(module, name) is not None for name in module.__all__)
