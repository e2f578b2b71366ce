"""Dtype and quantization facts live in ``schema/metadata.toml``: what the hand-written code offers
follows the generated tables, and the tables agree with independent definitions of the types."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import burnpack
from burnpack import quant
from burnpack.codec._generated.metadata import (
    DTYPE_INFO,
    QUANT_VALUE_INFO,
    SCALE_DTYPE_INFO,
    BoolStore,
    DType,
    QuantMode,
    QuantScheme,
    QuantStore,
    QuantValue,
    ScaleDtype,
)
from burnpack.cli.main import _parser
from burnpack.dtypes import debug
from burnpack.errors import UnsupportedQuantization
from burnpack.interop.tensors import parse_dtype

PACKAGE = Path(burnpack.__file__).parent


def _choices(option: str) -> list[str]:
    """The choices ``burnpack convert`` offers for ``option``."""
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    convert = commands.choices["convert"]
    action = next(a for a in convert._actions if option in a.option_strings)
    assert action.choices is not None
    return list(action.choices)


def test_no_hand_written_module_imports_a_private_generated_name():
    private = []
    for path in PACKAGE.rglob("*.py"):
        if "_generated" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and "_generated" in node.module:
                private += [f"{path.relative_to(PACKAGE)}: {alias.name}" for alias in node.names if alias.name.startswith("_")]
    assert private == []


def test_an_unknown_dtype_is_refused_naming_every_dtype_it_could_be():
    with pytest.raises(ValueError) as refused:
        parse_dtype("f12")
    named = str(refused.value).split("expected one of ", 1)[1].split(", ")
    expected = [v for v in DType.VARIANTS if v in DType.UNIT_VARIANTS] + [debug(DType.Bool(store)) for store in BoolStore]
    assert sorted(named) == sorted(expected)


def _quantizes(value: QuantValue, scale: ScaleDtype) -> bool:
    """Whether ``quantize`` computes a per-tensor scheme of this value and scale dtype."""
    try:
        quant.quantize(np.ones((2, 4), np.float32), QuantScheme(value, QuantStore.Native, QuantMode.Symmetric, scale, None))
    except UnsupportedQuantization:
        return False
    return True


@pytest.mark.parametrize("value", list(QuantValue))
def test_convert_offers_exactly_the_values_quantize_computes(value):
    assert (value.name.lower() in _choices("--quantize")) == _quantizes(value, ScaleDtype.F32)


@pytest.mark.parametrize("scale", list(ScaleDtype))
def test_convert_offers_exactly_the_scale_dtypes_quantize_rounds_onto(scale):
    assert (scale.name.lower() in _choices("--scale-dtype")) == _quantizes(QuantValue.Q8S, scale)


@pytest.mark.parametrize("value", [v for v, info in QUANT_VALUE_INFO.items() if info.kind == "int"])
def test_integer_value_ranges_are_the_symmetric_or_full_ranges_of_their_bit_width(value):
    info = QUANT_VALUE_INFO[value]
    half = 1 << (info.bits - 1)
    assert info.range == ((-(half - 1), half - 1) if value.name.endswith("S") else (-half, half - 1))


_SCALE_TYPES = {ScaleDtype.F32: np.float32, ScaleDtype.F16: np.float16, ScaleDtype.BF16: ml_dtypes.bfloat16, ScaleDtype.UE4M3: ml_dtypes.float8_e4m3fn}


@pytest.mark.parametrize("scale", list(_SCALE_TYPES))
def test_scale_sizes_maxima_and_grids_are_those_of_the_numeric_type(scale):
    finfo = ml_dtypes.finfo(_SCALE_TYPES[scale])
    info = SCALE_DTYPE_INFO[scale]
    assert np.dtype(_SCALE_TYPES[scale]).itemsize == info.size
    assert info.max == float(finfo.max)
    assert info.grid is not None
    step, subnormals = info.grid
    assert step == 1 << (23 - finfo.nmant)
    if subnormals is not None:  # an exponent range narrower than f32's
        assert subnormals == (float(finfo.smallest_normal), float(finfo.smallest_subnormal))
    else:
        assert float(finfo.smallest_normal) <= float(np.finfo(np.float32).smallest_normal)


def test_the_scale_dtype_without_rounding_has_none_and_is_ue8m0_with_its_power_of_two_maximum():
    assert [s for s, info in SCALE_DTYPE_INFO.items() if info.grid is None] == [ScaleDtype.UE8M0]
    assert SCALE_DTYPE_INFO[ScaleDtype.UE8M0].max == 2.0**127 and SCALE_DTYPE_INFO[ScaleDtype.UE8M0].size == 1


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_every_torch_storage_class_names_the_element_type_of_its_dtype():
    torch = pytest.importorskip("torch")
    for variant, info in DTYPE_INFO.items():
        if info.torch_storage is not None:
            assert getattr(torch, f"{info.torch_storage}Storage").dtype == getattr(torch, info.torch), variant
