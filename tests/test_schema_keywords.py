"""Keyword by keyword, the compiled DFA agrees exactly with jsonschema on canonical serializations:
a canonical serialization (compact, declared key order, canonical strings and numbers) is accepted
if and only if jsonschema says the value is valid (hypothesis-generated values, depth <= 2)."""

from __future__ import annotations

import json
import string
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker, validators

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.canonical import serialize
from moonmaskc.limits import Limits
from tests.conftest import data_path
from tests.schema_suite_report import declared_order

INT = {"type": "integer"}
SCHEMAS: dict[str, dict[str, Any]] = {
    "optional_properties": {"properties": {k: INT for k in "abcd"}, "additionalProperties": False},
    "required_and_extras": {
        "properties": {"a": {"type": "string"}, "b": INT, "c": {"type": "null"}},
        "required": ["b"],
        "additionalProperties": {"type": "boolean"},
    },
    "property_counts": {
        "type": "object",
        "properties": {"a": INT, "b": INT, "c": INT},
        "additionalProperties": {"type": "null"},
        "minProperties": 2,
        "maxProperties": 3,
    },
    "string_length": {"type": "string", "minLength": 2, "maxLength": 3},
    "pattern": {"type": "string", "pattern": "^a+\\\\?b?$|x\\n"},
    "arrays": {
        "type": "array",
        "prefixItems": [INT, {"type": "string"}],
        "items": {"type": "boolean"},
        "minItems": 1,
        "maxItems": 4,
    },
    "draft7_arrays": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "items": [INT, {"type": "null"}],
        "additionalItems": False,
    },
    "numbers": {"type": "number", "minimum": -2.5, "exclusiveMaximum": 7, "multipleOf": 0.5},
    "one_of_overlap": {
        "oneOf": [{"type": "integer", "minimum": 0, "maximum": 10}, {"type": "integer", "minimum": 5}]
    },
    "one_of_disjoint_languages": {
        "oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}, {"type": "null"}]
    },
    "unique_finite_items": {
        "type": "array",
        "items": {"enum": [1, 2, "a", None, True]},
        "uniqueItems": True,
        "maxItems": 4,
    },
    "one_of_discriminated": {
        "oneOf": [
            {"properties": {"k": {"const": "a"}, "v": INT}, "required": ["k"]},
            {"properties": {"k": {"const": "b"}, "v": {"type": "string"}}, "required": ["k"]},
        ]
    },
    "not": {"not": {"type": ["string", "null"]}},
    "not_nested": {"type": "array", "items": {"not": {"type": "integer", "minimum": 0}}},
    "if_then_else": {
        "type": "integer",
        "if": {"minimum": 10},
        "then": {"multipleOf": 2},
        "else": {"maximum": 3},
    },
    "all_of_merge": {
        "allOf": [
            {"properties": {"a": INT}, "additionalProperties": False},
            {"properties": {"a": {"minimum": 3}, "b": {}}},
        ]
    },
    "all_of_intersect": {"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}, {"maxLength": 3}]},
    "enum_const": {"enum": [1, "a", None, [1, "b"], {"a": 1, "b": [True]}], "not": {"const": "a"}},
    "any_of_refs": {
        "$defs": {"pos": {"type": "integer", "minimum": 1}, "word": {"type": "string", "maxLength": 2}},
        "anyOf": [{"$ref": "#/$defs/pos"}, {"$ref": "#/$defs/word"}, {"type": "array", "maxItems": 0}],
    },
    "if_discriminator": {
        "type": "object",
        "properties": {"k": {"enum": ["a", "b"]}, "v": {}},
        "if": {"properties": {"k": {"const": "a"}}},
        "then": {"properties": {"v": {"type": "integer"}}, "required": ["v"]},
        "else": {"properties": {"v": {"type": "string"}}},
    },
    "not_one_property": {"not": {"properties": {"k": {"type": "integer"}}, "required": ["k"]}},
    "anchor": {"$defs": {"x": {"$anchor": "small", "maximum": 3, "type": "integer"}}, "$ref": "#small"},
    "pattern_properties": {
        "properties": {"a": {"type": "integer", "maximum": 5}, "k": {"type": ["string", "null"]}},
        "patternProperties": {"^[ab]": INT, "[bc]": {"minimum": 0}, "^x$": False},
        "additionalProperties": {"type": ["null", "array"]},
    },
    "pattern_properties_closed": {
        "type": "object",
        "properties": {"v": {}},
        "required": ["k"],
        "patternProperties": {"^[a-c]$": {"type": "string", "maxLength": 1}, "k": {"type": "boolean"}},
        "additionalProperties": False,
        "maxProperties": 3,
    },
    "property_names": {
        "properties": {"a": INT, "d": {}},
        "propertyNames": {"pattern": "^[a-c]|k", "maxLength": 1},
        "additionalProperties": {"type": "boolean"},
    },
    "dependent_required": {
        "properties": {"a": {}, "b": INT, "c": {}},
        "dependentRequired": {"a": ["b"], "d": ["c", "k"], "x": []},
        "additionalProperties": {"type": ["null", "integer"]},
    },
    "dependent_schemas": {
        "type": "object",
        "properties": {"a": INT, "b": {}},
        "dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}, "required": ["b"]}, "k": False},
        "dependentRequired": {"b": ["v"]},
    },
    "draft7_dependencies": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"a": {}, "k": {"type": "null"}},
        "dependencies": {"a": ["k"], "b": {"maxProperties": 2}, "c": {"required": ["a"]}},
    },
    "contains": {"type": "array", "contains": {"type": "integer", "minimum": 1}},
    "min_max_contains": {
        "items": {"type": ["integer", "string", "null"]},
        "contains": {"type": "integer"},
        "minContains": 2,
        "maxContains": 2,
        "maxItems": 4,
    },
    "contains_with_prefix": {
        "prefixItems": [{"type": "string"}, {}],
        "items": {"type": ["integer", "array"]},
        "contains": {"const": 1},
        "maxContains": 1,
    },
    "contains_at_most": {"contains": {"type": "null"}, "minContains": 0, "maxContains": 1},
    "contains_anything": {"contains": True, "maxContains": 2},
    "all_of_contains_same": {
        "allOf": [
            {"contains": {"type": "integer"}, "minContains": 1},
            {"contains": {"type": "integer"}, "minContains": 2},
        ]
    },
    "all_of_contains_different": {
        "allOf": [{"contains": {"const": 1}}, {"contains": {"type": "string"}, "minContains": 2}]
    },
    "contains_nested_arrays": {
        "items": {"type": "array"},
        "contains": {"type": "array", "items": {"type": "array"}},
    },
    "all_of_pattern_properties": {
        "allOf": [
            {"properties": {"a": INT, "b": {}, "x": {}}, "additionalProperties": {"type": "null"}},
            {"patternProperties": {"^[ab]": {"minimum": 1}}, "propertyNames": {"not": {"enum": ["k", "v"]}}},
        ]
    },
}

_text = st.text(alphabet=st.sampled_from(list('ab\\"\n\x01é😀x ')), max_size=4)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-12, 12),
    st.integers(-30, 30).map(lambda n: n / 4),
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(list("abcdkvx")), inner, max_size=4),
    ),
    max_leaves=6,
)

_compiled: dict[str, DFA] = {}


def _dfa(name: str) -> DFA:
    if name not in _compiled:
        _compiled[name] = compile_ir(compile_schema_ir(SCHEMAS[name]).node)
    return _compiled[name]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_values)
def test_accepts_exactly_the_valid_values(name: str, value: Any) -> None:
    schema = SCHEMAS[name]
    validator_class = Draft202012Validator
    if "draft-07" in schema.get("$schema", ""):
        from jsonschema import Draft7Validator

        validator_class = Draft7Validator  # type: ignore[assignment]
    valid = validator_class(schema, format_checker=FormatChecker()).is_valid(value)
    text = serialize(declared_order(value, schema, schema))
    assert _dfa(name).accepts(text.encode("utf-8")) == valid, (text, valid)


def test_recursion_unrolls_to_max_depth() -> None:
    schema = {"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"}
    result = compile_schema_ir(schema)
    assert result.notes["refs_unrolled"] == ["#/$defs/t"]
    dfa = compile_ir(result.node)
    assert dfa.accepts(b"[[[]]]") and dfa.accepts(b"[[],[[]]]")
    assert not dfa.accepts(b"[[[[]]]]")  # deeper than max_depth: rejected, never wrongly accepted


def test_many_optional_properties_stay_linear() -> None:
    sizes = {}
    for n in (30, 60):
        properties = {f"p{i}": {"type": "boolean"} for i in range(n)}
        schema = {"properties": properties, "additionalProperties": False}
        result = compile_schema_ir(schema)
        dfa = compile_ir(result.node)
        sizes[n] = (ir.size(result.node), dfa.num_states)
    assert dfa.accepts(b'{"p3":true,"p59":false}') and not dfa.accepts(b'{"p59":false,"p3":true}')
    assert not dfa.accepts(b'{,"p3":true}') and not dfa.accepts(b'{"p3":true,}') and dfa.accepts(b"{}")
    assert sizes[60][0] < 2.2 * sizes[30][0] and sizes[60][1] < 2.2 * sizes[30][1]


def test_string_escapes_and_length_in_code_points() -> None:
    dfa = compile_ir(compile_schema_ir({"type": "string", "minLength": 2, "maxLength": 2}).node)
    for good in ['"\\n😀"', '"\\"\\\\"', '"\\u001fé"']:
        assert dfa.accepts(good.encode()), good
    for bad in ['"\\/x"', '"\\u0041x"', '"😀"', '"abc"', '"\x01a"']:
        assert not dfa.accepts(bad.encode()), bad


@pytest.mark.parametrize("policy", ["compact", "flexible", "any"])
def test_whitespace_policies(policy: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": INT}}}
    dfa = compile_ir(compile_schema_ir(schema, whitespace=policy).node)
    value = {"a": [1, 2]}
    assert dfa.accepts(json.dumps(value, separators=(",", ":")).encode())
    assert dfa.accepts(json.dumps(value, indent=2).encode()) == (policy != "compact")
    assert dfa.accepts(b'{"a":[1,\t2]}') == (policy == "any")
    runaway = b'{"a":[1,' + b" " * 41 + b"2]}"
    assert dfa.accepts(runaway) == (policy == "any")
    assert not dfa.accepts(b' {"a":[]}')


def test_notes_show_bounds() -> None:
    notes = compile_schema_ir({"type": "string"}, whitespace="flexible").notes
    assert "flexible" in notes["whitespace"] and notes["max_depth"] == 3
    assert set(string.ascii_letters) & set(notes["whitespace"])


JSONSCHEMA_BLOCKER = """
import json, sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "jsonschema":
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Blocker())
import moonmaskc
from tests.oracles.json_values import nesting_depth
artifact = moonmaskc.compile_schema(json.loads(sys.argv[1]), tokenizer=None)
print(artifact.match(sys.argv[2]).accepted)
"""


def run_with_jsonschema_blocked(schema: Any, text: str) -> subprocess.CompletedProcess[str]:
    from tests.conftest import PROJECT_ROOT

    return subprocess.run(
        [sys.executable, "-c", JSONSCHEMA_BLOCKER, json.dumps(schema), text],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )


def test_jsonschema_is_imported_only_to_filter_constrained_enums() -> None:
    """jsonschema (whose optional format packages take about a second to import) is loaded only to
    filter enum/const candidates that the schema constrains beyond their type."""
    plain = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}, "required": ["n"]}
    typed_enum = {"type": "object", "properties": {"r": {"type": "string", "enum": ["a", 1, "b"]}}}
    for schema, text in ((plain, '{"n":4}'), (typed_enum, '{"r":"b"}')):
        run = run_with_jsonschema_blocked(schema, text)
        assert run.returncode == 0 and run.stdout.strip() == "True", run.stderr
    run = run_with_jsonschema_blocked({"enum": ["a", "bb"], "minLength": 2}, '"bb"')
    assert run.returncode != 0 and "blocked: jsonschema" in run.stderr


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-3, 3, allow_nan=False).map(lambda f: round(f, 1)),
    st.text("ab", max_size=2),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text("k", max_size=1), inner, max_size=2),
    max_leaves=4,
)
TYPE_NAMES = ["null", "boolean", "object", "array", "string", "number", "integer"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    candidates=st.lists(JSON_VALUES, min_size=1, max_size=5),
    declared=st.none() | st.sampled_from(TYPE_NAMES) | st.lists(st.sampled_from(TYPE_NAMES), max_size=3),
    use_const=st.booleans(),
)
def test_enum_filtered_by_type_alone_agrees_with_jsonschema(
    candidates: list[Any], declared: Any, use_const: bool
) -> None:
    """Without jsonschema: an enum/const whose schema says only ``type`` keeps exactly the
    candidates that jsonschema (2020-12) accepts."""
    from moonmaskc.frontends.schema.constants import filter_by_type_alone as _filter_by_type_alone

    schema: dict[str, Any] = {"const": candidates[0]} if use_const else {"enum": candidates}
    if declared is not None:
        schema["type"] = declared
    schema["title"] = "annotations do not matter"
    kept = _filter_by_type_alone(schema, candidates[:1] if use_const else candidates)
    if kept is None:  # left to jsonschema: floats under "integer" alone
        names = [declared] if isinstance(declared, str) else declared
        assert "integer" in names and "number" not in names
        return
    validator = Draft202012Validator(schema)
    expected = [v for v in (candidates[:1] if use_const else candidates) if validator.is_valid(v)]
    assert kept == expected


KEY_TEXT = st.text(alphabet=st.sampled_from('ab"\\\x00\x1f/é\u2028😀'), max_size=4)


@given(keys=st.lists(KEY_TEXT, max_size=4, unique=True), others=st.lists(KEY_TEXT, max_size=8))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_additional_property_names_are_exactly_the_undeclared_strings(
    keys: list[str], others: list[str]
) -> None:
    """Declared keys take null, every other key takes a boolean: against set membership, on the keys,
    their prefixes and extensions and random strings; a non-canonical spelling is never accepted."""
    schema = {
        "properties": {key: {"type": "null"} for key in keys},
        "additionalProperties": {"type": "boolean"},
    }
    dfa = compile_ir(compile_schema_ir(schema).node)
    candidates = {*keys, *others, *(k[:i] for k in keys for i in range(len(k))), *(k + "a" for k in keys)}
    for text in candidates:
        declared = text in keys
        assert dfa.accepts(f"{{{serialize(text)}:true}}".encode()) == (not declared), (keys, text)
        assert dfa.accepts(f"{{{serialize(text)}:null}}".encode()) == declared, (keys, text)
    assert not dfa.accepts(b'{"\\u0061":true}') and not dfa.accepts(b'{"\\/":true}')


def test_the_walk_never_compiles_the_same_expression_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Big sub-expressions become DFA leaves; equal ones must reuse one leaf (automata compare by
    identity), or every expression around them is compiled again. Real schemas that use free-form
    values (kb_0) and the same constrained string schema (o2045) in several places."""
    import moonmaskc.frontends.schema.automata as compiler

    real_compile, real_without = compiler.compile_ir, compiler.without_words
    compiled: list[str] = []

    def counting_compile(node: ir.Node, limits: Any = None, *, check_work: bool = False) -> DFA:
        compiled.append(ir.to_regex(node))
        return real_compile(node, limits, check_work=check_work)

    def counting_without(dfa: DFA, words: list[bytes], limits: Any = None) -> DFA:
        compiled.append(f"other keys than {sorted(words)}")
        return real_without(dfa, words, limits)

    monkeypatch.setattr(compiler, "compile_ir", counting_compile)
    monkeypatch.setattr(compiler, "without_words", counting_without)
    for subset, name in (("Kubernetes", "kb_0_Normalized.json"), ("Github_hard", "o2045.json")):
        compiled.clear()
        compile_schema_ir(
            json.loads(data_path("schemas", "jsonschemabench", subset, name).read_text()), lenient=True
        )
        repeated = [text[:80] for text, count in Counter(compiled).items() if count > 1]
        assert len(compiled) > 3 and not repeated, (name, repeated)


OBJECT_KEY_SCHEMAS = [
    "pattern_properties",
    "pattern_properties_closed",
    "property_names",
    "all_of_pattern_properties",
    "dependent_required",
    "dependent_schemas",
    "draft7_dependencies",
]
_KEY_POOL = ["a", "b", "c", "d", "k", "v", "x", "ab", "bc", "kk", "é"]
_VALUE_POOL: list[Any] = [None, True, 0, 1, 6, -1, "", "a", "ab", [], [1]]


@pytest.mark.parametrize("name", OBJECT_KEY_SCHEMAS)
def test_member_keys_by_pattern_and_name_agree_with_jsonschema(name: str) -> None:
    """patternProperties, propertyNames and presence dependencies: every object of at most two
    members from small key and value pools, and 1,500 of three or four members (fixed seed),
    serialized in declared order, is accepted exactly when jsonschema (the schema's draft) says it
    is valid; both outcomes occur."""
    import itertools
    import random

    schema = SCHEMAS[name]
    validator = validators.validator_for(schema)(schema, format_checker=FormatChecker())
    objects: list[dict[str, Any]] = [{}]
    for size in (1, 2):
        for keys in itertools.permutations(_KEY_POOL, size):
            for values in itertools.product(_VALUE_POOL, repeat=size):
                objects.append(dict(zip(keys, values, strict=True)))
    rng = random.Random(11)
    for _ in range(1500):
        keys = rng.sample(_KEY_POOL, rng.choice((3, 4)))
        objects.append({key: rng.choice(_VALUE_POOL) for key in keys})
    outcomes = Counter()
    for value in objects:
        valid = validator.is_valid(value)
        text = serialize(declared_order(value, schema, schema))
        assert _dfa(name).accepts(text.encode("utf-8")) == valid, (text, valid)
        outcomes[valid] += 1
    assert outcomes[True] >= 20 and outcomes[False] >= 20, outcomes


CONTAINS_SCHEMAS = [
    "contains",
    "min_max_contains",
    "contains_with_prefix",
    "contains_at_most",
    "contains_anything",
    "contains_nested_arrays",
    "all_of_contains_same",
    "all_of_contains_different",
]
_ELEMENT_POOL: list[Any] = [None, True, 0, 1, 6, -1, "", "a", [], [1], {"a": 1}]


@pytest.mark.parametrize("name", CONTAINS_SCHEMAS)
def test_contains_counts_agree_with_jsonschema(name: str) -> None:
    """contains / minContains / maxContains: every array of up to three elements from a pool (and
    every other value of the pool) is accepted exactly when jsonschema says it is valid."""
    import itertools

    schema = SCHEMAS[name]
    validator = Draft202012Validator(schema, format_checker=FormatChecker())
    values: list[Any] = [*_ELEMENT_POOL]
    for size in range(4):
        values += [list(elements) for elements in itertools.product(_ELEMENT_POOL, repeat=size)]
    outcomes = Counter()
    for value in values:
        valid = validator.is_valid(value)
        assert _dfa(name).accepts(serialize(value).encode("utf-8")) == valid, (value, valid)
        outcomes[valid] += 1
    assert outcomes[True] >= 10 and outcomes[False] >= 10, outcomes


def test_products_taken_within_the_depth_bound_are_noted() -> None:
    """A ``oneOf`` not proven disjoint is an "exactly one" product within ``--max-depth`` levels
    below it, and a ``not`` a complement within them: values nested deeper are cut there, and the
    notes say where (also when the keyword is reached through a cached ``$ref``)."""
    filters = {
        "type": "object",
        "required": ["filters"],
        "properties": {
            "filters": {"type": "array", "items": {"type": "object", "properties": {"h": {"type": "object"}}}}
        },
    }
    terms = {"type": "object", "required": ["terms"]}
    schema = {"oneOf": [filters, terms]}
    deep, shallow = {"filters": [{"h": {}}]}, {"filters": [{}]}
    result = compile_schema_ir(schema)
    assert result.notes["bounded_products"] == [
        "oneOf at #: values nest at most 3 levels below it (its product is taken within --max-depth)"
    ]
    dfa = compile_ir(result.node)
    validator = Draft202012Validator(schema)
    assert validator.is_valid(deep) and validator.is_valid(shallow)
    assert dfa.accepts(serialize(shallow).encode()) and not dfa.accepts(serialize(deep).encode())
    deeper = compile_ir(compile_schema_ir(schema, limits=Limits(max_depth=4)).node)
    assert deeper.accepts(serialize(deep).encode())

    assert (
        compile_schema_ir({"oneOf": [{"type": "string"}, {"type": "integer"}]}).notes["bounded_products"]
        == []
    )
    negated = compile_schema_ir({"properties": {"a": {"not": {"type": "string"}}}})
    assert [note.split(":")[0] for note in negated.notes["bounded_products"]] == ["not at #/properties/a/not"]
    shared = {"$defs": {"x": schema}, "properties": {"p": {"$ref": "#/$defs/x"}, "q": {"$ref": "#/$defs/x"}}}
    assert [n.split(":")[0] for n in compile_schema_ir(shared).notes["bounded_products"]] == [
        "oneOf at #/$defs/x"
    ]


CANONICAL_TEXT_CHARACTERS = st.sampled_from('ab"\\\x00\x08\x1f\x7f/é\u2028😀') | st.characters()


@given(text=st.text(alphabet=CANONICAL_TEXT_CHARACTERS, max_size=12))
def test_canonical_strings_are_jsons_compact_strings(text: str) -> None:
    """A string's canonical text (``canonical.serialize``, what keys and constants are spelled
    with) is ``json.dumps`` without ASCII escaping: short escapes, other control characters as
    lower-case ``\\u00XX``, everything else as it is (its fast path for text with nothing to
    escape included)."""
    from moonmaskc.frontends.schema import canonical

    assert canonical.serialize(text) == json.dumps(text, ensure_ascii=False)
