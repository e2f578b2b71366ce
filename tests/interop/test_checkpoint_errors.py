"""convert-checkpoint turns malformed input into one clear error, never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from burnpack.cli.main import main
from burnpack.interop.checkpoint import burn_checkpoint_to_pytorch, pytorch_to_burn_checkpoint
from burnpack.errors import ConversionError
from burnpack.records import OptimizerRecord
from tests.interop.test_checkpoint import PARAMS, TYPES, by_name, checkpoint


def test_a_model_state_dict_with_non_string_keys_is_a_conversion_error(tmp_path):
    ck = checkpoint()
    ck["model"][3] = np.zeros(2, np.float32)
    with pytest.raises(ConversionError, match=r"not parameter names \(strings\): \[3\]"):
        pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)
    assert not (tmp_path / "checkpoint").exists() or not any((tmp_path / "checkpoint").iterdir())


def _converted(tmp_path):
    directory = tmp_path / "checkpoint"
    pytorch_to_burn_checkpoint(checkpoint(), directory, module_types=TYPES, seed=1)
    return directory


def _corrupt(directory, key, value):
    path = directory / "optim-4.bpk"
    record = OptimizerRecord.load(path)
    metadata = dict(record.metadata)
    if callable(value):
        metadata[key] = json.dumps(value(json.loads(metadata[key])))
    else:
        metadata[key] = value
    from burnpack import Writer

    Writer(record.tensors, metadata=metadata, scalars=record.scalars).write(path)


CORRUPTIONS = {
    "not JSON": ("torch.model", "{"),
    "JSON nested past the recursion limit": ("torch.extra", '{"key":' * 5000 + "0" + "}" * 5000),
    "a bad ndarray dtype": ("torch.extra", json.dumps({"x": {"__ndarray__": 1, "dtype": "no-such-dtype"}})),
    "model not an object": ("torch.model", "[1, 2]"),
    "model names not strings": ("torch.model", lambda m: {**m, "names": {"a": 1}}),
    "model order not a list": ("torch.model", lambda m: {**m, "order": "fc.weight"}),
    "a dropped tensor with a bad dtype": ("torch.model", lambda m: {**m, "dropped": {"x": {"value": 1, "dtype": "nope"}}}),
    "unknown optimizer kind": ("torch.optimizer", lambda o: {**o, "kind": "Lion"}),
    "optimizer without param_names": ("torch.optimizer", lambda o: {k: v for k, v in o.items() if k != "param_names"}),
    "param_groups not objects": ("torch.optimizer", lambda o: {**o, "param_groups": [1]}),
    "unknown scheduler kind": ("torch.scheduler", lambda s: {**s, "kind": "OneCycleLR"}),
    "scheduler state without T_max": ("torch.scheduler", lambda s: {**s, "state": {k: v for k, v in s["state"].items() if k != "T_max"}}),
    "scheduler T_max zero": ("torch.scheduler", lambda s: {**s, "state": {**s["state"], "T_max": 0}}),
    "scheduler base_lrs not numbers": ("torch.scheduler", lambda s: {**s, "state": {**s["state"], "base_lrs": ["x"]}}),
    "keys not strings": ("torch.keys", json.dumps({"model": 1})),
    "a param group indexing no parameter": ("torch.optimizer", lambda o: {**o, "param_groups": [{**o["param_groups"][0], "params": [0, 99]}]}),
    "a param group naming no parameter": ("torch.optimizer", lambda o: {**o, "param_groups": [{**o["param_groups"][0], "params": ["nope"]}]}),
    # Values a hostile file chooses: a dtype that allocates or holds objects, text to be quoted, a kind that is no name.
    "a dropped tensor of a 100 MB string dtype": ("torch.model", lambda m: {**m, "dropped": {"x": {"value": 1, "dtype": "S100000000"}}}),
    "a dropped tensor of a subarray dtype": ("torch.model", lambda m: {**m, "dropped": {"x": {"value": 1, "dtype": "(5000,5000)f4"}}}),
    "a dropped tensor of object dtype": ("torch.model", lambda m: {**m, "dropped": {"x": {"value": 1, "dtype": "O"}}}),
    "a dropped tensor of a structured dtype": ("torch.model", lambda m: {**m, "dropped": {"x": {"value": 1, "dtype": [["a", "<f8"]]}}}),
    "a dropped tensor of text": ("torch.model", lambda m: {**m, "dropped": {"x": {"value": "S" * 100_000, "dtype": "float32"}}}),
    "a dropped tensor of a long dtype name": ("torch.model", lambda m: {**m, "dropped": {"x" * 100_000: {"value": 1, "dtype": "x" * 100_000}}}),
    "an ndarray of a 100 MB string dtype": ("torch.extra", json.dumps({"x": {"__ndarray__": 1, "dtype": "S100000000"}})),
    "an ndarray of object dtype": ("torch.extra", json.dumps({"x": {"__ndarray__": [[1], {"a": 2}], "dtype": "O"}})),
    "a long metadata key": ("torch." + "k" * 100_000, "{"),
    "an optimizer kind that is a list": ("torch.optimizer", lambda o: {**o, "kind": ["Adam"]}),
    "a param group of long names": ("torch.optimizer", lambda o: {**o, "param_groups": [{**o["param_groups"][0], "params": ["p" * 100_000]}]}),
    "a scheduler T_max of text": ("torch.scheduler", lambda s: {**s, "state": {**s["state"], "T_max": "\x1b[2J" + "t" * 100_000}}),
}


@pytest.mark.parametrize("key, value", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_malformed_torch_metadata_in_the_optim_record_is_a_conversion_error(tmp_path, key, value):
    directory = _converted(tmp_path)
    _corrupt(directory, key, value)
    with pytest.raises(ConversionError, match="torch|scheduler") as caught:
        burn_checkpoint_to_pytorch(directory)
    message = str(caught.value)  # what the file says is quoted as short escaped excerpts only
    assert len(message) < 1000 and "\x1b" not in message, message[:2000]


def test_a_checkpoints_keys_are_quoted_as_a_few_short_excerpts(tmp_path):
    from burnpack.interop import read_torch_training_state

    ck = {("k%05d" % i) + "\x1b[2J" * 1000: i for i in range(1000)}
    with pytest.raises(ConversionError) as caught:
        read_torch_training_state(ck, model_key="model")
    message = str(caught.value)
    assert "no 'model' in the checkpoint; keys: 'k00000" in message and "and 990 more" in message
    assert len(message) < 1500 and "\x1b" not in message


@pytest.mark.parametrize("key, value", [CORRUPTIONS["model names not strings"], CORRUPTIONS["scheduler T_max zero"]])
def test_the_cli_reports_malformed_torch_metadata_without_a_traceback(tmp_path, capsys, key, value):
    directory = _converted(tmp_path)
    _corrupt(directory, key, value)
    assert main(["convert-checkpoint", str(directory), str(tmp_path / "back.pt")]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith(f"burnpack: {directory}: ConversionError: ") and len(err.splitlines()) == 1


def test_optimizer_state_keys_that_are_not_parameter_indices_are_a_conversion_error(tmp_path):
    ck = checkpoint()
    ck["optimizer"]["state"] = {f"p{k}": v for k, v in ck["optimizer"]["state"].items()}
    with pytest.raises(ConversionError, match="not parameter indices: \\['p0'"):
        pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)


def test_optimizer_state_beyond_the_parameters_is_reported_not_silently_dropped(tmp_path):
    ck = checkpoint()
    ck["optimizer"]["state"][99] = ck["optimizer"]["state"][0]
    report = pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)
    assert any("[99]" in w for w in report.warnings)


def test_param_groups_naming_a_parameter_the_model_lacks_are_a_conversion_error(tmp_path):
    ck = by_name(checkpoint())
    ck["optimizer"]["param_groups"][0]["params"] = [*PARAMS, "head.weight"]
    with pytest.raises(ConversionError, match=r"name 1 parameter\(s\) the model does not have: \['head.weight'\]"):
        pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)


def test_param_groups_naming_a_parameter_twice_are_a_conversion_error(tmp_path):
    ck = by_name(checkpoint())
    ck["optimizer"]["param_groups"].append({**ck["optimizer"]["param_groups"][0], "params": ["fc.bias"]})
    with pytest.raises(ConversionError, match="more than once"):
        pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)


def test_state_of_a_parameter_no_group_names_is_reported_not_silently_dropped(tmp_path):
    ck = by_name(checkpoint())
    ck["optimizer"]["param_groups"][0]["params"] = PARAMS[1:]
    report = pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)
    assert report.params_with_state == len(PARAMS) - 1
    assert any("['emb.weight'] that no param group lists" in w for w in report.warnings)


def test_param_groups_mixing_indices_and_names_are_a_conversion_error(tmp_path):
    ck = checkpoint()
    ck["optimizer"]["param_groups"][0]["params"][0] = PARAMS[0]
    with pytest.raises(ConversionError, match="neither parameter indices 0..n-1 in order nor parameter names"):
        pytorch_to_burn_checkpoint(ck, tmp_path / "checkpoint", module_types=TYPES, seed=1)


@pytest.mark.parametrize("optimizer", [
    {"state": {}, "param_groups": [{"lr": 0.1}]},
    {"state": {}, "param_groups": {"params": [0]}},
    {"state": [1, 2], "param_groups": [{"params": [0]}]},
    {"state": {0: 1.0}, "param_groups": [{"params": [0]}]},
], ids=["a group without params", "groups not a list", "state not a dict", "a parameter's state not a dict"])  # fmt: skip
def test_an_optimizer_state_dict_of_the_wrong_shape_is_a_conversion_error(tmp_path, optimizer):
    with pytest.raises(ConversionError, match="the optimizer state_dict's"):
        pytorch_to_burn_checkpoint(checkpoint(optimizer=optimizer), tmp_path / "checkpoint", module_types=TYPES, seed=1)


def test_a_deeply_nested_optimizer_config_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    nested = '{"key":' * 5000 + "0" + "}" * 5000
    assert main(["convert-checkpoint", str(tmp_path / "run"), str(tmp_path / "out.pt"), "--optimizer-config", nested]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "UsageError: --optimizer-config: the value nests JSON objects and arrays 5000 deep" in err
