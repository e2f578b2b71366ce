"""Adding a dtype is one schema entry: in a copy of the tree, a throwaway dtype is declared in
``schema/metadata.toml``, the generator rewrites the copy, and only the schema and the generated
code change — yet the hand-written modules read, write and name the new dtype."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from schema import generate

ROOT = generate.ROOT
THROWAWAY = (
    '    { name = "F8E4M3", kind = "float", size = 1, numpy = "float8_e4m3fn", torch = "float8_e4m3fn", '
    'safetensors = "F8_E4M3", aliases = ["fp8"] },\n'
)
"""What Burn would declare for an fp8 element type (e4m3, finite-only: ml_dtypes' ``float8_e4m3fn``)."""


def _snapshot(tree: Path) -> dict[str, str]:
    return {
        str(path.relative_to(tree)): path.read_text()
        for path in sorted(tree.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".toml", ".cddl")
    }


def _add_throwaway_dtype(toml: Path) -> None:
    """The one edit a new dtype needs: its variant (after BF16) and its safetensors code in the order."""
    text = toml.read_text()
    bf16 = next(line for line in text.splitlines(keepends=True) if line.lstrip().startswith('{ name = "BF16", kind = "float"'))
    text = text.replace(bf16, bf16 + THROWAWAY, 1)
    order = 'code_order = ["BOOL", "U8", "I8",'
    assert order in text
    text = text.replace(order, 'code_order = ["BOOL", "F8_E4M3", "U8", "I8",', 1)
    toml.write_text(text)
    tomllib.loads(text)  # still valid TOML


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A copy of the schema and the package with the throwaway dtype added and regenerated; and
    the copy's files as they were before."""
    tree = tmp_path_factory.mktemp("tree")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "schema", tree / "schema", ignore=ignore)
    shutil.copytree(ROOT / "burnpack", tree / "burnpack", ignore=ignore)
    before = _snapshot(tree)
    _add_throwaway_dtype(tree / "schema" / "metadata.toml")
    generate.write(tree)
    return tree, before


def test_a_new_dtype_changes_only_the_schema_and_the_generated_code(tree):
    root, before = tree
    after = _snapshot(root)
    changed = {path for path in after if before.get(path) != after[path]}
    assert changed == {
        "schema/metadata.toml",
        "schema/burnpack.cddl",
        "burnpack/codec/_generated/metadata.py",
    }
    assert generate.stale_files(root) == []


_EXERCISE = r"""
import json, sys
import ml_dtypes, numpy as np
import burnpack
from burnpack import DType
from burnpack.dtypes import debug, dtype_from_numpy, dtype_from_safetensors, numpy_dtype, safetensors_code
from burnpack.interop.safetensors import read_safetensors, write_safetensors
from burnpack.interop.tensors import parse_dtype

assert burnpack.__file__.startswith(sys.argv[1]), burnpack.__file__
fp8 = np.array([[0.5, -1.0, 448.0], [2.0, 0.0, -0.25]], ml_dtypes.float8_e4m3fn)
dtype = dtype_from_numpy(fp8.dtype)
pack = burnpack.load(burnpack.save_bytes({"w": fp8, "b": np.ones(3, np.float32)}))
path = sys.argv[2]
write_safetensors({"w": fp8}, path)
tensors, _ = read_safetensors(path)
from pathlib import Path
from burnpack.interop.formats import read_npz, write_npz
from burnpack.interop.tensors import TensorSet
npz = Path(path).with_suffix(".npz")
write_npz(TensorSet.from_numpy({"w": fp8}), npz)
from_npz = read_npz(npz).entries[0]
from burnpack.core.frameworks import numpy_to_torch, torch_to_numpy
as_torch = numpy_to_torch(fp8)
print(json.dumps({
    "torch": [str(as_torch.dtype), torch_to_numpy(as_torch).astype(np.float32).tolist()],
    "variant": dtype.variant,
    "is_float": dtype.is_float,
    "debug": debug(dtype),
    "numpy": str(numpy_dtype(DType.F8E4M3)),
    "parsed": [debug(parse_dtype(name)) for name in ("F8E4M3", "fp8", "float8_e4m3fn")],
    "safetensors": [safetensors_code(dtype), debug(dtype_from_safetensors("F8_E4M3"))],
    "loaded": [debug(pack["w"].dtype), pack["w"].numpy().astype(np.float32).tolist()],
    "safetensors_file": tensors["w"].astype(np.float32).tolist(),
    "npz": [debug(from_npz.dtype), from_npz.numpy().astype(np.float32).tolist()],
}))
"""


def test_the_hand_written_modules_take_the_new_dtype_from_the_generated_code(tree, tmp_path):
    pytest.importorskip("torch")
    root, _ = tree
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = subprocess.run(
        [sys.executable, "-c", _EXERCISE, str(root), str(tmp_path / "fp8.safetensors")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    values = [[0.5, -1.0, 448.0], [2.0, 0.0, -0.25]]
    assert got == {
        "torch": ["torch.float8_e4m3fn", values],
        "variant": "F8E4M3",
        "is_float": True,
        "debug": "F8E4M3",
        "numpy": "float8_e4m3fn",
        "parsed": ["F8E4M3", "F8E4M3", "F8E4M3"],
        "safetensors": ["F8_E4M3", "F8E4M3"],
        "loaded": ["F8E4M3", values],
        "safetensors_file": values,
        "npz": ["F8E4M3", values],
    }
