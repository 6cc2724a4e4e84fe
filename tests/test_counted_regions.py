"""Counted regions (``automata.counted``): a marker DFA expanded with a counter accepts exactly
what the explicit repetition accepts, on the canonical JSON string character and on small
characters, in contexts that enter, leave and re-enter a region; and the expansion refuses the
marker edges a single counter cannot run."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.counted import (
    MARKER_BYTES,
    CountedRegionError,
    check_no_markers,
    expand_markers,
)
from moonmaskc.automata.dfa import DFA
from moonmaskc.frontends.schema import canonical

M1, M2 = MARKER_BYTES[0], MARKER_BYTES[-1]
SMALL_CHAR = ir.alt(ir.byte_range(0x61, 0x62), ir.literal(b"\\n"), ir.literal("é".encode()))


def language_pair(template: ir.Node, char: ir.Node, bounds: dict[int, tuple[int, int]]) -> tuple[DFA, DFA]:
    """The counted DFA of ``template`` (whose marker bytes stand for ``char{lo, hi}``) and the
    explicit DFA of the same template with each marker replaced by the repetition."""

    def explicit(node: ir.Node) -> ir.Node:
        if isinstance(node, ir.ByteSet):
            for marker, (lo, hi) in bounds.items():
                if node.mask == 1 << marker:
                    return ir.repeat(char, lo, hi)
            return node
        if isinstance(node, ir.Seq):
            return ir.seq(*map(explicit, node.items))
        if isinstance(node, ir.Alt):
            return ir.alt(*map(explicit, node.items))
        if isinstance(node, ir.Repeat):
            return ir.repeat(explicit(node.item), node.min, node.max)
        return node

    counted = expand_markers(compile_ir(template), bounds, compile_ir(char))
    return counted, compile_ir(explicit(template))


def quoted_marker(marker: int) -> ir.Node:
    return ir.seq(ir.literal(b'"'), ir.byte_set(1 << marker), ir.literal(b'"'))


def array_of(item: ir.Node) -> ir.Node:
    return ir.seq(
        ir.literal(b"["), ir.optional(ir.seq(item, ir.star(ir.seq(ir.literal(b","), item)))), ir.literal(b"]")
    )


TEMPLATES = {
    "one string": quoted_marker(M1),
    "array of strings": array_of(quoted_marker(M1)),
    "string or number": ir.alt(quoted_marker(M1), ir.plus(ir.byte_range(0x30, 0x39))),
    "two regions": ir.seq(
        ir.literal(b"{"), quoted_marker(M1), ir.literal(b":"), quoted_marker(M2), ir.literal(b"}")
    ),
    "pairs in an array": array_of(ir.seq(quoted_marker(M1), ir.literal(b":"), quoted_marker(M2))),
}

SMALL_ALPHABET = [
    b"a",
    b"b",
    b"\\",
    b"n",
    "é".encode(),
    b"\xc3",
    b'"',
    b"[",
    b"]",
    b",",
    b"{",
    b"}",
    b":",
    b"7",
]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@given(
    bounds=st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 3), st.integers(0, 3)),
    pieces=st.lists(st.sampled_from(SMALL_ALPHABET), max_size=16),
)
def test_counted_small_character_matches_explicit_repetition(
    name: str, bounds: tuple[int, int, int, int], pieces: list[bytes]
) -> None:
    lo1, extra1, lo2, extra2 = bounds
    counted, explicit = language_pair(
        TEMPLATES[name], SMALL_CHAR, {M1: (lo1, lo1 + extra1), M2: (lo2, lo2 + extra2)}
    )
    data = b"".join(pieces)
    assert counted.accepts(data) == explicit.accepts(data)
    # Prefixes: live in the counted DFA exactly when they are live in the explicit one.
    assert (counted.walk(data)[1] is None) == (explicit.walk(data)[1] is None)


@given(
    lo=st.integers(0, 6),
    extra=st.integers(0, 6),
    body=st.text(max_size=14),
)
def test_counted_json_string_matches_explicit_repetition(lo: int, extra: int, body: str) -> None:
    template = array_of(quoted_marker(M1))
    counted, explicit = language_pair(template, canonical.STRING_CHAR, {M1: (lo, lo + extra)})
    for text in (
        f"[{canonical.serialize(body)}]",
        f"[{canonical.serialize(body)},{canonical.serialize(body[:3])}]",
    ):
        data = text.encode("utf-8", "surrogatepass")
        assert counted.accepts(data) == explicit.accepts(data)


def test_counted_json_string_counts_characters_not_bytes() -> None:
    counted, _ = language_pair(quoted_marker(M1), canonical.STRING_CHAR, {M1: (2, 3)})
    assert counted.regions is not None
    assert counted.regions.num_regions == 1
    accepted = ['"ab"', '"é\\n"', '"😀😀😀"', '"\\u0001x"']
    rejected = ['"a"', '"abcd"', '""', '"😀😀😀😀"']
    assert all(counted.accepts(canonical_text.encode()) for canonical_text in accepted)
    assert not any(counted.accepts(text.encode()) for text in rejected)
    # The region has one copy of the character automaton, whatever the bound.
    char = compile_ir(canonical.STRING_CHAR)
    large = expand_markers(compile_ir(quoted_marker(M1)), {M1: (0, 32767)}, char)
    small = expand_markers(compile_ir(quoted_marker(M1)), {M1: (0, 3)}, char)
    assert large.num_states == small.num_states < 20
    assert large.accepts(b'"' + b"x" * 32767 + b'"')
    assert not large.accepts(b'"' + b"x" * 32768 + b'"')


def test_counter_says_where_a_prefix_dies() -> None:
    counted, _ = language_pair(quoted_marker(M1), canonical.STRING_CHAR, {M1: (2, 3)})
    assert counted.walk(b'"abcd"')[1] == 4  # the fourth character is one too many
    assert counted.walk(b'"a"')[1] == 2  # the closing quote comes too early
    state, count, died = counted.walk_counted(b'"ab')
    assert (count, died) == (2, None) and state != 0


@pytest.mark.parametrize(
    "template",
    [
        ir.alt(quoted_marker(M1), ir.literal(b'"x"')),  # the marker shares the quote with a literal
        ir.seq(ir.literal(b'"'), ir.byte_set(1 << M1), ir.optional(ir.literal(b'"'))),  # accepts after it
        ir.seq(
            ir.literal(b'"'), ir.byte_set(1 << M1), ir.byte_set(1 << M2), ir.literal(b'"')
        ),  # two in a row
        ir.seq(ir.literal(b'"'), ir.byte_set(1 << M1), ir.literal(b"a")),  # 'a' would start a character
    ],
)
def test_expansion_refuses_what_one_counter_cannot_run(template: ir.Node) -> None:
    with pytest.raises(CountedRegionError):
        expand_markers(compile_ir(template), {M1: (0, 5), M2: (1, 2)}, compile_ir(SMALL_CHAR))


def test_markers_never_reach_a_product() -> None:
    marked = compile_ir(quoted_marker(M1))
    with pytest.raises(CountedRegionError, match="product"):
        check_no_markers({M1: (0, 5)}, compile_ir(ir.literal(b'"a"')), marked)
    check_no_markers({M1: (0, 5)}, compile_ir(ir.literal(b'"a"')))


def test_no_marker_edge_leaves_the_dfa_alone() -> None:
    plain = compile_ir(ir.literal(b'"a"'))
    assert expand_markers(plain, {M1: (0, 5)}, compile_ir(SMALL_CHAR)) is plain


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@given(
    bounds=st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 3), st.integers(0, 3)),
    seed=st.integers(0, 99),
)
def test_counted_distances_and_samples_match_explicit_repetition(
    name: str, bounds: tuple[int, int, int, int], seed: int
) -> None:
    import random

    from moonmaskc.automata.sample import sample

    lo1, extra1, lo2, extra2 = bounds
    counted, explicit = language_pair(
        TEMPLATES[name], SMALL_CHAR, {M1: (lo1, lo1 + extra1), M2: (lo2, lo2 + extra2)}
    )
    completion = counted.shortest_completion(counted.start)
    assert completion is not None and explicit.accepts(completion)
    assert len(completion) == counted.cost(counted.start) == explicit.distance[explicit.start]
    # From every prefix of a sample: the counted cost is the explicit distance.
    drawn = sample(counted, random.Random(seed), max_len=12)
    assert drawn is not None and explicit.accepts(drawn)
    state, count = counted.start, 0
    for cut in range(len(drawn) + 1):
        state, count, died = counted.walk_counted(drawn[:cut])
        assert died is None
        assert counted.cost(state, count) == explicit.distance[explicit.walk(drawn[:cut])[0]]
