"""Anchors inside a group that is a whole alternative (``(^a|b$)``, ``^x$|(^y$)``, nested), against
Python's ``re``: search (JSON Schema ``pattern``) and full-match languages agree on random patterns
and strings; anchors anywhere else are markers (``frontends/regex/markers.py``) and agree too."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc.automata.build import compile_ir
from moonmaskc.frontends.regex import parse, parse_search

BODIES = st.sampled_from(["a", "b", "ab", "a+", "b*a", "[ab]{2}", "(?:ba)?", ""])


@st.composite
def alternative(draw: st.DrawFn, depth: int) -> str:
    """An alternative: optional ``^``, then a body or (below the depth) an anchored group, then
    an optional ``$``."""
    start = "^" if draw(st.booleans()) else ""
    end = "$" if draw(st.booleans()) else ""
    if depth > 0 and draw(st.booleans()):
        inner = draw(st.lists(alternative(depth - 1), min_size=1, max_size=3))
        opener = draw(st.sampled_from(["(", "(?:"]))
        return f"{start}{opener}{'|'.join(inner)}){end}"
    return f"{start}{draw(BODIES)}{end}"


PATTERNS = st.lists(alternative(2), min_size=1, max_size=3).map("|".join)
TEXTS = st.text(alphabet="abx", max_size=6)


@settings(max_examples=400, deadline=None)
@given(PATTERNS, st.lists(TEXTS, min_size=1, max_size=8))
def test_search_and_full_match_agree_with_re(pattern: str, texts: list[str]) -> None:
    searched = compile_ir(parse_search(pattern, flavor="python"))
    matched = compile_ir(parse(pattern).node)
    for text in texts:
        data = text.encode()
        assert searched.accepts(data) == (re.search(pattern, text) is not None), (pattern, text)
        assert matched.accepts(data) == (re.fullmatch(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("(^[a-z]+$)", ["abc"], ["a b", ""]),  # JSONSchemaBench o2045: the whole pattern in a group
        ("(^Hpt_|^Int_|_Armour_)", ["Hpt_1", "x_Armour_"], ["xHpt_"]),  # o4180
        (r"^$|(^(?:\S+\s+){0,2}\S+$)", ["", "a b"], [" a", "a b c d"]),  # o21135
        ("^(a$|b)", ["a", "bc"], ["ab", "xa"]),
        ("(^a|b)$", ["a", "xb"], ["ax", "xa"]),
    ],
)
def test_real_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    dfa = compile_ir(parse_search(pattern))
    assert all(dfa.accepts(text.encode()) for text in yes)
    assert not any(dfa.accepts(text.encode()) for text in no)


@pytest.mark.parametrize("pattern", ["(^a)*", "(^a)b", "x(^a)", "(a|^b)c", "(^a)(b)", "((^a))b", "a(b$)c"])
def test_anchors_anywhere_else_agree_with_re(pattern: str) -> None:
    """``^`` and ``$`` anywhere else are markers, in both flavors; the python flavor's ``$`` also
    holds before a final newline."""
    searched = compile_ir(parse_search(pattern, flavor="python"))
    matched = compile_ir(parse(pattern).node)
    for text in ["", "a", "ab", "aa", "ba", "xa", "abc", "a\n", "ab\n", "abc\n", "bc"]:
        data = text.encode()
        assert searched.accepts(data) == (re.search(pattern, text) is not None), (pattern, text)
        assert matched.accepts(data) == (re.fullmatch(pattern, text) is not None), (pattern, text)


@st.composite
def dollar_pattern(draw: st.DrawFn, depth: int = 2) -> str:
    """Alternations of sequences of atoms, lookaheads, ``$`` and groups, quantified or not: ``$``
    and lookaheads anywhere."""
    items = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 3 if depth > 0 else 1))
        if kind == 0:
            items.append(draw(st.sampled_from(["a", "b", "[ab]", ",", "[^,]", "(?=a)", "(?!a)", "(?!a$)"])))
        elif kind == 1:
            items.append("$")
        else:
            inner = "|".join(draw(st.lists(dollar_pattern(depth - 1), min_size=1, max_size=2)))
            items.append(f"(?:{inner}){draw(st.sampled_from(['', '?', '*', '+', '{2,}']))}")
    return "".join(items)


@settings(max_examples=400, deadline=None)
@given(dollar_pattern(), st.lists(st.text(alphabet="ab,x", max_size=6), min_size=1, max_size=8))
def test_dollar_anywhere_in_the_ecma_flavor_agrees_with_re(pattern: str, texts: list[str]) -> None:
    """``$`` inside repetitions and before more of the pattern (a marker, ``frontends/regex/markers.py``):
    on texts without a newline, ECMAScript's ``$`` and Python's are the same assertion."""
    searched = compile_ir(parse_search(pattern, flavor="ecma"))
    matched = compile_ir(parse(pattern, flavor="ecma").node)
    for text in texts:
        data = text.encode()
        assert searched.accepts(data) == (re.search(pattern, text) is not None), (pattern, text)
        assert matched.accepts(data) == (re.fullmatch(pattern, text) is not None), (pattern, text)


def test_a_dollar_in_a_repetition_from_jsonschemabench() -> None:
    """catalogue-entry-schema.json: at least three comma-separated items."""
    dfa = compile_ir(parse_search(r"^([^,]+(,|$)){3,}$"))
    assert dfa.accepts(b"a,b,c") and dfa.accepts(b"a,b,c,")
    assert not dfa.accepts(b"a,b") and not dfa.accepts(b"a,,b,c")


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [("(?!a)a(b|$)", "a", False), ("(?=a)a(b|$)", "a", True), ("(?=a$)a(b|$)", "a", True)],
)
def test_a_lookahead_sees_the_end_markers(pattern: str, text: str, found: bool) -> None:
    """A lookahead's body is followed by any text up to the end, where the ``$`` after it holds:
    ``(?!a)`` must exclude ``a`` at the end of the text."""
    assert (re.search(pattern, text) is not None) is found
    assert compile_ir(parse_search(pattern, flavor="ecma")).accepts(text.encode()) is found
