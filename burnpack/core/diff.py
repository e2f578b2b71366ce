"""What differs between two packs: their content, and on request their layout.

Content: tensors added, removed or changed (dtype, shape, param id, bytes), with, for numeric
tensors of the same element count, how many elements differ beyond the tolerances, the largest
absolute and relative element difference, and the tensor's relative change ``‖B − A‖ / ‖A‖``
(:func:`relative_change`, the one measure of change ``view`` shows); metadata and scalars added,
removed or changed. Provenance (:data:`~burnpack.core.metadata.PROVENANCE_KEYS`, the keys of the
stamp Burn's stores and ``convert`` write: who wrote a file, not what it holds) is reported apart
and is a difference only when asked for. Layout (:func:`layout_of`): header version, metadata size
and encoding, data section start, tensor offsets and order, padding and trailing bytes — how the same content was written. ``diff_packs`` compares anything pack-like
(``names``, ``tensors()``, ``metadata``, ``scalars``), so the command line can compare a pack with
a safetensors file.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .display import printable_lines
from .dtypes import dtype_label
from .dump import scalar_json
from .progress import ProgressSetting, finish, progress_for
from .metadata import PROVENANCE_KEYS  # who wrote a file: the keys of the stamp convert writes
from .reader import Pack

if TYPE_CHECKING:  # a type alias only: the JSON side-file reader is not imported for it
    from .sidefile import JSONObject

_EXACT_INTS = (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32)


def sum_of_squares(values: np.ndarray) -> float:
    """``Σ v²`` of numeric values, in float64."""
    wide = values.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.add.reduce(np.square(wide, out=wide), axis=None))


def change_sums(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """``Σ (b − a)²`` and ``Σ a²`` over the elements of two flat numeric arrays of one size, in
    float64: the sums :func:`relative_change` is made of, which add up over chunks, tensors and
    modules. Equal elements (NaN in both, the same infinity) add nothing to the first."""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        step = np.subtract(fb, fa)
        step[(fa == fb) | (np.isnan(fa) & np.isnan(fb))] = 0.0
        delta = float(np.add.reduce(np.square(step, out=step), axis=None))
    return delta, sum_of_squares(fa)


def relative_change(delta_squares: float, base_squares: float) -> float:
    """``‖B − A‖ / ‖A‖`` (Euclidean norms) from :func:`change_sums` of a tensor, or added up over
    a module's tensors: 0 when nothing changed, infinite when A is all zeros and B is not, NaN when
    a value is NaN on one side only or A's norm is infinite. Unlike a per-element relative
    difference it does not saturate at weights near zero: it says how far a tensor or module moved,
    as a share of its size."""
    if delta_squares == 0:
        return 0.0
    if base_squares == 0:
        return math.inf
    if not math.isfinite(base_squares):
        return math.nan
    return math.sqrt(delta_squares) / math.sqrt(base_squares)


@dataclass
class TensorChange:
    name: str
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (a, b)
    bytes_differ: bool = False
    elements_differ: int | None = None
    numel: int | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    nan_mismatch: int = 0
    delta_norm: float | None = None  # ‖B − A‖
    a_norm: float | None = None  # ‖A‖

    @property
    def rel_change(self) -> float | None:
        """``‖B − A‖ / ‖A‖`` (:func:`relative_change`); None when the values were not compared."""
        if self.delta_norm is None or self.a_norm is None:
            return None
        return relative_change(self.delta_norm**2, self.a_norm**2)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "changes": {k: {"a": a, "b": b} for k, (a, b) in self.changes.items()}}
        if self.bytes_differ:
            out["bytes_differ"] = True
        for key in ("elements_differ", "numel", "max_abs", "max_rel", "rel_change", "delta_norm", "a_norm"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value if not isinstance(value, float) or math.isfinite(value) else str(value)
        if self.nan_mismatch:
            out["nan_mismatch"] = self.nan_mismatch
        return out


@dataclass
class PackDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[TensorChange] = field(default_factory=list)
    metadata: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    scalars: dict[str, tuple[dict | None, dict | None]] = field(default_factory=dict)
    provenance: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # PROVENANCE_KEYS
    provenance_counts: bool = False  # whether a provenance difference is a difference
    within_tolerance: list[str] = field(default_factory=list)  # tensors whose values differ only within atol/rtol
    atol: float = 0.0
    rtol: float = 0.0
    layout_differs: bool = False
    layout: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # filled by compare_layout

    @property
    def identical(self) -> bool:
        """Same content (and, when they were asked for, the same provenance and layout)."""
        provenance = self.provenance if self.provenance_counts else {}
        return not (self.added or self.removed or self.changed or self.metadata or self.scalars or provenance or self.layout)

    def to_json(self) -> dict:
        return {
            "identical": self.identical,
            "added": self.added,
            "removed": self.removed,
            "changed": [c.to_json() for c in self.changed],
            "metadata": {k: {"a": a, "b": b} for k, (a, b) in self.metadata.items()},
            "scalars": {k: {"a": a, "b": b} for k, (a, b) in self.scalars.items()},
            "provenance": {k: {"a": a, "b": b} for k, (a, b) in self.provenance.items()},
            "provenance_counts": self.provenance_counts,
            "tolerance": {"atol": self.atol, "rtol": self.rtol},
            "within_tolerance": self.within_tolerance,
            "layout_differs": self.layout_differs,
            "layout": {k: {"a": a, "b": b} for k, (a, b) in self.layout.items()},
        }

    def render(self, a_name: str = "A", b_name: str = "B") -> str:
        k = len(self.provenance)
        uncounted = f"{k} provenance difference{'' if k == 1 else 's'} not counted (who wrote each file, not what it holds: see --provenance)"
        note = " (provenance)" if self.provenance_counts else " (provenance, not counted)"
        provenance = [_entry("metadata", key, a, b) + note for key, (a, b) in self.provenance.items()]
        if self.identical:
            layout = ", different layout: see --layout" if self.layout_differs else ""
            if self.within_tolerance:
                n = len(self.within_tolerance)
                head = f"identical within atol {self.atol:g}, rtol {self.rtol:g} ({n} tensor{'' if n == 1 else 's'} differ{'s' if n == 1 else ''} within it{layout})"
            elif provenance:
                head = f"same content{layout}"
            else:
                return f"identical (same content{layout})" if layout else "identical"
            return printable_lines([head, *provenance, *([uncounted] if provenance else [])])
        lines = [f"~ layout {key}: {a} -> {b}" for key, (a, b) in self.layout.items()]
        for name in self.added:
            lines.append(f"+ tensor {name!r} (only in {b_name})")
        for name in self.removed:
            lines.append(f"- tensor {name!r} (only in {a_name})")
        for c in self.changed:
            parts = [f"{k} {a} -> {b}" for k, (a, b) in c.changes.items()]
            tolerance = f" beyond atol {self.atol:g}, rtol {self.rtol:g}" if self.atol or self.rtol else ""
            if c.elements_differ == 0:
                why = "" if tolerance or c.changes else " (signed zeros or NaN payloads)"
                parts.append(f"values within atol {self.atol:g}, rtol {self.rtol:g}" if tolerance else f"bytes differ, values equal{why}")
            elif c.elements_differ is not None:
                stats = f"{c.elements_differ}/{c.numel} elements differ{tolerance}"
                if c.max_abs is not None:
                    stats += f", max abs diff {c.max_abs:.6g}, max rel diff {c.max_rel:.6g}"
                if c.rel_change is not None:
                    stats += f", ||B-A||/||A|| {c.rel_change:.6g}"
                if c.nan_mismatch:
                    stats += f", {c.nan_mismatch} NaN mismatches"
                parts.append(stats)
            elif c.bytes_differ:
                parts.append("bytes differ")
            lines.append(f"~ tensor {c.name!r}: " + "; ".join(parts))
        for key, (a, b) in self.metadata.items():
            lines.append(_entry("metadata", key, a, b))
        for key, (sa, sb) in self.scalars.items():
            lines.append(_entry("scalar", key, _scalar_text(sa), _scalar_text(sb)))
        lines.extend(provenance)
        n = len(self.added) + len(self.removed) + len(self.changed)
        counts = [(n, "tensor"), (len(self.metadata), "metadata"), (len(self.scalars), "scalar")]
        counts += [(len(self.provenance), "provenance")] if self.provenance_counts else []
        counts += [(len(self.layout), "layout")] if self.layout else []
        summary = ", ".join(f"{k} {what} difference{'' if k == 1 else 's'}" for k, what in counts)
        lines.append(summary + (f"; {uncounted}" if provenance and not self.provenance_counts else ""))
        return printable_lines(lines)


def _entry(what: str, key: str, a: Any, b: Any) -> str:
    show = repr if what == "metadata" else str
    if a is None:
        return f"+ {what} {key!r} = {show(b)}"
    if b is None:
        return f"- {what} {key!r} = {show(a)}"
    return f"~ {what} {key!r}: {show(a)} -> {show(b)}"


def _scalar_text(s: dict | None) -> str | None:
    if s is None:
        return None
    bits = f" [{s['f64_bits']}]" if "f64_bits" in s else ""
    return f"{s['type']}({s['value']}){bits}"


def _values(view: Any) -> np.ndarray | None:
    """The tensor as a flat numeric array (bool as uint8; QFloat: its dequantized values), or None
    when it cannot be read (a length that does not match the shape, a QFloat Burn cannot decode)."""
    try:
        array = (view.numpy(dequantize=True) if view.dtype.is_quantized else view.numpy()).reshape(-1)
    except Exception:  # noqa: BLE001 - a length that does not match the shape: compare bytes only
        return None
    if array.dtype == np.bool_:
        return array.view(np.uint8)
    return array


def _numeric_diff(change: TensorChange, a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> bool:
    """Fill the element statistics (elements within the tolerances do not count as differing);
    returns True when the tensors differ beyond the tolerances."""
    change.numel = int(a.size)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu" and (a.dtype.type in _EXACT_INTS and b.dtype.type in _EXACT_INTS):
        fa, fb = a.astype(np.int64), b.astype(np.int64)
        delta = np.abs(fa - fb).astype(np.float64)
        nan_a = nan_b = np.zeros(a.shape, dtype=bool)
    elif a.dtype.kind in "iu" and b.dtype.kind in "iu":  # 64-bit integers: exact with Python ints
        pa, pb = a.astype(object), b.astype(object)
        delta = np.array([abs(int(x) - int(y)) for x, y in zip(pa, pb)], dtype=np.float64)
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        nan_a = nan_b = np.zeros(a.shape, dtype=bool)
    else:
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        nan_a, nan_b = np.isnan(fa), np.isnan(fb)
        with np.errstate(invalid="ignore"):
            same_inf = np.isinf(fa) & np.isinf(fb) & (fa == fb)
            delta = np.where(same_inf | (nan_a & nan_b), 0.0, np.abs(fa - fb))
        delta = np.where(nan_a ^ nan_b, 0.0, delta)
    change.nan_mismatch = int(np.count_nonzero(nan_a ^ nan_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.maximum(np.abs(fa), np.abs(fb))
        rel = np.where(delta == 0, 0.0, delta / scale)
    beyond = (delta > atol + rtol * np.where(np.isfinite(scale), scale, 0)) | (nan_a ^ nan_b)
    change.elements_differ = int(np.count_nonzero(beyond))
    change.max_abs = float(delta.max()) if delta.size else 0.0
    change.max_rel = float(np.nanmax(rel)) if rel.size else 0.0
    delta_squares, base_squares = change_sums(a, b)
    change.delta_norm, change.a_norm = math.sqrt(delta_squares), math.sqrt(base_squares)
    return change.elements_differ > 0


def diff_packs(
    a: Any, b: Any, *, atol: float = 0.0, rtol: float = 0.0, provenance: bool = False, progress: ProgressSetting = None
) -> PackDiff:
    """Compare two open packs, or pack-like tensor sources (every tensor both have is read).

    Elements within ``atol + rtol * max(|a|, |b|)`` of each other are equal. Differences in
    :data:`PROVENANCE_KEYS` are listed in ``provenance``, and make the packs differ only with
    ``provenance=True``. ``progress`` is fed the bytes of both sides as each tensor both have is
    compared (a callable, or a setting of :func:`~burnpack.core.progress.progress_for`)."""
    out = PackDiff(provenance_counts=provenance, atol=atol, rtol=rtol)
    names_a, names_b = set(a.names), set(b.names)
    out.added = sorted(names_b - names_a)
    out.removed = sorted(names_a - names_b)
    views_a = {v.name: v for v in a.tensors()}
    views_b = {v.name: v for v in b.tensors()}
    common = sorted(names_a & names_b)
    bar = progress_for(progress, sum(_read_bytes(views_a[n]) + _read_bytes(views_b[n]) for n in common), "comparing")
    for name in common:
        va, vb = views_a[name], views_b[name]
        change = TensorChange(name)
        if va.dtype != vb.dtype:
            change.changes["dtype"] = (dtype_label(va.dtype), dtype_label(vb.dtype))
        if va.shape != vb.shape:
            change.changes["shape"] = (list(va.shape), list(vb.shape))
        if va.param_id != vb.param_id:
            change.changes["param_id"] = (va.param_id, vb.param_id)
        if va.data_offsets != vb.data_offsets:
            out.layout_differs = True
        bytes_a, bytes_b = va.memoryview(), vb.memoryview()
        change.bytes_differ = bytes_a != bytes_b
        differs = bool(change.changes)
        if change.bytes_differ:
            xa, xb = _values(va), _values(vb)
            if xa is not None and xb is not None and xa.size == xb.size:
                beyond = _numeric_diff(change, xa, xb, atol, rtol)
                if not (beyond or change.changes) and (atol or rtol):
                    out.within_tolerance.append(name)
                differs = differs or beyond or (atol == 0 and rtol == 0)
            else:
                differs = True
        if differs:
            out.changed.append(change)
        bar(_read_bytes(va) + _read_bytes(vb))
    finish(bar)
    for key in sorted(set(a.metadata) | set(b.metadata)):
        if a.metadata.get(key) != b.metadata.get(key):
            where = out.provenance if key in PROVENANCE_KEYS else out.metadata
            where[key] = (a.metadata.get(key), b.metadata.get(key))
    for key in sorted(set(a.scalars) | set(b.scalars)):
        sa, sb = a.scalars.get(key), b.scalars.get(key)
        if sa != sb:  # Scalar equality compares floats by their bits
            out.scalars[key] = (scalar_json(sa) if sa is not None else None, scalar_json(sb) if sb is not None else None)
    if sorted(views_a, key=lambda n: views_a[n].data_offsets) != sorted(views_b, key=lambda n: views_b[n].data_offsets):
        out.layout_differs = True
    return out


def _read_bytes(view: Any) -> int:
    """The bytes of a tensor a comparison reads, as its progress counts them."""
    return max(int(view.byte_len or 0), 0)


def layout_of(pack: Pack) -> JSONObject:
    """How a pack's content is laid out: what ``--layout`` compares. Reads only the metadata and
    the bytes between tensors (padding), all present in the file."""
    source = pack._source
    ranges = sorted((view.data_offsets, name) for name, view in pack.items())
    data_end = pack.data_section_start + max((end for (_, end), _ in ranges), default=0)
    nonzero = _nonzero_bytes(source, 10 + pack.metadata_size, pack.data_section_start)
    position = 0
    for (start, end), _ in ranges:
        nonzero += _nonzero_bytes(source, pack.data_section_start + position, pack.data_section_start + start)
        position = max(position, end)
    metadata = source.read(10, pack.metadata_size)
    return {
        "header version": pack.version,
        "metadata size": pack.metadata_size,
        "metadata encoding": f"sha256 {hashlib.sha256(metadata).hexdigest()[:16]}",
        "data section start": pack.data_section_start,
        "data order": [name for _, name in ranges],
        "tensor offsets": {name: list(offsets) for offsets, name in ranges},
        "nonzero padding bytes": nonzero,
        "trailing bytes": max(pack.file_size - data_end, 0),
    }


def _nonzero_bytes(source: Any, start: int, end: int) -> int:
    end = min(end, source.size)
    count = 0
    for offset in range(start, end, 1 << 20):
        chunk = source.read(offset, min(1 << 20, end - offset))
        count += len(chunk) - chunk.count(0)
    return count


def compare_layout(result: PackDiff, a: Pack, b: Pack) -> PackDiff:
    """Add the layout differences of ``a`` and ``b`` to ``result`` (which then is not identical)."""
    layout_a, layout_b = layout_of(a), layout_of(b)
    for key, value in layout_a.items():
        other = layout_b[key]
        if value == other:
            continue
        if key == "tensor offsets":
            moved = sorted(n for n in value.keys() & other.keys() if value[n] != other[n])
            if moved:
                first = moved[0]
                result.layout[key] = (f"{first} at {value[first]}", f"{first} at {other[first]} ({len(moved)} moved)")
        elif key == "data order":
            order_a, order_b = [n for n in value if n in other], [n for n in other if n in value]
            if order_a != order_b:
                result.layout[key] = (_head(order_a), _head(order_b))
        else:
            result.layout[key] = (value, other)
    if result.layout:
        result.layout_differs = True
    return result


def _head(names: list[str], n: int = 4) -> str:
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")
