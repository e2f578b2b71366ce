"""Checking a reader's output against ``dump.schema.json``, with no JSON Schema library.

The runner validates every answer a reader gives (PROTOCOL.md §1.1-1.2). People install the runner
to test a reader written in another language, so validation must not add a dependency they have to
chase (``jsonschema`` and its compiled ``rpds-py``): this module implements exactly the keywords
``dump.schema.json`` uses, and a schema holding any other keyword is refused when it is loaded, so
the schema cannot outgrow the validator silently. ``tests/conformance/test_schema_validator.py``
checks that it agrees with the ``jsonschema`` package (the test extra) on every output of the
corpus and on mutations of them.

One deliberate difference from JSON Schema: ``"integer"`` means a JSON integer literal (a Python
``int`` after ``json.loads``), not any number whose fraction is zero. The protocol asks for exact
64-bit integers; ``2.0`` or ``1e3`` in a shape means the reader printed an integer through a double.

Errors read as ``/tensors/0/shape/1: 2.0 is not an integer``: a JSON pointer to the value, the
value, and what the schema wanted there. Where ``oneOf`` alternatives all fail, the alternative with
the fewest errors is reported (the form the output was evidently meant to have); alternatives that
fail equally at the same place are named together.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent / "dump.schema.json"
ANNOTATIONS = {"$schema", "$id", "title", "description", "$defs"}
KEYWORDS = ANNOTATIONS | {"$ref", "type", "required", "properties", "additionalProperties", "items", "minItems", "maxItems",
                          "enum", "const", "oneOf", "pattern", "minimum", "maximum"}  # fmt: skip
TYPE_NAMES = {"object": "an object", "array": "an array", "string": "a string", "integer": "an integer", "number": "a number",
              "boolean": "a boolean", "null": "null"}  # fmt: skip


class SchemaKeywordError(ValueError):
    """The schema uses a keyword this validator does not implement."""


@dataclass(frozen=True)
class Problem:
    """One way the instance breaks the schema: where, and what was wanted there (or a sentence)."""

    path: tuple[str | int, ...]
    value: Any
    wanted: str | None = None  # "an integer", "one of ...": the message is "<value> is not <wanted>"
    text: str | None = None  # a whole sentence instead ("missing key 'sha256'")
    const: bool = False  # a const (the idiom for a oneOf's discriminator) did not match

    def where(self) -> str:
        return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in self.path)

    def message(self) -> str:
        return f"{self.where()}: {self.text if self.text is not None else f'{show(self.value)} is not {self.wanted}'}"


def show(value: Any, limit: int = 60) -> str:
    """A value as JSON, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    return isinstance(value, {"object": dict, "array": list, "string": str}[name])


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    # ECMA-262's `$` (no multiline) matches only at the very end; Python's also before a final "\n".
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


class Schema:
    """A loaded schema: ``problems(instance)`` lists how the instance breaks it (empty: valid)."""

    def __init__(self, schema: dict) -> None:
        self.root = schema
        self._refs: dict[str, dict] = {}  # each $ref resolved once: a dump checks one per tensor field
        _check_keywords(schema, "#")

    @classmethod
    def load(cls, path: Path = SCHEMA_PATH) -> Schema:
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def problems(self, instance: Any) -> list[Problem]:
        return self._check(self.root, instance, ())

    def first_problem(self, instance: Any) -> str | None:
        """The message of the first problem, or None when the instance is valid."""
        found = self.problems(instance)
        return _summary(found) if found else None

    def _resolve(self, ref: str) -> dict:
        if ref in self._refs:
            return self._refs[ref]
        if not ref.startswith("#/"):
            raise SchemaKeywordError(f"only local $ref is supported, not {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        self._refs[ref] = node
        return node

    def _check(self, schema: dict, value: Any, path: tuple[str | int, ...]) -> list[Problem]:  # noqa: C901 - one branch per keyword
        if "$ref" in schema:
            return self._check(self._resolve(schema["$ref"]), value, path)
        if "oneOf" in schema:
            return self._one_of(schema["oneOf"], value, path)
        if "type" in schema and not _is_type(value, schema["type"]):
            return [Problem(path, value, TYPE_NAMES[schema["type"]])]
        if "const" in schema and not _equal(value, schema["const"]):
            return [Problem(path, value, show(schema["const"]), const=True)]
        if "enum" in schema and not (value in schema["enum"] if isinstance(value, str) else any(_equal(value, e) for e in schema["enum"])):
            return [Problem(path, value, "one of " + ", ".join(show(e) for e in schema["enum"]))]
        found: list[Problem] = []
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                found.append(Problem(path, value, f"≥ {schema['minimum']}"))
            if "maximum" in schema and value > schema["maximum"]:
                found.append(Problem(path, value, f"≤ {schema['maximum']}"))
        if isinstance(value, str) and "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            found.append(Problem(path, value, f"a string matching {schema['pattern']}"))
        if isinstance(value, list):
            if "minItems" in schema and len(value) < schema["minItems"]:
                found.append(Problem(path, value, text=f"{len(value)} items, at least {schema['minItems']} expected"))
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                found.append(Problem(path, value, text=f"{len(value)} items, at most {schema['maxItems']} expected"))
            if "items" in schema:
                for i, item in enumerate(value):
                    found += self._check(schema["items"], item, path + (i,))
        if isinstance(value, dict):
            found += [Problem(path, value, text=f"missing key {show(k)}") for k in schema.get("required", ()) if k not in value]
            properties = schema.get("properties", {})
            extra = schema.get("additionalProperties", True)
            for key, item in value.items():
                if key in properties:
                    found += self._check(properties[key], item, path + (key,))
                elif extra is False:
                    found.append(Problem(path, value, text=f"unexpected key {show(key)}"))
                elif isinstance(extra, dict):
                    found += self._check(extra, item, path + (key,))
        return found

    def _one_of(self, branches: list[dict], value: Any, path: tuple[str | int, ...]) -> list[Problem]:
        results = [self._check(branch, value, path) for branch in branches]
        passing = sum(not r for r in results)
        if passing == 1:
            return []
        if passing > 1:
            return [Problem(path, value, text=f"{show(value)} matches {passing} alternatives of a oneOf, exactly one expected")]
        ranks = [_progress(r, path) for r in results]
        best = [r for r, rank in zip(results, ranks) if rank == min(ranks)]
        if len(best) > 1 and all(len(r) == 1 and r[0].path == best[0][0].path and r[0].wanted for r in best):
            wanted = ", nor ".join(dict.fromkeys(r[0].wanted for r in best if r[0].wanted))
            return [Problem(best[0][0].path, best[0][0].value, wanted, const=any(r[0].const for r in best))]
        return best[0]


def _progress(found: list[Problem], path: tuple[str | int, ...]) -> tuple[int, int, int, int]:
    """How far an alternative got, smallest first: its discriminating consts matched, the value's own
    form right, problems deep, few."""
    wrong_form = any(p.path == path and p.wanted for p in found)
    return (sum(p.const for p in found), int(wrong_form), -max(len(p.path) for p in found), len(found))


def _summary(found: list[Problem], shown: int = 3) -> str:
    """The deepest problems first (the most specific), at most ``shown`` of them."""
    ordered = sorted(found, key=lambda p: -len(p.path))
    more = f"; and {len(found) - shown} more" if len(found) > shown else ""
    return "; ".join(p.message() for p in ordered[:shown]) + more


def _check_keywords(node: Any, where: str) -> None:
    if not isinstance(node, dict):
        raise SchemaKeywordError(f"{where}: a schema must be an object")
    unknown = set(node) - KEYWORDS
    if unknown:
        raise SchemaKeywordError(f"{where}: keyword(s) {sorted(unknown)} not implemented by conformance.schema")
    for alone in ("$ref", "oneOf"):  # the validator applies these instead of a node's other keywords
        if alone in node and set(node) - ANNOTATIONS - {alone}:
            raise SchemaKeywordError(f"{where}: {alone} beside {sorted(set(node) - ANNOTATIONS - {alone})} is not implemented")
    for key in ("items",):
        if key in node:
            _check_keywords(node[key], f"{where}/{key}")
    if isinstance(node.get("additionalProperties"), dict):
        _check_keywords(node["additionalProperties"], f"{where}/additionalProperties")
    for name, sub in node.get("properties", {}).items():
        _check_keywords(sub, f"{where}/properties/{name}")
    for name, sub in node.get("$defs", {}).items():
        _check_keywords(sub, f"{where}/$defs/{name}")
    for i, sub in enumerate(node.get("oneOf", ())):
        _check_keywords(sub, f"{where}/oneOf/{i}")


@cache
def dump_schema() -> Schema:
    """The protocol's schema of a reader's output, loaded once."""
    return Schema.load()
