"""Side files (index files, retention records, metric logs, specs, batch requests) are read
within stated bounds: regular files only, a size cap, and JSON parsed with density and depth checks."""

from __future__ import annotations

import io
import json
import os
import sys
import threading

import numpy as np
import pytest

import burnpack
from burnpack.cli.batch import serve
from burnpack.errors import ConversionError, SafetensorsError, SpecError
from burnpack.interop.safetensors import parse_safetensors, serialize_safetensors
from burnpack.interop.registry import read_tensors
from burnpack.records import CheckpointRetentionError, Checkpoints, burn_valid_losses
from burnpack.core.sidefile import JSON_MAX_DEPTH, parse_json, read_side_file
from burnpack.core.spec import load_spec

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def nested(depth: int) -> str:
    """JSON objects nested ``depth`` deep, 8 characters per object (dense enough to pass the density check)."""
    return '{"key":' * depth + "0" + "}" * depth


def _outcome(fifo, action) -> BaseException | None:
    """What ``action`` raised; fails (after unblocking it) if it waited on the FIFO."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            action()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)

    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # the guard is gone: unblock the reader before failing
        with open(fifo, "wb"):
            pass
        reader.join()
        pytest.fail("the reader opened the FIFO and waited for a writer")
    return outcome[0]


# -- the guarded reader ---------------------------------------------------------------------------
@needs_fifo
def test_a_fifo_side_file_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "index.json"
    os.mkfifo(fifo)
    error = _outcome(fifo, lambda: read_side_file(fifo))
    assert isinstance(error, burnpack.IoError) and "a FIFO, not a regular file" in str(error)


@needs_fifo
def test_a_symlink_to_a_fifo_is_refused_as_the_fifo_is(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "retention.json").symlink_to(tmp_path / "pipe")
    error = _outcome(tmp_path / "pipe", lambda: read_side_file(tmp_path / "retention.json"))
    assert isinstance(error, burnpack.IoError) and "FIFO" in str(error)


def test_a_side_file_over_its_size_cap_is_refused(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 101)
    assert read_side_file(path, max_bytes=101) == b" " * 101
    with pytest.raises(burnpack.IoError, match="more than 100 bytes"):
        read_side_file(path, max_bytes=100)


def test_a_missing_side_file_is_a_file_not_found_io_error(tmp_path):
    with pytest.raises(burnpack.IoError) as caught:
        read_side_file(tmp_path / "absent.json")
    assert isinstance(caught.value, FileNotFoundError)


# -- the JSON checks ----------------------------------------------------------------------------
def test_json_nested_up_to_the_depth_limit_parses():
    assert parse_json(nested(JSON_MAX_DEPTH), ValueError, "text") is not None


def test_json_nested_deeper_than_the_limit_is_refused_before_parsing():
    with pytest.raises(SpecError, match=f"nests JSON objects and arrays {JSON_MAX_DEPTH + 1} deep"):
        parse_json(nested(JSON_MAX_DEPTH + 1), SpecError, "spec")


def test_json_nested_past_pythons_recursion_limit_is_the_callers_error_not_a_recursion_error():
    with pytest.raises(SpecError, match="deep"):
        parse_json(nested(sys.getrecursionlimit() * 10), SpecError, "spec")


def test_brackets_inside_json_strings_do_not_count_as_nesting():
    name = "[" * 100 + '{\\"\\' * 50 + "x" * 2000  # 150 brackets: deeper than the limit, were they counted
    text = json.dumps({"name": name, "list": [[1], 2]})
    assert parse_json(text, ValueError, "text") == {"name": name, "list": [[1], 2]}


def test_json_denser_in_objects_than_any_listing_is_refused():
    text = "[" + "[]," * 999 + "[]]"  # 1001 arrays in 3001 characters
    with pytest.raises(SpecError, match="holds 1001 JSON objects and arrays in 3001 characters"):
        parse_json(text, SpecError, "spec")


def test_json_that_is_not_utf8_is_the_callers_error():
    with pytest.raises(SpecError, match="not UTF-8"):
        parse_json(b'{"a": "\xff"}', SpecError, "spec")


# -- each surface ---------------------------------------------------------------------------------
def _shard_folder(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "a.safetensors").write_bytes(serialize_safetensors({"w": np.zeros(2, np.float32)}))
    return folder


@needs_fifo
def test_a_fifo_index_found_by_the_glob_fallback_is_refused(tmp_path):
    folder = _shard_folder(tmp_path)
    os.mkfifo(folder / "custom.safetensors.index.json")
    error = _outcome(folder / "custom.safetensors.index.json", lambda: read_tensors(folder, "safetensors-shards"))
    assert isinstance(error, burnpack.IoError) and "FIFO" in str(error)


def test_an_index_over_its_size_cap_is_refused(tmp_path):
    folder = _shard_folder(tmp_path)
    index = json.dumps({"metadata": {}, "weight_map": {"w": "a.safetensors"}})
    (folder / "model.safetensors.index.json").write_text(index)
    assert [e.name for e in read_tensors(folder, "safetensors-shards").entries] == ["w"]
    with pytest.raises(burnpack.IoError, match=f"more than {len(index) - 1} bytes.*max_index_bytes="):
        read_tensors(folder, max_index_bytes=len(index) - 1)


def test_a_deeply_nested_index_is_a_conversion_error(tmp_path):
    folder = _shard_folder(tmp_path)
    (folder / "model.safetensors.index.json").write_text('{"weight_map": {"w": "a.safetensors"}, "x": ' + nested(5000) + "}")
    with pytest.raises(ConversionError, match="deep"):
        read_tensors(folder, "safetensors-shards")


def test_a_deeply_nested_safetensors_header_is_refused_as_serde_json_refuses_it():
    header = '{"__metadata__": {"a": "b"}, "x": ' + nested(JSON_MAX_DEPTH) + "}"
    data = len(header).to_bytes(8, "little") + header.encode()
    with pytest.raises(SafetensorsError, match=f"header nests JSON objects and arrays {JSON_MAX_DEPTH + 1} deep"):
        parse_safetensors(data)


def _retention(tmp_path, text: str):
    directory = tmp_path / "checkpoint"
    directory.mkdir()
    (directory / "retention.json").write_text(text)
    return directory


def test_a_deeply_nested_retention_record_is_a_retention_error(tmp_path):
    _retention(tmp_path, '{"format": "burnpack-checkpoint-retention/1", "epochs": [' + nested(5000) + "]}")
    with pytest.raises(CheckpointRetentionError, match="unreadable retention record .*deep"):
        Checkpoints(tmp_path)


def test_a_retention_record_over_its_size_cap_is_refused(tmp_path):
    text = json.dumps({"format": "burnpack-checkpoint-retention/1", "epochs": [{"epoch": 1}]})
    _retention(tmp_path, text)
    assert Checkpoints(tmp_path).valid_losses == {}
    with pytest.raises(burnpack.IoError, match="more than 10 bytes"):
        Checkpoints(tmp_path, max_side_file_bytes=10)


@needs_fifo
def test_a_fifo_retention_record_is_refused(tmp_path):
    directory = tmp_path / "checkpoint"
    directory.mkdir()
    os.mkfifo(directory / "retention.json")
    error = _outcome(directory / "retention.json", lambda: Checkpoints(tmp_path))
    assert isinstance(error, burnpack.IoError) and "FIFO" in str(error)


@needs_fifo
def test_a_fifo_metric_log_is_a_retention_error(tmp_path):
    (tmp_path / "valid" / "epoch-1").mkdir(parents=True)
    os.mkfifo(tmp_path / "valid" / "epoch-1" / "Loss.log")
    error = _outcome(tmp_path / "valid" / "epoch-1" / "Loss.log", lambda: burn_valid_losses(tmp_path))
    assert isinstance(error, CheckpointRetentionError) and "FIFO" in str(error)


def test_a_metric_log_over_its_size_cap_is_a_retention_error(tmp_path):
    (tmp_path / "valid" / "epoch-1").mkdir(parents=True)
    (tmp_path / "valid" / "epoch-1" / "Loss.log").write_text("0.5\n" * 10)
    assert burn_valid_losses(tmp_path) == {1: 0.5}
    with pytest.raises(CheckpointRetentionError, match="more than 39 bytes"):
        burn_valid_losses(tmp_path, max_bytes=39)


def test_a_deeply_nested_spec_is_a_spec_error(tmp_path):
    (tmp_path / "spec.json").write_text('{"tensors": [], "metadata": ' + nested(5000) + "}")
    with pytest.raises(SpecError, match="deep"):
        load_spec(tmp_path / "spec.json")


@needs_fifo
def test_a_fifo_spec_is_refused(tmp_path):
    os.mkfifo(tmp_path / "spec.json")
    error = _outcome(tmp_path / "spec.json", lambda: load_spec(tmp_path / "spec.json"))
    assert isinstance(error, burnpack.IoError) and "FIFO" in str(error)


def test_pack_refuses_a_spec_on_standard_input_over_the_cap(monkeypatch, tmp_path, capsys):
    from burnpack.core import spec
    from burnpack.cli.main import main

    monkeypatch.setattr(spec, "SPEC_MAX_BYTES", 16)  # the pack command reads it when it runs
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"tensors": [], "metadata": {}}')))
    assert main(["pack", "-", str(tmp_path / "out.bpk")]) == 1
    assert "more than 16 bytes" in capsys.readouterr().err
    assert not (tmp_path / "out.bpk").exists()


def _answers(requests: str, **options) -> list[dict]:
    out = io.StringIO()
    assert serve(io.StringIO(requests), out, **options) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_batch_request_line_over_the_cap_is_a_protocol_error_and_the_next_line_is_answered(tmp_path):
    answers = _answers('{"path": "' + "x" * 500 + '"}\n' + str(tmp_path / "absent.bpk") + "\n", max_line=100)
    assert answers[0]["error"] == {"variant": "ProtocolError", "stage": "open", "message": "request line longer than 100 characters"}
    assert answers[1]["ok"] is False and answers[1]["error"]["variant"] != "ProtocolError"
    assert len(answers) == 2


def test_a_deeply_nested_batch_request_is_a_protocol_error():
    (answer,) = _answers('{"path": "a.bpk", "x": ' + nested(5000) + "}\n")
    assert answer["error"]["variant"] == "ProtocolError" and "deep" in answer["error"]["message"]


def test_dcp_metadata_over_its_size_cap_is_refused_before_it_is_unpickled(tmp_path):
    torch = pytest.importorskip("torch")
    from burnpack.interop.dcp import read_dcp, write_dcp_state

    write_dcp_state({"w": torch.arange(4.0)}, tmp_path / "dcp")
    size = (tmp_path / "dcp" / ".metadata").stat().st_size
    assert [e.name for e in read_dcp(tmp_path / "dcp").entries] == ["w"]
    with pytest.raises(burnpack.IoError, match=f"more than {size - 1} bytes.*max_metadata_bytes="):
        read_tensors(tmp_path / "dcp", max_metadata_bytes=size - 1)


@pytest.mark.parametrize("path", ["a\0b.bpk", "x" * 5000], ids=["NUL", "too long"])
def test_a_path_the_system_cannot_name_is_an_io_error(path):
    with pytest.raises(burnpack.IoError):
        burnpack.load(path)


def test_a_batch_request_for_a_path_the_system_cannot_name_is_answered_with_an_error():
    answers = _answers('{"path": "a\\u0000b"}\n' + "y" * 5000 + "\n")
    assert [a["error"]["variant"] for a in answers] == ["IoError", "IoError"]
