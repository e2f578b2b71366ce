"""What ``burnpack view`` computes and writes, without a browser: streamed statistics, the
embedded data, what --no-stats reads, the checkpoint report, and the command's errors."""

from __future__ import annotations

import json
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.records import burn_valid_losses
from burnpack.view import build_page
from burnpack.view.page import embed_json, render
from burnpack.view.report import checkpoint_report, metric_logs, module_changes, pack_report
from burnpack.view.stats import chunks, value_stats

from .runs import HOSTILE, hostile_pack


def _embedded(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="report">(.*?)</script>', html, re.S)
    assert match is not None
    return json.loads(match.group(1))


VALUES = np.array([[0, -1.5, 2.25, 0], [np.nan, np.inf, 7, -np.inf], [3, 3, 0, 1e-3]] * 5, np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_statistics_streamed_in_small_chunks_equal_numpys_over_the_whole_tensor(tmp_path, dtype):
    burnpack.save({"t": VALUES.astype(dtype)}, tmp_path / "t.bpk")
    with burnpack.load(tmp_path / "t.bpk") as pack:
        stats = value_stats(pack["t"], chunk_elements=5)
    values = VALUES.astype(dtype).astype(np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    assert (stats["count"], stats["zeros"], stats["nan"], stats["posinf"], stats["neginf"]) == (60, 15, 5, 5, 5)
    assert (stats["min"], stats["max"]) == (finite.min(), finite.max())
    assert stats["mean"] == pytest.approx(finite.mean(), rel=1e-12) and stats["std"] == pytest.approx(finite.std(), rel=1e-12)
    assert stats["hist"] == np.histogram(finite, bins=32, range=(finite.min(), finite.max()))[0].tolist()


@pytest.mark.parametrize("array", [np.arange(-5, 40, dtype=np.int32).reshape(9, 5), np.arange(12, dtype=np.uint8), np.array([True, False, True])])
def test_integer_and_bool_tensors_have_exact_statistics(tmp_path, array):
    burnpack.save({"t": array}, tmp_path / "t.bpk")
    with burnpack.load(tmp_path / "t.bpk") as pack:
        stats = value_stats(pack["t"], chunk_elements=4)
    values = array.astype(np.float64).reshape(-1)
    assert (stats["min"], stats["max"], stats["zeros"]) == (values.min(), values.max(), int((values == 0).sum()))
    assert stats["hist"] == np.histogram(values, bins=32, range=(values.min(), values.max()))[0].tolist()


def test_a_pack_tensor_is_streamed_a_chunk_of_values_at_a_time_whatever_its_rows(tmp_path):
    burnpack.save({"t": np.ones((1, 3000), np.float32)}, tmp_path / "t.bpk")
    with burnpack.load(tmp_path / "t.bpk") as pack:
        sizes = [c.size for c in chunks(pack["t"], chunk_elements=700)]
    assert sizes == [700] * 4 + [200]


def test_statistics_from_an_unmapped_source_read_each_pass_a_chunk_of_bytes_at_a_time(tmp_path):
    values = np.random.default_rng(1).standard_normal((1, 3000)).astype(np.float32)
    burnpack.save({"t": values}, tmp_path / "t.bpk")
    source = CountingSource((tmp_path / "t.bpk").read_bytes())
    with burnpack.load(source) as pack:
        source.reads.clear()
        stats = value_stats(pack["t"], chunk_elements=700)
        begin = pack.data_section_start
    tensor_reads = [(start - begin, end - start) for start, end in source.reads if start >= begin]
    assert tensor_reads == [(4 * s, min(2800, 12000 - 4 * s)) for s in range(0, 3000, 700)] * 2
    assert stats["hist"] == np.histogram(values.astype(np.float64), bins=32)[0].tolist()


def _edge_heavy(dtype, rng):
    """Values from several distributions, with every histogram edge and its neighbours among them."""
    low, high = dtype(-3.1), dtype(7.3)
    edges = np.linspace(float(low), float(high), 33).astype(dtype)
    below, above = np.nextafter(edges, dtype(-np.inf)), np.nextafter(edges, dtype(np.inf))
    near = np.concatenate([edges, below, above, np.nextafter(below, dtype(-np.inf)), np.nextafter(above, dtype(np.inf))])
    body = np.concatenate([rng.standard_normal(5000), rng.uniform(-3, 7, 5000), np.round(rng.uniform(-3, 7, 3000), 1)])
    values = np.clip(np.concatenate([[low, high], near, body.astype(dtype)]), low, high)
    return rng.permutation(values.astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histogram_counts_equal_numpys_for_values_on_and_beside_every_edge(tmp_path, dtype):
    values = _edge_heavy(dtype, np.random.default_rng(7))
    burnpack.save({"t": values}, tmp_path / "t.bpk")
    with burnpack.load(tmp_path / "t.bpk") as pack:
        stats = value_stats(pack["t"], chunk_elements=1000)
    wide = values.astype(np.float64)
    assert stats["hist"] == np.histogram(wide, bins=32, range=(wide.min(), wide.max()))[0].tolist()
    assert stats["mean"] == pytest.approx(wide.mean(), rel=1e-12) and stats["std"] == pytest.approx(wide.std(), rel=1e-12)


@pytest.mark.parametrize(
    "values",
    [
        np.array([-3e38, 3e38, 0, 1, -1], np.float32),  # a range float32 cannot hold
        np.array([1e6, 1e6 + 1e-4, 1e6 + 2e-4, 1e6 + 3e-4], np.float64),  # a range tiny beside the values
        np.array([2.5] * 7 + [np.nan], np.float32),  # one value
    ],
)
def test_histogram_counts_equal_numpys_for_extreme_ranges(tmp_path, values):
    burnpack.save({"t": values}, tmp_path / "t.bpk")
    with burnpack.load(tmp_path / "t.bpk") as pack:
        stats = value_stats(pack["t"], chunk_elements=2)
    finite = values[np.isfinite(values)].astype(np.float64)
    assert stats["hist"] == np.histogram(finite, bins=32, range=(finite.min(), finite.max()))[0].tolist()
    assert (stats["min"], stats["max"], stats["finite"]) == (finite.min(), finite.max(), finite.size)


@pytest.mark.parametrize("values", [[-1.7e308, 1.7e308, 0.0, 1e308], [5e-324, 1e-323, 1e-323]], ids=["overflowing range", "subnormal range"])
def test_a_range_numpy_cannot_bin_has_moments_and_says_why_there_is_no_histogram(tmp_path, values):
    values = np.array(values, np.float64)
    burnpack.save({"t": values}, tmp_path / "t.bpk")
    with warnings.catch_warnings(), burnpack.load(tmp_path / "t.bpk") as pack:
        warnings.simplefilter("error")  # numpy's overflow warnings included
        stats = value_stats(pack["t"], chunk_elements=2)
    shift = np.frexp(np.abs(values).max())[1]  # numpy's moments of the values scaled by a power of two
    scaled = np.ldexp(values, -shift)
    assert stats["mean"] == pytest.approx(np.ldexp(scaled.mean(), shift), rel=1e-12, abs=1e-323)
    assert stats["std"] == pytest.approx(np.ldexp(scaled.std(), shift), rel=1e-12, abs=1e-323)
    assert stats["hist"] == [] and "cannot divide" in stats["no_histogram"]


def test_a_tensor_without_finite_values_has_counts_and_no_histogram(tmp_path):
    burnpack.save({"t": np.array([np.nan, np.inf], np.float32)}, tmp_path / "t.bpk")
    with burnpack.load(tmp_path / "t.bpk") as pack:
        stats = value_stats(pack["t"])
    assert (stats["nan"], stats["posinf"], stats["min"], stats["hist"]) == (1, 1, None, [])


def test_the_embedded_report_cannot_end_the_script_element():
    text = embed_json({"</script><!--": "\u2028&\u202e"})
    assert "<" not in text and ">" not in text and "&" not in text and text.isascii()
    assert json.loads(text) == {"</script><!--": "\u2028&\u202e"}


def test_integers_beyond_2_53_are_embedded_as_their_digits():
    data = {"id": 2**64 - 1, "ids": [2**53 - 1, 2**53, -(2**60)], "name": "x,12345678901234567890", "ratio": 1.2345678901234567e30}
    assert json.loads(embed_json(data)) == {"id": "18446744073709551615", "ids": [2**53 - 1, "9007199254740992", "-1152921504606846976"],
                                            "name": "x,12345678901234567890", "ratio": 1.2345678901234567e30}  # fmt: skip


def test_module_changes_are_the_diffs_relative_change_over_the_modules_tensors(tmp_path):
    before = {"a.w": np.zeros(3, np.float32), "b.w": np.ones(4, np.float32), "b.bias": np.full(2, 2.0, np.float32), "c.w": np.ones(2, np.float32)}
    after = {**before, "a.w": np.ones(3, np.float32), "b.w": np.full(4, 2.0, np.float32)}
    burnpack.save(before, tmp_path / "1.bpk")
    burnpack.save(after, tmp_path / "2.bpk")
    with burnpack.load(tmp_path / "1.bpk") as x, burnpack.load(tmp_path / "2.bpk") as y:
        assert module_changes(x, y) == {"a": "inf", "b": pytest.approx(np.sqrt(4 / (4 + 8))), "c": 0.0}


def test_a_page_of_hostile_names_holds_them_only_as_escaped_data(tmp_path):
    html = build_page(str(hostile_pack(tmp_path / "h.bpk")))
    assert html.count("<script") == 2 and html.count("</script>") == 2 and "<img" not in html and "\u202e" not in html
    assert sorted(t[0] for t in _embedded(html)["pack"]["tensors"]) == sorted(HOSTILE)


def test_the_page_forbids_every_network_request():
    html = render({"title": "t", "pack": None, "diff": None, "checkpoint": None})
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)


class CountingSource:
    """A ``Source`` recording each byte range read."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size, self.reads = data, len(data), []

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, offset + length))
        return self.data[offset : offset + length]


def test_without_stats_no_byte_past_the_metadata_is_read(tmp_path):
    burnpack.save({"a": np.ones((64, 64), np.float32), "b": np.ones(3, np.int8)}, tmp_path / "m.bpk")
    source = CountingSource((tmp_path / "m.bpk").read_bytes())
    with burnpack.load(source) as pack:
        report = pack_report(pack, "m.bpk", stats=False)
        metadata_end = 10 + pack.metadata_size
    assert max(end for _, end in source.reads) <= metadata_end
    assert report["stats"] is None and report["totals"]["parameters"] == 64 * 64 + 3


def test_metric_logs_aggregate_each_epoch_as_burn_does(tmp_path):
    for epoch, lines in ((1, "1.0,2\n4.0,1\n"), (2, "0.5,final\n"), (3, "")):
        (tmp_path / "valid" / f"epoch-{epoch}").mkdir(parents=True)
        (tmp_path / "valid" / f"epoch-{epoch}" / "Loss.log").write_text(lines)
    assert metric_logs(tmp_path) == {"valid": {"Loss": {"1": 2.0, "2": 0.5}}}
    assert burn_valid_losses(tmp_path, split="train") == {}


def test_burn_metric_logs_are_read_only_from_burns_splits(tmp_path):
    with pytest.raises(ValueError, match="split"):
        burn_valid_losses(tmp_path, split="../valid")


def test_a_checkpoint_directory_without_logs_has_epochs_and_no_curves(tmp_path, mnist):
    from .runs import training_run

    training_run(tmp_path / "run", mnist, epochs=2)
    for split in ("train", "valid"):
        for path in sorted((tmp_path / "run" / split).rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    report, newest = checkpoint_report(str(tmp_path / "run" / "checkpoint"))
    assert [e["epoch"] for e in report["epochs"]] == [1, 2] and report["metrics"] == {}
    assert newest is not None and newest.name == "model-2.bpk"
    assert set(report["changes"]["modules"]) == {"conv1.conv", "conv1.norm", "conv2.conv", "conv2.norm", "fc1", "fc2", "fc3"}


# ---------------------------------------------------------------------------- the command
def test_view_writes_the_page_and_says_where(tmp_path, mnist, capsys):
    assert main(["view", str(mnist), "-o", str(tmp_path / "m.html")]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {tmp_path / 'm.html'} (")
    assert _embedded((tmp_path / "m.html").read_text(encoding="utf-8"))["pack"]["record_kind"] == "module"


def test_view_names_the_page_after_its_input_by_default(tmp_path, mnist, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["view", str(mnist), "--no-stats"]) == 0
    assert (tmp_path / "mnist-model.bpk.html").is_file()


def test_view_replaces_an_existing_page_only_with_overwrite(tmp_path, mnist, capsys):
    (tmp_path / "m.html").write_text("mine")
    assert main(["view", str(mnist), "-o", str(tmp_path / "m.html")]) == 1
    assert "FileExistsError: exists; use --overwrite" in capsys.readouterr().err
    assert (tmp_path / "m.html").read_text() == "mine"
    assert main(["view", str(mnist), "-o", str(tmp_path / "m.html"), "--overwrite", "--no-stats"]) == 0


def test_no_stats_with_two_inputs_is_a_usage_error(tmp_path, mnist, capsys):
    assert main(["view", str(mnist), str(mnist), "--no-stats", "-o", str(tmp_path / "d.html")]) == 2
    assert "UsageError: --no-stats applies to one input" in capsys.readouterr().err
    assert not (tmp_path / "d.html").exists()


def test_an_unreadable_input_is_one_error_line_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "bad.bpk").write_bytes(b"NRUB" + b"\xff" * 20)
    assert main(["view", str(tmp_path / "bad.bpk"), "-o", str(tmp_path / "p.html")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"burnpack: {tmp_path / 'bad.bpk'}: ") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == [tmp_path / "bad.bpk"]


def test_open_shows_the_page_in_the_web_browser(tmp_path, mnist, monkeypatch):
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    assert main(["view", str(mnist), "--no-stats", "--open", "-o", str(tmp_path / "m.html")]) == 0
    assert opened == [(tmp_path / "m.html").resolve().as_uri()]


def test_a_dcp_folder_and_a_folder_of_shards_get_a_page_of_their_tensors(tmp_path):
    from burnpack.interop.dcp import write_dcp
    from burnpack.interop.registry import read_tensors, write_tensors

    arrays = {"a.weight": np.ones((4, 4), np.float32), "b.weight": np.arange(6, dtype=np.float32)}
    write_dcp(read_tensors(arrays), tmp_path / "dcp")
    write_tensors(read_tensors(arrays), tmp_path / "shards", "safetensors-shards", max_shard_size=80)
    for folder in ("dcp", "shards"):
        report = _embedded(build_page(str(tmp_path / folder)))["pack"]
        assert sorted(t[0] for t in report["tensors"]) == sorted(arrays), folder
        assert sorted(s["max"] for s in report["stats"]) == [1.0, 5.0]


def test_a_checkpoint_cut_short_is_reported_and_the_other_epochs_still_show(tmp_path, mnist):
    from .runs import training_run

    training_run(tmp_path / "run", mnist, epochs=5)  # retention keeps 3, 4 and 5
    model = tmp_path / "run" / "checkpoint" / "model-5.bpk"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    report, newest = checkpoint_report(str(tmp_path / "run"))
    assert newest is not None and newest.name == "model-4.bpk"
    assert [e["epoch"] for e in report["epochs"]] == [3, 4, 5] and "error" in report["epochs"][-1]["model"]
    assert list(report["changes"]["errors"]) == ["4-5"]
    assert len(report["changes"]["modules"]) == 7 and all(list(v) == ["3-4"] for v in report["changes"]["modules"].values())
