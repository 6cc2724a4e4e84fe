"""A string without length bounds is the body ``automata.string_body_automaton`` as one DFA leaf:
the same language as ``canonical.STRING_BODY`` spelled out, so every schema compiles to the very
DFA it compiled to with the expression (arrays and dtypes compared on real schemas), constraints
(``pattern``, ``format``) still meet it, and the printed grammar names the leaf."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator

import moonmaskc
from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.frontends.schema import automata as walk_automata
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.types import strings
from tests.conftest import data_path

SCHEMA_FILES = (
    ("Kubernetes", "kb_4_Normalized.json"),
    ("Kubernetes", "kb_101_Normalized.json"),
    ("Github_trivial", "o10525.json"),
    ("Github_medium", "o1262.json"),
    ("Glaiveai2K", "analyze_stock_portfolio_41eaee49.json"),
    ("WashingtonPost", "wp_10_Normalized.json"),
    ("Snowplow", "sp_105_Normalized.json"),
)


def _arrays(dfa: DFA) -> dict[str, Any]:
    return {
        "transitions": dfa.transitions,
        "byte_class": dfa.byte_class,
        "accepting": dfa.accepting,
        "distance": dfa.distance,
        "start": np.asarray(dfa.start),
    }


def _same_dfa(first: DFA, second: DFA) -> bool:
    a, b = _arrays(first), _arrays(second)
    return all(np.array_equal(a[key], b[key]) and a[key].dtype == b[key].dtype for key in a)


def test_the_leaf_is_the_spelled_out_body() -> None:
    leaf = walk_automata.string_body_automaton()
    assert isinstance(leaf, ir.Automaton)
    assert walk_automata.string_body_automaton() is leaf  # one object: expressions around it stay equal
    assert _same_dfa(leaf.dfa, compile_ir(canonical.STRING_BODY))


def _compiled_both_ways(monkeypatch: pytest.MonkeyPatch, schema: Any) -> tuple[DFA, DFA]:
    with_leaf = moonmaskc.compile_schema(schema).dfa
    with monkeypatch.context() as patch:
        patch.setattr(strings, "string_body_automaton", lambda: canonical.STRING_BODY)
        spelled_out = moonmaskc.compile_schema(schema).dfa
    return with_leaf, spelled_out


@pytest.mark.parametrize(("subset", "name"), SCHEMA_FILES)
def test_real_schemas_compile_to_the_same_dfa_as_with_the_expression(
    monkeypatch: pytest.MonkeyPatch, subset: str, name: str
) -> None:
    text = data_path("schemas", "jsonschemabench", subset, name).read_text(encoding="utf-8")
    with_leaf, spelled_out = _compiled_both_ways(monkeypatch, text)
    assert _same_dfa(with_leaf, spelled_out)


CONSTRAINED = {
    "type": "object",
    "properties": {
        "plain": {"type": "string"},
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
        "day": {"type": "string", "format": "date"},
        "short": {"type": "string", "maxLength": 3},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["plain", "code"],
    "additionalProperties": False,
}


def test_constraints_still_meet_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    with_leaf, spelled_out = _compiled_both_ways(monkeypatch, CONSTRAINED)
    assert _same_dfa(with_leaf, spelled_out)
    artifact = moonmaskc.compile_schema(CONSTRAINED)
    validator = Draft202012Validator(CONSTRAINED, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for value in (
        {"plain": 'a "quoted" \\ é \u2028', "code": "AB-12"},
        {"plain": "", "code": "XY-0", "day": "2024-02-29", "short": "abc", "tags": ["", "\u0001"]},
        {"plain": "x", "code": "ab-1"},
        {"plain": "x", "code": "AB-1", "day": "2023-02-29"},
        {"plain": "x", "code": "AB-1", "short": "abcd"},
        {"code": "AB-1"},
    ):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        assert artifact.match(text).accepted == validator.is_valid(value), text


def test_the_printed_grammar_names_the_leaf() -> None:
    grammar = moonmaskc.compile_schema({"type": "string"}).metadata["grammar"]
    states = walk_automata.string_body_automaton().dfa.num_states
    assert grammar == f'"(?#string body: {states} states)"'
