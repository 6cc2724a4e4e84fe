"""The native token walk (``moonmaskc.automata._native.token_walk``) against the numpy path.

Token classes (``token_class``, the compact next-state table: rows of the states, the classes of
each row, the next states of each state) and packed masks must be the same arrays on both paths:
on the example schemas with GPT-2 and Llama-3, on hypothesis-made DFAs with a small
vocabulary, at the ``max_cells`` bound, and malformed arrays must raise a ``MoonmaskError`` on
both paths (never reach the C loops). The pure path is forced with ``MOONMASKC_PURE=1``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import compile_schema
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import PURE_ENV
from moonmaskc.errors import LimitError, MalformedArraysError, MoonmaskError
from moonmaskc.next_table import NextTable
from moonmaskc.token_classes import TokenClasses, first_children, token_classes
from moonmaskc.token_masks import packed_masks, packed_row_masks
from moonmaskc.token_table import TokenTable, build_token_table
from moonmaskc.trie import ByteTrie, build_trie, trie_for
from moonmaskc.vocabulary import Vocabulary, load_vocabulary
from tests.conftest import NOT_BUILT, PROJECT_ROOT, data_path, native_walk

SCHEMAS = sorted((PROJECT_ROOT / "examples" / "schemas").glob("*.json"))
TOKENIZERS = ("gpt2", "llama3")
T = TypeVar("T")


@pytest.fixture(autouse=True, scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOONMASKC_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


def both_paths(monkeypatch: pytest.MonkeyPatch, run: Callable[[], T]) -> tuple[T, T]:
    """``run()`` on the native path, then with the pure path forced."""
    monkeypatch.delenv(PURE_ENV, raising=False)
    native_result = run()
    monkeypatch.setenv(PURE_ENV, "1")
    try:
        pure_result = run()
    finally:
        monkeypatch.delenv(PURE_ENV, raising=False)
    return native_result, pure_result


def assert_same_next(got: NextTable, expected: NextTable) -> None:
    assert got.num_classes == expected.num_classes
    mine, theirs = got.to_arrays(), expected.to_arrays()
    for name in mine:
        assert mine[name].dtype == theirs[name].dtype, name
        assert np.array_equal(mine[name], theirs[name]), name


def assert_same_classes(got: TokenClasses, expected: TokenClasses) -> None:
    assert got.token_class.dtype == expected.token_class.dtype
    assert np.array_equal(got.token_class, expected.token_class)
    assert_same_next(got.next_table, expected.next_table)


def assert_same_tables(got: TokenTable, expected: TokenTable) -> None:
    for name in ("mask_rows", "state_row", "token_class"):
        assert getattr(got, name).dtype == getattr(expected, name).dtype, name
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
    assert_same_next(got.next_table, expected.next_table)


@cache
def schema_dfa(path: Path) -> DFA:
    return compile_schema(json.loads(path.read_text()), tokenizer=None).dfa


@cache
def real_vocabulary(name: str) -> tuple[Vocabulary, ByteTrie]:
    vocabulary = load_vocabulary(data_path("tokenizers", f"{name}.json"))
    return vocabulary, trie_for(vocabulary)


# -- real vocabularies ---------------------------------------------------------------------------


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda path: path.stem)
def test_schema_tables_are_the_same_on_both_paths(
    walk: ModuleType, monkeypatch: pytest.MonkeyPatch, tokenizer: str, schema: Path
) -> None:
    vocabulary, trie = real_vocabulary(tokenizer)
    dfa = schema_dfa(schema)
    native_classes, pure_classes = both_paths(
        monkeypatch, lambda: token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id)
    )
    assert_same_classes(native_classes, pure_classes)
    native_table, pure_table = both_paths(monkeypatch, lambda: build_token_table(dfa, vocabulary, trie=trie))
    assert_same_tables(native_table, pure_table)
    allowed = pure_table.row_classes()
    native_masks, pure_masks = both_paths(monkeypatch, lambda: packed_masks(allowed, pure_table.token_class))
    assert np.array_equal(native_masks, pure_masks)
    assert np.array_equal(native_masks, pure_table.mask_rows)


def composed_arguments(walk: ModuleType, dfa: DFA, trie: ByteTrie) -> tuple[object, ...]:
    """``compose_over_trie``'s positional arguments for ``dfa`` over ``trie`` (the eos row)."""
    narrow = dfa.num_states <= np.iinfo(np.uint16).max
    status, columns = walk.state_columns(np.ascontiguousarray(dfa.transitions, dtype=np.int32), narrow)
    assert status == walk.OK
    eos_row = np.where(dfa.accepting, np.arange(dfa.num_states), 0).astype(columns.dtype)
    return (
        columns,
        np.ascontiguousarray(trie.node_parent, dtype=np.int32),
        np.ascontiguousarray(trie.node_byte, dtype=np.uint8),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        np.ascontiguousarray(trie.level_offsets, dtype=np.int64),
        1 << 40,
        eos_row,
        None,
    )


@pytest.mark.parametrize("dense_maps", [0, 128, 1 << 16], ids=["hashed", "moved", "dense"])
def test_the_pair_table_gives_the_same_maps_dense_or_hashed(walk: ModuleType, dense_maps: int) -> None:
    """The (map, byte class) pairs are looked up in a dense table while it fits ``dense_pairs``
    entries and in a hash table after (moved there mid-walk when it outgrows the bound): the
    maps and the compact table are the same either way (``tool_call.json``, GPT-2)."""
    _, trie = real_vocabulary("gpt2")
    dfa = schema_dfa(SCHEMAS[[path.stem for path in SCHEMAS].index("tool_call")])
    arguments = composed_arguments(walk, dfa, trie)
    results = []
    for bound in (dense_maps * dfa.num_classes, 1 << 30):  # starts dense from 64 maps' pairs
        status, count, node_map, maps, eos_map = walk.compose_over_trie(*arguments, dense_pairs=bound)
        assert status == walk.OK
        ids = np.arange(count, dtype=np.int64)
        results.append((count, node_map, eos_map, maps.compact_table(ids)))
    (count, node_map, eos_map, table), (count_dense, node_map_dense, eos_dense, table_dense) = results
    assert count == count_dense > 128 and eos_map == eos_dense  # "moved" outgrows its bound
    assert np.array_equal(node_map, node_map_dense)
    assert all(np.array_equal(a, b) for a, b in zip(table[1:], table_dense[1:], strict=True))


@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
@pytest.mark.parametrize("schema", ["tool_call", "user", "integer", "date"])
def test_walking_only_the_live_childrens_levels_gives_the_same_maps(
    walk: ModuleType, tokenizer: str, schema: str
) -> None:
    """With ``first_child`` the levels where few nodes above are live visit only the children of
    those (every level of an integer's or a date's DFA, few of the schemas'): the same map count,
    node maps (dead nodes 0), eos map and compact table as the walk over every node."""
    _, trie = real_vocabulary(tokenizer)
    if schema == "integer":
        dfa = compile_schema({"type": "integer"}, tokenizer=None).dfa
    elif schema == "date":
        dfa = compile_schema({"type": "string", "format": "date"}, tokenizer=None).dfa
    else:
        dfa = schema_dfa(SCHEMAS[[path.stem for path in SCHEMAS].index(schema)])
    arguments = composed_arguments(walk, dfa, trie)
    first_child = first_children(trie)
    results = []
    for keywords in ({}, {"first_child": first_child}):
        status, count, node_map, maps, eos_map = walk.compose_over_trie(*arguments, **keywords)
        assert status == walk.OK
        results.append((count, node_map, eos_map, maps.compact_table(np.arange(count, dtype=np.int64))))
    (count, node_map, eos_map, table), (count_live, node_map_live, eos_live, table_live) = results
    assert count == count_live and eos_map == eos_live
    assert np.array_equal(node_map, node_map_live) and np.count_nonzero(node_map == 0) > 0
    assert all(np.array_equal(a, b) for a, b in zip(table[1:], table_live[1:], strict=True))


def test_first_children_are_where_each_nodes_children_start() -> None:
    """``first_children`` by its definition on a real trie, and kept for a read-only one."""
    _, trie = real_vocabulary("gpt2")
    first = first_children(trie)
    assert len(first) == trie.num_nodes + 1 and first[-1] == trie.num_nodes
    for node in (0, 1, 17, 500, trie.num_nodes // 2, trie.num_nodes - 1):
        children = np.flatnonzero(trie.node_parent == node)
        assert np.array_equal(children, np.arange(first[node], first[node + 1]))
    assert first_children(trie) is first


def test_progress_is_reported_alike(walk: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    vocabulary, trie = real_vocabulary("gpt2")
    dfa = schema_dfa(SCHEMAS[0])

    def fractions() -> list[float]:
        seen: list[float] = []
        token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id, on_level=seen.append)
        return seen

    native_fractions, pure_fractions = both_paths(monkeypatch, fractions)
    assert native_fractions == pure_fractions and native_fractions


def test_the_cell_bound_is_hit_alike(walk: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """For bounds around the store's growth points (64, 128, ... maps) and the class count, both
    paths either build the same classes or raise the same ``LimitError``."""
    vocabulary, trie = real_vocabulary("gpt2")
    dfa = schema_dfa(PROJECT_ROOT / "examples" / "schemas" / "user.json")
    states = dfa.num_states
    outcomes = set()
    for maps in (0, 1, 2, 63, 64, 65, 127, 128, 129, 300, 437, 438, 512, 700, 2000):

        def run(max_cells: int = maps * states) -> TokenClasses | str:
            try:
                return token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id, max_cells=max_cells)
            except LimitError as error:
                assert error.bound == "max_table_cells" and error.limit == max_cells
                return str(error)

        got, expected = both_paths(monkeypatch, run)
        if isinstance(expected, str):
            assert got == expected
            outcomes.add("limit")
        else:
            assert isinstance(got, TokenClasses)
            assert_same_classes(got, expected)
            outcomes.add("built")
    assert outcomes == {"limit", "built"}


# -- hypothesis-made DFAs on a small vocabulary ---------------------------------------------------

ALPHABET = b'ab{" \xc3\xa9'


@st.composite
def small_cases(draw: st.DrawFn) -> tuple[DFA, Vocabulary]:
    states = draw(st.integers(1, 9))
    classes = draw(st.integers(1, 5))
    transitions = np.array(
        draw(st.lists(st.integers(0, states - 1), min_size=states * classes, max_size=states * classes)),
        dtype=np.int32,
    ).reshape(states, classes)
    transitions[0] = 0
    byte_class = np.array(draw(st.lists(st.integers(0, classes - 1), min_size=256, max_size=256)))
    accepting = np.array([False, *draw(st.lists(st.booleans(), min_size=states - 1, max_size=states - 1))])
    dfa = DFA(transitions, byte_class, accepting, start=min(1, states - 1))
    tokens = draw(
        st.lists(st.binary(min_size=0, max_size=5).map(lambda b: bytes(ALPHABET[x % 7] for x in b)))
    )
    tokens.append(b"")  # eos
    extra = draw(st.lists(st.binary(min_size=1, max_size=3), max_size=4))  # any bytes at all
    tokens[len(tokens) - 1 : len(tokens) - 1] = extra
    return dfa, Vocabulary.from_tokens(tokens, eos_id=len(tokens) - 1)


def walked(dfa: DFA, data: bytes, state: int) -> int:
    for byte in data:
        state = int(dfa.transitions[state, dfa.byte_class[byte]])
    return state


@settings(max_examples=150, deadline=None)
@given(small_cases())
def test_small_dfas_give_the_same_classes_on_both_paths(case: tuple[DFA, Vocabulary]) -> None:
    dfa, vocabulary = case
    if native_walk() is None:
        pytest.skip(NOT_BUILT)
    trie = build_trie(vocabulary)
    with pytest.MonkeyPatch.context() as patch:
        got, expected = both_paths(patch, lambda: build_token_table(dfa, vocabulary, trie=trie))
    assert_same_tables(got, expected)
    for token, data in enumerate(vocabulary.token_bytes):  # and both are right
        for state in range(dfa.num_states):
            if token == vocabulary.eos_id:
                target = state if dfa.accepting[state] else 0
            else:
                target = walked(dfa, data, state) if data else 0
            assert got.following(state, token) == target


@st.composite
def mask_cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    classes = draw(st.integers(1, 10))
    vocab_size = draw(st.integers(0, 200))
    skew = draw(st.integers(0, classes - 1))
    token_class = np.array(
        draw(
            st.lists(
                st.one_of(st.just(skew), st.integers(0, classes - 1)),
                min_size=vocab_size,
                max_size=vocab_size,
            )
        ),
        dtype=draw(st.sampled_from([np.uint16, np.int32, np.int64])),
    )
    patterns = draw(
        st.lists(st.lists(st.booleans(), min_size=classes, max_size=classes), min_size=1, max_size=5)
    )
    picks = draw(st.lists(st.integers(0, len(patterns) - 1), max_size=40))
    allowed = np.array([patterns[i] for i in picks], dtype=bool).reshape(len(picks), classes)
    return allowed, token_class


@settings(max_examples=200, deadline=None)
@given(mask_cases())
def test_packed_masks_are_the_same_on_both_paths(case: tuple[np.ndarray, np.ndarray]) -> None:
    allowed, token_class = case
    if native_walk() is None:
        pytest.skip(NOT_BUILT)
    with pytest.MonkeyPatch.context() as patch:
        got, expected = both_paths(patch, lambda: packed_masks(allowed, token_class))
    padded = np.zeros((len(allowed), (len(token_class) + 31) // 32 * 32), dtype=bool)
    padded[:, : len(token_class)] = allowed[:, token_class.astype(np.intp)]
    direct = np.packbits(padded, axis=1, bitorder="little").view("<u4")
    assert got.dtype == expected.dtype == np.uint32
    assert np.array_equal(expected, direct)
    assert np.array_equal(got, direct)


def as_row_lists(allowed: np.ndarray, repeat_every: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``allowed`` as a compact table's row lists (offsets, classes); with ``repeat_every``, every
    such row lists its first class twice more (a class listed twice counts once)."""
    lists = []
    for index, row in enumerate(allowed):
        listed = np.flatnonzero(row).tolist()
        if repeat_every and index % repeat_every == 0 and listed:
            listed += [listed[0], listed[0]]
        lists.append(listed)
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(listed) for listed in lists])
    return offsets, np.array([c for listed in lists for c in listed], dtype=np.int32)


@settings(max_examples=200, deadline=None)
@given(mask_cases(), st.integers(0, 3))
def test_packed_row_masks_are_packed_masks(case: tuple[np.ndarray, np.ndarray], repeat_every: int) -> None:
    """Rows given as lists of classes (what the token table hands on) pack as the rows x classes
    array does, on both paths, a class listed twice included."""
    allowed, token_class = case
    if native_walk() is None:
        pytest.skip(NOT_BUILT)
    offsets, listed = as_row_lists(allowed, repeat_every)
    classes = allowed.shape[1]
    with pytest.MonkeyPatch.context() as patch:
        got, expected = both_paths(patch, lambda: packed_row_masks(offsets, listed, classes, token_class))
    direct = packed_masks(allowed, token_class)
    assert got.shape == expected.shape == direct.shape
    assert np.array_equal(got, direct) and np.array_equal(expected, direct)


def test_row_lists_out_of_range_are_refused(walk: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """An offset or a class out of range is BAD_INPUT natively, ``MalformedArraysError`` through
    ``packed_row_masks`` on both paths."""
    token_class = np.array([0, 1, 2, 1, 0], dtype=np.int32)
    good = (np.array([0, 2, 3], dtype=np.int64), np.array([0, 2, 1], dtype=np.int32))
    assert walk.pack_row_masks(*good, 3, token_class)[0] == walk.OK
    for offsets, listed in (
        (np.array([1, 2, 3]), good[1]),  # not from 0
        (np.array([0, 3, 2]), good[1]),  # backwards
        (np.array([0, 2, 4]), good[1]),  # past the lists
        (good[0], np.array([0, 3, 1])),  # a class past the classes
        (good[0], np.array([0, -1, 1])),
        (np.array([], dtype=np.int64), good[1]),  # not even the first offset
    ):
        offsets, listed = offsets.astype(np.int64), listed.astype(np.int32)
        assert walk.pack_row_masks(offsets, listed, 3, token_class) == (walk.BAD_INPUT, None)
        for pure in (False, True):
            if pure:
                monkeypatch.setenv(PURE_ENV, "1")
            else:
                monkeypatch.delenv(PURE_ENV, raising=False)
            with pytest.raises(MalformedArraysError):
                packed_row_masks(offsets, listed, 3, token_class)


def test_packing_from_any_window(walk: ModuleType) -> None:
    """Whatever earlier rows a row may start from, the masks are the definition's."""
    rng = np.random.default_rng(3)
    token_class = np.minimum(rng.zipf(1.4, 5000) - 1, 39).astype(np.int32)
    allowed = rng.random((60, 40)) < 0.5
    allowed[10:20] = allowed[9]  # repeated rows: a start with nothing to flip
    allowed[30] = True
    allowed[31] = False
    padded = np.zeros((60, (5000 + 31) // 32 * 32), dtype=bool)
    padded[:, :5000] = allowed[:, token_class]
    direct = np.packbits(padded, axis=1, bitorder="little").view("<u4")
    for window in (0, 1, 3, 16, 100):
        status, masks = walk.pack_masks(allowed.view(np.uint8), token_class, window)
        assert status == walk.OK and np.array_equal(masks, direct), window


@pytest.mark.parametrize("vocab_size", [1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 1001, 4099])
def test_packing_buckets_every_quarter_of_the_vocabulary(walk: ModuleType, vocab_size: int) -> None:
    """The tokens are bucketed by class in four quarters side by side (the last one also takes the
    tokens past four equal quarters; a vocabulary of fewer than four tokens is one lane): at every
    size the masks are the definition's, one class holding most tokens as on real vocabularies,
    and a class out of range in any quarter is refused."""
    rng = np.random.default_rng(vocab_size)
    token_class = np.where(rng.random(vocab_size) < 0.8, 2, rng.integers(0, 6, vocab_size)).astype(np.uint16)
    allowed = rng.random((9, 6)) < 0.5
    padded = np.zeros((9, (vocab_size + 31) // 32 * 32), dtype=bool)
    padded[:, :vocab_size] = allowed[:, token_class]
    direct = np.packbits(padded, axis=1, bitorder="little").view("<u4")
    for window in (0, 8):
        status, masks = walk.pack_masks(allowed.view(np.uint8), token_class, window)
        assert status == walk.OK and np.array_equal(masks, direct), window
    quarter = max(vocab_size // 4, 1)
    for place in {0, quarter - 1, quarter, 2 * quarter, 3 * quarter, vocab_size - 1}:
        if place < vocab_size:
            bad = token_class.copy()
            bad[place] = 6
            assert walk.pack_masks(allowed.view(np.uint8), bad, 8) == (walk.BAD_INPUT, None), place


# -- large synthetic DFAs ---------------------------------------------------------------------------


def sparse_dfa(states: int, seed: int) -> tuple[DFA, Vocabulary]:
    """A DFA of ``states`` states whose transitions mostly die (each lives with probability 1/8),
    so that the state maps below the first trie levels keep few states alive, and 600 random tokens
    over ``abcdefghz`` (eight bytes on six live byte classes; ``z`` on class 0 with the rest)."""
    rng = np.random.default_rng(seed)
    classes = 7
    transitions = rng.integers(1, states, size=(states, classes), dtype=np.int32)
    transitions[rng.random((states, classes)) < 7 / 8] = 0
    transitions[0] = 0
    byte_class = np.zeros(256, dtype=np.int32)
    for position, byte in enumerate(b"abcdefgh"):
        byte_class[byte] = 1 + position % (classes - 1)
    accepting = rng.random(states) < 0.3
    accepting[0] = False
    alphabet = np.frombuffer(b"abcdefghz", dtype=np.uint8)
    tokens = [bytes(rng.choice(alphabet, size=rng.integers(1, 6)).tolist()) for _ in range(600)]
    tokens += [b"", b"\xff"]  # eos, a token that dies everywhere
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=len(tokens) - 2)
    return DFA(transitions, byte_class, accepting, start=1), vocabulary


@pytest.mark.parametrize("states", [3_000, 70_000], ids=["uint16", "int32"])
def test_large_sparse_dfas_give_the_same_classes_on_both_paths(
    walk: ModuleType, monkeypatch: pytest.MonkeyPatch, states: int
) -> None:
    dfa, vocabulary = sparse_dfa(states, seed=states)
    trie = build_trie(vocabulary)
    native_classes, pure_classes = both_paths(
        monkeypatch, lambda: token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id)
    )
    assert_same_classes(native_classes, pure_classes)
    table = native_classes.next_table
    assert table.next_states.dtype == (np.uint16 if states <= 65_535 else np.int32)
    assert native_classes.num_classes > 100  # many distinct maps, most of them alive on few states
    rng = np.random.default_rng(1)
    for token in rng.choice(vocabulary.size, size=40, replace=False).tolist():  # and both are right
        data = vocabulary.token_bytes[token]
        cls = int(native_classes.token_class[token])
        for state in rng.choice(states, size=50, replace=False).tolist():
            if token == vocabulary.eos_id:
                target = state if dfa.accepting[state] else 0
            else:
                target = walked(dfa, data, state) if data else 0
            assert table.following(state, cls) == target


def test_the_compact_table_takes_only_stored_maps(walk: ModuleType) -> None:
    """``StateMaps.compact_table`` gives each state's classes (the maps alive there, in the order
    given) deduplicated into rows numbered by their first state, and its targets; ``BAD_INPUT``
    for ids past the stored maps (or negative); a ``StateMaps`` made by hand holds no map."""
    dfa, trie, _ = small_dfa_and_trie()
    columns = np.ascontiguousarray(dfa.transitions.T.astype(np.uint16))
    eos_row = np.array([0, 1, 0], dtype=np.uint16)
    status, count, _, maps, eos_id = walk.compose_over_trie(
        columns, trie.node_parent, trie.node_byte, dfa.byte_class, trie.level_offsets, 1 << 20, eos_row
    )
    assert status == walk.OK and maps.count == count
    status, state_row, row_offsets, row_classes, next_offsets, following = maps.compact_table(
        np.array([1, 0, eos_id, 1], dtype=np.int64)  # identity, dead, eos, identity
    )
    assert status == walk.OK and following.dtype == np.uint16
    assert state_row.tolist() == [0, 1, 2]  # state 1 accepts, state 2 does not
    assert row_offsets.tolist() == [0, 0, 3, 5]
    assert row_classes.tolist() == [0, 2, 3, 0, 3]
    assert next_offsets.tolist() == [0, 0, 3, 5]
    assert following.tolist() == [1, 1, 1, 2, 2]
    dense = NextTable(state_row, row_offsets, row_classes, next_offsets, following, 4).dense()
    assert dense.tolist() == [[0, 0, 0, 0], [1, 0, 1, 1], [2, 0, 0, 2]]
    empty = maps.compact_table(np.zeros(0, dtype=np.int64))
    assert empty[0] == walk.OK and empty[1].tolist() == [0, 0, 0] and empty[2].tolist() == [0, 0]
    for bad in ([count], [-1], [0, count + 5]):
        assert maps.compact_table(np.array(bad, dtype=np.int64)) == (walk.BAD_INPUT, *[None] * 5)
    assert walk.StateMaps().count == 0
    assert walk.StateMaps().compact_table(np.array([0], dtype=np.int64))[0] == walk.BAD_INPUT


def test_compact_tables_do_not_depend_on_the_block_size(walk: ModuleType) -> None:
    """States taken in small blocks (down to one state a block) give the same arrays."""
    dfa, vocabulary = sparse_dfa(3_000, seed=5)
    trie = build_trie(vocabulary)
    columns = np.ascontiguousarray(dfa.transitions.T.astype(np.uint16))
    eos_row = np.where(dfa.accepting, np.arange(dfa.num_states), 0).astype(np.uint16)
    status, count, _, maps, _ = walk.compose_over_trie(
        columns, trie.node_parent, trie.node_byte, dfa.byte_class, trie.level_offsets, 1 << 30, eos_row
    )
    assert status == walk.OK
    map_ids = np.arange(count, dtype=np.int64)
    whole = maps.compact_table(map_ids)
    assert whole[0] == walk.OK and len(whole[5]) > 5_000
    for block_bytes in (-5, 0, 1, 6 * 64, 6 * 5_000):
        parts = maps.compact_table(map_ids, block_bytes)
        for got, expected in zip(parts, whole, strict=True):
            assert np.array_equal(got, expected), block_bytes


# -- malformed arrays ------------------------------------------------------------------------------


def small_dfa_and_trie() -> tuple[DFA, ByteTrie, Vocabulary]:
    transitions = np.array([[0, 0], [1, 2], [1, 0]], dtype=np.int32)
    byte_class = np.zeros(256, dtype=np.int32)
    byte_class[ord("a")] = 1
    dfa = DFA(transitions, byte_class, np.array([False, True, False]), start=1)
    vocabulary = Vocabulary.from_tokens([b"a", b"ab", b"b", b"ba", b"aab", b""], eos_id=5)
    return dfa, build_trie(vocabulary), vocabulary


def malformed_cases() -> Iterator[tuple[str, DFA, ByteTrie, int, int]]:
    dfa, trie, vocabulary = small_dfa_and_trie()
    size, eos = vocabulary.size, vocabulary.eos_id

    def with_dfa(transitions: np.ndarray | None = None, byte_class: np.ndarray | None = None) -> DFA:
        return DFA(
            dfa.transitions if transitions is None else transitions,
            dfa.byte_class if byte_class is None else byte_class,
            dfa.accepting,
            dfa.start,
        )

    def changed(array: np.ndarray, index: int, value: int) -> np.ndarray:
        copy = array.copy()
        copy[index] = value
        return copy

    yield "target past the states", with_dfa(transitions=dfa.transitions + 1), trie, size, eos
    yield "negative target", with_dfa(transitions=dfa.transitions - 1), trie, size, eos
    live_dead_state = dfa.transitions.copy()
    live_dead_state[0, 1] = 1
    yield "the dead state leads somewhere", with_dfa(transitions=live_dead_state), trie, size, eos
    yield "no states", with_dfa(transitions=np.zeros((0, 2), dtype=np.int32)), trie, size, eos
    yield "byte class past the columns", with_dfa(byte_class=changed(dfa.byte_class, 7, 2)), trie, size, eos
    yield "negative byte class", with_dfa(byte_class=changed(dfa.byte_class, 7, -1)), trie, size, eos
    last = trie.num_nodes - 1
    yield (
        "parent after its node",
        dfa,
        dataclasses.replace(trie, node_parent=changed(trie.node_parent, 1, last)),
        size,
        eos,
    )
    yield (
        "parent is the node",
        dfa,
        dataclasses.replace(trie, node_parent=changed(trie.node_parent, last, last)),
        size,
        eos,
    )
    yield (
        "parent in its own level",
        dfa,
        dataclasses.replace(trie, node_parent=changed(trie.node_parent, 5, 4)),
        size,
        eos,
    )
    yield (
        "negative parent",
        dfa,
        dataclasses.replace(trie, node_parent=changed(trie.node_parent, 2, -5)),
        size,
        eos,
    )
    yield (
        "parent of wrong dtype",
        dfa,
        dataclasses.replace(trie, node_parent=trie.node_parent.astype(np.float64)),
        size,
        eos,
    )
    yield "short node bytes", dfa, dataclasses.replace(trie, node_byte=trie.node_byte[:-1]), size, eos
    yield (
        "node byte past 255",
        dfa,
        dataclasses.replace(trie, node_byte=changed(trie.node_byte.astype(np.int32), 1, 300)),
        size,
        eos,
    )
    yield (
        "levels past the nodes",
        dfa,
        dataclasses.replace(trie, level_offsets=changed(trie.level_offsets, -1, trie.num_nodes + 5)),
        size,
        eos,
    )
    yield (
        "levels going back",
        dfa,
        dataclasses.replace(trie, level_offsets=changed(trie.level_offsets, 2, 0)),
        size,
        eos,
    )
    yield "2-D parents", dfa, dataclasses.replace(trie, node_parent=trie.node_parent[:, None]), size, eos
    yield (
        "token id past the vocabulary",
        dfa,
        dataclasses.replace(trie, node_token_ids=changed(trie.node_token_ids, 0, size)),
        size,
        eos,
    )
    yield (
        "token offsets past the ids",
        dfa,
        dataclasses.replace(trie, node_token_offsets=changed(trie.node_token_offsets, -1, 99)),
        size,
        eos,
    )
    yield "eos past the vocabulary", dfa, trie, size, size


@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
def test_malformed_arrays_raise_a_moonmask_error(monkeypatch: pytest.MonkeyPatch, pure: bool) -> None:
    if pure:
        monkeypatch.setenv(PURE_ENV, "1")
    elif native_walk() is None:
        pytest.skip(NOT_BUILT)
    dfa, trie, vocabulary = small_dfa_and_trie()
    token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id)  # the untouched inputs are fine
    for name, bad_dfa, bad_trie, size, eos in malformed_cases():
        with pytest.raises(MoonmaskError):
            token_classes(bad_dfa, bad_trie, size, eos)
            pytest.fail(name)
    allowed = np.ones((2, 3), dtype=bool)
    for token_class in (
        np.array([0, 3, 1]),
        np.array([0, -1, 1]),
        np.array([0.5, 1.0]),
        np.zeros((2, 2), int),
    ):
        with pytest.raises(MoonmaskError):
            packed_masks(allowed, token_class)
    with pytest.raises(MoonmaskError):
        packed_masks(np.ones(3, dtype=bool), np.array([0, 1]))


def test_a_read_only_trie_is_checked_once_and_a_writable_one_every_time() -> None:
    """The trie checks are cached per trie object only when its arrays are read-only (as
    ``trie_for`` hands them on): a writable trie changed in place after a good compile is still
    refused, and a read-only trie cannot be changed in place at all."""
    from moonmaskc import token_classes as module

    dfa, trie, vocabulary = small_dfa_and_trie()
    token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id)
    assert trie not in module._CHECKED_TRIES
    trie.node_parent[2] = 7  # a parent after its node
    with pytest.raises(MoonmaskError, match="parent"):
        token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id)

    dfa, trie, vocabulary = small_dfa_and_trie()
    for name in ("node_parent", "node_byte", "level_offsets", "node_token_offsets", "node_token_ids"):
        getattr(trie, name).flags.writeable = False
    token_classes(dfa, trie, vocabulary.size, vocabulary.eos_id)
    assert trie in module._CHECKED_TRIES
    with pytest.raises(ValueError):
        trie.node_parent[2] = 7
    with pytest.raises(MoonmaskError, match="eos id"):  # the vocabulary's side is checked every time
        token_classes(dfa, trie, vocabulary.size, vocabulary.size)


def test_the_native_backstop_rejects_what_slips_past(walk: ModuleType) -> None:
    """Called directly with bad arrays, the native functions answer ``BAD_INPUT`` (no crash)."""
    dfa, trie, _ = small_dfa_and_trie()
    columns = np.ascontiguousarray(dfa.transitions.T.astype(np.uint16))
    eos_row = np.array([0, 1, 0], dtype=np.uint16)
    good = (columns, trie.node_parent, trie.node_byte, dfa.byte_class, trie.level_offsets, 1 << 20, eos_row)
    assert walk.compose_over_trie(*good)[0] == walk.OK

    def with_item(position: int, index: tuple[int, ...], value: int) -> tuple[object, ...]:
        array = np.array(good[position], copy=True)
        array[index] = value
        return (*good[:position], array, *good[position + 1 :])

    last = trie.num_nodes - 1
    for bad in (
        with_item(0, (1, 1), 3),  # a target past the states
        with_item(1, (last,), last),  # a parent that is the node itself
        with_item(1, (1,), -7),
        with_item(1, (5,), 4),  # a parent in the node's own level (nodes 3 to 5)
        with_item(3, (5,), 2),  # a byte class past the columns
        with_item(4, (-1,), last + 3),  # levels past the nodes
        with_item(6, (1,), 9),  # the extra row past the states
    ):
        assert walk.compose_over_trie(*bad)[0] == walk.BAD_INPUT
    assert walk.compose_over_trie(*good, first_child=first_children(trie)[:-1])[0] == walk.BAD_INPUT
    _, gpt2 = real_vocabulary("gpt2")  # an integer's DFA: few live nodes, each level's children walked
    digits = compile_schema({"type": "integer"}, tokenizer=None).dfa
    sparse = (
        np.ascontiguousarray(digits.transitions.T.astype(np.uint16)),
        gpt2.node_parent,
        gpt2.node_byte,
        np.ascontiguousarray(digits.byte_class, dtype=np.int32),
        gpt2.level_offsets,
        1 << 20,
        np.where(digits.accepting, np.arange(digits.num_states), 0).astype(np.uint16),
    )
    first_child = np.array(first_children(gpt2), copy=True)
    assert walk.compose_over_trie(*sparse, first_child=first_child)[0] == walk.OK
    one = int(np.flatnonzero((gpt2.node_parent == 0) & (gpt2.node_byte == ord("1")))[0])
    for index, value in ((0, 0), (one, first_child[one] - 1), (one + 1, gpt2.num_nodes + 4)):
        spoiled = first_child.copy()
        spoiled[index] = value  # a range outside its level, or holding another node's child
        assert walk.compose_over_trie(*sparse, first_child=spoiled)[0] == walk.BAD_INPUT
    status, masks = walk.pack_masks(np.ones((2, 3), dtype=np.uint8), np.array([0, 3, 1], dtype=np.int32))
    assert status == walk.BAD_INPUT and masks is None

    node_map = np.zeros(trie.num_nodes, dtype=np.int32)
    node_of_token = trie.node_of_token(4)
    assert walk.classes_by_first_token(node_map, node_of_token, 3, 0, 2)[0] == walk.OK
    past_nodes = np.array([0, trie.num_nodes, -1, 1], dtype=np.int32)
    bad_map = np.full(trie.num_nodes, 5, dtype=np.int32)
    for args in (
        (node_map, past_nodes, 3, 0, 2),  # a token at a node past the trie
        (node_map, np.array([0, -2, 1, 1], dtype=np.int32), 3, 0, 2),
        (bad_map, node_of_token, 3, 0, 2),  # a node's map past the maps
        (node_map, node_of_token, 4, 0, 2),  # eos past the vocabulary
        (node_map, node_of_token, 3, 2, 2),  # the eos map past the maps
    ):
        status, token_class, class_maps = walk.classes_by_first_token(*args)
        assert status == walk.BAD_INPUT and token_class is None and class_maps is None


@pytest.mark.parametrize(
    ("states", "classes", "narrow"),
    [
        (1, 1, True),
        (63, 65, True),
        (130, 7, True),
        (65_535, 3, True),
        (1_000, 129, False),
        (70_000, 2, False),
    ],
)
def test_state_columns_are_the_transposed_table(
    walk: ModuleType, states: int, classes: int, narrow: bool
) -> None:
    """``state_columns`` transposes tile by tile, partial tiles at both edges included, into the
    dtype the composition takes; a target outside the states (negative, or past them) is
    ``BAD_INPUT``, as is a narrow table of more states than 16 bits hold."""
    table = np.random.default_rng(states).integers(0, states, size=(states, classes), dtype=np.int32)
    status, columns = walk.state_columns(table, narrow)
    assert status == walk.OK
    assert columns.dtype == (np.uint16 if narrow else np.int32) and columns.flags.c_contiguous
    assert np.array_equal(columns, table.T)
    for bad in (-1, states):
        broken = table.copy()
        broken[states // 2, classes - 1] = bad
        assert walk.state_columns(broken, narrow) == (walk.BAD_INPUT, None)
    if not narrow and states > 65_535:
        assert walk.state_columns(table, True) == (walk.BAD_INPUT, None)


def test_classes_are_numbered_by_their_first_token(walk: ModuleType) -> None:
    """Class 0 is the dead map; the others in the order of their first token; a token at no node
    (-1) has the dead map, and eos has its own map wherever it sits."""
    node_map = np.array([1, 4, 2, 4, 3], dtype=np.int32)
    node_of_token = np.array([3, -1, 2, 1, 4, 0, 2], dtype=np.int32)
    status, token_class, class_maps = walk.classes_by_first_token(node_map, node_of_token, 5, 6, 7)
    assert status == walk.OK
    assert class_maps.tolist() == [0, 4, 2, 3, 6]
    assert token_class.tolist() == [1, 0, 2, 1, 3, 4, 2]


def test_the_node_of_every_token_is_read_off_the_trie() -> None:
    vocabulary = Vocabulary.from_tokens([b"ab", b"a", b"", b"b"], eos_id=2)
    trie = build_trie(vocabulary)
    nodes = trie.node_of_token(vocabulary.size)
    assert not nodes.flags.writeable and trie.node_of_token(vocabulary.size) is nodes
    for token, data in enumerate(vocabulary.token_bytes):
        if not data:
            assert nodes[token] == -1
            continue
        node = int(nodes[token])
        spelled = b""
        while node > 0:
            spelled = bytes([int(trie.node_byte[node])]) + spelled
            node = int(trie.node_parent[node])
        assert spelled == data


# -- fewest tokens to eos ------------------------------------------------------------------------


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda path: path.stem)
def test_fewest_steps_are_the_same_on_both_paths(
    walk: ModuleType, monkeypatch: pytest.MonkeyPatch, tokenizer: str, schema: Path
) -> None:
    """``runtime_budget.fewest_tokens_to_eos`` in C (``fewest_steps``) and with numpy."""
    from moonmaskc.runtime_budget import fewest_tokens_to_eos

    vocabulary, trie = real_vocabulary(tokenizer)
    table = build_token_table(schema_dfa(schema), vocabulary, trie=trie)
    accepting = table.accepting()
    native_steps, pure_steps = both_paths(
        monkeypatch,
        lambda: fewest_tokens_to_eos(table.next_table, table.token_class, accepting, vocabulary.eos_id),
    )
    assert native_steps.dtype == pure_steps.dtype == np.int32
    assert np.array_equal(native_steps, pure_steps)
    assert native_steps[0] == 0 and (native_steps[1:] > 0).any()


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_fewest_steps_on_random_tables_match_numpy(states: int, classes: int, seed: int) -> None:
    """Random dense tables (duplicate targets, self loops, unreachable states, a wide or a narrow
    dtype): the same steps on both paths."""
    module = native_walk()
    if module is None:
        pytest.skip(NOT_BUILT)
    from moonmaskc.runtime_budget import _numpy_steps, usable_classes

    rng = np.random.default_rng(seed)
    dense = rng.integers(0, states, size=(states, classes)).astype(np.int32)
    dense[rng.random((states, classes)) < 0.4] = 0
    dense[0] = 0
    table = NextTable.from_dense(dense.astype(np.uint16 if seed % 2 else np.int32))
    accepting = rng.random(states) < 0.2
    token_class = rng.integers(0, classes, size=classes + 3)
    eos_id = int(rng.integers(0, len(token_class)))
    usable = usable_classes(classes, token_class, eos_id)
    status, steps = module.fewest_steps(
        table.next_offsets,
        np.ascontiguousarray(table.next_states),
        table.state_row.astype(np.int32),
        table.row_class_offsets,
        table.row_classes.astype(np.int32),
        usable.view(np.uint8),
        accepting.view(np.uint8),
    )
    assert status == module.OK
    assert steps.tolist() == _numpy_steps(table, usable, accepting).tolist()


def test_fewest_steps_reject_a_malformed_table(walk: ModuleType) -> None:
    """Out-of-range offsets, rows, classes or states are ``BAD_INPUT`` (no crash), and the Python
    side turns that into an error."""
    from moonmaskc.runtime_budget import fewest_tokens_to_eos

    table = NextTable.from_dense(np.array([[0, 0], [2, 1], [1, 0]], dtype=np.int32))
    good = [
        table.next_offsets,
        np.ascontiguousarray(table.next_states.astype(np.int32)),
        table.state_row.astype(np.int32),
        table.row_class_offsets,
        table.row_classes.astype(np.int32),
        np.array([1, 1], dtype=np.uint8),
        np.array([0, 0, 1], dtype=np.uint8),
    ]
    status, steps = walk.fewest_steps(*good)
    assert status == walk.OK and steps.tolist() == [0, 2, 1]

    def bad(position: int, index: int, value: int) -> list[np.ndarray]:
        arrays = [np.array(array, copy=True) for array in good]
        arrays[position][index] = value
        return arrays

    only_itself = [*good[:5], np.array([0, 1], dtype=np.uint8), good[6]]
    assert walk.fewest_steps(*only_itself)[1].tolist() == [0, -1, 1]  # state 1's usable class loops
    for arrays in (
        bad(1, 0, 7),  # a next state past the states
        bad(1, 0, -1),
        bad(2, 1, 9),  # a row past the rows
        bad(4, 0, 5),  # a class past the classes
        bad(3, 1, 99),  # a row's classes past the row classes
        bad(0, 1, 5),  # offsets that do not grow
        [*good[:6], np.array([0, 1], dtype=np.uint8)],  # one flag short
    ):
        status, steps = walk.fewest_steps(*arrays)
        assert status == walk.BAD_INPUT and steps is None
    broken = NextTable(
        table.state_row,
        table.row_class_offsets,
        table.row_classes,
        table.next_offsets,
        np.array([9, 1], dtype=np.int32),
        2,
    )
    with pytest.raises(ValueError):
        fewest_tokens_to_eos(broken, np.array([0, 1]), np.array([False, False, True]), 0)
