"""The token table against a brute-force oracle: every token walked byte by byte through the DFA
from every state (all states on small vocabularies, sampled states on gpt2, mistral and llama3)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.frontends import utf8
from moonmaskc.token_table import TokenTable, build_token_table
from moonmaskc.trie import build_trie
from moonmaskc.vocabulary import Vocabulary, bytes_vocabulary, load_vocabulary
from tests.conftest import data_path
from tests.test_next_table import compact_tamperings


@pytest.fixture(autouse=True, scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOONMASKC_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield Path()


def brute_force(dfa: DFA, vocabulary: Vocabulary, state: int) -> tuple[list[int], list[int]]:
    """Allowed ids and next states of ``state``, by walking every token's bytes one at a time."""
    rows = dfa.transitions.tolist()
    classes = dfa.byte_class.tolist()
    specials = set(vocabulary.special_ids)
    ids, nexts = [], []
    for token_id, data in enumerate(vocabulary.token_bytes):
        if token_id == vocabulary.eos_id:
            if state and dfa.accepting[state]:
                ids.append(token_id)
                nexts.append(state)
            continue
        if not data or token_id in specials:
            continue
        current = state
        for byte in data:
            current = rows[current][classes[byte]]
            if current == 0:
                break
        if current != 0:
            ids.append(token_id)
            nexts.append(current)
    return ids, nexts


def assert_state_matches(table: TokenTable, dfa: DFA, vocabulary: Vocabulary, state: int) -> None:
    ids, nexts = brute_force(dfa, vocabulary, state)
    assert table.allowed(state).tolist() == ids, f"state {state}"
    assert table.next_of(state).tolist() == nexts, f"state {state}"
    bits = np.unpackbits(table.mask_rows[table.state_row[state]].view(np.uint8), bitorder="little")
    assert np.flatnonzero(bits).tolist() == ids


def json_string(max_length: int | None) -> ir.Node:
    char = ir.alt(
        utf8.any_char(exclude=[(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]),
        ir.seq(ir.text("\\"), ir.alt(*(ir.text(c) for c in '"\\/nt'))),
    )
    return ir.seq(ir.text('"'), ir.repeat(char, 0, max_length), ir.text('"'))


def json_like_dfa() -> DFA:
    """An object with a bounded string, an integer, an enum and an array of strings."""
    integer = ir.seq(ir.optional(ir.text("-")), ir.byte_range(0x31, 0x39), ir.star(ir.byte_range(0x30, 0x39)))
    enum = ir.alt(ir.text('"admin"'), ir.text('"viewer"'), ir.text('" spaced value"'))
    items = ir.seq(json_string(4), ir.star(ir.seq(ir.text(", "), json_string(4))))
    node = ir.seq(
        ir.text('{"name": '),
        json_string(6),
        ir.text(', "age": '),
        integer,
        ir.text(', "role": '),
        enum,
        ir.text(', "tags": ['),
        ir.optional(items),
        ir.text("]}"),
    )
    return compile_ir(node)


def test_bytes_vocabulary_all_states() -> None:
    dfa = json_like_dfa()
    vocabulary = bytes_vocabulary()
    table = build_token_table(dfa, vocabulary)
    for state in range(dfa.num_states):
        assert_state_matches(table, dfa, vocabulary, state)
    assert table.num_rows < dfa.num_states


HAND_TOKENS = [b"{", b'{"', b'"', b"a", b"ab", b"abc", b" ", b"  ", b"", b"\xc3", b"\xa9", b"\xc3\xa9", b"ab"]


def test_hand_vocabulary_all_states_with_duplicates_empties_and_specials() -> None:
    tokens = [*HAND_TOKENS, b"<eos>", b"<special>"]
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=len(tokens) - 2, special_ids=[len(tokens) - 1])
    node = ir.seq(
        ir.text("{"), ir.star(ir.alt(ir.text("ab"), ir.text(" "), ir.text("é"))), ir.optional(ir.text('"'))
    )
    dfa = compile_ir(node)
    table = build_token_table(dfa, vocabulary)
    for state in range(dfa.num_states):
        assert_state_matches(table, dfa, vocabulary, state)
    accepting = [s for s in range(dfa.num_states) if dfa.accepting[s]]
    assert accepting and all(vocabulary.eos_id in table.allowed(s) for s in accepting)
    assert all(vocabulary.special_ids[0] not in table.allowed(s) for s in range(dfa.num_states))


@st.composite
def random_dfas(draw: st.DrawFn) -> DFA:
    states = draw(st.integers(2, 7))
    classes = draw(st.integers(1, 4))
    transitions = np.array(
        draw(st.lists(st.integers(0, states - 1), min_size=states * classes, max_size=states * classes)),
        dtype=np.int32,
    ).reshape(states, classes)
    transitions[0] = 0
    byte_class = np.array(draw(st.lists(st.integers(0, classes - 1), min_size=256, max_size=256)))
    accepting = np.array([False, *draw(st.lists(st.booleans(), min_size=states - 1, max_size=states - 1))])
    return DFA(transitions, byte_class, accepting, start=1)


@settings(max_examples=60, deadline=None)
@given(
    random_dfas(),
    st.lists(st.binary(min_size=0, max_size=5), min_size=2, max_size=30),
    st.data(),
)
def test_random_dfas_and_vocabularies(dfa: DFA, tokens: list[bytes], data: st.DataObject) -> None:
    eos_id = data.draw(st.integers(0, len(tokens) - 1))
    specials = data.draw(st.lists(st.integers(0, len(tokens) - 1), max_size=3))
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=eos_id, special_ids=specials)
    table = build_token_table(dfa, vocabulary)
    for state in range(dfa.num_states):
        assert_state_matches(table, dfa, vocabulary, state)
    assert table.allowed(0).size == 0


@pytest.mark.parametrize("name", ["gpt2.json", "mistral.json", "llama3.json"])
def test_real_vocabularies_on_sampled_states(name: str) -> None:
    vocabulary = load_vocabulary(data_path("tokenizers", name))
    dfa = json_like_dfa()
    table = build_token_table(dfa, vocabulary)
    rng = np.random.default_rng(5)
    sampled = {dfa.start, *rng.choice(np.arange(1, dfa.num_states), size=5, replace=False).tolist()}
    for state in sorted(sampled):
        assert_state_matches(table, dfa, vocabulary, int(state))


def test_sentencepiece_space_and_byte_fallback_in_masks() -> None:
    from tokenizers import Tokenizer

    path = data_path("tokenizers", "mistral.json")
    vocabulary = load_vocabulary(path)
    tokenizer = Tokenizer.from_file(str(path))
    dfa = json_like_dfa()
    table = build_token_table(dfa, vocabulary)
    inside_name, _ = dfa.walk(b'{"name": "')
    in_enum, _ = dfa.walk(b'{"name": "x", "age": 1, "role": "')
    allowed_name = set(table.allowed(inside_name).tolist())
    for token in ("<0xF0>", "<0xC3>", "▁", "▁the", "<0x20>"):
        assert tokenizer.token_to_id(token) in allowed_name, token
    assert tokenizer.token_to_id("<0x80>") not in allowed_name  # a lone continuation byte
    assert tokenizer.token_to_id("<0x22>") in allowed_name  # closes the string
    allowed_enum = set(table.allowed(in_enum).tolist())
    assert tokenizer.token_to_id("▁sp") in allowed_enum
    assert tokenizer.token_to_id("▁the") not in allowed_enum


def test_arrays_round_trip_and_tampering_is_detected() -> None:
    dfa = json_like_dfa()
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    table = build_token_table(dfa, vocabulary)
    arrays = table.to_arrays()
    assert all(a.dtype.kind in "biuU" for a in arrays.values())
    again = TokenTable.from_arrays(arrays)
    for state in range(dfa.num_states):
        assert np.array_equal(again.allowed(state), table.allowed(state))
        assert np.array_equal(again.next_of(state), table.next_of(state))
    flipped = arrays["tokens_mask_delta_value"].copy()  # a mask bit that no next state backs
    flipped[len(flipped) // 2] ^= 1 << 7
    with pytest.raises(ValueError):
        TokenTable.from_arrays(dict(arrays, tokens_mask_delta_value=flipped))
    later_base = arrays["tokens_mask_base"].copy()  # a row built from a row after it
    later_base[1] = 2
    with pytest.raises(ValueError):
        TokenTable.from_arrays(dict(arrays, tokens_mask_base=later_base))
    with pytest.raises(ValueError):
        TokenTable.from_arrays(dict(arrays, tokens_next=arrays["tokens_next"][:-1]))
    with pytest.raises(ValueError):
        TokenTable.from_arrays({k: v for k, v in arrays.items() if k != "tokens_state_row"})
    state = dfa.start
    allowed_class = int(arrays["tokens_token_class"][table.allowed(state)[0]])
    for name, tampered in compact_tamperings(arrays):
        with pytest.raises(ValueError):
            TokenTable.from_arrays(dict(arrays, **{name: tampered}))
    never = np.flatnonzero(arrays["tokens_token_class"] == 0)[0]
    tampered_classes = _with(arrays["tokens_token_class"], (never,), allowed_class)
    with pytest.raises(ValueError):
        TokenTable.from_arrays(dict(arrays, tokens_token_class=tampered_classes))
    with pytest.raises(ValueError):
        TokenTable.from_arrays(dict(arrays, tokens_state_row=np.zeros_like(arrays["tokens_state_row"])))


def _with(array: np.ndarray, index: tuple[int, ...], value: int) -> np.ndarray:
    changed = array.copy()
    changed[index] = value
    return changed


def test_token_classes_are_exactly_the_tokens_that_act_alike() -> None:
    """Tokens share a class iff they lead every state to the same place (brute-force columns)."""
    dfa = json_like_dfa()
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    table = build_token_table(dfa, vocabulary)
    columns = np.zeros((vocabulary.size, dfa.num_states), dtype=np.int64)
    for state in range(dfa.num_states):
        ids, nexts = brute_force(dfa, vocabulary, state)
        columns[ids, state] = nexts
    _, first, behaviour = np.unique(columns, axis=0, return_index=True, return_inverse=True)
    classes = table.token_class.astype(np.int64)
    assert len(first) == table.num_classes
    # same behaviour <=> same class: the pairing of the two labellings is one-to-one
    assert len(np.unique(behaviour.ravel() * table.num_classes + classes)) == table.num_classes
    assert (classes[columns.any(axis=1) == 0] == 0).all()


def test_progress_reaches_the_total() -> None:
    calls: list[tuple[int, int]] = []
    dfa = json_like_dfa()
    build_token_table(dfa, bytes_vocabulary(), progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, dfa.num_states) and calls[-1] == (dfa.num_states, dfa.num_states)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_state_maps_stay_exact_when_every_fingerprint_collides(monkeypatch: pytest.MonkeyPatch) -> None:
    import moonmaskc.token_classes as token_classes

    monkeypatch.setenv("MOONMASKC_PURE", "1")  # the pure map store is what is under test
    dfa = json_like_dfa()
    vocabulary = Vocabulary.from_tokens([*HAND_TOKENS, b'{"na', b"me", b'": "', b"<eos>"], eos_id=16)
    honest = build_token_table(dfa, vocabulary, trie=build_trie(vocabulary))
    monkeypatch.setattr(
        token_classes._MapStore, "_fingerprints", lambda self, rows: np.full(len(rows), 7, dtype=np.uint64)
    )
    colliding = build_token_table(dfa, vocabulary, trie=build_trie(vocabulary))
    assert colliding.next_table.same_as(honest.next_table)
    assert np.array_equal(colliding.token_class, honest.token_class)
    for state in range(dfa.num_states):
        assert_state_matches(colliding, dfa, vocabulary, state)


def test_pair_lookup_switches_from_a_dense_table_to_a_dict_without_changing_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(map, byte class) pairs already composed are found in a dense table while the key range is
    small and in a dict beyond it; with the switch forced early, the table is the same."""
    import moonmaskc.token_classes as token_classes

    monkeypatch.setenv("MOONMASKC_PURE", "1")  # the pure pair lookup is what is under test
    dfa = json_like_dfa()
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    trie = build_trie(vocabulary)
    dense = build_token_table(dfa, vocabulary, trie=trie)
    monkeypatch.setattr(token_classes, "DENSE_PAIR_KEYS", 2 * dfa.num_classes)
    switched = build_token_table(dfa, vocabulary, trie=trie)
    assert switched.next_table.same_as(dense.next_table)
    assert np.array_equal(switched.token_class, dense.token_class)
    assert np.array_equal(switched.mask_rows, dense.mask_rows)
    for state in range(0, dfa.num_states, 7):
        assert_state_matches(switched, dfa, vocabulary, state)


def direct_masks(allowed_classes: np.ndarray, token_class: np.ndarray) -> np.ndarray:
    """The definition, token by token: bit t of row r is allowed_classes[r, token_class[t]]."""
    words = (len(token_class) + 31) // 32
    out = np.zeros((len(allowed_classes), words), dtype=np.uint32)
    for r, row in enumerate(allowed_classes):
        for t, c in enumerate(token_class):
            if row[c]:
                out[r, t // 32] |= np.uint32(1 << (t % 32))
    return out


@st.composite
def mask_inputs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    classes = draw(st.integers(1, 12))
    vocab_size = draw(st.integers(1, 150))
    skew = draw(st.integers(0, classes - 1))  # one class may hold most tokens, as on real vocabularies
    token_class = np.array(
        draw(
            st.lists(
                st.one_of(st.just(skew), st.integers(0, classes - 1)),
                min_size=vocab_size,
                max_size=vocab_size,
            )
        )
    )
    patterns = draw(
        st.lists(st.lists(st.booleans(), min_size=classes, max_size=classes), min_size=1, max_size=4)
    )
    picks = draw(st.lists(st.integers(0, len(patterns) - 1), max_size=12))  # rows repeat patterns
    allowed = np.array([patterns[i] for i in picks], dtype=bool).reshape(len(picks), classes)
    return allowed, token_class, draw(st.integers(0, classes))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(mask_inputs())
def test_packed_masks_equal_the_token_by_token_definition(inputs: tuple[np.ndarray, np.ndarray, int]) -> None:
    """Every split between big classes (packed once per distinct pattern) and the other tokens
    (summed word by word) gives the direct masks, and so does the split the cost model picks."""
    import moonmaskc.token_masks as token_masks

    allowed, token_class, big_count = inputs
    expected = direct_masks(allowed, token_class)
    assert np.array_equal(token_masks.packed_masks(allowed, token_class), expected)  # native when built
    chosen = token_masks._big_classes
    saved = os.environ.get("MOONMASKC_PURE")
    try:
        os.environ["MOONMASKC_PURE"] = "1"  # the pure split is what is under test
        assert np.array_equal(token_masks.packed_masks(allowed, token_class), expected)
        token_masks._big_classes = lambda allowed, sizes, by_size, words: by_size[:big_count]
        assert np.array_equal(token_masks.packed_masks(allowed, token_class), expected)
    finally:
        token_masks._big_classes = chosen
        if saved is None:
            os.environ.pop("MOONMASKC_PURE", None)
        else:
            os.environ["MOONMASKC_PURE"] = saved


def test_packed_masks_of_a_large_vocabulary_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vocabulary of real size with skewed classes: the big part (a float matrix product whose
    words reach 2**32 - 1 in the row that allows everything) and the small part agree with the
    definition, in one chunk and in chunks of three patterns."""
    import moonmaskc.token_masks as token_masks

    rng = np.random.default_rng(7)
    classes, vocab_size = 300, 70_001
    token_class = np.minimum(rng.zipf(1.3, vocab_size) - 1, classes - 1)
    allowed = rng.random((40, classes)) < 0.5
    allowed[0] = True
    allowed[1] = False
    padded = np.zeros((len(allowed), (vocab_size + 31) // 32 * 32), dtype=bool)
    padded[:, :vocab_size] = allowed[:, token_class]
    expected = np.packbits(padded, axis=1, bitorder="little").view("<u4")
    assert (expected[0, :-1] == 0xFFFFFFFF).all()
    assert np.array_equal(token_masks.packed_masks(allowed, token_class), expected)
    monkeypatch.setenv("MOONMASKC_PURE", "1")
    assert np.array_equal(token_masks.packed_masks(allowed, token_class), expected)
    monkeypatch.setattr(token_masks, "CELLS_PER_CHUNK", 3 * expected.shape[1])
    assert np.array_equal(token_masks.packed_masks(allowed, token_class), expected)
