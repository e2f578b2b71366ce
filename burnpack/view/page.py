"""The page: one HTML file, styles and script inline, the report as JSON data inside it.

Nothing from a file is ever written as HTML: the report is embedded as JSON (``<``, ``>`` and
``&`` escaped, everything else ASCII) and the script puts every name, metadata value and scalar on
the page as text, showing control, bidi and other invisible characters as ``\\uXXXX``. Every
integer is exact: one beyond JavaScript's exact range (2**53; param ids, u64 scalars, a shape a
file claims) is embedded as a string of its digits, which the script formats without a number. The page
makes no network request (its Content-Security-Policy forbids them) and works from a file:// URL.
Long lists are drawn on demand: a tree node's children a page at a time, search results up to a
limit, so a pack with 100,000 tensors puts a few hundred rows into the document, not 100,000.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from ..core.sidefile import JSON, JSONObject


PAGE_ROWS = 200
"""Rows a tree node, a search or a table shows before a 'show more' button."""


MAX_EXACT = 2**53 - 1
"""The largest integer a JavaScript number holds exactly (``Number.MAX_SAFE_INTEGER``)."""

_LONG_INTEGER = re.compile(r"(?<=[:,\[])-?\d{16,}(?![.eE\d])")  # an integer token of 16 digits or more
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|' + _LONG_INTEGER.pattern)  # a string, or such an integer


def embed_json(data: JSON) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">`` (and anywhere in HTML),
    every integer beyond :data:`MAX_EXACT` as a string of its digits."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    if _LONG_INTEGER.search(text):  # rare (ids, u64 values): then tokenize, strings passed over whole
        text = _TOKEN.sub(lambda m: f'"{m[0]}"' if m[0][0] != '"' and abs(int(m[0])) > MAX_EXACT else m[0], text)
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
main { padding:16px 20px 40px; }
section.tab { display:none; } section.tab.active { display:block; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin-bottom:14px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:10px 14px; min-width:150px; }
.card .label { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .value { font-size:20px; font-weight:600; overflow-wrap:anywhere; }
.panel { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:12px 14px; margin-bottom:14px; min-width:0; }
.panel h2 { font-size:15px; margin:0 0 8px; }
.grid2 { display:grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap:14px; align-items:start; }
@media (max-width: 900px) { .grid2 { grid-template-columns: minmax(0, 1fr); } }
.chart { width:100%; } .chart svg { display:block; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:3px 8px; border-bottom:1px solid #eceef2; vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:12px; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.mono { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13px; overflow-wrap:anywhere; }
.muted { color:var(--muted); }
.note { color:var(--muted); margin:6px 0; max-width:75em; font-size:13px; }
.tree { list-style:none; padding-left:0; margin:0; }
.tree ul { list-style:none; padding-left:18px; margin:0; border-left:1px dotted #c5cad3; }
.row { display:flex; align-items:center; gap:8px; padding:1px 4px; border-radius:4px; cursor:pointer; }
.row:hover { background:#eef3fb; }
.row.hit .nm { background:#fff3bf; }
.row .tw { width:14px; color:var(--muted); flex:none; text-align:center; }
.row .nm { font-family:ui-monospace, monospace; font-size:13px; white-space:nowrap; flex:none; }
.row .info { color:var(--muted); font-size:12px; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; min-width:0; }
.row .bar { flex:none; width:80px; height:8px; background:#edf0f4; border-radius:4px; overflow:hidden; }
.row .bar span { display:block; height:100%; background:var(--accent2); }
.row .sp { flex:1 0 4px; }
.more { margin:3px 0 3px 22px; font:inherit; font-size:12px; cursor:pointer; background:#fff; border:1px solid var(--line); border-radius:4px; padding:2px 8px; }
.toolbar { display:flex; gap:10px; align-items:center; margin-bottom:6px; flex-wrap:wrap; }
.toolbar input[type=search] { flex:1; min-width:200px; max-width:520px; padding:5px 8px; border:1px solid #b8bec9; border-radius:4px; font:inherit; }
.count { min-height:1.45em; margin-bottom:4px; font-size:12px; }
.error { color:#c92a2a; }
svg text { font:11px system-ui, sans-serif; fill:#5e6675; }
svg text.title { font-size:12px; fill:#1d2330; }
.legend { margin:4px 0 8px; font-size:12px; }
.legend .item { white-space:nowrap; }
.legend span.sw { display:inline-block; width:12px; height:12px; border-radius:2px; vertical-align:middle; margin:0 4px 0 10px; border:1px solid rgba(0,0,0,.08); }
.scale { display:inline-flex; flex-direction:column; vertical-align:middle; margin:0 8px; }
.scale .ramp { width:220px; height:12px; border-radius:2px; }
.scale .ticks { display:flex; justify-content:space-between; width:220px; color:var(--muted); font-size:11px; }
.heat td.cell { text-align:right; font-variant-numeric:tabular-nums; }
.heat td.dark { color:#fff; }
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

// ---------- text ----------------------------------------------------------------------------
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
function svg(tag, attrs, label) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (label !== undefined) e.textContent = visible(label);
  return e;
}

// ---------- numbers: one format everywhere ---------------------------------------------------
// Integers exactly, grouped by thousands; a string of digits is an integer beyond 2^53 (the report
// embeds those as text), formatted as a BigInt, never a Number. Other numbers to 6 significant
// digits, grouped the same way, in exponent form below 1e-4 and from 1e6. Infinities and NaN by name.
const DIGITS = /^-?\d+$/;
function real(v) {
  if (typeof v === "string") return v === "inf" ? Infinity : v === "-inf" ? -Infinity : v === "nan" ? NaN : Number(v);
  return v === null || v === undefined ? NaN : Number(v);
}
function int(n) { return (typeof n === "string" && DIGITS.test(n) ? BigInt(n) : Math.round(Number(n))).toLocaleString("en-US"); }
function num(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "string" && DIGITS.test(v)) return int(v);
  const x = real(v);
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "-∞";
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return int(x);
  const a = Math.abs(x);
  if (a < 1e-4 || a >= 1e6) return x.toExponential(5).replace(/\.?0+e/, "e").replace("e+", "e");
  return x.toLocaleString("en-US", {maximumSignificantDigits: 6});
}
function size(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]; let i = 0, x = real(n);
  while (x >= 1024 && i < u.length - 1) { x /= 1024; i++; }
  return (i ? x.toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1}) : int(n)) + " " + u[i];
}
function pct(part, whole) { return whole ? (100 * part / whole).toFixed(part / whole < 0.001 ? 3 : 1) + "%" : "–"; }
function numCell(v, attrs) { return el("td", Object.assign({cls: "num"}, v === null || v === undefined ? {} : {"data-value": String(v)}, attrs || {}), num(v)); }
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
function fields(rows) {   // [label, value, key] rows: a two-column table, the key as data-field
  return table(["", ""], rows.map(([label, value, key]) => el("tr", {}, el("td", {}, label), el("td", Object.assign({cls: "mono"}, key ? {"data-field": key} : {}), value))));
}
function panel(title, ...kids) { return el("div", {cls: "panel"}, el("h2", {}, title), ...kids); }
function cards(items) { return el("div", {cls: "cards"}, ...items.map(([l, v]) => el("div", {cls: "card"}, el("div", {cls: "label"}, l), el("div", {cls: "value"}, v)))); }

// ---------- charts: SVG drawn here at the width of their panel, with axes and ticks ---------
function chart(id, draw) {   // draw(width) -> <svg>; drawn again when the panel's width changes
  const box = el("div", {cls: "chart"}); let drawn = 0;
  const paint = w => { drawn = w; const s = draw(w); s.setAttribute("id", id); s.setAttribute("role", "img"); box.replaceChildren(s); };
  paint(560);
  new ResizeObserver(() => requestAnimationFrame(() => { const w = Math.floor(box.clientWidth); if (w > 0 && w !== drawn) paint(w); })).observe(box);
  return box;
}
function niceTicks(lo, hi, count) {   // round values (1, 2 or 5 times a power of ten) from lo to hi
  if (!(hi > lo) || !Number.isFinite(hi - lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, count), mag = 10 ** Math.floor(Math.log10(raw)), f = raw / mag;
  const step = (f <= 1.5 ? 1 : f <= 3 ? 2 : f <= 7 ? 5 : 10) * mag, out = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) out.push(Number((k * step).toPrecision(12)));
  return out;
}
function axisTitle(s, x, y, label, rotate) {
  s.append(svg("text", Object.assign({x: x, y: y, "text-anchor": "middle", class: "title"}, rotate ? {transform: `rotate(-90 ${x} ${y})`} : {}), label));
}
function byteTicks(max, count) {   // round numbers of the unit size() shows max in
  const unit = 1024 ** Math.max(0, Math.min(5, Math.floor(Math.log2(Math.max(1, max)) / 10)));
  return niceTicks(0, max / unit, count).map(t => t * unit);
}
function barChart(items, fmt, id, unit, bytes) {   // items: [label, value]; value axis below, in `unit`
  if (!items.length) return el("p", {cls: "muted", id: id}, "no tensors");
  const longest = Math.max(...items.map(i => Math.min(32, visible(i[0]).length)));
  return chart(id, w => {
    const rowH = 22, left = Math.min(Math.round(w * 0.3), 16 + 7 * longest), right = 80, plot = Math.max(60, w - left - right), axis = 38;
    const h = 4 + items.length * rowH + axis, max = Math.max(1, ...items.map(i => real(i[1])));
    const s = svg("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`}), X = v => left + plot * v / max, base = 4 + items.length * rowH;
    for (const t of (bytes ? byteTicks : (lo, n) => niceTicks(0, lo, n))(max, Math.max(2, Math.floor(plot / 90)))) {
      s.append(svg("line", {x1: X(t), y1: 2, x2: X(t), y2: base + 4, stroke: "#e3e6eb"}));
      s.append(svg("text", {x: X(t), y: base + 16, "text-anchor": "middle", class: "tick"}, fmt(t)));
    }
    s.append(svg("line", {x1: left, y1: base, x2: left + plot, y2: base, stroke: "#8a919e"}));
    axisTitle(s, left + plot / 2, base + 32, unit);
    items.forEach(([label, value], i) => {
      const y = 4 + i * rowH, bw = Math.max(1, plot * real(value) / max);
      s.append(svg("text", {x: left - 6, y: y + 14, "text-anchor": "end"}, visible(label).slice(0, 32)));
      const r = svg("rect", {x: left, y: y + 3, width: bw, height: rowH - 8, fill: "#1c7ed6", rx: 2, "data-value": String(value)});
      r.append(svg("title", {}, label + ": " + fmt(value))); s.append(r);
      s.append(svg("text", {x: left + bw + 6, y: y + 14, class: "value"}, fmt(value)));
    });
    return s;
  });
}
function binEdges(stats) {   // numpy.histogram_bin_edges(bins=n, range=(min, max))
  const n = stats.hist.length; let lo = real(stats.min), hi = real(stats.max); if (lo === hi) { lo -= 0.5; hi += 0.5; }
  const step = (hi - lo) / n, edges = []; for (let i = 0; i < n; i++) edges.push(lo + i * step); edges.push(hi); return edges;
}
function histogram(st, id, color) {
  const edges = binEdges(st), counts = st.hist, n = counts.length, max = Math.max(1, ...counts);
  return chart(id, w => {
    const l = 58, r = 14, t = 8, h = 170, b = 42, plot = Math.max(60, w - l - r), lo = edges[0], hi = edges[n];
    const s = svg("svg", {width: w, height: t + h + b, viewBox: `0 0 ${w} ${t + h + b}`}), Y = c => t + h - h * c / max;
    for (const c of niceTicks(0, max, 4).filter(Number.isInteger)) {
      s.append(svg("line", {x1: l, y1: Y(c), x2: l + plot, y2: Y(c), stroke: "#e3e6eb"}));
      s.append(svg("text", {x: l - 5, y: Y(c) + 4, "text-anchor": "end", class: "tick"}, int(c)));
    }
    counts.forEach((c, i) => {
      const bh = c ? Math.max(1, h * c / max) : 0;
      const rect = svg("rect", {x: l + i * plot / n, y: t + h - bh, width: Math.max(1, plot / n - 1), height: bh, fill: color,
        "data-count": c, "data-lo": String(edges[i]), "data-hi": String(edges[i + 1]), class: "bin"});
      rect.append(svg("title", {}, `[${num(edges[i])}, ${num(edges[i + 1])}${i === n - 1 ? "]" : ")"}: ${int(c)} values`)); s.append(rect);
    });
    s.append(svg("line", {x1: l, y1: t + h, x2: l + plot, y2: t + h, stroke: "#8a919e"}), svg("line", {x1: l, y1: t, x2: l, y2: t + h, stroke: "#8a919e"}));
    for (const v of niceTicks(lo, hi, Math.max(2, Math.floor(plot / 90)))) {
      const x = l + plot * (v - lo) / (hi - lo);
      s.append(svg("line", {x1: x, y1: t + h, x2: x, y2: t + h + 4, stroke: "#8a919e"}));
      s.append(svg("text", {x: x, y: t + h + 16, "text-anchor": "middle", class: "tick"}, num(v)));
    }
    axisTitle(s, l + plot / 2, t + h + 34, "value"); axisTitle(s, 14, t + h / 2, "count", true);
    return s;
  });
}
function lineChart(series, id, yTitle) {   // series: [{name, label, color, points: [[epoch, y]]}]
  const pts = series.flatMap(s => s.points).filter(p => Number.isFinite(p[1]));
  return chart(id, w => {
    const l = 70, r = 16, t = 10, h = 200, b = 42, plot = Math.max(60, w - l - r);
    const s = svg("svg", {width: w, height: t + h + b, viewBox: `0 0 ${w} ${t + h + b}`});
    if (!pts.length) return s;
    const xs = [...new Set(pts.map(p => p[0]))].sort((a, b) => a - b);
    let x0 = xs[0], x1 = xs[xs.length - 1], y0 = Math.min(...pts.map(p => p[1])), y1 = Math.max(...pts.map(p => p[1]));
    if (x0 === x1) { x0 -= 1; x1 += 1; } if (y0 === y1) { y0 -= Math.abs(y0) / 2 || 1; y1 += Math.abs(y1) / 2 || 1; }
    const yt = niceTicks(y0, y1, 4), step = yt.length > 1 ? yt[1] - yt[0] : 0;
    if (step) { y0 = Math.min(y0, yt[0] > y0 ? yt[0] - step : yt[0]); y1 = Math.max(y1, yt[yt.length - 1] < y1 ? yt[yt.length - 1] + step : yt[yt.length - 1]); }
    const X = x => l + plot * (x - x0) / (x1 - x0), Y = y => t + h * (1 - (y - y0) / (y1 - y0));
    for (const v of niceTicks(y0, y1, 4)) {
      s.append(svg("line", {x1: l, y1: Y(v), x2: l + plot, y2: Y(v), stroke: "#e3e6eb"}));
      s.append(svg("text", {x: l - 5, y: Y(v) + 4, "text-anchor": "end", class: "tick"}, num(v)));
    }
    const every = Math.max(1, Math.ceil(xs.length / Math.max(2, Math.floor(plot / 40))));
    xs.forEach((x, i) => { if (i % every === 0 || i === xs.length - 1) {
      s.append(svg("line", {x1: X(x), y1: t + h, x2: X(x), y2: t + h + 4, stroke: "#8a919e"}));
      s.append(svg("text", {x: X(x), y: t + h + 16, "text-anchor": "middle", class: "tick"}, int(x))); } });
    s.append(svg("line", {x1: l, y1: t + h, x2: l + plot, y2: t + h, stroke: "#8a919e"}), svg("line", {x1: l, y1: t, x2: l, y2: t + h, stroke: "#8a919e"}));
    axisTitle(s, l + plot / 2, t + h + 34, "epoch"); axisTitle(s, 14, t + h / 2, yTitle, true);
    series.forEach(ser => {
      const p = ser.points.filter(q => Number.isFinite(q[1]));
      s.append(svg("polyline", {points: p.map(q => `${X(q[0])},${Y(q[1])}`).join(" "), fill: "none", stroke: ser.color, "stroke-width": 2}));
      p.forEach(q => { const c = svg("circle", {cx: X(q[0]), cy: Y(q[1]), r: 3.5, fill: ser.color, class: "point", "data-series": ser.name, "data-x": q[0], "data-y": String(q[1])});
        c.append(svg("title", {}, `${ser.label}, epoch ${int(q[0])}: ${num(q[1])}`)); s.append(c); });
    });
    return s;
  });
}
function swatches(items) {   // [label, colour] -> a legend line
  return items.map(([label, colour]) => { const sw = el("span", {cls: "sw"}); sw.style.background = colour; return el("span", {cls: "item"}, sw, label); });
}

// ---------- change: one measure and one colour scale on every page ----------------------------
// ‖B − A‖ / ‖A‖ (Euclidean norms) of a tensor, or of a module's tensors together: the norm of the
// change over the norm of the weights before it. Python's burnpack.core.diff.relative_change.
function relChange(d2, a2) { if (d2 === 0) return 0; if (a2 === 0) return Infinity; if (!Number.isFinite(a2)) return NaN; return Math.sqrt(d2) / Math.sqrt(a2); }
const UNCHANGED = "#d3f2d9", UNDEFINED = "#c8b6ff", NOT_COMPARED = "#e4e7eb";
function changeShade(x) {   // 1e-6 (pale yellow) ... 1 and more (dark red), on a log scale
  const t = Math.min(1, Math.max(0, (Math.log10(x) + 6) / 6));
  return [Math.round(52 - 52 * t), Math.round(92 - 17 * t), Math.round(84 - 40 * t)];
}
function changeColour(x) {
  if (x === null || x === undefined) return NOT_COMPARED;
  if (x === 0) return UNCHANGED;
  if (Number.isNaN(x)) return UNDEFINED;
  const [hue, sat, light] = changeShade(x); return `hsl(${hue}, ${sat}%, ${light}%)`;
}
function isDark(x) { return typeof x === "number" && x > 0 && !Number.isNaN(x) && changeShade(x)[2] < 58; }
function changeLegend(id) {
  const stops = [-6, -5, -4, -3, -2, -1, 0].map(e => changeColour(10 ** e)).join(", ");
  const ramp = el("div", {cls: "ramp"}); ramp.style.background = `linear-gradient(to right, ${stops})`;
  const scale = el("span", {cls: "scale"}, ramp, el("span", {cls: "ticks"}, ...["1e-6", "1e-4", "0.01", "≥ 1"].map(t => el("span", {}, t))));
  return el("div", {id: id},
    el("p", {cls: "note"}, "Relative change ‖Δw‖ / ‖w‖: the norm of the change of the weights over the norm of the weights before it, for a tensor; " +
      "for a module, both norms over all its tensors. 0.01: the weights moved by 1% of their size; ∞: they were all zeros; " +
      "undefined: a value is NaN on one side only, or ‖w‖ is infinite. Not compared: tensors added, removed, or of another element count."),
    el("div", {cls: "legend"}, "‖Δw‖ / ‖w‖", scale, ...swatches([["unchanged", UNCHANGED], ["undefined", UNDEFINED], ["not compared", NOT_COMPARED]])));
}

// ---------- tabs ----------------------------------------------------------------------------
const nav = el("nav"), main = el("main"), tabs = {};
function addTab(name, label) {
  const sec = el("section", {cls: "tab", id: "tab-" + name}); main.append(sec);
  const btn = el("button", {id: "nav-" + name, onclick: () => show(name)}, label); nav.append(btn);
  tabs[name] = [btn, sec]; return sec;
}
function show(name) { for (const [k, [b, s]] of Object.entries(tabs)) { b.classList.toggle("active", k === name); s.classList.toggle("active", k === name); } }

// ---------- the module tree, searched by filtering it -----------------------------------------
function buildTree(names, indices, leafInfo) {   // leafInfo(i) -> {key: number}, summed up the tree
  const root = {name: "", path: "", kids: new Map(), leaf: null, sum: {}};
  for (const i of indices) {
    let node = root; const parts = names[i].split(".");
    parts.forEach((part, j) => {
      const last = j === parts.length - 1, key = (last ? "\u0000" : "") + part;
      let kid = node.kids.get(key);
      if (!kid) { kid = {name: part, path: parts.slice(0, j + 1).join("."), kids: new Map(), leaf: null, sum: {}}; node.kids.set(key, kid); }
      node = kid;
    });
    node.leaf = i;
  }
  (function add(node) {
    if (node.leaf !== null && !node.kids.size) { node.sum = leafInfo(node.leaf); return; }
    for (const k of node.kids.values()) { add(k); for (const [key, v] of Object.entries(k.sum)) node.sum[key] = (node.sum[key] || 0) + v; }
    node.sorted = [...node.kids.values()].sort((a, b) => natCmp(a.name, b.name) || (a.leaf === null ? -1 : 1));
  })(root);
  return root;
}
function treeView(root, opts) {   // opts: onLeaf(i), info(node) -> text, bar(node) -> [percent, colour], value(node) -> data-value, open, hits
  let budget = opts.open ? PAGE : 0;   // a search opens modules until about a page of rows is drawn
  function row(node) {
    const li = el("li", Object.assign({"data-path": node.path}, opts.value ? {"data-value": String(opts.value(node))} : {}));
    const isLeaf = node.leaf !== null && !node.kids.size;
    const tw = el("span", {cls: "tw"}, isLeaf ? "•" : "▸");
    const [width, colour] = opts.bar(node), share = el("span", {cls: "bar"}), fill = el("span");
    fill.style.width = width + "%"; if (colour) fill.style.background = colour; share.append(fill);
    const r = el("div", {cls: "row " + (isLeaf ? "leaf" : "module") + (isLeaf && opts.hits ? " hit" : "")}, tw, el("span", {cls: "nm"}, node.name + (isLeaf ? "" : "/")),
      el("span", {cls: "sp"}), el("span", {cls: "info"}, opts.info(node)), share);
    li.append(r);
    if (isLeaf) { r.addEventListener("click", () => opts.onLeaf(node.leaf)); return li; }
    let ul = null;
    const toggle = () => {
      if (ul) { ul.remove(); ul = null; tw.textContent = "▸"; return; }
      tw.textContent = "▾"; ul = el("ul"); li.append(ul); page(ul, node.sorted, 0);
    };
    r.addEventListener("click", toggle);
    if (budget > 0) { budget -= Math.min(PAGE, node.sorted.length); toggle(); }
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
function searchableTree(names, target, leafInfo, opts) {   // the tree, or only the names a search matches with their modules open
  const input = el("input", {type: "search", placeholder: "filter the tree by name (text, or a regex)", id: "search-" + target});
  const isRegex = el("input", {type: "checkbox", id: "regex-" + target});
  const count = el("div", {cls: "count muted", id: "count-" + target}), box = el("div", {id: target});
  const all = names.map((_, i) => i), full = buildTree(names, all, leafInfo);
  function draw() {
    const q = input.value;
    if (!q) { count.replaceChildren(); box.replaceChildren(treeView(full, opts)); return; }
    let test;
    if (isRegex.checked) {
      try { const re = new RegExp(q, "u"); test = s => re.test(s); }
      catch (e) { count.replaceChildren(el("span", {cls: "error"}, "not a valid regex: " + e.message)); box.replaceChildren(); return; }
    } else test = s => s.includes(q);
    const hits = all.filter(i => test(names[i]));
    count.textContent = `${int(hits.length)} of ${int(names.length)} tensors match`;
    box.replaceChildren(treeView(buildTree(names, hits, leafInfo), Object.assign({}, opts, {open: true, hits: true})));
  }
  input.addEventListener("input", draw); isRegex.addEventListener("change", draw); draw();
  return [el("div", {cls: "toolbar"}, input, el("label", {}, isRegex, " regex")), count, box];
}

// ---------- one pack: overview, tree, tensor ------------------------------------------------
const P = R.pack;
if (P) {
  const T = P.tensors, names = T.map(t => t[0]), total = P.totals.parameters;
  // overview
  const ov = addTab("overview", "Overview");
  ov.append(cards([["record kind", P.record_kind], ["tensors", int(P.totals.tensors)], ["parameters", int(total)], ["tensor data", size(P.totals.bytes)],
    ["metadata entries", int(P.metadata.length)], ["scalars", int(P.scalars.length)]]));
  ov.append(el("p", {cls: "muted", id: "record-detail"}, P.record_detail));
  if (P.scheduler) ov.append(el("p", {id: "scheduler-state"}, "Learning-rate scheduler: " + P.scheduler));
  const dt = Object.entries(P.totals.by_dtype).sort((a, b) => b[1].elements - a[1].elements);
  ov.append(el("div", {cls: "grid2"},
    panel("Parameters by top-level module", barChart(P.by_module.map(m => [m[0], m[1]]), num, "chart-modules", "parameters")),
    panel("By dtype", barChart(dt.map(([k, v]) => [k, v.bytes]), size, "chart-dtypes", "tensor data", true),
      table(["dtype", "tensors", "parameters", "tensor data"], dt.map(([k, v]) => el("tr", {}, el("td", {}, k), numCell(v.tensors), numCell(v.elements), el("td", {cls: "num"}, size(v.bytes)))), [1, 2, 3]))));
  const side = [];
  if (P.layout) {
    const L = P.layout, parts = [["header", L.header, "#495057"], ["metadata", L.metadata_size, "#1c7ed6"], ["alignment padding", L.alignment_padding, "#adb5bd"],
      ["tensor data", L.file_size - L.data_section_start - L.trailing_bytes, "#d9480f"], ["trailing bytes", L.trailing_bytes, "#862e9c"]];
    const bar = chart("chart-layout", w => {
      const s = svg("svg", {width: w, height: 26, viewBox: `0 0 ${w} 26`}); let x = 0;
      parts.forEach(([name, n, c]) => { const wdt = L.file_size ? w * n / L.file_size : 0; if (n > 0) { const r = svg("rect", {x: x, y: 0, width: Math.max(wdt, 2), height: 26, fill: c}); r.append(svg("title", {}, `${name}: ${int(n)} bytes`)); s.append(r); } x += wdt; });
      return s;
    });
    side.push(panel("File layout", bar, el("div", {cls: "legend"}, ...swatches(parts.map(([name, n, c]) => [`${name} ${size(n)}`, c]))),
      table(["", "value"], [["format version", num(L.version)], ["file size", int(L.file_size) + " bytes"], ["header", int(L.header) + " bytes"], ["metadata", int(L.metadata_size) + " bytes"],
        ["data section starts at", "byte " + int(L.data_section_start)], ["alignment padding", int(L.alignment_padding) + " bytes"],
        ["nonzero padding bytes", L.nonzero_padding_bytes === null ? "not read (--no-stats)" : int(L.nonzero_padding_bytes)], ["trailing bytes", int(L.trailing_bytes)]]
        .map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {cls: "num"}, v))), [1])));
  }
  side.push(el("div", {cls: "grid2"},
    panel("Metadata", P.metadata.length ? table(["key", "value"], P.metadata.map(([k, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {cls: "mono"}, v)))) : el("p", {cls: "muted"}, "none")),
    panel("Scalars", P.scalars.length ? table(["key", "type", "value"], P.scalars.map(([k, t, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {}, t), el("td", {cls: "mono"}, v)))) : el("p", {cls: "muted"}, "none"))));
  ov.append(el("div", {id: "overview-tables"}, ...side));
  // tree
  const tr = addTab("tree", "Module tree");
  tr.append(panel("Module tree", ...searchableTree(names, "tree", i => ({params: Number(T[i][3])}), {onLeaf: openTensor,
    info: n => (n.leaf !== null && !n.kids.size ? T[n.leaf][1] + " [" + T[n.leaf][2].map(int).join(", ") + "]  " : "") + int(n.sum.params) + " params · " + pct(n.sum.params, total),
    bar: n => [total ? 100 * n.sum.params / total : 0, null]})));
  // tensor detail
  const det = addTab("tensor", "Tensor");
  det.append(el("p", {cls: "muted"}, "Pick a tensor in the module tree."));
  function openTensor(i) {
    const [name, dtype, shape, numel, nbytes, pid, offs] = T[i];
    const rows = [["name", name], ["dtype", dtype], ["shape", "[" + shape.map(int).join(", ") + "]"], ["elements", int(numel)], ["size", int(nbytes) + " bytes (" + size(nbytes) + ")"],
      ["param id", pid === null || pid === undefined ? "none" : String(pid)]];
    if (offs) rows.push(["data offsets", `[${int(offs[0])}, ${int(offs[1])})`]);
    det.replaceChildren(el("h2", {id: "tensor-name", cls: "mono"}, name), panel("Descriptor", fields(rows)));
    const st = P.stats ? P.stats[i] : undefined;
    const q = P.quant[String(i)];
    if (q) det.append(panel("Quantization", el("p", {id: "quant-scheme"}, "QFloat " + q.scheme), statsBlock(q.scales, "scales", "#2b8a3e", "scales")));
    if (st === undefined) det.append(el("p", {cls: "muted", id: "no-stats"}, "No statistics: the page was made with --no-stats."));
    else if (st === null) det.append(el("p", {cls: "muted"}, "No statistics: the values are not numbers."));
    else det.append(panel("Statistics of the " + (q ? "dequantized values" : "values") + (st.finite < st.count ? " (minimum … standard deviation and histogram over the finite ones)" : ""), statsBlock(st, "values", "#d9480f")));
    show("tensor");
  }
  function statsBlock(st, id, color, title) {
    const keys = [["minimum", "min", st.min], ["maximum", "max", st.max], ["mean", "mean", st.mean], ["standard deviation", "std", st.std], ["values", "count", st.count],
      ["zeros", "zeros", st.zeros], ["NaN", "NaN", st.nan], ["+∞", "+inf", st.posinf], ["-∞", "-inf", st.neginf]];
    const t = table(["statistic", "value"], keys.map(([label, key, v]) => el("tr", {}, el("td", {}, label), numCell(v, {"data-stat": key}))), [1]); t.id = "stats-" + id;
    const hist = st.hist.length ? histogram(st, "hist-" + id, color) : el("p", {cls: "muted"}, st.no_histogram || "no finite values");
    return el("div", {}, title ? el("h2", {}, "Statistics of the " + title) : null, el("div", {cls: "grid2"}, t, hist));
  }
}

// ---------- diff --------------------------------------------------------------------------
const D = R.diff;
if (D) {
  const sec = addTab("diff", "Diff"), res = D.result, names = D.names;
  const changed = new Map(res.changed.map(c => [c.name, c])), added = new Set(res.added), removed = new Set(res.removed);
  const provenance = Object.entries(res.provenance);
  sec.append(cards([["changed tensors", int(res.changed.length)], ["added", int(res.added.length)], ["removed", int(res.removed.length)],
    ["metadata changes", int(Object.keys(res.metadata).length)], ["scalar changes", int(Object.keys(res.scalars).length)],
    ...(provenance.length ? [["provenance (not counted)", int(provenance.length)]] : [])]));
  const status = name => added.has(name) ? "added" : removed.has(name) ? "removed" : changed.has(name) ? "changed" : "identical";
  const leafInfo = i => {
    const pair = D.norms[i], st = status(names[i]), s = {tensors: 1, [st]: 1};
    if (pair) { s.d2 = real(pair[0]) ** 2; s.a2 = real(pair[1]) ** 2; s.compared = 1; }
    return s;
  };
  const value = n => n.sum.compared ? relChange(n.sum.d2, n.sum.a2) : null;
  const CHANGE_LABELS = {dtype: "dtype", shape: "shape", param_id: "param id"};
  const shown = v => v === null || v === undefined ? "none" : Array.isArray(v) ? "[" + v.map(int).join(", ") + "]" : String(v);
  const described = c => Object.entries(c.changes).map(([k, v]) => [CHANGE_LABELS[k] || k, shown(v.a) + " → " + shown(v.b), k]);   // besides the values
  const detail = el("div", {id: "diff-detail"}, panel("Tensor change", el("p", {cls: "muted"}, "Pick a tensor in the tree to see how it changed.")));
  function openChange(i) {
    const name = names[i], c = changed.get(name), st = status(name), pair = D.norms[i];
    const rows = [["name", name, "name"], ["status", st === "added" ? "added (only in " + D.b + ")" : st === "removed" ? "removed (only in " + D.a + ")" : st, "status"]];
    if (pair) rows.push(["relative change ‖Δw‖ / ‖w‖", num(relChange(real(pair[0]) ** 2, real(pair[1]) ** 2)), "rel_change"], ["‖Δw‖", num(pair[0]), "delta_norm"], ["‖w‖ (before)", num(pair[1]), "a_norm"]);
    if (c) {
      rows.push(...described(c));
      if (c.numel !== undefined) rows.push(["elements", num(c.numel), "numel"]);
      if (c.elements_differ !== undefined) rows.push(["elements that differ", num(c.elements_differ), "elements_differ"]);
      if (c.max_abs !== undefined) rows.push(["largest element difference |b − a|", num(c.max_abs), "max_abs"]);
      if (c.nan_mismatch) rows.push(["NaN in one file only", num(c.nan_mismatch), "nan_mismatch"]);
      rows.push(["bytes differ", c.bytes_differ ? "yes" : "no", "bytes_differ"]);
    }
    detail.replaceChildren(panel("Tensor change", fields(rows)));
  }
  const treeOpts = {onLeaf: openChange, bar: n => [100, changeColour(value(n))], info: n => {
    const leaf = n.leaf !== null && !n.kids.size, v = value(n);
    if (leaf) { const st = status(names[n.leaf]); return st === "changed" ? (v === null ? "changed (not compared: " + Object.keys(changed.get(names[n.leaf]).changes).join(", ") + ")" : "‖Δw‖/‖w‖ " + num(v)) : st; }
    const counts = ["changed", "added", "removed"].filter(k => n.sum[k]).map(k => `${int(n.sum[k])} ${k}`);
    return (v === null ? "" : "‖Δw‖/‖w‖ " + num(v) + " · ") + (counts.length ? counts.join(", ") + " of " + int(n.sum.tensors) : "all " + int(n.sum.tensors) + " identical");
  }, value: value};
  sec.append(el("div", {cls: "grid2"}, panel("Tensors, coloured by relative change", changeLegend("diff-legend"), ...searchableTree(names, "diff-tree", leafInfo, treeOpts)), detail));
  const index = new Map(names.map((n, i) => [n, i]));
  const relOf = c => { const pair = D.norms[index.get(c.name)]; return pair ? relChange(real(pair[0]) ** 2, real(pair[1]) ** 2) : null; };
  const order = x => x === null ? -1 : Number.isNaN(x) ? Infinity : x;
  const top = res.changed.slice().sort((a, b) => order(relOf(b)) - order(relOf(a)));
  sec.append(panel("Changed tensors (largest relative change first)", table(["tensor", "what changed", "elements that differ", "largest |b − a|", "‖Δw‖ / ‖w‖"],
    top.slice(0, PAGE).map(c => { const x = relOf(c), cell = numCell(x === null ? null : x, {"data-field": "rel_change"}); cell.style.background = changeColour(x); if (isDark(x)) cell.style.color = "#fff";
      return el("tr", {"data-name": c.name}, el("td", {cls: "mono"}, c.name), el("td", {}, [...Object.keys(c.changes).map(k => CHANGE_LABELS[k] || k), ...(c.bytes_differ && c.elements_differ !== 0 ? ["values"] : [])].join(", ")),
        numCell(c.elements_differ, {"data-field": "elements_differ"}), numCell(c.max_abs, {"data-field": "max_abs"}), cell); }), [2, 3, 4]),
    top.length > PAGE ? el("p", {cls: "muted"}, `${int(top.length - PAGE)} more not listed`) : null));
  const lists = [["Added (only in " + D.b + ")", res.added], ["Removed (only in " + D.a + ")", res.removed]].map(([t, xs]) => panel(t, xs.length ? el("ul", {}, ...xs.slice(0, PAGE).map(x => el("li", {cls: "mono"}, x))) : el("p", {cls: "muted"}, "none")));
  sec.append(el("div", {cls: "grid2", id: "diff-lists"}, ...lists));
  const pairRows = entries => entries.map(([k, v]) => el("tr", {}, el("td", {cls: "mono"}, k), el("td", {cls: "mono"}, v[0]), el("td", {cls: "mono"}, v[1])));
  const meta = pairRows(Object.entries(res.metadata).map(([k, v]) => [k, [v.a ?? "(absent)", v.b ?? "(absent)"]]));
  const scalar = s => s ? s.type + "(" + s.value + ")" : "(absent)";
  const scal = pairRows(Object.entries(res.scalars).map(([k, v]) => [k, [scalar(v.a), scalar(v.b)]]));
  sec.append(el("div", {cls: "grid2"}, panel("Metadata changes", meta.length ? table(["key", D.a, D.b], meta) : el("p", {cls: "muted"}, "none")),
    panel("Scalar changes", scal.length ? table(["key", D.a, D.b], scal) : el("p", {cls: "muted"}, "none"))));
  if (provenance.length) sec.append(el("div", {id: "provenance"}, panel("Provenance: who wrote each file (not counted as a change)",
    el("p", {cls: "note"}, "format, producer and version are the stamp Burn's stores and burnpack convert put on every file they write: they say who wrote it, not what it holds. burnpack diff --provenance counts them."),
    table(["key", D.a, D.b], pairRows(provenance.map(([k, v]) => [k, [v.a ?? "(absent)", v.b ?? "(absent)"]]))))));
}

// ---------- checkpoint directory ----------------------------------------------------------
const C = R.checkpoint;
if (C) {
  const sec = addTab("checkpoint", "Checkpoints"), kept = C.epochs.map(e => e.epoch), loss = e => C.valid_losses[String(e)];
  const list = xs => xs.length ? xs.map(int).join(", ") : "none";
  sec.append(cards([["directory", C.directory], ["epochs with checkpoints", list(kept)], ["epochs without checkpoints", list(C.without_files)],
    ["lowest validation loss", C.best_epoch === null ? "not logged" : "epoch " + int(C.best_epoch) + (loss(C.best_epoch) !== undefined ? " (" + num(loss(C.best_epoch)) + ")" : "")]]));
  const R_ = C.default_retention;
  const retention = R_.keeps === null ? "No validation losses are recorded beside the checkpoints, so there is nothing to compare them with."
    : R_.matches ? `They are the epochs Burn's default strategy keeps (the last 2 and the one with the lowest validation loss) after the ${int(Math.max(...kept, ...C.without_files))} epochs recorded.`
    : `They are not the epochs Burn's default strategy keeps (the last 2 and the one with the lowest validation loss: ${list(R_.keeps)}): the run used another strategy, or files were removed or copied by hand.`;
  sec.append(el("p", {cls: "note", id: "retention"}, "Burn does not record which retention strategy a run used, so this page cannot say why an epoch's files were kept or are missing. " + retention));
  const rows = C.epochs.map(e => {
    const notes = [];
    if (e.epoch === C.best_epoch) notes.push("lowest validation loss");
    if (!e.complete) notes.push("incomplete: " + Object.keys(e.files).join(", ") + " only");
    for (const part of ["model", "optim", "scheduler"]) if (e[part] && e[part].error) notes.push(part + ": " + e[part].error);
    const sched = e.scheduler ? (e.scheduler.meaning || e.scheduler.state || "") : "";
    return el("tr", {"data-epoch": e.epoch}, numCell(e.epoch), el("td", {cls: "mono"}, Object.values(e.files).join(" ")), el("td", {}, notes.join("; ")),
      numCell(e.optim && e.optim.step !== undefined ? e.optim.step : null), el("td", {}, e.optim ? (e.optim.kind || "") : ""),
      el("td", {cls: "sched"}, sched), numCell(loss(e.epoch) ?? null));
  });
  C.without_files.forEach(d => rows.push(el("tr", {"data-epoch": d}, numCell(d), el("td", {cls: "muted"}, "no checkpoint files"), el("td", {}, d === C.best_epoch ? "lowest validation loss" : ""), el("td"), el("td"), el("td"), numCell(loss(d) ?? null))));
  rows.sort((a, b) => Number(a.dataset.epoch) - Number(b.dataset.epoch));
  sec.append(panel("Epochs", table(["epoch", "files", "notes", "optimizer step", "optimizer", "learning-rate scheduler", "validation loss"], rows, [0, 3, 6])));
  const charts = [];
  const metricNames = [...new Set(Object.values(C.metrics).flatMap(m => Object.keys(m)))].sort();
  const colours = {train: "#1c7ed6", valid: "#d9480f"};
  metricNames.forEach(m => {
    const title = m.replace(/_/g, " ");
    const series = Object.entries(C.metrics).filter(([, ms]) => ms[m]).map(([split, ms]) => ({name: split, label: split === "valid" ? "validation" : "training",
      color: colours[split] || "#495057", points: Object.entries(ms[m]).map(([e, v]) => [Number(e), real(v)])}));
    charts.push(panel(title + " per epoch", el("div", {cls: "legend"}, ...swatches(series.map(s => [s.label, s.color]))), lineChart(series, "curve-" + m, title)));
  });
  sec.append(charts.length ? el("div", {cls: "grid2", id: "curves"}, ...charts) : panel("Metric curves", el("p", {cls: "muted"}, "no train/ or valid/ metric logs beside the checkpoint directory")));
  const pairs = C.changes.pairs.map(p => p[0] + "-" + p[1]), mods = Object.keys(C.changes.modules).sort(natCmp);
  if (pairs.length) {
    const body = mods.slice(0, PAGE).map(m => el("tr", {}, el("td", {cls: "mono"}, m), ...pairs.map(p => {
      const v = C.changes.modules[m][p], x = v === undefined ? null : real(v), td = numCell(x === null ? null : v, {"data-pair": p});
      td.classList.add("cell"); td.style.background = changeColour(x); if (isDark(x)) td.classList.add("dark"); return td; })));
    const t = table(["module", ...pairs.map(p => "epoch " + p.replace("-", " → "))], body, pairs.map((_, i) => i + 1)); t.classList.add("heat"); t.id = "module-changes";
    const errors = Object.entries(C.changes.errors).map(([p, e]) => el("p", {cls: "error", "data-pair": p}, `epoch ${p.replace("-", " → ")}: not compared: ${e}`));
    sec.append(panel("How far each module's weights moved between epochs", changeLegend("change-legend"), t,
      mods.length > PAGE ? el("p", {cls: "muted"}, `${int(mods.length - PAGE)} more modules not listed`) : null, ...errors));
  }
  if (R.pack) sec.append(el("p", {cls: "muted"}, `The Overview, Module tree and Tensor tabs show the model of epoch ${int(C.model_epoch)}.`));
}

// ---------- page ----------------------------------------------------------------------------
const src = C ? C.directory : P ? P.source : "";
document.body.append(el("header", {}, el("h1", {}, "burnpack view"), el("span", {cls: "source", id: "source"}, D ? D.a + " → " + D.b : src)), nav, main,
  el("footer", {}, "Generated by " + R.generator + ". Self-contained: no network, no external scripts."));
show(C ? "checkpoint" : D ? "diff" : "overview");
"""
