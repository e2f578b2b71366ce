"""``torch.distributed.checkpoint`` folders through torch's own DCP code, single process:
convert to ``.bpk`` tensor by tensor, convert-checkpoint to a Burn checkpoint, and back to a
DCP folder that ``dcp.load`` restores."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dcp = pytest.importorskip("torch.distributed.checkpoint")

import burnpack  # noqa: E402
import burnpack.torch  # noqa: E402
from burnpack.cli.main import main  # noqa: E402
from burnpack.interop import ConversionError, convert  # noqa: E402
from burnpack.interop.dcp import read_dcp, read_dcp_object  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(6, 4)
        self.head = torch.nn.Linear(4, 3)


def _trained():
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    for _ in range(3):
        loss = model.head(model.emb(torch.tensor([0, 1, 2]))).square().sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    return model, optimizer, scheduler


def _save_dcp(folder, state) -> None:
    dcp.save(state, checkpoint_id=folder, no_dist=True)


def test_a_dcp_model_converts_to_bpk(tmp_path):
    model, _, _ = _trained()
    extra = {"mask": torch.tensor([True, False]), "half": torch.arange(4, dtype=torch.bfloat16)}
    _save_dcp(tmp_path / "ck", {"model": model.state_dict(), "extra": extra, "step": 3})
    report = convert(tmp_path / "ck", tmp_path / "m.bpk", top_level_key="model")
    assert report.source_format == "dcp"
    loaded = burnpack.torch.load_file(tmp_path / "m.bpk")
    assert set(loaded) == set(model.state_dict())
    assert all(torch.equal(loaded[n], t) for n, t in model.state_dict().items())
    convert(tmp_path / "ck", tmp_path / "all.bpk")
    everything = burnpack.torch.load_file(tmp_path / "all.bpk")
    assert torch.equal(everything["extra.half"], extra["half"]) and everything["extra.mask"].tolist() == [True, False]
    assert "step" not in everything  # not a tensor


def test_dcp_tensors_are_read_only_when_asked_for_one_at_a_time(tmp_path, monkeypatch):
    from burnpack.interop import dcp as dcp_reader

    model, _, _ = _trained()
    _save_dcp(tmp_path / "ck", model.state_dict())
    records = []
    original = dcp_reader.read_pytorch_buffer

    def counting(buffer, *limits, **copy):
        records.append(len(buffer))
        return original(buffer, *limits, **copy)

    monkeypatch.setattr(dcp_reader, "read_pytorch_buffer", counting)
    tset = dcp_reader.read_dcp(tmp_path / "ck")
    assert records == [] and sorted(tset.names) == sorted(model.state_dict())
    tset["head.weight"].numpy()
    assert len(records) == 1


def test_bpk_converts_to_a_dcp_folder_that_dcp_load_restores(tmp_path):
    model, _, _ = _trained()
    burnpack.torch.save_file(model.state_dict(), tmp_path / "m.bpk")
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "ck"), "--to", "dcp", "-q"]) == 0
    fresh = Net()
    state = fresh.state_dict()
    dcp.load(state, checkpoint_id=tmp_path / "ck", no_dist=True)
    fresh.load_state_dict(state)
    assert all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), model.state_dict().values()))
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "ck"), "--to", "dcp", "-q"]) == 1  # kept


def test_convert_checkpoint_reads_a_dcp_training_state_like_the_same_torch_save(tmp_path):
    model, optimizer, scheduler = _trained()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
    _save_dcp(tmp_path / "dcp", state)
    torch.save(state, tmp_path / "ck.pt")
    args = ["--module-type", "emb=Embedding", "--module-type", "head=Linear", "--seed", "7", "-q"]
    assert main(["convert-checkpoint", str(tmp_path / "dcp"), str(tmp_path / "from_dcp"), *args]) == 0
    assert main(["convert-checkpoint", str(tmp_path / "ck.pt"), str(tmp_path / "from_pt"), *args]) == 0
    written = sorted(p.name for p in (tmp_path / "from_pt").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "from_dcp").iterdir()) and written
    for name in written:
        assert (tmp_path / "from_dcp" / name).read_bytes() == (tmp_path / "from_pt" / name).read_bytes(), name


def test_a_folder_without_dcp_metadata_is_refused_as_dcp(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(ConversionError, match="no .metadata"):
        convert(tmp_path / "x", tmp_path / "m.bpk", from_format="dcp")


def test_a_corrupt_dcp_metadata_is_a_conversion_error(tmp_path):
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / ".metadata").write_bytes(b"not a pickle")
    with pytest.raises(ConversionError, match="cannot read its metadata"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")


def _save_sharded_with_two_gloo_ranks(rank: int, folder: str, init: str) -> None:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        mesh = init_device_mesh("cpu", (2,))
        full = torch.arange(24, dtype=torch.float32).reshape(6, 4)
        state = {"w": distribute_tensor(full, mesh, [Shard(0)]), "b": torch.ones(3)}
        dcp.save(state, checkpoint_id=folder)
    finally:
        dist.destroy_process_group()


def test_a_checkpoint_sharded_by_two_gloo_processes_converts_whole(tmp_path):
    folder = tmp_path / "ck"
    torch.multiprocessing.spawn(_save_sharded_with_two_gloo_ranks, args=(str(folder), f"file://{tmp_path}/pg"), nprocs=2)
    assert len(list(folder.glob("*.distcp"))) == 2  # each rank wrote its own shard
    convert(folder, tmp_path / "m.bpk")
    loaded = burnpack.torch.load_file(tmp_path / "m.bpk")
    assert torch.equal(loaded["w"], torch.arange(24, dtype=torch.float32).reshape(6, 4))
    assert torch.equal(loaded["b"], torch.ones(3))


# --- no code runs, every failure is a burnpack error ----------------------------------------------


class _RunShell:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        import os

        return (os.system, (self.command,))


def _evil_dcp(tmp_path):
    """A DCP folder whose .metadata pickle runs ``touch <marker>`` when unpickled."""
    import pickle

    folder, marker = tmp_path / "evil", tmp_path / "pwned"
    folder.mkdir()
    (folder / ".metadata").write_bytes(pickle.dumps(_RunShell(f"touch '{marker}'")))
    (folder / "__0_0.distcp").write_bytes(b"")
    return folder, marker


def test_a_dcp_metadata_whose_pickle_would_run_code_is_refused_with_nothing_executed(tmp_path):
    from burnpack.errors import UnsafePickleError

    folder, marker = _evil_dcp(tmp_path)
    with pytest.raises(ConversionError, match="refused pickle global") as caught:
        convert(folder, tmp_path / "m.bpk")
    assert isinstance(caught.value.__cause__, UnsafePickleError) and not marker.exists()


def test_convert_checkpoint_refuses_a_code_running_dcp_metadata_with_nothing_executed(tmp_path, capsys):
    folder, marker = _evil_dcp(tmp_path)
    assert main(["convert-checkpoint", str(folder), str(tmp_path / "out"), "-q"]) != 0
    assert not marker.exists() and "Traceback" not in capsys.readouterr().err


BURN_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
               "uint64", "uint32", "uint16", "uint8", "bool"]  # fmt: skip


def test_real_dcp_save_of_every_torch_dtype_burn_has_converts(tmp_path):
    state = {name: (torch.arange(6).reshape(2, 3) % 2).to(getattr(torch, name)) for name in BURN_DTYPES}
    state["sliced"] = torch.arange(12.0).reshape(3, 4)[:, 1:3]  # a view of a larger storage
    _save_dcp(tmp_path / "ck", state)
    convert(tmp_path / "ck", tmp_path / "m.bpk")
    with burnpack.load(tmp_path / "m.bpk") as pack:
        assert sorted(pack.names) == sorted(state)
        for name, t in state.items():
            got = pack[name].numpy()
            want = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
            np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64), err_msg=name)


def test_a_missing_distcp_file_is_a_conversion_error(tmp_path, capsys):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2)})
    for data in (tmp_path / "ck").glob("*.distcp"):
        data.unlink()
    with pytest.raises(ConversionError, match="does not exist"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")
    assert main(["convert", str(tmp_path / "ck"), str(tmp_path / "m.bpk")]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_record_past_the_end_of_its_distcp_file_is_a_conversion_error(tmp_path):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(64)})
    (data,) = (tmp_path / "ck").glob("*.distcp")
    data.write_bytes(data.read_bytes()[:-100])
    with pytest.raises(ConversionError, match="past its end"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")


def test_read_dcp_object_reads_an_entry_as_deep_as_the_ceiling_without_recursing(tmp_path):
    # The copy of a record's arrays out of the mapping recursed once a level (and more through a
    # list): a RecursionError under the ceiling. Read here with room for 250 Python frames in all.
    import sys

    from burnpack.interop.limits import PICKLE_DEPTH_CEILING, ReadLimits

    depth = PICKLE_DEPTH_CEILING - 1
    nested: object = 7
    for _ in range(depth):
        nested = [nested]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10 * depth)
    try:  # torch.save's pickler recurses
        _save_dcp(tmp_path / "ck", {"w": torch.ones(2), "nested": nested})
    finally:
        sys.setrecursionlimit(limit)
    sys.setrecursionlimit(250)
    try:
        got = read_dcp_object(tmp_path / "ck", limits=ReadLimits(max_pickle_depth=PICKLE_DEPTH_CEILING))["nested"]
    finally:
        sys.setrecursionlimit(limit)
    for _ in range(depth):
        (got,) = got
    assert got == 7


def _rewrite_metadata(folder, change) -> None:
    """Let ``change`` alter the metadata torch wrote (test-side, with torch's own classes)."""
    import pickle

    metadata = pickle.loads((folder / ".metadata").read_bytes())
    change(metadata)
    (folder / ".metadata").write_bytes(pickle.dumps(metadata))


def test_a_relative_path_leaving_the_checkpoint_folder_is_refused(tmp_path):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2)})
    (data,) = (tmp_path / "ck").glob("*.distcp")
    (tmp_path / "outside.distcp").write_bytes(data.read_bytes())

    def escape(metadata) -> None:
        for info in metadata.storage_data.values():
            info.relative_path = "../outside.distcp"

    _rewrite_metadata(tmp_path / "ck", escape)
    with pytest.raises(ConversionError, match="not a file in the checkpoint folder"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")


def test_a_record_file_linked_out_of_the_checkpoint_folder_is_refused_not_followed(tmp_path):
    # The outside file holds what the metadata describes (another run's record): once followed,
    # its tensors were converted as this checkpoint's.
    _save_dcp(tmp_path / "other", {"w": torch.full((2,), 7.0)})
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2)})
    (data,) = (tmp_path / "ck").glob("*.distcp")
    data.unlink()
    data.symlink_to(tmp_path / "other" / data.name)
    with pytest.raises(ConversionError, match="outside the folder"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")
    assert not (tmp_path / "m.bpk").exists()


def test_a_dcp_metadata_linked_out_of_its_folder_is_refused(tmp_path):
    from burnpack.errors import IoError

    _save_dcp(tmp_path / "other", {"w": torch.full((2,), 7.0)})
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2)})
    (tmp_path / "ck" / ".metadata").unlink()
    (tmp_path / "ck" / ".metadata").symlink_to(tmp_path / "other" / ".metadata")
    with pytest.raises(IoError, match="outside the folder"):
        read_dcp(tmp_path / "ck")


@pytest.mark.parametrize(
    ("offset", "refusal"), [(10**5000, "more than 309 digits"), (10**300, "no valid offset and length")], ids=["5001 digits", "301 digits"]
)
def test_a_dcp_integer_beyond_int64_is_refused_before_it_is_used_or_formatted(tmp_path, capsys, offset, refusal):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2)})

    def move(metadata) -> None:
        for info in metadata.storage_data.values():
            info.offset = offset

    _rewrite_metadata(tmp_path / "ck", move)
    with pytest.raises(ConversionError, match=refusal):
        convert(tmp_path / "ck", tmp_path / "m.bpk")
    assert main(["convert", str(tmp_path / "ck"), str(tmp_path / "m.bpk")]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_dcp_tensor_of_a_dtype_burn_lacks_is_unsupported(tmp_path):
    _save_dcp(tmp_path / "ck", {"w": torch.zeros(2, dtype=torch.float8_e4m3fn)})
    with pytest.raises(ConversionError, match="unsupported dtype torch.float8_e4m3fn"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")


def test_a_chunk_claiming_more_elements_than_its_tensor_is_refused_before_allocating(tmp_path):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(4)})

    def grow(metadata) -> None:
        metadata.state_dict_metadata["w"].size = torch.Size([1 << 40])

    _rewrite_metadata(tmp_path / "ck", grow)
    with pytest.raises(ConversionError, match="hold 4 elements"):
        convert(tmp_path / "ck", tmp_path / "m.bpk")


def test_an_empty_dcp_tensor_whose_other_dimensions_numpy_cannot_index_is_a_conversion_error(tmp_path):
    from torch.distributed.checkpoint.metadata import MetadataIndex

    _save_dcp(tmp_path / "ck", {"w": torch.ones(0)})
    shape = torch.Size([1 << 40, 1 << 40, 0])  # no elements, but 2**80 of them were it not for the 0

    def widen(metadata) -> None:
        item = metadata.state_dict_metadata["w"]
        item.size = item.chunks[0].sizes = shape
        item.chunks[0].offsets = torch.Size([0, 0, 0])
        (index,) = metadata.storage_data
        metadata.storage_data = {MetadataIndex("w", torch.Size([0, 0, 0])): metadata.storage_data[index]}

    _rewrite_metadata(tmp_path / "ck", widen)
    for read in (lambda: [entry.numpy() for entry in read_dcp(tmp_path / "ck").entries], lambda: read_dcp_object(tmp_path / "ck")):
        with pytest.raises(ConversionError, match="more elements than numpy can index"):
            read()


@pytest.mark.parametrize("path_of_w", [("b",), ("b", "x")], ids=["same path", "under another entry"])
def test_read_dcp_object_refuses_an_entry_whose_key_path_would_replace_another(tmp_path, path_of_w):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2), "b": torch.zeros(3)})

    def collide(metadata) -> None:
        metadata.planner_data["w"] = path_of_w

    _rewrite_metadata(tmp_path / "ck", collide)
    with pytest.raises(ConversionError, match="'b' and 'w' are both at key path|key path of 'w' runs through 'b'"):
        read_dcp_object(tmp_path / "ck")


def test_read_dcp_object_refuses_list_indices_that_would_grow_lists_past_what_the_key_paths_name(tmp_path):
    # n empty tensors (no chunks, no record: a few bytes of metadata each) and one key path of n
    # list indices, each n - 1: every list grew to n slots, n * n together (from 250 KB of
    # metadata, 128 MB here; 3.2 GB and a MemoryError from 0.5 MB).
    n = 4000
    _save_dcp(tmp_path / "ck", {"w": torch.ones(0)})

    def grow(metadata) -> None:
        item = metadata.state_dict_metadata["w"]
        item.chunks = []
        metadata.storage_data = {}
        metadata.state_dict_metadata = {f"e{i}": item for i in range(n)}
        metadata.planner_data = {f"e{i}": (f"e{i}",) for i in range(n)}
        metadata.planner_data["e0"] = ("lists",) + (n - 1,) * n

    _rewrite_metadata(tmp_path / "ck", grow)
    with pytest.raises(ConversionError, match="list slots"):
        read_dcp_object(tmp_path / "ck")


def test_read_dcp_object_fills_the_holes_dcp_leaves_in_a_list_with_none(tmp_path):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2), "b": torch.zeros(3), "c": torch.zeros(1)})

    def holes(metadata) -> None:
        metadata.planner_data = {"w": ("l", 2), "b": ("l", 0, "x"), "c": ("c",)}

    _rewrite_metadata(tmp_path / "ck", holes)
    state = read_dcp_object(tmp_path / "ck")
    assert [type(v).__name__ for v in state["l"]] == ["dict", "NoneType", "ndarray"]


def test_dcp_non_tensor_entries_are_reported_as_skipped(tmp_path):
    _save_dcp(tmp_path / "ck", {"w": torch.ones(2), "step": 3, "cfg": {"name": "run"}})
    report = convert(tmp_path / "ck", tmp_path / "m.bpk")
    assert report.skipped_entries == {"step": "an int, not a tensor", "cfg.name": "a str, not a tensor"}


def test_dcp_output_reports_the_metadata_and_scalars_it_cannot_hold(tmp_path, capsys):
    import json

    burnpack.save({"w": np.ones(2, np.float32)}, tmp_path / "m.bpk", metadata={"run": "7", "lr": "0.1"}, scalars={"epoch": 3})
    report = convert(tmp_path / "m.bpk", tmp_path / "ck", to_format="dcp")
    assert any("metadata" in w and "dropped" in w and "DCP" in w for w in report.warnings)
    assert any("1 scalar dropped" in w for w in report.warnings)
    assert main(["convert", str(tmp_path / "m.bpk"), str(tmp_path / "ck2"), "--to", "dcp", "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any("metadata" in w and "dropped" in w for w in warnings)


@pytest.fixture(scope="module")
def dcp_folder_bytes(tmp_path_factory):
    """The files of a small real DCP checkpoint (nested, with a list and a non-tensor entry)."""
    folder = tmp_path_factory.mktemp("dcp") / "ck"
    _save_dcp(folder, {"model": {"w": torch.arange(6.0).reshape(2, 3), "layers": [torch.ones(2)]}, "step": 3})
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _only_conversion_errors(folder, files) -> None:
    from burnpack.interop.dcp import read_dcp_object

    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    try:
        read_dcp_object(folder)
    except ConversionError:
        pass


def test_every_truncation_of_dcp_metadata_is_a_conversion_error(dcp_folder_bytes, tmp_path):
    metadata = dcp_folder_bytes[".metadata"]
    for end in range(0, len(metadata), max(1, len(metadata) // 200)):
        _only_conversion_errors(tmp_path / "ck", {**dcp_folder_bytes, ".metadata": metadata[:end]})


def test_corrupted_dcp_files_are_conversion_errors(dcp_folder_bytes, tmp_path):
    import random

    rng = random.Random(7)
    for _ in range(150):
        files = dict(dcp_folder_bytes)
        name = rng.choice(sorted(files))
        data = bytearray(files[name])
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        files[name] = bytes(data)
        _only_conversion_errors(tmp_path / "ck", files)


def test_read_dcp_object_rebuilds_the_nested_state(dcp_folder_bytes, tmp_path):
    from burnpack.interop.dcp import read_dcp_object

    (tmp_path / "ck").mkdir()
    for name, data in dcp_folder_bytes.items():
        (tmp_path / "ck" / name).write_bytes(data)
    state = read_dcp_object(tmp_path / "ck")
    assert state["step"] == 3 and state["model"]["layers"][0].tolist() == [1.0, 1.0]
    assert state["model"]["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
