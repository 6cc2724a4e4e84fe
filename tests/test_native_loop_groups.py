"""Loop groups in the native token walk: the same maps and tables, with the strings kept implicit.

``token_walk.home_states`` picks each state's home (a state many bytes keep in place, the inside
of a string), ``token_walk.grouped_homes`` gives the states inside a home (a string's escapes and
multi-byte characters) that home too, and ``token_classes.loop_groups`` groups the states by home
and role; ``compose_over_trie``
then holds "most of this group goes home" as one bit per map. Nothing a caller sees may change:
the composition with groups must give the same map count, node maps, eos map and compact table as
without (on real schemas with GPT-2 and Llama-3, whose multi-byte characters leave a string and
come back, and on hypothesis-made DFAs with every threshold at its lowest), the token classes
must equal the pure path's, and malformed group arrays are ``BAD_INPUT``.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import compile_schema, token_classes
from moonmaskc.automata.dfa import DFA
from moonmaskc.token_table import build_token_table
from moonmaskc.trie import ByteTrie, build_trie
from moonmaskc.vocabulary import Vocabulary
from tests.conftest import NOT_BUILT, PROJECT_ROOT, data_path, native_walk
from tests.test_native_token_walk import (
    assert_same_tables,
    both_paths,
    composed_arguments,
    real_vocabulary,
    schema_dfa,
    shared_cache,  # noqa: F401  (an autouse fixture: the cache folder)
    small_cases,
)

EXAMPLES = sorted((PROJECT_ROOT / "examples" / "schemas").glob("*.json"))
BENCH_SCHEMAS = (
    "Kubernetes/kb_57_Normalized.json",
    "Kubernetes/kb_95_Normalized.json",
    "Github_ultra/o15627.json",
)


def groups_of(walk: ModuleType, dfa: DFA, least: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The groups as ``token_classes`` makes them: homes, the states inside them, their roles."""
    table = np.ascontiguousarray(dfa.transitions, dtype=np.int32)
    byte_class = np.ascontiguousarray(dfa.byte_class, dtype=np.int32)
    status, _, home, signature = walk.grouped_homes(table, byte_class, least, 0, token_classes.INSIDE_DEPTH)
    assert status == walk.OK
    return token_classes.loop_groups(table, home, np.unique(signature, return_inverse=True)[1].reshape(-1))


def composed(walk: ModuleType, dfa: DFA, trie: ByteTrie, groups: object) -> tuple[object, ...]:
    """``compose_over_trie`` (with ``groups`` or without) and the compact table of every map."""
    arguments = composed_arguments(walk, dfa, trie)
    keywords = {}
    if groups is not None:
        group_of, group_home, group_loops = groups  # type: ignore[misc]
        keywords = {"group_of": group_of, "group_home": group_home, "group_loops": group_loops}
    status, count, node_map, maps, eos_map = walk.compose_over_trie(*arguments, **keywords)
    assert status == walk.OK
    if groups is not None:
        assert_stored_as_the_rule_says(maps, count, groups)  # type: ignore[arg-type]
    table = maps.compact_table(np.arange(count, dtype=np.int64))
    assert table[0] == walk.OK
    return count, node_map, eos_map, table[1:]


def assert_stored_as_the_rule_says(
    maps: object, count: int, groups: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    """Every stored map is in the one form its function allows: a group's bit set exactly when at
    least half of its states go home, then the others listed (0 included), else its states alive
    listed; outside every group the states alive listed; the support ascending. (Two forms of one
    function would be two maps, and two token classes, for one behaviour.)"""
    group_of, group_home, group_loops = groups
    states = len(group_of)
    members = [np.flatnonzero(group_of == g) for g in range(group_loops.shape[0])]
    outside = group_of < 0
    assert maps.stored(count) is None and maps.stored(-1) is None  # type: ignore[attr-defined]
    for map_id in range(count):
        support, targets, implicit = maps.stored(map_id)  # type: ignore[attr-defined]
        assert np.all(np.diff(support) > 0) and implicit >> len(members) == 0
        function = np.zeros(states, dtype=np.int64)
        for group, states_of in enumerate(members):
            if implicit >> group & 1:
                function[states_of] = group_home[states_of]
        function[support] = targets
        listed = np.zeros(states, dtype=bool)
        listed[support] = True
        assert np.array_equal(listed[outside], function[outside] != 0)
        for group, states_of in enumerate(members):
            home = function[states_of] == group_home[states_of]
            set_bit = bool(implicit >> group & 1)
            assert set_bit == (2 * np.count_nonzero(home) >= len(states_of)), (map_id, group)
            expected = ~home if set_bit else function[states_of] != 0
            assert np.array_equal(listed[states_of], expected), (map_id, group)


def assert_same_composition(got: tuple[object, ...], expected: tuple[object, ...]) -> None:
    count, node_map, eos_map, table = got
    assert count == expected[0] and eos_map == expected[2]
    assert np.array_equal(node_map, expected[1])  # type: ignore[arg-type]
    for mine, theirs in zip(table, expected[3], strict=True):  # type: ignore[call-overload]
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)


# -- the composition with groups against the one without --------------------------------------


@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
@pytest.mark.parametrize("schema", BENCH_SCHEMAS)
def test_grouped_composition_matches_the_plain_one_on_large_schemas(
    walk: ModuleType, tokenizer: str, schema: str
) -> None:
    """Schemas whose strings fill most of the table (Kubernetes, Github_ultra): the groups form
    at the default thresholds, and every map, the eos map and the compact table are the same."""
    _, trie = real_vocabulary(tokenizer)
    dfa = schema_dfa(data_path("schemas", "jsonschemabench", schema))
    groups = groups_of(walk, dfa, token_classes.LOOP_GROUP_BYTES)
    assert groups is not None and groups[2].shape[0] >= 1
    assert np.count_nonzero(groups[0] >= 0) >= token_classes.MIN_GROUPED_STATES
    assert_same_composition(composed(walk, dfa, trie, groups), composed(walk, dfa, trie, None))


@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
@pytest.mark.parametrize("schema", EXAMPLES, ids=lambda path: path.stem)
@pytest.mark.parametrize("least", [1, 4, token_classes.LOOP_GROUP_BYTES])
def test_grouped_composition_matches_on_the_examples_at_any_threshold(
    walk: ModuleType, monkeypatch: pytest.MonkeyPatch, tokenizer: str, schema: Path, least: int
) -> None:
    """The example schemas, grouped however small (``MIN_GROUPED_STATES`` 0) and from homes that
    a single byte keeps in place: the same composition as without groups."""
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 0)
    _, trie = real_vocabulary(tokenizer)
    dfa = schema_dfa(schema)
    groups = groups_of(walk, dfa, least)
    assert groups is not None
    assert_same_composition(composed(walk, dfa, trie, groups), composed(walk, dfa, trie, None))


@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
def test_token_tables_with_groups_match_the_pure_path(
    walk: ModuleType, monkeypatch: pytest.MonkeyPatch, tokenizer: str
) -> None:
    """``build_token_table`` with groups on every example (``MIN_GROUPED_STATES`` 0) against the
    numpy path, and on a Kubernetes schema at the default thresholds; its probe (the free values'
    closing tokens, fewer than ``MIN_GROUPED_NODES`` trie nodes) grouped too."""
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 0)
    monkeypatch.setattr(token_classes, "MIN_GROUPED_NODES", 0)
    monkeypatch.setattr(token_classes, "MIN_GROUPED_DFA", 0)
    monkeypatch.setattr(token_classes, "MIN_HOMES", 0)
    vocabulary, trie = real_vocabulary(tokenizer)
    paths = [*EXAMPLES, data_path("schemas", "jsonschemabench", BENCH_SCHEMAS[0])]
    for path in paths:
        dfa = schema_dfa(path)
        got, expected = both_paths(monkeypatch, lambda dfa=dfa: build_token_table(dfa, vocabulary, trie=trie))
        assert_same_tables(got, expected)


@settings(max_examples=200, deadline=None)
@given(small_cases(), st.integers(1, 3))
def test_small_dfas_with_groups_match_the_pure_path(case: tuple[DFA, Vocabulary], least: int) -> None:
    """Hypothesis DFAs and vocabularies, grouped from homes of ``least`` bytes: the grouped
    composition equals the plain one, and the token table equals the pure path's."""
    walk = native_walk()
    if walk is None:
        pytest.skip(NOT_BUILT)
    dfa, vocabulary = case
    trie = build_trie(vocabulary)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(token_classes, "MIN_GROUPED_STATES", 0)
        patch.setattr(token_classes, "MIN_GROUPED_NODES", 0)
        patch.setattr(token_classes, "MIN_GROUPED_DFA", 0)
        patch.setattr(token_classes, "MIN_HOMES", 0)
        patch.setattr(token_classes, "LOOP_GROUP_BYTES", least)
        groups = groups_of(walk, dfa, least)
        if groups is not None:
            assert_same_composition(composed(walk, dfa, trie, groups), composed(walk, dfa, trie, None))
        got, expected = both_paths(patch, lambda: build_token_table(dfa, vocabulary, trie=trie))
    assert_same_tables(got, expected)


# -- homes and groups ------------------------------------------------------------------------


def reference_homes(table: np.ndarray, byte_class: np.ndarray, least: int, fewest_homes: int) -> np.ndarray:
    """``home_states`` by its definition, one state at a time."""
    states = table.shape[0]
    by_byte = table[:, byte_class]  # [states, 256]
    looping = np.array([int(np.count_nonzero(by_byte[s] == s)) for s in range(states)])
    home = np.full(states, -1)
    for s in range(1, states):
        if looping[s] >= least:
            home[s] = s
    if np.count_nonzero(home >= 0) < fewest_homes:
        return home
    for s in range(1, states):
        if home[s] == s:
            continue
        candidates = []
        for target in sorted(set(by_byte[s].tolist())):
            if target <= 0 or home[target] != target:
                continue
            kept = by_byte[target] == target
            count = int(np.count_nonzero(kept & (by_byte[s] == target)))
            if 4 * count >= 3 * looping[target]:
                candidates.append((-count, target))
        if candidates:
            home[s] = min(candidates)[1]
    return home


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
    st.integers(1, 200),
    st.integers(0, 4),
)
def test_home_states_follow_their_definition(
    states: int, classes: int, seed: int, least: int, fewest_homes: int
) -> None:
    walk = native_walk()
    if walk is None:
        pytest.skip(NOT_BUILT)
    rng = np.random.default_rng(seed)
    table = rng.integers(0, states, size=(states, classes)).astype(np.int32)
    table[0] = 0
    byte_class = rng.integers(0, classes, size=256).astype(np.int32)
    status, home = walk.home_states(table, byte_class, least, fewest_homes)
    assert status == walk.OK
    assert np.array_equal(home, reference_homes(table, byte_class, least, fewest_homes))


def test_home_states_reject_a_byte_class_past_the_columns(walk: ModuleType) -> None:
    table = np.zeros((3, 2), dtype=np.int32)
    for byte_class in (np.full(256, 2, np.int32), np.full(256, -1, np.int32), np.zeros(7, np.int32)):
        assert walk.home_states(table, byte_class, 4) == (walk.BAD_INPUT, None)


def test_strings_make_the_groups_and_small_tables_keep_none(walk: ModuleType) -> None:
    """On a schema of many string properties the string's inside is a home and its first
    character a lead-in; below ``MIN_GROUPED_STATES`` no groups are made."""
    schema = {"type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(300)}}
    dfa = compile_schema(schema, tokenizer=None).dfa
    groups = groups_of(walk, dfa, token_classes.LOOP_GROUP_BYTES)
    assert groups is not None
    group_of, group_home, _ = groups
    homes = np.flatnonzero(group_home == np.arange(dfa.num_states))
    by_byte = dfa.transitions[:, dfa.byte_class]
    inside = homes[by_byte[homes, ord("a")] == homes]  # (numbers' digits make homes too)
    assert inside.size >= 300 and np.all(by_byte[inside, ord('"')] != inside)
    leads = np.flatnonzero((group_of >= 0) & (group_home != np.arange(dfa.num_states)))
    assert np.count_nonzero(by_byte[leads, ord("a")] == group_home[leads]) >= 300
    small = compile_schema({"type": "string"}, tokenizer=None).dfa
    assert groups_of(walk, small, token_classes.LOOP_GROUP_BYTES) is None


def test_at_most_the_largest_groups_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Homes with distinct looping classes make distinct groups; past ``MAX_LOOP_GROUPS`` the
    largest are kept and the others' states stay outside every group."""
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 0)
    monkeypatch.setattr(token_classes, "MAX_LOOP_GROUPS", 2)
    table = np.zeros((7, 3), dtype=np.int32)
    table[1] = [1, 0, 0]  # three kinds of home: loops on class 0, on class 1, on class 2
    table[2] = [0, 2, 0]
    table[3] = [0, 3, 0]
    table[4] = [0, 0, 4]
    table[5] = [0, 0, 0]
    home = np.array([-1, 1, 2, 3, 4, 3, -1], dtype=np.int32)  # state 5 a lead-in of home 3
    groups = token_classes.loop_groups(table, home)
    assert groups is not None
    group_of, group_home, group_loops = groups
    assert group_of[[2, 3, 5]].tolist() == [0, 0, 0]  # the class-1 kind has three states
    assert group_of[0] == group_of[6] == -1 and sorted(group_of[[1, 4]].tolist()) == [-1, 1]
    assert group_home.tolist() == [-1, *np.where(group_of[1:6] >= 0, home[1:6], -1).tolist(), -1]
    assert group_loops.shape == (2, 3) and group_loops[0].tolist() == [0, 1, 0]
    kept = 1 if group_of[1] == 1 else 4  # one of the two single-home kinds, the loops its own
    assert group_loops[1].tolist() == (table[kept] == kept).astype(int).tolist()
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 6)
    assert token_classes.loop_groups(table, home) is None  # five states with a home


# -- malformed groups ------------------------------------------------------------------------


def test_malformed_groups_are_rejected(walk: ModuleType) -> None:
    """Group arrays that break the contract (the group of a state, its home, the looping classes,
    the shapes) are ``BAD_INPUT`` before any composition."""
    table = np.array([[0, 0], [1, 2], [1, 0]], dtype=np.int32)  # 1 loops on class 0; 2 leads to 1
    dfa = DFA(table, np.zeros(256, dtype=np.int32), np.array([False, True, False]), start=1)
    vocabulary = Vocabulary.from_tokens([b"\x00", b"\x00\x00", b""], eos_id=2)
    trie = build_trie(vocabulary)
    good = (
        np.array([-1, 0, 0], dtype=np.int32),
        np.array([-1, 1, 1], dtype=np.int32),
        np.array([[1, 0]], dtype=np.uint8),
    )
    assert_same_composition(composed(walk, dfa, trie, good), composed(walk, dfa, trie, None))

    def changed(position: int, value: np.ndarray) -> tuple[np.ndarray, ...]:
        return (*good[:position], value, *good[position + 1 :])

    for bad in (
        changed(0, np.array([0, 0, 0], dtype=np.int32)),  # the dead state in a group
        changed(0, np.array([-1, 1, 0], dtype=np.int32)),  # a group past the groups
        changed(0, np.array([-1, 0], dtype=np.int32)),  # not one per state
        changed(1, np.array([-1, 2, 1], dtype=np.int32)),  # a home that is not its own home
        changed(1, np.array([-1, 1, 2], dtype=np.int32)),  # a home that class 0 does not keep
        changed(1, np.array([-1, 1, 0], dtype=np.int32)),  # the dead state as a home
        changed(1, np.array([-1, 1, 5], dtype=np.int32)),  # a home past the states
        changed(2, np.array([[1, 1]], dtype=np.uint8)),  # class 1 does not keep home 1 in place
        changed(2, np.array([[1, 0], [1, 0]], dtype=np.uint8)),  # a group without a state
        changed(2, np.zeros((0, 2), dtype=np.uint8)),  # no group at all
        changed(2, np.array([[1, 0, 0]], dtype=np.uint8)),  # not one per class
        changed(2, np.ones((65, 2), dtype=np.uint8)),  # past 64 groups
    ):
        status = walk.compose_over_trie(
            *composed_arguments(walk, dfa, trie),
            group_of=bad[0],
            group_home=bad[1],
            group_loops=bad[2],
        )[0]
        assert status == walk.BAD_INPUT
    for missing in ("group_of", "group_home", "group_loops"):
        keywords = {"group_of": good[0], "group_home": good[1], "group_loops": good[2]}
        del keywords[missing]
        assert walk.compose_over_trie(*composed_arguments(walk, dfa, trie), **keywords)[0] == walk.BAD_INPUT


# -- the states inside a home -----------------------------------------------------------------


def reference_inside(table: np.ndarray, home: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """``inside_states`` by its definition, level by level over every state, then the states each
    home reaches through those given it: the homes it gives and, for each state given one, what
    each class does there (0 dies, 1 to the home itself, 2 to another state of the home)."""
    states = table.shape[0]
    label = home.astype(np.int64)
    codes = np.zeros(table.shape, dtype=np.int64)
    for _ in range(depth):
        found = {}
        for s in range(1, states):
            if label[s] >= 0:
                continue
            live = table[s][table[s] != 0]
            homes = set(label[live].tolist())
            if len(live) == 0 or len(homes) != 1 or -1 in homes:
                continue
            (own,) = homes
            if any(t == own or (home[t] < 0 and label[t] == own) for t in live.tolist()):
                found[s] = own
        for s, own in found.items():
            label[s] = own
            codes[s] = np.where(table[s] == 0, 0, np.where(table[s] == own, 1, 2))
        if not found:
            break
    reached = set()
    stack = [s for s in range(states) if home[s] == s]
    while stack:
        s = stack.pop()
        for t in table[s].tolist():
            if t != 0 and home[t] < 0 and label[t] == label[s] and t not in reached:
                reached.add(t)
                stack.append(t)
    for s in range(states):
        if home[s] < 0 and s not in reached:
            label[s] = -1
            codes[s] = 0
    return label, codes


def same_partition(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two labellings split the items alike (the labels themselves may differ)."""
    pairs = set(zip(first.tolist(), second.tolist(), strict=True))
    return len(pairs) == len(set(first.tolist())) == len(set(second.tolist()))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 14),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
    st.integers(1, 4),
    st.integers(0, 7),
    st.integers(0, 3),
)
def test_inside_states_follow_their_definition(
    states: int, classes: int, seed: int, least: int, depth: int, fewest_homes: int
) -> None:
    """Random tables (sparse, so that chains of escapes occur): ``grouped_homes`` gives the homes
    of ``home_states``, the states inside them by the definition, and signatures that split the
    inside states as their class codes do."""
    walk = native_walk()
    if walk is None:
        pytest.skip(NOT_BUILT)
    rng = np.random.default_rng(seed)
    table = rng.integers(0, states, size=(states, classes)).astype(np.int32)
    table[rng.random(table.shape) < 0.5] = 0
    table[0] = 0
    byte_class = rng.integers(0, classes, size=256).astype(np.int32)
    status, home = walk.home_states(table, byte_class, least, fewest_homes)
    assert status == walk.OK
    assert np.array_equal(home, reference_homes(table, byte_class, least, fewest_homes))
    grouped = walk.grouped_homes(table, byte_class, least, fewest_homes, depth)
    status, same_home, inside_home, signature = grouped
    assert status == walk.OK and np.array_equal(same_home, home)
    if np.count_nonzero(home == np.arange(states)) < fewest_homes:
        expected_home, codes = home.astype(np.int64), np.zeros(table.shape, dtype=np.int64)
    else:
        expected_home, codes = reference_inside(table, home, depth)
    assert np.array_equal(inside_home, expected_home)
    inside = np.flatnonzero((inside_home >= 0) & (home < 0))
    assert np.all(signature[inside] >> np.uint64(63) == 1) and not signature[inside_home < 0].any()
    assert not signature[home >= 0].any()
    code_keys = np.unique(codes[inside], axis=0, return_inverse=True)[1].reshape(-1)
    assert same_partition(signature[inside], code_keys)


def test_a_strings_escapes_and_characters_are_inside_it(
    walk: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a schema of string properties, the states after ``\\``, ``\\u``, ``\\u0`` and the lead
    byte of a two-byte character are inside their string's home, with one role for each of them
    across all the strings; the state before an opening quote is not."""
    schema = {
        "type": "object",
        "properties": {f"p{n}": {"type": "string"} for n in range(40)},
        "required": [f"p{n}" for n in range(40)],
        "additionalProperties": False,
    }
    dfa = compile_schema(schema, tokenizer=None).dfa
    table = np.ascontiguousarray(dfa.transitions, dtype=np.int32)
    byte_class = np.ascontiguousarray(dfa.byte_class, dtype=np.int32)
    status, home, inside_home, signature = walk.grouped_homes(
        table, byte_class, token_classes.LOOP_GROUP_BYTES, 0, token_classes.INSIDE_DEPTH
    )
    assert status == walk.OK

    def after(state: int, data: bytes) -> int:
        for byte in data:
            state = int(table[state, byte_class[byte]])
        return state

    strings = [after(dfa.start, b'{"p0":"')]
    for n in range(1, 40):
        strings.append(after(strings[-1], f'","p{n}":"'.encode()))
    assert all(home[s] == s for s in strings)
    for escape in (b"\\", b"\\u", b"\\u0", b"\xc3"):
        states = [after(s, escape) for s in strings]
        assert all(home[s] < 0 and inside_home[s] == h for s, h in zip(states, strings, strict=True))
        assert len(set(signature[states].tolist())) == 1
    before_quote = after(dfa.start, b'{"p0":')
    assert inside_home[before_quote] == -1 and signature[before_quote] == 0
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 0)
    groups = groups_of(walk, dfa, token_classes.LOOP_GROUP_BYTES)
    assert groups is not None
    group_of = groups[0]
    assert len({group_of[after(s, b"\\")] for s in strings}) == 1
    assert group_of[after(strings[0], b"\\")] != group_of[strings[0]] >= 0


def test_grouped_homes_reject_malformed_arrays(walk: ModuleType) -> None:
    """A target outside the states (for ``home_states`` too), a byte class outside the columns, a
    negative depth: ``BAD_INPUT``."""
    table = np.array([[0, 0], [1, 2], [0, 1]], dtype=np.int32)  # 1 a home, 2 its escape
    byte_class = np.zeros(256, dtype=np.int32)
    byte_class[1] = 1
    status, home, inside_home, _ = walk.grouped_homes(table, byte_class, 200, 0, 3)
    assert status == walk.OK and home.tolist() == [-1, 1, -1] and inside_home.tolist() == [-1, 1, 1]
    refused = (walk.BAD_INPUT, None, None, None)
    for bad in (np.array([[0, 0], [1, 3], [1, 0]]), np.array([[0, 0], [1, -1], [1, 0]])):
        assert walk.grouped_homes(bad.astype(np.int32), byte_class, 200, 0, 3) == refused
        assert walk.home_states(bad.astype(np.int32), byte_class, 200) == (walk.BAD_INPUT, None)
    assert walk.grouped_homes(table, np.full(256, 2, np.int32), 200, 0, 3) == refused
    assert walk.grouped_homes(table, byte_class, 200, 0, -1) == refused


def test_states_inside_homes_join_groups_but_never_make_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The states inside a home count for no threshold of ``MIN_GROUPED_STATES`` (on a small DFA
    their groups cost more than they save); each role of them is a group of its own, of at least
    ``MIN_INSIDE_GROUP`` states, whose members' home is in another group."""
    table = np.zeros((9, 2), dtype=np.int32)
    table[1] = [1, 0]  # the home, looping on class 0
    home = np.array([-1, 1, 1, 1, 1, 1, 1, 1, -1], dtype=np.int32)  # 2 a lead-in, 3-7 inside
    role = np.array([0, 0, 0, 1, 1, 2, 2, 3, 0])
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 3)
    monkeypatch.setattr(token_classes, "MIN_INSIDE_GROUP", 2)
    assert token_classes.loop_groups(table, home, role) is None  # two states but the inside ones
    monkeypatch.setattr(token_classes, "MIN_GROUPED_STATES", 2)
    groups = token_classes.loop_groups(table, home, role)
    assert groups is not None
    group_of, group_home, group_loops = groups
    assert group_of[1] == group_of[2] and len({group_of[1], group_of[3], group_of[5]}) == 3
    assert group_of[3] == group_of[4] and group_of[5] == group_of[6] and group_of[7] == -1
    assert group_home.tolist() == [-1, 1, 1, 1, 1, 1, 1, -1, -1]
    assert group_loops.tolist() == [[1, 0]] * 3
