"""The public import paths: every facade name resolves to the object its module defines, each
listed once, and the container's public modules keep their old names."""

from __future__ import annotations

import importlib

import pytest

FACADES = ("burnpack", "burnpack.records", "burnpack.interop")


@pytest.mark.parametrize("facade", FACADES)
def test_every_name_a_facade_exports_resolves_to_the_object_its_module_defines(facade):
    package = importlib.import_module(facade)
    listed = [name for names in package._EXPORTS.values() for name in names]
    assert len(listed) == len(set(listed)) and package.__all__ == sorted(listed)
    for module, names in package._EXPORTS.items():
        source = importlib.import_module(module, facade)
        for name in names:
            assert getattr(package, name) is getattr(source, name), f"{facade}.{name}"
    assert set(package.__all__) <= set(dir(package))


@pytest.mark.parametrize("public", ["quant", "dtypes", "remote", "torch"])
def test_the_containers_public_modules_keep_their_names(public):
    face = importlib.import_module(f"burnpack.{public}")
    core = importlib.import_module(f"burnpack.core.{public}")
    assert face.__all__ == core.__all__ and all(getattr(face, name) is getattr(core, name) for name in core.__all__)


def test_the_usual_imports_work():
    from burnpack import load, save  # noqa: F401
    from burnpack.dtypes import element_size  # noqa: F401
    from burnpack.interop import Format, convert  # noqa: F401
    from burnpack.quant import dequantize, quantize  # noqa: F401
    from burnpack.records import ModuleRecord, OptimizerRecord  # noqa: F401
    from burnpack.remote import FsspecSource  # noqa: F401
    from burnpack.torch import load_file, save_file  # noqa: F401
