"""The runtime of counted regions (``runtime_counted.CountedGuide``) against the same schema with its
bounds written out: step by step, on random walks that run strings up to their bounds, the allowed
tokens, packed masks, fills, budgets, acceptance and next states agree. With the byte vocabulary
(small bounds, counted by lowering the threshold) and with GPT-2 (bounds past its longest token),
through an artifact file and in memory; and corrupted counts or counters are refused."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc.errors import ArtifactError, RuntimeInputError
from moonmaskc.format import write_artifact
from moonmaskc.frontends.schema.types import strings
from moonmaskc.pipeline import compile_source, make_options
from moonmaskc.runtime import Guide
from moonmaskc.runtime_counted import STATE_BITS, CountedGuide
from tests.conftest import data_path
from tests.test_artifact_loading import _mutated, _serve_everything

SMALL = {
    "type": "object",
    "properties": {
        "a": {"type": "string", "minLength": 2, "maxLength": 6},
        "b": {"type": "array", "items": {"type": "string", "maxLength": 4}},
        "c": {"type": "string", "minLength": 1},
    },
    "required": ["a"],
    "additionalProperties": False,
}
LONG = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 3, "maxLength": 300},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 310}},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def pair(schema: dict[str, Any], tokenizer: str) -> tuple[Guide, Guide]:
    """The counted guide of ``schema`` and the guide of the same schema with the bounds written out."""
    options = make_options(tokenizer=tokenizer)
    counted = compile_source("schema", schema, options)
    assert counted.dfa.regions is not None, counted.metadata["notes"].get("length_counters")
    plain = compile_source("schema", schema, dataclasses.replace(options, length_counters=False))
    assert plain.dfa.regions is None
    return Guide.from_artifact(counted), Guide.from_artifact(plain)


@pytest.fixture(scope="module")
def small_pair() -> tuple[Guide, Guide]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(strings, "COUNTED_MIN_ROOM", 0)
        patch.setattr(strings, "COUNTED_MIN_ROOM_AFTER_PREFIX", 0)
        return pair(SMALL, "bytes")


def compare_walk(counted: Guide, plain: Guide, rng: random.Random, steps: int, prefer_long: bool) -> int:
    """Walk both guides with the same random tokens, comparing every answer; the longest count met."""
    assert isinstance(counted, CountedGuide)
    state, other = counted.start(), plain.start()
    words = counted.bitmask_words
    out = np.zeros((2, words), dtype=np.int32)
    most = 0
    lengths = np.diff(np.concatenate([[0], counted._token_ends]))
    for step in range(steps):
        allowed = counted.allowed(state)
        assert np.array_equal(allowed, plain.allowed(other)), (step, state)
        assert np.array_equal(counted.mask(state), plain.mask(other))
        counted.fill_bitmask(state, out, 1)
        assert np.array_equal(out[1].view(np.uint32), plain.mask(other))
        assert counted.is_accept(state) == plain.is_accept(other)
        fewest = counted.fewest_tokens(state)
        assert fewest == plain.fewest_tokens(other)
        for left in {fewest, fewest + 1, fewest + 3}:
            if left > 0:
                assert np.array_equal(
                    counted.allowed(state, tokens_left=left), plain.allowed(other, tokens_left=left)
                )
        assert np.array_equal(counted.finishing(state), plain.finishing(other))
        if len(allowed) == 0 or (counted.is_accept(state) and rng.random() < 0.1):
            break
        choices = allowed[allowed != counted.eos]
        if len(choices) == 0:
            break
        if prefer_long and rng.random() < 0.9:
            longest = choices[lengths[choices] >= np.sort(lengths[choices])[-min(20, len(choices))]]
            choices = longest
        token = int(choices[rng.randrange(len(choices))])
        state, other = counted.advance(state, token), plain.advance(other, token)
        assert state is not None and other is not None
        most = max(most, state >> STATE_BITS)
    return most


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6))
def test_counted_guide_matches_written_out_bounds_byte_vocabulary(
    small_pair: tuple[Guide, Guide], seed: int
) -> None:
    counted, plain = small_pair
    compare_walk(counted, plain, random.Random(seed), 80, prefer_long=False)


def test_counted_guide_matches_written_out_bounds_gpt2(tmp_path: Path) -> None:
    tokenizer = str(data_path("tokenizers", "gpt2.json"))
    counted, plain = pair(LONG, tokenizer)
    reached = max(
        compare_walk(counted, plain, random.Random(seed), 120, prefer_long=True) for seed in range(4)
    )
    assert reached >= 250  # the walks ran the strings close to their bounds
    # The same through a file (the serving table).
    artifact = compile_source("schema", LONG, make_options(tokenizer=tokenizer))
    served = moonmaskc.load(artifact.save(tmp_path / "long.npz"))
    assert isinstance(served, CountedGuide)
    compare_walk(served, plain, random.Random(7), 120, prefer_long=True)
    compare_walk(served.warm(), plain, random.Random(8), 120, prefer_long=True)  # (warm: same answers)


def test_monkey_samples_are_valid_and_finish(small_pair: tuple[Guide, Guide]) -> None:
    from jsonschema import Draft202012Validator

    counted, _ = small_pair
    validator = Draft202012Validator(SMALL)
    import json

    for seed in range(40):
        result = counted.monkey(random.Random(seed), 40)
        assert result.finished and len(result.tokens) <= 40
        assert validator.is_valid(json.loads(result.text)), result.text


def test_counters_in_states_are_checked(small_pair: tuple[Guide, Guide]) -> None:
    counted, _ = small_pair
    with pytest.raises(RuntimeInputError):
        counted.allowed(counted.start() | (1 << STATE_BITS))  # the start state holds no counter
    inside = counted.advance(counted.start(), ord("{"))
    for byte in b'"a":"':
        assert inside is not None
        inside = counted.advance(inside, byte)
    assert inside is not None
    for _ in range(4):  # two characters written out (minLength 2), then the counted ones
        inside = counted.advance(inside, ord("x"))
        assert inside is not None
    assert inside >> STATE_BITS == 2
    with pytest.raises(RuntimeInputError):
        counted.allowed((inside & ((1 << STATE_BITS) - 1)) | (9 << STATE_BITS))  # past maxLength - minLength
    with pytest.raises(RuntimeInputError):
        counted.allowed(-1)


def _saved_arrays(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(strings, "COUNTED_MIN_ROOM", 0)
        patch.setattr(strings, "COUNTED_MIN_ROOM_AFTER_PREFIX", 0)
        artifact = compile_source("schema", SMALL, make_options(tokenizer="bytes"))
    path = artifact.save(tmp_path / "small.npz")
    with np.load(path) as stored:
        return path, {name: stored[name] for name in stored.files}


@pytest.mark.parametrize(
    "damage", ["negative", "past the token", "one role short", "missing", "without regions"]
)
def test_loader_refuses_corrupted_character_counts(tmp_path: Path, damage: str) -> None:
    from moonmaskc.artifact import Artifact

    _, arrays = _saved_arrays(tmp_path)
    counts = arrays["tokens_region_counts"].copy()
    if damage == "negative":
        counts[0, 5] = -1
        arrays["tokens_region_counts"] = counts
    elif damage == "past the token":
        counts[0, 5] = 3
        arrays["tokens_region_counts"] = counts
    elif damage == "one role short":
        arrays["tokens_region_counts"] = counts[1:]
    elif damage == "missing":
        del arrays["tokens_region_counts"]
    else:
        for name in ("dfa_region", "dfa_role", "dfa_region_low", "dfa_region_high", "dfa_region_boundary"):
            del arrays[name]
        arrays["format_version"] = np.array(3, dtype=np.int32)
    bad = write_artifact(tmp_path / "bad.npz", arrays)
    with pytest.raises(ArtifactError):
        moonmaskc.load(bad)
    with pytest.raises(ArtifactError):
        Artifact.load(bad)


def test_a_token_that_opens_a_string_past_its_bound_writes_the_bounds_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(strings, "COUNTED_MIN_ROOM", 0)
    monkeypatch.setattr(strings, "COUNTED_MIN_ROOM_AFTER_PREFIX", 0)
    tokenizer = str(data_path("tokenizers", "gpt2.json"))
    # After a written-out first character any character's byte enters the region: a token may
    # start 65 characters there, past a room of 4.
    prefixed = compile_source(
        "schema", {"type": "string", "minLength": 1, "maxLength": 5}, make_options(tokenizer=tokenizer)
    )
    assert prefixed.dfa.regions is None
    assert "a token starts 65 characters" in prefixed.metadata["notes"]["length_counters"]
    # GPT-2's '"},{"' opens a string and starts 3 characters in it: more than a room of 2.
    artifact = compile_source("schema", {"type": "string", "maxLength": 2}, make_options(tokenizer=tokenizer))
    assert artifact.dfa.regions is None
    assert "starts 3 characters in a string it opens" in artifact.metadata["notes"]["length_counters"]
    assert artifact.match('"ab"').accepted and not artifact.match('"abc"').accepted
    counted = compile_source("schema", {"type": "string", "maxLength": 3}, make_options(tokenizer=tokenizer))
    assert counted.dfa.regions is not None


SHORT = {
    "type": "object",
    "properties": {
        "a": {"type": "string", "maxLength": 5},
        "b": {"type": "array", "items": {"type": "string", "maxLength": 4}},
    },
    "additionalProperties": False,
}


def test_short_counted_strings_match_written_out_bounds_gpt2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rooms of 4 and 5 characters right after the opening quote, within which GPT-2's tokens that
    open a string (``"},{"``) start at most 3: the rows of states outside regions need no change."""
    monkeypatch.setattr(strings, "COUNTED_MIN_ROOM", 0)
    monkeypatch.setattr(strings, "COUNTED_MIN_ROOM_AFTER_PREFIX", 0)
    counted, plain = pair(SHORT, str(data_path("tokenizers", "gpt2.json")))
    reached = [compare_walk(counted, plain, random.Random(seed), 60, prefer_long=False) for seed in range(12)]
    assert max(reached) >= 3


COUNTED_ARRAYS = (
    "dfa_region",
    "dfa_role",
    "dfa_region_low",
    "dfa_region_high",
    "dfa_region_boundary",
    "tokens_region_counts",
    "dfa_transitions",
    "dfa_distance",
    "format_version",
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mutation=st.sampled_from(["flip", "dtype", "shape", "drop", "negate"]),
    name=st.sampled_from(COUNTED_ARRAYS),
    seed=st.integers(0, 10**9),
)
def test_mutated_counted_artifacts_are_refused_or_served_without_a_crash(
    tmp_path: Path, mutation: str, name: str, seed: int
) -> None:
    """Format 4's arrays mutated at random: a plain load refuses the file (``ArtifactError``) or
    serves it with no other exception, the counter included (masks, steps, monkey samples)."""
    from moonmaskc.artifact import Artifact

    _, arrays = _saved_arrays(tmp_path)
    bad = write_artifact(
        tmp_path / f"mutated-{seed}.npz", _mutated(arrays, name, mutation, np.random.default_rng(seed))
    )
    try:
        guide = moonmaskc.load(bad)
        _serve_everything(guide, 12)
        state = guide.start()
        for token in b'{"a":"xxxxxx"}':
            following = guide.advance(state, token)
            if following is None:
                break
            state = following
    except ArtifactError:
        pass
    try:
        artifact = Artifact.load(bad)
    except ArtifactError:
        return
    for text in ('{"a":"xy"}', '{"a":"xyzuvwq"}', '{"a":"xy","b":["abc"]}', ""):
        artifact.match(text)
