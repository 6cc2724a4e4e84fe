"""Keywords that the draft a document declares does not have are annotations, as its validators say.

Oracle: jsonschema's validator for the declared draft, on instances where compiling the keyword
would change the answer. Each dropped keyword is warned once with its pointer, listed in the notes
and refused under ``refuse_unknown``; the schema given is never changed.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import jsonschema
import pytest

from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.canonical import serialize
from moonmaskc.frontends.schema.dialects import declared_draft, without_other_drafts

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT6 = "http://json-schema.org/draft-06/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2019 = "https://json-schema.org/draft/2019-09/schema"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"

CASES: list[tuple[str, dict[str, Any], list[Any], list[str]]] = [
    (DRAFT4, {"type": "integer", "const": 1}, [1, 2], ["const"]),
    (DRAFT4, {"type": "array", "contains": {"type": "string"}}, [[1], ["a"], []], ["contains"]),
    (DRAFT4, {"type": "object", "propertyNames": {"maxLength": 1}}, [{"ab": 1}, {"a": 1}], ["propertyNames"]),
    (
        DRAFT4,
        {"if": {"type": "integer"}, "then": {"minimum": 5}, "else": {"type": "string"}},
        [1, 7, True],
        ["else", "if", "then"],
    ),
    (DRAFT6, {"type": "integer", "if": {"minimum": 3}, "then": {"maximum": 4}}, [2, 5], ["if", "then"]),
    (DRAFT6, {"type": "integer", "const": 1}, [1, 2], []),
    (DRAFT7, {"type": "array", "prefixItems": [{"type": "string"}]}, [[1], ["a"]], ["prefixItems"]),
    (
        DRAFT7,
        {"type": "object", "dependentRequired": {"a": ["b"]}},
        [{"a": 1}, {"a": 1, "b": 2}],
        ["dependentRequired"],
    ),
    (
        DRAFT7,
        {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
        [{"b": 1}],
        ["unevaluatedProperties"],
    ),
    (
        DRAFT7,
        {"type": "array", "contains": {"type": "string"}, "maxContains": 1},
        [["a", "b"], [1]],
        ["maxContains"],
    ),
    (DRAFT2019, {"type": "array", "prefixItems": [{"type": "string"}]}, [[1], ["a"]], ["prefixItems"]),
    (DRAFT2020, {"type": "object", "dependencies": {"a": ["b"]}}, [{"a": 1}, {"b": 1}], ["dependencies"]),
    (
        DRAFT2020,
        {"type": "array", "items": {"type": "integer"}, "additionalItems": False},
        [[1, 2], ["a"]],
        ["additionalItems"],
    ),
]


@pytest.mark.parametrize(("declared", "body", "instances", "dropped"), CASES)
def test_the_declared_drafts_validators_decide(
    declared: str, body: dict[str, Any], instances: list[Any], dropped: list[str]
) -> None:
    schema = {"$schema": declared, **body}
    validator = jsonschema.validators.validator_for(schema)(schema)
    result = compile_schema_ir(schema)
    dfa = compile_ir(result.node)
    for instance in instances:
        assert dfa.accepts(serialize(instance).encode()) == validator.is_valid(instance), instance
    warned = result.notes["other_draft_keywords"]
    assert [re.findall(r"keyword '(\w+)'", w)[0] for w in warned] == dropped
    assert all(f"'{k}' at #/{k}:" in w for k, w in zip(dropped, warned, strict=True))
    if dropped:
        with pytest.raises(UnsupportedError, match="refuse-unknown"):
            compile_schema_ir(schema, refuse_unknown=True)


def test_the_declaring_drafts_own_keywords_are_compiled() -> None:
    schema = {"$schema": DRAFT7, "if": {"type": "integer"}, "then": {"minimum": 5}, "const": 7}
    result = compile_schema_ir(schema)
    assert not result.notes["other_draft_keywords"]
    dfa = compile_ir(result.node)
    assert dfa.accepts(b"7") and not dfa.accepts(b"3")


def test_names_and_data_are_not_keywords_and_the_input_is_left_alone() -> None:
    schema = {
        "$schema": DRAFT4,
        "type": "object",
        "properties": {"if": {"type": "integer"}, "const": {"enum": [{"const": 1}]}},
        "definitions": {"then": {"type": "string", "contains": 1}},
        "required": ["if"],
        "default": {"if": 1},
    }
    before = copy.deepcopy(schema)
    result = compile_schema_ir(schema)
    assert schema == before
    assert result.notes["other_draft_keywords"] == [
        w for w in result.warnings if "definitions/then/contains" in w
    ]
    dfa = compile_ir(result.node)
    assert dfa.accepts(b'{"if":1,"const":{"const":1}}') and not dfa.accepts(b'{"if":"x"}')


def test_a_deep_document_is_walked_without_recursion() -> None:
    inner: dict[str, Any] = {"type": "integer", "const": 3}
    schema: dict[str, Any] = inner
    for _ in range(5_000):
        schema = {"allOf": [schema]}
    schema = {"$schema": DRAFT4, **schema}
    cleaned, dropped = without_other_drafts(schema)
    assert dropped == [("const", "#" + "/allOf/0" * 5_000 + "/const")] and "const" in inner
    for _ in range(5_000):
        cleaned = cleaned["allOf"][0]
    assert cleaned == {"type": "integer"}


def test_only_the_drafts_we_know_are_read_off_dollar_schema() -> None:
    assert declared_draft({"$schema": DRAFT4}) == 4
    assert declared_draft({"$schema": DRAFT2019}) == 2019
    assert declared_draft({"$schema": "https://example.com/my-meta"}) is None
    assert declared_draft({}) is None and declared_draft(True) is None


@pytest.mark.parametrize(
    ("body", "instances"),
    [
        ({"type": "integer", "minimum": 5, "exclusiveMinimum": True}, [4, 5, 6]),
        (
            {
                "type": "number",
                "maximum": 5,
                "exclusiveMaximum": True,
                "minimum": 1,
                "exclusiveMinimum": False,
            },
            [0.5, 1, 4.5, 5],
        ),
        ({"type": "integer", "exclusiveMinimum": True}, [-6, 5]),
        (
            {"properties": {"a": {"type": "integer", "maximum": 3, "exclusiveMaximum": True}}},
            [{"a": 3}, {"a": 2}],
        ),
    ],
)
def test_draft_4_boolean_bounds_are_compiled(body: dict[str, Any], instances: list[Any]) -> None:
    schema = {"$schema": DRAFT4, **body}
    validator = jsonschema.Draft4Validator(schema)
    result = compile_schema_ir(schema)
    assert not result.warnings
    dfa = compile_ir(result.node)
    for instance in instances:
        assert dfa.accepts(serialize(instance).encode()) == validator.is_valid(instance), instance


def test_a_boolean_bound_outside_draft_4_names_the_draft_that_has_it() -> None:
    for schema in ({"minimum": 1, "exclusiveMinimum": True}, {"$schema": DRAFT7, "exclusiveMaximum": False}):
        with pytest.raises(UnsupportedError, match="draft-04's form"):
            compile_schema_ir(schema)
