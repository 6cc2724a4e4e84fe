"""Unsupported keywords are errors naming the keyword and its JSON pointer; ``lenient`` turns them
into warnings; unknown keywords are annotations (errors under ``refuse_unknown``); malformed JSON
reports line and column; remote refs are refused; string
lengths past the state bound are limit errors naming the keyword (warnings under ``lenient``)."""

from __future__ import annotations

import numpy as np
import pytest

from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir, load_schema_file
from moonmaskc.frontends.schema.keywords import REFUSED
from moonmaskc.limits import Limits

REFUSED_EXAMPLES = {
    "$dynamicRef": "#meta",
    "$recursiveRef": "#",
    "$recursiveAnchor": True,
}


def test_every_refused_keyword_has_an_example() -> None:
    assert set(REFUSED_EXAMPLES) == set(REFUSED)


@pytest.mark.parametrize("keyword", sorted(REFUSED_EXAMPLES))
def test_refused_keyword_names_keyword_and_pointer(keyword: str) -> None:
    schema = {"type": "object", "properties": {"inner": {keyword: REFUSED_EXAMPLES[keyword]}}}
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert keyword in str(caught.value)
    assert "#/properties/inner" in str(caught.value)
    result = compile_schema_ir(schema, lenient=True)
    assert any(keyword in w and "#/properties/inner" in w for w in result.warnings)
    assert result.notes["ignored_keywords"]


def test_lenient_lists_every_ignored_keyword() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "b": {"$dynamicRef": "#meta"},
            "c": {"$recursiveRef": "#"},
        },
    }
    result = compile_schema_ir(schema, lenient=True)
    ignored = result.notes["ignored_keywords"]
    assert len(ignored) == 3
    assert any("'uniqueItems' at #/properties/a" in w for w in ignored)
    assert any("'$dynamicRef' at #/properties/b" in w for w in ignored)
    assert any("'$recursiveRef' at #/properties/c" in w for w in ignored)


def test_unique_items_trivial_case_compiles() -> None:
    compile_schema_ir({"type": "array", "uniqueItems": True, "maxItems": 1})
    compile_schema_ir({"type": "array", "uniqueItems": False})


def test_typo_and_unknown_keywords_are_annotations_and_refuse_unknown_refuses() -> None:
    """Unknown keywords (typos included) are annotations: warned with their pointer (and the keyword
    a typo probably meant); ``refuse_unknown`` makes them errors."""
    result = compile_schema_ir({"type": "string", "maxLenght": 3})
    assert any("'maxLenght' at #" in w and "'maxLength'" in w for w in result.warnings)
    with pytest.raises(UnsupportedError, match="maxLength"):
        compile_schema_ir({"type": "string", "maxLenght": 3}, refuse_unknown=True)
    nested = {"type": "object", "properties": {"a": {"type": "string", "self": {"vendor": "x"}}}}
    with pytest.raises(UnsupportedError, match="'self' at #/properties/a"):
        compile_schema_ir(nested, refuse_unknown=True)
    result = compile_schema_ir({"type": "string", "self": {"vendor": "x"}}, lenient=True)
    assert len(result.warnings) == 1
    assert "'self'" in result.warnings[0] and "#" in result.warnings[0]
    assert result.notes["unknown_keywords"] == result.warnings
    assert result.notes["ignored_keywords"] == []


def test_unknown_format_is_an_annotation_and_a_spec_format_we_lack_is_refused() -> None:
    result = compile_schema_ir({"type": "string", "format": "no-such-format"})
    assert result.notes["unknown_keywords"] == [
        w for w in result.warnings if "'no-such-format' at #/format" in w
    ]
    with pytest.raises(UnsupportedError, match="format"):
        compile_schema_ir({"type": "string", "format": "no-such-format"}, refuse_unknown=True)
    with pytest.raises(UnsupportedError, match="format"):
        compile_schema_ir({"type": "string", "format": "idn-email"})


def test_remote_ref_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="remote"):
        compile_schema_ir({"$ref": "https://example.com/other.json#/x"})


def test_missing_pointer_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="#/\\$defs/missing"):
        compile_schema_ir({"$ref": "#/$defs/missing"})


def test_complement_of_ordered_objects_is_refused() -> None:
    """(An operand that asks only for keys and key values is negated as a schema instead:
    ``tests/test_schema_not_presence.py``.)"""
    schema = {"not": {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 1}}
    with pytest.raises(UnsupportedError, match="not"):
        compile_schema_ir(schema)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"type": "object",\n "properties": {\n   "a": {"type": "string",}\n }}', 3, 27),
        ('{"type": "string"', 1, 18),
        ('{\n  "type" "string"}', 2, 10),
    ],
)
def test_malformed_json_reports_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(SourceError) as caught:
        compile_schema_ir(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert f"line {line}, column {column}" in str(caught.value)


def test_load_schema_file_reports_position(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "bad.json"  # type: ignore[operator]
    path.write_text('{"type": [1,,2]}', encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        load_schema_file(path)
    assert caught.value.line == 1 and caught.value.column == 13


def _string_states_needed(count: int) -> int:
    """The lower bound that the schema compiler checks: 14 states per character (the canonical
    string character's DFA has 16: the dead state and the end are not repeated), plus one."""
    return 14 * count + 1


def test_string_length_past_the_state_bound_names_keyword_pointer_and_flag() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 32767}}}
    with pytest.raises(LimitError) as caught:
        compile_schema_ir(schema)
    error = caught.value
    assert (error.bound, error.limit, error.flag) == ("max_states", 200_000, "--max-states")
    assert "maxLength 32767" in str(error)
    assert f"at least {_string_states_needed(32767)} automaton states" in str(error)
    assert "#/properties/text/maxLength" in str(error)
    with pytest.raises(LimitError, match=r"minLength 20000 .* at #/minLength"):
        compile_schema_ir({"type": "string", "minLength": 20000})


def test_lenient_drops_a_string_length_past_the_state_bound_and_keeps_the_other() -> None:
    result = compile_schema_ir({"type": "string", "minLength": 2, "maxLength": 32767}, lenient=True)
    assert any("'maxLength'" in warning and "--max-states" in warning for warning in result.warnings)
    dfa = compile_ir(result.node)
    assert dfa.accepts(b'"' + b"a" * 40_000 + b'"')  # maxLength dropped
    assert not dfa.accepts(b'"a"')  # minLength kept


@pytest.mark.parametrize("keyword", ["maxLength", "minLength"])
@pytest.mark.parametrize("context", ["alone", "property", "items", "any_of"])
@pytest.mark.parametrize("count", [0, 1, 7, 60])
def test_string_length_bound_never_exceeds_the_states_needed(keyword: str, context: str, count: int) -> None:
    """The check only refuses what the compile would refuse anyway: every minimal DFA that holds
    such a string has at least the states it counts."""
    string = {"type": "string", keyword: count}
    schema = {
        "alone": string,
        "property": {"type": "object", "properties": {"s": string, "n": {"type": "integer"}}},
        "items": {"type": "array", "items": string},
        "any_of": {"anyOf": [string, {"type": "integer"}]},
    }[context]
    assert compile_ir(compile_schema_ir(schema).node).num_states >= _string_states_needed(count)


def test_raising_max_states_lets_a_long_string_compile_exactly() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 250}}}
    with pytest.raises(LimitError, match="maxLength 250"):
        compile_schema_ir(schema, limits=Limits(max_states=3000))
    limits = Limits(max_states=8000)  # the subset construction passes more states than it keeps
    dfa = compile_ir(compile_schema_ir(schema, limits=limits).node, limits)
    assert dfa.num_states >= _string_states_needed(250)
    assert dfa.accepts(b'{"a":"' + b"x" * 250 + b'"}')
    assert not dfa.accepts(b'{"a":"' + b"x" * 251 + b'"}')


def test_a_dfa_past_the_bound_names_the_length_bounds_that_cost_the_most() -> None:
    """Each string fits the bound alone, the object with both does not: the limit error from the
    back end lists the length bounds by the states they need, most first (bounds written out:
    counted, the long ones would need 14 states each)."""
    import moonmaskc

    schema = {
        "type": "object",
        "properties": {
            "short": {"type": "string", "maxLength": 80},
            "long": {"type": "string", "maxLength": 150},
            "also_long": {"type": "string", "maxLength": 120},
        },
    }
    with pytest.raises(LimitError) as caught:
        moonmaskc.compile_schema(schema, max_states=3000, length_counters=False)
    message = str(caught.value)
    assert caught.value.bound == "max_states" and "--max-states" in message
    listed = [
        f"maxLength 150 at #/properties/long/maxLength (at least {_string_states_needed(150)} states)",
        f"maxLength 120 at #/properties/also_long/maxLength (at least {_string_states_needed(120)} states)",
        f"maxLength 80 at #/properties/short/maxLength (at least {_string_states_needed(80)} states)",
    ]
    positions = [message.index(entry) for entry in listed]
    assert positions == sorted(positions)
    assert moonmaskc.compile_schema(schema, max_states=20_000, length_counters=False).dfa.num_states > 3000


def test_lenient_drops_the_costliest_length_bounds_of_an_automaton_past_the_bound() -> None:
    """Each bound fits alone, the object does not: ``--lenient`` drops the length bounds that cost
    the most (one warning each, the language wider) until the automaton fits, and keeps the
    others and every other keyword."""
    import moonmaskc

    schema = {
        "type": "object",
        "properties": {
            "short": {"type": "string", "maxLength": 8},
            "long": {"type": "string", "maxLength": 150},
            "also_long": {"type": "string", "maxLength": 120},
            "n": {"type": "integer", "minimum": 3},
        },
        "required": ["n"],
    }
    with pytest.raises(LimitError):
        moonmaskc.compile_schema(schema, max_states=3000, tokenizer=None, length_counters=False)
    artifact = moonmaskc.compile_schema(
        schema, max_states=3000, tokenizer=None, length_counters=False, lenient=True
    )
    warnings = artifact.metadata["warnings"]
    assert any("'maxLength' at #/properties/long" in w and "max_states 3000" in w for w in warnings)
    assert not any("#/properties/short" in w for w in warnings)
    assert artifact.metadata["notes"]["language"].startswith("wider")
    long_text = "x" * 200
    assert artifact.match(f'{{"long":"{long_text}","n":3}}').accepted  # its bound dropped
    assert not artifact.match('{"short":"123456789","n":3}').accepted  # this bound kept
    assert not artifact.match('{"n":2}').accepted  # other keywords kept
    with pytest.raises(LimitError):  # strict still refuses, naming the bound
        moonmaskc.compile_schema(
            schema, max_states=3000, tokenizer=None, length_counters=False, lenient=False
        )


def test_an_automaton_past_the_bound_during_the_walk_names_the_costly_length_bounds() -> None:
    """The string with a pattern is intersected during the walk; its automaton passes the bound
    there (the pattern could have bounded the length lower, so it is not refused up front), and
    the error names the length bounds noted so far."""
    schema = {
        "type": "object",
        "properties": {
            "plain": {"type": "string", "maxLength": 150},
            "patterned": {"type": "string", "maxLength": 250, "pattern": "^[a-z]*$"},
        },
    }
    with pytest.raises(LimitError) as caught:
        compile_schema_ir(schema, limits=Limits(max_states=3000))
    assert caught.value.bound == "max_states"
    assert (
        f"maxLength 150 at #/properties/plain/maxLength (at least {_string_states_needed(150)} states)"
        in str(caught.value)
    )


def test_a_pattern_property_that_cannot_be_compiled_names_its_pattern() -> None:
    """A lookbehind in one pattern of patternProperties: strict refuses it naming the keyword and
    the pattern's pointer; lenient drops that pattern only (its keys fall to the others and to
    additionalProperties) with a warning."""
    schema = {
        "type": "object",
        "patternProperties": {"(?<=a)": {"type": "integer"}, "^b": {"type": "null"}},
        "additionalProperties": False,
    }
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert "patternProperties" in str(caught.value) and "#/patternProperties/(?<=a)" in str(caught.value)
    result = compile_schema_ir(schema, lenient=True)
    assert any("'patternProperties' at #/patternProperties/(?<=a)" in w for w in result.warnings)
    dfa = compile_ir(result.node)
    assert dfa.accepts(b'{"b":null}') and not dfa.accepts(b'{"a":1}')


def test_pattern_properties_that_overlap_in_many_ways_meet_the_state_bound() -> None:
    """Ten unanchored one-letter patterns split the undeclared keys into every combination that
    some key matches; past --max-states that is a LimitError naming the keyword's place."""
    schema = {"type": "object", "patternProperties": {letter: {"type": "integer"} for letter in "abcdefghij"}}
    with pytest.raises(LimitError) as caught:
        compile_schema_ir(schema, limits=Limits(max_states=2000))
    assert caught.value.bound == "max_states" and "patternProperties at #" in str(caught.value)
    assert "--max-states" in str(caught.value)


@pytest.mark.parametrize(
    ("declared", "keyword", "value"),
    [
        ("https://json-schema.org/draft/2020-12/schema", "dependencies", {"a": ["b"]}),
        ("http://json-schema.org/draft-07/schema#", "dependentRequired", {"a": ["b"]}),
        ("http://json-schema.org/draft-07/schema#", "dependentSchemas", {"a": {"required": ["b"]}}),
        ("http://json-schema.org/draft-07/schema#", "maxContains", 0),
    ],
)
def test_a_dependency_keyword_of_another_draft_is_an_annotation(
    declared: str, keyword: str, value: object
) -> None:
    """Each presence-dependency keyword belongs to one family of drafts; in a document that
    declares the other family its validators ignore it, so it has no effect on the language, with
    a warning that names it and its place (an error under ``refuse_unknown``)."""
    schema = {"$schema": declared, "type": "object", "properties": {"in": {keyword: value}}}
    result = compile_schema_ir(schema)
    assert compile_ir(result.node).accepts(b'{"in":{"a":1}}')
    [warning] = result.notes["other_draft_keywords"]
    assert warning == result.warnings[0] and f"{keyword!r} at #/properties/in/{keyword}" in warning
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema, refuse_unknown=True)
    assert keyword in str(caught.value) and "#/properties/in" in str(caught.value)
    assert "draft" in str(caught.value)


def test_too_many_presence_dependencies_are_refused_naming_the_place() -> None:
    schema = {"properties": {"o": {"dependentRequired": {key: ["z"] for key in "abcdefg"}}}}
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert "presence dependencies" in str(caught.value) and "#/properties/o" in str(caught.value)


def test_a_malformed_dependency_names_its_pointer() -> None:
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir({"dependentRequired": {"a": "b"}})
    assert "#/dependentRequired/a" in str(caught.value)


def test_a_keyword_switched_off_by_an_underscore_has_no_effect_and_is_noted() -> None:
    """``_format`` (as JSONSchemaBench writes a disabled ``format``) and ``_uniqueItems`` compile
    strictly to the language without them, with a warning and a note naming each; an underscore
    before anything but a keyword is still an unknown keyword."""
    schema = {
        "type": "object",
        "properties": {"when": {"type": "string", "_format": "date-time"}, "tags": {"_uniqueItems": True}},
    }
    plain = {"type": "object", "properties": {"when": {"type": "string"}, "tags": {}}}
    result = compile_schema_ir(schema)
    assert np.array_equal(
        compile_ir(result.node).transitions, compile_ir(compile_schema_ir(plain).node).transitions
    )
    disabled = result.notes["disabled_keywords"]
    assert len(disabled) == 2 and any("'_format' at #/properties/when" in w for w in disabled)
    assert disabled[0] in result.warnings
    with pytest.raises(UnsupportedError, match="_colour"):
        compile_schema_ir({"type": "string", "_colour": "red"}, refuse_unknown=True)


def test_max_contains_over_objects_of_fixed_key_order_is_refused() -> None:
    """An upper bound counts the elements that do not match; with contains objects of a fixed key
    order, a matching element written in another order would go uncounted, so maxContains is
    refused (strict) or dropped with a warning (lenient, the lower bound kept)."""
    schema = {
        "type": "array",
        "contains": {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
        "maxContains": 1,
    }
    with pytest.raises(UnsupportedError, match="maxContains"):
        compile_schema_ir(schema)
    result = compile_schema_ir(schema, lenient=True)
    assert any("'maxContains' at #" in w for w in result.warnings)
    dfa = compile_ir(result.node)
    assert dfa.accepts(b'[{"a":1,"b":2}]') and not dfa.accepts(b"[1]")


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"allOf": [5]}, "#/allOf/0"),
        ({"propertyNames": 7}, "#/propertyNames"),
        ({"properties": {"a": {}}, "patternProperties": {"a": 5}}, "#/patternProperties/a"),
        ({"contains": "x"}, "#/contains"),
        ({"anyOf": [3]}, "#/anyOf/0"),
        ({"dependentSchemas": {"a": 4}}, "#/dependentSchemas/a"),
    ],
)
def test_a_subschema_that_is_not_a_schema_is_a_clear_error(schema: dict[str, object], pointer: str) -> None:
    """Numbers or strings where a schema belongs are refused naming the place (``allOf: [5]`` used
    to end in a TypeError traceback)."""
    with pytest.raises(UnsupportedError) as caught:
        compile_ir(compile_schema_ir(schema).node)
    assert pointer in str(caught.value)


def test_lenient_drops_length_bounds_that_together_pass_the_bound_before_building_the_dfa() -> None:
    """Thirty strings of at most 30 characters: each fits, together they need 30 x 421 states, far
    past 3,000. The bounds go, costliest first, until the rest need at most half the bound: more
    than the four error-driven rounds could drop (five each), and without building the DFA that
    fails; the bounds kept are still enforced."""
    import moonmaskc
    from moonmaskc.pipeline import lenient_length_drops, make_options

    properties = {f"p{i:02}": {"type": "string", "maxLength": 30 + i % 3} for i in range(30)}
    schema = {"type": "object", "properties": properties}
    with pytest.raises(LimitError):
        moonmaskc.compile_schema(schema, max_states=3000, tokenizer=None)
    result = compile_schema_ir(schema)
    assert sum(result.length_costs.values()) > 3000
    drops = lenient_length_drops(result.length_costs, make_options(max_states=3000, lenient=True))
    kept = {pointer: states for pointer, states in result.length_costs.items() if pointer not in drops}
    assert sum(kept.values()) <= 1500 < sum(kept.values()) + min(result.length_costs[p] for p in drops)
    assert min(result.length_costs[p] for p in drops) >= max(kept.values())  # the costliest went
    assert lenient_length_drops(result.length_costs, make_options(max_states=3000)) == frozenset()

    artifact = moonmaskc.compile_schema(schema, max_states=3000, tokenizer=None, lenient=True)
    warned = [w for w in artifact.metadata["warnings"] if "'maxLength'" in w]
    assert len(warned) == len(drops) > 20
    assert artifact.dfa.num_states <= 3000
    kept_property = next(iter(kept)).split("/")[2]
    assert not artifact.match(f'{{"{kept_property}":"{"x" * 40}"}}').accepted
    dropped_property = next(iter(drops)).split("/")[2]
    assert artifact.match(f'{{"{dropped_property}":"{"x" * 40}"}}').accepted


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"required": [["a"]]}, "#"),
        ({"type": "object", "required": [1]}, "#"),
        ({"allOf": [{"required": [{"a": 1}]}, {"properties": {"a": {}}}]}, "#/allOf/0"),
        ({"not": {"required": [None]}}, "#/not"),
        ({"oneOf": [{"required": [["x"]]}, {"required": ["a"]}]}, "#/oneOf/0"),
        ({"properties": {"a": {"properties": {"b": {"required": [2]}}}}}, "#/properties/a/properties/b"),
        ({"required": 0}, "#"),
    ],
)
def test_required_names_that_are_not_strings_are_a_clear_error(schema: dict, where: str) -> None:
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert "'required'" in str(caught.value) and f"at {where}:" in str(caught.value)
    assert "array of strings" in str(caught.value)


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": 1}, "#"),
        ({"type": None}, "#"),
        ({"type": ["string", {"type": "object"}]}, "#"),  # draft-03's union of schemas
        ({"type": [1]}, "#"),
        ({"properties": {"a": {"type": {"x": 1}}}}, "#/properties/a"),
        ({"anyOf": [{"type": "string"}, {"type": True}]}, "#/anyOf/1"),
    ],
)
def test_a_type_that_is_not_type_names_is_a_clear_error(schema: dict, where: str) -> None:
    """It crashed with a ``TypeError`` where the walk turned it into a set of names."""
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert "'type'" in str(caught.value) and f"at {where}:" in str(caught.value)
    assert "type name" in str(caught.value)


def test_a_property_named_required_is_not_the_keyword() -> None:
    schema = {"properties": {"required": {"type": "integer"}}, "required": ["required"]}
    dfa = compile_ir(compile_schema_ir(schema).node)
    assert dfa.accepts(b'{"required":1}') and not dfa.accepts(b"{}")


def test_lenient_drops_a_pattern_whose_automaton_passes_the_work_bound() -> None:
    """Up to 50 words: the copies of ``\\S+\\s+`` overlap byte by byte once escaped (``\\\\n`` and
    ``\\\\u0001`` share their first byte), so the estimate passes ``--max-work``: strict names the
    bound, lenient drops the pattern with a warning and keeps the rest."""
    import moonmaskc

    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "pattern": "^(?:\\S+\\s+){0,49}\\S+$"},
            "n": {"type": "integer", "maximum": 3},
        },
    }
    with pytest.raises(LimitError) as caught:
        moonmaskc.compile_schema(schema, tokenizer=None, max_work=2_000_000)
    assert caught.value.bound == "max_work"
    artifact = moonmaskc.compile_schema(schema, tokenizer=None, max_work=2_000_000, lenient=True)
    warned = [w for w in artifact.metadata["warnings"] if w.startswith("ignored keyword 'pattern'")]
    assert len(warned) == 1 and "#/properties/text" in warned[0] and "--max-work" in warned[0]
    assert artifact.metadata["notes"]["language"].startswith("wider")
    assert artifact.match('{"text":"  leading spaces"}').accepted  # the pattern is gone
    assert not artifact.match('{"n":4}').accepted  # the rest is kept


def test_lenient_drops_item_counts_whose_copies_pass_the_bound() -> None:
    """``maxItems: 1000`` copies an object's automaton a thousand times, past the NFA bound of
    ``--max-states 5000``: strict names the bound; lenient drops the count (a warning, the
    language wider) and keeps the items' own keywords."""
    import moonmaskc

    name = {"type": "string", "maxLength": 20}
    item = {"type": "object", "properties": {"name": name}, "required": ["name"]}
    schema = {"type": "array", "items": item, "minItems": 2, "maxItems": 1000}
    with pytest.raises(LimitError) as caught:
        moonmaskc.compile_schema(schema, tokenizer=None, max_states=5000)
    assert caught.value.bound == "max_states"
    artifact = moonmaskc.compile_schema(schema, tokenizer=None, max_states=5000, lenient=True)
    warned = [w for w in artifact.metadata["warnings"] if "Items" in w]
    expected = ["ignored keyword 'minItems' at #", "ignored keyword 'maxItems' at #"]
    assert [w.split(":")[0] for w in warned] == expected
    one = '{"name":"a"}'
    assert artifact.match("[" + ",".join([one] * 1001) + "]").accepted  # maxItems dropped
    assert artifact.match("[]").accepted  # minItems dropped too
    assert not artifact.match('[{"name":"' + "x" * 21 + '"}]').accepted  # the items' keywords kept


def test_extension_keywords_holding_required_like_data_are_not_read_as_schemas() -> None:
    schema = {
        "type": "object",
        "x-vendor": {"required": [1, {"a": 2}]},
        "examples": [{"required": [3]}],
        "properties": {"a": {"type": "integer", "x-meta": {"required": [[4]]}}},
        "required": ["a"],
    }
    dfa = compile_ir(compile_schema_ir(schema).node)
    assert dfa.accepts(b'{"a":1}') and not dfa.accepts(b"{}")


def test_lenient_lowers_the_recursion_depth_when_nothing_else_fits_the_state_bound() -> None:
    """A schema that recurses through two properties doubles its automaton per level of $ref:
    past the state bound at --max-depth 3, with no length bound to drop. Strict refuses; lenient
    cuts the recursion one level lower, says so in a warning and in the notes (narrower), and the
    artifact is exact at that depth: a value nested one level deeper is rejected."""
    import moonmaskc

    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#"}, "n": {"type": "integer"}},
        "additionalProperties": False,
    }
    depth_two = moonmaskc.compile_schema(schema, tokenizer=None, max_depth=2)
    depth_three = moonmaskc.compile_schema(schema, tokenizer=None, max_depth=3)
    bound = (depth_two.dfa.num_states + depth_three.dfa.num_states) // 2
    with pytest.raises(LimitError):
        moonmaskc.compile_schema(schema, tokenizer=None, max_states=bound)

    artifact = moonmaskc.compile_schema(schema, tokenizer=None, max_states=bound, lenient=True)
    assert artifact.dfa.num_states == depth_two.dfa.num_states
    assert artifact.metadata["notes"]["max_depth"] == 2
    assert artifact.metadata["options"]["max_depth"] == 3  # what was asked stays on record
    assert artifact.metadata["notes"]["language"].startswith("narrower")
    warned = [w for w in artifact.metadata["warnings"] if w.startswith("recursion cut at depth 2")]
    assert len(warned) == 1 and "--max-depth 3" in warned[0] and f"--max-states {bound}" in warned[0]
    assert artifact.match('{"a":{"b":{"n":1}},"n":2}').accepted
    assert not artifact.match('{"a":{"b":{"a":{"n":1}}}}').accepted
    assert depth_three.match('{"a":{"b":{"a":{"n":1}}}}').accepted


def test_lenient_depth_rounds_stop_at_depth_one() -> None:
    """A bound that even depth 1 passes: lenient refuses with the state bound, as strict does."""
    import moonmaskc

    schema = {"type": "object", "properties": {"a": {"$ref": "#"}, "n": {"type": "integer"}}}
    with pytest.raises(LimitError, match="max_states"):
        moonmaskc.compile_schema(schema, tokenizer=None, max_states=20, lenient=True)
