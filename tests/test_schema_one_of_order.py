"""``oneOf`` over branches that overlap and declare their keys in different orders: compiled with one
key order for every object of the part (``frontends/schema/key_order.py``) and an "exactly one"
product, checked against ``jsonschema`` on values written in that order (keys known at each level
by their first declaration across the branches, other keys after them); values written in another
order of their known keys are refused; and the limits of the method are clear refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.key_order import MAX_KEYS
from moonmaskc.limits import DEFAULT_MAX_DEPTH

# (schema, the key order of each nesting level below the oneOf)
CASES: dict[str, tuple[dict[str, Any], list[list[str]]]] = {
    "required only, properties in the parent": (
        {
            "type": "object",
            "properties": {
                "length": {"type": "number"},
                "width": {"type": "number"},
                "radius": {"type": "number"},
            },
            "oneOf": [{"required": ["length", "width"]}, {"required": ["radius"]}],
        },
        [["length", "width", "radius"]],
    ),
    "branches with their own properties": (
        {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["id", "win"],
                    "properties": {"id": {"type": "string"}, "note": {"type": "integer"}},
                },
                {
                    "type": "object",
                    "required": ["id", "lose"],
                    "properties": {"lose": {}, "id": {"type": "string"}},
                },
            ]
        },
        [["id", "note", "win", "lose"]],
    ),
    "closed objects and an open one": (
        {
            "oneOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
                {
                    "type": "object",
                    "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
                    "additionalProperties": False,
                    "minProperties": 1,
                },
            ]
        },
        [["a", "b"]],
    ),
    "nested objects and a reference": (
        {
            "$defs": {
                "point": {
                    "type": "object",
                    "properties": {"y": {"type": "integer"}, "x": {"type": "integer"}},
                }
            },
            "oneOf": [
                {"type": "object", "properties": {"p": {"$ref": "#/$defs/point"}, "q": {"type": "boolean"}}},
                {
                    "type": "object",
                    "properties": {
                        "q": {"type": "boolean"},
                        "p": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                    },
                    "required": ["p"],
                },
            ],
        },
        [["p", "q"], ["y", "x"]],
    ),
    "an object constant beside an object schema": (
        {
            "oneOf": [
                {"const": {"b": 1, "a": 2}},
                {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
            ]
        },
        [["b", "a"]],
    ),
    "any value in one branch, an object in the other": (
        {
            "oneOf": [
                {"type": "object", "properties": {"p": {}, "q": {"type": "integer"}}},
                {
                    "type": "object",
                    "properties": {
                        "q": {"type": "integer"},
                        "p": {
                            "type": "object",
                            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                        },
                    },
                    "required": ["p"],
                },
            ]
        },
        [["p", "q"], ["x", "y"]],
    ),
    "pattern properties and arrays of objects": (
        {
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"k": {"type": "string"}},
                        "patternProperties": {"^z": {"type": "integer"}},
                    },
                    {
                        "type": "object",
                        "properties": {"m": {"type": "integer"}, "k": {"type": "string"}},
                        "required": ["m"],
                    },
                ]
            },
        },
        [[], ["k", "m"]],
    ),
}

VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(["", "s", "za"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["a", "b", "id", "win", "lose", "note", "p", "q", "x", "y", "k", "m", "z1", "w"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=8,
)


def _dictionaries(levels: list[list[str]]) -> st.SearchStrategy[Any]:
    """Values shaped like the schema's: objects with the known keys of each level and others."""
    known = sorted({key for level in levels for key in level} | {"zz", "z1", "w"})
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.sampled_from(["", "s"]))
    objects = st.recursive(
        leaves, lambda inner: st.dictionaries(st.sampled_from(known), inner, max_size=4), max_leaves=6
    )
    return st.one_of(objects, st.lists(objects, max_size=3), VALUES)


def written(value: Any, levels: list[list[str]], level: int = 0, backwards: bool = False) -> str:
    """``value`` written in the part's one key order: known keys of its level by rank, then the
    others in their own order (``backwards``: the known keys in the reverse order)."""
    if isinstance(value, dict):
        ranks = {key: i for i, key in enumerate(levels[level] if level < len(levels) else [])}
        keys = sorted((k for k in value if k in ranks), key=ranks.__getitem__, reverse=backwards)
        keys += [k for k in value if k not in ranks]
        inner = ",".join(f"{json.dumps(k)}:{written(value[k], levels, level + 1, backwards)}" for k in keys)
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(written(item, levels, level + 1, backwards) for item in value) + "]"
    return json.dumps(value, separators=(",", ":"))


_DFAS: dict[str, DFA] = {}


def _dfa(name: str) -> DFA:
    if name not in _DFAS:
        _DFAS[name] = compile_ir(compile_schema_ir(CASES[name][0]).node)
    return _DFAS[name]


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_exactly_one_in_one_key_order_agrees_with_jsonschema(name: str, data: st.DataObject) -> None:
    """Never an invalid value; every valid one within the product's depth bound (``--max-depth``
    levels of nesting: ``{"a":[[[]]]}``, four deep, is cut, as ``notes["bounded_products"]`` says;
    random draws found it)."""
    schema, levels = CASES[name]
    value = data.draw(_dictionaries(levels))
    text = written(value, levels)
    accepted = _dfa(name).accepts(text.encode())
    valid = Draft202012Validator(schema).is_valid(value)
    assert valid or not accepted, text
    if _nesting(value) <= DEFAULT_MAX_DEPTH:
        assert accepted == valid, text


def _nesting(value: Any) -> int:
    """How many arrays and objects nest in ``value`` (0 for a scalar)."""
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    return 0


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_another_order_of_the_known_keys_is_refused(name: str, data: st.DataObject) -> None:
    """Every value of the part, ``{}`` subschemas included, is written in the one order: a value
    written with its known keys in another order is refused, valid or not."""
    _, levels = CASES[name]
    value = data.draw(_dictionaries(levels))
    backwards = written(value, levels, backwards=True)
    if backwards != written(value, levels):
        assert not _dfa(name).accepts(backwards.encode()), backwards


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_examples_of_each_case_are_decided_like_jsonschema(name: str) -> None:
    """Hand-picked values that are valid for one branch, for two, and for none."""
    schema, levels = CASES[name]
    picks: list[Any] = [
        {}, {"a": 1}, {"b": 1, "a": 2}, {"a": 1, "b": 2, "c": 3}, {"length": 1, "width": 2},
        {"radius": 1}, {"length": 1, "width": 2, "radius": 3}, {"id": "i", "win": 1}, {"id": "i", "lose": 0},
        {"id": "i", "win": 1, "lose": 0}, {"id": "i", "note": 1, "win": 1}, {"p": {"x": 1}}, {"p": {"y": 1}},
        {"q": True, "p": {"x": 1, "y": 2}}, [{"k": "s"}], [{"k": "s", "m": 1}], [{"m": 1, "z1": 1}],
    ]  # fmt: skip
    validator = Draft202012Validator(schema)
    for value in picks:
        text = written(value, levels)
        assert _dfa(name).accepts(text.encode()) == validator.is_valid(value), text


def test_only_the_one_order_of_the_known_keys_is_accepted() -> None:
    dfa = _dfa("required only, properties in the parent")
    assert dfa.accepts(b'{"length":1,"width":2}')
    assert not dfa.accepts(b'{"width":2,"length":1}')
    assert dfa.accepts(b'{"radius":1,"other":2}')
    assert not dfa.accepts(b'{"other":2,"radius":1}')


def test_disjoint_branches_keep_their_declared_order() -> None:
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"t": {"const": "a"}, "x": {}}, "required": ["t"]},
            {"type": "object", "properties": {"x": {}, "t": {"const": "b"}}, "required": ["t"]},
        ]
    }
    dfa = compile_ir(compile_schema_ir(schema).node)
    assert dfa.accepts(b'{"t":"a","x":1}') and dfa.accepts(b'{"x":1,"t":"b"}')


def test_too_many_keys_for_one_order_is_refused_and_dropped_under_lenient() -> None:
    names = [f"k{i}" for i in range(MAX_KEYS + 1)]
    schema = {
        "oneOf": [
            {"type": "object", "properties": {name: {"type": "integer"} for name in names}},
            {"type": "object", "properties": {name: {"type": "integer"} for name in reversed(names)}},
        ]
    }
    with pytest.raises(UnsupportedError, match=r"oneOf.*one key order"):
        compile_schema_ir(schema)
    result = compile_schema_ir(schema, lenient=True)
    assert any("oneOf" in warning for warning in result.warnings)


def test_a_complement_around_one_key_order_is_refused() -> None:
    """The part is written in its own order: ``not`` around it would accept the other orders of
    values it excludes."""
    overlapping = CASES["branches with their own properties"][0]
    with pytest.raises(UnsupportedError, match="'not'"):
        compile_schema_ir({"not": overlapping})
