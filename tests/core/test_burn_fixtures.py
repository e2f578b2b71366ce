"""Burn's own fixtures (../shared/fixtures/burn-pack): we read, reject and write exactly as Burn does.

Each case's sidecar records what burn-pack's Reader and Writer did; every case is checked through
both entry points Burn has (bytes and file) and, for writer output, re-written byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import burnpack
import burnpack.cli.main
from burnpack import Tensor, Writer
from burnpack import DType
from burnpack.core.dump import scalar_json
from tests.conftest import BURN_EXAMPLES, BURN_PACK_FIXTURES, fixture_params, require

INDEX = BURN_PACK_FIXTURES / "index.json"


def _cases(kind_filter=lambda case: True) -> list:
    def params() -> list:
        cases = json.loads(INDEX.read_text())["cases"]
        return [pytest.param(c, id=c["case"]) for c in cases if kind_filter(c)]

    return fixture_params(INDEX, params)


def _sidecar(case: dict) -> dict:
    return json.loads((require(BURN_PACK_FIXTURES) / case["sidecar"]).read_text())


def _file(case: dict) -> Path:
    return BURN_PACK_FIXTURES / case["file"]


def _expect_error(error: burnpack.BurnpackError, expected: dict) -> None:
    assert error.variant == expected["variant"]
    assert error.payload == expected["payload"]
    assert error.display == expected["display"]


def _sources(case: dict) -> list[tuple[str, object]]:
    path = _file(case)
    return [("from_bytes", path.read_bytes()), ("from_file", str(path))]


def _check_content(pack: burnpack.Pack, side: dict) -> None:
    assert pack.version == side["header"]["version"]
    assert pack.metadata_size == side["header"]["metadata_size"]
    assert pack.data_section_start == side["data_section_start"]
    assert pack.names == side["tensor_names"]
    for view, expected in zip(pack.tensors(), side["tensors"], strict=True):
        assert view.name == expected["name"]
        assert view.dtype.to_serde() == expected["dtype"]
        assert view.dtype == DType.from_serde(expected["dtype"])
        assert list(view.shape) == expected["shape"]
        assert list(view.data_offsets) == expected["data_offsets"]
        assert view.param_id == expected["param_id"]
        data = view.tobytes()
        assert len(data) == expected["byte_len"]
        assert hashlib.sha256(data).hexdigest() == expected["sha256"]
        if "values" in expected:
            values = view.numpy().reshape(-1).tolist()
            if view.dtype.variant == "Bool":  # stores are viewed as-is (u8 / u32); Burn reports bools
                values = [bool(v) for v in values]
            assert values == pytest.approx(expected["values"], nan_ok=True)
    assert pack.metadata == side["metadata"]
    got_scalars = {name: scalar_json(s) for name, s in pack.scalars.items()}
    for name, expected in side["scalars"].items():
        expected = {k: v for k, v in expected.items() if k in ("type", "value", "f64_bits")}
        assert got_scalars[name] == expected, name
    assert set(got_scalars) == set(side["scalars"])


@pytest.mark.parametrize("case", _cases(lambda c: c["outcome"] == "accepted"))
def test_accepted_fixture_reads_the_same_content_as_burn(case):
    side = _sidecar(case)
    for entry, source in _sources(case):
        with burnpack.load(source) as pack:
            _check_content(pack, side)


@pytest.mark.parametrize("case", _cases(lambda c: c["outcome"] == "rejected_on_open"))
def test_rejected_fixture_fails_on_open_with_burns_error(case):
    side = _sidecar(case)
    for entry, source in _sources(case):
        with pytest.raises(burnpack.BurnpackError) as info:
            burnpack.load(source)
        _expect_error(info.value, side["reader"][entry]["error"])


@pytest.mark.parametrize("case", _cases(lambda c: c["outcome"] == "rejected_on_tensor_access"))
def test_rejected_fixture_opens_but_fails_on_tensor_access_as_burn_does(case):
    side = _sidecar(case)
    for entry, source in _sources(case):
        with burnpack.load(source) as pack:
            with pytest.raises(burnpack.BurnpackError) as info:
                pack.tensors()
            _expect_error(info.value, side["reader"][f"{entry}_into_tensors"]["error"])
            for name, expected in side["reader"][f"{entry}_tensor_data"]["errors"].items():
                with pytest.raises(burnpack.BurnpackError) as info:
                    pack[name].tobytes()
                _expect_error(info.value, expected)


@pytest.mark.parametrize("case", _cases(lambda c: c["kind"] == "writer"))
def test_writer_fixture_is_reproduced_from_its_write_order(case):
    side = _sidecar(case)
    original = _file(case).read_bytes()
    with burnpack.load(original) as pack:
        tensors = [
            Tensor(name, pack[name].dtype, pack[name].shape, pack[name].memoryview(), param_id=pack[name].param_id)
            for name in side["write_order"]
        ]
        written = Writer(tensors, metadata=pack.metadata, scalars=pack.scalars).to_bytes()
    assert written == original


@pytest.mark.parametrize("case", _cases(lambda c: c["kind"] == "writer"))
def test_writer_fixture_repacks_byte_identically(case, tmp_path):
    out = tmp_path / "out.bpk"
    assert burnpack.cli.main.main(["repack", str(_file(case)), str(out)]) == 0
    assert out.read_bytes() == _file(case).read_bytes()


@pytest.mark.parametrize("case", _cases(lambda c: c["kind"] == "writer"))
def test_writer_fixture_is_strictly_valid(case):
    burnpack.load(str(_file(case)), strict=True).tensors()


@pytest.mark.parametrize("case", _cases(lambda c: c["outcome"] == "writer_rejected"))
def test_writer_refuses_what_burns_writer_refuses(case, tmp_path):
    side = _sidecar(case)
    spec = side["writer_input"]
    tensors = [
        Tensor(t["name"], DType.from_serde(t["dtype"]), t["shape"], bytes.fromhex(t["data_hex"]), param_id=t["param_id"])
        for t in spec["tensors"]
    ]
    writer = Writer(tensors)
    with pytest.raises(burnpack.BurnpackError) as info:
        writer.size()
    _expect_error(info.value, side["writer"]["size"]["error"])
    target = tmp_path / "out.bpk"
    with pytest.raises(burnpack.BurnpackError) as info:
        writer.write_atomic(target)
    _expect_error(info.value, side["writer"]["write"]["error"])
    assert list(tmp_path.iterdir()) == []


def test_mnist_model_reads_and_repacks_byte_identically(tmp_path):
    path = require(BURN_EXAMPLES / "mnist-model.bpk")
    side = json.loads((BURN_EXAMPLES / "mnist-model.json").read_text())
    with burnpack.load(str(path), strict=True) as pack:
        _check_content(pack, side)
    out = tmp_path / "mnist.bpk"
    assert burnpack.cli.main.main(["repack", str(path), str(out)]) == 0
    assert out.read_bytes() == path.read_bytes()


def test_every_fixture_case_is_covered():
    cases = json.loads(require(INDEX).read_text())["cases"]
    outcomes = {c["outcome"] for c in cases}
    assert outcomes <= {"accepted", "rejected_on_open", "rejected_on_tensor_access", "writer_rejected"}
