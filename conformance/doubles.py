"""Deliberately broken readers and writers: each has one bug real implementations have had.

They are test doubles for the suite itself: every one of them must be caught by at least one
vector (``tests/conformance/test_doubles.py``), which shows the corpus can see that kind of bug.
Each reader is ``fn(path, level) -> dump dict`` and each writer ``fn(spec) -> bytes``, the shapes
of the in-process API; ``python -m conformance.doubles reader NAME PATH [LEVEL]`` and
``python -m conformance.doubles writer NAME SPEC OUT`` run them as external commands.

``COMMANDS`` are reader *processes* that break the protocol rather than the format (swapped exit
statuses, output the schema refuses, a debug line on stdout, a crash whose error is far up its
stderr); ``python -m conformance.doubles command NAME PATH [LEVEL]`` runs one, and
``tests/conformance/test_protocol.py`` shows the runner catches each, naming the rule.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import cbor2

from . import cbor, rules
from .model import (
    HEADER_SIZE,
    Content,
    Desc,
    PackSpec,
    align,
    assemble,
    data_section_start,
    element_size,
    numel,
    scalar,
)
from .reference import decode_content
from .reference import dump as reference_dump

Reader = Callable[[str, str], dict]
Writer = Callable[[dict], bytes]
Process = Callable[[str, str], tuple[int, str, str]]  # (path, level) -> (exit status, stdout, stderr)
READERS: dict[str, tuple[Reader, str]] = {}
WRITERS: dict[str, tuple[Writer, str]] = {}
COMMANDS: dict[str, tuple[Process, str]] = {}
F = TypeVar("F", Reader, Writer, Process)


def _registrar(table: dict[str, tuple[F, str]]) -> Callable[[str], Callable[[F], F]]:
    """A decorator ``@kind("what it gets wrong")`` adding the function to ``table`` by its name."""

    def describe(description: str) -> Callable[[F], F]:
        def register(fn: F) -> F:
            table[fn.__name__] = (fn, description)
            return fn

        return register

    return describe


_reader = _registrar(READERS)
_writer = _registrar(WRITERS)
_command = _registrar(COMMANDS)


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _error(variant: str, stage: str, message: str) -> dict:
    return {"ok": False, "error": {"variant": variant, "stage": stage, "message": message}}


def _by_rules(data: bytes, level: str, decode: Callable[[bytes], Content]) -> dict:
    """What the expectation rules say a reader with this CBOR decoder reports."""
    exp = rules.expect(data, decode)
    e = exp.level(level)
    if e.outcome == rules.ACCEPT:
        return exp.dump
    return _error(e.errors[0], "open" if e.outcome == rules.REJECT_OPEN else "tensor_access", e.why)


def _rehash(dump: dict, data: bytes, start: int, offsets: dict[str, tuple[int, int]] | None = None) -> dict:
    """The dump with tensor bytes taken from another place (another D, or other offsets)."""
    for t in dump["tensors"]:
        s, e = offsets[t["name"]] if offsets else t["data_offsets"]
        t["sha256"] = hashlib.sha256(data[start + s : start + e]).hexdigest()
        if offsets:
            t["data_offsets"] = [s, e]
    return dump


# ==================================================================================================
# readers
# ==================================================================================================
@_reader("reads the magic as a big-endian u32 (expects the bytes 'BURN')")
def magic_big_endian(path: str, level: str) -> dict:
    data = _read(path)
    if len(data) >= 4 and data[:4] != b"BURN":
        return _error("InvalidMagicNumber", "open", "magic is not 0x4255524E (read big-endian)")
    return reference_dump(b"NRUB" + data[4:] if len(data) >= 4 else data, level)


@_reader("takes the data order from the sorted names instead of data_offsets")
def data_order_from_sorted_names(path: str, level: str) -> dict:
    data = _read(path)
    out = reference_dump(data, level)
    if not out["ok"]:
        return out
    offsets, position = {}, 0
    for t in out["tensors"]:  # already in name order
        start = align(position)
        offsets[t["name"]] = (start, start + t["byte_len"])
        position = start + t["byte_len"]
    return _rehash(out, data, out["data_section_start"], offsets)


@_reader("ignores the 256-byte alignment: the data section starts right after the metadata")
def alignment_ignored(path: str, level: str) -> dict:
    data = _read(path)
    out = reference_dump(data, level)
    if out["ok"]:
        start = HEADER_SIZE + out["header"]["metadata_size"]
        out["data_section_start"] = start
        _rehash(out, data, start)
    return out


@_reader("skips the open-time truncation check (fails only when the tensor is read)")
def truncation_unchecked(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if not out["ok"] and "truncated" in out["error"]["message"]:
        out["error"]["stage"] = "tensor_access"
    return out


@_reader("checks truncation against the aligned data start (D + max end) instead of 10 + M + max end")
def truncation_overchecked(path: str, level: str) -> dict:
    data = _read(path)
    out = reference_dump(data, level)
    if out["ok"] or out["error"]["stage"] == "tensor_access":
        content = _try_decode(data)
        if content is not None and content.tensors:
            m = int.from_bytes(data[6:10], "little")
            if len(data) < data_section_start(m) + max(d.data_offsets[1] for d in content.tensors.values()):
                return _error("ValidationError", "open", "File truncated (checked against D)")
    return out


def _try_decode(data: bytes) -> Content | None:
    try:
        m = int.from_bytes(data[6:10], "little")
        return decode_content(data[HEADER_SIZE : HEADER_SIZE + m])
    except Exception:  # noqa: BLE001
        return None


_KNOWN = {
    "top": {"tensors", "metadata", "scalars"},
    "descriptor": {"dtype", "shape", "data_offsets", "param_id"},
    "scheme": {"value", "store", "mode", "tensor", "block"},
}


@_reader("rejects unknown keys (serde deny_unknown_fields)")
def unknown_keys_rejected(path: str, level: str) -> dict:
    data = _read(path)
    out = reference_dump(data, level)
    if not out["ok"] or len(data) < HEADER_SIZE:
        return out
    try:
        tree = cbor2.loads(data[HEADER_SIZE : HEADER_SIZE + out["header"]["metadata_size"]])
    except Exception:  # noqa: BLE001
        return out
    unknown = set(tree) - _KNOWN["top"] if isinstance(tree, dict) else set()
    for d in (tree.get("tensors") or {}).values() if isinstance(tree, dict) else ():
        if isinstance(d, dict):
            unknown |= set(d) - _KNOWN["descriptor"]
            dtype = d.get("dtype")
            if isinstance(dtype, dict) and isinstance(dtype.get("QFloat"), dict):
                unknown |= set(dtype["QFloat"]) - _KNOWN["scheme"]
    if unknown:
        return _error("MetadataDeserializationError", "open", f"unknown field {sorted(map(str, unknown))[0]}")
    return out


@_reader("reports every NaN scalar as the canonical NaN (sign and payload dropped)")
def nan_sign_dropped(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if out["ok"]:
        for s in out["scalars"].values():
            if s.get("value") == "nan":
                s["f64_bits"] = "0x7ff8000000000000"
    return out


@_reader("narrows Float scalars to f32")
def float_scalars_as_f32(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if out["ok"]:
        for name, s in out["scalars"].items():
            if s["type"] == "Float" and s["value"] not in ("nan", "inf", "-inf"):
                out["scalars"][name] = scalar("Float", struct.unpack("<f", struct.pack("<f", s["value"]))[0])
    return out


@_reader("rejects version 0 (only 1 is accepted)")
def version_must_be_1(path: str, level: str) -> dict:
    data = _read(path)
    if len(data) >= 10 and data[:4] == b"NRUB" and data[4:6] == b"\x00\x00":
        return _error("InvalidVersion", "open", "version 0")
    return reference_dump(data, level)


@_reader("rejects bytes after the last tensor")
def trailing_bytes_rejected(path: str, level: str) -> dict:
    data = _read(path)
    out = reference_dump(data, level)
    if out["ok"] and out["tensors"]:
        end = out["data_section_start"] + max(t["data_offsets"][1] for t in out["tensors"])
        if len(data) > end:
            return _error("ValidationError", "open", "trailing bytes")
    return out


@_reader("decodes the metadata with plain cbor2.loads (tags decoded semantically, no recursion limit)")
def cbor2_decoder(path: str, level: str) -> dict:
    def decode(blob: bytes) -> Content:
        try:
            tree = cbor2.loads(blob)
            return _content_from_tree(tree)
        except Exception as exc:  # noqa: BLE001
            raise rules.CborRejected(str(exc)) from None

    return _by_rules(_read(path), level, decode)


def _text_decoder(convert: Callable[[str], str]) -> Callable[[bytes], Content]:
    """A CBOR decoder whose UTF-8 decoding changes every text it decodes (keys and values)."""

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return convert(v)
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    def decode(blob: bytes) -> Content:
        try:
            return _content_from_tree(walk(cbor2.loads(blob)))
        except Exception as exc:  # noqa: BLE001
            raise rules.CborRejected(str(exc)) from None

    return decode


@_reader("decodes UTF-8 dropping a leading U+FEFF, as JavaScript's TextDecoder does by default")
def bom_stripped(path: str, level: str) -> dict:
    return _by_rules(_read(path), level, _text_decoder(lambda s: s.removeprefix("\ufeff")))


@_reader("normalises every decoded text to NFC")
def nfc_normalised(path: str, level: str) -> dict:
    return _by_rules(_read(path), level, _text_decoder(lambda s: unicodedata.normalize("NFC", s)))


def _content_from_tree(tree: Any) -> Content:
    """A naive mapping of a decoded CBOR tree to content (what a quick implementation does)."""
    if not isinstance(tree, dict) or not isinstance(tree.get("tensors"), dict):
        raise ValueError("not a burnpack metadata map")
    content = Content()
    for name, d in tree["tensors"].items():
        if not isinstance(name, str) or not isinstance(d, dict):
            raise ValueError("bad descriptor")
        s, e = d["data_offsets"][:2]
        shape = list(d["shape"])
        if not all(isinstance(x, int) and x >= 0 for x in shape + [s, e]):
            raise ValueError("bad integers")
        dtype = d["dtype"]
        content.tensors[name] = Desc(dtype, shape, (s, e), d.get("param_id"))
    content.metadata = dict(tree.get("metadata") or {})
    for name, s in (tree.get("scalars") or {}).items():
        ((kind, value),) = s.items()
        content.scalars[name] = scalar(kind, value) if kind != "Float" else scalar("Float", float(value))
    return content


@_reader("reads param_id as a signed i64 (ids > 2^63 come out negative)")
def param_id_signed(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if out["ok"]:
        for t in out["tensors"]:
            if t["param_id"] is not None and t["param_id"] >= 1 << 63:
                t["param_id"] -= 1 << 64
    return out


@_reader("lists tensors in UTF-16 code unit order (JavaScript's default sort)")
def names_sorted_utf16(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if out["ok"]:
        out["tensors"].sort(key=lambda t: t["name"].encode("utf-16-be"))
    return out


@_reader("checks byte length against shape × element size (Burn's reader does not)")
def length_checked(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if out["ok"]:
        for t in out["tensors"]:
            size = element_size(t["dtype"])
            if size is not None and t["byte_len"] != numel(t["shape"]) * size:
                return _error("ValidationError", "tensor_access", f"tensor {t['name']!r}: length does not match its shape")
    return out


@_reader("recursion limit one level too small (127 instead of 128)")
def recursion_limit_127(path: str, level: str) -> dict:
    data = _read(path)
    out = reference_dump(data, level)
    if out["ok"] and _depth(data[HEADER_SIZE : HEADER_SIZE + out["header"]["metadata_size"]]) >= 128:
        return _error("MetadataDeserializationError", "open", "RecursionLimitExceeded")
    return out


def _depth(blob: bytes) -> int:
    try:
        tree = cbor2.loads(blob)
    except Exception:  # noqa: BLE001
        return 0

    def depth(v: Any) -> int:
        if isinstance(v, dict):
            return 1 + max((max(depth(k), depth(x)) for k, x in v.items()), default=0)
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        return 0

    return depth(tree)


@_reader("accepts everything it can parse at the strict level too (no strict checks)")
def strict_is_compatible(path: str, level: str) -> dict:
    return reference_dump(_read(path), "compatible")


@_reader("crashes (an uncaught exception) on files with empty tensors")
def crashes_on_empty_tensors(path: str, level: str) -> dict:
    out = reference_dump(_read(path), level)
    if out["ok"] and any(t["byte_len"] == 0 for t in out["tensors"]):
        raise ZeroDivisionError("bytes per element of an empty tensor")
    return out


# ==================================================================================================
# writers
# ==================================================================================================
class Refused(Exception):
    """A writer double's refusal (the kind Burn's writer uses)."""

    variant = "ValidationError"


def _spec(spec: dict, *, duplicates: bool = True) -> PackSpec:
    pack = PackSpec.from_json(spec)
    why = pack.refusal(duplicates=duplicates)
    if why:
        raise Refused(why)
    return pack


def _build(pack: PackSpec, *, order: list[int] | None = None, aligned: bool = True,
           tree_fn: Callable[[dict], Any] | None = None, encode: Callable[[Any], bytes] = cbor.enc) -> bytes:
    """Build a file like the model's writer, with hooks for each bug."""
    content = Content(metadata=dict(pack.metadata), scalars=dict(pack.scalars))
    order = order if order is not None else list(range(len(pack.tensors)))
    placed, offset = [], 0
    for i in order:
        t = pack.tensors[i]
        start = align(offset) if aligned else offset
        content.tensors[t.name] = Desc(t.dtype, list(t.shape), (start, start + len(t.data)), t.param_id)
        placed.append((start, t.data))
        offset = start + len(t.data)
    tree = content.cbor_tree()
    if tree_fn is not None:
        tree = tree_fn(tree) or tree
    blob = encode(tree)
    return assemble(blob, placed, data_start=None if aligned else HEADER_SIZE + len(blob))


@_writer("lays tensor data out in sorted-name order instead of write order")
def sorted_data_order(spec: dict) -> bytes:
    pack = _spec(spec)
    return _build(pack, order=sorted(range(len(pack.tensors)), key=lambda i: pack.tensors[i].name))


@_writer("writes no alignment padding (the pre-2025-12-02 layout)")
def no_alignment(spec: dict) -> bytes:
    return _build(_spec(spec), aligned=False)


def _plain(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _plain(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_plain(v) for v in tree]
    if isinstance(tree, cbor.F64Bits):
        return struct.unpack("<d", tree.bits.to_bytes(8, "little"))[0]
    return tree


@_writer("encodes the metadata with cbor2.dumps(canonical=True): shortest floats but length-first key order")
def cbor2_canonical(spec: dict) -> bytes:
    return _build(_spec(spec), encode=lambda tree: cbor2.dumps(_plain(tree), canonical=True))


@_writer("encodes the metadata with cbor2.dumps() defaults: every float as f64")
def cbor2_default_floats(spec: dict) -> bytes:
    return _build(_spec(spec), encode=lambda tree: cbor2.dumps(_plain(tree)))


@_writer("writes every NaN scalar as the canonical NaN (f9 7e00)")
def writer_nan_sign_dropped(spec: dict) -> bytes:
    pack = _spec(spec)
    for name, s in pack.scalars.items():
        if s["type"] == "Float" and s["value"] == "nan":
            pack.scalars[name] = scalar("Float", ("bits", 0x7FF8000000000000))
    return _build(pack)


@_writer("writes the magic big-endian ('BURN')")
def writer_magic_big_endian(spec: dict) -> bytes:
    return b"BURN" + _build(_spec(spec))[4:]


@_writer("writes param_id: null for tensors without an id")
def param_id_null(spec: dict) -> bytes:
    def fn(tree: dict) -> None:
        for d in tree["tensors"].values():
            d.setdefault("param_id", None)

    return _build(_spec(spec), tree_fn=fn)


@_writer("always writes 'metadata' and 'scalars', even when empty")
def empty_maps_written(spec: dict) -> bytes:
    def fn(tree: dict) -> None:
        tree.setdefault("metadata", {})
        tree.setdefault("scalars", {})

    return _build(_spec(spec), tree_fn=fn)


@_writer("sorts the descriptor's keys (data_offsets, dtype, param_id, shape)")
def struct_keys_sorted(spec: dict) -> bytes:
    def fn(tree: dict) -> None:
        for name, d in tree["tensors"].items():
            tree["tensors"][name] = dict(sorted(d.items()))

    return _build(_spec(spec), tree_fn=fn)


@_writer("omits QuantScheme.tensor / .block when None instead of writing null")
def qfloat_nulls_omitted(spec: dict) -> bytes:
    def fn(tree: dict) -> None:
        for d in tree["tensors"].values():
            if isinstance(d["dtype"], dict) and "QFloat" in d["dtype"]:
                d["dtype"] = {"QFloat": {k: v for k, v in d["dtype"]["QFloat"].items() if v is not None}}

    return _build(_spec(spec), tree_fn=fn)


@_writer("does not pad up to an empty last tensor's aligned start (the file ends at the previous end)")
def no_padding_for_empty_last(spec: dict) -> bytes:
    data = _build(_spec(spec))
    pack = PackSpec.from_json(spec)
    if pack.tensors and not pack.tensors[-1].data:
        content, starts = pack.plan()
        m = int.from_bytes(data[6:10], "little")
        end = max((s + len(t.data) for s, t in zip(starts, pack.tensors) if t.data), default=0)
        return data[: data_section_start(m) + end]
    return data


@_writer("pads the file to a multiple of 256 after the last tensor")
def padding_after_last(spec: dict) -> bytes:
    data = _build(_spec(spec))
    return data + bytes(align(len(data)) - len(data))


@_writer("accepts duplicate tensor names (the last one wins)")
def duplicates_allowed(spec: dict) -> bytes:
    pack = _spec(spec, duplicates=False)
    seen: dict[str, int] = {}
    for i, t in enumerate(pack.tensors):
        seen[t.name] = i
    pack.tensors = [t for i, t in enumerate(pack.tensors) if seen[t.name] == i]
    return _build(pack)


@_writer("does not check byte lengths against shape × element size")
def length_unchecked(spec: dict) -> bytes:
    return _build(PackSpec.from_json(spec))


@_writer("sorts metadata keys by UTF-16 code units (JavaScript's default sort)")
def keys_sorted_utf16(spec: dict) -> bytes:
    def fn(tree: dict) -> dict:
        tensors = {k: tree["tensors"][k] for k in sorted(tree["tensors"], key=lambda s: s.encode("utf-16-be"))}
        return {**tree, "tensors": tensors}

    return _build(_spec(spec), tree_fn=fn)


# ==================================================================================================
# reader processes that break the protocol itself (PROTOCOL §1): run as `command NAME PATH [LEVEL]`
# ==================================================================================================
def _printed(out: dict) -> str:
    return json.dumps(out, ensure_ascii=False)


@_command("exits 1 for an accepted file and 0 for a rejected one, the output otherwise right")
def swapped_exit_codes(path: str, level: str) -> tuple[int, str, str]:
    out = reference_dump(_read(path), level)
    return (1 if out["ok"] else 0), _printed(out), ""


@_command("prints a NaN scalar's value as \"NaN!\" (its f64_bits right)")
def nan_value_garbled(path: str, level: str) -> tuple[int, str, str]:
    out = reference_dump(_read(path), level)
    for s in out.get("scalars", {}).values():
        if s.get("value") == "nan":
            s["value"] = "NaN!"
    return (0 if out["ok"] else 1), _printed(out), ""


@_command("prints a debug line on stdout before the answer")
def debug_line_on_stdout(path: str, level: str) -> tuple[int, str, str]:
    out = reference_dump(_read(path), level)
    return (0 if out["ok"] else 1), f"reading {path} at level {level}\n" + _printed(out), ""


@_command("dies like Node.js on an uncaught TypeError after 200 lines of logging: the error is far above the last stderr line")
def node_style_crash(path: str, level: str) -> tuple[int, str, str]:
    log = [f"[debug] chunk {i}: 256 bytes" for i in range(200)]
    trace = ["/app/reader.js:42", "    const n = header.names.length;", "                          ^", "",
             "TypeError: Cannot read properties of undefined (reading 'length')"]
    trace += [f"    at readNames (/app/reader.js:{42 + i}:27)" for i in range(10)] + ["", "Node.js v20.20.2"]
    return 1, "", "\n".join(log + trace) + "\n"


def _main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "command" and argv[1] in COMMANDS:
        code, printed, err = COMMANDS[argv[1]][0](argv[2], argv[3] if len(argv) > 3 else "compatible")
        sys.stdout.write(printed + ("\n" if printed else ""))
        sys.stderr.write(err)
        return code
    if len(argv) >= 3 and argv[0] == "reader" and argv[1] in READERS:
        out = READERS[argv[1]][0](argv[2], argv[3] if len(argv) > 3 else "compatible")
        print(json.dumps(out, ensure_ascii=False))
        return 0 if out["ok"] else 1
    if len(argv) == 4 and argv[0] == "writer" and argv[1] in WRITERS:
        spec = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        try:
            data = WRITERS[argv[1]][0](spec)
        except Exception as exc:  # noqa: BLE001
            print(json.dumps({"ok": False, "error": {"variant": "ValidationError", "message": str(exc)}}))
            return 1
        Path(argv[3]).write_bytes(data)
        return 0
    print("usage: python -m conformance.doubles reader NAME PATH [LEVEL] | command NAME PATH [LEVEL] | writer NAME SPEC OUT",
          file=sys.stderr)
    print("readers: " + ", ".join(READERS), file=sys.stderr)
    print("commands: " + ", ".join(COMMANDS), file=sys.stderr)
    print("writers: " + ", ".join(WRITERS), file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))
