"""Every command works on every dtype every format can hold (bf16 included), QFloat tensors are
refused in one line naming ``--dequantize`` where a format cannot hold them, and ``.npz`` output
holds tensors only unless ``--npz-metadata``."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import burnpack
from burnpack import BoolStore, DType, Tensor
from burnpack.cli.main import main
from burnpack.quant import parse_scheme

UNIT = ["F64", "F32", "Flex32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8"]
BOOLS = [DType.Bool(store) for store in BoolStore]
DTYPES = [getattr(DType, name) for name in UNIT] + BOOLS
# What a format without the dtype writes instead (same values): Burn's reading of it back.
REWRITTEN = {("Flex32", fmt): "F32" for fmt in ("safetensors", "pt")}  # (--npz-metadata records Flex32)


def _label(dtype: DType) -> str:
    return dtype.variant if dtype.value is None else f"Bool({dtype.value.value})"


def _source(tmp_path, dtype: DType):
    values = np.array([[0, 1, 2], [3, 1, 0]], np.float32)
    if dtype.is_bool:
        values = values != 0
    path = tmp_path / f"{_label(dtype)}.bpk"
    burnpack.save([Tensor.from_numpy("layer.w", values, dtype=dtype)], path)
    return path


def _diff_json(a, b, capsys) -> tuple[int, dict]:
    code = main(["diff", "--json", str(a), str(b)])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("fmt", ["safetensors", "npz", "pt"])
@pytest.mark.parametrize("dtype", DTYPES, ids=_label)
def test_convert_diff_and_inspect_work_on_every_dtype_in_every_format(tmp_path, capsys, dtype, fmt):
    if fmt == "pt":
        pytest.importorskip("torch")
    source = _source(tmp_path, dtype)
    out = tmp_path / f"out.{fmt}"
    extra = ["--npz-metadata"] if fmt == "npz" else []
    assert main(["convert", "-q", "--no-stamp", str(source), str(out), *extra]) == 0
    code, result = _diff_json(source, out, capsys)
    changes = [c["changes"] for c in result["changed"]]
    if dtype.is_bool and fmt != "npz":  # safetensors and .pt have one bool type: the store is Burn's choice on reading
        assert all(set(c) <= {"dtype"} for c in changes) and not any(c.get("elements_differ") for c in result["changed"])
    elif (dtype.variant, fmt) in REWRITTEN:
        assert changes == [{"dtype": {"a": dtype.variant, "b": REWRITTEN[dtype.variant, fmt]}}]
    else:
        assert (code, result["identical"]) == (0, True), result
    back = tmp_path / "back.bpk"
    assert main(["convert", "-q", str(out), str(back)]) == 0
    assert main(["inspect", str(back)]) == 0
    assert "layer.w" in capsys.readouterr().out


@pytest.mark.parametrize("dtype", DTYPES, ids=_label)
def test_inspect_shows_every_dtype_of_a_pack(tmp_path, capsys, dtype):
    assert main(["inspect", "--stats", str(_source(tmp_path, dtype))]) == 0
    out = capsys.readouterr().out
    assert f"layer.w  {_label(dtype)}" in out


def test_diff_compares_a_bf16_safetensors_file_with_a_pack(tmp_path, capsys):
    import ml_dtypes

    from burnpack.interop.safetensors import serialize_safetensors

    values = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    st = tmp_path / "m.safetensors"
    st.write_bytes(serialize_safetensors({"w": values}))
    bpk = tmp_path / "m.bpk"
    burnpack.save({"w": values}, bpk)
    assert main(["diff", str(st), str(bpk)]) == 0
    assert capsys.readouterr().out == "identical\n"
    other = tmp_path / "other.bpk"
    burnpack.save({"w": values + np.array(1, ml_dtypes.bfloat16)}, other)
    assert main(["diff", str(st), str(other)]) == 1
    assert "3/3 elements differ, max abs diff 1" in capsys.readouterr().out


def test_diff_reads_bf16_arrays_numpy_saved_into_an_npz(tmp_path, capsys):
    import ml_dtypes

    values = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    npz = tmp_path / "m.npz"
    np.savez(npz, w=values)  # numpy writes ml_dtypes' bfloat16 as raw 2-byte items ('|V2')
    bpk = tmp_path / "m.bpk"
    burnpack.save({"w": values}, bpk)
    assert main(["diff", str(npz), str(bpk)]) == 0
    assert capsys.readouterr().out == "identical\n"


# -- QFloat ----------------------------------------------------------------------------------------
@pytest.fixture
def quantized(tmp_path):
    values = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    path = tmp_path / "q.bpk"
    burnpack.save({"w": burnpack.quantize(values, parse_scheme("q8s", block=8))}, path)
    return path, values


@pytest.mark.parametrize("suffix", [".safetensors", ".npz", ".pt"])
def test_converting_qfloat_to_a_format_without_it_is_one_line_naming_dequantize(quantized, tmp_path, capsys, suffix):
    path, _ = quantized
    assert main(["convert", str(path), str(tmp_path / f"out{suffix}")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tensor 'w': " in err and "cannot hold QFloat(Q8S block 8 F32); pass --dequantize" in err
    assert not (tmp_path / f"out{suffix}").exists()


def test_diff_names_qfloat_dtypes_with_the_short_scheme_label(quantized, tmp_path, capsys):
    path, values = quantized
    plain = tmp_path / "f.bpk"
    burnpack.save({"w": values}, plain)
    assert main(["diff", str(path), str(plain)]) == 1
    assert "dtype QFloat(Q8S block 8 F32) -> F32" in capsys.readouterr().out


def test_diff_atol_compares_quantized_tensors_by_their_dequantized_values(quantized, tmp_path, capsys):
    path, values = quantized
    nudged = values.copy()
    nudged[0, 0] += 0.01  # another scale for the first block of 8: its values move by up to 0.01
    other = tmp_path / "q2.bpk"
    burnpack.save({"w": burnpack.quantize(nudged, parse_scheme("q8s", block=8))}, other)
    assert main(["diff", str(path), str(other)]) == 1
    assert "7/64 elements differ, max abs diff 0.00999999" in capsys.readouterr().out
    assert main(["diff", "--atol", "0.01", str(path), str(other)]) == 0
    assert main(["diff", "--atol", "0.001", str(path), str(other)]) == 1


def test_save_file_of_an_fp8_torch_tensor_says_burn_has_no_such_dtype(tmp_path):
    torch = pytest.importorskip("torch")
    import burnpack.torch as bt

    with pytest.raises(burnpack.BurnpackError, match=r"tensor 'w': torch dtype float8_e4m3fn has no Burn DType"):
        bt.save_file({"w": torch.zeros(2, dtype=torch.float8_e4m3fn)}, tmp_path / "f8.bpk")
    assert not (tmp_path / "f8.bpk").exists()


# -- npz metadata ----------------------------------------------------------------------------------
@pytest.fixture
def with_metadata(tmp_path):
    path = tmp_path / "m.bpk"
    burnpack.save({"w": np.ones(2, np.float32)}, path, metadata={"producer": "test"})
    return path


def test_npz_output_holds_tensors_only_and_says_where_the_metadata_went(with_metadata, tmp_path, capsys):
    out = tmp_path / "m.npz"
    assert main(["convert", str(with_metadata), str(out)]) == 0
    assert zipfile.ZipFile(out).namelist() == ["w.npy"]
    assert sorted(np.load(out)) == ["w"]
    assert "1 metadata entry not written: the .npz holds tensors only (--npz-metadata keeps them" in capsys.readouterr().out


def test_npz_metadata_writes_the_metadata_member_burnpack_reads_back(with_metadata, tmp_path, capsys):
    out = tmp_path / "m.npz"
    assert main(["convert", "--npz-metadata", str(with_metadata), str(out)]) == 0
    assert sorted(zipfile.ZipFile(out).namelist()) == ["__metadata__.npy", "w.npy"]
    assert "written to the __metadata__ member" in capsys.readouterr().out
    from burnpack.interop.registry import read_tensors

    with read_tensors(out) as tset:
        assert tset.metadata["producer"] == "test"


def test_npz_metadata_for_another_output_format_is_a_usage_error(with_metadata, tmp_path, capsys):
    assert main(["convert", "--npz-metadata", str(with_metadata), str(tmp_path / "m.safetensors")]) == 2
    assert "--npz-metadata applies to .npz output, not safetensors" in capsys.readouterr().err
