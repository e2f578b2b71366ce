"""``burnpack convert`` and ``burnpack convert-checkpoint`` from the command line."""

from __future__ import annotations

import argparse

import json
from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.interop.safetensors import parse_safetensors, serialize_safetensors
from burnpack.records import LrSchedulerRecord, ModuleRecord, OptimizerRecord
from tests.conftest import PYTORCH_FIXTURES, require
from tests.interop.test_pytorch_reader import f32, storage_ref, tensor, write_zip

MNIST_ST = PYTORCH_FIXTURES / "examples" / "mnist.safetensors"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_convert_safetensors_to_bpk_prints_a_summary(tmp_path, capsys):
    code, out, err = run(capsys, "convert", require(MNIST_ST), tmp_path / "mnist.bpk")
    assert code == 0 and err == ""
    assert "(safetensors) ->" in out and "20 tensors" in out and "applied 20" in out
    with burnpack.load(tmp_path / "mnist.bpk") as pack:
        assert len(pack) == 20 and pack.metadata["format"] == "burnpack"


def test_convert_json_report(tmp_path, capsys):
    code, out, _ = run(capsys, "convert", require(MNIST_ST), tmp_path / "m.bpk", "--json", "--filter", r"^fc", "--exclude", "bias$")
    report = json.loads(out)
    assert code == 0 and report["applied"] == ["fc1.weight", "fc2.weight"] and "conv1.weight" in report["skipped"]


def test_convert_keeps_an_existing_output_without_overwrite(tmp_path, capsys):
    target = tmp_path / "m.bpk"
    target.write_bytes(b"keep me")
    code, out, err = run(capsys, "convert", require(MNIST_ST), target)
    assert code == 1 and out == "" and "exists" in err and "--overwrite" in err
    assert target.read_bytes() == b"keep me"
    code, _, _ = run(capsys, "convert", require(MNIST_ST), target, "--overwrite", "-q")
    assert code == 0 and target.read_bytes()[:4] == b"NRUB"


def test_convert_with_adapter_remap_and_module_types(tmp_path, capsys):
    src = require(PYTORCH_FIXTURES / "modules" / "key_remap_chained__key_remap.pt")
    code, out, _ = run(
        capsys, "convert", src, tmp_path / "k.bpk", "--adapter", "pytorch",
        "--remap", r"(.+)\.block\.0\.(.+)=$1.conv.$2", "--remap", r"(.+)\.block\.1\.(.+)=$1.bn.$2",
        "--remap", r"layer\.([0-9])\.(.+)=layer.blocks.$1.$2", "--type-rule", r"bn$=BatchNorm", "--json",
    )  # fmt: skip
    report = json.loads(out)
    assert code == 0
    assert report["renamed"]["layer.1.block.1.weight"] == "layer.blocks.1.bn.gamma"
    assert "layer.blocks.0.bn.beta" in report["applied"]


def test_convert_burn_import_mimics_pytorch_store_defaults(tmp_path, capsys):
    src = require(PYTORCH_FIXTURES / "modules" / "non_contiguous_indexes__non_contiguous_indexes.pt")
    code, out, _ = run(capsys, "convert", src, tmp_path / "n.bpk", "--burn-import", "--json")
    assert code == 0
    assert sorted(json.loads(out)["applied"]) == sorted(f"fc.{i}.{p}" for i in range(5) for p in ("weight", "bias"))


def test_convert_to_npz_and_back_with_explicit_formats(tmp_path, capsys):
    assert run(capsys, "convert", require(MNIST_ST), tmp_path / "weights", "--to", "npz")[0] == 0
    assert np.load(tmp_path / "weights", allow_pickle=False)["fc2.bias"].shape == (10,)
    assert run(capsys, "convert", tmp_path / "weights", tmp_path / "again.safetensors", "--from", "npz")[0] == 0
    a, _ = parse_safetensors(require(MNIST_ST).read_bytes())
    b, meta = parse_safetensors((tmp_path / "again.safetensors").read_bytes())
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert meta["format"] == "safetensors"


def test_convert_expect_reports_missing_tensors_and_fails(tmp_path, capsys):
    burnpack.save({"fc1.weight": np.zeros((11616, 32), np.float32), "nope.weight": np.zeros(1, np.float32)}, tmp_path / "want.bpk")
    code, out, err = run(capsys, "convert", require(MNIST_ST), tmp_path / "o.bpk", "--expect", tmp_path / "want.bpk",
                         "--adapter", "pytorch", "--module-type", "fc1=Linear")  # fmt: skip
    assert code == 1 and "missing tensors: ['nope.weight']" in err and not (tmp_path / "o.bpk").exists()
    code, out, _ = run(capsys, "convert", require(MNIST_ST), tmp_path / "o.bpk", "--expect", tmp_path / "want.bpk",
                       "--adapter", "pytorch", "--module-type", "fc1=Linear", "--allow-partial")  # fmt: skip
    assert code == 0 and "missing 1" in out and "unused 19" in out


def test_convert_metadata_options(tmp_path, capsys):
    src = tmp_path / "a.safetensors"
    src.write_bytes(serialize_safetensors({"w": np.ones(2, np.float32)}, {"author": "x"}))
    run(capsys, "convert", src, tmp_path / "a.bpk", "--metadata", "run=7", "--no-stamp")
    assert burnpack.load(tmp_path / "a.bpk").metadata == {"author": "x", "run": "7"}
    run(capsys, "convert", src, tmp_path / "b.bpk", "--no-metadata")
    assert set(burnpack.load(tmp_path / "b.bpk").metadata) == {"format", "producer", "version"}


def test_convert_errors_are_reported_with_exit_status_1_and_usage_errors_with_2(tmp_path, capsys):
    code, _, err = run(capsys, "convert", require(MNIST_ST), tmp_path / "o.bpk", "--adapter", "sideways")
    assert code == 2 and "unknown adapter" in err
    code, _, err = run(capsys, "convert", tmp_path / "absent.bpk", tmp_path / "o.bpk")
    assert code == 1 and "error" in err
    (tmp_path / "junk.bin").write_bytes(b"\x00" * 32)
    code, _, err = run(capsys, "convert", tmp_path / "junk.bin", tmp_path / "o.bpk")
    assert code == 1 and "error" in err


def test_convert_progress_always_writes_lines_when_stderr_is_not_a_terminal(tmp_path, capsys):
    code, _, err = run(capsys, "convert", require(MNIST_ST), tmp_path / "o.bpk", "--progress", "always")
    assert code == 0 and err.splitlines()[-1] == "converting: done (1.4 MiB)"
    code, _, err = run(capsys, "convert", require(MNIST_ST), tmp_path / "p.bpk")
    assert code == 0 and err == ""  # auto: a bar only on a terminal, and only for large outputs


def save_torch_like(path: Path, root: object) -> Path:
    """``torch.save`` of ``root`` without torch: every numpy array becomes a storage + tensor."""
    storages: dict[str, bytes] = {}
    kinds = {np.dtype("float32"): "FloatStorage", np.dtype("int64"): "LongStorage"}

    def build(value: object) -> object:
        if isinstance(value, np.ndarray):
            key = str(len(storages))
            array = value if value.flags.c_contiguous else value.copy()
            storages[key] = array.astype(array.dtype.newbyteorder("<")).tobytes()
            stride = tuple(int(s // array.itemsize) for s in array.strides) if array.ndim else ()
            return tensor(storage_ref(key, kinds[array.dtype], array.size), 0, tuple(array.shape), stride)
        if isinstance(value, dict):
            return {k: build(v) for k, v in value.items()}
        if isinstance(value, list):
            return [build(v) for v in value]
        if isinstance(value, tuple):
            return tuple(build(v) for v in value)
        return value

    return write_zip(path, build(root), storages)


def test_convert_checkpoint_pytorch_to_burn_without_torch(tmp_path, capsys):
    from tests.interop.test_checkpoint import adam_sd, cosine_sd, model_sd

    model = model_sd()
    ck = {"model": model, "optimizer": adam_sd(model), "scheduler": cosine_sd(k=4), "epoch": 4}
    src = save_torch_like(tmp_path / "train.pt", ck)
    code, out, err = run(capsys, "convert-checkpoint", src, tmp_path / "artifacts" / "checkpoint", "--module-type", "emb=Embedding", "--seed", "1")
    assert code == 0, err
    assert "optimizer: Adam, state for 7 parameters, step 4" in out and "CosineAnnealingLrSchedulerConfig::new(0.001, 10)" in out
    record = ModuleRecord.load(tmp_path / "artifacts" / "checkpoint" / "model-4.bpk")
    optim = OptimizerRecord.load(tmp_path / "artifacts" / "checkpoint" / "optim-4.bpk")
    assert optim.check(record).ok and "bn.gamma" in record
    np.testing.assert_array_equal(record["fc.weight"].numpy(), model["fc.weight"].T)
    assert LrSchedulerRecord.load(tmp_path / "artifacts" / "checkpoint" / "scheduler-4.bpk").scalar("0.current_iter", "usize") == 3
    code, _, err = run(capsys, "convert-checkpoint", src, tmp_path / "artifacts" / "checkpoint", "--module-type", "emb=Embedding")
    assert code == 1 and "exist" in err  # kept without --overwrite


def test_convert_checkpoint_refuses_ambiguous_weights(tmp_path, capsys):
    from tests.interop.test_checkpoint import adam_sd, cosine_sd, model_sd

    model = model_sd()
    src = save_torch_like(tmp_path / "train.pt", {"model": model, "optimizer": adam_sd(model), "scheduler": cosine_sd()})
    code, _, err = run(capsys, "convert-checkpoint", src, tmp_path / "ck")
    assert code == 1 and "emb.weight" in err and "--module-type" in err


# -- no silent no-ops: each case through the command line and the Python API ------------------------
@pytest.fixture
def linear_st(tmp_path) -> Path:
    """PyTorch-named tensors: a Linear fc1, a BatchNorm bn, an int buffer."""
    path = tmp_path / "m.safetensors"
    path.write_bytes(serialize_safetensors({
        "fc1.weight": np.arange(6, dtype=np.float32).reshape(3, 2), "fc1.bias": np.zeros(3, np.float32),
        "bn.weight": np.ones(3, np.float32), "bn.bias": np.zeros(3, np.float32),
        "bn.running_mean": np.zeros(3, np.float32), "bn.running_var": np.ones(3, np.float32),
        "bn.num_batches_tracked": np.zeros((), np.int64),
    }))  # fmt: skip
    return path


@pytest.mark.parametrize(("given", "suggestion"), [("linear", "Linear"), ("Linnear", "Linear"), ("Foo", None)])
def test_an_unknown_module_type_is_a_usage_error_with_the_closest_suggestion(linear_st, tmp_path, capsys, given, suggestion):
    from burnpack.interop import convert
    from burnpack.errors import UnknownModuleType

    code, out, err = run(capsys, "convert", linear_st, tmp_path / "o.bpk", "--adapter", "pytorch", "--module-type", f"fc1={given}")
    assert code == 2 and out == "" and not (tmp_path / "o.bpk").exists()
    assert err.startswith(f"burnpack: UnknownModuleType: unknown module type {given!r}") and "Linear, Lstm, MultiHeadAttention, PRelu" in err
    assert (f"did you mean {suggestion!r}" in err) is (suggestion is not None)
    with pytest.raises(UnknownModuleType) as info:
        convert(linear_st, tmp_path / "o.bpk", adapter="pytorch", module_types={"fc1": given})
    assert isinstance(info.value, ValueError) and info.value.suggestion == suggestion
    code, _, err = run(capsys, "convert", linear_st, tmp_path / "o.bpk", "--adapter", "pytorch", "--type-rule", f"^fc={given}")
    assert code == 2 and "unknown module type in rule" in err


def test_half_acts_only_on_burns_module_list_so_without_module_types_it_is_refused(linear_st, tmp_path, capsys):
    from burnpack.interop import convert
    from burnpack.errors import UnmatchedOptionError

    code, _, err = run(capsys, "convert", linear_st, tmp_path / "o.bpk", "--adapter", "half")
    assert code == 1 and not (tmp_path / "o.bpk").exists()
    assert "--adapter half: it acts on module types and no tensor has one: give --module-type, --type-rule or --infer-types" in err
    with pytest.raises(UnmatchedOptionError) as info:
        convert(linear_st, tmp_path / "o.bpk", adapter="half")
    assert info.value.unmatched[0][:2] == ("adapter", "half")
    report = convert(linear_st, tmp_path / "o.bpk", adapter="half", infer_types=True)
    with burnpack.load(tmp_path / "o.bpk") as pack:  # Linear -> F16; BatchNorm excluded, as in Burn
        assert {n: pack[n].dtype.variant for n in pack} == {
            "fc1.weight": "F16", "fc1.bias": "F16", "bn.weight": "F32", "bn.bias": "F32",
            "bn.running_mean": "F32", "bn.running_var": "F32", "bn.num_batches_tracked": "I64"}  # fmt: skip
    assert report.options == {"adapter=half": "2 tensors changed", "infer_types": "2 module types inferred"}


def test_cast_acts_on_every_float_tensor_without_module_types(linear_st, tmp_path, capsys):
    code, out, _ = run(capsys, "convert", linear_st, tmp_path / "o.bpk", "--adapter", "cast=bf16")
    assert code == 0 and "adapter=cast=BF16: 6 tensors changed" in out
    with burnpack.load(tmp_path / "o.bpk") as pack:
        assert sorted({pack[n].dtype.variant for n in pack}) == ["BF16", "I64"]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--module-type", "fc1=Linear"], "--module-type fc1=Linear: no adapter uses module types"),
        (["--adapter", "pytorch", "--module-type", "zzz=Linear", "--module-type", "fc1=Linear"], "--module-type zzz=Linear: matches no tensor's module path"),
        (["--adapter", "pytorch", "--type-rule", "^qq$=Linear", "--module-type", "fc1=Linear"], "--type-rule ^qq$=Linear: matches no tensor's module path"),
        (["--remap", "nothing=else"], "--remap 'nothing' -> 'else': matches no tensor name"),
        (["--filter", "^nothing"], "--filter ^nothing: matches no tensor name"),
        (["--exclude", "nothing$"], "--exclude nothing$: matches no tensor name"),
        (["--enum-variant", "conv=Dws"], "--enum-variant conv=Dws: no tensor is under 'conv'"),
        (["--map-indices-contiguous"], "--map-indices-contiguous: the indices have no gaps"),
        (["--adapter", "half", "--type-rule", "^bn$=BatchNorm"], "--adapter half: no tensor of the module types it acts on needs a change"),
    ],
)  # fmt: skip
def test_an_option_that_changes_nothing_fails_naming_it_unless_allowed(linear_st, tmp_path, capsys, options, named):
    code, _, err = run(capsys, "convert", linear_st, tmp_path / "o.bpk", *options)
    assert code == 1 and named in err and "(--allow-unmatched to go on)" in err and not (tmp_path / "o.bpk").exists()
    code, out, _ = run(capsys, "convert", linear_st, tmp_path / "o.bpk", *options, "--allow-unmatched")
    assert code == 0 and "changed nothing" in out


def test_unmatched_options_fail_through_the_python_api_too(linear_st, tmp_path):
    from burnpack.interop import convert
    from burnpack.errors import UnmatchedOptionError

    with pytest.raises(UnmatchedOptionError) as info:
        convert(linear_st, tmp_path / "o.bpk", filter=["^fc", "^nothing"], exclude="zzz")
    assert info.value.unmatched == [("filter", "^nothing", "matches no tensor name"), ("exclude", "zzz", "matches no tensor name")]
    assert isinstance(info.value, ValueError) and not (tmp_path / "o.bpk").exists()
    report = convert(linear_st, tmp_path / "o.bpk", filter=["^fc", "^nothing"], allow_unmatched=True)
    assert sorted(report.applied) == ["fc1.bias", "fc1.weight"] and report.warnings == ["filter ^nothing changed nothing: matches no tensor name"]


def test_the_report_says_what_each_option_changed(linear_st, tmp_path, capsys):
    code, out, _ = run(capsys, "convert", linear_st, tmp_path / "o.bpk", "--adapter", "pytorch", "--module-type", "fc1=Linear",
                       "--type-rule", "^bn$=BatchNorm", "--remap", "^bn\\.(.+)=norm.$1", "--exclude", "num_batches", "--json")  # fmt: skip
    assert code == 0
    assert json.loads(out)["options"] == {
        "remap": "5 tensors renamed", "adapter=pytorch": "3 tensors changed", "module_types=fc1=Linear": "2 tensors typed",
        "type_rules=^bn$=BatchNorm": "5 tensors typed", "exclude=num_batches": "1 tensor matched"}


def test_convert_refuses_a_directory_as_output_and_an_extension_that_contradicts_to(linear_st, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    code, _, err = run(capsys, "convert", linear_st, tmp_path / "out")
    assert code == 1 and err == f"burnpack: {tmp_path / 'out'}: IsADirectoryError: is a directory; give the output's file name\n"
    assert not (tmp_path / "out.bpk").exists()
    code, _, err = run(capsys, "convert", linear_st, tmp_path / "o.bpk", "--to", "safetensors")
    assert code == 2 and "'.bpk' says burnpack but --to says safetensors" in err


@pytest.fixture
def burn_checkpoint(tmp_path) -> Path:
    from tests.interop.test_checkpoint import adam_sd, cosine_sd, model_sd

    model = model_sd()
    src = save_torch_like(tmp_path / "train.pt", {"model": model, "optimizer": adam_sd(model), "scheduler": cosine_sd(k=4), "epoch": 4})
    pytorch_to_burn = main(["convert-checkpoint", str(src), str(tmp_path / "ck"), "--module-type", "emb=Embedding", "-q"])
    assert pytorch_to_burn == 0
    return tmp_path / "ck"


def test_convert_checkpoint_refuses_names_that_contradict_what_it_writes(burn_checkpoint, tmp_path, capsys):
    code, _, err = run(capsys, "convert-checkpoint", burn_checkpoint, tmp_path / "resumed.bpk")
    assert code == 2 and err == f"burnpack: {tmp_path / 'resumed.bpk'}: UsageError: Burn -> PyTorch writes a torch.save file (.pt), not .bpk\n"
    code, _, err = run(capsys, "convert-checkpoint", tmp_path / "train.pt", tmp_path / "ck.pt")
    assert code == 2 and "PyTorch -> Burn writes a checkpoint directory, not a .pt file" in err
    (tmp_path / "taken.pt").write_bytes(b"keep")
    code, _, err = run(capsys, "convert-checkpoint", burn_checkpoint, tmp_path / "taken.pt")
    assert code == 1 and err == f"burnpack: {tmp_path / 'taken.pt'}: FileExistsError: exists; use --overwrite to replace it\n"
    code, _, err = run(capsys, "convert-checkpoint", burn_checkpoint, tmp_path / "ck")
    assert code == 1 and "IsADirectoryError" in err


def test_convert_checkpoint_refuses_dcp_on_the_way_to_burn(burn_checkpoint, tmp_path, capsys):
    code, _, err = run(capsys, "convert-checkpoint", tmp_path / "train.pt", tmp_path / "ck2", "--dcp", "--module-type", "emb=Embedding")
    assert code == 2 and err.startswith("burnpack: UsageError: --dcp applies to Burn -> PyTorch") and not (tmp_path / "ck2").exists()


def torch_checkpoint_with_extras(path: Path) -> Path:
    """What training scripts save: state dicts plus an argparse.Namespace and numpy scalars."""
    torch = pytest.importorskip("torch")
    import argparse

    net = torch.nn.Sequential(torch.nn.Linear(3, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.ones(1, 3)).sum().backward()
    opt.step()
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": np.int64(2), "best_acc": np.float64(0.75),
                "args": argparse.Namespace(lr=0.1, arch="mlp")}, path)  # fmt: skip
    return path


def test_a_checkpoint_with_numpy_scalars_and_a_namespace_converts_skipping_what_is_not_data(tmp_path, capsys):
    src = torch_checkpoint_with_extras(tmp_path / "train.pt")
    code, out, err = run(capsys, "convert-checkpoint", src, tmp_path / "ck", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["epoch"] == 2 and report["skipped_entries"] == {"args": "argparse.Namespace"}
    assert report["optimizer"] == "SGD" and report["params_with_state"] == 2
    optim = OptimizerRecord.load(tmp_path / "ck" / "optim-2.bpk")
    assert json.loads(optim.metadata["torch.extra"]) == {"epoch": 2, "best_acc": 0.75}


def test_the_python_api_reports_skipped_checkpoint_entries_too(tmp_path):
    from burnpack.interop import pytorch_to_burn_checkpoint

    src = torch_checkpoint_with_extras(tmp_path / "train.pt")
    report = pytorch_to_burn_checkpoint(src, tmp_path / "ck")
    assert report.skipped_entries == {"args": "argparse.Namespace"} and "args (argparse.Namespace)" in report.summary()


def test_cast_through_the_python_api_casts_every_float_tensor(linear_st, tmp_path):
    from burnpack.interop import convert

    report = convert(linear_st, tmp_path / "o.bpk", adapter="cast=f16")
    assert report.options == {"adapter=cast=F16": "6 tensors changed"}
    with burnpack.load(tmp_path / "o.bpk") as pack:
        assert sorted({pack[n].dtype.variant for n in pack}) == ["F16", "I64"]


def test_the_python_api_refuses_a_directory_target_and_a_contradicting_extension(linear_st, tmp_path):
    from burnpack.interop import ConversionError, OutputExistsError, convert

    (tmp_path / "out").mkdir()
    with pytest.raises(ConversionError, match="is a directory"):
        convert(linear_st, tmp_path / "out")
    assert not (tmp_path / "out.bpk").exists()
    with pytest.raises(ConversionError, match="'.bpk' says burnpack but to_format says safetensors"):
        convert(linear_st, tmp_path / "o.bpk", to_format="safetensors")
    (tmp_path / "taken.bpk").write_bytes(b"keep")
    with pytest.raises(OutputExistsError) as info:
        convert(linear_st, tmp_path / "taken.bpk")
    assert info.value.filename == str(tmp_path / "taken.bpk") and (tmp_path / "taken.bpk").read_bytes() == b"keep"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--filter", "["], "burnpack: OptionError: --filter '[': missing ]: ["),
        (["--exclude", "("], "burnpack: OptionError: --exclude '(': missing ): ("),
        (["--remap", "[=x"], "burnpack: UsageError: --remap: invalid remap regex '[': missing ]: ["),
        (["--adapter", "pytorch", "--type-rule", "(=Linear"], "burnpack: OptionError: --type-rule '(': missing ): ("),
        (["--remap", "(=x"], "burnpack: UsageError: --remap: invalid remap regex '(': missing ): ("),
        (["--filter", "(a)\\1"], "burnpack: OptionError: --filter '(a)\\\\1': invalid escape sequence: \\1 (backreferences are not supported, as in Burn's regex crate)"),
        (["--adapter", "bogus"], "burnpack: OptionError: unknown adapter 'bogus'; expected pytorch, to-pytorch, half, cast=DTYPE or identity"),
    ],
)  # fmt: skip
def test_malformed_options_are_usage_errors(linear_st, tmp_path, capsys, options, message):
    code, out, err = run(capsys, "convert", linear_st, tmp_path / "o.bpk", *options)
    assert (code, out, err) == (2, "", message + "\n") and not (tmp_path / "o.bpk").exists()


def _listed_pt(path: Path) -> Path:
    """``torch.save({'layers': [{'w': ...}, {'w': ...}], 'head': ..., 'epoch': 3})``, built by hand."""
    storage = storage_ref("0", "FloatStorage", 3)
    root = {"layers": [{"w": tensor(storage, 0, (1,), (1,))}, {"w": tensor(storage, 1, (1,), (1,))}],
            "head": tensor(storage, 2, (1,), (1,)), "epoch": 3}  # fmt: skip
    return write_zip(path, root, {"0": np.array([1, 2, 3], "<f4").tobytes()})


def test_tensors_in_lists_of_a_pt_convert_under_indexed_names(tmp_path, capsys):
    code, _, _ = run(capsys, "convert", _listed_pt(tmp_path / "listed.pt"), tmp_path / "listed.bpk", "-q")
    with burnpack.load(tmp_path / "listed.bpk") as pack:
        assert code == 0 and {n: pack[n].numpy().tolist() for n in pack.names} == {
            "layers.0.w": [1.0], "layers.1.w": [2.0], "head": [3.0]}  # fmt: skip


def test_what_a_pt_holds_besides_tensors_is_reported_as_skipped_with_its_reason(tmp_path, capsys):
    code, out, _ = run(capsys, "convert", _listed_pt(tmp_path / "listed.pt"), tmp_path / "a.bpk")
    assert code == 0 and "skipped_entries 1" in out and "epoch: an int, not a tensor" in out
    code, out, _ = run(capsys, "convert", tmp_path / "listed.pt", tmp_path / "b.bpk", "--json")
    assert json.loads(out)["skipped_entries"] == {"epoch": "an int, not a tensor"}


def test_diff_reads_safetensors_and_npz_with_their_own_libraries(tmp_path, capsys):
    arrays = {"w": np.arange(4, dtype=np.float32), "i": np.arange(3, dtype=np.int16)}
    burnpack.save(arrays, tmp_path / "a.bpk")
    for name in ("a.safetensors", "a.npz"):
        assert run(capsys, "convert", tmp_path / "a.bpk", tmp_path / name, "-q")[0] == 0
    code, out, _ = run(capsys, "diff", tmp_path / "a.safetensors", tmp_path / "a.npz", "--json")
    report = json.loads(out)
    assert report["readers"] == {"a": "safetensors.numpy", "b": "numpy.load"}
    assert code == 0 or report["metadata"]  # same tensors; metadata stamps may differ by format
    assert not (report["added"] or report["removed"] or report["changed"])


def _repeating_view(path: Path) -> Path:
    """One stored element viewed as 2 x 3 (stride 0): its copy takes 24 bytes for 4 stored."""
    return write_zip(path, {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (2, 3), (0, 0))}, {"0": f32([7])})


def test_convert_refuses_beyond_a_read_cap_naming_it_and_limit_lifts_it(tmp_path, capsys):
    source = _repeating_view(tmp_path / "view.pt")
    code, _, err = run(capsys, "convert", source, tmp_path / "a.safetensors", "--limit", "max_view_expansion=0")
    assert code == 1 and "max_view_expansion=0" in err and not (tmp_path / "a.safetensors").exists()
    code, _, _ = run(capsys, "convert", source, tmp_path / "b.safetensors", "--limit", "max_view_expansion=20")
    assert code == 0 and burnpack.interop.read_tensors(tmp_path / "b.safetensors").entries[0].shape == (2, 3)


@pytest.mark.parametrize(("limit", "why"), [("max_pickles=1", "'max_pickles' is not a read cap"),
                                            ("max_view_expansion=lots", "the cap is a whole number"),
                                            ("max_view_expansion", "is not KEY=VALUE")])
def test_a_limit_that_is_not_a_read_cap_and_a_whole_number_is_a_usage_error(tmp_path, capsys, limit, why):
    code, _, err = run(capsys, "convert", _repeating_view(tmp_path / "v.pt"), tmp_path / "o.safetensors", "--limit", limit)
    assert code == 2 and why in err


@pytest.mark.parametrize("value", ["\u0663", "\u00b2", "\uff11\uff12", "1" * 5000, str(2**63), "513", "-1", "+5", " 5", "5 ", "0x10", "1e3", "",
                                   "5\n6", "\u202e9"],
                         ids=["arabic-indic digit", "superscript two", "fullwidth digits", "5000 digits", "2**63", "past the stack",
                              "negative", "plus sign", "leading space", "trailing space", "hex", "exponent", "empty", "newline",
                              "bidi override"])  # fmt: skip
def test_a_limit_that_is_not_a_plain_number_in_range_is_a_one_line_usage_error(tmp_path, capsys, value):
    source = _repeating_view(tmp_path / "v.pt")
    name = "max_pickle_depth" if value == "513" else "max_view_expansion"
    code, _, err = run(capsys, "convert", source, tmp_path / "o.safetensors", "--limit", f"{name}={value}")
    assert code == 2 and err.startswith(f"burnpack: UsageError: --limit {name}=") and err.count("\n") == 1 and len(err) < 300, err
    assert not (tmp_path / "o.safetensors").exists()


@pytest.mark.parametrize("value, lifted", [("0", 0), ("007", 7), ("512", 512)])
def test_a_limit_is_plain_digits_up_to_what_the_readers_honour(tmp_path, capsys, value, lifted):
    from burnpack.cli.interop import _limits

    assert _limits(argparse.Namespace(limit=[f"max_pickle_depth={value}"])) == {"max_pickle_depth": lifted}


def test_a_limit_the_inputs_reader_does_not_use_is_a_usage_error(tmp_path, capsys):
    source = tmp_path / "t.safetensors"
    source.write_bytes(serialize_safetensors({"w": np.zeros(2, np.float32)}))
    code, _, err = run(capsys, "convert", source, tmp_path / "o.bpk", "--limit", "max_pickle_depth=5")
    assert code == 2 and "max_pickle_depth changes nothing for a safetensors file" in err


def test_convert_checkpoint_takes_limit_only_towards_burn(tmp_path, capsys):
    source = _repeating_view(tmp_path / "view.pt")
    code, _, err = run(capsys, "convert-checkpoint", source, tmp_path / "ck", "--limit", "max_view_expansion=0")
    assert code == 1 and "max_view_expansion=0" in err
    (tmp_path / "burn").mkdir()
    code, _, err = run(capsys, "convert-checkpoint", tmp_path / "burn", tmp_path / "out.pt", "--limit", "max_view_expansion=0")
    assert code == 2 and "--limit applies to PyTorch -> Burn" in err
