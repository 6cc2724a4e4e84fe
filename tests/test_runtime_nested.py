"""The runtime of nest regions (``runtime_nested.NestGuide``): masks, next states, acceptance and
budgets with the bracket stack, against ``jsonschema`` and the guide of the free values written
out, with the byte vocabulary and GPT-2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings

from moonmaskc.pipeline import CompileOptions, compile_source
from moonmaskc.runtime import Guide
from moonmaskc.runtime_nested import NestGuide
from moonmaskc.vocabulary import load_vocabulary
from tests.oracles.json_values import nesting_depth
from tests.schema_suite_report import _written, data_dir
from tests.test_nest_regions import VALUES

OPEN = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}, "extra": {}},
    "required": ["id"],
}
DEEP = {"a": [[{"b": [1, {"c": [[[]]]}]}], 'x"y'], "d": {"e": {"f": {"g": [True, None, -1.5]}}}}
DOCUMENTS = [
    {"id": 1},
    {"id": 7, "tags": [DEEP, "a", []], "extra": DEEP},
    {"id": -3, "extra": [[[[[[[[[[1]]]]]]]]]], "other": {"k": [DEEP]}},
    {"id": 0, "tags": [{}], "zz": "é"},
]


def gpt2_path() -> Path:
    path = data_dir() / "tokenizers" / "gpt2.json"
    if not path.exists():
        pytest.skip(f"the GPT-2 tokenizer is not in {data_dir()} (set MOONMASKC_DATA)")
    return path


def guides(tokenizer: Any) -> tuple[Guide, Guide]:
    vocabulary = load_vocabulary(tokenizer)
    nested = compile_source("schema", OPEN, CompileOptions(free_value_stacks=True, tokenizer=vocabulary))
    written = compile_source("schema", OPEN, CompileOptions(free_value_stacks=False, tokenizer=vocabulary))
    assert nested.dfa.nests is not None and written.dfa.nests is None
    return Guide.from_artifact(nested), Guide.from_artifact(written)


def encode(tokenizer: Any, text: str) -> list[int]:
    if tokenizer == "bytes":
        vocabulary = load_vocabulary("bytes")
        index = {data: token for token, data in enumerate(vocabulary.token_bytes) if len(data) == 1}
        return [index[bytes([b])] for b in text.encode()]
    from tokenizers import Tokenizer

    return list(Tokenizer.from_file(str(tokenizer)).encode(text).ids)


def written_text(value: dict[str, Any]) -> str:
    ordered = {key: value[key] for key in ("id", "tags", "extra") if key in value}
    ordered.update({key: item for key, item in value.items() if key not in ordered})
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("tokenizer", ["bytes", "gpt2"])
def test_documents_of_any_depth_walk_token_by_token(tokenizer: str) -> None:
    spec: Any = "bytes" if tokenizer == "bytes" else gpt2_path()
    nested, written = guides(spec)
    assert isinstance(nested, NestGuide)
    bitmask = np.zeros((1, nested.bitmask_words), dtype=np.int32)
    for document in DOCUMENTS:
        jsonschema.validate(document, OPEN)
        state, state_written = nested.start(), written.start()
        tokens = encode(spec, written_text(document))
        for token in tokens:
            allowed = nested.allowed(state)
            assert token in allowed
            mask = nested.mask(state)
            assert np.array_equal(
                np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")), allowed
            )
            nested.fill_bitmask(state, bitmask)
            assert np.array_equal(bitmask[0].view(np.uint32), mask)
            if state_written is not None:  # within the depth bound the written-out guide agrees
                assert np.isin(written.allowed(state_written), allowed).all()
                state_written = written.advance(state_written, token)
            following = nested.advance(state, token)
            assert following is not None
            state = following
        assert nested.is_accept(state)
        assert nested.eos in nested.allowed(state)
        assert (state_written is not None and written.is_accept(state_written)) == (
            nesting_depth(document) <= 4
        )


@pytest.mark.parametrize("tokenizer", ["bytes", "gpt2"])
def test_wrong_closers_and_too_deep_values_are_refused(tokenizer: str) -> None:
    spec: Any = "bytes" if tokenizer == "bytes" else gpt2_path()
    nested, _ = guides(spec)
    for text in ['{"id":1,"extra":[[1}', '{"id":1,"extra":{"a":[1]]', '{"id":1,"extra":' + "[" * 40]:
        state: int | None = nested.start()
        for token in encode(spec, text):
            if state is None:
                break
            state = nested.advance(state, token)
        assert state is None, text
    # The stack holds 30 entries: with the free value's own container (and the array that "extra"
    # may be, whose items are free values), at least 31 levels, and a closer each to end them.
    state, depth = nested.start(), 0
    for token in encode(spec, '{"id":1,"extra":'):
        state = nested.advance(state, token)
    bracket = encode(spec, "[")
    while (following := nested.advance(state, bracket[0])) is not None:
        state, depth = following, depth + 1
    assert 31 <= depth <= 32
    assert nested.distance(state) == depth + 1  # its closers and the object's


@pytest.mark.parametrize("tokenizer", ["bytes", "gpt2"])
@pytest.mark.parametrize("budget", [12, 25, 60])
def test_the_monkey_finishes_within_its_budget_with_valid_documents(tokenizer: str, budget: int) -> None:
    spec: Any = "bytes" if tokenizer == "bytes" else gpt2_path()
    nested, _ = guides(spec)
    deepest = 0
    for seed in range(25):
        result = nested.monkey(seed, budget)
        assert result.finished, result.text
        assert len(result.tokens) <= max(budget, nested.fewest_tokens(nested.start()))
        value = json.loads(result.text)
        jsonschema.validate(value, OPEN)
        deepest = max(deepest, nesting_depth(value))
    assert deepest >= 1


def test_a_budget_never_strands_a_deep_state() -> None:
    nested, _ = guides("bytes")
    state = nested.start()
    for token in encode("bytes", '{"id":1,"extra":[{"k":[['):
        following = nested.advance(state, token)
        assert following is not None
        state = following
    needed = nested.fewest_tokens(state)
    assert needed == nested.distance(state) + 1  # bytes to the end, then eos
    for left in range(needed, needed + 4):
        current = state
        for step in range(left):
            ids = nested.allowed(current, tokens_left=left - step)
            assert ids.size
            token = int(ids[0])
            if token == nested.eos:
                assert nested.is_accept(current)
                break
            following = nested.advance(current, token)
            assert following is not None
            current = following
        else:
            raise AssertionError("no eos within the budget")


@settings(max_examples=60, deadline=None)
@given(value=VALUES)
def test_random_documents_walk_with_the_stack_beside_the_written_out_guide(value: Any) -> None:
    """Any value under "extra", written compactly with GPT-2's tokens: every token allowed by the
    stack (and by the written-out guide while it still follows), the end accepted."""
    nested, written = gpt2_guides()
    document = {"id": 3, "extra": value}
    canonical = b'{"id":3,"extra":' + _written(value).encode() + b"}"
    state, state_written = nested.start(), written.start()
    for token in encode(gpt2_path(), canonical.decode()):
        allowed = nested.allowed(state)
        assert token in allowed
        if state_written is not None:
            assert np.isin(written.allowed(state_written), allowed).all()
            state_written = written.advance(state_written, token)
        following = nested.advance(state, token)
        assert following is not None
        state = following
    assert nested.is_accept(state)
    jsonschema.validate(document, OPEN)


_GUIDES: list[tuple[Guide, Guide]] = []


def gpt2_guides() -> tuple[Guide, Guide]:
    """The two guides for GPT-2, made once (hypothesis calls the test many times)."""
    if not _GUIDES:
        _GUIDES.append(guides(gpt2_path()))
    return _GUIDES[0]
