"""Generate the burnpack codec and the CDDL from the declarative schema.

Reads ``schema/layout.py`` (the file layout as ``construct`` structs) and ``schema/metadata.toml``
(the CBOR metadata as data) and writes:

* ``burnpack/codec/_generated/layout.py`` — header format, layout constants and limits;
* ``burnpack/codec/_generated/metadata.py`` — the metadata types (structs, enums, the dtype table)
  and, per type, a writer encoder, a fast validator over cbor2's output, an exact
  ciborium-equivalent decoder and Burn's serde form both ways;
* ``schema/burnpack.cddl`` — the metadata as CDDL (RFC 8610);
* ``__init__.pyi`` beside each lazy package facade (``FACADES``) — the types of the names its
  ``_EXPORTS`` table lists once and imports on first use.

Run ``python -m schema.generate`` after changing the schema; ``--check`` exits 1 when the checked-in
files are stale (the test suite runs it).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import struct
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import construct

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_TOML = ROOT / "schema" / "metadata.toml"
GENERATED = ROOT / "burnpack" / "codec" / "_generated"
CDDL = ROOT / "schema" / "burnpack.cddl"
FACADES = ("burnpack/__init__.py", "burnpack/records/__init__.py", "burnpack/interop/__init__.py")
"""The lazy package facades: each lists its public names once, in ``_EXPORTS``."""

BANNER = "# generated from schema/metadata.toml and schema/layout.py by schema/generate.py — do not edit\n"
PRIMITIVES = {"u8", "u64", "i64", "f64", "bool", "str"}
INT_RANGES = {"u8": (0, (1 << 8) - 1), "u64": (0, (1 << 64) - 1), "i64": (-(1 << 63), (1 << 63) - 1)}
"""The schema's integer types → (min, max)."""


# ---------------------------------------------------------------------------------------------
# The schema model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Type:
    """A parsed field type: kind is a primitive, 'map', 'seq', 'tuple', 'array', 'option' or a name."""

    kind: str
    args: tuple = ()

    @property
    def inner(self) -> Type:
        return self.args[0]


def parse_type(text: str) -> Type:
    text = text.replace(" ", "")
    if text.endswith("?"):
        return Type("option", (parse_type(text[:-1]),))
    match = re.fullmatch(r"(map|seq|tuple|array)<(.*)>", text)
    if not match:
        return Type(text)
    kind, body = match.groups()
    if kind == "map":
        key, value = body.split(",", 1)
        assert key == "str", "map keys are always text in burnpack"
        return Type("map", (parse_type(value),))
    if kind == "seq":
        return Type("seq", (parse_type(body),))
    element, count = body.rsplit(",", 1)
    return Type(kind, (parse_type(element), int(count)))


@dataclass
class Field:
    name: str
    type: Type
    absent: str = "required"


@dataclass
class Struct:
    name: str
    doc: str
    fields: list[Field]


@dataclass
class Variant:
    name: str
    value: Type | None = None
    size: int | None = None
    numpy: str | None = None
    kind: str | None = None
    torch: str | None = None
    safetensors: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    """Every other key of the variant (aliases, torch storage class, quant bit widths...)."""


@dataclass
class Enum:
    name: str
    doc: str
    variants: list[Variant] = field(default_factory=list)

    @property
    def unit_only(self) -> bool:
        return all(v.value is None for v in self.variants)


@dataclass
class Schema:
    limits: dict[str, int]
    structs: dict[str, Struct]
    enums: dict[str, Enum]
    safetensors_code_order: tuple[str, ...] = ()


_VARIANT_KEYS = ("name", "value", "size", "numpy", "kind", "torch", "safetensors")


def load_schema(root: Path = ROOT) -> Schema:
    data = tomllib.loads((root / SCHEMA_TOML.relative_to(ROOT)).read_text())
    structs = {
        s["name"]: Struct(
            s["name"],
            s["doc"],
            [Field(f["name"], parse_type(f["type"]), f.get("absent", "required")) for f in s["fields"]],
        )
        for s in data["struct"]
    }
    enums = {
        e["name"]: Enum(
            e["name"],
            e["doc"],
            [
                Variant(
                    v["name"],
                    parse_type(v["value"]) if "value" in v else None,
                    v.get("size"),
                    v.get("numpy"),
                    v.get("kind"),
                    v.get("torch"),
                    v.get("safetensors"),
                    {k: x for k, x in v.items() if k not in _VARIANT_KEYS},
                )
                for v in e["variants"]
            ],
        )
        for e in data["enum"]
    }
    schema = Schema(data["limits"], structs, enums, tuple(data["safetensors"]["code_order"]))
    codes = {v.safetensors for e in enums.values() for v in e.variants if v.safetensors is not None}
    missing = codes - set(schema.safetensors_code_order)
    if missing:
        raise ValueError(f"schema/metadata.toml: safetensors codes {sorted(missing)} are missing from [safetensors] code_order")
    return schema


def load_layout(root: Path = ROOT) -> ModuleType:
    """``schema/layout.py`` of the tree at ``root``."""
    spec = importlib.util.spec_from_file_location("_schema_layout", root / "schema" / "layout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# layout.py
# ---------------------------------------------------------------------------------------------
def header_format(struct: construct.Struct) -> tuple[str, list[str]]:
    """The ``struct`` module format and field names of a construct Struct of fixed-size fields."""
    fmt, names = "", []
    for sub in struct.subcons:
        inner = sub.subcon
        if isinstance(inner, construct.Const):
            inner = inner.subcon
        if not isinstance(inner, construct.FormatField):
            raise TypeError(f"header field {sub.name} is not a fixed-size integer")
        order, code = inner.fmtstr[0], inner.fmtstr[1:]
        if order != "<":
            raise TypeError("burnpack headers are little-endian")
        fmt += code
        names.append(sub.name)
    return "<" + fmt, names


def gen_layout(schema: Schema, layout: ModuleType) -> str:
    fmt, names = header_format(layout.Header)
    lines = [
        BANNER,
        '"""Header format, layout constants and the limits Burn enforces."""',
        "",
        "import struct",
        "",
        f"MAGIC = {layout.MAGIC:#010x}",
        f"MAGIC_BYTES = {layout.MAGIC.to_bytes(4, 'little')!r}",
        f"FORMAT_VERSION = {layout.FORMAT_VERSION}",
        f"HEADER_SIZE = {layout.HEADER_SIZE}",
        f"HEADER_FIELDS = {tuple(names)!r}",
        f"HEADER = struct.Struct({fmt!r})",
        *(f"{name.upper()}_FIELD_MAX = {(1 << 8 * struct.calcsize('<' + code)) - 1}" for name, code in zip(names, fmt[1:])),
        f"TENSOR_ALIGNMENT = {layout.TENSOR_ALIGNMENT}",
        "",
    ]
    for key, value in schema.limits.items():
        lines.append(f"{key.upper()} = {value}")
    lines += [
        "",
        "",
        "def align(offset: int) -> int:",
        '    """Round up to the next multiple of TENSOR_ALIGNMENT."""',
        "    return -(-offset // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT",
        "",
        "",
        "def data_section_start(metadata_size: int) -> int:",
        '    """Absolute offset of the data section for a metadata blob of this size."""',
        "    return align(HEADER_SIZE + metadata_size)",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# metadata.py: the types
# ---------------------------------------------------------------------------------------------
def py_annotation(t: Type, schema: Schema) -> str:
    if t.kind in ("u8", "u64", "i64"):
        return "int"
    if t.kind in ("f64", "bool", "str"):
        return {"f64": "float", "bool": "bool", "str": "str"}[t.kind]
    if t.kind == "map":
        return f"dict[str, {py_annotation(t.inner, schema)}]"
    if t.kind == "seq":
        return f"tuple[{py_annotation(t.inner, schema)}, ...]"
    if t.kind in ("tuple", "array"):
        return f"tuple[{', '.join([py_annotation(t.inner, schema)] * t.args[1])}]"
    if t.kind == "option":
        return f"{py_annotation(t.inner, schema)} | None"
    return t.kind


def default_for(f: Field) -> str | None:
    if f.absent == "omit_if_empty":
        return "{}" if f.type.kind == "map" else "()"
    if f.absent in ("omit_if_none", "null"):
        return "None"
    return None


def gen_types(schema: Schema) -> list[str]:
    """The types: enums, structs, tagged enums and the dtype tables."""
    out: list[str] = []
    for e in schema.enums.values():
        if e.unit_only:
            out += gen_unit_enum(e)
    for s in schema.structs.values():
        out += gen_struct(s, schema)
    for e in schema.enums.values():
        if not e.unit_only:
            out += gen_tagged_enum(e, schema)
    out += gen_dtype_table(schema)
    return out


def gen_unit_enum(e: Enum) -> list[str]:
    lines = ["", "", f"class {e.name}(enum.Enum):", f'    """{e.doc}"""', ""]
    lines += [f"    {v.name} = {v.name!r}" for v in e.variants]
    lines += ["", "    def __repr__(self) -> str:", f'        return f"{e.name}.{{self.name}}"']
    return lines


def gen_struct(s: Struct, schema: Schema) -> list[str]:
    lines = ["", "", f"class {s.name}(NamedTuple):", f'    """{s.doc}"""', ""]
    for f in s.fields:
        default = default_for(f)
        suffix = "" if default is None else f" = {default}"
        note = "  # a shared default: decoders always pass their own" if default == "{}" else ""
        lines.append(f"    {f.name}: {py_annotation(f.type, schema)}{suffix}{note}")
    return lines + serde_methods(s.name)


def serde_methods(name: str) -> list[str]:
    """``to_serde`` / ``from_serde``: Burn's serde data model (JSON-ready), via the codec below."""
    return [
        "",
        "    def to_serde(self) -> Any:",
        '        """Burn\'s serde form of this value, as plain data (what serde_json would write).',
        "",
        "        Returns:",
        "            Dicts, lists, strings and numbers, ready for ``json.dumps``.",
        '        """',
        "        return serde(self)",
        "",
        "    @classmethod",
        f"    def from_serde(cls, data: Any) -> {name}:",
        '        """Parse Burn\'s serde form.',
        "",
        "        Args:",
        "            data: Plain data, as ``to_serde`` gives it (or ``json.loads`` of serde_json's output).",
        "",
        "        Returns:",
        "            The value.",
        "",
        "        Raises:",
        "            ValueError: ``data`` is not a serde form of this type.",
        '        """',
        f"        return from_serde_{name}(data)",
    ]


def gen_tagged_enum(e: Enum, schema: Schema) -> list[str]:
    units = [v.name for v in e.variants if v.value is None]
    newtypes = [v for v in e.variants if v.value is not None]
    floats = [v.name for v in newtypes if v.value.kind == "f64"]
    lines = [
        "",
        "",
        f"class {e.name}:",
        f'    """{e.doc}',
        "",
        f"    Unit variants are constants ({', '.join(f'``{e.name}.{u}``' for u in units) or 'none'}); newtype",
        f"    variants are built by calling them ({', '.join(f'``{e.name}.{v.name}(x)``' for v in newtypes)}).",
        "",
        "    Args:",
        f"        variant: The variant's name, one of ``{e.name}.VARIANTS``.",
        "        value: The newtype variant's value; None for a unit variant.",
        "",
        "    Raises:",
        "        ValueError: The variant is unknown, or takes a value and got none (or the reverse).",
        '    """',
        "",
        '    __slots__ = ("variant", "value")',
        f"    VARIANTS: ClassVar[tuple[str, ...]] = {tuple(v.name for v in e.variants)!r}",
        f"    UNIT_VARIANTS: ClassVar[frozenset[str]] = frozenset({units!r})",
        *(f"    {u}: ClassVar[{e.name}]" for u in units),
        "",
        "    variant: str",
        f"    value: Any  # {payload_annotation(e, schema)}, by variant: use the is_* predicates to tell",
        "",
        "    def __init__(self, variant: str, value: Any = None) -> None:",
        "        if variant not in self.VARIANTS:",
        f'            raise ValueError(f"unknown {e.name} variant {{variant!r}}")',
        "        if (value is None) != (variant in self.UNIT_VARIANTS):",
        f'            raise ValueError(f"{e.name}.{{variant}} takes {{\'no\' if variant in self.UNIT_VARIANTS else \'a\'}} value")',
        '        object.__setattr__(self, "variant", variant)',
        '        object.__setattr__(self, "value", value)',
        "",
        "    def __setattr__(self, name: str, value: Any) -> None:",
        f'        raise AttributeError("{e.name} is immutable")',
        "",
        "    def _key(self) -> tuple:",
    ]
    if floats:
        lines += [
            f"        if self.variant in {tuple(floats)!r}:",
            '            return (self.variant, struct.pack("<d", self.value))',
        ]
    lines += [
        "        return (self.variant, self.value)",
        "",
        "    def __eq__(self, other: object) -> bool:",
        f"        return isinstance(other, {e.name}) and self._key() == other._key()",
        "",
        "    def __hash__(self) -> int:",
        "        return hash(self._key())",
        "",
        "    def __repr__(self) -> str:",
        f'        return f"{e.name}.{{self.variant}}" if self.value is None else f"{e.name}.{{self.variant}}({{self.value!r}})"',
        "",
        "    def __reduce__(self) -> tuple:",
        f"        return ({e.name}, (self.variant, self.value))",
    ]
    lines += serde_methods(e.name)
    lines += gen_predicates(e)
    lines += gen_payload_check(e)
    for v in newtypes:
        lines += [
            "",
            "    @classmethod",
            f"    def {v.name}(cls, value: {py_annotation(v.value, schema)}) -> {e.name}:",
            f'        """The ``{v.name}`` variant.',
            "",
            "        Args:",
            "            value: Its value.",
            "",
            "        Returns:",
            "            The variant.",
            '        """',
            f"        return cls({v.name!r}, value)",
        ]
    lines.append("")
    for u in units:
        lines.append(f"{e.name}.{u} = {e.name}({u!r})")
    return lines


def payload_annotation(e: Enum, schema: Schema) -> str:
    """The type of a tagged enum's ``value``: the union of its payload types (None for units)."""
    kinds = list(dict.fromkeys(py_annotation(v.value, schema) for v in e.variants if v.value is not None))
    if any(v.value is None for v in e.variants):
        kinds.append("None")
    return " | ".join(kinds)


def gen_predicates(e: Enum) -> list[str]:
    """``is_<kind>`` properties when the variants declare kinds, else one ``is_<variant>`` each."""
    groups: dict[str, list[str]] = {}
    for v in e.variants:
        groups.setdefault(v.kind or re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", v.name).lower(), []).append(v.name)
    lines = []
    for kind, names in groups.items():
        test = f"self.variant == {names[0]!r}" if len(names) == 1 else f"self.variant in {tuple(names)!r}"
        lines += [
            "",
            "    @property",
            f"    def is_{kind}(self) -> bool:",
            f'        """True for {", ".join(f"``{n}``" for n in names)}."""',
            f"        return {test}",
        ]
    return lines


def primitive_check(t: Type, x: str) -> str:
    """An expression: the Python value ``x`` is a valid value of the primitive type ``t``."""
    if t.kind in INT_RANGES:
        lo, hi = INT_RANGES[t.kind]
        return f"type({x}) is int and {lo} <= {x} <= {hi}"
    return f"type({x}) is {py_annotation(t, None)}"  # type: ignore[arg-type]


def gen_payload_check(e: Enum) -> list[str]:
    """``payload_fits()`` for enums whose payloads are all primitives (Scalar, QuantStore)."""
    newtypes = [v for v in e.variants if v.value is not None]
    if not newtypes or any(v.value.kind not in PRIMITIVES for v in newtypes):
        return []
    lines = [
        "",
        "    def payload_fits(self) -> bool:",
        '        """Whether the value fits the variant\'s type (e.g. ``Int``: an int in the i64 range).',
        "",
        "        Returns:",
        "            True when it fits.",
        '        """',
    ]
    for v in newtypes:
        lines += [f"        if self.variant == {v.name!r}:", f"            return {primitive_check(v.value, 'self.value')}"]
    return lines + ["        return self.value is None"]


_NUMPY_TYPE_CODE = re.compile(r"[<>|=]?[?bBiufc]\d*")
"""A numpy type code (``<f4``, ``u1``, ``?``); any other numpy name is an ml_dtypes type (``bfloat16``)."""


def gen_dtype_table(schema: Schema) -> list[str]:
    dtype = schema.enums["DType"]
    bool_store = schema.enums["BoolStore"]

    def info(v: Variant) -> str:
        return f"ElementInfo({v.kind!r}, {v.size!r}, {v.numpy!r}, {v.torch!r}, {v.safetensors!r}, {v.facts.get('torch_storage')!r})"

    lines = [
        "",
        "",
        "class ElementInfo(NamedTuple):",
        '    """An element type: its kind, size in bytes, its names in numpy, torch and safetensors and the',
        '    storage class a pickled torch file names (``Float`` for ``torch.FloatStorage``)."""',
        "",
        "    kind: str | None",
        "    size: int | None",
        "    numpy: str | None",
        "    torch: str | None",
        "    safetensors: str | None",
        "    torch_storage: str | None",
        "",
        "",
        "DTYPE_INFO: dict[str, ElementInfo] = {",
        "    # DType variant -> element info (Bool: see BOOL_STORE_INFO; QFloat: bit-packed, no size)",
    ]
    lines += [f"    {v.name!r}: {info(v)}," for v in dtype.variants]
    lines += ["}", "", "BOOL_STORE_INFO: dict[str, ElementInfo] = {", "    # BoolStore variant -> how a Bool tensor stores each element"]
    lines += [f"    {v.name!r}: {info(v)}," for v in bool_store.variants]
    lines += ["}", ""]
    numpy_names = [v.numpy for e in schema.enums.values() for v in e.variants if v.numpy is not None]
    extensions = tuple(dict.fromkeys(n for n in numpy_names if not _NUMPY_TYPE_CODE.fullmatch(n)))
    aliases = {a: v.name for v in dtype.variants for a in v.facts.get("aliases", ())}
    lines += [
        "DTYPE_ALIASES: dict[str, str] = {",
        "    # further spelling (lower case) -> DType variant",
        *(f"    {a!r}: {name!r}," for a, name in aliases.items()),
        "}",
        "",
        f"NUMPY_EXTENSION_TYPES: frozenset[str] = frozenset({extensions!r})",
        '"""The numpy names above that are ml_dtypes types (``ml_dtypes.bfloat16``), not numpy\'s own."""',
        "",
        f"SAFETENSORS_CODE_ORDER: tuple[str, ...] = {schema.safetensors_code_order!r}",
        '"""safetensors\' dtype codes in the order of its ``Dtype`` enum (by increasing alignment)."""',
    ]
    lines += gen_quant_tables(schema)
    lines += gen_debug(schema)
    return lines


def enum_tuple(enum: str, variants: list[Variant]) -> str:
    """A tuple of enum members, as source."""
    members = [f"{enum}.{v.name}" for v in variants]
    return f"({', '.join(members)}{',' if len(members) == 1 else ''})"


def gen_quant_tables(schema: Schema) -> list[str]:
    """The quantized value and scale types' facts (cubecl quant/scheme.rs), keyed by the enum members."""
    values, scales = schema.enums["QuantValue"], schema.enums["ScaleDtype"]

    def value_info(v: Variant) -> str:
        rng = v.facts.get("range")
        return f"QuantValueInfo({v.kind!r}, {v.facts['bits']!r}, {tuple(rng) if rng else None!r}, {v.facts.get('packed_native', 1)!r})"

    def scale_info(v: Variant) -> str:
        grid = None
        if "mantissa_bits" in v.facts:
            exp = v.facts.get("min_normal_exp")
            subnormals = None if exp is None else (2.0**exp, 2.0 ** (exp - v.facts["mantissa_bits"]))
            grid = (1 << (23 - v.facts["mantissa_bits"]), subnormals)
        return f"ScaleDtypeInfo({v.size!r}, {float(v.facts['max'])!r}, {grid!r}, {v.numpy!r})"

    def quantizable_order(v: Variant) -> tuple[int, bool]:
        lo, hi = v.facts["range"]
        return -v.facts["bits"], lo != -hi

    quantizable = sorted((v for v in values.variants if "range" in v.facts), key=quantizable_order)
    return [
        "",
        "",
        "class QuantValueInfo(NamedTuple):",
        '    """A quantized value type: ``int`` or ``minifloat``, ``QuantValue::size_bits``, the integer range',
        "    quantizing clamps to (None for minifloats) and the values per stored element under",
        '    ``QuantStore::PackedNative``."""',
        "",
        "    kind: str",
        "    bits: int",
        "    range: tuple[int, int] | None",
        "    packed_native: int",
        "",
        "",
        "QUANT_VALUE_INFO: dict[QuantValue, QuantValueInfo] = {",
        *(f"    QuantValue.{v.name}: {value_info(v)}," for v in values.variants),
        "}",
        "",
        "",
        "class ScaleDtypeInfo(NamedTuple):",
        '    """A scale type: bytes per stored scale, ``ScaleDtype::max_representable``, the f32 grid',
        "    ``ScaleDtype::round_up`` moves scales onto — (bit step on the f32 pattern, (smallest normal,",
        "    subnormal spacing) or None) — or None when Burn has no rounding for it, and the numpy (or",
        '    ml_dtypes) type its bytes are (None: Burn has no codec for it)."""',
        "",
        "    size: int",
        "    max: float",
        "    grid: tuple[int, tuple[float, float] | None] | None",
        "    numpy: str | None",
        "",
        "",
        "SCALE_DTYPE_INFO: dict[ScaleDtype, ScaleDtypeInfo] = {",
        *(f"    ScaleDtype.{v.name}: {scale_info(v)}," for v in scales.variants),
        "}",
        "",
        f"QUANTIZABLE_VALUES: tuple[QuantValue, ...] = {enum_tuple('QuantValue', quantizable)}",
        '"""The values Burn\'s CPU backends quantize to (those with an integer range), widest first,',
        'symmetric before full range."""',
        f"QUANTIZABLE_SCALES: tuple[ScaleDtype, ...] = {enum_tuple('ScaleDtype', [v for v in scales.variants if 'mantissa_bits' in v.facts])}",
        '"""The scale dtypes Burn rounds scales onto (``ScaleDtype::round_up``), so quantizes with."""',
    ]


def debug_expr(t: Type, x: str, schema: Schema) -> str:
    """Rust's derived ``{:?}`` of the Python value ``x`` of type ``t`` (structs: their repr)."""
    if is_enum(t, schema) and schema.enums[t.kind].unit_only:
        return f"{x}.name"
    if t.kind in INT_RANGES:
        return f"str({x})"
    if t.kind == "bool":
        return f"str({x}).lower()"
    return f"repr({x})"


def gen_debug(schema: Schema) -> list[str]:
    """``debug_<Enum>``: Rust's derived ``{:?}`` of every tagged enum's values (as in Burn's messages)."""
    lines: list[str] = []
    for e in schema.enums.values():
        if e.unit_only:
            continue
        lines += [
            "",
            "",
            f"def debug_{e.name}(value: {e.name}) -> str:",
            f'    """Rust\'s ``{{:?}}`` of a {e.name}: a unit variant\'s name, a newtype variant\'s name and its',
            "    payload in parentheses (float and struct payloads: their Python repr).\"\"\"",
            "    if value.value is None:",
            "        return value.variant",
        ]
        for v in e.variants:
            if v.value is not None:
                lines += [f"    if value.variant == {v.name!r}:", f'        return f"{v.name}({{{debug_expr(v.value, "value.value", schema)}}})"']
        lines.append('    raise AssertionError(value.variant)')
    return lines


# ---------------------------------------------------------------------------------------------
# metadata.py: the codec
# ---------------------------------------------------------------------------------------------
def is_struct(t: Type, schema: Schema) -> bool:
    return t.kind in schema.structs


def is_enum(t: Type, schema: Schema) -> bool:
    return t.kind in schema.enums


def enc_expr(t: Type, x: str, schema: Schema) -> str:
    """Expression encoding the Python value ``x`` of type ``t`` into a cbor2-ready tree."""
    k = t.kind
    if k in ("u8", "u64", "i64", "bool", "str"):
        return x
    if k == "f64":
        return f"ShortestFloat(float_to_bits({x}))"
    if k == "map":
        return f"{{k: {enc_expr(t.inner, f'{x}[k]', schema)} for k in sorted({x})}}"
    if k in ("seq", "tuple", "array"):
        if t.inner.kind in PRIMITIVES - {"f64"}:
            return f"list({x})"
        return f"[{enc_expr(t.inner, 'e', schema)} for e in {x}]"
    if k == "option":
        return f"(None if {x} is None else {enc_expr(t.inner, x, schema)})"
    if is_enum(t, schema) and schema.enums[k].unit_only:
        return f"{x}.value"
    return f"encode_{k}({x})"


def gen_encoders(schema: Schema) -> list[str]:
    lines: list[str] = []
    for s in schema.structs.values():
        lines += ["", "", f"def encode_{s.name}(v: {s.name}) -> dict:", f'    """{s.name} as ciborium writes it: keys in declaration order."""']
        fields = list(s.fields)
        fixed = []
        while fields and fields[0].absent in ("required", "null"):
            f = fields.pop(0)
            fixed.append(f"{f.name!r}: {enc_expr(f.type, f'v.{f.name}', schema)}")
        if not fields:
            lines.append(f"    return {{{', '.join(fixed)}}}")
            continue
        lines.append(f"    out: dict[str, Any] = {{{', '.join(fixed)}}}")
        for f in fields:
            expr = enc_expr(f.type, f"v.{f.name}", schema)
            if f.absent == "omit_if_empty":
                lines += [f"    if v.{f.name}:", f"        out[{f.name!r}] = {expr}"]
            elif f.absent == "omit_if_none":
                inner = enc_expr(f.type.inner, f"v.{f.name}", schema)
                lines += [f"    if v.{f.name} is not None:", f"        out[{f.name!r}] = {inner}"]
            else:
                lines.append(f"    out[{f.name!r}] = {expr}")
        lines.append("    return out")
    for e in schema.enums.values():
        if e.unit_only:
            continue
        lines += ["", "", f"def encode_{e.name}(v: {e.name}) -> Any:", f'    """Unit variants as text, newtype variants as a one-entry map."""']
        lines += [f"    if v.value is None:", "        return v.variant"]
        for var in e.variants:
            if var.value is not None:
                payload = py_annotation(var.value, schema)
                check = f"isinstance(v.value, {payload})" if var.value.kind not in ("u8", "u64", "i64") else "type(v.value) is int"
                lines += [f"    if v.variant == {var.name!r} and {check}:", f"        return {{{var.name!r}: {enc_expr(var.value, 'v.value', schema)}}}"]
        lines.append(f'    raise AssertionError(v.variant)')
    return lines


def fast_check(t: Type, x: str, target: str, schema: Schema, indent: str) -> list[str]:
    """Statements validating cbor2 value ``x`` of type ``t`` and binding the result to ``target``."""
    lines = _fast_check(t, x, target, schema, indent)
    return [line for line in lines if line.strip() != f"{x} = {x}"]


def _fast_check(t: Type, x: str, target: str, schema: Schema, indent: str) -> list[str]:
    k = t.kind
    i = indent
    if k in ("u8", "u64"):
        hi = "0xFF" if k == "u8" else "U64_MAX"
        return [f"{i}if type({x}) is not int or {x} < 0 or {x} > {hi}:", f"{i}    raise Fallback", f"{i}{target} = {x}"]
    if k == "i64":
        return [f"{i}if type({x}) is not int or {x} < I64_MIN or {x} > I64_MAX:", f"{i}    raise Fallback", f"{i}{target} = {x}"]
    if k == "f64":
        return [f"{i}if type({x}) is not float or {x} != {x}:", f"{i}    raise Fallback  # NaN payloads need the exact decoder", f"{i}{target} = {x}"]
    if k == "bool":
        return [f"{i}if type({x}) is not bool:", f"{i}    raise Fallback", f"{i}{target} = {x}"]
    if k == "str":
        return [f"{i}if type({x}) is not str:", f"{i}    raise Fallback", f"{i}{target} = {x}"]
    if k == "map":
        val_lines = fast_check(t.inner, "val", f"{target}_item", schema, i + "    ")
        identity = t.inner.kind == "str"
        lines = [f"{i}if type({x}) is not dict:", f"{i}    raise Fallback"]
        if identity:
            lines += [f"{i}for key, val in {x}.items():", f"{i}    if type(key) is not str or type(val) is not str:", f"{i}        raise Fallback", f"{i}{target} = {x}"]
            return lines
        lines += [f"{i}{target}_out: dict[str, Any] = {{}}", f"{i}for key, val in {x}.items():", f"{i}    if type(key) is not str:", f"{i}        raise Fallback"]
        lines += val_lines
        lines += [f"{i}    {target}_out[key] = {target}_item", f"{i}{target} = {target}_out"]
        return lines
    if k in ("seq", "tuple", "array"):
        lines = [f"{i}if type({x}) is not list:", f"{i}    raise Fallback"]
        if k != "seq":
            lines += [f"{i}if len({x}) != {t.args[1]}:", f"{i}    raise Fallback"]
        elem = fast_check(t.inner, "e", "e", schema, i + "    ")
        lines += [f"{i}for e in {x}:"] + elem
        lines.append(f"{i}{target} = tuple({x})")
        return lines
    if k == "option":
        inner = fast_check(t.inner, x, target, schema, i + "    ")
        return [f"{i}if {x} is None:", f"{i}    {target} = None", f"{i}else:"] + inner
    return [f"{i}{target} = fast_{k}({x})"]


def gen_fast(schema: Schema) -> list[str]:
    lines: list[str] = []
    for e in schema.enums.values():
        lines += ["", "", f"def fast_{e.name}(raw: Any) -> {e.name}:"]
        if e.unit_only:
            lines += [f"    if type(raw) is not str:", "        raise Fallback", f"    return {e.name}[raw]"]
            continue
        units = [v.name for v in e.variants if v.value is None]
        lines += ["    if type(raw) is str:"]
        lines += [f"        return _{e.name}_UNITS[raw]" if units else "        raise Fallback"]
        lines += ["    if type(raw) is not dict or len(raw) != 1:", "        raise Fallback", "    ((name, payload),) = raw.items()"]
        for v in e.variants:
            if v.value is None:
                continue
            lines.append(f"    if name == {v.name!r}:")
            lines += fast_check(v.value, "payload", f"value_{v.name}", schema, "        ")
            lines.append(f"        return {e.name}({v.name!r}, value_{v.name})")
        lines.append("    raise Fallback")
        if units:
            lines.append(f"_{e.name}_UNITS = {{name: getattr({e.name}, name) for name in {tuple(units)!r}}}")
    for s in schema.structs.values():
        names = [f.name for f in s.fields]
        lines += [
            "",
            "",
            f"_{s.name}_FIELDS = frozenset({names!r})",
            "",
            "",
            f"def fast_{s.name}(raw: Any) -> {s.name}:",
            "    if type(raw) is not dict or not raw.keys() <= _" + s.name + "_FIELDS:",
            "        raise Fallback",
        ]
        for f in s.fields:
            var = f"f_{f.name}"
            if f.absent == "required":
                lines.append(f"    {var} = raw[{f.name!r}]")
                lines += fast_check(f.type, var, var, schema, "    ")
            else:
                default = default_for(f)
                check_type = f.type.inner if f.type.kind == "option" else f.type
                # An explicit null reads as None only for Option fields; a defaulted map must be a map.
                absent = "None" if f.type.kind == "option" else "_ABSENT"
                lines.append(f"    {var} = raw.get({f.name!r}, {absent})")
                lines.append(f"    if {var} is {absent}:")
                lines.append(f"        {var} = {default}")
                lines.append("    else:")
                lines += fast_check(check_type, var, var, schema, "        ")
        lines.append(f"    return tuple.__new__({s.name}, ({', '.join('f_' + n for n in names)},))")
    return lines


def exact_reader(t: Type, schema: Schema) -> str:
    """A zero-argument callable (as source) reading a value of type ``t`` from decoder ``d``."""
    k = t.kind
    if k in ("u8", "u64", "i64"):
        return f"d.{k}"
    if k == "f64":
        return "lambda: bits_to_float(d.f64_bits())"
    if k == "bool":
        return "d.boolean"
    if k == "str":
        return "d.string"
    if k == "map":
        value = exact_reader(t.inner, schema)
        if t.inner.kind in schema.structs or t.inner.kind in schema.enums:
            # The bulk of a large metadata item: each entry first tries cbor2 + its fast validator.
            value = f"lambda: _fast_or_exact(d, fast_{t.inner.kind}, exact_{t.inner.kind})"
        return f"lambda: d.map(d.string, lambda key: _in_context(d, key, {value}))"
    if k == "seq":
        return f"lambda: tuple(d.seq({exact_reader(t.inner, schema)}, _byte))"
    if k in ("tuple", "array"):
        n = t.args[1]
        expecting = f"a tuple of size {n}" if k == "tuple" else f"an array of length {n}"
        return f"lambda: d.fixed({n}, {exact_reader(t.inner, schema)}, _byte, {expecting!r})"
    if k == "option":
        return f"lambda: d.option({exact_reader(t.inner, schema)})"
    return f"lambda: exact_{k}(d)"


def gen_exact(schema: Schema) -> list[str]:
    lines: list[str] = []
    for e in schema.enums.values():
        names = tuple(v.name for v in e.variants)
        payloads = ", ".join(f"{v.name!r}: {exact_reader(v.value, schema)}" for v in e.variants if v.value is not None)
        lines += ["", "", f"def exact_{e.name}(d: Decoder) -> {e.name}:"]
        lines.append(f"    name, value = d.enum({names!r}, {{{payloads}}})")
        if e.unit_only:
            lines.append(f"    return {e.name}[name]")
        else:
            lines.append(f"    return {e.name}(name, value)")
    for s in schema.structs.values():
        readers = ", ".join(f"{f.name!r}: {exact_reader(f.type, schema)}" for f in s.fields)
        lines += ["", "", f"def exact_{s.name}(d: Decoder) -> {s.name}:", f"    got = d.struct({{{readers}}})"]
        args = []
        for f in s.fields:
            if f.absent == "required" and f.type.kind != "option":
                lines += [f"    if {f.name!r} not in got:", f'        raise semantic("missing field `{f.name}`")']
                args.append(f"got[{f.name!r}]")
            else:
                args.append(f"got.get({f.name!r}, {default_for(f) or 'None'})")
        lines.append(f"    return {s.name}({', '.join(args)})")
    return lines


def cbor_text(text: str) -> bytes:
    """The canonical CBOR encoding of a short text string (a struct key or a variant name)."""
    data = text.encode()
    assert len(data) < 24
    return bytes([0x60 + len(data)]) + data


def regex_bytes(data: bytes) -> str:
    """A bytes-regex literal matching exactly ``data``."""
    return "".join(f"\\x{b:02x}" for b in data)


_UINT_RE = r"(?:[\x00-\x17]|\x18[\x00-\xff]|\x19[\x00-\xff]{2}|\x1a[\x00-\xff]{4}|\x1b[\x00-\xff]{8})"


def _uint_expr(var: str) -> str:
    return f"({var}[0] if len({var}) == 1 else int.from_bytes({var}[1:], 'big'))"


def scan_value(t: Type, schema: Schema, var: str) -> tuple[str, list[str], str, dict[bytes, str]] | None:
    """(regex, group names, conversion expression, enum table) for a value, or None if not scannable."""
    if t.kind == "u64":
        return f"({_UINT_RE})", [var], _uint_expr(var), {}
    if t.kind == "seq" and t.inner.kind == "u64":
        header = r"(?:[\x80-\x97]|\x98[\x00-\xff]|\x99[\x00-\xff]{2})"
        head = f"{var}_head"
        fast = f"len({head}) == 1 and len({var}) == {head}[0] - 0x80 and max({var}, default=0) < 0x18"
        return f"({header})((?:{_UINT_RE})*?)", [head, var], f"(tuple({var}) if {fast} else uints({head}, {var}))", {}
    if t.kind == "tuple" and t.inner.kind == "u64":
        n = t.args[1]
        names = [f"{var}_{i}" for i in range(n)]
        return regex_bytes(bytes([0x80 + n])) + f"({_UINT_RE})" * n, names, "(" + "".join(f"{_uint_expr(x)}, " for x in names) + ")", {}
    if is_enum(t, schema):
        table: dict[bytes, str] = {}
        for v in schema.enums[t.kind].variants:
            if v.value is None:
                table[cbor_text(v.name)] = f"{t.kind}.{v.name}"
            elif is_enum(v.value, schema) and schema.enums[v.value.kind].unit_only:
                for inner in schema.enums[v.value.kind].variants:
                    table[b"\xa1" + cbor_text(v.name) + cbor_text(inner.name)] = f"{t.kind}.{v.name}({v.value.kind}.{inner.name})"
        alternatives = "|".join(regex_bytes(k) for k in sorted(table, key=len, reverse=True))
        return f"({alternatives})", [var], f"{t.kind}_SCAN[{var}]", table
    return None


def gen_scanner(schema: Schema) -> list[str]:
    """A regex scanner for the tensors map as Burn writes it (the hot part of opening a file).

    Only definite lengths, the struct keys in declaration order and no unknown keys match; the
    rest of the metadata goes through the fast validators. Anything else raises Fallback.
    """
    top = schema.structs["Metadata"]
    first = top.fields[0]
    struct = schema.structs[first.type.inner.kind]
    required = sum(f.absent in ("required", "null") for f in struct.fields)
    parts = [f"([\\x{0xa0 + required:02x}-\\x{0xa0 + len(struct.fields):02x}])"]
    groups, converters, tables, present = ["head"], [], {}, [str(required)]
    for f in struct.fields:
        optional = f.absent == "omit_if_none"
        value_type = f.type.inner if optional else f.type
        scanned = scan_value(value_type, schema, f"v_{f.name}")
        assert scanned is not None, f"{struct.name}.{f.name} is not scannable"
        regex, names, convert, table = scanned
        key = regex_bytes(cbor_text(f.name))
        groups += names
        if optional:
            parts.append(f"(?:{key}{regex})?")
            converters.append(f"(None if {names[0]} is None else {convert})")
            present.append(f"({names[0]} is not None)")
        else:
            parts.append(key + regex)
            converters.append(convert)
        if table:
            tables[value_type.kind] = table
    seqs = [f"v_{f.name}" for f in struct.fields if f.type.kind == "seq"]
    lines = ["", ""]
    for enum_name, table in tables.items():
        entries = ", ".join(f"{k!r}: {v}" for k, v in table.items())
        lines.append(f"{enum_name}_SCAN: dict[bytes, {enum_name}] = {{{entries}}}")
        lines.append(f'"""The CBOR bytes of each {enum_name} the scanner matches → the value."""')
    # what the pattern matches literally: the keys, and the array head of a fixed-size tuple
    literal = {f.name: len(cbor_text(f.name)) + (1 if f.type.kind == "tuple" else 0) for f in struct.fields}
    required_literal = sum(n for name, n in literal.items() if next(f for f in struct.fields if f.name == name).absent != "omit_if_none")
    optional_literal = {f.name: literal[f.name] for f in struct.fields if f.absent == "omit_if_none"}
    lines += [
        f"{struct.name}_RE = re.compile(rb\"{''.join(parts)}\")",
        f'"""One {struct.name} exactly as Burn writes it, from its struct head; the groups are',
        f"{', '.join(g.removeprefix('v_') for g in groups)}.\"\"\"",
        f"{struct.name}_HEAD = {0xa0 + required:#x}",
        f'"""The struct head of a {struct.name} without its optional fields (one more per field present)."""',
        f"{struct.name}_LITERAL_BYTES = {required_literal}",
        f'"""Bytes of a match the groups do not capture: the keys (and tuple heads) of the required fields."""',
        f"{struct.name}_OPTIONAL_LITERAL_BYTES: dict[str, int] = {optional_literal!r}",
        f'"""The same for each optional field, when present."""',
        f"METADATA_FIRST_KEY = {cbor_text(first.name)!r}",
        f'"""The CBOR text of the metadata\'s first key, which Burn writes first."""',
        "",
        "",
        "def scan_Metadata(buf: bytes) -> Metadata:",
        f'    """Decode metadata whose {first.name!r} map is exactly as Burn writes it; else raise Fallback."""',
        "    fields = buf[0] - 0xA0",
        f"    if not 1 <= fields <= {len(top.fields)} or not buf.startswith({cbor_text(first.name)!r}, 1):",
        "        raise Fallback",
        f"    count, pos = map_header(buf, {1 + len(cbor_text(first.name))})",
        "    entries = {}",
        f"    match = {struct.name}_RE.match",
        "    for _ in range(count):",
        "        text_head = buf[pos]  # the name: a definite text string",
        "        if 0x60 <= text_head < 0x78:",
        "            name_end = pos + 1 + text_head - 0x60",
        "            name = buf[pos + 1 : name_end]",
        "        elif 0x78 <= text_head <= 0x7B:",
        "            width = 1 << (text_head - 0x78)",
        "            name_end = pos + 1 + width + int.from_bytes(buf[pos + 1 : pos + 1 + width], 'big')",
        "            name = buf[pos + 1 + width : name_end]",
        "        else:",
        "            raise Fallback",
        "        if name_end > len(buf):",
        "            raise Fallback  # the name (or its length) runs past the end: the exact decoder says how",
        "        m = match(buf, name_end)",
        "        if m is None:",
        "            raise Fallback",
        f"        {', '.join(groups)} = m.groups()",
        f"        if head[0] - 0xA0 != {' + '.join(present)}:",
        "            raise Fallback  # the struct's entry count disagrees with the fields present",
        f"        values = ({', '.join(converters)},)",
    ]
    for seq in seqs:
        index = [f"v_{f.name}" for f in struct.fields].index(seq)
        lines += [f"        if values[{index}] is None:", "            raise Fallback"]
    lines += [
        f"        entries[name.decode()] = tuple.__new__({struct.name}, values)",
        "        pos = m.end()",
        "    rest = fast_loads(bytes([0xA0 + fields - 1]) + buf[pos:])",
        f"    if type(rest) is not dict or {first.name!r} in rest:",
        "        raise Fallback",
        f"    others = fast_Metadata({{{first.name!r}: {{}}, **rest}})",
        f"    return others._replace({first.name}=entries)",
    ]
    return lines


def direct_encode(t: Type, x: str, schema: Schema) -> str:
    """Expression giving the canonical CBOR bytes of ``x`` (a scannable type) without cbor2."""
    if t.kind == "u64":
        return f"uint_bytes({x})"
    if t.kind == "seq" and t.inner.kind == "u64":
        return f"uint_array({x})"
    if t.kind == "tuple" and t.inner.kind == "u64":
        n = t.args[1]
        return f"{bytes([0x80 + n])!r} + " + " + ".join(f"uint_bytes({x}[{i}])" for i in range(n))
    if is_enum(t, schema):
        unit = f"_{t.kind}_UNIT_BYTES[{x}.variant]" if not schema.enums[t.kind].unit_only else None
        general = f"(_{t.kind}_BYTES.get({x}) or encode(encode_{t.kind}({x})))"
        return f"({unit} if {x}.value is None else {general})" if unit else general
    raise AssertionError(f"{t} has no direct encoding")


def gen_direct_encoder(schema: Schema) -> list[str]:
    """Canonical bytes of the metadata with the tensors map encoded directly (the hot part of saving).

    The mirror image of the scanner: byte-for-byte what ``encode(encode_Metadata(v))`` gives.
    """
    top = schema.structs["Metadata"]
    first = top.fields[0]
    struct = schema.structs[first.type.inner.kind]
    required = sum(f.absent in ("required", "null") for f in struct.fields)
    optional = [f for f in struct.fields if f.absent == "omit_if_none"]
    lines = ["", ""]
    for f in struct.fields:
        if is_enum(f.type, schema):
            lines.append(f"_{f.type.kind}_BYTES = {{v: b for b, v in {f.type.kind}_SCAN.items()}}")
            if not schema.enums[f.type.kind].unit_only:
                lines.append(f"_{f.type.kind}_UNIT_BYTES = {{v.variant: b for v, b in _{f.type.kind}_BYTES.items() if v.value is None}}")
    # The leading required fields that are not numbers (dtype, shape) are shared by every tensor of
    # one kind: with the struct head and the next key they form the entry's "layout", encoded once.
    split = next(i for i, f in enumerate(struct.fields) if f.absent != "required" or f.type.kind in ("u64", "tuple"))
    shared, own = struct.fields[:split], struct.fields[split:]
    assert own and all(f.absent in ("required", "omit_if_none") for f in own) and not any(f in shared for f in optional)
    count = f"{0xa0 + required:#x}" + "".join(f" + {f.name}_present" for f in optional)
    layout = [f"byte_string[{count}]", *(f"{cbor_text(f.name)!r} + {direct_encode(f.type, f.name, schema)}" for f in shared), repr(cbor_text(own[0].name))]
    pieces = [direct_encode(own[0].type, own[0].name, schema)]
    for f in own[1:]:
        key = cbor_text(f.name)
        if f.absent == "omit_if_none":
            pieces.append(f"(b'' if {f.name} is None else {key!r} + {direct_encode(f.type.inner, f.name, schema)})")
        else:
            pieces.append(f"{key!r} + {direct_encode(f.type, f.name, schema)}")

    def typed(fields: list[Field]) -> str:
        return ", ".join(f"{f.name}: {py_annotation(f.type, schema)}" for f in fields)

    rest_params = ", ".join(f"{f.name}: {py_annotation(f.type, schema)}" for f in top.fields[1:])
    rest_args = ", ".join(f.name for f in top.fields[1:])
    lines += [
        "",
        "",
        f"def {struct.name}_layout({typed(shared)}, {', '.join(f'{f.name}_present: bool' for f in optional)}) -> bytes:",
        f'    """A {first.name!r} entry from its struct head to the key of {own[0].name!r}: the bytes every',
        f'    {struct.name} of one {"/".join(f.name for f in shared)} shares, which a writer encodes once per kind."""',
        f"    return {' + '.join(layout)}",
        "",
        "",
        f"def encode_{struct.name}_entry_with(name: str, layout: bytes, {typed(own)}) -> bytes:",
        f'    """One entry of the {first.name!r} map from its name, its ``{struct.name}_layout`` and the rest."""',
        f"    return b''.join((text_bytes(name), layout, {', '.join(pieces)}))",
        "",
        "",
        f"def encode_{struct.name}_entry(name: str, {typed(struct.fields)}) -> bytes:",
        f'    """One entry of the {first.name!r} map (name and {struct.name}) exactly as ciborium writes it."""',
        f"    layout = {struct.name}_layout({', '.join(f.name for f in shared)}, {', '.join(f'{f.name} is not None' for f in optional)})",
        f"    return encode_{struct.name}_entry_with(name, layout, {', '.join(f.name for f in own)})",
        "",
        "",
        f"def encode_Metadata_entries(entries: dict[str, bytes], {rest_params}) -> bytes:",
        f'    """The metadata from pre-encoded {first.name!r} entries (name → ``encode_{struct.name}_entry``)."""',
        f"    return encode_Metadata_map(len(entries), b''.join([entries[name] for name in sorted(entries)]), {rest_args})",
        "",
        "",
        f"def encode_Metadata_map(count: int, entries: bytes, {rest_params}) -> bytes:",
        f'    """The metadata from its {first.name!r} map\'s ``count`` entries, already encoded and in name order."""',
        f"    rest = encode_Metadata(Metadata({{}}, {rest_args}))",
        f"    del rest[{first.name!r}]",
        f"    return b''.join((bytes([0xA1 + len(rest)]), {cbor_text(first.name)!r}, map_head(count), entries, encode(rest)[1:]))",
        "",
        "",
        "def encode_Metadata_bytes(metadata: Metadata) -> bytes:",
        '    """``encode(encode_Metadata(metadata))``, with the tensors map written directly."""',
        f"    entries = {{name: encode_{struct.name}_entry(name, *v) for name, v in metadata.{first.name}.items()}}",
        f"    return encode_Metadata_entries(entries, {', '.join(f'metadata.{f.name}' for f in top.fields[1:])})",
    ]
    return lines


def gen_serde(schema: Schema) -> list[str]:
    """Burn's serde data model as plain Python data, both ways, for every struct and tagged enum."""
    kinds = [*schema.structs, *(e.name for e in schema.enums.values() if not e.unit_only)]
    lines = [
        "",
        "",
        f"_ENCODERS: dict[type, Callable[[Any], Any]] = {{{', '.join(f'{k}: encode_{k}' for k in kinds)}}}",
        "",
        "",
        "def _plain(tree: Any) -> Any:",
        "    if type(tree) is dict:",
        "        return {k: _plain(v) for k, v in tree.items()}",
        "    if type(tree) is list:",
        "        return [_plain(v) for v in tree]",
        "    if type(tree) is ShortestFloat:",
        "        return bits_to_float(tree.bits)",
        "    return tree",
        "",
        "",
        "def serde(value: Any) -> Any:",
        '    """Burn\'s serde form of a metadata value, as plain data."""',
        "    return _plain(_ENCODERS[type(value)](value))",
        "",
        "",
        "def _has_nan(data: Any) -> bool:",
        "    if type(data) is dict:",
        "        return any(_has_nan(v) for v in data.values())",
        "    if type(data) in (list, tuple):",
        "        return any(_has_nan(v) for v in data)",
        "    return type(data) is float and data != data",
        "",
        "",
        "def _tree(data: Any) -> Any:",
        '    """Plain data as an encoder tree: floats keep their exact bits (NaN payloads included)."""',
        "    if type(data) is dict:",
        "        return {k: _tree(v) for k, v in data.items()}",
        "    if type(data) in (list, tuple):",
        "        return [_tree(v) for v in data]",
        "    if type(data) is float:",
        "        return ShortestFloat(float_to_bits(data))",
        "    return data",
    ]
    for k in kinds:
        lines += [
            "",
            "",
            f"def from_serde_{k}(data: Any) -> {k}:",
            "    try:",
            f"        return fast_{k}(data)",
            "    except Exception:",
            "        if not _has_nan(data):",
            f'            raise ValueError(f"not Burn\'s serde form of {k}: {{data!r}}") from None',
            "    try:  # the fast validators leave NaN floats (and their payload bits) to the exact decoder",
            f"        return exact_{k}(Decoder(encode(_tree(data)), depth=MAX_CBOR_DEPTH, scratch=CBOR_SCRATCH_SIZE))",
            "    except Exception:",
            f'        raise ValueError(f"not Burn\'s serde form of {k}: {{data!r}}") from None',
        ]
    return lines


def gen_metadata(schema: Schema) -> str:
    """The metadata module: the types, then their codec (which their serde methods call)."""
    out = [
        BANNER,
        '"""The burnpack metadata types, as declared in schema/metadata.toml, and their codec: per type an',
        "encoder, a fast validator, an exact (ciborium-equivalent) decoder and Burn's serde form both ways.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import enum",
        "import re",
        "import struct",
        "from collections.abc import Callable",
        "from typing import Any, ClassVar, NamedTuple",
        "",
        "from .._cbor import (",
        "    I64_MAX,",
        "    I64_MIN,",
        "    encode,",
        "    map_head,",
        "    text_bytes,",
        "    byte_string,",
        "    uint_array,",
        "    uint_bytes,",
        "    U64_MAX,",
        "    Decoder,",
        "    Fallback,",
        "    ShortestFloat,",
        "    bits_to_float,",
        "    fast_loads,",
        "    float_to_bits,",
        "    map_header,",
        "    semantic,",
        "    uints,",
        ")",
        "from .layout import CBOR_SCRATCH_SIZE, MAX_CBOR_DEPTH",
    ]
    out += gen_types(schema)
    out += [
        "",
        "",
        "# " + "-" * 95,
        "# The codec",
        "# " + "-" * 95,
        "_ABSENT = object()",
        "",
        "",
        "def _byte(b: int) -> int:",
        "    return b",
        "",
        "",
        "def _in_context(d: Decoder, key: str, read: Callable[[], Any]) -> Any:",
        "    d.context = key",
        "    return read()",
        "",
        "",
        "def _fast_or_exact(d: Decoder, fast: Callable[[Any], Any], exact: Callable[[Decoder], Any]) -> Any:",
        '    """One map value: cbor2 + the fast validator when that reads it as Burn does, else the exact path."""',
        "    value = d.fast_item(fast)",
        "    return exact(d) if value is None else value",
    ]
    out += gen_encoders(schema)
    out += gen_fast(schema)
    out += gen_exact(schema)
    out += gen_scanner(schema)
    out += gen_direct_encoder(schema)
    out += gen_serde(schema)
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# burnpack.cddl
# ---------------------------------------------------------------------------------------------
def cddl_name(name: str) -> str:
    if name == "Metadata":
        return "burnpack-metadata"
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "-", name).lower().replace("d-type", "dtype")


def cddl_type(t: Type, schema: Schema) -> str:
    k = t.kind
    if k == "u8":
        return "uint .le 255"
    if k == "u64":
        return "uint64"
    if k == "i64":
        return "int64"
    if k == "f64":
        return "float"
    if k == "bool":
        return "bool"
    if k == "str":
        return "tstr"
    if k == "map":
        return f"{{ * tstr => {cddl_type(t.inner, schema)} }}"
    if k == "seq":
        return f"[ * {cddl_type(t.inner, schema)} ]"
    if k in ("tuple", "array"):
        return f"[ {t.args[1]}*{t.args[1]} ({cddl_type(t.inner, schema)}) ]"
    if k == "option":
        return f"{cddl_type(t.inner, schema)} / null"
    return cddl_name(k)


def gen_cddl(schema: Schema) -> str:
    lines = [
        "; generated from schema/metadata.toml by schema/generate.py — do not edit",
        "; The burnpack metadata item (RFC 8610 CDDL). Struct keys are written in the order shown;",
        "; map<str, _> keys are sorted byte-wise; absent optional keys are omitted.",
        "",
    ]
    for s in schema.structs.values():
        lines.append(f"{cddl_name(s.name)} = {{")
        for f in s.fields:
            opt = "? " if f.absent in ("omit_if_empty", "omit_if_none") else ""
            t = f.type.inner if f.absent == "omit_if_none" else f.type
            lines.append(f"  {opt}{f.name}: {cddl_type(t, schema)},")
        lines += ["}", ""]
    for e in schema.enums.values():
        choices = []
        for v in e.variants:
            if v.value is None:
                choices.append(f'"{v.name}"')
            else:
                choices.append(f'{{ "{v.name}" => {cddl_type(v.value, schema)} }}')
        lines.append(f"{cddl_name(e.name)} = " + " /\n    ".join(choices))
        lines.append("")
    lines += ["uint64 = 0..18446744073709551615", "int64 = (uint .le 9223372036854775807) / (nint .ge -9223372036854775808)", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The facades' stubs
# ---------------------------------------------------------------------------------------------
def gen_facade_stub(facade: Path, relative: str) -> str:
    """The ``.pyi`` of a lazy facade: its ``_EXPORTS`` table as explicit re-exports (``X as X``,
    which strict type checkers take as public), ``__all__``, and ``__version__`` where it has one."""
    tree = ast.parse(facade.read_text(encoding="utf-8"))
    exports: dict[str, tuple[str, ...]] | None = None
    version = False
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["_EXPORTS"]:
            exports = ast.literal_eval(node.value)
        version = version or (isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__version__"])
    if exports is None:
        raise ValueError(f"{relative}: no _EXPORTS table")
    lines = [
        f"# generated from the _EXPORTS table of {relative} by schema/generate.py — do not edit",
        f'"""The types of the names {relative} imports on first use."""',
        "",
    ]
    for module, names in exports.items():
        lines.append(f"from {module} import {', '.join(f'{name} as {name}' for name in names)}")
    lines.append("")
    if version:
        lines.append("__version__: str")
    everything = sorted(name for names in exports.values() for name in names)
    lines.append(f"__all__ = {everything!r}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
def outputs(root: Path = ROOT) -> dict[Path, str]:
    """Every generated file of the tree at ``root`` (this checkout by default) → its text."""
    schema = load_schema(root)
    generated = root / GENERATED.relative_to(ROOT)
    return {
        generated / "__init__.py": BANNER + '"""Code generated from schema/ — see schema/generate.py."""\n',
        generated / "layout.py": gen_layout(schema, load_layout(root)),
        generated / "metadata.py": gen_metadata(schema),
        root / CDDL.relative_to(ROOT): gen_cddl(schema),
        **{(root / facade).with_suffix(".pyi"): gen_facade_stub(root / facade, facade) for facade in FACADES},
    }


def stale_files(root: Path = ROOT) -> list[Path]:
    """Generated files whose checked-in text differs from what the schema generates."""
    return [path for path, text in outputs(root).items() if not path.exists() or path.read_text() != text]


def write(root: Path = ROOT) -> list[Path]:
    """Regenerate the tree at ``root``; returns the files whose text changed."""
    changed = []
    for path, text in outputs(root).items():
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if any generated file is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to generate in (default: this one)")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.root)
        for path in stale:
            print(f"stale: {path.relative_to(args.root)}", file=sys.stderr)
        return 1 if stale else 0
    write(args.root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
