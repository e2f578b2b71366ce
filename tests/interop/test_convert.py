"""``burnpack.interop.convert``: containers change, nothing else does unless asked; metadata,
bool stores, atomic output, expectations, filters and the report."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy

import burnpack
from burnpack import BoolStore, DType
from burnpack.interop.converter import ConversionReport, convert, transform
from burnpack.core.progress import ProgressBar
from burnpack.errors import ConversionError, OutputExistsError, UnsafePickleError
from burnpack.interop.registry import detect_format, read_tensors, write_tensors
from burnpack.interop.safetensors import parse_safetensors, serialize_safetensors
from burnpack.interop.tensors import Entry, TensorSet
from tests.conftest import BURN_PACK_FIXTURES, PYTORCH_FIXTURES, require

RNG = np.random.default_rng(7)
U8 = DType.Bool(BoolStore.U8)


def sample_arrays() -> dict[str, np.ndarray]:
    """One tensor of every dtype safetensors, npz and burnpack all hold."""
    f = RNG.standard_normal((3, 4))
    return {
        "layer.f64": f.astype(np.float64),
        "layer.f32": f.astype(np.float32),
        "layer.f16": f.astype(np.float16),
        "layer.bf16": f.astype(ml_dtypes.bfloat16),
        "ints.i64": np.arange(-3, 3, dtype=np.int64),
        "ints.i32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
        "ints.i16": np.arange(4, dtype=np.int16),
        "ints.i8": np.array([-128, 0, 127], dtype=np.int8),
        "ints.u64": np.array([0, 2**64 - 1], dtype=np.uint64),
        "ints.u32": np.array([1, 2**32 - 1], dtype=np.uint32),
        "ints.u16": np.array([1, 65535], dtype=np.uint16),
        "ints.u8": np.array([0, 255], dtype=np.uint8),
        "mask": np.array([[True, False], [False, True]]),
        "scalar": np.array(1.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


def sample_pack(path: Path, **kw) -> Path:
    arrays = sample_arrays()
    tensors = []
    for i, (name, array) in enumerate(arrays.items()):
        dtype = U8 if array.dtype == np.bool_ else None
        data = array.view(np.uint8) if dtype is not None else array
        tensors.append(burnpack.Tensor.from_numpy(name, data, dtype=dtype, param_id=1000 + i))
    burnpack.Writer(tensors, metadata={"note": "hello"}, scalars={"step": 3}, **kw).write(path)
    return path


def described(tset: TensorSet) -> list[tuple[str, DType, tuple[int, ...], bytes]]:
    out = []
    for e in tset.entries:
        array = np.ascontiguousarray(e.numpy())
        out.append((e.name, e.dtype, e.shape, array.tobytes()))
    return sorted(out, key=lambda t: t[0])


@pytest.mark.parametrize("fmt, ext", [("safetensors", ".safetensors"), ("npz", ".npz"), ("burnpack", ".bpk")])
def test_default_conversion_changes_only_the_container(tmp_path, fmt, ext):
    src = sample_pack(tmp_path / "src.bpk")
    convert(src, tmp_path / f"mid{ext}")
    convert(tmp_path / f"mid{ext}", tmp_path / "back.bpk")
    with read_tensors(src) as a, read_tensors(tmp_path / "back.bpk") as b:
        assert described(a) == described(b)


def test_bpk_to_bpk_without_options_is_byte_identical(tmp_path):
    src = sample_pack(tmp_path / "src.bpk")
    report = convert(src, tmp_path / "copy.bpk")
    assert (tmp_path / "copy.bpk").read_bytes() == src.read_bytes()
    assert report.counts()["renamed"] == 0 and not report.warnings


def test_burn_written_dtype_fixtures_survive_safetensors_and_back(tmp_path):
    names = ["bf16", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool_u8", "bool_native"]
    for name in names:
        src = require(BURN_PACK_FIXTURES / f"dtype_{name}.bpk")
        convert(src, tmp_path / f"{name}.safetensors")
        convert(tmp_path / f"{name}.safetensors", tmp_path / f"{name}.bpk", stamp=False)
        with read_tensors(src) as a, read_tensors(tmp_path / f"{name}.bpk") as b:
            want = [(n, U8 if d.variant == "Bool" else d, s, v) for n, d, s, v in described(a)]
            got = described(b)
            if name == "bool_native":  # Native bool is one 0/1 byte, like Bool(U8)
                want = [(n, d, s, np.frombuffer(v, np.bool_).astype(np.uint8).tobytes()) for n, d, s, v in want]
            assert got == want, name


def test_bool_u32_goes_to_safetensors_as_bool_with_a_warning(tmp_path):
    src = require(BURN_PACK_FIXTURES / "dtype_bool_u32.bpk")
    report = convert(src, tmp_path / "b.safetensors")
    arrays, _ = safetensors.numpy.load_file(tmp_path / "b.safetensors"), None
    with burnpack.load(src) as pack:
        for name in pack:
            np.testing.assert_array_equal(arrays[name], pack[name].numpy() != 0)
    assert any("Bool(U32)" in w for w in report.warnings)


def test_qfloat_stays_in_burnpack_and_is_refused_by_safetensors(tmp_path):
    src = require(BURN_PACK_FIXTURES / "qfloat_q8s_per_tensor.bpk")
    convert(src, tmp_path / "q.bpk")
    assert (tmp_path / "q.bpk").read_bytes() == src.read_bytes()
    with pytest.raises(ConversionError, match="safetensors cannot hold QFloat"):
        convert(src, tmp_path / "q.safetensors")
    assert not (tmp_path / "q.safetensors").exists()
    assert os.listdir(tmp_path) == ["q.bpk"]  # no scratch file left behind


def test_safetensors_bool_becomes_bool_u8_with_the_same_bytes(tmp_path):
    mask = np.array([True, False, True])
    (tmp_path / "m.safetensors").write_bytes(safetensors.numpy.save({"mask": mask}))
    convert(tmp_path / "m.safetensors", tmp_path / "m.bpk")
    with burnpack.load(tmp_path / "m.bpk") as pack:
        assert pack["mask"].dtype == U8
        assert pack["mask"].tobytes() == mask.tobytes()


def test_bool_store_option_picks_native(tmp_path):
    (tmp_path / "m.safetensors").write_bytes(safetensors.numpy.save({"mask": np.array([True])}))
    convert(tmp_path / "m.safetensors", tmp_path / "m.bpk", bool_store="Native")
    with burnpack.load(tmp_path / "m.bpk") as pack:
        assert pack["mask"].dtype == DType.Bool(BoolStore.Native)


def test_bool_u8_holding_other_values_is_refused_for_safetensors(tmp_path):
    burnpack.save([burnpack.Tensor.from_numpy("m", np.array([0, 2], np.uint8), dtype=U8)], tmp_path / "m.bpk")
    with pytest.raises(ConversionError, match="values other than 0 and 1"):
        convert(tmp_path / "m.bpk", tmp_path / "m.safetensors")
    assert not (tmp_path / "m.safetensors").exists()


def test_flex32_is_written_to_safetensors_as_f32(tmp_path):
    src = require(BURN_PACK_FIXTURES / "dtype_flex32.bpk")
    report = convert(src, tmp_path / "f.safetensors")
    header = json.loads((tmp_path / "f.safetensors").read_bytes()[8:].split(b"}}")[0] + b"}}")
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F32"}
    assert any("Flex32 written as F32" in w for w in report.warnings)


def test_safetensors_metadata_becomes_burnpack_metadata_with_burns_keys(tmp_path):
    meta = {"format": "safetensors", "producer": "burn", "version": "0.22.0-pre.2", "author": "me"}
    (tmp_path / "a.safetensors").write_bytes(serialize_safetensors({"w": np.ones(2, np.float32)}, meta))
    convert(tmp_path / "a.safetensors", tmp_path / "a.bpk")
    with burnpack.load(tmp_path / "a.bpk") as pack:
        assert pack.metadata == {"format": "burnpack", "producer": "burn", "version": "0.22.0-pre.2", "author": "me"}


def test_metadata_round_trip_through_bpk_is_byte_identical(tmp_path):
    meta = {"format": "safetensors", "producer": "burn", "version": "0.22.0"}
    original = serialize_safetensors({"b": np.arange(3, dtype=np.int64), "a": np.ones((2, 2), np.float32)}, meta)
    (tmp_path / "a.safetensors").write_bytes(original)
    convert(tmp_path / "a.safetensors", tmp_path / "a.bpk")
    convert(tmp_path / "a.bpk", tmp_path / "b.safetensors")
    assert (tmp_path / "b.safetensors").read_bytes() == original


def test_a_source_without_metadata_gets_burns_three_keys(tmp_path):
    convert(require(PYTORCH_FIXTURES / "reader" / "float32.pt"), tmp_path / "a.safetensors")
    _, meta = parse_safetensors((tmp_path / "a.safetensors").read_bytes())
    assert meta == {"format": "safetensors", "producer": "burnpack", "version": burnpack.__version__}


def test_stamp_false_and_extra_metadata(tmp_path):
    convert(require(PYTORCH_FIXTURES / "reader" / "float32.pt"), tmp_path / "a.bpk", stamp=False, metadata={"k": "v"})
    with burnpack.load(tmp_path / "a.bpk") as pack:
        assert pack.metadata == {"k": "v"}


def test_foreign_format_value_such_as_hugging_faces_pt_is_kept_without_a_warning(tmp_path):
    (tmp_path / "hf.safetensors").write_bytes(serialize_safetensors({"w": np.ones(1, np.float32)}, {"format": "pt"}))
    report = convert(tmp_path / "hf.safetensors", tmp_path / "hf.bpk")
    with burnpack.load(tmp_path / "hf.bpk") as pack:
        assert pack.metadata["format"] == "pt"
    assert report.warnings == []  # "format": "pt" is normal in Hugging Face files


def test_scalars_and_param_ids_that_safetensors_cannot_hold_are_reported(tmp_path):
    report = convert(sample_pack(tmp_path / "s.bpk"), tmp_path / "s.safetensors")
    ids = len(sample_arrays())
    assert f"{ids} param ids dropped: safetensors has no place for them" in report.warnings
    assert "1 scalar dropped: safetensors has no place for them" in report.warnings


@pytest.mark.parametrize("target", ["out.bpk", "out.safetensors", "out.npz"])
def test_big_endian_npz_members_convert_to_their_values(tmp_path, target):
    """``np.save`` keeps an array's byte order; every output is little-endian, so the values
    are swapped, not the bytes copied or the member refused."""
    weight = np.arange(6, dtype=">f4").reshape(2, 3)
    steps = np.array([1, 2**40], dtype=">i8")
    np.savez(tmp_path / "in.npz", weight=weight, steps=steps)

    convert(tmp_path / "in.npz", tmp_path / target)
    out = read_tensors(tmp_path / target)

    arrays = {e.name: e.numpy() for e in out.entries}
    assert arrays["weight"].dtype == np.float32 and arrays["steps"].dtype == np.int64
    np.testing.assert_array_equal(arrays["weight"], weight)
    np.testing.assert_array_equal(arrays["steps"], steps)


def test_npz_metadata_keeps_metadata_and_burn_only_dtypes(tmp_path):
    src = sample_pack(tmp_path / "s.bpk")
    convert(src, tmp_path / "s.npz", stamp=False, npz_metadata=True)
    with read_tensors(tmp_path / "s.npz") as tset:
        assert tset.metadata == {"note": "hello"}
        dtypes = {e.name: e.dtype for e in tset.entries}
    assert dtypes["layer.bf16"] == DType.BF16 and dtypes["mask"] == U8
    plain = np.load(tmp_path / "s.npz", allow_pickle=False)  # still an ordinary .npz
    np.testing.assert_array_equal(plain["ints.i32"], sample_arrays()["ints.i32"])


def test_existing_output_is_kept_unless_overwrite(tmp_path):
    src = sample_pack(tmp_path / "s.bpk")
    (tmp_path / "out.safetensors").write_bytes(b"precious")
    with pytest.raises(OutputExistsError):
        convert(src, tmp_path / "out.safetensors")
    assert (tmp_path / "out.safetensors").read_bytes() == b"precious"
    convert(src, tmp_path / "out.safetensors", overwrite=True)
    assert parse_safetensors((tmp_path / "out.safetensors").read_bytes())[0]


def test_converting_a_file_onto_itself_with_overwrite_works(tmp_path):
    src = sample_pack(tmp_path / "s.bpk")
    before = src.read_bytes()
    convert(src, src, overwrite=True)
    assert src.read_bytes() == before


def test_output_without_extension_is_burnpack_with_bpk_appended(tmp_path):
    convert(require(PYTORCH_FIXTURES / "reader" / "float32.pt"), tmp_path / "model")
    assert burnpack.load(tmp_path / "model.bpk")["tensor"].numpy().tolist() == [1.0, 2.5, -3.7000000476837158, 0.0]


def test_formats_are_detected_by_content_not_extension(tmp_path):
    src = sample_pack(tmp_path / "s.bpk")
    for fmt in ("safetensors", "npz", "burnpack"):
        write_tensors(read_tensors(src), tmp_path / f"x_{fmt}.data", fmt)
        assert detect_format(tmp_path / f"x_{fmt}.data") == fmt
    assert detect_format(require(PYTORCH_FIXTURES / "reader" / "tar_float32.tar")) == "pytorch"
    assert detect_format(require(PYTORCH_FIXTURES / "reader" / "simple_legacy.pt")) == "pytorch"
    assert detect_format(require(PYTORCH_FIXTURES / "reader" / "float32.pt")) == "pytorch"


def test_unknown_output_extension_needs_a_format(tmp_path):
    with pytest.raises(ConversionError, match="cannot tell the output format"):
        convert(sample_pack(tmp_path / "s.bpk"), tmp_path / "out.weird")


def test_safetensors_source_stays_zero_copy(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(safetensors.numpy.save({"w": np.ones((64, 64), np.float32)}))
    with read_tensors(tmp_path / "a.safetensors") as tset:
        array = tset["w"].numpy()
        assert not array.flags.owndata and not array.flags.writeable


def test_unsafe_pickle_is_refused_and_nothing_is_written(tmp_path):
    import pickle

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "evil.pt").write_bytes(pickle.dumps({"w": Evil()}, protocol=2))
    with pytest.raises(UnsafePickleError):
        convert(tmp_path / "evil.pt", tmp_path / "evil.bpk", from_format="pytorch")
    assert not marker.exists() and not (tmp_path / "evil.bpk").exists()


def test_top_level_key_selects_a_pytorch_sub_dict(tmp_path):
    src = require(PYTORCH_FIXTURES / "modules" / "top_level_key__top_level_key.pt")
    report = convert(src, tmp_path / "t.bpk", top_level_key="my_state_dict")
    assert sorted(report.applied) == ["conv1.bias", "conv1.weight"]
    with pytest.raises(Exception, match="my_state_dict"):
        convert(src, tmp_path / "u.bpk", top_level_key="nope")


def test_top_level_key_on_other_formats_strips_the_prefix(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(serialize_safetensors({"model.w": np.ones(1, np.float32), "ema.w": np.ones(1, np.float32)}))
    report = convert(tmp_path / "a.safetensors", tmp_path / "a.bpk", top_level_key="model")
    assert report.applied == ["w"] and any("outside top-level key" in w for w in report.warnings)


def test_filter_and_exclude_report_skipped_and_missing(tmp_path):
    src = sample_pack(tmp_path / "s.bpk")
    report = convert(src, tmp_path / "f.bpk", filter=[r"^ints\.", "mask"], exclude=r"\.u\d+$")
    assert sorted(report.applied) == ["ints.i16", "ints.i32", "ints.i64", "ints.i8", "mask"]
    assert "layer.f32" in report.skipped and "ints.u8" in report.skipped
    from burnpack.interop.remap import PathFilter

    report = convert(src, tmp_path / "g.bpk", filter=PathFilter(["scalar", "not.there"]))
    assert report.applied == ["scalar"] and report.missing == ["not.there"]


def test_predicate_filter_sees_module_types(tmp_path):
    src = require(PYTORCH_FIXTURES / "modules" / "linear__linear.pt")
    report = convert(src, tmp_path / "l.bpk", module_types={"fc1": "Linear"}, filter=lambda path, mt: mt == "Struct:Linear")
    assert sorted(report.applied) == ["fc1.bias", "fc1.weight"] and report.skipped == ["fc2.weight"]


def test_remap_renames_and_reports(tmp_path):
    src = require(PYTORCH_FIXTURES / "modules" / "key_remap__key_remap.pt")
    report = convert(src, tmp_path / "k.bpk", remap=[(r"conv\.(.*)", "$1")])
    assert report.renamed == {"conv.conv1.weight": "conv1.weight", "conv.conv1.bias": "conv1.bias", "conv.conv2.weight": "conv2.weight"}


def test_two_tensors_renamed_onto_one_name_is_an_error(tmp_path):
    with pytest.raises(ConversionError, match="both map to"):
        convert(sample_pack(tmp_path / "s.bpk"), tmp_path / "x.bpk", remap=[(r"^ints\.\w+$", "same")])


def test_param_ids_keep_new_and_drop(tmp_path):
    src = sample_pack(tmp_path / "s.bpk")
    convert(src, tmp_path / "new.bpk", param_ids="new")
    convert(src, tmp_path / "drop.bpk", param_ids="drop")
    with burnpack.load(src) as a, burnpack.load(tmp_path / "new.bpk") as b, burnpack.load(tmp_path / "drop.bpk") as c:
        new_ids = [b[n].param_id for n in b]
        assert None not in new_ids and len(set(new_ids)) == len(new_ids)
        assert set(new_ids).isdisjoint(a[n].param_id for n in a)
        assert {c[n].param_id for n in c} == {None}


def test_expect_looks_up_enum_variants_and_alternative_names_like_burn(tmp_path):
    tset = TensorSet.from_numpy({
        "conv.dconv.weight": np.ones((2, 1, 3, 3), np.float32),
        "norm.weight": np.ones(2, np.float32),
        "norm.bias": np.zeros(2, np.float32),
        "extra.weight": np.ones(1, np.float32),
    })  # fmt: skip
    expect = {"conv.DwsConv.dconv.weight": (2, 1, 3, 3), "norm.gamma": (2,), "norm.beta": (2,), "head.weight": (3,)}
    out, report = transform(tset, expect=expect, module_types={"norm": "BatchNorm"}, adapter="pytorch", allow_partial=True)
    assert out.names == ["conv.DwsConv.dconv.weight", "norm.gamma", "norm.beta"]
    assert report.missing == ["head.weight"] and report.unused == ["extra.weight"]
    with pytest.raises(ConversionError, match="missing tensors") as err:
        transform(tset, expect=expect, module_types={"norm": "BatchNorm"}, adapter="pytorch")
    assert err.value.report.missing == ["head.weight"]


def test_expect_refuses_shape_mismatches_unless_validate_false():
    tset = TensorSet.from_numpy({"w": np.ones(3, np.float32)})
    with pytest.raises(ConversionError, match="shape mismatch"):
        transform(tset, expect={"w": (4,)})
    out, report = transform(tset, expect={"w": (4,)}, validate=False, allow_partial=True)
    assert out.names == [] and report.errors


def test_expect_accepts_a_template_file(tmp_path):
    burnpack.save({"fc.weight": np.zeros((2, 3), np.float32)}, tmp_path / "template.bpk")
    src = require(PYTORCH_FIXTURES / "modules" / "linear__linear_with_bias.pt")
    report = convert(src, tmp_path / "o.bpk", expect=tmp_path / "template.bpk", adapter="pytorch", module_types={"fc1": "Linear"},
                     remap=[("^fc1", "fc")])  # fmt: skip
    assert report.applied == ["fc.weight"] and report.unused == ["fc.bias"]


def test_report_summary_names_every_category():
    report = ConversionReport(source="a", target="b", source_format="x", target_format="y", applied=["p"], skipped=["s"],
                              renamed={"o": "p"}, missing=["m"], unused=["u"], transformed={"p": ["transposed"]})  # fmt: skip
    text = report.summary()
    for word in ("applied 1", "skipped 1", "renamed 1", "missing 1", "unused 1", "o -> p", "transposed"):
        assert word in text
    assert json.loads(json.dumps(report.to_dict()))["missing"] == ["m"]


def test_progress_draws_a_bar_on_a_terminal_and_lines_elsewhere_only_when_asked(tmp_path, monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    src = sample_pack(tmp_path / "s.bpk")
    for stream, mode, drawn, lines in ((io.StringIO(), True, False, True), (io.StringIO(), "auto", False, False),
                                       (Tty(), "auto", False, False), (Tty(), True, True, False)):  # fmt: skip
        monkeypatch.setattr(sys, "stderr", stream)
        convert(src, tmp_path / "p.bpk", overwrite=True, progress=mode)
        assert ("100.0%" in stream.getvalue()) is drawn
        assert ("converting: done" in stream.getvalue()) is lines
    bar = ProgressBar(100, stream=io.StringIO())
    bar(50)
    bar(50)
    bar.finish()
    assert "100.0%" in bar.stream.getvalue()


def test_in_memory_mappings_and_entries_convert(tmp_path):
    convert({"a": {"b": np.ones(2, np.float32)}}, tmp_path / "m.bpk")
    assert burnpack.load(tmp_path / "m.bpk").names == ["a.b"]
    tset = TensorSet([Entry.from_numpy("x", np.arange(3, dtype=np.int16))])
    convert(tset, tmp_path / "e.safetensors")
    assert parse_safetensors((tmp_path / "e.safetensors").read_bytes())[0]["x"].tolist() == [0, 1, 2]


def test_writing_pt_without_torch_says_so_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(ConversionError, match="needs torch"):
        convert(sample_pack(tmp_path / "s.bpk"), tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()


def test_a_nested_dict_of_arrays_converts_lists_under_indexed_names_and_reports_the_rest(tmp_path):
    state = {"layers": [{"w": np.ones(2, np.float32)}, (np.zeros(1, np.int8),)], "name": "run", "lr": 0.5}
    report = convert(state, tmp_path / "s.bpk")
    with burnpack.load(tmp_path / "s.bpk") as pack:
        assert pack.names == ["layers.0.w", "layers.1.0"]
    assert report.skipped_entries == {"name": "a str, not a tensor", "lr": "a float, not a tensor"}


@pytest.mark.parametrize(
    ("made", "message"),
    [
        (lambda: np.zeros((2, 3), np.float64), r"tensor 'w': loader produced float64, expected float32"),
        (lambda: np.zeros((3, 2), np.float32), r"tensor 'w': loader produced shape \[3, 2\], expected \[2, 3\]"),
    ],
)
@pytest.mark.parametrize("transposed", [False, True], ids=["as-is", "transposed"])
def test_a_loader_giving_another_dtype_or_shape_is_refused_not_cast(tmp_path, made, message, transposed):
    """A writer copies elements as they are (into the file or a band): another dtype or shape
    from a loader is a conversion error naming the tensor, never a silent cast."""
    from burnpack.interop.layout_base import transpose

    entry = Entry("w", DType.F32, (2, 3), made)
    tset = TensorSet([transpose(entry) if transposed else entry], {})
    with pytest.raises(ConversionError, match=message):
        write_tensors(tset, tmp_path / "out.bpk")
    assert not (tmp_path / "out.bpk").exists()
