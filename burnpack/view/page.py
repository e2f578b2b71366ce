"""The page: one HTML file, styles and script inline, the report as JSON data inside it.

Nothing from a file is ever written as HTML: the report is embedded as JSON (``<``, ``>`` and
``&`` escaped, everything else ASCII) and the script puts every name, metadata value and scalar on
the page as text, showing control, bidi and other invisible characters as ``\\uXXXX``. The page
makes no network request (its Content-Security-Policy forbids them) and works from a file:// URL.
Long lists are drawn on demand: a tree node's children a page at a time, search results up to a
limit, so a pack with 100,000 tensors puts a few hundred rows into the document, not 100,000.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.sidefile import JSON, JSONObject

PAGE_ROWS = 200
"""Rows a tree node, a search or a table shows before a 'show more' button."""


def embed_json(data: JSON) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">`` (and anywhere in HTML)."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(data: JSONObject) -> str:
    """The whole page for a report from :mod:`burnpack.view.report`."""
    title = str(data.get("title", "burnpack view"))
    safe_title = "".join(c if c.isalnum() or c in " ._-/" else "?" for c in title)[:200]
    return (
        _HEAD.replace("@TITLE@", safe_title)
        + '<script type="application/json" id="report">'
        + embed_json(data)
        + "</script>\n<script>\n"
        + _SCRIPT.replace("@PAGE_ROWS@", str(PAGE_ROWS))
        + "</script>\n</body>\n</html>\n"
    )


_HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>@TITLE@ — burnpack view</title>
<style>
:root { --fg:#1d2330; --muted:#5e6675; --line:#d9dde5; --bg:#f6f7f9; --card:#fff; --accent:#d9480f; --accent2:#1c7ed6; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header { background:#20242c; color:#fff; padding:10px 20px; display:flex; gap:18px; align-items:baseline; flex-wrap:wrap; }
header h1 { font-size:17px; margin:0; font-weight:600; }
header .source { color:#c8ccd4; font-family:ui-monospace, monospace; font-size:13px; word-break:break-all; }
nav { display:flex; gap:2px; padding:0 20px; background:#2c313b; }
nav button { background:none; border:0; color:#c8ccd4; padding:9px 14px; font:inherit; cursor:pointer; border-bottom:3px solid transparent; }
nav button.active { color:#fff; border-bottom-color:var(--accent); }
main { padding:16px 20px 40px; max-width:1280px; }
section.tab { display:none; } section.tab.active { display:block; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin-bottom:14px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:10px 14px; min-width:150px; }
.card .label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .value { font-size:20px; font-weight:600; }
.panel { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:12px 14px; margin-bottom:14px; }
.panel h2 { font-size:15px; margin:0 0 8px; }
.grid2 { display:grid; grid-template-columns: 1fr 1fr; gap:14px; }
@media (max-width: 900px) { .grid2 { grid-template-columns: 1fr; } }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:3px 8px; border-bottom:1px solid #eceef2; vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:12px; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
.mono { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13px; }
.muted { color:var(--muted); }
.tree { list-style:none; padding-left:0; margin:0; }
.tree ul { list-style:none; padding-left:18px; margin:0; border-left:1px dotted #c5cad3; }
.row { display:flex; align-items:center; gap:8px; padding:1px 4px; border-radius:4px; cursor:pointer; }
.row:hover { background:#eef3fb; }
.row .tw { width:14px; color:var(--muted); flex:none; text-align:center; }
.row .nm { font-family:ui-monospace, monospace; font-size:13px; white-space:nowrap; }
.row .info { color:var(--muted); font-size:12px; white-space:nowrap; }
.row .bar { flex:none; width:80px; height:8px; background:#edf0f4; border-radius:4px; overflow:hidden; }
.row .bar span { display:block; height:100%; background:var(--accent2); }
.row .sp { flex:1; }
.more { margin:3px 0 3px 22px; font:inherit; font-size:12px; cursor:pointer; background:#fff; border:1px solid var(--line); border-radius:4px; padding:2px 8px; }
.toolbar { display:flex; gap:10px; align-items:center; margin-bottom:10px; flex-wrap:wrap; }
.toolbar input[type=search] { width:360px; padding:5px 8px; border:1px solid #b8bec9; border-radius:4px; font:inherit; }
.error { color:#c92a2a; }
svg text { font:11px system-ui, sans-serif; fill:#5e6675; }
.legend span { display:inline-block; width:12px; height:12px; border-radius:2px; vertical-align:middle; margin:0 4px 0 10px; }
.heat td.cell { text-align:right; font-variant-numeric:tabular-nums; }
.kept { color:#2b8a3e; } .deleted { color:#c92a2a; }
footer { color:var(--muted); font-size:12px; padding:0 20px 20px; }
</style>
</head>
<body>
"""

_SCRIPT = r"""
"use strict";
const R = JSON.parse(document.getElementById("report").textContent);
const PAGE = @PAGE_ROWS@;
const SVGNS = "http://www.w3.org/2000/svg";

// ---------- text, numbers -----------------------------------------------------------------
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g;
function visible(s) { return String(s).replace(INVISIBLE, c => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = visible(v); else if (k === "cls") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : visible(k));
  return e;
}
function svg(tag, attrs) { const e = document.createElementNS(SVGNS, tag); for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v); return e; }
function int(n) { return Number(n).toLocaleString("en-US"); }
function size(n) { const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; n = Number(n); while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; } return (i ? n.toFixed(1) : String(n)) + " " + u[i]; }
function num(v) { if (v === null || v === undefined) return "-"; if (typeof v === "boolean") return v ? "yes" : "no"; if (typeof v === "string") return v; if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v); return String(Number(Number(v).toPrecision(6))); }
function pct(part, whole) { return whole ? (100 * part / whole).toFixed(part / whole < 0.001 ? 3 : 1) + "%" : "-"; }
function numCell(v, attrs) { return el("td", Object.assign({cls: "num", "data-value": String(v)}, attrs || {}), num(v)); }
function natCmp(a, b) {
  const pa = a.split(/(\d+)/), pb = b.split(/(\d+)/);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    let x = pa[i], y = pb[i];
    if (i % 2) { x = x.replace(/^0+(?=\d)/, ""); y = y.replace(/^0+(?=\d)/, ""); if (x.length !== y.length) return x.length - y.length; }
    if (x !== y) return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}
function table(head, rows, numeric) {
  const t = el("table"); const tr = el("tr");
  head.forEach((h, i) => tr.append(el("th", {cls: numeric && numeric.includes(i) ? "num" : ""}, h)));
  t.append(el("thead", {}, tr)); const body = el("tbody"); rows.forEach(r => body.append(r)); t.append(body); return t;
}
function panel(title, ...kids) { return el("div", {cls: "panel"}, el("h2", {}, title), ...kids); }

// ---------- charts (SVG drawn here, no library) ---------------------------------------------
function barChart(items, fmt, id) {   // items: [label, value]
  const w = 560, rowH = 20, left = 170, h = items.length * rowH + 6, max = Math.max(1, ...items.map(i => i[1]));
  const s = svg("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img", id: id});
  items.forEach(([label, value], i) => {
    const y = i * rowH + 3, bw = Math.max(1, (w - left - 90) * value / max);
    const t = svg("text", {x: left - 6, y: y + 13, "text-anchor": "end"}); t.textContent = visible(label).slice(0, 28); s.append(t);
    const r = svg("rect", {x: left, y: y + 2, width: bw, height: rowH - 6, fill: "#1c7ed6", rx: 2, "data-value": value});
    const tip = svg("title"); tip.textContent = visible(label) + ": " + fmt(value); r.append(tip); s.append(r);
    const v = svg("text", {x: left + bw + 6, y: y + 13}); v.textContent = fmt(value); s.append(v);
  });
  return s;
}
function binEdges(stats) {   // numpy.histogram_bin_edges(bins=n, range=(min, max))
  const n = stats.hist.length; let lo = stats.min, hi = stats.max; if (lo === hi) { lo -= 0.5; hi += 0.5; }
  const step = (hi - lo) / n, edges = []; for (let i = 0; i < n; i++) edges.push(lo + i * step); edges.push(hi); return edges;
}
function histogram(st, id, color) {
  const stats = {hist: st.hist, edges: binEdges(st)};
  const w = 560, h = 170, pad = 28, counts = stats.hist, n = counts.length, max = Math.max(1, ...counts);
  const s = svg("svg", {width: w, height: h + pad, viewBox: `0 0 ${w} ${h + pad}`, role: "img", id: id});
  const bw = (w - 20) / n;
  counts.forEach((c, i) => {
    const bh = c ? Math.max(1, (h - 10) * c / max) : 0;
    const r = svg("rect", {x: 10 + i * bw, y: h - bh, width: Math.max(1, bw - 1), height: bh, fill: color || "#d9480f",
      "data-count": c, "data-lo": String(stats.edges[i]), "data-hi": String(stats.edges[i + 1]), class: "bin"});
    const tip = svg("title"); tip.textContent = `[${num(stats.edges[i])}, ${num(stats.edges[i + 1])}${i === n - 1 ? "]" : ")"}: ${int(c)}`; r.append(tip); s.append(r);
  });
  s.append(svg("line", {x1: 10, y1: h, x2: w - 10, y2: h, stroke: "#8a919e"}));
  const lo = svg("text", {x: 10, y: h + 16}); lo.textContent = num(stats.edges[0]); s.append(lo);
  const hi = svg("text", {x: w - 10, y: h + 16, "text-anchor": "end"}); hi.textContent = num(stats.edges[n]); s.append(hi);
  return s;
}
function lineChart(series, id) {   // series: [{name, color, points: [[x, y]]}]
  const w = 560, h = 220, l = 70, b = 26, pts = series.flatMap(s => s.points).filter(p => Number.isFinite(p[1]));
  const s = svg("svg", {width: w, height: h + b, viewBox: `0 0 ${w} ${h + b}`, role: "img", id: id});
  if (!pts.length) return s;
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (x0 === x1) { x0 -= 1; x1 += 1; } if (y0 === y1) { y0 -= 1; y1 += 1; }
  const X = x => l + (w - l - 12) * (x - x0) / (x1 - x0), Y = y => 8 + (h - 16) * (1 - (y - y0) / (y1 - y0));
  s.append(svg("line", {x1: l, y1: h, x2: w - 8, y2: h, stroke: "#8a919e"}), svg("line", {x1: l, y1: 4, x2: l, y2: h, stroke: "#8a919e"}));
  for (const [v, y] of [[y0, Y(y0)], [y1, Y(y1)]]) { const t = svg("text", {x: l - 4, y: y + 4, "text-anchor": "end"}); t.textContent = num(v); s.append(t); }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) { const t = svg("text", {x: X(x), y: h + 16, "text-anchor": "middle"}); t.textContent = x; s.append(t); }
  series.forEach(ser => {
    const p = ser.points.filter(q => Number.isFinite(q[1]));
    s.append(svg("polyline", {points: p.map(q => `${X(q[0])},${Y(q[1])}`).join(" "), fill: "none", stroke: ser.color, "stroke-width": 2}));
    p.forEach(q => { const c = svg("circle", {cx: X(q[0]), cy: Y(q[1]), r: 3.5, fill: ser.color, class: "point", "data-series": ser.name, "data-x": q[0], "data-y": String(q[1])});
      const tip = svg("title"); tip.textContent = `${ser.name} epoch ${q[0]}: ${num(q[1])}`; c.append(tip); s.append(c); });
  });
  return s;
}

// ---------- tabs ----------------------------------------------------------------------------
const nav = el("nav"), main = el("main"), tabs = {};
function addTab(name, label) {
  const sec = el("section", {cls: "tab", id: "tab-" + name}); main.append(sec);
  const btn = el("button", {id: "nav-" + name, onclick: () => show(name)}, label); nav.append(btn);
  tabs[name] = [btn, sec]; return sec;
}
function show(name) { for (const [k, [b, s]] of Object.entries(tabs)) { b.classList.toggle("active", k === name); s.classList.toggle("active", k === name); } }

// ---------- one pack: overview, tree, tensor ------------------------------------------------
const P = R.pack;
function buildTree(names, leafInfo) {
  const root = {name: "", path: "", kids: new Map(), params: 0, leaf: null, worst: null};
  names.forEach((name, i) => {
    let node = root; const parts = name.split(".");
    parts.forEach((part, j) => {
      const last = j === parts.length - 1, key = (last ? "\u0000" : "") + part;
      let kid = node.kids.get(key);
      if (!kid) { kid = {name: part, path: parts.slice(0, j + 1).join("."), kids: new Map(), params: 0, leaf: null, worst: null}; node.kids.set(key, kid); }
      node = kid;
    });
    node.leaf = i;
  });
  (function sum(node) {
    if (node.leaf !== null && !node.kids.size) { const info = leafInfo(node.leaf); node.params = info.params; node.worst = info.worst; return; }
    for (const k of node.kids.values()) { sum(k); node.params += k.params; if (k.worst !== null && (node.worst === null || k.worst > node.worst)) node.worst = k.worst; }
    node.sorted = [...node.kids.values()].sort((a, b) => natCmp(a.name, b.name) || (a.leaf === null ? -1 : 1));
  })(root);
  return root;
}
function treeView(root, total, opts) {   // opts: {onLeaf(i), label(node) -> extra, color(node)}
  function row(node) {
    const li = el("li", {"data-path": node.path});
    const isLeaf = node.leaf !== null && !node.kids.size;
    const tw = el("span", {cls: "tw"}, isLeaf ? "•" : "▸");
    const share = el("span", {cls: "bar"}); const fill = el("span"); fill.style.width = (opts.fullBar ? 100 : total ? 100 * node.params / total : 0) + "%";
    if (opts.color) fill.style.background = opts.color(node); share.append(fill);
    const r = el("div", {cls: "row " + (isLeaf ? "leaf" : "module")}, tw, el("span", {cls: "nm"}, node.name + (isLeaf ? "" : "/")),
      el("span", {cls: "sp"}), el("span", {cls: "info"}, (opts.label ? opts.label(node) + "  " : "") + (opts.unit ? int(node.params) + " " + opts.unit(node.params) : int(node.params) + " params · " + pct(node.params, total))), share);
    li.append(r);
    if (isLeaf) r.addEventListener("click", () => opts.onLeaf(node.leaf));
    else {
      let open = false, ul = null;
      r.addEventListener("click", () => {
        open = !open; tw.textContent = open ? "▾" : "▸";
        if (open) { ul = el("ul"); li.append(ul); page(ul, node.sorted, 0); } else if (ul) { ul.remove(); ul = null; }
      });
    }
    return li;
  }
  function page(ul, nodes, start) {
    const end = Math.min(nodes.length, start + PAGE);
    for (let i = start; i < end; i++) ul.append(row(nodes[i]));
    if (end < nodes.length) {
      const more = el("button", {cls: "more", onclick: () => { more.remove(); page(ul, nodes, end); }}, `show ${int(Math.min(PAGE, nodes.length - end))} more (${int(nodes.length - end)} not shown)`);
      ul.append(more);
    }
  }
  const ul = el("ul", {cls: "tree"}); page(ul, root.sorted, 0); return ul;
}
function searchBox(names, onLeaf, target) {
  const input = el("input", {type: "search", placeholder: "search names (text, or a regex)", id: "search-" + target});
  const isRegex = el("input", {type: "checkbox", id: "regex-" + target});
  const out = el("div", {id: "results-" + target});
  function run() {
    out.replaceChildren(); const q = input.value; if (!q) return;
    let test;
    if (isRegex.checked) { try { const re = new RegExp(q, "u"); test = s => re.test(s); } catch (e) { out.append(el("div", {cls: "error"}, "not a valid regex: " + e.message)); return; } }
    else test = s => s.includes(q);
    const hits = []; names.forEach((n, i) => { if (test(n)) hits.push(i); });
    hits.sort((a, b) => natCmp(names[a], names[b]));
    out.append(el("div", {cls: "muted", id: "count-" + target}, `${int(hits.length)} matching tensor${hits.length === 1 ? "" : "s"}` + (hits.length > PAGE ? `, first ${PAGE} shown` : "")));
    const ul = el("ul", {cls: "tree"});
    hits.slice(0, PAGE).forEach(i => ul.append(el("li", {}, el("div", {cls: "row leaf hit", onclick: () => onLeaf(i)}, el("span", {cls: "tw"}, "•"), el("span", {cls: "nm"}, names[i])))));
    out.append(ul);
  }
  input.addEventListener("input", run); isRegex.addEventListener("change", run);
  return [el("div", {cls: "toolbar"}, input, el("label", {}, isRegex, " regex")), out];
}

if (P) {
  const T = P.tensors, names = T.map(t => t[0]), total = P.totals.parameters;
  // overview
  const ov = addTab("overview", "Overview");
  ov.append(el("div", {cls: "cards"},
    ...[["record kind", P.record_kind], ["tensors", int(P.totals.tensors)], ["parameters", int(total)], ["tensor data", size(P.totals.bytes)],
        ["metadata", int(P.metadata.length)], ["scalars", int(P.scalars.length)]]
      .map(([l, v]) => el("div", {cls: "card"}, el("div", {cls: "label"}, l), el("div", {cls: "value"}, v)))));
  ov.append(el("p", {cls: "muted", id: "record-detail"}, P.record_detail));
  const dt = Object.entries(P.totals.by_dtype).sort((a, b) => b[1].elements - a[1].elements);
  const mods = P.by_module.slice(0, 24);
  if (P.by_module.length > 24) mods.push(["(" + (P.by_module.length - 24) + " more)", P.by_module.slice(24).reduce((s, m) => s + m[1], 0), 0]);
  ov.append(el("div", {cls: "grid2"},
    panel("Parameters by top-level module", barChart(mods.map(m => [m[0], m[1]]), int, "chart-modules")),
    panel("By dtype", barChart(dt.map(([k, v]) => [k, v.bytes]), size, "chart-dtypes"),
      table(["dtype", "tensors", "parameters", "bytes"], dt.map(([k, v]) => el("tr", {}, el("td", {}, k), numCell(v.tensors), numCell(v.elements), el("td", {cls: "num"}, size(v.bytes)))), [1, 2, 3]))));
  const side = [];
  if (P.layout) {
    const L = P.layout, parts = [["header", L.header, "#495057"], ["metadata", L.metadata_size, "#1c7ed6"], ["padding", L.alignment_padding, "#adb5bd"], ["tensor data", L.file_size - L.data_section_start - L.trailing_bytes, "#d9480f"], ["trailing", L.trailing_bytes, "#862e9c"]];
    const bar = svg("svg", {width: 560, height: 26, viewBox: "0 0 560 26", id: "chart-layout"}); let x = 0;
    parts.forEach(([name, n, c]) => { const wdt = L.file_size ? 560 * n / L.file_size : 0; if (n > 0) { const r = svg("rect", {x: x, y: 0, width: Math.max(wdt, 2), height: 26, fill: c}); const tp = svg("title"); tp.textContent = `${name}: ${int(n)} bytes`; r.append(tp); bar.append(r); } x += wdt; });
    side.push(panel("File layout", bar, el("div", {cls: "legend"}, ...parts.flatMap(([name, n, c]) => { const sp = el("span"); sp.style.background = c; return [sp, `${name} ${size(n)}`]; })),
      table(["", "value"], [["format version", L.version], ["file size", int(L.file_size) + " bytes"], ["header", L.header + " bytes"], ["metadata", int(L.metadata_size) + " bytes"],
        ["data section starts at", "byte " + int(L.data_section_start)], ["alignment padding", int(L.alignment_padding) + " bytes"], ["nonzero padding bytes", L.nonzero_padding_bytes === null ? "not read (--no-stats)" : int(L.nonzero_padding_bytes)], ["trailing bytes", int(L.trailing_bytes)]]
        .map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {cls: "num"}, String(v)))), [1])));
  }
  side.push(panel("Metadata", P.metadata.length ? table(["key", "value"], P.metadata.map(([k, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {cls: "mono"}, v)))) : el("p", {cls: "muted"}, "none")));
  side.push(panel("Scalars", P.scalars.length ? table(["key", "type", "value"], P.scalars.map(([k, t, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {}, t), el("td", {cls: "mono"}, v)))) : el("p", {cls: "muted"}, "none")));
  ov.append(el("div", {id: "overview-tables"}, ...side));
  // tree
  const tr = addTab("tree", "Module tree");
  const root = buildTree(names, i => ({params: T[i][3], worst: null}));
  tr.append(...searchBox(names, openTensor, "tree"));
  tr.append(el("div", {id: "tree"}, treeView(root, total, {onLeaf: openTensor, label: n => n.leaf !== null && !n.kids.size ? T[n.leaf][1] + " [" + T[n.leaf][2].join(", ") + "]" : ""})));
  // tensor detail
  const det = addTab("tensor", "Tensor");
  det.append(el("p", {cls: "muted"}, "Pick a tensor in the tree or a search result."));
  function openTensor(i) {
    const [name, dtype, shape, numel, nbytes, pid, offs] = T[i];
    const rows = [["name", name], ["dtype", dtype], ["shape", "[" + shape.join(", ") + "]"], ["elements", int(numel)], ["bytes", int(nbytes) + " (" + size(nbytes) + ")"],
      ["param id", pid === null || pid === undefined ? "-" : String(pid)]];
    if (offs) rows.push(["data offsets", `[${int(offs[0])}, ${int(offs[1])})`]);
    det.replaceChildren(el("h2", {id: "tensor-name", cls: "mono"}, name),
      panel("Descriptor", table(["", ""], rows.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {cls: "mono"}, v))))));
    const st = P.stats ? P.stats[i] : undefined;
    const q = P.quant[String(i)];
    if (q) det.append(panel("Quantization", el("p", {id: "quant-scheme"}, "QFloat " + q.scheme), statsBlock(q.scales, "scales", "#2b8a3e")));
    if (st === undefined) det.append(el("p", {cls: "muted", id: "no-stats"}, "No statistics: the page was made with --no-stats."));
    else if (st === null) det.append(el("p", {cls: "muted"}, "No statistics: the values are not numbers."));
    else det.append(statsBlock(st, "values", "#d9480f", q ? "dequantized values" : "values"));
    show("tensor");
  }
  function statsBlock(st, id, color, title) {
    const keys = [["min", st.min], ["max", st.max], ["mean", st.mean], ["std", st.std], ["count", st.count], ["zeros", st.zeros], ["NaN", st.nan], ["+inf", st.posinf], ["-inf", st.neginf]];
    const t = table(["statistic", "value"], keys.map(([k, v]) => el("tr", {}, el("td", {}, k), numCell(v, {"data-stat": k}))), [1]); t.id = "stats-" + id;
    return panel("Statistics of the " + (title || id) + (st.finite < st.count ? " (min…std and histogram over the finite ones)" : ""),
      el("div", {cls: "grid2"}, t, st.hist.length ? histogram(st, "hist-" + id, color) : el("p", {cls: "muted"}, st.no_histogram || "no finite values")));
  }
}

// ---------- diff --------------------------------------------------------------------------
const D = R.diff;
if (D) {
  const sec = addTab("diff", "Diff"), res = D.result;
  const changed = new Map(res.changed.map(c => [c.name, c])), added = new Set(res.added), removed = new Set(res.removed);
  const all = [...new Set([...D.a_names, ...D.b_names])];
  function rel(c) { if (!c) return 0; if (c.max_rel === undefined) return Infinity; return c.max_rel === "inf" || c.max_rel === "nan" ? Infinity : Number(c.max_rel); }
  function colour(x) {
    if (x === null) return "#adb5bd"; if (x === 0) return "#2b8a3e"; if (!Number.isFinite(x)) return "#862e9c";
    const t = Math.min(1, Math.max(0, (Math.log10(x) + 8) / 8)); return `hsl(${Math.round(50 - 50 * t)}, 85%, ${Math.round(55 - 10 * t)}%)`;
  }
  sec.append(el("div", {cls: "cards"}, ...[["compared", D.a + " → " + D.b], ["changed", int(res.changed.length)], ["added", int(res.added.length)], ["removed", int(res.removed.length)],
    ["metadata changes", int(Object.keys(res.metadata).length)], ["scalar changes", int(Object.keys(res.scalars).length)]].map(([l, v]) => el("div", {cls: "card"}, el("div", {cls: "label"}, l), el("div", {cls: "value"}, v)))));
  const legend = el("div", {cls: "legend"}, "relative change:", ...[["same", 0], ["1e-6", 1e-6], ["1e-3", 1e-3], ["≥ 1", 1], ["not numeric", Infinity], ["added/removed", null]].flatMap(([l, x]) => { const s = el("span"); s.style.background = colour(x); return [s, l]; }));
  const info = i => ({params: 0, worst: added.has(all[i]) || removed.has(all[i]) ? null : rel(changed.get(all[i]))});
  const root = buildTree(all, info);
  (function count(n) { if (n.leaf !== null && !n.kids.size) { n.params = 1; return; } n.params = 0; for (const k of n.kids.values()) { count(k); n.params += k.params; } })(root);
  const detail = el("div", {id: "diff-detail"}, panel("Tensor change", el("p", {cls: "muted"}, "Pick a tensor in the tree to see how it changed.")));
  function openChange(i) {
    const name = all[i], c = changed.get(name);
    const rows = [["name", name], ["status", added.has(name) ? "added (only in " + D.b + ")" : removed.has(name) ? "removed (only in " + D.a + ")" : c ? "changed" : "identical"]];
    if (c) { for (const [k, v] of Object.entries(c.changes)) rows.push([k, JSON.stringify(v.a) + " → " + JSON.stringify(v.b)]); for (const k of ["numel", "elements_differ", "max_abs", "max_rel", "nan_mismatch", "bytes_differ"]) if (c[k] !== undefined) rows.push([k, num(c[k])]); }
    detail.replaceChildren(panel("Tensor change", table(["", ""], rows.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {cls: "mono", "data-field": k}, v))))));
  }
  const view = treeView(root, 0, {onLeaf: openChange, color: n => colour(n.worst), fullBar: true, unit: k => k === 1 ? "tensor" : "tensors", label: n => {
    const leaf = n.leaf !== null && !n.kids.size, name = leaf ? all[n.leaf] : null;
    if (leaf) return added.has(name) ? "added" : removed.has(name) ? "removed" : changed.has(name) ? "max rel " + num(changed.get(name).max_rel) : "identical";
    return n.worst === null ? "" : "worst rel " + num(n.worst); }});
  sec.append(el("div", {cls: "grid2"}, panel("Tensors, coloured by relative change", legend, ...searchBox(all, openChange, "diff"), el("div", {id: "diff-tree"}, view)), detail));
  const top = res.changed.slice().sort((a, b) => rel(b) - rel(a));
  sec.append(panel("Changed tensors (largest relative change first)", table(["name", "changes", "elements differ", "max abs", "max rel"],
    top.slice(0, PAGE).map(c => el("tr", {"data-name": c.name}, el("td", {cls: "mono"}, c.name), el("td", {}, Object.keys(c.changes).join(", ") || (c.bytes_differ ? "values" : "")),
      numCell(c.elements_differ ?? "-"), numCell(c.max_abs ?? "-", {"data-field": "max_abs"}), numCell(c.max_rel ?? "-", {"data-field": "max_rel"}))), [2, 3, 4]),
    top.length > PAGE ? el("p", {cls: "muted"}, `${int(top.length - PAGE)} more not listed`) : null));
  const lists = [["Added (only in " + D.b + ")", res.added], ["Removed (only in " + D.a + ")", res.removed]].map(([t, xs]) => panel(t, xs.length ? el("ul", {}, ...xs.slice(0, PAGE).map(x => el("li", {cls: "mono"}, x))) : el("p", {cls: "muted"}, "none")));
  sec.append(el("div", {cls: "grid2", id: "diff-lists"}, ...lists));
  const meta = Object.entries(res.metadata).map(([k, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {cls: "mono"}, v.a ?? "(absent)"), el("td", {cls: "mono"}, v.b ?? "(absent)")));
  const scal = Object.entries(res.scalars).map(([k, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {cls: "mono"}, v.a ? v.a.type + "(" + v.a.value + ")" : "(absent)"), el("td", {cls: "mono"}, v.b ? v.b.type + "(" + v.b.value + ")" : "(absent)")));
  sec.append(el("div", {cls: "grid2"}, panel("Metadata changes", meta.length ? table(["key", D.a, D.b], meta) : el("p", {cls: "muted"}, "none")),
    panel("Scalar changes", scal.length ? table(["key", D.a, D.b], scal) : el("p", {cls: "muted"}, "none"))));
}

// ---------- checkpoint directory ----------------------------------------------------------
const C = R.checkpoint;
if (C) {
  const sec = addTab("checkpoint", "Checkpoints");
  sec.append(el("div", {cls: "cards"}, ...[["directory", C.directory], ["epochs kept", C.epochs.map(e => e.epoch).join(", ") || "none"], ["deleted by retention", C.deleted.join(", ") || "none"],
    ["best epoch (lowest valid loss)", C.best_epoch ?? "-"], ["retention", (C.keep_last ? "last " + C.keep_last + " + best" : "-")]].map(([l, v]) => el("div", {cls: "card"}, el("div", {cls: "label"}, l), el("div", {cls: "value"}, String(v))))));
  const rows = C.epochs.map(e => el("tr", {"data-epoch": e.epoch}, numCell(e.epoch), el("td", {cls: "mono"}, Object.values(e.files).join(" ")), el("td", {cls: "kept"}, e.kept_because.join("; ")),
    numCell(e.optim && e.optim.step !== undefined ? e.optim.step ?? "-" : "-"), el("td", {}, e.optim ? (e.optim.kind || e.optim.error || "") : "-"),
    el("td", {cls: "mono"}, e.scheduler ? (e.scheduler.state || e.scheduler.error || "") : "-"), numCell(C.valid_losses[String(e.epoch)] ?? "-")));
  C.deleted.forEach(d => rows.push(el("tr", {"data-epoch": d}, numCell(d), el("td", {cls: "muted"}, "(files deleted)"), el("td", {cls: "deleted"}, "dropped by every retention strategy"), el("td"), el("td"), el("td"), numCell(C.valid_losses[String(d)] ?? "-"))));
  rows.sort((a, b) => Number(a.dataset.epoch) - Number(b.dataset.epoch));
  sec.append(panel("Epochs", table(["epoch", "files", "retention", "optimizer step", "optimizer", "LR scheduler state", "valid loss"], rows, [0, 3, 6])));
  const charts = [];
  const metricNames = [...new Set(Object.values(C.metrics).flatMap(m => Object.keys(m)))].sort();
  const colours = {train: "#1c7ed6", valid: "#d9480f"};
  metricNames.forEach(m => {
    const series = Object.entries(C.metrics).filter(([, ms]) => ms[m]).map(([split, ms]) => ({name: split, color: colours[split] || "#495057", points: Object.entries(ms[m]).map(([e, v]) => [Number(e), typeof v === "string" ? NaN : v])}));
    charts.push(panel(m.replace(/_/g, " ") + " per epoch", el("div", {cls: "legend"}, ...series.flatMap(s => { const sp = el("span"); sp.style.background = s.color; return [sp, s.name]; })), lineChart(series, "curve-" + m)));
  });
  sec.append(charts.length ? el("div", {cls: "grid2", id: "curves"}, ...charts) : panel("Metric curves", el("p", {cls: "muted"}, "no train/ or valid/ metric logs beside the checkpoint directory")));
  const pairs = C.changes.pairs.map(p => p[0] + "-" + p[1]), mods = Object.keys(C.changes.modules).sort(natCmp);
  if (pairs.length) {
    const shade = v => { if (typeof v !== "number") return "#f1f3f5"; const t = Math.min(1, Math.max(0, (Math.log10(Math.max(v, 1e-9)) + 6) / 6)); return `hsl(${Math.round(210 - 190 * t)}, 80%, ${Math.round(92 - 40 * t)}%)`; };
    const body = mods.slice(0, PAGE).map(m => el("tr", {}, el("td", {cls: "mono"}, m), ...pairs.map(p => { const v = C.changes.modules[m][p]; const td = numCell(v ?? "-", {"data-pair": p}); td.classList.add("cell"); td.style.background = shade(v); return td; })));
    const t = table(["module", ...pairs.map(p => "epoch " + p.replace("-", " → "))], body); t.classList.add("heat"); t.id = "module-changes";
    const errors = Object.entries(C.changes.errors).map(([p, e]) => el("p", {cls: "error", "data-pair": p}, `epoch ${p.replace("-", " → ")}: not compared: ${e}`));
    sec.append(panel("Relative change of each module's weights, ‖wₙ₊₁ − wₙ‖ / ‖wₙ‖", t, mods.length > PAGE ? el("p", {cls: "muted"}, `${mods.length - PAGE} more modules not listed`) : null, ...errors));
  }
  if (R.pack) sec.append(el("p", {cls: "muted"}, `The Overview, Module tree and Tensor tabs show the model of epoch ${C.model_epoch}.`));
}

// ---------- page ----------------------------------------------------------------------------
const src = C ? C.directory : P ? P.source : "";
document.body.append(el("header", {}, el("h1", {}, "burnpack view"), el("span", {cls: "source", id: "source"}, D ? D.a + " → " + D.b : src)), nav, main,
  el("footer", {}, "Generated by " + R.generator + ". Self-contained: no network, no external scripts."));
show(C ? "checkpoint" : D ? "diff" : "overview");
"""
