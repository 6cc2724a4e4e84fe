"""patternProperties key regions: the undeclared keys split into non-empty sets of keys that
exactly the same patterns match, checked key by key against the pattern automata themselves."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import is_empty
from moonmaskc.frontends import regex
from moonmaskc.frontends.schema.property_keys import key_regions, matching_patterns
from moonmaskc.limits import Limits

PATTERNS = ["a", "^a", "b$", "^(ab)*$", "c+", "^[ab]{2}$", "^$", "[^a]", "ba|cc"]
KEYS = [f'"{"".join(letters)}"'.encode() for n in range(4) for letters in itertools.product("abc", repeat=n)]


def quoted_language(pattern: str) -> DFA:
    """Quoted strings over a, b, c whose content matches ``pattern`` (unanchored search)."""
    return compile_ir(regex.parse(f'"({regex_body(pattern)})"').node)


def regex_body(pattern: str) -> str:
    start = "" if pattern.startswith("^") else "[abc]*"
    end = "" if pattern.endswith("$") else "[abc]*"
    return f"{start}(?:{pattern.strip('^$')}){end}"


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=4, unique=True), st.booleans())
def test_regions_partition_the_keys_by_the_patterns_they_match(chosen: list[str], declared: bool) -> None:
    """Every key of the undeclared set lies in exactly one region, the one named by the patterns
    that accept it; no other string lies in any region; every region holds a key."""
    patterns = [quoted_language(p) for p in chosen]
    undeclared = '"[abc]*"'
    if declared:  # an object that declares "ab": its undeclared keys are all the other strings
        undeclared = '"([abc]?|[abc]{3,}|a[ac]|[bc][abc])"'
    keys = compile_ir(regex.parse(undeclared).node)
    regions = key_regions(keys, patterns, Limits(), "#")
    assert len({indexes for indexes, _ in regions}) == len(regions)
    assert all(not is_empty(region) for _, region in regions)
    for key in KEYS:
        holding = [indexes for indexes, region in regions if region.accepts(key)]
        if not keys.accepts(key):
            assert holding == []
            continue
        assert holding == [tuple(i for i, pattern in enumerate(patterns) if pattern.accepts(key))]


def test_a_declared_key_matches_the_patterns_that_accept_its_quoted_form() -> None:
    patterns = [quoted_language(p) for p in ("^a", "b$", "c")]
    assert matching_patterns(b'"ab"', patterns) == [0, 1]
    assert matching_patterns(b'"c"', patterns) == [2]
    assert matching_patterns(b'"ba"', patterns) == []
