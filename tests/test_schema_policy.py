"""The keyword policy: unknown keywords and format names are annotations (warned once, with their
pointer, in the notes; errors under ``refuse_unknown``), annotation-only keywords are silent,
OpenAPI keywords are warned with what they mean, and ``lenient`` drops what cannot be compiled with
notes on how the language moved. Where the language is at stake, ``jsonschema`` is the oracle:
canonical serializations of sample values are accepted exactly when it says they are valid."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft7Validator, Draft202012Validator, FormatChecker

from moonmaskc import compile_schema
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.canonical import serialize
from moonmaskc.frontends.schema.keywords import ANNOTATIONS, OPENAPI
from moonmaskc.pipeline import make_options
from tests.schema_suite_report import declared_order

SCALARS: list[Any] = [None, True, False, 0, 1, 2, 3, -1, 7, 2.5, "", "a", "b", "ab", "2024-01-02", "x y"]
SAMPLES: list[Any] = [
    *SCALARS,
    [],
    [1],
    [1, 2],
    [1, 1],
    ["a", "b"],
    ["a", "a"],
    [True, False],
    [True, True],
    [[1], [1]],
    [None, 1, "a"],
    {},
    {"a": 1},
    {"a": "x"},
    {"a": 1, "b": 2},
    {"kind": "cat", "a": 1},
    {"kind": "dog", "a": "x"},
    {"b": None},
]


def dfa_of(schema: Any, **options: Any) -> DFA:
    return compile_ir(compile_schema_ir(schema, **options).node)


def agrees_with_jsonschema(schema: Any, dfa: DFA, samples: list[Any] = SAMPLES) -> None:
    """Every sample's canonical serialization is accepted exactly when jsonschema says it is valid."""
    draft7 = isinstance(schema, dict) and "draft-07" in str(schema.get("$schema", ""))
    validator_class = Draft7Validator if draft7 else Draft202012Validator
    validator = validator_class(schema, format_checker=FormatChecker())
    for value in samples:
        text = serialize(declared_order(value, schema, schema))
        assert dfa.accepts(text.encode("utf-8")) == validator.is_valid(value), (schema, text)


def same_language(a: Any, b: Any) -> bool:
    x, y = dfa_of(a), dfa_of(b)
    return (
        x.num_states == y.num_states
        and np.array_equal(x.transitions, y.transitions)
        and np.array_equal(x.accepting, y.accepting)
    )


# --------------------------------------------------------------------------- unknown keywords

UNKNOWN_CASES = [
    {"type": "string", "self": {"vendor": "com.acme", "name": "e", "format": "jsonschema"}},
    {"type": "object", "properties": {"a": {"type": "integer", "propertyOrder": 1}}, "javaType": "A"},
    {"type": "array", "items": {"enum": [1, 2], "tsType": "X"}, "maxItems": 2},
    {"anyOf": [{"type": "integer", "units": "ms"}, {"type": "null"}]},
]


@pytest.mark.parametrize("schema", UNKNOWN_CASES)
def test_unknown_keywords_have_no_effect_on_the_language(schema: dict[str, Any]) -> None:
    agrees_with_jsonschema(schema, dfa_of(schema))


def test_unknown_keyword_is_warned_once_with_its_pointer() -> None:
    shared = {"type": "integer", "units": "ms"}
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/t"}, "b": {"$ref": "#/$defs/t"}},
        "$defs": {"t": shared},
        "self": {"vendor": "x"},
    }
    result = compile_schema_ir(schema)
    assert result.notes["unknown_keywords"] == [w for w in result.warnings if w.startswith("unknown keyword")]
    assert len(result.notes["unknown_keywords"]) == 2
    assert any("'units' at #/$defs/t" in w for w in result.notes["unknown_keywords"])
    assert any("'self' at #:" in w for w in result.notes["unknown_keywords"])
    assert result.notes["ignored_keywords"] == []
    assert "language" not in result.notes


def test_unknown_keyword_beside_enum_is_warned_too() -> None:
    result = compile_schema_ir({"enum": [1, 2], "meta:label": "n"})
    assert any("'meta:label' at #" in w for w in result.notes["unknown_keywords"])
    with pytest.raises(UnsupportedError, match="meta:label"):
        compile_schema_ir({"enum": [1, 2], "meta:label": "n"}, refuse_unknown=True)


def test_refuse_unknown_through_the_api_and_the_options() -> None:
    assert make_options(refuse_unknown=True).refuse_unknown
    with pytest.raises(UnsupportedError, match="'self' at #"):
        compile_schema({"type": "string", "self": 1}, refuse_unknown=True, tokenizer=None)
    artifact = compile_schema({"type": "string", "self": 1}, tokenizer=None)
    notes = artifact.metadata["notes"]
    assert any("'self'" in w for w in notes["unknown_keywords"])


def test_refuse_unknown_on_the_command_line(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from moonmaskc.cli import main

    source = tmp_path / "s.json"
    source.write_text('{"type": "string", "self": {"vendor": "x"}}')
    runner = CliRunner()
    refused = runner.invoke(
        main,
        ["compile", str(source), "-o", str(tmp_path / "a.npz"), "--tokenizer", "none", "--refuse-unknown"],
    )
    assert refused.exit_code != 0 and "self" in refused.output
    compiled = runner.invoke(
        main, ["compile", str(source), "-o", str(tmp_path / "a.npz"), "--tokenizer", "none"]
    )
    assert compiled.exit_code == 0, compiled.output
    shown = runner.invoke(main, ["inspect", str(tmp_path / "a.npz")])
    assert "unknown keyword 'self'" in shown.output


def test_annotation_only_keywords_are_silent() -> None:
    schema = {
        "type": "object",
        "title": "t",
        "description": "d",
        "default": {},
        "examples": [{}],
        "$comment": "c",
        "deprecated": True,
        "readOnly": True,
        "writeOnly": False,
        "properties": {
            "a": {"type": "string", "contentMediaType": "text/plain", "contentEncoding": "base64"}
        },
        "x-internal": True,
    }
    result = compile_schema_ir(schema)
    assert result.warnings == []
    assert {"title", "description", "default", "examples", "$comment", "deprecated"} <= ANNOTATIONS


# --------------------------------------------------------------------------- formats


def test_unknown_format_is_any_string_and_agrees_with_jsonschema() -> None:
    schema = {"type": "string", "format": "phone-number"}
    assert same_language(schema, {"type": "string"})
    agrees_with_jsonschema(schema, dfa_of(schema))
    result = compile_schema_ir({"properties": {"p": schema}})
    assert any("'phone-number' at #/properties/p/format" in w for w in result.notes["unknown_keywords"])


def test_known_format_stays_an_assertion() -> None:
    schema = {"type": "string", "format": "date"}
    dfa = dfa_of(schema)
    assert dfa.accepts(b'"2024-01-02"') and not dfa.accepts(b'"x y"')
    agrees_with_jsonschema(schema, dfa)


# --------------------------------------------------------------------------- OpenAPI


@pytest.mark.parametrize("keyword", sorted(OPENAPI))
def test_openapi_keyword_is_warned_and_compiled_as_json_schema(keyword: str) -> None:
    values = {
        "nullable": True,
        "discriminator": {"propertyName": "kind"},
        "xml": {"name": "a"},
        "externalDocs": {"url": "https://example.com"},
        "example": "abc",
    }
    schema = {"type": "object", "properties": {"a": {"type": "string", keyword: values[keyword]}}}
    result = compile_schema_ir(schema)
    openapi = result.notes["openapi_keywords"]
    assert len(openapi) == 1 and f"'{keyword}' at #/properties/a" in openapi[0]
    assert result.notes["unknown_keywords"] == []
    agrees_with_jsonschema(schema, compile_ir(result.node))
    # Known keywords of another dialect: --refuse-unknown leaves them warnings.
    compile_schema_ir(schema, refuse_unknown=True)


def test_nullable_false_is_silent_and_nullable_true_says_what_it_means() -> None:
    assert compile_schema_ir({"type": "string", "nullable": False}).warnings == []
    (warning,) = compile_schema_ir({"type": "string", "nullable": True}).warnings
    assert "null" in warning and "type" in warning
    assert not dfa_of({"type": "string", "nullable": True}).accepts(b"null")


def test_read_only_warns_only_in_an_openapi_document() -> None:
    plain = {
        "type": "object",
        "properties": {"id": {"type": "integer", "readOnly": True}},
        "required": ["id"],
    }
    assert compile_schema_ir(plain).warnings == []
    openapi = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "readOnly": True},
            "name": {"type": "string", "nullable": True},
        },
        "required": ["id"],
    }
    warned = compile_schema_ir(openapi).notes["openapi_keywords"]
    assert any("'readOnly' at #/properties/id" in w and "required" in w for w in warned)
    assert not any("name" in w and "readOnly" in w for w in warned)


# --------------------------------------------------------------------------- lenient


# refused: the language of the items is infinite
UNIQUE_STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


def test_lenient_outside_a_complement_makes_the_language_wider() -> None:
    schema = {"type": "object", "properties": {"a": UNIQUE_STRINGS}}
    with pytest.raises(UnsupportedError, match=r"uniqueItems.*#/properties/a"):
        compile_schema_ir(schema)
    result = compile_schema_ir(schema, lenient=True)
    assert result.notes["language"].startswith("wider")
    assert any("uniqueItems" in w for w in result.notes["ignored_keywords"])
    dfa = compile_ir(result.node)
    assert dfa.accepts(b'{"a":["x","x"]}')  # jsonschema refuses it: wider, as the note says
    assert not Draft202012Validator(schema).is_valid({"a": ["x", "x"]})


def test_lenient_inside_not_makes_the_language_narrower() -> None:
    schema = {"not": UNIQUE_STRINGS}
    result = compile_schema_ir(schema, lenient=True)
    assert result.notes["language"].startswith("narrower")
    dfa = compile_ir(result.node)
    assert not dfa.accepts(b"[]")  # valid for the operand, so invalid here, as jsonschema says
    assert not dfa.accepts(b'["x","x"]')  # jsonschema accepts it: narrower, as the note says
    assert Draft202012Validator(schema).is_valid(["x", "x"])


def test_lenient_effect_through_a_cached_reference_in_both_places() -> None:
    schema = {
        "$defs": {"t": UNIQUE_STRINGS},
        "anyOf": [{"$ref": "#/$defs/t"}, {"not": {"$ref": "#/$defs/t"}}],
    }
    result = compile_schema_ir(schema, lenient=True)
    assert result.notes["language"].startswith("not the schema's")


def test_every_policy_list_is_in_the_notes_even_when_empty() -> None:
    notes = compile_schema_ir({"type": "integer"}).notes
    for key in ("ignored_keywords", "unknown_keywords", "openapi_keywords", "disabled_keywords"):
        assert notes[key] == []


def test_unknown_keyword_combinations_agree_with_jsonschema() -> None:
    """Unknown keywords scattered over every kind of subschema leave the language of the same
    schema without them."""
    bases: list[dict[str, Any]] = [
        {"type": "integer", "minimum": 1},
        {"type": "array", "items": {"type": "integer"}},
        {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    ]
    for base, extra in itertools.product(bases, ({"foo": 1}, {"$foo": "x"}, {"somethingElse": {}})):
        schema = {**base, **extra}
        assert same_language(schema, base), schema
        agrees_with_jsonschema(schema, dfa_of(schema))


# --------------------------------------------------------------------------- oneOf

ONE_OF_CASES: list[dict[str, Any]] = [
    # Disjoint only by their languages (same type, patterns that cannot both match).
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}]},
    # Objects of a fixed key order told apart by a required property whose languages are disjoint.
    {
        "oneOf": [
            {
                "type": "object",
                "properties": {"kind": {"type": "string", "pattern": "^c"}, "a": {"type": "integer"}},
                "required": ["kind"],
            },
            {
                "type": "object",
                "properties": {"kind": {"type": "string", "pattern": "^d"}, "a": {"type": "string"}},
                "required": ["kind"],
            },
        ]
    },
    # Overlapping branches: exactly one, by a product.
    {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "integer", "maximum": 2}]},
    {"oneOf": [{"type": "array", "maxItems": 1}, {"type": "array", "items": {"type": "integer"}}]},
    # Disjoint arrays (by their element languages) that nest values up to the depth bound.
    {
        "oneOf": [
            {"type": "array", "items": {"type": "integer"}, "minItems": 1},
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
        ]
    },
]


@pytest.mark.parametrize("schema", ONE_OF_CASES)
def test_one_of_agrees_with_jsonschema(schema: dict[str, Any]) -> None:
    result = compile_schema_ir(schema)
    assert not result.notes["ignored_keywords"]
    agrees_with_jsonschema(schema, compile_ir(result.node))


def test_one_of_disjoint_by_a_discriminating_property_compiles_where_it_was_refused() -> None:
    schema = ONE_OF_CASES[1]
    dfa = dfa_of(schema)
    assert dfa.accepts(b'{"kind":"cat","a":1}') and dfa.accepts(b'{"kind":"dog","a":"x"}')
    assert not dfa.accepts(b'{"kind":"cat","a":"x"}')


def test_one_of_overlapping_objects_of_fixed_order_is_an_exact_product() -> None:
    """Overlapping branches with a fixed key order compile as "exactly one" in one key order
    (``tests/test_schema_one_of_order.py`` has the differential tests)."""
    branch = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    dfa = compile_ir(compile_schema_ir({"oneOf": [branch, {**branch, "required": ["a"]}]}).node)
    assert dfa.accepts(b"{}") and dfa.accepts(b'{"b":1}')
    assert not dfa.accepts(b'{"a":1}') and not dfa.accepts(b'{"a":1,"b":2}')  # valid for both


# --------------------------------------------------------------------------- uniqueItems

UNIQUE_CASES: list[dict[str, Any]] = [
    {"type": "array", "items": {"enum": [1, 2, "a"]}, "uniqueItems": True},
    {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
    {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 3},
        "uniqueItems": True,
        "maxItems": 3,
    },
    {"type": "array", "items": {"enum": [[1, 2], [1], None, {"a": 1}]}, "uniqueItems": True},
    {
        "type": "array",
        "prefixItems": [{"type": "boolean"}, {"const": 1}],
        "items": {"enum": [1, 2]},
        "uniqueItems": True,
    },
    {
        "type": "array",
        "items": {"type": "array", "prefixItems": [{"type": "boolean"}], "items": False},
        "uniqueItems": True,
    },
    {"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": True, "contains": {"const": 2}},
]
UNIQUE_SAMPLES: list[Any] = [
    list(t)
    for n in range(5)
    for t in itertools.product([1, 2, 3, 0, "a", True, False, None, [1], [1, 2], [True], {"a": 1}], repeat=n)
    if n < 4 or len(set(map(repr, t))) >= 3
]


@pytest.mark.parametrize("schema", UNIQUE_CASES)
def test_unique_items_agrees_with_jsonschema(schema: dict[str, Any]) -> None:
    result = compile_schema_ir(schema)
    assert result.warnings == []
    agrees_with_jsonschema(schema, compile_ir(result.node), UNIQUE_SAMPLES)


def test_unique_items_over_an_infinite_language_is_refused_naming_why() -> None:
    schema = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    with pytest.raises(UnsupportedError, match=r"uniqueItems.*infinite"):
        compile_schema_ir(schema)
    result = compile_schema_ir(schema, lenient=True)
    assert result.notes["language"].startswith("wider")


def test_unique_items_past_the_state_bound_is_refused_naming_it() -> None:
    from moonmaskc.limits import Limits

    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 12}, "uniqueItems": True}
    with pytest.raises(UnsupportedError, match="max_states"):
        compile_schema_ir(schema, limits=Limits(max_states=1000))


def test_unique_items_compares_values_as_json_schema_does() -> None:
    """Serializations are grouped by value: ``1`` and ``1.0`` are one value, ``true`` and ``1`` two,
    objects equal whatever their key order."""
    from decimal import Decimal

    from moonmaskc.frontends.schema.unique_items import value_key

    assert value_key(Decimal("1")) == value_key(Decimal("1.0")) == value_key(Decimal("1E0"))
    assert value_key(True) != value_key(Decimal(1)) and value_key(None) != value_key(False)
    assert value_key({"a": Decimal(1), "b": [True]}) == value_key({"b": [True], "a": Decimal("1.00")})
    assert value_key([Decimal(1), "a"]) != value_key(["a", Decimal(1)])
