"""Input folders are closed (docs/bounds.md): a file reached through a folder — a shard, an index,
a checkpoint file, ``retention.json``, a metric log (DCP records: tests/interop/test_dcp.py) — must
resolve inside it and be a regular file on a file system that stores files, checked on the opened
descriptor; the Hugging Face cache's snapshot links are allowed within its repository. Errors
about such files quote none of their content.

Payloads are harmless: marker files, and a fake environment file; the one link to
``/proc/self/environ`` is read by a child process whose environment holds only a marker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

import burnpack
from burnpack.core import source as source_module
from burnpack.core.sidefile import parse_json, read_side_file
from burnpack.core.source import Folder, open_regular
from burnpack.errors import CheckpointRetentionError, ConversionError, IoError
from burnpack.interop import convert
from burnpack.interop.registry import read_tensors
from burnpack.records import Checkpoints, burn_valid_losses
from tests.records.helpers import two_layer_record

needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no procfs on this system")
MARKER = "MARKER-7c1f0e-SHOULD-NOT-BE-SHOWN"


def secret_file(tmp_path: Path) -> Path:
    """A file outside every input folder of a test, holding the marker."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    path = outside / "secret.txt"
    path.write_text(f"{MARKER}\n")
    return path


# --- the check, on the opened descriptor ------------------------------------------------------------


def test_a_file_inside_the_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("{}")
    os.symlink("a.json", tmp_path / "in" / "b.json")  # a link that stays inside is fine
    folder = Folder(tmp_path / "in")
    assert read_side_file(tmp_path / "in" / "b.json", folder=folder) == b"{}"


def test_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    os.symlink(secret_file(tmp_path), tmp_path / "in" / "index.json")
    with pytest.raises(IoError, match="outside the folder") as caught:
        read_side_file(tmp_path / "in" / "index.json", folder=Folder(tmp_path / "in"))
    assert MARKER not in str(caught.value)


def test_a_folder_given_through_a_link_is_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.json").write_text("{}")
    os.symlink("real", tmp_path / "named")
    assert read_side_file(tmp_path / "named" / "a.json", folder=Folder(tmp_path / "named")) == b"{}"


@needs_proc
def test_a_link_to_a_kernel_file_system_is_refused(tmp_path: Path) -> None:
    os.symlink("/proc/self/status", tmp_path / "Loss.log")
    with pytest.raises(IoError, match="procfs"):
        read_side_file(tmp_path / "Loss.log", folder=Folder(tmp_path))


@needs_proc
def test_without_fstatfs_a_kernel_file_system_is_refused_by_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "_file_system_type", lambda fd: None)
    os.symlink("/proc/self/status", tmp_path / "Loss.log")
    with pytest.raises(IoError, match="a file of /proc .made up by the kernel"):
        read_side_file(tmp_path / "Loss.log", folder=Folder(tmp_path))


def no_proc_fd(monkeypatch: pytest.MonkeyPatch) -> None:
    """A system without ``/proc/self/fd``: the descriptor's path comes from the real path."""
    real = os.readlink

    def readlink(path: str, *args: object, **kwargs: object) -> str:
        if str(path).startswith("/proc/self/fd/"):
            raise FileNotFoundError(path)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(source_module.os, "readlink", readlink)


def test_without_proc_the_real_path_decides_while_it_names_the_opened_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_proc_fd(monkeypatch)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("{}")
    os.symlink(secret_file(tmp_path), tmp_path / "in" / "b.json")
    folder = Folder(tmp_path / "in")
    assert read_side_file(tmp_path / "in" / "a.json", folder=folder) == b"{}"
    with pytest.raises(IoError, match="outside the folder"):
        read_side_file(tmp_path / "in" / "b.json", folder=folder)


def test_without_proc_a_link_swapped_after_the_open_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The link pointed outside when it was opened, and inside when its real path was taken.
    no_proc_fd(monkeypatch)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "decoy.json").write_text("{}")
    os.symlink(secret_file(tmp_path), tmp_path / "in" / "index.json")
    monkeypatch.setattr(source_module.os.path, "realpath", lambda path: str(tmp_path / "in" / "decoy.json"))
    with pytest.raises(IoError, match="cannot tell where"):
        open_regular(tmp_path / "in" / "index.json", folder=Folder(str(tmp_path / "in")))


def hugging_face_repository(tmp_path: Path) -> Path:
    """``models--org--name`` as huggingface_hub lays out its cache: snapshot files link to blobs."""
    repository = tmp_path / "hub" / "models--org--name"
    (repository / "blobs").mkdir(parents=True)
    snapshot = repository / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    save_file({"w": np.arange(4, dtype=np.float32)}, repository / "blobs" / "b1")
    os.symlink("../../blobs/b1", snapshot / "model.safetensors")
    return repository


def test_a_hugging_face_snapshot_reads_its_links_into_the_repositorys_blobs(tmp_path: Path) -> None:
    snapshot = hugging_face_repository(tmp_path) / "snapshots" / "0123abcd"
    tset = read_tensors(snapshot, "safetensors-shards")
    assert tset["w"].numpy().tolist() == [0, 1, 2, 3]


def test_a_hugging_face_snapshot_link_out_of_its_repository_is_refused(tmp_path: Path) -> None:
    snapshot = hugging_face_repository(tmp_path) / "snapshots" / "0123abcd"
    os.remove(snapshot / "model.safetensors")
    save_file({"w": np.ones(4, np.float32)}, tmp_path / "outside.safetensors")
    os.symlink(tmp_path / "outside.safetensors", snapshot / "model.safetensors")
    with pytest.raises(IoError, match="outside the folder"):
        read_tensors(snapshot, "safetensors-shards")


def test_a_folder_named_snapshots_without_blobs_beside_it_is_not_a_cache(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshots" / "rev"
    snapshot.mkdir(parents=True)
    save_file({"w": np.ones(4, np.float32)}, tmp_path / "elsewhere.safetensors")
    os.symlink("../../elsewhere.safetensors", snapshot / "model.safetensors")
    assert Folder(snapshot).root == os.path.realpath(snapshot)
    with pytest.raises(IoError, match="outside the folder"):
        read_tensors(snapshot, "safetensors-shards")


# --- shard folders ------------------------------------------------------------------------------------


def shard_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    save_file({"a": np.ones(2, np.float32)}, folder / "model-00001-of-00002.safetensors")
    save_file({"b": np.zeros(2, np.float32)}, folder / "model-00002-of-00002.safetensors")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def test_a_shard_linked_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    folder = shard_folder(tmp_path)
    save_file({"b": np.full(2, 7, np.float32)}, tmp_path / "private.safetensors")
    os.remove(folder / "model-00002-of-00002.safetensors")
    os.symlink(tmp_path / "private.safetensors", folder / "model-00002-of-00002.safetensors")
    with pytest.raises(IoError, match="outside the folder"):
        convert(folder, tmp_path / "m.bpk")
    assert not (tmp_path / "m.bpk").exists()


def test_an_index_found_in_a_folder_and_linked_out_of_it_is_refused(tmp_path: Path) -> None:
    folder = shard_folder(tmp_path)
    os.rename(folder / "model.safetensors.index.json", tmp_path / "elsewhere.json")
    os.symlink(tmp_path / "elsewhere.json", folder / "model.safetensors.index.json")
    with pytest.raises(IoError, match="outside the folder"):
        read_tensors(folder, "safetensors-shards")


def test_an_index_the_caller_names_may_be_a_link_and_its_shards_lie_beside_the_name(tmp_path: Path) -> None:
    folder = shard_folder(tmp_path)
    os.rename(folder / "model.safetensors.index.json", tmp_path / "elsewhere.json")
    os.symlink(tmp_path / "elsewhere.json", folder / "model.safetensors.index.json")
    assert sorted(read_tensors(folder / "model.safetensors.index.json", "safetensors-shards").names) == ["a", "b"]


def test_index_errors_quote_names_as_short_escaped_excerpts(tmp_path: Path) -> None:
    folder = shard_folder(tmp_path)
    name = "\x1b]0;title\x07" + "n" * 5000
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", name: "model-00002-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ConversionError, match="does not hold 1 tensor") as caught:
        read_tensors(folder, "safetensors-shards")
    assert "\x1b" not in str(caught.value) and len(str(caught.value)) < 500


def test_a_broken_shard_is_named_by_an_escaped_excerpt(tmp_path: Path) -> None:
    folder = shard_folder(tmp_path)
    shard = "\x1b]0;title\x07" + "s" * 200 + ".safetensors"  # a file name of the folder, as the index names it
    (folder / shard).write_bytes(b"not safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": shard}}))
    with pytest.raises(ConversionError) as caught:
        read_tensors(folder, "safetensors-shards")
    assert "\x1b" not in str(caught.value) and len(str(caught.value)) < 500


def test_a_json_integer_of_more_than_309_digits_is_refused_before_it_is_converted(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match="5,001 digits"):
        parse_json('{"total_size": ' + "9" * 5001 + "}", ConversionError, "the index")
    assert parse_json("[" + "9" * 309 + "]", ConversionError, "x") == [10**309 - 1]


# --- checkpoint folders and Burn's logs -----------------------------------------------------------


def checkpoint_folder(tmp_path: Path) -> Path:
    """An artifact folder with the three records of epoch 1 and a valid Loss.log."""
    run = tmp_path / "run"
    Checkpoints(run).save_epoch(1, model=two_layer_record(), valid_loss=0.5)
    (run / "valid" / "epoch-1").mkdir(parents=True)
    (run / "valid" / "epoch-1" / "Loss.log").write_text("0.5\n")
    os.remove(run / "checkpoint" / "retention.json")  # the history then comes from Burn's logs
    return run


def test_a_loss_log_linked_out_of_the_folder_is_refused_without_quoting_it(tmp_path: Path) -> None:
    run = checkpoint_folder(tmp_path)
    log = run / "valid" / "epoch-1" / "Loss.log"
    os.remove(log)
    fake_environment = tmp_path / "environ"
    fake_environment.write_bytes(f"HOME=/root\0TOKEN={MARKER}\0".encode())
    os.symlink(fake_environment, log)
    with pytest.raises(CheckpointRetentionError, match="outside the folder") as caught:
        Checkpoints(run)
    assert MARKER not in str(caught.value)


def test_a_loss_log_line_burn_cannot_parse_is_named_not_quoted(tmp_path: Path) -> None:
    run = checkpoint_folder(tmp_path)
    (run / "valid" / "epoch-1" / "Loss.log").write_text(f"0.5\n{MARKER}\n")
    with pytest.raises(CheckpointRetentionError, match="line 2 of Burn's metric log is not a NumericEntry") as caught:
        burn_valid_losses(run)
    assert MARKER not in str(caught.value)


@needs_proc
@pytest.mark.parametrize(("command", "options"), [(["checkpoint", "inspect"], []), (["view"], ["-o", "page.html"])], ids=["checkpoint", "view"])
def test_a_loss_log_linked_to_the_process_environment_prints_none_of_it(tmp_path: Path, command: list[str], options: list[str]) -> None:
    run = checkpoint_folder(tmp_path)
    log = run / "valid" / "epoch-1" / "Loss.log"
    os.remove(log)
    os.symlink("/proc/self/environ", log)
    inherited = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    environment = {**inherited, "BURNPACK_TEST_SECRET": MARKER}
    done = subprocess.run(
        [sys.executable, "-m", "burnpack", *command, str(run), *options],
        capture_output=True, text=True, cwd=tmp_path, env=environment,
    )  # fmt: skip
    assert MARKER not in done.stdout + done.stderr
    assert done.returncode != 0 and "procfs" in done.stderr and "Traceback" not in done.stderr


def test_a_retention_record_linked_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    run = checkpoint_folder(tmp_path)
    (tmp_path / "record.json").write_text(json.dumps({"format": MARKER, "epochs": []}))
    os.symlink(tmp_path / "record.json", run / "checkpoint" / "retention.json")
    with pytest.raises(IoError, match="outside the folder") as caught:
        Checkpoints(run)
    assert MARKER not in str(caught.value)


@pytest.mark.parametrize(
    "record",
    [
        {"format": MARKER, "epochs": []},
        {"format": "burnpack-checkpoint-retention/1", "epochs": [{"epoch": MARKER}]},
        {"format": "burnpack-checkpoint-retention/1", "epochs": [{"epoch": 1, "valid_loss": MARKER}]},
        {"format": "burnpack-checkpoint-retention/1", "epochs": [{"epoch": 1, "best_epoch": MARKER}]},
        {"format": "burnpack-checkpoint-retention/1", "epochs": [{"epoch": 2**64}]},
    ],
    ids=["format", "epoch", "valid_loss", "best_epoch", "epoch beyond usize"],
)
def test_an_unreadable_retention_record_is_described_not_quoted(tmp_path: Path, record: dict[str, object]) -> None:
    run = checkpoint_folder(tmp_path)
    (run / "checkpoint" / "retention.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointRetentionError, match="unreadable retention record") as caught:
        Checkpoints(run)
    assert MARKER not in str(caught.value)


def test_a_checkpoint_file_linked_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    run = checkpoint_folder(tmp_path)
    burnpack.save({MARKER: np.ones(2, np.float32)}, tmp_path / "private.bpk")
    os.remove(run / "checkpoint" / "model-1.bpk")
    os.symlink(tmp_path / "private.bpk", run / "checkpoint" / "model-1.bpk")
    checkpoints = Checkpoints(run)
    with pytest.raises(IoError, match="outside the folder"):
        checkpoints.model(1)
    assert not checkpoints.is_complete(1)


def test_the_view_of_a_checkpoint_folder_shows_no_model_linked_out_of_it(tmp_path: Path) -> None:
    from burnpack.view import build_page

    run = checkpoint_folder(tmp_path)
    burnpack.save({MARKER: np.ones(2, np.float32)}, tmp_path / "private.bpk")
    os.remove(run / "checkpoint" / "model-1.bpk")
    os.symlink(tmp_path / "private.bpk", run / "checkpoint" / "model-1.bpk")
    assert MARKER not in build_page(str(run))
