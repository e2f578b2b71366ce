"""Hugging Face sharded checkpoints: a model folder (or its index) converts to one ``.bpk``
checked against the index, and a pack converts back to shards exactly as huggingface_hub
splits and names them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

import burnpack
from burnpack.interop import ConversionError, convert
from burnpack.interop.registry import read_tensors
from burnpack.interop.sharded import parse_size, split_into_shards

ARRAYS = {
    "embed.weight": np.arange(40, dtype=np.float32).reshape(10, 4),
    "layers.0.weight": np.ones((4, 4), np.float32),
    "layers.0.bias": np.zeros(4, np.float32),
    "layers.1.weight": np.full((4, 4), 2, np.float32),
    "layers.1.bias": np.full(4, 3, np.float32),
    "head.weight": np.arange(40, dtype=np.float16).reshape(10, 4),
}


def _write_sharded(folder, shards: dict[str, list[str]], *, index_name="model.safetensors.index.json", extra=None):
    folder.mkdir(exist_ok=True)
    weight_map = {}
    for shard, names in shards.items():
        tensors = {n: ARRAYS[n] for n in names}
        tensors.update((extra or {}).get(shard, {}))
        save_file(tensors, folder / shard, metadata={"format": "pt"})
        weight_map.update({n: shard for n in names})
    (folder / index_name).write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    (folder / "config.json").write_text("{}")
    return folder


SHARDS = {
    "model-00001-of-00002.safetensors": ["embed.weight", "layers.0.weight", "layers.0.bias"],
    "model-00002-of-00002.safetensors": ["layers.1.weight", "layers.1.bias", "head.weight"],
}


def _assert_pack_is_arrays(path, names=ARRAYS):
    with burnpack.load(path) as pack:
        assert sorted(pack.names) == sorted(names)
        for name in names:
            assert np.array_equal(pack[name].numpy(), ARRAYS[name]) and pack[name].numpy().dtype == ARRAYS[name].dtype


def test_a_model_folder_converts_to_one_pack(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    report = convert(folder, tmp_path / "out.bpk")
    _assert_pack_is_arrays(tmp_path / "out.bpk")
    assert report.source_format == "safetensors" and len(report.applied) == len(ARRAYS)


def test_the_index_file_itself_is_accepted(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    convert(folder / "model.safetensors.index.json", tmp_path / "out.bpk")
    _assert_pack_is_arrays(tmp_path / "out.bpk")


def test_data_order_is_shard_by_shard_in_file_order(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    with read_tensors(folder, "safetensors-shards") as tset:
        names = tset.names
    assert set(names[:3]) == set(SHARDS["model-00001-of-00002.safetensors"])


def test_a_snapshot_folder_with_one_weights_file_is_that_file(tmp_path):
    folder = tmp_path / "snap"
    folder.mkdir()
    save_file(ARRAYS, folder / "model.safetensors")
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    convert(folder, tmp_path / "out.bpk")
    _assert_pack_is_arrays(tmp_path / "out.bpk")


def test_remap_and_filters_apply_to_sharded_input(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    convert(folder, tmp_path / "out.bpk", remap=[(r"^layers\.", "blocks.")], exclude=[r"bias$"])
    with burnpack.load(tmp_path / "out.bpk") as pack:
        assert pack.names == ["blocks.0.weight", "blocks.1.weight", "embed.weight", "head.weight"]


def test_a_listed_tensor_missing_from_its_shard_is_an_error(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["ghost.weight"] = "model-00001-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ConversionError, match=r"does not hold 1 tensor.*ghost\.weight"):
        convert(folder, tmp_path / "out.bpk")
    assert not (tmp_path / "out.bpk").exists()


def test_a_shard_holding_an_unlisted_tensor_is_an_error(tmp_path):
    extra = {"model-00002-of-00002.safetensors": {"stowaway": np.zeros(2, np.float32)}}
    folder = _write_sharded(tmp_path / "model", SHARDS, extra=extra)
    with pytest.raises(ConversionError, match=r"does not list there.*stowaway"):
        convert(folder, tmp_path / "out.bpk")


def test_a_tensor_listed_for_another_shard_is_an_error(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["head.weight"] = "model-00001-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ConversionError, match="head.weight"):
        convert(folder, tmp_path / "out.bpk")


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/abs.safetensors", "sub/x.safetensors"])
def test_a_shard_name_outside_the_folder_is_refused(tmp_path, shard):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": shard}}))
    with pytest.raises(ConversionError, match="not a file name in the checkpoint folder"):
        convert(folder, tmp_path / "out.bpk")


def test_a_missing_shard_file_is_named(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(ConversionError, match="model-00002-of-00002.safetensors.*does not exist"):
        convert(folder, tmp_path / "out.bpk")


@pytest.mark.parametrize("text", ["{", "[]", '{"weight_map": {"a": 3}}'])
def test_a_malformed_index_is_an_error(tmp_path, text):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    (folder / "model.safetensors.index.json").write_text(text)
    with pytest.raises(ConversionError, match="index.json"):
        convert(folder, tmp_path / "out.bpk")


def test_a_folder_without_weights_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConversionError, match="cannot tell the format of this folder.*model.safetensors.index.json"):
        convert(tmp_path / "empty", tmp_path / "out.bpk")


def test_pytorch_bin_shards_convert(tmp_path):
    torch = pytest.importorskip("torch")
    folder = tmp_path / "bin"
    folder.mkdir()
    weight_map = {}
    for i, (shard, names) in enumerate(SHARDS.items()):
        name = f"pytorch_model-0000{i + 1}-of-00002.bin"
        torch.save({n: torch.from_numpy(ARRAYS[n]) for n in names}, folder / name)
        weight_map.update({n: name for n in names})
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    report = convert(folder, tmp_path / "out.bpk")
    assert report.source_format == "pytorch"
    _assert_pack_is_arrays(tmp_path / "out.bpk")


def test_reading_a_shard_releases_the_previous_tensors_pages(tmp_path, monkeypatch):
    import mmap

    folder = _write_sharded(tmp_path / "model", SHARDS)
    released = []
    original = mmap.mmap.madvise

    class Spy(mmap.mmap):
        def madvise(self, option, start=0, length=None):
            released.append((option, start, length))
            return original(self, option, start, length)

    monkeypatch.setattr(mmap, "mmap", Spy)  # the mapping each shard is read through
    with read_tensors(folder, "safetensors-shards") as tset:
        for entry in tset.entries:
            entry.numpy()
    assert len(released) == len(ARRAYS) - 1  # every tensor but the last, across shards
    assert all(option == mmap.MADV_DONTNEED for option, _, _ in released)


# -- writing shards ---------------------------------------------------------------------------
def test_parse_size_uses_huggingface_hubs_decimal_units():
    assert parse_size("5GB") == 5 * 10**9 and parse_size("1.5mb") == 1_500_000 and parse_size(100) == 100
    with pytest.raises(ValueError, match="KB, MB, GB or TB"):
        parse_size("5GiB")


@pytest.mark.parametrize("limit", [1, 100, 200, 300, 10_000])
def test_split_matches_huggingface_hub(limit):
    torch = pytest.importorskip("torch")
    hub = pytest.importorskip("huggingface_hub")
    sizes = [("a", 120), ("b", 30), ("c", 250), ("d", 60), ("e", 60), ("f", 500), ("g", 10)]
    state = {name: torch.zeros(size, dtype=torch.uint8) for name, size in sizes}
    split = hub.split_torch_state_dict_into_shards(state, max_shard_size=limit)
    ours = split_into_shards(sizes, limit)
    assert [list(names) for names in split.filename_to_tensors.values()] == ours


def test_max_shard_size_writes_hf_shards_and_index_that_read_back(tmp_path):
    source = burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(source, tmp_path / "hf", max_shard_size=200, stamp=False)
    files = sorted(p.name for p in (tmp_path / "hf").iterdir())
    index = json.loads((tmp_path / "hf" / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert files == sorted([*shards, "model.safetensors.index.json"])
    assert shards[0] == f"model-00001-of-{len(shards):05d}.safetensors" and len(shards) > 1
    assert index["metadata"] == {"total_size": sum(a.nbytes for a in ARRAYS.values())}
    convert(tmp_path / "hf", tmp_path / "back.bpk")
    _assert_pack_is_arrays(tmp_path / "back.bpk")


def test_sharded_output_names_match_huggingface_hub(tmp_path):
    torch = pytest.importorskip("torch")
    hub = pytest.importorskip("huggingface_hub")
    state = {n: torch.from_numpy(a.copy()) for n, a in ARRAYS.items()}
    (tmp_path / "theirs").mkdir()
    hub.save_torch_state_dict(state, tmp_path / "theirs", max_shard_size=200)
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "ours", max_shard_size=200, stamp=False)
    theirs = (tmp_path / "theirs" / "model.safetensors.index.json").read_text()
    ours = (tmp_path / "ours" / "model.safetensors.index.json").read_text()
    assert ours == theirs
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == sorted(p.name for p in (tmp_path / "theirs").iterdir())


def test_one_shard_is_plain_model_safetensors(tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size="5GB")
    assert sorted(p.name for p in (tmp_path / "hf").iterdir()) == ["model.safetensors"]


def test_existing_shards_are_kept_without_overwrite(tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size="5GB")
    with pytest.raises(FileExistsError):
        convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size="5GB")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size="5GB", overwrite=True)


def test_cli_max_shard_size(tmp_path):
    from burnpack.cli.main import main

    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "hf"), "--max-shard-size", "0.0002MB", "-q"]) == 0
    assert (tmp_path / "hf" / "model.safetensors.index.json").exists()
    assert main(["convert", str(tmp_path / "hf"), str(tmp_path / "back.bpk"), "-q"]) == 0
    _assert_pack_is_arrays(tmp_path / "back.bpk")


def test_a_corrupt_shard_is_a_conversion_error_naming_it(tmp_path):
    folder = _write_sharded(tmp_path / "model", SHARDS)
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(ConversionError, match="model-00002-of-00002.safetensors"):
        convert(folder, tmp_path / "out.bpk")


# -- writing PyTorch .bin shards --------------------------------------------------------------
def test_pytorch_shards_are_named_filled_and_indexed_as_huggingface_hub_does(tmp_path):
    torch = pytest.importorskip("torch")
    hub = pytest.importorskip("huggingface_hub")
    state = {n: torch.from_numpy(a.copy()) for n, a in ARRAYS.items()}
    (tmp_path / "theirs").mkdir()
    hub.save_torch_state_dict(state, tmp_path / "theirs", max_shard_size=200, safe_serialization=False)
    split = hub.split_torch_state_dict_into_shards(state, filename_pattern="pytorch_model{suffix}.bin", max_shard_size=200)
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "ours", max_shard_size=200, to_format="pytorch")
    ours = json.loads((tmp_path / "ours" / "pytorch_model.bin.index.json").read_text())
    assert ours["weight_map"] == split.tensor_to_filename and len(split.filename_to_tensors) > 1
    assert (tmp_path / "ours" / "pytorch_model.bin.index.json").read_text() == (tmp_path / "theirs" / "pytorch_model.bin.index.json").read_text()
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == sorted(p.name for p in (tmp_path / "theirs").iterdir())


def test_pytorch_shards_load_with_torch_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=200, to_format="pytorch")
    index = json.loads((tmp_path / "hf" / "pytorch_model.bin.index.json").read_text())
    loaded = {}
    for shard in sorted(set(index["weight_map"].values())):
        state = torch.load(tmp_path / "hf" / shard, weights_only=True)
        assert all(index["weight_map"][name] == shard for name in state)
        loaded.update(state)
    assert sorted(loaded) == sorted(ARRAYS)
    for name, array in ARRAYS.items():
        assert np.array_equal(loaded[name].numpy(), array) and loaded[name].numpy().dtype == array.dtype


def test_pytorch_shards_round_trip_to_identical_tensors(tmp_path):
    pytest.importorskip("torch")
    tensors = [burnpack.Tensor.from_numpy(n, a) for n, a in ARRAYS.items()]
    tensors.append(burnpack.Tensor("norm.scale", burnpack.DType.BF16, (3,), b"\x80\x3f\x00\x40\x40\xc0"))
    tensors.append(burnpack.Tensor.from_numpy("mask", np.array([1, 0, 1], np.uint8), dtype=burnpack.DType.Bool(burnpack.BoolStore.U8)))
    burnpack.Writer(tensors).write(tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=150, to_format="pytorch")
    assert len(list((tmp_path / "hf").glob("pytorch_model-*-of-*.bin"))) > 1
    convert(tmp_path / "hf", tmp_path / "back.bpk")
    with burnpack.load(tmp_path / "back.bpk") as pack:
        assert sorted(pack.names) == sorted(t.name for t in tensors)
        for t in tensors:
            assert (pack[t.name].dtype, pack[t.name].shape, pack[t.name].tobytes()) == (t.dtype, t.shape, t.tobytes())


def test_one_pytorch_shard_is_plain_pytorch_model_bin(tmp_path):
    pytest.importorskip("torch")
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size="5GB", to_format="pytorch")
    assert sorted(p.name for p in (tmp_path / "hf").iterdir()) == ["pytorch_model.bin"]


def test_existing_pytorch_shards_are_kept_without_overwrite(tmp_path):
    pytest.importorskip("torch")
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=200, to_format="pytorch")
    index = tmp_path / "hf" / "pytorch_model.bin.index.json"
    before = {p.name: p.read_bytes() for p in (tmp_path / "hf").iterdir()}
    with pytest.raises(FileExistsError):
        convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=200, to_format="pytorch")
    assert {p.name: p.read_bytes() for p in (tmp_path / "hf").iterdir()} == before
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=200, to_format="pytorch", overwrite=True)
    assert index.exists()


def test_cli_max_shard_size_to_pytorch(tmp_path):
    pytest.importorskip("torch")
    from burnpack.cli.main import main

    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    args = ["convert", str(tmp_path / "m.bpk"), str(tmp_path / "hf"), "--max-shard-size", "0.0002MB", "--to", "pytorch", "-q"]
    assert main(args) == 0
    assert (tmp_path / "hf" / "pytorch_model.bin.index.json").exists()
    assert main(["convert", str(tmp_path / "hf"), str(tmp_path / "back.bpk"), "-q"]) == 0
    _assert_pack_is_arrays(tmp_path / "back.bpk")


def test_shards_of_other_formats_are_refused(tmp_path):
    burnpack.save(ARRAYS, tmp_path / "m.bpk")
    with pytest.raises(ConversionError, match="safetensors or pytorch shards, not npz"):
        convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=200, to_format="npz")
    assert not (tmp_path / "hf").exists()


def test_shard_sizes_count_every_bool_store_as_the_one_byte_bools_written(tmp_path):
    mask = burnpack.Tensor.from_numpy("mask", np.ones(100, np.uint32), dtype=burnpack.DType.Bool(burnpack.BoolStore.U32))
    burnpack.Writer([mask, burnpack.Tensor.from_numpy("ids", np.zeros(100, np.uint8))]).write(tmp_path / "m.bpk")
    convert(tmp_path / "m.bpk", tmp_path / "hf", max_shard_size=150)
    index = json.loads((tmp_path / "hf" / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == 200
    assert index["weight_map"] == {"mask": "model-00001-of-00002.safetensors", "ids": "model-00002-of-00002.safetensors"}


def test_what_pytorch_bin_shards_hold_besides_tensors_is_reported(tmp_path):
    from tests.interop.test_pytorch_reader import storage_ref, tensor, write_zip

    folder = tmp_path / "bin"
    folder.mkdir()
    root = {"w": tensor(storage_ref("0", "FloatStorage", 1), 0, (1,), (1,)), "step": 3}
    write_zip(folder / "pytorch_model-00001-of-00001.bin", root, {"0": np.ones(1, "<f4").tobytes()})
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": {"w": "pytorch_model-00001-of-00001.bin"}}))
    assert convert(folder, tmp_path / "out.bpk").skipped_entries == {"step": "an int, not a tensor"}
