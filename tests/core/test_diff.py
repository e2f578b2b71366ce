"""What `burnpack diff` means: content apart from provenance, tolerances that decide what differs,
one measure of change, and errors that name the input that failed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.core.diff import PROVENANCE_KEYS, change_sums, diff_packs, relative_change
from burnpack.interop import write_safetensors
from burnpack.interop.inputs import open_input

WEIGHTS = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)


def _run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _pair(tmp_path: Path, noise: float) -> tuple[Path, Path, np.ndarray]:
    noisy = WEIGHTS + np.random.default_rng(4).normal(0, noise, WEIGHTS.shape).astype(np.float32)
    burnpack.save({"w": WEIGHTS}, tmp_path / "a.bpk")
    burnpack.save({"w": noisy}, tmp_path / "b.bpk")
    return tmp_path / "a.bpk", tmp_path / "b.bpk", noisy


# ------------------------------------------------------------------------------ provenance
def test_a_conversion_has_the_same_content_as_its_source_and_exit_status_0(tmp_path, capsys):
    write_safetensors({"w": WEIGHTS}, tmp_path / "w.safetensors")
    assert main(["convert", str(tmp_path / "w.safetensors"), str(tmp_path / "w.bpk"), "-q"]) == 0
    code, out, _ = _run(capsys, "diff", tmp_path / "w.safetensors", tmp_path / "w.bpk")
    assert code == 0 and out.splitlines()[0] == "same content"
    assert "+ metadata 'producer' = 'burnpack' (provenance, not counted)" in out
    assert out.splitlines()[-1].startswith("3 provenance differences not counted")


def test_the_stamp_convert_writes_is_the_provenance_diff_sets_apart(tmp_path):
    from burnpack import __version__
    from burnpack.core.metadata import PROVENANCE_KEYS as STAMP_KEYS, provenance_stamp
    from burnpack.interop import convert

    np.savez(tmp_path / "a.npz", w=WEIGHTS)
    convert(tmp_path / "a.npz", tmp_path / "b.bpk")
    convert(tmp_path / "a.npz", tmp_path / "b.safetensors")
    assert provenance_stamp("burnpack", __version__) == {"format": "burnpack", "producer": "burnpack", "version": __version__}
    assert PROVENANCE_KEYS is STAMP_KEYS and tuple(provenance_stamp("safetensors", __version__)) == PROVENANCE_KEYS
    with burnpack.load(tmp_path / "b.bpk") as b:
        assert dict(b.metadata) == provenance_stamp("burnpack", __version__)
    with open_input(str(tmp_path / "a.npz")) as a, open_input(str(tmp_path / "b.safetensors")) as b:
        result = diff_packs(a, b)
        assert b.metadata == provenance_stamp("safetensors", __version__)
    assert result.identical and set(result.provenance) == set(PROVENANCE_KEYS) and not result.metadata


def test_progress_is_fed_the_bytes_of_both_sides_of_every_tensor_both_have(tmp_path):
    burnpack.save({"w": WEIGHTS, "only_a": np.ones(3, np.float32)}, tmp_path / "a.bpk")
    burnpack.save({"w": WEIGHTS}, tmp_path / "b.bpk")
    fed: list[int] = []
    with burnpack.load(tmp_path / "a.bpk") as a, burnpack.load(tmp_path / "b.bpk") as b:
        diff_packs(a, b, progress=fed.append)
    assert fed == [2 * WEIGHTS.nbytes]


def test_provenance_differences_count_only_with_the_provenance_option(tmp_path, capsys):
    burnpack.save({"w": WEIGHTS}, tmp_path / "a.bpk", metadata={"producer": "burn", "run": "1"})
    burnpack.save({"w": WEIGHTS}, tmp_path / "b.bpk", metadata={"producer": "burnpack", "run": "1"})
    assert _run(capsys, "diff", tmp_path / "a.bpk", tmp_path / "b.bpk")[0] == 0
    code, out, _ = _run(capsys, "diff", "--provenance", tmp_path / "a.bpk", tmp_path / "b.bpk")
    assert code == 1 and out.splitlines()[-1] == "0 tensor differences, 0 metadata differences, 0 scalar differences, 1 provenance difference"


def test_the_json_lists_provenance_apart_from_the_metadata(tmp_path, capsys):
    burnpack.save({"w": WEIGHTS}, tmp_path / "a.bpk", metadata={"format": "burnpack", "run": "1"})
    burnpack.save({"w": WEIGHTS}, tmp_path / "b.bpk", metadata={"run": "2"})
    code, out, _ = _run(capsys, "diff", "--json", tmp_path / "a.bpk", tmp_path / "b.bpk")
    report = json.loads(out)
    assert code == 1 and report["metadata"] == {"run": {"a": "1", "b": "2"}}
    assert report["provenance"] == {"format": {"a": "burnpack", "b": None}} and report["provenance_counts"] is False
    assert set(PROVENANCE_KEYS) == {"format", "producer", "version"}


# ------------------------------------------------------------------------------ tolerance
def test_elements_within_the_tolerance_are_not_counted_as_differing(tmp_path, capsys):
    a, b, noisy = _pair(tmp_path, 3e-5)
    code, out, _ = _run(capsys, "diff", "--json", "--atol", "0.0001", a, b)
    (change,) = json.loads(out)["changed"]
    beyond = int(np.count_nonzero(np.abs(noisy.astype(np.float64) - WEIGHTS) > 1e-4))
    assert code == 1 and 0 < beyond < 100 and change["elements_differ"] == beyond
    _, text, _ = _run(capsys, "diff", "--atol", "0.0001", a, b)
    assert f"{beyond}/4096 elements differ beyond atol 0.0001, rtol 0" in text


def test_tensors_within_the_tolerance_are_identical_within_it(tmp_path, capsys):
    a, b, _ = _pair(tmp_path, 3e-5)
    code, out, _ = _run(capsys, "diff", "--atol", "0.001", a, b)
    assert code == 0 and out == "identical within atol 0.001, rtol 0 (1 tensor differs within it)\n"


def test_a_tolerance_that_is_no_distance_is_a_usage_error(tmp_path, capsys):
    a, b, _ = _pair(tmp_path, 1e-3)
    for value in ("-1", "nan"):
        code, _, err = _run(capsys, "diff", "--atol", value, a, b)
        assert code == 2 and "UsageError: --atol is a distance" in err


# ------------------------------------------------------------------------ relative change
def test_a_changed_tensor_reports_its_relative_change_as_norms(tmp_path, capsys):
    a, b, noisy = _pair(tmp_path, 1e-2)
    _, out, _ = _run(capsys, "diff", "--json", a, b)
    (change,) = json.loads(out)["changed"]
    base, delta = WEIGHTS.astype(np.float64), noisy.astype(np.float64) - WEIGHTS
    assert change["rel_change"] == pytest.approx(np.linalg.norm(delta) / np.linalg.norm(base), rel=1e-12)
    assert change["delta_norm"] == pytest.approx(np.linalg.norm(delta), rel=1e-12)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [([1.0, 2.0], [1.0, 2.0], 0.0), ([0.0, 0.0], [0.0, 1.0], math.inf), ([np.nan, 3.0], [np.nan, 3.0], 0.0),
     ([np.inf, 4.0], [np.inf, 4.0], 0.0), ([3.0, 4.0], [3.0, 4.0 + 5.0], 1.0)],
)  # fmt: skip
def test_relative_change_is_the_norm_of_the_change_over_the_norm_of_a(a, b, expected):
    assert relative_change(*change_sums(np.array(a), np.array(b))) == expected


@pytest.mark.parametrize(("a", "b"), [([1.0, 2.0], [1.0, np.nan]), ([np.inf, 4.0], [np.inf, 0.0])], ids=["NaN on one side", "A infinite"])
def test_a_change_that_no_finite_ratio_measures_is_nan(a, b):
    assert math.isnan(relative_change(*change_sums(np.array(a), np.array(b))))


def test_relative_change_sums_add_up_over_chunks():
    x, y = WEIGHTS.reshape(-1), (WEIGHTS * 1.5).reshape(-1)
    parts = [change_sums(x[i : i + 1000], y[i : i + 1000]) for i in range(0, x.size, 1000)]
    whole = change_sums(x, y)
    assert sum(p[0] for p in parts) == pytest.approx(whole[0], rel=1e-12) and sum(p[1] for p in parts) == pytest.approx(whole[1], rel=1e-12)


def test_the_python_api_reports_provenance_apart_too(tmp_path):
    burnpack.save({"w": WEIGHTS}, tmp_path / "a.bpk", metadata={"version": "1"})
    burnpack.save({"w": WEIGHTS}, tmp_path / "b.bpk", metadata={"version": "2"})
    with burnpack.load(tmp_path / "a.bpk") as a, burnpack.load(tmp_path / "b.bpk") as b:
        assert diff_packs(a, b).identical and not diff_packs(a, b, provenance=True).identical


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("which", [0, 1])
def test_an_input_that_cannot_be_read_is_named_in_the_error(tmp_path, capsys, which):
    good = tmp_path / "good.bpk"
    burnpack.save({"w": WEIGHTS}, good)
    cut = tmp_path / "cut.bpk"
    cut.write_bytes(good.read_bytes()[:1000])  # the metadata whole, the data cut short
    inputs = [good, cut] if which else [cut, good]
    code, out, err = _run(capsys, "diff", *inputs)
    assert code == 2 and out == "" and err.startswith(f"burnpack: {cut}: ValidationError: File truncated")
