"""Nest regions (``moonmaskc.automata.nested``): a marker byte expanded into a JSON value of any
depth with a bracket stack, against the value of bounded depth written out as states."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import MAX_NEST_ENTRIES, NestRegionError, accepts, expand_nests, walk
from moonmaskc.frontends.schema.automata import NEST_CALL, Automata
from moonmaskc.frontends.schema.layout import Layout
from moonmaskc.limits import Limits
from tests.oracles.json_values import nesting_depth

MARKER = 0xC0
FREE = ir.literal(bytes([MARKER]))

HOSTS = {
    "member": lambda value: ir.seq(ir.literal(b'{"a":'), value, ir.literal(b"}")),
    "document": lambda value: value,
    "two in an array": lambda value: ir.seq(
        ir.literal(b"["), value, ir.literal(b","), value, ir.literal(b"]")
    ),
    "free items": lambda value: ir.seq(
        ir.literal(b"["),
        ir.optional(ir.seq(value, ir.star(ir.seq(ir.literal(b","), value)))),
        ir.literal(b"]"),
    ),
    "optional member": lambda value: ir.seq(
        ir.literal(b"{"),
        ir.optional(ir.seq(ir.literal(b'"a":'), value, ir.literal(b","))),
        ir.literal(b'"b":1}'),
    ),
}


def pair(host: str, policy: str = "compact", depth: int = 3) -> tuple[DFA, DFA]:
    """The host with a nest region, and the host with the value of ``depth`` written out."""
    automata = Automata(Layout.of(policy), Limits())
    build = HOSTS[host]
    nested = expand_nests(compile_ir(build(FREE)), MARKER, automata.nest_level(), NEST_CALL, b"{[")
    bounded = compile_ir(build(automata.universe_leaf(depth)))
    return nested, bounded


SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=4),
)
VALUES = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def canonical(value: Any) -> bytes:
    """The canonical spelling the schema front end writes (numbers in their one spelling)."""
    from tests.schema_suite_report import _written

    return _written(value).encode()


def written(host: str, text: bytes) -> list[bytes]:
    if host == "member":
        return [b'{"a":' + text + b"}"]
    if host == "document":
        return [text]
    if host == "free items":
        return [b"[" + text + b"]", b"[" + text + b"," + text + b"]", b"[]"]
    if host == "two in an array":
        return [b"[" + text + b"," + text + b"]"]
    return [b'{"a":' + text + b',"b":1}', b'{"b":1}']


@pytest.mark.parametrize("host", sorted(HOSTS))
@settings(max_examples=150, deadline=None)
@given(
    value=VALUES,
    cut=st.integers(0, 200),
    tail=st.sampled_from([b"", b"}", b"]", b",", b"]}", b"}]", b"1", b'"']),
)
def test_a_nest_region_accepts_what_the_bounded_value_accepts_within_its_depth(
    host: str, value: Any, cut: int, tail: bytes
) -> None:
    nested, bounded = NESTED[host]
    for text in written(host, canonical(value)):
        assert accepts(nested, text)
        if nesting_depth(value) <= 3:
            assert bounded.accepts(text)
        mangled = text[:cut] + tail
        if nesting_depth(value) <= 2:
            assert accepts(nested, mangled) == bounded.accepts(mangled), mangled


NESTED = {host: pair(host) for host in HOSTS}


@pytest.mark.parametrize("policy", ["flexible", "any"])
@settings(max_examples=60, deadline=None)
@given(value=VALUES, spaces=st.sampled_from([b" ", b"\n  ", b""]))
def test_a_nest_region_follows_the_layout(policy: str, value: Any, spaces: bytes) -> None:
    nested, bounded = FLEXIBLE[policy]
    text = json.dumps(value, indent=1 if spaces else None, ensure_ascii=False).encode()
    text = b'{"a":' + text + b"}"
    if nesting_depth(value) <= 3:
        assert accepts(nested, text) == bounded.accepts(text)


FLEXIBLE = {policy: pair("member", policy) for policy in ("flexible", "any")}


def test_values_nest_as_deep_as_the_stack_holds_and_no_deeper() -> None:
    nested, _ = NESTED["member"]
    deepest = MAX_NEST_ENTRIES + 1  # the outermost container is no stack entry
    assert accepts(nested, b'{"a":' + b"[" * deepest + b"]" * deepest + b"}")
    assert not accepts(nested, b'{"a":' + b"[" * (deepest + 1) + b"]" * (deepest + 1) + b"}")
    mixed = b'{"a":' + b'{"k":[' * 10 + b"1" + b"]}" * 10 + b"}"
    assert accepts(nested, mixed)
    assert not accepts(nested, mixed.replace(b"]}]}", b"}]]}", 1))


def shortest_completion(dfa: DFA, state: int, stack: int, horizon: int = 12) -> int:
    """Breadth-first over (state, stack): the fewest bytes to acceptance."""
    seen = {(state, stack)}
    queue = deque([(state, stack, 0)])
    while queue:
        q, s, cost = queue.popleft()
        if s == 0 and dfa.accepting[q]:
            return cost
        if cost == horizon:
            continue
        for byte in range(256):
            following = walk(dfa, [byte], q, s)
            if following[0] and following not in seen:
                seen.add(following)
                queue.append((*following, cost + 1))
    raise AssertionError("no completion within the horizon")


@pytest.mark.parametrize(
    "prefix",
    [b'{"a":', b'{"a":[', b'{"a":[[', b'{"a":[{"k":[1', b'{"a":{"x":"ab', b'{"a":-', b'{"a":{"', b'{"a":[[]'],
)
def test_the_distance_plus_the_stack_entries_is_the_shortest_completion(prefix: bytes) -> None:
    nested, _ = NESTED["member"]
    state, stack = walk(nested, prefix)
    assert state
    assert nested.nests is not None
    assert nested.nests.completion(nested.distance, state, stack) == shortest_completion(nested, state, stack)


def test_a_free_value_beside_another_value_is_refused() -> None:
    automata = Automata(Layout.of("compact"), Limits())
    host = compile_ir(ir.seq(ir.literal(b"["), ir.alt(FREE, ir.literal(b'"x"')), ir.literal(b"]")))
    with pytest.raises(NestRegionError, match="shares its first byte"):
        expand_nests(host, MARKER, automata.nest_level(), NEST_CALL, b"{[")


def test_no_marker_leaves_the_dfa_as_it_is() -> None:
    automata = Automata(Layout.of("compact"), Limits())
    host = compile_ir(ir.literal(b"[1]"))
    assert expand_nests(host, MARKER, automata.nest_level(), NEST_CALL, b"{[") is host


def test_a_nest_region_is_smaller_than_the_value_at_depth_three() -> None:
    nested, bounded = NESTED["member"]
    assert nested.num_states * 2 < bounded.num_states


def reaches_pop(dfa: DFA, state: int, data: bytes) -> bool:
    """Whether ``data`` read from ``state`` reaches a byte that closes a container of copy 1,
    walked with a stack deep enough that none of its own pops empties it."""
    nests = dfa.nests
    assert nests is not None
    current, stack = state, (1 << 20) if nests.copy[state] >= 1 else 0
    for byte in data:
        if nests.region[current] >= 0 and nests.copy[current] >= 1 and nests.pops[nests.role[current], byte]:
            return True
        current, stack = walk(dfa, [byte], current, stack)
        if not current:
            return False
    return False


TOKENS = [
    b"",
    b"}",
    b"]",
    b"},",
    b"}]",
    b"]]",
    b'"}',
    b'"},{"',
    b"1]",
    b"[]",
    b"{}",
    b"[[",
    b"[1]",
    b'{"a"',
    b":",
    b",",
    b"0",
    b'"',
    b"a",
    b"x}",
    b"]}",
    b"}}}",
    b"]:",
]


def test_the_dynamic_tokens_are_those_whose_walk_reaches_a_pop() -> None:
    from moonmaskc.nest_tokens import dynamic_tokens, probe_dfa
    from moonmaskc.vocabulary import Vocabulary

    automata = Automata(Layout.of("compact"), Limits())
    level = automata.nest_level()
    vocabulary = Vocabulary.from_tokens(TOKENS, eos_id=0)
    found = dynamic_tokens(level, NEST_CALL, b"{[", vocabulary)
    probe, _, popped = probe_dfa(level, NEST_CALL, b"{[")
    assert probe.walk(b"[[")[0] not in (0, popped) and probe.walk(b"[[]")[0] == popped
    assert probe.walk(b"[]")[0] not in (0, popped)
    expanded = expand_nests(compile_ir(FREE), MARKER, level, NEST_CALL, b"{[")
    assert expanded.nests is not None
    checked = 0
    for state in range(1, expanded.num_states):
        if expanded.nests.region[state] < 0:
            continue
        key = (bool(expanded.nests.copy[state] >= 1), int(expanded.nests.role[state]))
        expected = [token for token, data in enumerate(TOKENS) if data and reaches_pop(expanded, state, data)]
        assert found.get(key, np.zeros(0, dtype=np.int32)).tolist() == expected, (state, key)
        checked += 1
    assert checked > 100
    assert found  # "}" after a member, '"}' in a string, "[]" at a value, ...


def test_the_dynamic_tokens_of_every_state_include_those_that_enter_a_region_first() -> None:
    from moonmaskc.nest_tokens import dynamic_tokens_of
    from moonmaskc.vocabulary import Vocabulary

    tokens = [*TOKENS, b'{"a":[[]', b":[[1]", b'"a":[{}]']
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=0)
    nested, _ = NESTED["member"]
    assert nested.nests is not None
    offsets, ids = dynamic_tokens_of(nested, vocabulary)
    assert offsets.shape == (nested.num_states + 1,) and offsets[-1] == ids.size
    for state in range(1, nested.num_states):
        expected = [token for token, data in enumerate(tokens) if data and reaches_pop(nested, state, data)]
        assert ids[offsets[state] : offsets[state + 1]].tolist() == expected, state
    start_ids = ids[offsets[nested.start] : offsets[nested.start + 1]].tolist()
    assert tokens.index(b'{"a":[[]') in start_ids  # enters the region, opens two, closes one
