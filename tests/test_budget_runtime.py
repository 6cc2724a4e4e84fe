"""Token budgets in the numpy runtime: ``fewest_tokens_to_eos`` and the budgeted ``Guide`` masks.

The oracle is the budget rule's own definition, computed token by token from the DFA's bytes
(never from the token table): with ``k`` tokens left, a token is allowed when some sequence of at
most ``k`` tokens that starts with it ends with eos in an accepting state.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import ArtifactError, RuntimeInputError
from moonmaskc.runtime import Guide
from moonmaskc.runtime_budget import NEVER, fewest_tokens_to_eos, verify_eos_steps
from moonmaskc.token_table import build_token_table
from moonmaskc.vocabulary import Vocabulary, bytes_vocabulary, load_vocabulary
from tests.conftest import data_path
from tests.test_token_table import brute_force, json_like_dfa, json_string, random_dfas


def guide_for(dfa: DFA, vocabulary: Vocabulary) -> Guide:
    return Guide.from_artifact(Artifact(dfa, {}, build_token_table(dfa, vocabulary)))


@pytest.fixture(scope="module")
def gpt2() -> Vocabulary:
    return load_vocabulary(data_path("tokenizers", "gpt2.json"))


def can_end_oracle(dfa: DFA, vocabulary: Vocabulary) -> Callable[[int, int], bool]:
    """``can_end(state, k)``: some sequence of at most ``k`` tokens from ``state`` ends with eos."""
    moves = {state: brute_force(dfa, vocabulary, state) for state in range(dfa.num_states)}

    @functools.cache
    def can_end(state: int, k: int) -> bool:
        if state == 0 or k <= 0:
            return False
        if dfa.accepting[state]:
            return True
        ids, nexts = moves[state]
        return any(can_end(n, k - 1) for t, n in zip(ids, nexts, strict=True) if t != vocabulary.eos_id)

    return can_end


def oracle_allowed(dfa: DFA, vocabulary: Vocabulary, can_end: Callable[[int, int], bool], state: int, k: int):
    ids, nexts = brute_force(dfa, vocabulary, state)
    return [
        t
        for t, n in zip(ids, nexts, strict=True)
        if (t == vocabulary.eos_id and k >= 1) or (t != vocabulary.eos_id and can_end(n, k - 1))
    ]


def oracle_fewest(state: int, can_end: Callable[[int, int], bool], states: int) -> int:
    if state == 0:
        return 0
    return next((k for k in range(1, states + 2) if can_end(state, k)), -1)


def packed(ids: list[int] | np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.zeros(((vocab_size + 31) // 32) * 32, dtype=bool)
    bits[np.asarray(ids, dtype=np.int64)] = True
    return np.packbits(bits, bitorder="little").view("<u4").astype(np.uint32)


@settings(max_examples=80, deadline=None)
@given(random_dfas(), st.lists(st.binary(min_size=0, max_size=4), min_size=2, max_size=16), st.data())
def test_budgeted_masks_equal_the_definition_on_small_vocabularies(
    dfa: DFA, tokens: list[bytes], data: st.DataObject
) -> None:
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=data.draw(st.integers(0, len(tokens) - 1)))
    guide = guide_for(dfa, vocabulary)
    can_end = can_end_oracle(dfa, vocabulary)
    states = dfa.num_states
    fewest = [oracle_fewest(s, can_end, states) for s in range(states)]
    assert [guide.fewest_tokens(s) for s in range(states)] == fewest
    table = guide.table
    computed = fewest_tokens_to_eos(table.next_table, table.token_class, dfa.accepting, vocabulary.eos_id)
    assert computed.tolist() == fewest
    verify_eos_steps(computed, table.next_table, table.token_class, dfa.accepting, vocabulary.eos_id)
    for state, k in itertools.product(range(states), range(0, states + 3)):
        if not can_end(state, k):
            with pytest.raises(RuntimeInputError):
                guide.allowed(state, tokens_left=k)
            continue
        expected = oracle_allowed(dfa, vocabulary, can_end, state, k)
        assert expected, "a state that can end within k has a token that starts such an ending"
        assert guide.allowed(state, tokens_left=k).tolist() == expected, (state, k)
        assert np.array_equal(guide.mask(state, tokens_left=k), packed(expected, vocabulary.size))
        out = np.full((2, guide.bitmask_words), -1, dtype=np.int32)
        guide.fill_bitmask(state, out, row=1, tokens_left=k)
        assert np.array_equal(out[1].view(np.uint32), packed(expected, vocabulary.size))
        assert (out[0] == -1).all()
        if k >= guide.loose_budget(state):  # loose: exactly the unbudgeted mask
            assert guide.allowed(state, tokens_left=k).tolist() == guide.allowed(state).tolist()


@pytest.mark.parametrize(
    "language",
    [
        json_like_dfa(),
        compile_ir(ir.seq(json_string(12), ir.optional(ir.text("!")))),
        compile_ir(ir.repeat(ir.byte_range(0x30, 0x39), 3, 40)),
    ],
    ids=["json-like", "string", "digits"],
)
def test_loose_budgets_give_the_unbudgeted_masks_and_tight_ones_less(gpt2: Vocabulary, language: DFA) -> None:
    guide = guide_for(language, gpt2)
    words = guide.bitmask_words
    for state in range(1, guide.num_states):
        loose = guide.loose_budget(state)
        fewest = guide.fewest_tokens(state)
        assert loose != NEVER and loose >= fewest >= 1
        for k in (loose, loose + 1, 10_000):
            assert guide.allowed(state, tokens_left=k) is guide.allowed(state)
            assert np.array_equal(guide.mask(state, tokens_left=k), guide.mask(state))
            for dtype in (np.int32, np.uint32):
                out = np.zeros((1, words), dtype=dtype)
                guide.fill_bitmask(state, out, tokens_left=k)
                assert np.array_equal(out[0].view(np.uint32), guide.mask(state))
        if loose > fewest:
            tighter = guide.allowed(state, tokens_left=loose - 1)
            assert set(tighter.tolist()) < set(guide.allowed(state).tolist())
        # wider bitmasks, torch-free general path and apply_mask agree with the budgeted ids
        for k in range(fewest, min(loose, fewest + 4)):
            ids = guide.allowed(state, tokens_left=k)
            wide = np.full((1, words + 2), -1, dtype=np.int32)
            guide.fill_bitmask(state, wide, tokens_left=k)
            assert np.array_equal(wide[0, :words].view(np.uint32), packed(ids, gpt2.size))
            assert not wide[0, words:].any()
            logits = np.random.default_rng(state).normal(size=gpt2.size).astype(np.float32)
            guide.apply_mask(logits, state, tokens_left=k)
            assert np.flatnonzero(np.isfinite(logits)).tolist() == ids.tolist()


def test_budgeted_fill_and_apply_mask_on_torch(gpt2: Vocabulary) -> None:
    torch = pytest.importorskip("torch")
    guide = guide_for(json_like_dfa(), gpt2)
    state = guide.start()
    k = guide.fewest_tokens(state)
    ids = guide.allowed(state, tokens_left=k)
    logits = torch.randn(gpt2.size)
    guide.apply_mask(logits, state, tokens_left=k)
    assert torch.isfinite(logits).nonzero().flatten().tolist() == ids.tolist()
    bitmask = torch.zeros((2, guide.bitmask_words), dtype=torch.int32)
    guide.fill_bitmask(state, bitmask, row=1, tokens_left=k)
    assert np.array_equal(bitmask[1].numpy().view(np.uint32), packed(ids, gpt2.size))


def test_walking_only_budgeted_tokens_always_ends_in_time(gpt2: Vocabulary) -> None:
    """Random walks that take any budgeted token end with eos within the budget, for every budget
    from the start state's fewest tokens up."""
    guide = guide_for(json_like_dfa(), gpt2)
    rng = np.random.default_rng(5)
    start = guide.start()
    for budget in range(guide.fewest_tokens(start), guide.fewest_tokens(start) + 25):
        for _ in range(4):
            state, used = start, 0
            while True:
                ids = guide.allowed(state, tokens_left=budget - used)
                token = int(rng.choice(ids))
                used += 1
                if token == guide.eos:
                    break
                following = guide.advance(state, token)
                assert following is not None
                state = following
            assert used <= budget and guide.is_accept(state)


def test_bad_budgets_are_clear_errors(gpt2: Vocabulary) -> None:
    guide = guide_for(json_like_dfa(), gpt2)
    start = guide.start()
    fewest = guide.fewest_tokens(start)
    out = np.zeros((1, guide.bitmask_words), dtype=np.int32)
    calls = (
        lambda k: guide.allowed(start, tokens_left=k),
        lambda k: guide.mask(start, tokens_left=k),
        lambda k: guide.fill_bitmask(start, out, tokens_left=k),
        lambda k: guide.apply_mask(np.zeros(gpt2.size), start, tokens_left=k),
        lambda k: guide.greedy(start, np.zeros(gpt2.size), tokens_left=k),
    )
    for call in calls:
        for bad, message in (
            (0, "budget is spent"),
            (-3, "budget is spent"),
            (2.0, "must be an int"),
            (True, "must be an int"),
            ("5", "must be an int"),
            (fewest - 1, f"needs at least {fewest} tokens"),
        ):
            with pytest.raises(RuntimeInputError, match=message):
                call(bad)
        call(np.int64(fewest))  # numpy ints are ints
    with pytest.raises(RuntimeInputError, match="dead state"):
        guide.allowed(0, tokens_left=5)
    stuck = guide_for(compile_ir(ir.text("aab")), Vocabulary.from_tokens([b"a", b"aa", b""], eos_id=2))
    assert stuck.fewest_tokens(stuck.start()) == -1
    with pytest.raises(RuntimeInputError, match="cannot end with eos at all"):
        stuck.allowed(stuck.start(), tokens_left=100)


def test_tokens_into_states_that_cannot_end_are_never_allowed_under_a_budget() -> None:
    """Where the vocabulary cannot spell an ending after a token, the budget drops that token even
    when loose (the unbudgeted mask keeps it), and the loose fast path is never used there."""
    dfa = compile_ir(ir.alt(ir.text("ab"), ir.text("cd")))
    vocabulary = Vocabulary.from_tokens([b"a", b"c", b"d", b""], eos_id=3)  # no "b"
    guide = guide_for(dfa, vocabulary)
    start = guide.start()
    assert guide.allowed(start).tolist() == [0, 1]
    assert guide.loose_budget(start) == NEVER and guide.fewest_tokens(start) == 3
    assert guide.allowed(start, tokens_left=50).tolist() == [1]
    out = np.zeros((1, guide.bitmask_words), dtype=np.uint32)
    guide.fill_bitmask(start, out, tokens_left=50)
    assert np.array_equal(out[0], packed([1], vocabulary.size))


def test_greedy_finish_and_budgets_take_a_shortest_ending(gpt2: Vocabulary) -> None:
    guide = guide_for(json_like_dfa(), gpt2)
    rng = np.random.default_rng(1)
    for state in rng.choice(np.arange(1, guide.num_states), size=40, replace=False).tolist():
        fewest = guide.fewest_tokens(state)
        current, taken = state, 0
        while True:
            token = guide.greedy(current, rng.normal(size=gpt2.size), finish=True)
            assert token is not None
            taken += 1
            if token == guide.eos:
                break
            following = guide.advance(current, token)
            assert (
                following is not None and guide.fewest_tokens(following) == guide.fewest_tokens(current) - 1
            )
            current = following
        assert taken == fewest
    scores = np.zeros(gpt2.size)
    start = guide.start()
    tight = guide.allowed(start, tokens_left=guide.fewest_tokens(start))
    scores[tight] = -np.inf
    assert guide.greedy(start, scores, tokens_left=guide.fewest_tokens(start)) is None
    assert guide.greedy(start, scores) is not None


def test_greedy_finish_in_an_accepting_state_is_eos() -> None:
    dfa = compile_ir(ir.seq(ir.text("a"), ir.star(ir.byte_range(0x61, 0x7A))))
    guide = guide_for(dfa, bytes_vocabulary())
    after_a = guide.advance(guide.start(), ord("a"))
    assert after_a is not None
    scores = np.zeros(257)
    scores[ord("z")] = 5.0
    assert guide.greedy(after_a, scores, finish=True) == guide.eos
    assert guide.greedy(after_a, scores, tokens_left=1) == guide.eos
    assert guide.greedy(after_a, scores, tokens_left=2) == ord("z")


def test_monkey_ends_within_its_budget(gpt2: Vocabulary) -> None:
    dfa = json_like_dfa()
    guide = guide_for(dfa, gpt2)
    fewest = guide.fewest_tokens(guide.start())
    rng = np.random.default_rng(3)
    for max_tokens in (0, 1, fewest, fewest + 1, fewest + 5, 40, 64):
        for _ in range(10):
            tokens, text, finished = guide.monkey(rng, max_tokens)
            assert finished and tokens[-1] == gpt2.eos_id
            assert len(tokens) <= max(max_tokens, fewest)
            assert dfa.accepts(text.encode("utf-8"))


def test_stored_eos_steps_are_used_and_checked(gpt2: Vocabulary) -> None:
    dfa = json_like_dfa()
    table = build_token_table(dfa, gpt2)
    steps = fewest_tokens_to_eos(table.next_table, table.token_class, dfa.accepting, gpt2.eos_id)
    table.eos_steps = steps  # type: ignore[attr-defined]
    guide = Guide.from_artifact(Artifact(dfa, {}, table))
    assert guide.budget_rule().steps.tolist() == steps.tolist()
    bad = build_token_table(dfa, gpt2)
    bad.eos_steps = steps[:-1]  # type: ignore[attr-defined]
    with pytest.raises(ArtifactError, match="eos steps"):
        Guide.from_artifact(Artifact(dfa, {}, bad)).allowed(1, tokens_left=5)
    wrong = steps.copy()
    wrong[guide.start()] += 1
    with pytest.raises(ValueError, match=f"state {guide.start()}"):
        verify_eos_steps(wrong, table.next_table, table.token_class, dfa.accepting, gpt2.eos_id)


def test_fewest_tokens_on_a_deep_chain_and_a_wide_table() -> None:
    """A chain of 20,000 states (one level of the search per state) and a table whose rows repeat
    targets in many classes give the exact values."""
    states = 20_000
    class_next = np.zeros((states, 3), dtype=np.int32)
    class_next[1:-1, 1] = np.arange(2, states)  # one step along the chain
    class_next[1:-2, 2] = np.arange(3, states)  # or two at once
    accepting = np.zeros(states, dtype=bool)
    accepting[-1] = True
    token_class = np.array([0, 1, 2])
    steps = fewest_tokens_to_eos(class_next, token_class, accepting, eos_id=0)
    distance = states - 1 - np.arange(states)
    assert steps[0] == 0 and steps[-1] == 1
    assert steps[1:].tolist() == ((distance[1:] + 1) // 2 + 1).tolist()
    rng = np.random.default_rng(0)
    wide = rng.integers(0, 50, size=(50, 400)).astype(np.int32)
    wide[0] = 0
    wide[:, 0] = 0
    accept = rng.random(50) < 0.1
    accept[0] = False
    vocab_class = np.arange(400)
    result = fewest_tokens_to_eos(wide, vocab_class, accept, eos_id=0)
    expected = np.full(50, -1)
    expected[0] = 0
    expected[accept] = 1
    for _ in range(50):  # Bellman-Ford to the fixed point
        best = np.where(expected[wide[:, 1:]] > 0, expected[wide[:, 1:]], 10**9).min(axis=1)
        expected = np.where(accept, 1, np.where(best < 10**9, best + 1, -1))
        expected[0] = 0
    assert result.tolist() == expected.tolist()
