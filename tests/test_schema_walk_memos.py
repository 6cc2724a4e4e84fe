"""What one schema walk keeps (``frontends.schema.automata.Automata``): each ``pattern`` text parsed
once, each pair of branch automata proven disjoint once, however many references reach them; the
language is the one ``jsonschema`` decides, and a pattern that cannot be compiled is still refused
(strict) or warned about (lenient) when a second reference reaches it. Beside them, what a process
keeps of ``canonical.escape_node`` (a pattern's ``.*`` escaped once)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import moonmaskc
from moonmaskc import ir
from moonmaskc.automata import product
from moonmaskc.automata.build import compile_ir
from moonmaskc.frontends import utf8
from moonmaskc.frontends.regex import parser
from moonmaskc.frontends.schema import automata as walk_automata
from moonmaskc.frontends.schema import canonical
from tests.test_automata import ir_nodes

TYPE_NAME = {
    "oneOf": [
        {"type": "string", "pattern": "^u?int(8|16|32|64)?(\\[[0-9]*\\])*$"},
        {"type": "string", "pattern": "^address(\\[[0-9]*\\])*$"},
        {"type": "string", "pattern": "^bool(\\[[0-9]*\\])*$"},
    ]
}
SCHEMA: dict[str, Any] = {
    # Branches told apart by their DFAs only: each proof walks both branches again, and with
    # them the type names' patterns and their own oneOf.
    "oneOf": [
        {
            "type": "object",
            "properties": {kind: {"$ref": "#/$defs/type"}, "name": {"type": "string"}},
            "required": [kind],
            "additionalProperties": False,
        }
        for kind in ("input", "output", "event")
    ],
    "$defs": {"type": TYPE_NAME},
}


def test_patterns_parse_once_and_branches_are_proven_disjoint_once_per_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    proofs: list[frozenset[int]] = []
    original_parse, original_disjoint = parser.parse_search, product.disjoint

    def counted_parse(pattern: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(pattern)
        return original_parse(pattern, *args, **kwargs)

    def counted_disjoint(first: Any, second: Any, *args: Any, **kwargs: Any) -> bool:
        proofs.append(frozenset((id(first), id(second))))
        return original_disjoint(first, second, *args, **kwargs)

    monkeypatch.setattr(parser, "parse_search", counted_parse)
    monkeypatch.setattr("moonmaskc.frontends.regex.parse_search", counted_parse)
    monkeypatch.setattr(walk_automata, "disjoint", counted_disjoint)
    artifact = moonmaskc.compile_schema(SCHEMA, tokenizer=None)
    assert sorted(parsed) == sorted(branch["pattern"] for branch in TYPE_NAME["oneOf"])
    assert proofs and len(set(proofs)) == len(proofs)  # each pair of automata proven once
    validator = Draft202012Validator(SCHEMA)
    for document in (
        '{"input":"uint8","name":"x"}',
        '{"output":"address[]"}',
        '{"event":"bool[2][]"}',
        '{"input":"uint7"}',
        '{"input":"int","output":"bool"}',
        '{"name":"bool"}',
    ):
        assert artifact.match(document).accepted == validator.is_valid(json.loads(document)), document


def test_a_refused_pattern_reached_twice_is_refused_and_warned_about() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/bad"}, "b": {"$ref": "#/$defs/bad"}},
        "$defs": {"bad": {"type": "string", "pattern": "(?<=a)b"}},
    }
    with pytest.raises(moonmaskc.MoonmaskError):
        moonmaskc.compile_schema(schema, tokenizer=None)
    lenient = moonmaskc.compile_schema(schema, tokenizer=None, lenient=True)
    warned = [warning for warning in lenient.metadata["warnings"] if "pattern" in warning]
    assert warned, lenient.metadata["warnings"]


def _escaped_reference(node: ir.Node) -> ir.Node:
    """``canonical.escape_node`` as it reads without its memos."""
    if isinstance(node, ir.ByteSet):
        if not node.mask & canonical.ESCAPED_MASK:
            return node
        return canonical._escape_byteset(node.mask)
    if isinstance(node, ir.Seq):
        return ir.seq(*(_escaped_reference(item) for item in node.items))
    if isinstance(node, ir.Alt):
        return ir.alt(*(_escaped_reference(item) for item in node.items))
    assert isinstance(node, ir.Repeat)
    return ir.repeat(_escaped_reference(node.item), node.min, node.max)


ESCAPABLE = [ir.text('"'), ir.text("\\"), ir.byte_set(ir.mask_of(b'\n"x')), utf8.any_char()]


@settings(max_examples=150, deadline=None)
@given(ir_nodes(more_leaves=st.sampled_from(ESCAPABLE), max_leaves=12))
def test_escaping_with_the_memos_matches_a_plain_escape(node: ir.Node) -> None:
    """Shared subtrees escaped once a call and big ones once a process give the escape a plain
    walk gives, on the first call and when the memos answer."""
    canonical._ESCAPED.clear()
    expected = _escaped_reference(ir.seq(node, ir.star(node)))
    assert canonical.escape_node(ir.seq(node, ir.star(node))) == expected
    assert canonical.escape_node(ir.seq(node, ir.star(node))) == expected


def test_an_escaped_automaton_is_not_kept() -> None:
    leaf = ir.Automaton(compile_ir(ir.text('a"')), "quoted")
    canonical._ESCAPED.clear()
    escaped = canonical.escape_node(ir.seq(utf8.any_char(), leaf, ir.star(utf8.any_char())))
    assert "quoted, escaped" in ir.to_regex(escaped)
    assert all(not ir.holds_automaton(value) for value in canonical._ESCAPED.values())


def test_unknown_keywords_get_their_typo_hint_each_time() -> None:
    """``keywords.likely_typo`` is kept per process (a schema repeats its unknown keys): the hint
    is the same on every call and in every warning, and none for a disabled or unrelated key."""
    from moonmaskc.frontends.schema.keywords import likely_typo

    likely_typo.cache_clear()
    assert [likely_typo("maxItem") for _ in range(3)] == ["maxItems"] * 3
    assert likely_typo.cache_info().hits == 2
    assert likely_typo("minLenght") == "minLength" and likely_typo("propertOrder") is None
    assert likely_typo("_format") is None and likely_typo("options") is None
    schema = {"type": "object", "properties": {f"p{n}": {"type": "array", "maxItem": 3} for n in range(3)}}
    warnings = moonmaskc.compile_schema(schema, tokenizer=None).metadata["warnings"]
    hinted = [warning for warning in warnings if "did you mean 'maxItems'?" in warning]
    assert len(hinted) == 3
