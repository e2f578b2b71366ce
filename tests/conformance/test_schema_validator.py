"""The runner's own schema validator agrees with the ``jsonschema`` package on dump.schema.json.

The runner ships a validator for the keywords the schema uses so that implementers need no
dependency (``conformance/schema.py`` says why); here it is checked against ``jsonschema`` on every
output of the corpus and on mutations of them, and its two deliberate differences are pinned.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import jsonschema
import pytest

from conformance import reference
from conformance.schema import SCHEMA_PATH, Schema, SchemaKeywordError, dump_schema

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
OFFICIAL = jsonschema.Draft202012Validator(SCHEMA)
# Values a mutation puts somewhere. No float with a zero fraction and no string ending in "\n":
# there the validator differs from JSON Schema on purpose (pinned below).
POOL: list[Any] = [None, True, False, 0, 1, -1, 7, 1.5, -0.25, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, "", "x", "nan", "inf", "F32",
                   "Native", "open", "tensor_access", "ValidationError", "0x7ff8000000000000", "0X7FF8", "a" * 64, "0" * 64, [], [1],
                   [0, 4], [1, 2, 3, 4, 5], {}, {"Bool": "Native"}, {"Bool": "U16"}, {"QFloat": {}}, {"type": "Float"},
                   {"type": "UInt", "value": 3}]  # fmt: skip


def _outputs(vectors) -> list[Any]:
    return [reference.dump(v.path, level) for v in vectors.readers if v.path is not None for level in ("compatible", "strict")]


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, path + (i,))
    return out


def _mutate(value: Any, rng: random.Random) -> Any:
    value = copy.deepcopy(value)
    path = rng.choice(_paths(value)[1:] or [()])
    if not path:
        return rng.choice(POOL)
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    action = rng.randrange(4)
    if action == 0 and isinstance(parent, dict):
        del parent[key]
    elif action == 1 and isinstance(parent, dict):
        parent[rng.choice(["extra", "ok", "Bool", "QFloat", "f64_bits"])] = rng.choice(POOL)
    elif action == 2 and isinstance(parent, list):
        parent.append(rng.choice(POOL))
    else:
        parent[key] = copy.deepcopy(rng.choice(POOL))
    return value


def test_every_output_of_the_reference_reader_is_valid_for_both(vectors):
    outputs = _outputs(vectors)
    assert len(outputs) > 600
    for out in outputs:
        assert dump_schema().problems(out) == [] and OFFICIAL.is_valid(out), out


def test_the_validators_agree_on_mutated_outputs(vectors):
    rng = random.Random(32)
    outputs = _outputs(vectors)
    checked = invalid = 0
    for out in rng.sample(outputs, 120):
        for _ in range(25):
            mutant = _mutate(out, rng)
            ours = not dump_schema().problems(mutant)
            assert ours == OFFICIAL.is_valid(mutant), (mutant, dump_schema().first_problem(mutant))
            checked += 1
            invalid += not ours
    assert checked == 3000 and invalid > 1500  # the mutations reach the schema's rules


def test_an_integer_must_be_an_integer_literal_where_json_schema_takes_any_whole_number():
    out = {"ok": True, "tensors": [], "metadata": {}, "scalars": {"n": {"type": "UInt", "value": 3.0}}}
    assert OFFICIAL.is_valid(out)
    assert dump_schema().first_problem(out) == "/scalars/n/value: 3.0 is not an integer"


def test_a_pattern_ending_in_dollar_does_not_match_before_a_final_newline():
    out = {"ok": True, "tensors": [], "metadata": {}, "scalars": {"x": {"type": "Float", "value": 1.0, "f64_bits": "0x3ff0000000000000\n"}}}
    assert OFFICIAL.is_valid(out)  # Python's re: `$` also matches before a final "\n"; ECMA-262's does not
    assert "is not a string matching" in dump_schema().first_problem(out)


@pytest.mark.parametrize("schema", [{"type": "string", "format": "uuid"}, {"anyOf": [{"type": "null"}]},
                                    {"$ref": "#/$defs/x", "type": "string", "$defs": {"x": {}}}])  # fmt: skip
def test_a_keyword_the_validator_does_not_implement_is_refused_when_the_schema_loads(schema):
    with pytest.raises(SchemaKeywordError):
        Schema(schema)
