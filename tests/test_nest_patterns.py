"""Stack patterns (``nest_patterns``): the masks a ``NestGuide`` reads off them inside nested
containers against walking every dynamic token with the stack (``DFA.walk_counted``), with GPT-2
and Llama-3, for every stack of up to four entries and random deeper ones up to the bound; the
same with the patterns' bound forced (every token walked per stack) and after ``warm()``; ways
kept across guides."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from moonmaskc import nest_patterns
from moonmaskc.automata.nested import MAX_NEST_ENTRIES
from moonmaskc.pipeline import CompileOptions, compile_source
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary
from tests.schema_suite_report import data_dir

SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}, "extra": {}},
    "required": ["id"],
}


def tokenizer_path(name: str) -> Path:
    path = data_dir() / "tokenizers" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"the {name} tokenizer is not in {data_dir()} (set MOONMASKC_DATA)")
    return path


def stacks(bits: int, rng: random.Random, deep: int) -> list[int]:
    """Every stack of one to four entries, and ``deep`` random ones of 5 to the bound's entries."""
    found = []
    for entries in range(1, 5):
        for kinds in range(1 << (entries * bits)):
            found.append((1 << (entries * bits)) | kinds)
    for _ in range(deep):
        entries = rng.choice(
            [5, 6, 9, MAX_NEST_ENTRIES - 1, MAX_NEST_ENTRIES, rng.randint(5, MAX_NEST_ENTRIES)]
        )
        found.append((1 << (entries * bits)) | rng.getrandbits(entries * bits))
    return found


def expected_allowed(artifact: Any, token_bytes: list[bytes], q: int, stack: int) -> np.ndarray:
    """The row of ``q`` and the dynamic tokens of ``q`` whose bytes the DFA walks with ``stack``."""
    assert artifact.token_table is not None and artifact.token_table.nest_dynamic is not None
    offsets, ids = artifact.token_table.nest_dynamic
    through = [
        token
        for token in ids[offsets[q] : offsets[q + 1]].tolist()
        if artifact.dfa.walk_counted(token_bytes[token], q, stack)[2] is None
        and artifact.dfa.walk_counted(token_bytes[token], q, stack)[0]
    ]
    return np.union1d(artifact.token_table.allowed(q), np.asarray(through, dtype=np.int64))


def nested_states_with_dynamic_tokens(artifact: Any) -> list[int]:
    offsets, _ = artifact.token_table.nest_dynamic
    nests = artifact.dfa.nests
    return [q for q in np.nonzero(nests.copy >= 1)[0].tolist() if offsets[q + 1] > offsets[q]]


@pytest.mark.parametrize(("name", "states", "deep"), [("gpt2", None, 12), ("llama3", 25, 4)])
@pytest.mark.parametrize("bounded", [False, True])
def test_masks_read_off_the_patterns_are_the_walked_ones(
    name: str, states: int | None, deep: int, bounded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary = load_vocabulary(tokenizer_path(name))
    artifact = compile_source("schema", SCHEMA, CompileOptions(tokenizer=vocabulary))
    assert artifact.dfa.nests is not None
    if bounded:  # past the bound a state's tokens are walked per stack
        monkeypatch.setattr(nest_patterns, "MAX_WAYS", 0)
    guide = Guide.from_artifact(artifact)
    token_bytes = list(vocabulary.token_bytes)
    rng = random.Random(11)
    chosen = nested_states_with_dynamic_tokens(artifact)
    assert chosen
    if states is not None:
        chosen = rng.sample(chosen, min(states, len(chosen)))
    bits = artifact.dfa.nests.entry_bits
    let_through = 0
    for q in chosen:
        for stack in stacks(bits, rng, deep):
            expected = expected_allowed(artifact, token_bytes, q, stack)
            allowed = guide.allowed(q + (stack << 32))
            assert np.array_equal(allowed, expected), (q, stack)
            let_through += len(allowed) - len(artifact.token_table.allowed(q))
    assert let_through > 0  # the stacks let some closing tokens through


def test_a_warm_guide_serves_the_same_masks_along_deep_documents() -> None:
    vocabulary = load_vocabulary(tokenizer_path("gpt2"))
    artifact = compile_source("schema", SCHEMA, CompileOptions(tokenizer=vocabulary))
    cold, warm = Guide.from_artifact(artifact), Guide.from_artifact(artifact).warm()
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path("gpt2")))
    text = '{"id":1,"extra":' + '[{"a":' * 12 + "[]" + "}]" * 12 + ',"b":{"c":[[[1]],{}]}}'
    state = cold.start()
    bitmask = np.zeros((1, warm.bitmask_words), dtype=np.int32)
    for token in [*tokenizer.encode(text).ids, cold.eos]:
        warm.fill_bitmask(state, bitmask)
        assert np.array_equal(bitmask[0].view(np.uint32), cold.mask(state))
        assert token in cold.allowed(state)
        following = cold.advance(state, token)
        assert following is not None
        state = following
    assert cold.is_accept(state)


@pytest.mark.parametrize("name", ["gpt2", "llama3"])
def test_budgets_read_off_the_patterns_are_the_walked_ones(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary = load_vocabulary(tokenizer_path(name))
    artifact = compile_source("schema", SCHEMA, CompileOptions(tokenizer=vocabulary))
    rng = random.Random(5)
    chosen = rng.sample(nested_states_with_dynamic_tokens(artifact), 12)
    bits = artifact.dfa.nests.entry_bits
    states = [q + (stack << 32) for q in chosen for stack in stacks(bits, rng, 3)[::5]]

    def budgets(guide: Guide) -> list[tuple[int, list[list[int]]]]:
        found = []
        for state in states:
            loose = guide.loose_budget(state)
            fewest = guide.fewest_tokens(state)
            lefts = sorted({max(fewest, 1), fewest + 1, fewest + 2, max(loose - 1, 1)})
            rows = []
            for left in lefts:
                try:
                    rows.append(guide.allowed(state, tokens_left=left).tolist())
                except Exception as error:  # a budget below the fewest tokens: refused both ways
                    rows.append([type(error).__name__])
            found.append((loose, rows))
        return found

    with monkeypatch.context() as patched:
        patched.setattr(nest_patterns, "MAX_WAYS", 0)
        walked = budgets(Guide.from_artifact(artifact))
    read_off = budgets(Guide.from_artifact(artifact))
    assert read_off == walked
    assert any(len(rows[0]) < len(rows[-1]) for _, rows in read_off)  # the budgets bind somewhere


def test_ways_kept_across_guides_serve_only_the_same_level_and_vocabulary() -> None:
    """A guide of another whitespace layout (another level automaton) after a compact one has
    filled the process's kept ways: its masks are still the walked ones."""
    vocabulary = load_vocabulary(tokenizer_path("gpt2"))
    compact = compile_source("schema", SCHEMA, CompileOptions(tokenizer=vocabulary))
    Guide.from_artifact(compact).warm()
    flexible = compile_source("schema", SCHEMA, CompileOptions(tokenizer=vocabulary, whitespace="flexible"))
    assert flexible.dfa.nests is not None
    guide = Guide.from_artifact(flexible)
    token_bytes = list(vocabulary.token_bytes)
    rng = random.Random(2)
    bits = flexible.dfa.nests.entry_bits
    for q in rng.sample(nested_states_with_dynamic_tokens(flexible), 20):
        for stack in stacks(bits, rng, 3)[::3]:
            assert np.array_equal(
                guide.allowed(q + (stack << 32)), expected_allowed(flexible, token_bytes, q, stack)
            )
