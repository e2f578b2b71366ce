"""``burnpack view`` pages used as a person uses them, in headless Chromium (see conftest.py)."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.cli.inspect import print_tree
from burnpack.quant import parse_scheme
from burnpack.records import burn_valid_losses
from burnpack.view.page import PAGE_ROWS

from .runs import HOSTILE, hostile_pack


def make_page(tmp_path: Path, *inputs: object, options: tuple[str, ...] = (), name: str = "page.html") -> Path:
    out = tmp_path / name
    assert main(["view", *map(str, inputs), "-o", str(out), *options]) == 0
    return out


def expand_all(page, root: str) -> None:
    """Click every collapsed module row under ``root`` until none is left."""
    while True:
        closed = page.locator(f"{root} .row.module").filter(has_text="▸")
        if closed.count() == 0:
            return
        closed.first.click()


def open_tensor(page, name: str) -> None:
    page.click("#nav-tree")
    page.fill("#search-tree", name)
    page.locator(f"#tree li[data-path='{name}'] > .row.hit").click()
    assert page.inner_text("#tensor-name") == name


def leaf_paths(page, root: str = "#tree") -> list[str]:
    """The full names of the tensor rows drawn in a tree, in order."""
    return page.eval_on_selector_all(f"{root} li:has(> .row.leaf)", "lis => lis.map(li => li.dataset.path)")


def shown_stats(page, which: str = "values") -> dict[str, str]:
    cells = page.locator(f"#stats-{which} td[data-stat]")
    return {cells.nth(i).get_attribute("data-stat"): cells.nth(i).get_attribute("data-value") for i in range(cells.count())}


def shown_bins(page, which: str = "values") -> list[int]:
    bins = page.locator(f"#hist-{which} rect.bin")
    return [int(bins.nth(i).get_attribute("data-count")) for i in range(bins.count())]


# ---------------------------------------------------------------------------------- one pack
def test_the_overview_shows_the_record_kind_and_totals_of_mnist(tmp_path, open_page, mnist):
    page = open_page(make_page(tmp_path, mnist))
    cards = page.inner_text(".cards")
    with burnpack.load(mnist) as pack:
        params = sum(math.prod(pack[n].shape) for n in pack.names)
        assert "MODULE" in cards.upper() and f"{params:,}" in cards and f"{len(pack):,}" in cards
        bars = page.locator("#chart-modules rect")
        by_module = {}
        for name in pack.names:
            by_module[name.split(".")[0]] = by_module.get(name.split(".")[0], 0) + math.prod(pack[name].shape)
    assert sorted(int(bars.nth(i).get_attribute("data-value")) for i in range(bars.count())) == sorted(by_module.values())
    assert "data section starts at" in page.inner_text("#overview-tables")


def test_the_expanded_tree_has_the_names_and_counts_inspect_tree_prints(tmp_path, open_page, mnist):
    page = open_page(make_page(tmp_path, mnist))
    page.click("#nav-tree")
    expand_all(page, "#tree")
    rows = page.locator("#tree .row")
    shown = []
    for i in range(rows.count()):
        depth = rows.nth(i).evaluate("r => { let d = 0, n = r.parentElement; while (n && n.id !== 'tree') { if (n.tagName === 'UL') d++; n = n.parentElement; } return d - 1; }")
        name = rows.nth(i).locator(".nm").inner_text()
        count = rows.nth(i).locator(".info").inner_text().split(" params")[0].split()[-1]
        shown.append(("  " * depth) + name + " " + count)
    out = io.StringIO()
    with burnpack.load(mnist) as pack:
        print_tree([pack[n] for n in pack.names], out)
    printed = []
    for line in out.getvalue().splitlines():  # "  label/  N parameters" or "  label  dtype [shape]  N"
        body = line.lstrip(" ")
        parts = body.split("  ")
        printed.append(line[: len(line) - len(body)] + parts[0] + " " + parts[-1].split()[0])
    assert shown == printed


def test_search_filters_the_tree_by_text_and_by_regex(tmp_path, open_page, mnist):
    page = open_page(make_page(tmp_path, mnist))
    page.click("#nav-tree")
    page.fill("#search-tree", "norm.running")
    assert page.inner_text("#count-tree") == "4 of 18 tensors match"
    assert leaf_paths(page) == [f"conv{i}.norm.{s}" for i in (1, 2) for s in ("running_mean", "running_var")]
    assert page.locator("#tree .row.module").count() == 4 and page.locator("#results-tree").count() == 0
    page.check("#regex-tree")
    page.fill("#search-tree", r"^fc\d\.bias$")
    assert leaf_paths(page) == ["fc1.bias", "fc2.bias", "fc3.bias"]
    page.fill("#search-tree", "fc(")
    assert "not a valid regex" in page.inner_text("#count-tree") and leaf_paths(page) == []
    page.fill("#search-tree", "")
    assert page.inner_text("#count-tree") == "" and [r.inner_text() for r in page.locator("#tree > ul > li > .row .nm").all()] == ["conv1/", "conv2/", "fc1/", "fc2/", "fc3/"]


@pytest.mark.parametrize("name", ["fc1.weight", "conv2.norm.running_var", "fc3.bias"])
def test_tensor_statistics_and_histogram_equal_numpys(tmp_path, open_page, mnist, name):
    page = open_page(make_page(tmp_path, mnist))
    open_tensor(page, name)
    with burnpack.load(mnist) as pack:
        values = pack[name].numpy().astype(np.float64).reshape(-1)
    stats = shown_stats(page)
    assert float(stats["min"]) == values.min() and float(stats["max"]) == values.max()
    assert float(stats["mean"]) == pytest.approx(values.mean(), rel=1e-12)
    assert float(stats["std"]) == pytest.approx(values.std(), rel=1e-12)
    assert (int(stats["count"]), int(stats["zeros"]), int(stats["NaN"])) == (values.size, int((values == 0).sum()), 0)
    assert shown_bins(page) == np.histogram(values, bins=32, range=(values.min(), values.max()))[0].tolist()


def test_the_tensor_detail_shows_the_descriptor_with_the_exact_u64_param_id(tmp_path, open_page, mnist):
    page = open_page(make_page(tmp_path, mnist, options=("--no-stats",)))
    open_tensor(page, "conv2.conv.weight")
    rows = page.locator("#tab-tensor tr")
    shown = {rows.nth(i).locator("td").nth(0).inner_text(): rows.nth(i).locator("td").nth(1).inner_text() for i in range(1, rows.count())}
    with burnpack.load(mnist) as pack:
        view = pack["conv2.conv.weight"]
        assert shown["param id"] == str(view.param_id) and view.param_id > 2**53
        assert shown["shape"] == "[64, 64, 3, 3]" and shown["data offsets"] == f"[{view.data_offsets[0]:,}, {view.data_offsets[1]:,})"


def test_nan_inf_and_zero_counts_are_shown_and_the_histogram_holds_the_finite_values(tmp_path, open_page):
    values = np.array([0, 0, 1.5, -2, np.nan, np.inf, -np.inf, np.inf, 3], np.float32)
    path = tmp_path / "special.bpk"
    burnpack.save({"w": values, "w_bf16": values.astype(ml_dtypes.bfloat16)}, path)
    page = open_page(make_page(tmp_path, path))
    finite = values[np.isfinite(values)].astype(np.float64)
    for name in ("w", "w_bf16"):
        open_tensor(page, name)
        stats = shown_stats(page)
        assert (stats["zeros"], stats["NaN"], stats["+inf"], stats["-inf"], stats["min"], stats["max"]) == ("2", "1", "2", "1", "-2", "3")
        assert shown_bins(page) == np.histogram(finite, bins=32, range=(-2, 3))[0].tolist()


def test_a_quantized_tensor_shows_its_scheme_scales_and_dequantized_values(tmp_path, open_page):
    rng = np.random.default_rng(1)
    weights = rng.normal(0, 1, (8, 64)).astype(np.float32)
    quantized = burnpack.quantize(weights, parse_scheme("Q8S", block=32))
    path = tmp_path / "q.bpk"
    burnpack.save([quantized.to_tensor("q.weight")], path)
    page = open_page(make_page(tmp_path, path))
    open_tensor(page, "q.weight")
    assert "Q8S" in page.inner_text("#quant-scheme")
    scales = quantized.effective_scales().astype(np.float64).reshape(-1)
    assert shown_bins(page, "scales") == np.histogram(scales, bins=32, range=(scales.min(), scales.max()))[0].tolist()
    values = quantized.dequantize().astype(np.float64).reshape(-1)
    assert shown_bins(page) == np.histogram(values, bins=32, range=(values.min(), values.max()))[0].tolist()


def test_names_metadata_and_scalars_are_shown_as_text_never_as_markup(tmp_path, open_page):
    page = open_page(make_page(tmp_path, hostile_pack(tmp_path / "hostile.bpk")))
    assert page.locator("script").count() == 2 and page.locator("img, b, i").count() == 0
    tables = page.inner_text("#overview-tables")
    assert "</script><script>alert(2)</script>" in tables and "\\u202e<b>bold</b>\\u0000" in tables and "<i>lr</i>" in tables
    page.click("#nav-tree")
    names = page.locator("#tree .row .nm")
    shown = {names.nth(i).inner_text() for i in range(names.count())}
    assert '<script>alert("x")</script>/' in shown and "bidi\\u202eevil\\u2066/" in shown and "ctl\\u0007bell\\u001b[31m/" in shown
    page.fill("#search-tree", "quote")
    page.locator("#tree .row.hit").first.click()
    assert page.inner_text("#tensor-name") == HOSTILE[1]


def test_no_stats_makes_the_page_from_metadata_alone(tmp_path, open_page, mnist):
    page = open_page(make_page(tmp_path, mnist, options=("--no-stats",)))
    open_tensor(page, "fc1.weight")
    assert "--no-stats" in page.inner_text("#no-stats")


# ------------------------------------------------------------------------ other inputs
@pytest.mark.parametrize(("record", "kind"), [("optim-5.bpk", "optimizer"), ("scheduler-5.bpk", "scheduler")])
def test_an_optimizer_and_a_scheduler_record_get_a_page_of_their_kind(tmp_path, open_page, run_dir, record, kind):
    page = open_page(make_page(tmp_path, run_dir / "checkpoint" / record))
    assert page.inner_text(".card .value") == kind
    page.click("#nav-tree")
    if kind == "scheduler":
        assert page.locator("#tree li").count() == 0 and "0." in page.inner_text("#tab-overview")


def test_a_minilm_sized_safetensors_file_gets_a_page(tmp_path, open_page):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(0)
    tensors = {"embeddings.word_embeddings.weight": rng.standard_normal((30522, 384), np.float32),
               "embeddings.position_embeddings.weight": rng.standard_normal((512, 384), np.float32)}  # fmt: skip
    for layer in range(6):
        for part, shape in (("attention.self.query", (384, 384)), ("attention.self.key", (384, 384)), ("attention.self.value", (384, 384)),
                            ("attention.output.dense", (384, 384)), ("intermediate.dense", (1536, 384)), ("output.dense", (384, 1536))):  # fmt: skip
            tensors[f"encoder.layer.{layer}.{part}.weight"] = rng.standard_normal(shape, np.float32)
            tensors[f"encoder.layer.{layer}.{part}.bias"] = np.zeros(shape[0], np.float32)
    path = tmp_path / "minilm.safetensors"
    safetensors_numpy.save_file(tensors, str(path))
    page = open_page(make_page(tmp_path, path))
    total = sum(a.size for a in tensors.values())
    assert f"{total:,}" in page.inner_text(".cards")
    open_tensor(page, "encoder.layer.5.output.dense.bias")
    assert shown_stats(page)["zeros"] == "384"
    page.click("#nav-tree")
    page.fill("#search-tree", "")
    page.click("#tree li[data-path=encoder] .row")
    page.click("#tree li[data-path='encoder.layer'] .row")
    rows = page.locator("#tree li[data-path='encoder.layer'] > ul > li > .row .nm")
    assert [rows.nth(i).inner_text() for i in range(rows.count())] == [f"{i}/" for i in range(6)]


def test_a_url_gets_a_page_and_no_stats_reads_only_what_opening_reads(tmp_path, open_page, mnist):
    from tests.servers import RangeServer

    server = RangeServer()
    try:
        server.files["/mnist.bpk"] = mnist.read_bytes()
        url = server.url("/mnist.bpk")
        burnpack.load(url).close()
        opening = server.bytes_sent
        server.reset_counts()
        page = open_page(make_page(tmp_path, url, options=("--no-stats",)))
        assert server.bytes_sent == opening
        server.reset_counts()
        page = open_page(make_page(tmp_path, url, name="with-stats.html"))
    finally:
        server.close()
    open_tensor(page, "fc2.bias")
    with burnpack.load(mnist) as pack:
        assert float(shown_stats(page)["max"]) == pack["fc2.bias"].numpy().max()


# ---------------------------------------------------------------------------------- diff
def test_the_diff_view_shows_the_numbers_burnpack_diff_prints(tmp_path, open_page, run_dir, capsys):
    a, b = run_dir / "checkpoint" / "model-4.bpk", run_dir / "checkpoint" / "model-5.bpk"
    capsys.readouterr()
    main(["diff", str(a), str(b), "--json"])
    expected = {c["name"]: c for c in json.loads(capsys.readouterr().out)["changed"]}
    page = open_page(make_page(tmp_path, a, b))
    rows = page.locator("#tab-diff tr[data-name]")
    shown = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        shown[row.get_attribute("data-name")] = {f: float(row.locator(f"td[data-field={f}]").get_attribute("data-value")) for f in ("max_abs", "rel_change")}
    assert shown == {n: {"max_abs": c["max_abs"], "rel_change": pytest.approx(c["rel_change"], rel=1e-12)} for n, c in expected.items()}
    page.click("#diff-tree li[data-path=fc1] .row")
    page.click("#diff-tree li[data-path='fc1.weight'] .row")
    assert page.inner_text("#diff-detail td[data-field=status]") == "changed"
    assert float(page.inner_text("#diff-detail td[data-field=rel_change]")) == pytest.approx(expected["fc1.weight"]["rel_change"], rel=1e-5)
    assert page.inner_text("#diff-detail td[data-field=elements_differ]") == f"{expected['fc1.weight']['elements_differ']:,}"


def test_the_diff_view_lists_added_removed_and_metadata_changes(tmp_path, open_page):
    a, b = tmp_path / "a.bpk", tmp_path / "b.bpk"
    burnpack.save({"keep": np.ones(3, np.float32), "old": np.zeros(2, np.float32)}, a, metadata={"run": "1"})
    burnpack.save({"keep": np.ones(3, np.float32), "new": np.zeros(2, np.float32)}, b, metadata={"run": "2"})
    page = open_page(make_page(tmp_path, a, b))
    lists = page.inner_text("#diff-lists")
    assert "new" in lists.split("Removed")[0] and "old" in lists.split("Removed")[1]
    assert "run" in page.inner_text("#tab-diff") and page.locator("#tab-diff tr[data-name]").count() == 0


# ---------------------------------------------------------------------------- checkpoints
def test_the_checkpoint_view_shows_epochs_files_and_curves_from_burns_logs(tmp_path, open_page, run_dir):
    page = open_page(make_page(tmp_path, run_dir))
    assert page.locator("#nav-checkpoint.active").count() == 1
    epochs = page.locator("#tab-checkpoint tr[data-epoch]")
    rows = {epochs.nth(i).get_attribute("data-epoch"): [epochs.nth(i).locator("td").nth(k).inner_text() for k in (1, 2)] for i in range(epochs.count())}
    assert rows["1"] == rows["2"] == ["no checkpoint files", ""] and rows["3"][1] == "lowest validation loss"
    assert rows["5"] == ["model-5.bpk optim-5.bpk scheduler-5.bpk", ""]
    points = page.locator("#curve-Loss circle.point")
    shown = {(points.nth(i).get_attribute("data-series"), int(points.nth(i).get_attribute("data-x"))): float(points.nth(i).get_attribute("data-y")) for i in range(points.count())}
    for split in ("train", "valid"):
        for epoch, value in burn_valid_losses(run_dir, "Loss", split=split).items():
            assert shown[(split, epoch)] == value
    assert page.locator("#curve-Learning_Rate circle.point").count() == 5


def test_the_checkpoint_view_shows_each_modules_relative_change_between_epochs(tmp_path, open_page, run_dir):
    page = open_page(make_page(tmp_path, run_dir))
    cell = page.locator("#module-changes tr", has_text="fc2").locator("td[data-pair='4-5']")
    with burnpack.load(run_dir / "checkpoint" / "model-4.bpk") as a, burnpack.load(run_dir / "checkpoint" / "model-5.bpk") as b:
        diff = sum(float(np.square(b[n].numpy().astype(np.float64) - a[n].numpy()).sum()) for n in ("fc2.weight", "fc2.bias"))
        base = sum(float(np.square(a[n].numpy().astype(np.float64)).sum()) for n in ("fc2.weight", "fc2.bias"))
    assert float(cell.get_attribute("data-value")) == pytest.approx(math.sqrt(diff / base), rel=1e-12)
    assert "model of epoch 5" in page.inner_text("#tab-checkpoint")


# ------------------------------------------------------------- what the pages say, as they mean it
U64_ID = 16686864092632966876  # a param id a JavaScript number would show as 16686864092632967000
RAW_KEYS = ["elements_differ", "max_abs", "max_rel", "rel_change", "numel", "bytes_differ", "param_id", "nan_mismatch",
            "current_iter", "remaining_iters", "kept_because", "record_kind", "by_dtype"]  # fmt: skip
NUMBER = re.compile(r"^(-?\d{1,3}(,\d{3})*(\.\d+)?|-?\d(\.\d+)?e-?\d+|∞|-∞|NaN|–)( (B|KiB|MiB|GiB))?$")  # grouped, or an exponent


def _u64_pair(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.bpk", tmp_path / "b.bpk"
    w = np.arange(6, dtype=np.float32)
    burnpack.save([burnpack.Tensor.from_numpy("w", w, param_id=U64_ID)], a, scalars={"big": burnpack.Scalar.UInt(2**64 - 1)})
    burnpack.save([burnpack.Tensor.from_numpy("w", w, param_id=2**64 - 2)], b, scalars={"big": burnpack.Scalar.UInt(2**63 + 1)})
    return a, b


def test_every_integer_the_diff_page_shows_is_exact(tmp_path, open_page):
    a, b = _u64_pair(tmp_path)
    page = open_page(make_page(tmp_path, a, b))
    page.click("#diff-tree li[data-path=w] .row")
    assert page.inner_text("#diff-detail td[data-field=param_id]") == f"{U64_ID} → {2**64 - 2}"
    assert "UInt(18446744073709551615)" in page.inner_text("#tab-diff") and "UInt(9223372036854775809)" in page.inner_text("#tab-diff")


def test_every_integer_the_overview_shows_is_exact(tmp_path, open_page):
    a, _ = _u64_pair(tmp_path)
    page = open_page(make_page(tmp_path, a))
    assert "18446744073709551615" in page.inner_text("#overview-tables")
    open_tensor(page, "w")
    assert page.locator("#tab-tensor tr", has_text="param id").locator("td").nth(1).inner_text() == str(U64_ID)


def test_u64_max_scheduler_values_are_shown_as_what_they_mean(tmp_path, open_page, mnist):
    from burnpack.records import CosineAnnealingLrScheduler, ModuleLrScheduler

    from .runs import training_run

    training_run(tmp_path / "run", mnist, epochs=2)
    fresh = tmp_path / "run" / "checkpoint" / "scheduler-1.bpk"  # a scheduler saved before its first step
    fresh.unlink()
    ModuleLrScheduler.of(CosineAnnealingLrScheduler.initial()).to_record().save(fresh)
    meaning = "group 0: cosine annealing: not stepped yet (u64::MAX, which the first step wraps to iteration 0)"
    page = open_page(make_page(tmp_path, fresh, name="record.html"))
    assert page.inner_text("#scheduler-state") == "Learning-rate scheduler: " + meaning
    page = open_page(make_page(tmp_path, tmp_path / "run"))
    assert page.inner_text("#tab-checkpoint tr[data-epoch='1'] td.sched") == meaning
    assert page.inner_text("#tab-checkpoint tr[data-epoch='2'] td.sched") == "group 0: cosine annealing: 201 steps taken (at iteration 200)"


def test_the_diff_page_and_the_checkpoint_page_measure_change_the_same_way(tmp_path, open_page, run_dir, capsys):
    a, b = run_dir / "checkpoint" / "model-4.bpk", run_dir / "checkpoint" / "model-5.bpk"
    checkpoint = open_page(make_page(tmp_path, run_dir, name="c.html"))
    cells = checkpoint.locator("#module-changes td[data-pair='4-5']")
    modules = checkpoint.locator("#module-changes tbody tr td:first-child").all_inner_texts()
    diff = open_page(make_page(tmp_path, a, b, name="d.html"))
    diff.fill("#search-diff-tree", ".")  # every module open
    with burnpack.load(a) as pa, burnpack.load(b) as pb:
        for i, module in enumerate(modules):
            names = [n for n in pa.names if n.rpartition(".")[0] == module]
            delta = sum(float(np.square(pb[n].numpy().astype(np.float64) - pa[n].numpy()).sum()) for n in names)
            base = sum(float(np.square(pa[n].numpy().astype(np.float64)).sum()) for n in names)
            shown = float(diff.get_attribute(f"#diff-tree li[data-path='{module}']", "data-value"))
            assert shown == pytest.approx(math.sqrt(delta / base), rel=1e-9)
            assert float(cells.nth(i).get_attribute("data-value")) == pytest.approx(shown, rel=1e-9)
    capsys.readouterr()
    main(["diff", "--json", str(a), str(b)])
    fc1 = next(c for c in json.loads(capsys.readouterr().out)["changed"] if c["name"] == "fc1.weight")
    assert fc1["max_rel"] > 1 and float(diff.get_attribute("#diff-tree li[data-path='fc1.weight']", "data-value")) < 0.1  # no saturation


def test_one_legend_explains_the_measure_on_both_pages(tmp_path, open_page, run_dir):
    checkpoint = open_page(make_page(tmp_path, run_dir, name="c.html"))
    diff = open_page(make_page(tmp_path, run_dir / "checkpoint" / "model-4.bpk", run_dir / "checkpoint" / "model-5.bpk", name="d.html"))
    legend = diff.inner_text("#diff-legend")
    assert legend == checkpoint.inner_text("#change-legend")
    assert "‖Δw‖ / ‖w‖: the norm of the change of the weights over the norm of the weights before it" in legend
    assert all(word in legend for word in ("1e-6", "≥ 1", "unchanged", "undefined", "not compared"))


def test_the_pages_show_labels_not_raw_keys(tmp_path, open_page, run_dir, mnist):
    a, b = _u64_pair(tmp_path)
    burnpack.save({"w": np.arange(6, dtype=np.float16)}, tmp_path / "c.bpk")
    diff = open_page(make_page(tmp_path, a, tmp_path / "c.bpk", name="d.html"))
    diff.click("#diff-tree li[data-path=w] .row")
    overview = open_page(make_page(tmp_path, mnist, name="m.html"))
    open_tensor(overview, "fc1.weight")
    checkpoint = open_page(make_page(tmp_path, run_dir, name="c.html"))
    for page, tabs in ((diff, ["diff"]), (overview, ["overview", "tree", "tensor"]), (checkpoint, ["checkpoint"])):
        for tab in tabs:  # the record kind's line is inspect's, naming the format's fields
            text = page.evaluate(f"() => {{ const t = document.querySelector('#tab-{tab}').cloneNode(true); t.querySelector('#record-detail')?.remove(); return t.innerText; }}")
            assert [k for k in RAW_KEYS if k in text] == [], tab


def test_numbers_are_formatted_one_way(tmp_path, open_page, run_dir, mnist):
    overview = open_page(make_page(tmp_path, mnist, name="m.html"))
    open_tensor(overview, "fc1.weight")
    checkpoint = open_page(make_page(tmp_path, run_dir, name="c.html"))
    diff = open_page(make_page(tmp_path, run_dir / "checkpoint" / "model-4.bpk", run_dir / "checkpoint" / "model-5.bpk", name="d.html"))
    diff.click("#diff-tree li[data-path=fc1] .row")
    diff.click("#diff-tree li[data-path='fc1.weight'] .row")
    shown = []
    for page in (overview, checkpoint, diff):
        shown += page.locator("td[data-value]").all_inner_texts() + page.locator("svg text.tick").all_text_contents()
    shown += diff.locator("#diff-detail td[data-field=numel], #diff-detail td[data-field=elements_differ], #diff-detail td[data-field=rel_change]").all_inner_texts()
    assert len(shown) > 100 and [s for s in shown if not NUMBER.match(s)] == []
    assert overview.locator("#tab-overview td.num", has_text="260,810").count() == 1  # the dtype table as the cards
    assert overview.locator("#stats-values td[data-stat=count]").inner_text() == "204,800"


@pytest.mark.parametrize(("chart", "tab", "titles"), [("chart-modules", "overview", ["parameters"]), ("chart-dtypes", "overview", ["tensor data"]),
                                                       ("hist-values", "tensor", ["value", "count"])])  # fmt: skip
def test_charts_have_axes_with_ticks(tmp_path, open_page, mnist, chart, tab, titles):
    page = open_page(make_page(tmp_path, mnist))
    if tab == "tensor":
        open_tensor(page, "fc1.weight")
    assert page.locator(f"#{chart} text.title").all_text_contents() == titles
    assert page.locator(f"#{chart} text.tick").count() >= 3 * len(titles)


def test_the_metric_curves_have_axes_with_ticks(tmp_path, open_page, run_dir):
    page = open_page(make_page(tmp_path, run_dir))
    assert page.locator("#curve-Loss text.title").all_text_contents() == ["epoch", "Loss"]
    ticks = page.locator("#curve-Loss text.tick").all_text_contents()
    assert ticks[-5:] == ["1", "2", "3", "4", "5"] and len(ticks) >= 8


@pytest.mark.parametrize("width", [900, 1600, 2400])
def test_the_layout_uses_the_window_width(tmp_path, open_page, mnist, width):
    page = open_page(make_page(tmp_path, mnist), width=width)
    page.wait_for_function("() => document.querySelector('#chart-layout').getAttribute('width') !== '560'")
    main_width = page.evaluate("() => document.querySelector('main').getBoundingClientRect().width")
    assert main_width >= page.evaluate("() => document.documentElement.clientWidth") - 1
    bar, card = page.evaluate("""() => { const s = document.querySelector('#chart-layout'), p = s.closest('.panel'), cs = getComputedStyle(p);
        return [s.getBoundingClientRect().width, p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)]; }""")
    assert abs(bar - card) <= 1


def test_the_checkpoint_page_does_not_assert_a_retention_policy(tmp_path, open_page, mnist):
    from .runs import training_run

    training_run(tmp_path / "run", mnist)
    page = open_page(make_page(tmp_path, tmp_path / "run", name="kept.html"))
    text = page.inner_text("#tab-checkpoint")
    assert "dropped by every retention strategy" not in text and "one of the last" not in text and "retention: last" not in text.lower()
    note = page.inner_text("#retention")
    assert note.startswith("Burn does not record which retention strategy a run used") and "They are the epochs Burn's default strategy keeps" in note
    for record in ("model", "optim", "scheduler"):  # a file removed by hand, or another strategy
        (tmp_path / "run" / "checkpoint" / f"{record}-4.bpk").unlink()
    page = open_page(make_page(tmp_path, tmp_path / "run", name="moved.html"))
    assert "They are not the epochs Burn's default strategy keeps (the last 2 and the one with the lowest validation loss: 3, 4, 5)" in page.inner_text("#retention")
    assert page.inner_text("#tab-checkpoint tr[data-epoch='4'] td:nth-child(2)") == "no checkpoint files"


def test_the_diff_page_shows_provenance_apart_from_the_content(tmp_path, open_page):
    from burnpack.interop import write_safetensors

    write_safetensors({"w": np.ones((4, 4), np.float32)}, tmp_path / "w.safetensors")
    assert main(["convert", str(tmp_path / "w.safetensors"), str(tmp_path / "w.bpk"), "-q"]) == 0
    page = open_page(make_page(tmp_path, tmp_path / "w.safetensors", tmp_path / "w.bpk"))
    cards = dict(zip(page.locator("#tab-diff .card .label").all_inner_texts(), page.locator("#tab-diff .card .value").all_inner_texts()))
    assert cards["CHANGED TENSORS"] == cards["METADATA CHANGES"] == "0" and cards["PROVENANCE (NOT COUNTED)"] == "3"
    assert "producer\t(absent)\tburnpack" in page.inner_text("#provenance")
    assert page.locator(".panel", has_text="Metadata changes").locator("p").inner_text() == "none"


# ----------------------------------------------------------------------------- big packs
def test_a_pack_of_100000_tensors_puts_a_page_of_rows_into_the_document(tmp_path, open_page):
    path = tmp_path / "many.bpk"
    one = np.zeros(1, np.float32)
    burnpack.save((burnpack.Tensor.from_numpy(f"blocks.{i}.w", one) for i in range(100_000)), path)
    page = open_page(make_page(tmp_path, path, options=("--no-stats",)))
    page.click("#nav-tree")
    page.click("#tree li[data-path=blocks] .row")
    assert page.locator("#tree li").count() == 1 + PAGE_ROWS
    page.click("#tree .more")
    assert page.locator("#tree li").count() == 1 + 2 * PAGE_ROWS
    page.fill("#search-tree", ".w")
    assert page.inner_text("#count-tree") == "100,000 of 100,000 tensors match"
    assert page.locator("#tree li").count() <= 2 * PAGE_ROWS + 1
    assert page.locator("*").count() < 5_000


# ---------------------------------------------------------------------------- screenshots
def _pixel_variance(browser_page, png: bytes) -> float:
    data = "data:image/png;base64," + base64.b64encode(png).decode()
    return browser_page.evaluate(
        """async (src) => { const img = new Image(); img.src = src; await img.decode();
           const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
           const g = c.getContext('2d'); g.drawImage(img, 0, 0); const d = g.getImageData(0, 0, c.width, c.height).data;
           let s = 0, s2 = 0, n = 0; for (let i = 0; i < d.length; i += 4) { const v = (d[i] + d[i+1] + d[i+2]) / 3; s += v; s2 += v * v; n++; }
           return s2 / n - (s / n) ** 2; }""",
        data,
    )


def test_screenshots_of_each_view_are_not_blank(tmp_path, open_page, mnist, run_dir, monkeypatch):
    """Regenerates the screenshots of docs/view.md (into docs/ with BURNPACK_SCREENSHOTS=docs)."""
    target = Path(os.environ.get("BURNPACK_SCREENSHOTS") or tmp_path).resolve()
    monkeypatch.chdir(mnist.parent)  # the pages name their inputs as given: short relative names
    overview = make_page(tmp_path, mnist.name, name="m.html")
    monkeypatch.chdir(run_dir.parent)
    checkpoint = make_page(tmp_path, run_dir.name, name="c.html")
    diff = make_page(tmp_path, f"{run_dir.name}/checkpoint/model-4.bpk", f"{run_dir.name}/checkpoint/model-5.bpk", name="d.html")
    views = {
        "view-overview.png": (overview, []),
        "view-tensor.png": (overview, ["tensor:conv2.conv.weight"]),
        "view-checkpoint.png": (checkpoint, []),
        "view-diff.png": (diff, ["#diff-tree li[data-path=conv2] .row", "#diff-tree li[data-path='conv2.conv'] .row",
                                 "#diff-tree li[data-path='conv2.conv.weight'] .row"]),  # fmt: skip
    }
    for name, (html, steps) in views.items():
        page = open_page(html)
        for step in steps:
            if step.startswith("tensor:"):
                open_tensor(page, step.removeprefix("tensor:"))
            else:
                page.click(step)
        png = page.screenshot(full_page=True)
        (target / name).write_bytes(png)
        assert _pixel_variance(page, png) > 100, name
