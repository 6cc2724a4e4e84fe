"""Lookaheads ``(?=X)`` / ``(?!X)`` (markers: ``frontends/regex/markers.py``, ``conditions.py``,
``erasure.py``) against Python's ``re``: search (JSON Schema ``pattern``) and full match agree on
random patterns with lookaheads in sequences, in groups, nested, and with ``$`` inside; the real
JSONSchemaBench patterns; and the clear refusal of lookbehind. Lookaheads under repetitions,
``\\b`` and ``^`` anywhere: ``tests/test_regex_assertions.py``."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.regex import parse, parse_search
from moonmaskc.frontends.schema import compile_schema_ir

ATOMS = st.sampled_from(["a", "b", "ab", "a*", "b+", "[ab]", "(?:ba)?", ".", ""])


@st.composite
def lookahead(draw: st.DrawFn, depth: int) -> str:
    kind = draw(st.sampled_from(["(?=", "(?!"]))
    body = draw(sequence(depth - 1)) if depth > 0 else draw(ATOMS)
    end = "$" if draw(st.booleans()) else ""
    return f"{kind}{body}{end})"


@st.composite
def sequence(draw: st.DrawFn, depth: int) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        choice = draw(st.integers(0, 3 if depth > 0 else 0))
        if choice == 0:
            parts.append(draw(ATOMS))
        elif choice in (1, 2):
            parts.append(draw(lookahead(depth)))
        else:
            alternatives = draw(st.lists(sequence(depth - 1), min_size=1, max_size=2))
            optional = "?" if draw(st.booleans()) else ""  # (...)? is (|...): distributed too
            parts.append(f"(?:{'|'.join(alternatives)}){optional}")
    return "".join(parts)


@st.composite
def pattern(draw: st.DrawFn) -> str:
    alternatives = []
    for _ in range(draw(st.integers(1, 2))):
        start = "^" if draw(st.booleans()) else ""
        end = "$" if draw(st.booleans()) else ""
        alternatives.append(f"{start}{draw(sequence(2))}{end}")
    return "|".join(alternatives)


@settings(max_examples=400, deadline=None)
@given(pattern(), st.lists(st.text(alphabet="abx", max_size=6), min_size=1, max_size=8))
def test_search_and_full_match_agree_with_re(regex: str, texts: list[str]) -> None:
    searched = compile_ir(parse_search(regex, flavor="python"))
    matched = compile_ir(parse(regex).node)
    for text in texts:
        data = text.encode()
        assert searched.accepts(data) == (re.search(regex, text) is not None), (regex, text)
        assert matched.accepts(data) == (re.fullmatch(regex, text) is not None), (regex, text)


@pytest.mark.parametrize(
    ("regex", "yes", "no"),
    [
        (r"^(?!@@)[@a-zA-Z0-9_-]+$", ["@x", "a@@"], ["@@x", ""]),  # chrome-extension-locales-messages
        (
            r"^(?!org\.bukkit\.)([a-zA-Z_$][a-zA-Z\d_$]*\.)*[a-zA-Z_$][a-zA-Z\d_$]*$",
            ["org.A"],
            ["org.bukkit.A"],
        ),
        (r"((?:[^/]*/)*)(?=\.(yaml|yml|json))", ["a/b.yaml", "x.json"], ["a/b.txt"]),  # catalogue-entry
        (r"^(?![ \t\n]*\(default(.*)\))[\s\S]*", ["rule", ""], [" (default x)"]),  # airlock
        (r"^(?=.*[A-Z])(?=.*\d).{8,}$", ["Abcdefg1"], ["abcdefg1", "Abcdefgh", "Ab1"]),  # a password rule
        (r"^([\da-z](?:(?!.*--)[\da-z-]*[\da-z])?)$", ["a", "a-b", "ab-c"], ["a--b", "-a"]),  # appsemblerc
    ],
)
def test_real_patterns(regex: str, yes: list[str], no: list[str]) -> None:
    dfa = compile_ir(parse_search(regex))
    assert all(dfa.accepts(text.encode()) for text in yes)
    assert not any(dfa.accepts(text.encode()) for text in no)


@pytest.mark.parametrize(("regex", "construct"), [("(?<=a)b", "lookbehind"), ("(?<!a)b", "lookbehind")])
def test_what_is_not_compiled_is_refused_by_name(regex: str, construct: str) -> None:
    with pytest.raises(UnsupportedError, match=re.escape(construct)):
        parse_search(regex)


@pytest.mark.parametrize(
    ("regex", "texts"),
    [
        ("(?:(?!a).)*", ["", "a", "ba", "bb"]),
        ("^((?=a)b)+", ["", "b", "ab"]),
        ("^((?=a)[ab]){0,2}$", ["", "a", "aa", "aaa", "ab"]),
        ("(?=^a)", ["a", "ba", ""]),
    ],
)
def test_what_used_to_be_refused_agrees_with_re(regex: str, texts: list[str]) -> None:
    """Lookaheads under a quantifier, and ``^`` inside a lookahead, compile since the markers."""
    dfa = compile_ir(parse_search(regex, flavor="python"))
    for text in texts:
        assert dfa.accepts(text.encode()) == (re.search(regex, text) is not None), (regex, text)


@settings(max_examples=200, deadline=None)
@given(pattern(), st.lists(st.text(alphabet='ab"\\\x01é', max_size=5), min_size=1, max_size=6))
def test_schema_patterns_with_lookaheads_agree_with_jsonschema(regex: str, texts: list[str]) -> None:
    """In a schema the pattern's automaton is escaped as a whole (``canonical.escaped_dfa``): quotes,
    backslashes and control characters in their canonical escapes, other characters raw."""
    schema = {"type": "string", "pattern": regex}
    dfa = compile_ir(compile_schema_ir(schema).node)
    validator = Draft202012Validator(schema)
    for text in texts:
        written = json.dumps(text, ensure_ascii=False).encode()
        assert dfa.accepts(written) == validator.is_valid(text), (regex, text)
