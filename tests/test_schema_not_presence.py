"""``not`` over an operand that asks only for keys and values of keys (``required``, ``properties``,
``allOf`` of those, ``type: object``), written as a schema by De Morgan
(``combinators.negation.negated_presence``) instead of a complement of fixed-order objects:
against ``jsonschema`` on the real forms from JSONSchemaBench and on hypothesis values."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from tests.schema_suite_report import serialize_instance

SCHEMAS: dict[str, dict[str, Any]] = {
    # Github_ultra o13020 / o18644 / o65671: not both of two keys
    "not both keys": {
        "type": "object",
        "properties": {"site": {"type": "string"}, "app": {"type": "string"}},
        "not": {"allOf": [{"required": ["site"]}, {"required": ["app"]}]},
    },
    # Github_hard o10347: not both arrays empty (where present)
    "values of keys": {
        "properties": {"features": {"type": "array"}, "genomicFeatures": {"type": "array"}},
        "not": {"properties": {"features": {"maxItems": 0}, "genomicFeatures": {"maxItems": 0}}},
    },
    # Github_trivial o21864: a required pair with typed values, inside anyOf
    "inside anyOf": {
        "anyOf": [
            {"required": ["id"]},
            {
                "not": {
                    "properties": {"FirstName": {"type": "string"}, "LastName": {"type": "string"}},
                    "required": ["FirstName", "LastName"],
                }
            },
        ],
        "properties": {"id": {"type": "integer"}, "FirstName": {}, "LastName": {}},
    },
    "objects only": {"not": {"type": "object", "required": ["a"]}},
    "no condition": {"not": {"type": "object"}},
}

KEYS = ["site", "app", "features", "genomicFeatures", "FirstName", "LastName", "id", "a", "b"]
VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.sampled_from(["", "x"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=6,
)
_DFAS: dict[str, DFA] = {}


def _dfa(name: str) -> DFA:
    if name not in _DFAS:
        _DFAS[name] = compile_ir(compile_schema_ir(SCHEMAS[name]).node)
    return _DFAS[name]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_agrees_with_jsonschema(name: str, value: Any) -> None:
    schema = SCHEMAS[name]
    text = serialize_instance(value, schema)
    assert _dfa(name).accepts(text) == Draft202012Validator(schema).is_valid(value), text


def test_the_real_forms_compile_without_a_complement_of_objects() -> None:
    for name in ("not both keys", "values of keys", "inside anyOf"):
        compile_schema_ir(SCHEMAS[name])  # no "cannot be complemented" refusal
    dfa = _dfa("not both keys")
    assert dfa.accepts(b'{"site":"s"}') and dfa.accepts(b"{}")
    assert not dfa.accepts(b'{"site":"s","app":"a"}')


def test_other_operands_still_take_the_complement() -> None:
    """An operand with more than keys (here ``additionalProperties``) is complemented, and refused
    where its objects have a fixed key order."""
    with pytest.raises(UnsupportedError, match="'not'"):
        compile_schema_ir({"not": {"properties": {"a": {}, "b": {}}, "additionalProperties": False}})
