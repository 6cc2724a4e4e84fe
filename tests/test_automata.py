"""Back end: NFA, DFA, minimisation and products agree with a direct IR matcher (an independent
oracle that works on spans, with no automaton), and the minimal DFA has no equivalent states."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata import minimize as minimize_module
from moonmaskc.automata import product as dfa_ops
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.determinize import determinize, united_groups
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.distances import completion_lengths
from moonmaskc.automata.minimize import (
    equivalent_state_pairs,
    minimize,
    refined_by_successors,
    seed_partition,
)
from moonmaskc.automata.sample import sample
from moonmaskc.automata.tables import Tables
from moonmaskc.automata.thompson import build_nfa
from moonmaskc.errors import LimitError
from moonmaskc.limits import Limits

ALPHABET = b"abc"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "schemas"


def ir_matches(node: ir.Node, data: bytes) -> bool:
    """Whether ``data`` is in the language of ``node``, by dynamic programming over spans."""

    @cache
    def match(n: ir.Node, i: int, j: int) -> bool:
        if isinstance(n, ir.ByteSet):
            return j == i + 1 and data[i] in n
        if isinstance(n, ir.Seq):
            return seq_match(n.items, i, j)
        if isinstance(n, ir.Alt):
            return any(match(item, i, j) for item in n.items)
        if isinstance(n, ir.Repeat):
            return repeat_match(n.item, n.min, n.max, i, j)
        return n.dfa.accepts(data[i:j])

    @cache
    def seq_match(items: tuple[ir.Node, ...], i: int, j: int) -> bool:
        if not items:
            return i == j
        return any(match(items[0], i, k) and seq_match(items[1:], k, j) for k in range(i, j + 1))

    @cache
    def repeat_match(item: ir.Node, lo: int, hi: int | None, i: int, j: int) -> bool:
        if i == j and lo == 0:
            return True
        if hi == 0:
            return i == j
        if i == j:
            return match(item, i, i) or ir.nullable(item)
        next_lo = max(lo - 1, 0)
        next_hi = None if hi is None else hi - 1
        return any(
            match(item, i, k) and repeat_match(item, next_lo, next_hi, k, j) for k in range(i + 1, j + 1)
        ) or (lo > 0 and match(item, i, i) and repeat_match(item, next_lo, next_hi, i, j))

    return match(node, 0, len(data))


def ir_nodes(
    more_leaves: st.SearchStrategy[ir.Node] | None = None,
    longest_seq: int = 3,
    three_part_loops: bool = False,
    max_leaves: int = 8,
) -> st.SearchStrategy[ir.Node]:
    """IRs over ``ALPHABET``: texts, epsilon and byte sets as leaves (and ``more_leaves``), joined
    by seq, alt, bounded and unbounded repeats and the JSON-list loop ``X (S X)*`` (with
    ``three_part_loops``, also ``Z X S (Z X S)*``: a loop whose body repeats the three parts
    before it, as a separated list with a prefix is built)."""
    leaves = st.one_of(
        st.sampled_from([ir.text("a"), ir.text("b"), ir.text("c"), ir.EPSILON]),
        st.sets(st.sampled_from(list(ALPHABET)), min_size=1).map(lambda bs: ir.byte_set(ir.mask_of(bs))),
        *([more_leaves] if more_leaves is not None else []),
    )

    def extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
        bounds = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).filter(
            lambda b: b[1] is None or b[1] >= b[0]
        )
        shapes = [
            st.lists(children, min_size=2, max_size=longest_seq).map(lambda xs: ir.seq(*xs)),
            st.lists(children, min_size=2, max_size=3).map(lambda xs: ir.alt(*xs)),
            st.tuples(children, bounds).map(lambda t: ir.repeat(t[0], t[1][0], t[1][1])),
            # X (S X)*, the shape of JSON lists, which the NFA builds with one copy of X
            st.tuples(children, children).map(lambda t: ir.seq(t[0], ir.star(ir.seq(t[1], t[0])))),
        ]
        if three_part_loops:
            shapes.append(
                st.tuples(children, children, children).map(
                    lambda t: ir.seq(t[2], t[0], t[1], ir.star(ir.seq(t[2], t[0], t[1])))
                )
            )
        return st.one_of(*shapes)

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def all_strings(max_len: int) -> list[bytes]:
    return [bytes(p) for n in range(max_len + 1) for p in itertools.product(ALPHABET, repeat=n)]


STRINGS = all_strings(5)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ir_nodes())
def test_nfa_dfa_minimal_dfa_and_oracle_agree(node: ir.Node) -> None:
    nfa = build_nfa(node)
    unminimised = determinize(nfa)
    minimal = minimize(unminimised)
    for s in STRINGS:
        expected = ir_matches(node, s)
        assert nfa.accepts(s) == expected, (ir.to_regex(node), s)
        assert unminimised.accepts(s) == expected, (ir.to_regex(node), s)
        assert minimal.accepts(s) == expected, (ir.to_regex(node), s)
    assert equivalent_state_pairs(minimal) == []
    assert minimal.num_states <= unminimised.num_states


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(1, (1 << 12) - 1), st.frozensets(st.integers(0, 5), min_size=1)), max_size=4
        ),
        max_size=4,
    )
)
def test_united_groups_follow_class_by_class_union(sources: list[list[tuple[int, frozenset[int]]]]) -> None:
    """``united_groups`` against its definition, class by class: each class leads to the union of the
    sets of every source group holding it; one pair per distinct set, disjoint, by lowest class."""
    disjoint_sources = []
    for source in sources:  # within one source, classes are disjoint (as the subset construction keeps them)
        taken, kept = 0, []
        for bits, targets in source:
            if bits & ~taken:
                kept.append((bits & ~taken, targets))
                taken |= bits
        disjoint_sources.append(kept)
    united = united_groups(disjoint_sources)
    expected: dict[int, frozenset[int]] = {}
    for source in disjoint_sources:
        for bits, targets in source:
            for c in range(12):
                if bits >> c & 1:
                    expected[c] = expected.get(c, frozenset()) | targets
    found: dict[int, frozenset[int]] = {}
    seen = 0
    for bits, targets in united:
        assert bits and not bits & seen
        seen |= bits
        for c in range(12):
            if bits >> c & 1:
                found[c] = targets
    assert found == expected
    assert len({targets for _, targets in united}) == len(united)
    lowest = [bits & -bits for bits, _ in united]
    assert lowest == sorted(lowest)


def _subset_tables_of(node: ir.Node) -> Tables:
    """The pruned subset DFA of ``node`` (``determinize``: native or pure, the same DFA), as the
    grouped live edges that minimisation works on."""
    return Tables.of(determinize(build_nfa(node), Limits()))


def _compiled_both_ways(node: ir.Node) -> tuple[DFA, DFA]:
    """``node`` minimised by refinement over successor blocks (the usual path) and by Hopcroft
    alone (the refinement given no budget, so it hands its seed to Hopcroft at once)."""
    refined = compile_ir(node)
    saved = minimize_module.REFINE_CHECKS_PER_STATE
    minimize_module.REFINE_CHECKS_PER_STATE = 0
    try:
        hopcroft = compile_ir(node)
    finally:
        minimize_module.REFINE_CHECKS_PER_STATE = saved
    return refined, hopcroft


def assert_same_dfa(left: DFA, right: DFA) -> None:
    assert left.start == right.start
    assert np.array_equal(left.transitions, right.transitions)
    assert np.array_equal(left.byte_class, right.byte_class)
    assert np.array_equal(left.accepting, right.accepting)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ir_nodes())
def test_refinement_and_hopcroft_build_the_same_minimal_dfa(node: ir.Node) -> None:
    refined, hopcroft = _compiled_both_ways(node)
    assert_same_dfa(refined, hopcroft)
    assert equivalent_state_pairs(refined) == []


@pytest.mark.parametrize("name", ["user", "order", "tree", "event"])
def test_refinement_and_hopcroft_agree_on_example_schemas(name: str) -> None:
    """Real schemas: hundreds of states that the seed partition leaves together, split over many
    rounds (order needs about 190 rounds of whole-table refinement)."""
    from moonmaskc.frontends.schema import compile_schema_ir

    schema = json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    node = compile_schema_ir(schema).node
    tables = _subset_tables_of(node)
    seed = seed_partition(tables)
    assert max(seed) + 1 < len(seed)  # something is left to refine
    _, stable = refined_by_successors(tables, list(seed), 8 * len(seed))
    assert stable  # the usual path, not the fallback
    refined, hopcroft = _compiled_both_ways(node)
    assert_same_dfa(refined, hopcroft)
    assert equivalent_state_pairs(refined) == []


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ir_nodes())
def test_seed_partition_keeps_equivalent_states_together(node: ir.Node) -> None:
    """The seed (acceptance, completion lengths, live classes, longest stay in the block) may only
    hold invariants of equivalence: states that Moore's refinement on the dense table finds
    equivalent share a seed block."""
    tables = _subset_tables_of(node)
    seed = seed_partition(tables)
    for first, other in equivalent_state_pairs(tables.to_dfa(merge_columns=False)):
        assert seed[first] == seed[other]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ir_nodes())
def test_completion_lengths_against_a_walk_of_the_dense_table(node: ir.Node) -> None:
    """Shortest and longest completion of every state, against a recursive walk of the dense
    table: the longest is -1 where a cycle is in reach (and for the dead state), else one more
    than the longest of the successors (0 with none)."""
    tables = _subset_tables_of(node)
    dfa = tables.to_dfa(merge_columns=False)
    successors = [sorted({int(t) for t in row if t}) for row in dfa.transitions]
    shortest, longest = completion_lengths(tables.predecessors, tables.accepting)

    @cache
    def longest_from(state: int, on_path: frozenset[int]) -> int:
        if state in on_path:
            return -1
        lengths = [longest_from(t, on_path | {state}) for t in successors[state]]
        return -1 if -1 in lengths else max(lengths, default=-1) + 1

    def shortest_from(state: int) -> int:
        frontier, seen, steps = {state}, {state}, 0
        while frontier:
            if any(dfa.accepting[s] for s in frontier):
                return steps
            frontier = {t for s in frontier for t in successors[s]} - seen
            seen |= frontier
            steps += 1
        return -1

    for state in range(1, dfa.num_states):
        assert longest[state] == longest_from(state, frozenset())
        assert shortest[state] == shortest_from(state)
    assert longest[0] == -1


def test_seed_partition_tells_a_chain_apart_in_one_pass() -> None:
    """The states of ``[a-z]{2,24}`` after a loop that keeps them all alive agree on acceptance,
    completion lengths and live classes; their longest stays in that block tell them apart, so
    refinement has nothing left to split (it would take one round per state)."""
    from moonmaskc.frontends import regex

    node = regex.parse(r"[a-z0-9]+(\.[a-z0-9]+)*\.[a-z]{2,24}").node
    tables = _subset_tables_of(node)
    seed = seed_partition(tables)
    assert max(seed) + 1 == len(seed) == compile_ir(node).num_states


@settings(max_examples=100, deadline=None, derandomize=True)
@given(ir_nodes())
def test_dead_state_and_distances(node: ir.Node) -> None:
    dfa = compile_ir(node)
    assert np.all(dfa.transitions[0] == 0) and not dfa.accepting[0]
    assert dfa.distance[0] == -1
    assert np.all(dfa.distance[1:] >= 0), "every live state must reach acceptance"
    for state in range(1, dfa.num_states):
        completion = dfa.shortest_completion(state)
        assert completion is not None and len(completion) == dfa.distance[state]
        final, died = dfa.walk(completion, state)
        assert died is None and dfa.accepting[final]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes())
def test_products_match_set_semantics(left: ir.Node, right: ir.Node) -> None:
    a, b = compile_ir(left), compile_ir(right)
    operations = {
        "intersect": (dfa_ops.intersect(a, b), lambda x, y: x and y),
        "union": (dfa_ops.union(a, b), lambda x, y: x or y),
        "difference": (dfa_ops.difference(a, b), lambda x, y: x and not y),
        "exactly_one": (dfa_ops.exactly_one([a, b]), lambda x, y: x != y),
    }
    for name, (combined, rule) in operations.items():
        assert equivalent_state_pairs(combined) == [], name
        for s in STRINGS:
            assert combined.accepts(s) == rule(a.accepts(s), b.accepts(s)), (name, s)
    assert dfa_ops.disjoint(a, b) == (operations["intersect"][0].start == 0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes())
def test_two_way_products_equal_the_general_product(left: ir.Node, right: ir.Node) -> None:
    """Products of two DFAs take a vectorised path; a third, universal DFA sends the same product
    through the general one, and the two minimal DFAs must be identical."""
    a, b = compile_ir(left), compile_ir(right)
    anything = compile_ir(ir.star(ir.byte_range(0, 255)))
    rules: list[Callable[[Sequence[bool]], bool]] = [
        all,
        any,
        lambda flags: flags[0] and not flags[1],
        lambda flags: sum(flags) == 1,
    ]
    for rule in rules:
        general = dfa_ops.product([a, b, anything], lambda flags, rule=rule: rule(flags[:2]) and flags[2])
        for cells_per_batch in (1 << 20, 1):  # one batch per level, and one pair per batch
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(dfa_ops, "_PAIR_CELLS_PER_BATCH", cells_per_batch)
                pair = dfa_ops.product([a, b], rule)
            assert pair.start == general.start
            assert np.array_equal(pair.transitions, general.transitions)
            assert np.array_equal(pair.byte_class, general.byte_class)
            assert np.array_equal(pair.accepting, general.accepting)


def test_separated_lists_copy_the_element_once() -> None:
    """``[X(,X)*]`` with X a sequence itself (flattened into the outer one by ``ir.seq``): one copy
    of X in the NFA, the same language as the span oracle says."""
    element = ir.seq(ir.text("ab"), ir.alt(ir.text("c"), ir.star(ir.text("a"))), ir.text("b"))
    listed = ir.seq(ir.text("c"), element, ir.star(ir.seq(ir.text("b"), element)), ir.text("c"))
    twice = ir.seq(ir.text("c"), element, ir.seq(ir.text("b"), element), ir.text("c"))
    assert build_nfa(listed).num_states < build_nfa(twice).num_states
    word = ir.text("abcabc")  # X+ is one loop too: six byte states, a loop state, an exit (and the start)
    assert build_nfa(ir.plus(word)).num_states <= len("abcabc") + 3
    assert all(build_nfa(ir.plus(word)).accepts(b"abcabc" * n) == (n > 0) for n in range(4))
    nfa, dfa = build_nfa(listed), compile_ir(listed)
    for s in all_strings(9):
        assert nfa.accepts(s) == dfa.accepts(s) == ir_matches(listed, s), s


def test_embedded_automaton_is_spliced_in() -> None:
    letters = compile_ir(ir.repeat(ir.byte_range(ord("a"), ord("c")), 1, 3))
    node = ir.seq(ir.text("<"), ir.Automaton(letters, "letters"), ir.text(">"))
    dfa = compile_ir(node)
    assert dfa.accepts(b"<abc>") and not dfa.accepts(b"<>") and not dfa.accepts(b"<abca>")
    assert "letters" in ir.to_regex(node)


def test_large_counted_repetitions_stay_linear() -> None:
    letters = compile_ir(ir.repeat(ir.byte_range(ord("a"), ord("z")), 1, 2000))
    assert letters.num_states == 2002
    assert letters.accepts(b"q" * 2000) and not letters.accepts(b"q" * 2001)
    pairs = compile_ir(ir.repeat(ir.alt(ir.text("ab"), ir.text("cd")), 0, 500))
    assert pairs.num_states == 1502
    assert pairs.accepts(b"abcd" * 250) and not pairs.accepts(b"ab" * 501)


def test_state_bound_names_the_flag() -> None:
    node = ir.repeat(ir.byte_range(0, 255), 0, 300)
    try:
        compile_ir(node, Limits(max_states=100))
    except LimitError as error:
        assert error.bound == "max_states" and "--max-states" in str(error)
    else:
        raise AssertionError("expected LimitError")


def test_empty_language_has_dead_start() -> None:
    dfa = compile_ir(ir.NOTHING)
    assert dfa.start == 0 and not dfa.accepts(b"")
    assert compile_ir(ir.EPSILON).accepts(b"")


def test_sample_returns_accepted_strings() -> None:
    dfa = compile_ir(ir.seq(ir.text("x"), ir.star(ir.alt(ir.text("ab"), ir.text("c"))), ir.text("y")))
    rng = random.Random(7)
    samples = [sample(dfa, rng, max_len=20) for _ in range(200)]
    assert all(s is not None and dfa.accepts(s) for s in samples)
    assert len(set(samples)) > 20


def test_embedded_automaton_with_classes_out_of_byte_order_compiles_the_same() -> None:
    """An embedded DFA whose byte classes are not numbered by their smallest byte (as product
    constructions may number them) gives the same minimal DFA, numbered the same, as its
    canonically numbered twin: the NFA copies its edges in byte order either way."""
    canonical = compile_ir(
        ir.seq(ir.repeat(ir.alt(ir.text("ab"), ir.byte_range(ord("c"), ord("z"))), 1, 4), ir.text(";"))
    )
    order = list(range(canonical.num_classes))[::-1]  # reversed column order
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order))
    shuffled = DFA(
        canonical.transitions[:, order], rank[canonical.byte_class], canonical.accepting, canonical.start
    )
    for data in all_strings(4):
        assert shuffled.accepts(data) == canonical.accepts(data)

    def around(dfa: DFA) -> ir.Node:
        return ir.seq(ir.text("<"), ir.star(ir.Automaton(dfa, "inner")), ir.text(">"))

    assert_same_dfa(compile_ir(around(shuffled)), compile_ir(around(canonical)))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ir_nodes(), st.integers(0, 40))
def test_size_exceeds_agrees_with_size(node: ir.Node, limit: int) -> None:
    assert ir.size_exceeds(node, limit) == (ir.size(node) > limit)


@settings(max_examples=150, deadline=None)
@given(ir_nodes(max_leaves=60))
def test_printing_with_the_kept_texts_matches_a_fresh_print(node: ir.Node) -> None:
    """``to_regex`` keeps the texts of subtrees of ``PRINT_MEMO_SIZES`` per process: a print that
    finds them gives the text a fresh print gives, with marker names or without."""
    bigger = ir.seq(node, ir.text("x"), ir.star(node), ir.alt(node, ir.text("yz")))
    names = {ord("a"): "(?#marker)"}
    ir._PRINTED.clear()
    fresh = ir.to_regex(bigger), ir.to_regex(bigger, names)
    again = ir.to_regex(bigger), ir.to_regex(bigger, names)
    assert again == fresh
    ir._PRINTED.clear()
    assert (ir.to_regex(bigger, names), ir.to_regex(bigger)) == (fresh[1], fresh[0])


def test_printing_keeps_no_text_of_a_subtree_that_holds_an_automaton() -> None:
    """An automaton leaf is not kept alive by the texts ``to_regex`` keeps."""
    string = canonical_string_body()
    leaf = ir.Automaton(compile_ir(ir.text("ab")), "letters")
    ir._PRINTED.clear()
    printed = ir.to_regex(ir.seq(string, leaf, string))
    assert f"(?#letters: {leaf.dfa.num_states} states)" in printed
    assert ir._PRINTED, "the string's subtrees are kept"
    assert all("letters" not in text for text in ir._PRINTED.values())
    assert ir.to_regex(ir.seq(string, leaf, string)) == printed


def canonical_string_body() -> ir.Node:
    from moonmaskc.frontends.schema import canonical

    return canonical.STRING_BODY


@settings(max_examples=150, deadline=None)
@given(ir_nodes(more_leaves=st.just(ir.Automaton(compile_ir(ir.text("ab")), "ab")), max_leaves=10))
def test_holds_automaton_is_read_off_the_node(node: ir.Node) -> None:
    """``ir.holds_automaton`` (cached at construction) against a walk of the whole tree."""
    walked = bool(ir.fold(node, lambda item, parts: isinstance(item, ir.Automaton) or any(parts)))
    assert ir.holds_automaton(node) == walked
    assert ir.holds_automaton(ir.seq(ir.text("x"), node)) == walked


@given(first=st.integers(0, ir.FULL_MASK), second=st.integers(0, ir.FULL_MASK))
def test_byte_sets_are_values(first: int, second: int) -> None:
    """``ByteSet`` compares and hashes by its mask alone (a tuple underneath), survives pickling
    and copying, and is never false: ``NOTHING`` is a node like any other."""
    import copy
    import pickle

    a, b = ir.ByteSet(first), ir.ByteSet(second)
    assert (a == b) == (first == second) and (a != b) == (first != second)
    assert a == ir.ByteSet(first) and hash(a) == hash(ir.ByteSet(first))
    assert a.mask == first and repr(a) == f"ByteSet(mask={first})"
    for restored in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert type(restored) is ir.ByteSet and restored == a and restored.mask == first
    assert a.bytes() == [byte for byte in range(256) if byte in a]
    assert a != ir.Seq((a, a)) and a != ir.EPSILON and ir.Alt((a, b)) != a and bool(a) and bool(ir.NOTHING)
    assert ir.seq(a, b) == ir.seq(ir.ByteSet(first), ir.ByteSet(second))
    assert len({a, ir.ByteSet(first)}) == 1
