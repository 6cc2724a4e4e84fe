"""``unevaluatedProperties`` / ``unevaluatedItems`` compile exactly: for hand-written schemas of every
form (beside properties / patternProperties / additionalProperties / prefixItems / items /
contains, under allOf / anyOf / oneOf / $ref / if-then-else / dependentSchemas, nested), the
compiled DFA accepts the canonical serialization of a value (compact, keys in the compiler's
declared order) if and only if ``jsonschema`` (Draft 2020-12 or 2019-09) says the value is valid,
and no other key order of an invalid value is accepted either. Hypothesis draws the values; fixed
pools of small objects and arrays make sure both outcomes occur. The refusals name the keyword,
its JSON pointer and why; ``lenient`` drops the keyword with a warning.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft201909Validator, Draft202012Validator, FormatChecker

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.canonical import serialize
from moonmaskc.frontends.schema.unevaluated import MAX_CASES
from tests.oracles.json_values import nesting_depth

D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"
STR = {"type": "string"}
INT = {"type": "integer"}

SCHEMAS: dict[str, dict[str, Any]] = {
    # ---------------------------------------------------------------- unevaluatedProperties
    "adjacent_properties": {"properties": {"foo": STR, "bar": INT}, "unevaluatedProperties": False},
    "adjacent_patterns_schema": {
        "properties": {"foo": STR},
        "patternProperties": {"^x": INT},
        "unevaluatedProperties": {"type": ["boolean", "null"]},
    },
    "adjacent_additional": {
        "properties": {"foo": STR},
        "additionalProperties": INT,
        "unevaluatedProperties": False,
    },
    "all_of_properties": {
        "type": "object",
        "properties": {"foo": STR},
        "allOf": [
            {"properties": {"bar": INT}},
            {"properties": {"baz": {"type": "null"}}, "required": ["baz"]},
        ],
        "unevaluatedProperties": False,
    },
    "all_of_patterns": {
        "properties": {"foo": STR},
        "allOf": [{"patternProperties": {"^x": INT}}, {"patternProperties": {"a$": {"minimum": 2}}}],
        "unevaluatedProperties": {"type": "null"},
    },
    "nested_unevaluated_inner_true": {
        "properties": {"foo": STR},
        "allOf": [{"unevaluatedProperties": True}],
        "unevaluatedProperties": {"type": "string", "maxLength": 1},
    },
    "nested_unevaluated_inner_false": {
        "allOf": [{"properties": {"foo": STR}, "unevaluatedProperties": False}],
        "properties": {"bar": INT},
        "unevaluatedProperties": False,
    },
    "cousins": {"allOf": [{"properties": {"foo": True}}, {"unevaluatedProperties": False}]},
    "any_of_subsets": {
        "properties": {"foo": STR},
        "anyOf": [
            {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]},
            {"properties": {"baz": {"const": "baz"}}, "required": ["baz"]},
            {"properties": {"a": INT}, "required": ["a"]},
        ],
        "unevaluatedProperties": False,
    },
    "any_of_not_contributing": {
        "anyOf": [{"type": "object", "minProperties": 2}, {"properties": {"bar": INT}, "required": ["bar"]}],
        "unevaluatedProperties": {"type": "boolean"},
    },
    "any_of_uniform": {
        "anyOf": [{"properties": {"bar": INT}}, {"properties": {"bar": STR}, "required": ["bar"]}],
        "unevaluatedProperties": False,
    },
    "one_of_discriminated": {
        "type": "object",
        "oneOf": [
            {"properties": {"kind": {"const": "a"}, "a": INT}, "required": ["kind"]},
            {"properties": {"kind": {"const": "b"}, "b": STR}, "required": ["kind"]},
        ],
        "unevaluatedProperties": False,
    },
    "one_of_overlapping": {
        "properties": {"foo": STR},
        "oneOf": [
            {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]},
            {"properties": {"baz": {"const": "baz"}}, "required": ["baz"]},
        ],
        "unevaluatedProperties": False,
    },
    "not_evaluates_nothing": {
        "properties": {"foo": STR},
        "not": {"not": {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]}},
        "unevaluatedProperties": False,
    },
    "if_then_else": {
        "if": {"properties": {"foo": {"const": "then"}}, "required": ["foo"]},
        "then": {"properties": {"bar": STR}, "required": ["bar"]},
        "else": {"properties": {"baz": STR}, "required": ["baz"]},
        "unevaluatedProperties": False,
    },
    "if_alone": {"if": {"patternProperties": {"foo": STR}}, "unevaluatedProperties": False},
    "dependent_schemas": {
        "properties": {"foo": STR},
        "dependentSchemas": {"foo": {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]}},
        "unevaluatedProperties": False,
    },
    "ref_with_siblings": {
        "$defs": {"bar": {"properties": {"bar": STR}}},
        "$ref": "#/$defs/bar",
        "properties": {"foo": STR},
        "unevaluatedProperties": False,
    },
    "ref_inside_all_of_one_of": {
        "$defs": {"one": {"properties": {"a": True}}, "two": {"required": ["x"], "properties": {"x": True}}},
        "allOf": [
            {"$ref": "#/$defs/one"},
            {"properties": {"b": True}},
            {"oneOf": [{"$ref": "#/$defs/two"}, {"required": ["bar"], "properties": {"bar": True}}]},
        ],
        "unevaluatedProperties": False,
    },
    "ref_to_a_sealed_schema": {
        "$defs": {"closed": {"properties": {"foo": STR}, "unevaluatedProperties": False}},
        "allOf": [{"$ref": "#/$defs/closed"}, {"properties": {"bar": True}}],
    },
    "recursive_tree": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"a": INT, "foo": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                "unevaluatedProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    },
    "instance_location": {
        "properties": {"foo": {"properties": {"bar": STR}, "unevaluatedProperties": False}},
        "anyOf": [{"properties": {"foo": {"properties": {"baz": STR}}}}],
    },
    "all_of_patterns_without_unevaluated": {
        "allOf": [
            {"properties": {"a": INT, "foo": {}}},
            {"patternProperties": {"^[ab]": {"minimum": 1}}, "properties": {"bar": STR}},
        ],
        "additionalProperties": {"type": "null"},
    },
    # ---------------------------------------------------------------- unevaluatedItems
    "tuple": {"prefixItems": [STR, INT], "unevaluatedItems": False},
    "uniform_items": {"items": STR, "unevaluatedItems": False},
    "items_schema": {"prefixItems": [INT], "unevaluatedItems": {"type": "string", "maxLength": 1}},
    "all_of_tuple": {
        "prefixItems": [STR],
        "allOf": [{"prefixItems": [True, INT]}, {"prefixItems": [True, True, {"type": "null"}]}],
        "unevaluatedItems": False,
    },
    "any_of_tuple": {
        "prefixItems": [{"const": "foo"}],
        "anyOf": [{"prefixItems": [True, {"const": "bar"}]}, {"prefixItems": [True, True, {"const": "baz"}]}],
        "unevaluatedItems": False,
    },
    "one_of_tuple": {
        "prefixItems": [{"const": "foo"}],
        "oneOf": [{"prefixItems": [True, {"const": "bar"}]}, {"prefixItems": [True, {"const": "baz"}]}],
        "unevaluatedItems": False,
    },
    "if_then_else_tuple": {
        "prefixItems": [{"const": "foo"}],
        "if": {"prefixItems": [True, {"const": "bar"}]},
        "then": {"prefixItems": [True, True, {"const": "then"}]},
        "else": {"prefixItems": [True, True, True, {"const": "else"}]},
        "unevaluatedItems": False,
    },
    "nested_items": {"unevaluatedItems": {"type": "boolean"}, "anyOf": [{"items": STR}, True]},
    "contains": {"prefixItems": [True], "contains": STR, "unevaluatedItems": False},
    "contains_nested": {
        "allOf": [{"contains": {"multipleOf": 2}}, {"contains": {"multipleOf": 3}}],
        "unevaluatedItems": {"multipleOf": 5},
    },
    "contains_min_zero": {"contains": STR, "minContains": 0, "unevaluatedItems": {"type": "null"}},
    "contains_in_if": {
        "if": {"contains": {"const": "a"}},
        "then": {"if": {"contains": {"const": "b"}}, "then": {"if": {"contains": {"const": "c"}}}},
        "unevaluatedItems": False,
    },
    "ref_items": {
        "$defs": {"pair": {"prefixItems": [True, STR]}},
        "$ref": "#/$defs/pair",
        "prefixItems": [INT],
        "unevaluatedItems": False,
    },
    "both_keywords": {
        "properties": {"foo": {"type": "array"}},
        "prefixItems": [INT],
        "anyOf": [{"properties": {"bar": INT}}, {"prefixItems": [True, STR]}],
        "unevaluatedProperties": False,
        "unevaluatedItems": {"type": "null"},
    },
    "inner_items_under_outer_properties": {
        "properties": {"foo": STR},
        "allOf": [{"properties": {"bar": {}}, "allOf": [{"prefixItems": [INT]}], "unevaluatedItems": False}],
        "unevaluatedProperties": False,
    },
    # ---------------------------------------------------------------- draft 2019-09
    "d2019_properties": {
        "$schema": D2019,
        "properties": {"foo": STR},
        "anyOf": [{"properties": {"bar": INT}, "required": ["bar"]}, {"properties": {"baz": True}}],
        "unevaluatedProperties": False,
    },
    "d2019_items_array": {
        "$schema": D2019,
        "items": [STR],
        "allOf": [{"items": [True, INT]}],
        "unevaluatedItems": {"type": "null"},
    },
    "d2019_additional_items": {
        "$schema": D2019,
        "anyOf": [{"items": [STR], "additionalItems": INT}, {"items": [INT]}],
        "unevaluatedItems": False,
    },
    "d2019_items_schema": {"$schema": D2019, "allOf": [{"items": INT}], "unevaluatedItems": False},
}
# Each schema as a draft 2020-12 document (the 2019-09 ones declare their draft).
for _schema in SCHEMAS.values():
    _schema.setdefault("$schema", D2020)

KEYS = ["foo", "bar", "baz", "kind", "a", "b", "x", "xa"]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 12),
    st.sampled_from(["", "a", "b", "c", "ab", "foo", "bar", "baz", "then", "else", "xyz"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=6,
)
_objects = st.dictionaries(st.sampled_from(KEYS), _values, max_size=4)
_arrays = st.lists(_values, max_size=5)

_SCALAR_POOL: list[Any] = [None, True, 0, 1, 2, 3, 6, 15, "a", "b", "c", "foo", "bar", "baz", "then", "else"]


def validator_of(schema: dict[str, Any]) -> Any:
    cls = Draft201909Validator if "2019-09" in schema["$schema"] else Draft202012Validator
    return cls(schema, format_checker=FormatChecker())


_compiled: dict[str, DFA] = {}


def dfa_of(name: str) -> DFA:
    if name not in _compiled:
        _compiled[name] = compile_ir(compile_schema_ir(SCHEMAS[name]).node)
    return _compiled[name]


# ------------------------------------------------------------------ the compiler's key order


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _in_place(schema: Any, root: dict[str, Any], depth: int = 0) -> list[dict[str, Any]]:
    """The schema and its in-place subschemas, in the order the compiler merges them: a $ref
    target before the schema's own keywords, then allOf, anyOf, oneOf, if / then / else and the
    dependent schemas."""
    if not isinstance(schema, dict) or depth > 6:
        return []
    out: list[dict[str, Any]] = []
    if isinstance(schema.get("$ref"), str):
        out += _in_place(_resolve(schema["$ref"], root), root, depth + 1)
    out.append(schema)
    for keyword in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(keyword, []):
            out += _in_place(branch, root, depth + 1)
    for keyword in ("if", "then", "else"):
        out += _in_place(schema.get(keyword), root, depth + 1)
    for dependent in schema.get("dependentSchemas", {}).values():
        out += _in_place(dependent, root, depth + 1)
    return out


def canonical(value: Any, schema: Any, root: dict[str, Any]) -> Any:
    """``value`` with its keys in the compiler's declared order: the properties of the schema and
    its in-place subschemas in merge order, then required keys, then the others as given."""
    parts = _in_place(schema, root)
    if isinstance(value, dict):
        declared: list[str] = []
        for part in parts:
            declared += [k for k in part.get("properties", {}) if k not in declared]
        for part in parts:
            declared += [k for k in part.get("required", []) if k not in declared]
        keys = [k for k in declared if k in value] + [k for k in value if k not in declared]
        return {k: canonical(value[k], _member_schema(parts, k), root) for k in keys}
    if isinstance(value, list):
        return [canonical(v, _item_schema(parts, i), root) for i, v in enumerate(value)]
    return value


def _member_schema(parts: list[dict[str, Any]], key: str) -> Any:
    for part in parts:
        if key in part.get("properties", {}):
            return part["properties"][key]
    return None


def _item_schema(parts: list[dict[str, Any]], index: int) -> Any:
    for part in parts:
        prefix = part.get("prefixItems", part["items"] if isinstance(part.get("items"), list) else [])
        if index < len(prefix):
            return prefix[index]
    for part in parts:
        if isinstance(part.get("items"), dict):
            return part["items"]
    return None


def check(name: str, value: Any) -> bool:
    """The canonical text is accepted exactly when the value is valid (a valid value nested deeper
    than ``--max-depth``, 3, may be cut by a complement's bound: it must then be rejected); no
    other key order of an invalid value is accepted. Returns the verdict."""
    schema = SCHEMAS[name]
    valid = validator_of(schema).is_valid(value)
    text = serialize(canonical(value, schema, schema))
    accepted = dfa_of(name).accepts(text.encode("utf-8"))
    assert accepted == valid or (valid and nesting_depth(value) > 3), (name, text, valid)
    if not valid and isinstance(value, dict) and 1 < len(value) <= 4:
        for keys in itertools.permutations(value):
            reordered = serialize({k: value[k] for k in keys})
            assert not dfa_of(name).accepts(reordered.encode("utf-8")), (name, reordered)
    return valid


# ------------------------------------------------------------------ differential tests


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(_objects, _arrays, _values))
def test_accepts_exactly_the_valid_values(name: str, value: Any) -> None:
    check(name, value)


def _pool_values(name: str) -> list[Any]:
    """Small objects over the keys and small arrays over the scalar pool, with the values each
    schema's branches look for."""
    schema = SCHEMAS[name]
    values: list[Any] = [*_SCALAR_POOL, {}, []]
    if any(k in json.dumps(schema) for k in ("Properties", "properties", "dependent")):
        member_values: list[Any] = [
            None,
            1,
            3,
            "a",
            "b",
            "foo",
            "bar",
            "then",
            [],
            {"bar": "x"},
            {"baz": "x"},
            ["x"],
        ]
        for size in (1, 2):
            for keys in itertools.combinations(KEYS, size):
                for members in itertools.product(member_values, repeat=size):
                    values.append(dict(zip(keys, members, strict=True)))
        for keys in itertools.combinations(["foo", "bar", "baz", "a", "kind", "x"], 3):
            for members in itertools.product(["foo", "then", "bar", 1], ["bar", 3, "b"], ["baz", None, "a"]):
                values.append(dict(zip(keys, members, strict=True)))
    if any(k in json.dumps(schema) for k in ("Items", "items", "contains")):
        elements: list[Any] = [None, True, 1, 2, 3, 6, 15, "a", "b", "c", "foo", "bar", "baz", "then", "else"]
        for size in range(4):
            values += [list(e) for e in itertools.product(elements, repeat=size)]
    return values


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_small_values_agree_and_both_outcomes_occur(name: str) -> None:
    outcomes = {True: 0, False: 0}
    for value in _pool_values(name):
        outcomes[check(name, value)] += 1
    assert outcomes[True] >= 2 and outcomes[False] >= 5, outcomes


# ------------------------------------------------------------------ no-ops, spec readings


@pytest.mark.parametrize("noop", [True, {}, {"description": "anything"}])
def test_true_and_empty_are_no_ops(noop: Any) -> None:
    plain = {"properties": {"a": INT}, "prefixItems": [STR]}
    with_noop = {**plain, "unevaluatedProperties": noop, "unevaluatedItems": noop}
    for text in (b'{"a":1,"b":[]}', b'{"a":"x"}', b'["x",1,{}]', b"[1]", b"null"):
        assert compile_ir(compile_schema_ir(plain).node).accepts(text) == compile_ir(
            compile_schema_ir(with_noop).node
        ).accepts(text)


def test_draft_2019_contains_does_not_evaluate() -> None:
    """Draft 2019-09 lists only items / additionalItems / unevaluatedItems as evaluating items
    (2019-09 core 9.3.1.3); jsonschema's 2019-09 validator also counts ``contains``. The compiled
    language follows the draft, the stricter reading, so it never accepts what either rejects."""
    schema = {"$schema": D2019, "items": [True], "contains": STR, "unevaluatedItems": False}
    dfa = compile_ir(compile_schema_ir(schema).node)
    assert dfa.accepts(b'["a"]') and dfa.accepts(b"[1]") is False
    assert not dfa.accepts(b'[1,"a"]')  # index 1 is not evaluated in 2019-09
    assert Draft201909Validator(schema).is_valid([1, "a"])  # jsonschema's wider reading
    same_in_2020 = {**schema, "$schema": D2020, "prefixItems": [True]}
    del same_in_2020["items"]
    assert compile_ir(compile_schema_ir(same_in_2020).node).accepts(b'[1,"a"]')


def test_draft_2019_additional_properties_schema_evaluates_every_key() -> None:
    """Draft 2019-09: an ``additionalProperties`` schema that holds evaluates every key it applies
    to (9.3.2.3). jsonschema's 2019-09 code marks only the keys named like the schema's own
    keywords, so it rejects the valid ``{"x": 1}``; the compiled language follows the draft."""
    schema = {"$schema": D2019, "allOf": [{"additionalProperties": INT}], "unevaluatedProperties": False}
    dfa = compile_ir(compile_schema_ir(schema).node)
    assert dfa.accepts(b'{"x":1}') and not dfa.accepts(b'{"x":"a"}')
    assert Draft202012Validator({**schema, "$schema": D2020}).is_valid({"x": 1})


def test_objects_keep_the_declared_order() -> None:
    dfa = dfa_of("all_of_properties")
    assert dfa.accepts(b'{"foo":"a","bar":1,"baz":null}')
    assert not dfa.accepts(b'{"bar":1,"foo":"a","baz":null}')


# ------------------------------------------------------------------ refusals


def _many_branches(count: int) -> dict[str, Any]:
    return {
        "anyOf": [{"properties": {f"p{i}": INT}, "required": [f"p{i}"]} for i in range(count)],
        "unevaluatedProperties": False,
    }


def test_too_many_cases_are_refused_naming_keyword_pointer_and_why() -> None:
    schema = {"type": "object", "properties": {"inner": _many_branches(7)}}
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    message = str(caught.value)
    assert "'unevaluatedProperties' at #/properties/inner:" in message
    assert "anyOf at #/properties/inner" in message and str(MAX_CASES) in message
    result = compile_schema_ir(schema, lenient=True)
    assert any("'unevaluatedProperties' at #/properties/inner" in w for w in result.notes["ignored_keywords"])
    assert result.notes["language"].startswith("wider")
    dfa = compile_ir(result.node)
    assert dfa.accepts(b'{"inner":{"p0":1,"q":true}}')  # wider: the keyword is gone
    compile_schema_ir(_many_branches(6))  # 63 cases: compiled


def test_dynamic_references_are_refused() -> None:
    schema = {
        "$schema": D2020,
        "$defs": {"x": {"$dynamicAnchor": "x", "properties": {"a": True}}},
        "allOf": [{"$dynamicRef": "#x"}],
        "unevaluatedProperties": False,
    }
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert "'unevaluatedProperties' at #:" in str(caught.value)
    assert "dynamic reference at #/allOf/0/$dynamicRef" in str(caught.value)
    warnings = compile_schema_ir(schema, lenient=True).notes["ignored_keywords"]
    assert any("'unevaluatedProperties' at #" in w for w in warnings)
    assert any("'$dynamicRef' at #/allOf/0" in w for w in warnings)

    recursive = {
        "$schema": D2019,
        "items": [True],
        "allOf": [{"$recursiveRef": "#"}],
        "unevaluatedItems": False,
    }
    with pytest.raises(UnsupportedError, match=r"'unevaluatedItems' at #: .*recursiveRef"):
        compile_schema_ir(recursive)


def test_a_schema_applied_from_another_resource_is_refused() -> None:
    """The filter walks the unevaluated schema where the keyword stands: a ``$id`` inside it would
    move the base URI its references resolve against."""
    schema = {
        "$schema": D2020,
        "$id": "http://example.com/root.json",
        "properties": {"a": True},
        "unevaluatedProperties": {
            "$id": "http://example.com/u.json",
            "$defs": {"x": INT},
            "$ref": "#/$defs/x",
        },
    }
    with pytest.raises(UnsupportedError, match=r"'unevaluatedProperties' at #: .*base URI"):
        compile_schema_ir(schema)


def test_in_draft_7_documents_the_keyword_is_an_annotation() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "unevaluatedProperties": False}
    result = compile_schema_ir(schema)
    assert compile_ir(result.node).accepts(b'{"a":1}')  # draft-07 has no such keyword, as jsonschema says
    assert result.notes["other_draft_keywords"] and "#/unevaluatedProperties" in result.warnings[0]
    with pytest.raises(
        UnsupportedError, match=r"'unevaluatedProperties' at #/unevaluatedProperties: .*draft-07"
    ):
        compile_schema_ir(schema, refuse_unknown=True)


def test_inside_not_the_keyword_is_complemented_exactly() -> None:
    schema = {"not": {"type": "object", "properties": {"a": INT}, "unevaluatedProperties": False}}
    dfa = compile_ir(compile_schema_ir(schema).node)
    validator = Draft202012Validator(schema)
    for value in ({}, {"a": 1}, {"a": "x"}, {"b": 1}, {"a": 1, "b": 1}, [], 3):
        assert dfa.accepts(serialize(value).encode()) == validator.is_valid(value), value
