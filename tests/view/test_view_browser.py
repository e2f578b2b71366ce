"""``burnpack view`` pages used as a person uses them, in headless Chromium (see conftest.py)."""

from __future__ import annotations

import base64
import io
import json
import math
import os
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
    page.locator("#results-tree .row.hit").filter(has_text=name).first.click()
    assert page.inner_text("#tensor-name") == name


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


def test_search_finds_names_by_text_and_by_regex(tmp_path, open_page, mnist):
    page = open_page(make_page(tmp_path, mnist))
    page.click("#nav-tree")
    page.fill("#search-tree", "norm.running")
    assert page.inner_text("#count-tree") == "4 matching tensors"
    page.check("#regex-tree")
    page.fill("#search-tree", r"^fc\d\.bias$")
    hits = page.locator("#results-tree .row.hit .nm")
    assert [hits.nth(i).inner_text() for i in range(hits.count())] == ["fc1.bias", "fc2.bias", "fc3.bias"]
    page.fill("#search-tree", "fc(")
    assert "not a valid regex" in page.inner_text("#results-tree")


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
    page.locator("#results-tree .row.hit").first.click()
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
        shown[row.get_attribute("data-name")] = {f: float(row.locator(f"td[data-field={f}]").get_attribute("data-value")) for f in ("max_abs", "max_rel")}
    assert shown == {n: {"max_abs": c["max_abs"], "max_rel": c["max_rel"]} for n, c in expected.items()}
    page.click("#diff-tree li[data-path=fc1] .row")
    page.click("#diff-tree li[data-path='fc1.weight'] .row")
    assert page.inner_text("#diff-detail td[data-field=status]") == "changed"
    assert float(page.inner_text("#diff-detail td[data-field=max_rel]")) == pytest.approx(expected["fc1.weight"]["max_rel"], rel=1e-5)


def test_the_diff_view_lists_added_removed_and_metadata_changes(tmp_path, open_page):
    a, b = tmp_path / "a.bpk", tmp_path / "b.bpk"
    burnpack.save({"keep": np.ones(3, np.float32), "old": np.zeros(2, np.float32)}, a, metadata={"run": "1"})
    burnpack.save({"keep": np.ones(3, np.float32), "new": np.zeros(2, np.float32)}, b, metadata={"run": "2"})
    page = open_page(make_page(tmp_path, a, b))
    lists = page.inner_text("#diff-lists")
    assert "new" in lists.split("Removed")[0] and "old" in lists.split("Removed")[1]
    assert "run" in page.inner_text("#tab-diff") and page.locator("#tab-diff tr[data-name]").count() == 0


# ---------------------------------------------------------------------------- checkpoints
def test_the_checkpoint_view_shows_epochs_retention_and_curves_from_burns_logs(tmp_path, open_page, run_dir):
    page = open_page(make_page(tmp_path, run_dir))
    assert page.locator("#nav-checkpoint.active").count() == 1
    epochs = page.locator("#tab-checkpoint tr[data-epoch]")
    retention = {epochs.nth(i).get_attribute("data-epoch"): epochs.nth(i).locator("td").nth(2).inner_text() for i in range(epochs.count())}
    assert retention == {"1": "dropped by every retention strategy", "2": "dropped by every retention strategy",
                         "3": "lowest validation loss", "4": "one of the last 2", "5": "one of the last 2"}  # fmt: skip
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
    assert page.inner_text("#count-tree") == f"100,000 matching tensors, first {PAGE_ROWS} shown"
    assert page.locator("#results-tree li").count() == PAGE_ROWS
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
