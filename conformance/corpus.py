"""The corpus on disk: writing it with its manifest, and loading it (ours or Burn's fixture folder).

Layout of a corpus directory (see the README that ``export`` writes beside it)::

    manifest.json                    every vector: id, kind, category, files, hashes, outcomes
    reader/<category>/<name>.bpk     a file to read
    reader/<category>/<name>.json    its expectation: outcome per level, error kinds, expected dump
    writer/<category>/<name>.json    a writer spec (+ the expected bytes: a reader .bpk, or a refusal)

Vectors marked ``"runtime": true`` are not checked in — too big, or byte-identical with one of
Burn's own fixtures (the empty pack, the empty file), which stay in Burn's repository; they are
regenerated (and their sha256 verified) when the corpus is loaded, and written out in full by
``export``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import generate, rules
from .model import Content
from .rules import CborRejected, Expectation, Expected

FORMAT = "burnpack-conformance-vectors/1"
PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_VECTORS = PACKAGE_DIR / "vectors"
SPEC_SOURCE = {
    "format": "burnpack (.bpk), burn@2c06be351006851d42fdb6df16b976f4a82d9747 crates/burn-pack",
    "cbor": "ciborium 0.2.2 + serde derive",
    "quant_scheme": "cubecl@48348968468e433235be3db6e7c344c34bc446c0",
}


@dataclass
class ReaderVector:
    id: str
    category: str
    description: str
    expect: Expectation
    load: Callable[[], bytes]
    path: Path | None = None  # the file on disk, when there is one
    source: str = "burnpack-conformance"
    problem: str | None = None  # why the case could not be understood: it fails, the run goes on

    def data(self) -> bytes:
        return self.load()


@dataclass
class WriterVector:
    id: str
    category: str
    description: str
    spec: dict
    expected: Callable[[], bytes] | None  # None when the writer must refuse
    refusal: tuple[str, ...] = ()
    source: str = "burnpack-conformance"
    problem: str | None = None  # why the case could not be understood: it fails, the run goes on


@dataclass
class Vectors:
    readers: list[ReaderVector] = field(default_factory=list)
    writers: list[WriterVector] = field(default_factory=list)
    root: Path | None = None
    form: str = FORMAT

    def select(self, patterns: Iterable[str] = (), exclude: Iterable[str] = ()) -> Vectors:
        """Only the vectors whose id or category matches one of the glob ``patterns`` (all when
        there are none), and none of the ``exclude`` ones (a category a reader does not support yet)."""
        import fnmatch

        pats, skip = list(patterns), list(exclude)
        if not pats and not skip:
            return self

        def matches(id: str, category: str, globs: list[str]) -> bool:
            return any(fnmatch.fnmatchcase(id, p) or fnmatch.fnmatchcase(category, p) for p in globs)

        def keep(id: str, category: str) -> bool:
            return (not pats or matches(id, category, pats)) and not matches(id, category, skip)

        return Vectors([r for r in self.readers if keep(r.id, r.category)],
                       [w for w in self.writers if keep(w.id, w.category)], self.root, self.form)


# -- building ---------------------------------------------------------------------------------------
def declared(content: Content | None) -> Callable[[bytes], Content]:
    def decode(blob: bytes) -> Content:
        if content is None:
            raise CborRejected("declared: ciborium + serde reject this item (format.md §2.6)")
        return content

    return decode


def expectation_of(case: generate.ReaderCase) -> tuple[bytes, Expectation]:
    data, content = case.build()
    return data, _expect(case, data, content)


def _expect(case: generate.ReaderCase, data: bytes, content: Content | None) -> Expectation:
    """What the reference gives at both levels, after checking what the description claims."""
    generate.check_claims(case.id, case.description, data, content)
    return rules.expect(data, declared(content))


def _json_dump(obj: Any) -> str:
    try:
        text = json.dumps(obj, ensure_ascii=False, indent=1)
        text.encode("utf-8")
        return text + "\n"
    except UnicodeEncodeError:  # a lone surrogate (a spec the writer must refuse)
        return json.dumps(obj, ensure_ascii=True, indent=1) + "\n"


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)


def reader_sidecar(case: generate.ReaderCase, exp: Expectation) -> dict:
    return {
        "id": case.id,
        "category": case.category,
        "description": case.description,
        "expect": {"compatible": exp.compatible.to_json(), "strict": exp.strict.to_json()},
        "dump": exp.dump,
    }


def write_corpus(root: Path, corpus: generate.Corpus | None = None, *, include_runtime: bool = False) -> dict:
    """Write every vector and the manifest under ``root``; returns the manifest."""
    corpus = corpus or generate.build_corpus()
    root = Path(root)
    entries: list[dict] = []
    files: dict[str, str] = {}
    for case in corpus.readers:
        data, exp = expectation_of(case)
        rel = f"reader/{case.id}"
        entry = {
            "id": case.id,
            "kind": "reader",
            "category": case.category,
            "description": case.description,
            "file": f"{rel}.bpk",
            "expected": f"{rel}.json",
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "compatible": exp.compatible.outcome,
            "strict": exp.strict.outcome,
        }
        if case.runtime:
            entry["runtime"] = True
        entries.append(entry)
        files[case.id] = entry["file"]
        if case.runtime and not include_runtime:
            continue
        _write(root / entry["file"], data)
        _write(root / entry["expected"], _json_dump(reader_sidecar(case, exp)))
    for case in corpus.writers:
        rel = f"writer/{case.id}.json"
        entry = {"id": case.id, "kind": "writer", "category": case.category, "description": case.description, "spec": rel}
        if case.refusal:
            entry["refusal"] = [case.refusal]
        else:
            entry["expected_file"] = files[case.expected_reader]
            entry["sha256"] = next(e["sha256"] for e in entries if e["kind"] == "reader" and e["id"] == case.expected_reader)
        entries.append(entry)
        _write(root / rel, _json_dump(case.spec))
    manifest = {
        "format": FORMAT,
        "source": SPEC_SOURCE,
        "levels": {
            "compatible": "what Burn's burn-pack Reader accepts and rejects, at the same stage, with the same error kind",
            "strict": "only files Burn's Writer can produce from values Burn's API constructs (canonical CBOR, exact layout, "
                      "zero padding, exact length, canonical QFloat block sizes, byte sizes under 2^64)",
        },
        "counts": {
            "reader": sum(e["kind"] == "reader" for e in entries),
            "writer": sum(e["kind"] == "writer" for e in entries),
        },
        "vectors": entries,
    }
    _write(root / "manifest.json", json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return manifest


# -- the README's manifest example ------------------------------------------------------------------
README = PACKAGE_DIR / "VECTORS.md"
EXAMPLE = re.compile(r"(<!-- generated: manifest example -->\n)(?P<body>.*?)(<!-- /generated -->)", re.S)
EXAMPLE_IDS = (("reader", "truncation/last_byte"), ("reader", "limits/tensor_count_over_limit"), ("writer", "dtype/f32"),
               ("writer", "writer_refusal/duplicate_name"))  # fmt: skip


def manifest_example(manifest: dict) -> str:
    """The manifest as VECTORS.md shows it: the real header and counts, four real entries."""
    shown = [e for kind, id in EXAMPLE_IDS for e in manifest["vectors"] if (e["kind"], e["id"]) == (kind, id)]
    lines = ["```json", "{"]
    for key in ("format", "source", "levels", "counts"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(manifest[key], ensure_ascii=False)},")
    lines.append('  "vectors": [')
    lines += [f"    {json.dumps(e, ensure_ascii=False)}," for e in shown]
    lines.append(f"    … ({manifest['counts']['reader']} reader and {manifest['counts']['writer']} writer entries in all)")
    lines += ["  ]", "}", "```", ""]
    return "\n".join(lines)


def readme_text(manifest: dict, template: str | None = None) -> str:
    """VECTORS.md (the exported README) with its manifest example rendered from ``manifest``."""
    text = README.read_text(encoding="utf-8") if template is None else template
    if not EXAMPLE.search(text):
        raise CorpusError(f"{README.name} has no <!-- generated: manifest example --> block")
    return EXAMPLE.sub(lambda m: m.group(1) + manifest_example(manifest) + m.group(3), text)


# -- loading ----------------------------------------------------------------------------------------
class CorpusError(Exception):
    """The vectors directory is missing, malformed, or a vector does not match its manifest."""


def load_vectors(root: Path | str | None = None) -> Vectors:
    """Our corpus (``manifest.json``) or a folder in Burn's fixture form (``index.json``)."""
    root = Path(root) if root is not None else DEFAULT_VECTORS
    if (root / "manifest.json").exists():
        return _load_manifest(root)
    if (root / "index.json").exists():
        return load_burn_fixtures(root)
    raise CorpusError(f"{root}: neither manifest.json (a burnpack-conformance corpus) nor index.json (Burn's fixtures)")


_RUNTIME_CACHE: dict[str, tuple[generate.ReaderCase, bytes, Content | None]] = {}
_EXPECTATION_CACHE: dict[str, Expectation] = {}


@functools.cache
def _generated_readers() -> dict[str, generate.ReaderCase]:
    """This version's reader cases by id, built once a process (building them makes every spec)."""
    return {case.id: case for case in generate.build_corpus().readers}


def _runtime_data(id: str, sha256: str) -> tuple[generate.ReaderCase, bytes, Content | None]:
    """A runtime vector's bytes, built by its generator and checked against the manifest's hash
    (its expectation, which runs the reference at both levels, only when it is asked for)."""
    if id not in _RUNTIME_CACHE:
        case = _generated_readers().get(id)
        if case is None:
            raise CorpusError(f"runtime vector {id!r} has no generator in this version of burnpack-conformance")
        data, content = case.build()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise CorpusError(f"runtime vector {id!r}: generated bytes do not match the manifest's sha256")
        _RUNTIME_CACHE[id] = (case, data, content)
    return _RUNTIME_CACHE[id]


def _runtime_expectation(id: str, sha256: str) -> Expectation:
    if id not in _EXPECTATION_CACHE:
        _EXPECTATION_CACHE[id] = _expect(*_runtime_data(id, sha256))
    return _EXPECTATION_CACHE[id]


def _load_manifest(root: Path) -> Vectors:
    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{root}/manifest.json: unreadable ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CorpusError(f"{root}/manifest.json: unknown format {manifest.get('format') if isinstance(manifest, dict) else manifest!r}")
    out = Vectors(root=root, form=FORMAT)
    reader_data: dict[str, Callable[[], bytes]] = {}
    entries = manifest.get("vectors")
    if not isinstance(entries, list):
        raise CorpusError(f"{root}/manifest.json: no 'vectors' list")
    for writers in (False, True):  # readers first: writer vectors may point at their files
        for number, e in enumerate(entries):
            try:
                if (e["kind"] == "writer") is writers:
                    (_load_manifest_writer if writers else _load_manifest_reader)(root, e, out, reader_data)
            except _UNREADABLE as exc:
                id = e.get("id") if isinstance(e, dict) and isinstance(e.get("id"), str) else f"vector #{number}"
                category = e.get("category") if isinstance(e, dict) and isinstance(e.get("category"), str) else "unknown"
                _add_unreadable(out, id, category, writers, exc, FORMAT)
    return out


def _load_manifest_reader(root: Path, e: dict, out: Vectors, reader_data: dict[str, Callable[[], bytes]]) -> None:
    path = root / e["file"]
    if e.get("runtime") and not path.exists():
        id, sha = e["id"], e["sha256"]
        exp = _LazyExpectation(lambda id=id, sha=sha: _runtime_expectation(id, sha))
        reader_data[e["file"]] = lambda id=id, sha=sha: _runtime_data(id, sha)[1]
        out.readers.append(ReaderVector(id, e["category"], e["description"], exp, reader_data[e["file"]]))
        return
    reader_data[e["file"]] = _file_loader(path, e.get("sha256"))
    side = json.loads((root / e["expected"]).read_text(encoding="utf-8"))
    exp = Expectation(Expected.from_json(side["expect"]["compatible"]), Expected.from_json(side["expect"]["strict"]), side.get("dump"))
    out.readers.append(ReaderVector(e["id"], e["category"], e["description"], exp, reader_data[e["file"]], path))


def _load_manifest_writer(root: Path, e: dict, out: Vectors, reader_data: dict[str, Callable[[], bytes]]) -> None:
    spec = json.loads((root / e["spec"]).read_text(encoding="utf-8"))
    expected = None
    if "expected_file" in e:
        expected = reader_data.get(e["expected_file"]) or _file_loader(root / e["expected_file"], e.get("sha256"))
    out.writers.append(WriterVector(e["id"], e["category"], e["description"], spec, expected, tuple(e.get("refusal", ()))))


class _LazyExpectation(Expectation):
    """An expectation computed on first use (runtime vectors)."""

    def __init__(self, compute: Callable[[], Expectation]) -> None:  # noqa: D107
        object.__setattr__(self, "_compute", compute)
        object.__setattr__(self, "_value", None)

    def _get(self) -> Expectation:
        if self._value is None:
            object.__setattr__(self, "_value", self._compute())
        return self._value

    compatible = property(lambda self: self._get().compatible)  # type: ignore[assignment]
    strict = property(lambda self: self._get().strict)  # type: ignore[assignment]
    dump = property(lambda self: self._get().dump)  # type: ignore[assignment]


def _file_loader(path: Path, sha256: str | None) -> Callable[[], bytes]:
    def load() -> bytes:
        if not path.exists():
            raise CorpusError(f"vector file {path} is missing")
        data = path.read_bytes()
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise CorpusError(f"vector file {path} does not match the manifest's sha256")
        return data

    return load


# -- Burn's fixture folder (index.json) ---------------------------------------------------------------
_OUTCOME = {"accepted": rules.ACCEPT, "rejected_on_open": rules.REJECT_OPEN, "rejected_on_tensor_access": rules.REJECT_ACCESS}


def load_burn_fixtures(root: Path) -> Vectors:
    """Burn's fixtures as vectors: Burn's recorded outcome and content at the compatible level.

    Burn records no strict level; it is derived by the same rules the corpus uses (with the
    reference decoder reading the CBOR): a file Burn's writer produced is strictly valid by
    definition, and the test suite checks that the rules agree.
    """
    from .reference import decode_content

    try:
        index = json.loads((root / "index.json").read_text(encoding="utf-8"))
        cases = index["cases"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorpusError(f"{root / 'index.json'}: not Burn's fixture index ({type(exc).__name__}: {exc})") from None
    out = Vectors(root=root, form="burn-fixtures")
    for number, case in enumerate(cases):
        try:
            _load_burn_case(root, case, out, decode_content)
        except _UNREADABLE as exc:
            name = case.get("case") if isinstance(case, dict) and isinstance(case.get("case"), str) else f"case #{number}"
            kind = case.get("kind") if isinstance(case, dict) and isinstance(case.get("kind"), str) else "unknown"
            _add_unreadable(out, name, kind, kind == "writer_error", exc, "burn-fixtures")
    return out


_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, CorpusError)


def _add_unreadable(out: Vectors, id: str, category: str, writer: bool, exc: Exception, source: str) -> None:
    """A case the runner cannot understand: it fails with the reason, the rest of the run goes on."""
    why = f"the runner cannot read this case: {type(exc).__name__}: {exc}"  # also its description
    if writer:
        out.writers.append(WriterVector(id, category, why, {}, None, (), source, problem=why))
    else:
        nothing = Expected(rules.ACCEPT)
        out.readers.append(ReaderVector(id, category, why, Expectation(nothing, nothing, None), lambda: b"", None, source, problem=why))


def _load_burn_case(root: Path, case: dict, out: Vectors, decode_content: Callable[[bytes], Any]) -> None:
    side = json.loads((root / case["sidecar"]).read_text(encoding="utf-8"))
    category = case["kind"]
    if case["outcome"] == "writer_rejected":
        spec = _spec_from_writer_input(side["writer_input"])
        calls = side["writer"]
        # size() and write() are recorded separately; either may be the call that failed.
        kinds = tuple(dict.fromkeys(calls[call]["error"]["variant"] for call in ("size", "write") if not calls[call]["ok"]))
        if not kinds:
            raise CorpusError("outcome writer_rejected but neither size nor write failed")
        out.writers.append(WriterVector(case["case"], category, case["description"], spec, None, kinds, "burn-fixtures"))
        return
    path = root / case["file"]
    data = path.read_bytes()
    outcome = _OUTCOME[case["outcome"]]
    if outcome == rules.ACCEPT:
        compatible = Expected(outcome)
        dump = _dump_from_sidecar(side)
    else:
        compatible = Expected(outcome, _burn_error_kinds(side, outcome))
        dump = None
    derived = rules.expect(data, decode_content)
    if case["kind"] == "writer":
        strict = Expected(rules.ACCEPT)
    else:
        strict = derived.strict if derived.compatible.outcome == outcome else compatible
    if dump is None and strict.outcome == rules.ACCEPT:
        dump = derived.dump
    exp = Expectation(compatible, strict, dump)
    out.readers.append(ReaderVector(case["case"], category, case["description"], exp, _file_loader(path, None), path, "burn-fixtures"))
    if case["kind"] == "writer":
        spec = _spec_from_fixture(side, data)
        out.writers.append(WriterVector(case["case"], category, case["description"], spec, _file_loader(path, None), (), "burn-fixtures"))


def _burn_error_kinds(side: dict, outcome: str) -> tuple[str, ...]:
    reader = side["reader"]
    kinds: list[str] = []
    for entry in ("from_bytes", "from_file"):
        if outcome == rules.REJECT_OPEN:
            kinds.append(reader[entry]["error"]["variant"])
        else:
            kinds.append(reader[f"{entry}_into_tensors"]["error"]["variant"])
    return tuple(dict.fromkeys(kinds))


def _dump_from_sidecar(side: dict) -> dict:
    tensors = [{k: t[k] for k in ("name", "dtype", "shape", "data_offsets", "param_id", "byte_len", "sha256")} for t in side["tensors"]]
    scalars = {}
    for name, s in side["scalars"].items():
        scalars[name] = {k: s[k] for k in ("type", "value", "f64_bits") if k in s}
    return {
        "ok": True,
        "header": {"version": side["header"]["version"], "metadata_size": side["header"]["metadata_size"]},
        "data_section_start": side["data_section_start"],
        "tensors": tensors,
        "metadata": side["metadata"],
        "scalars": scalars,
    }


def _spec_from_writer_input(inp: dict) -> dict:
    return {
        "tensors": [
            {**{k: t[k] for k in ("name", "dtype", "shape", "param_id", "data_hex")}, **({"byte_len": t["byte_len"]} if "byte_len" in t else {})}
            for t in inp["tensors"]
        ],
        "metadata": {k: v for k, v in inp.get("metadata_calls", [])},
        "scalars": {k: v for k, v in inp.get("scalar_calls", [])},
    }


def _spec_from_fixture(side: dict, data: bytes) -> dict:
    d = side["data_section_start"]
    by_name = {t["name"]: t for t in side["tensors"]}
    tensors = []
    for name in side["write_order"]:
        t = by_name[name]
        s, e = t["data_offsets"]
        tensors.append({"name": name, "dtype": t["dtype"], "shape": t["shape"], "param_id": t["param_id"], "data_hex": data[d + s : d + e].hex()})
    scalars = {n: {k: s[k] for k in ("type", "value", "f64_bits") if k in s} for n, s in side["scalars"].items()}
    return {"tensors": tensors, "metadata": side["metadata"], "scalars": scalars}
