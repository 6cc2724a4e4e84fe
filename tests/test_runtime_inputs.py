"""The runtime's public calls checked as a careless or hostile caller meets them: every argument
of every ``Guide`` call drawn at random from values of the wrong type, dtype, shape, range or
writability. Only ``MoonmaskError`` subclasses may escape, with a message; a buffer of a dtype that
cannot hold the mask is refused instead of filled with wrong bits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import moonmaskc
from moonmaskc.errors import MoonmaskError, RuntimeInputError
from moonmaskc.runtime import Guide


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Guide:
    path = moonmaskc.compile_regex(r"[a-c]{1,3}x").save(tmp_path_factory.mktemp("r") / "g.npz")
    return Guide.load(path)


def _values(words: int, vocab: int) -> list[Any]:
    read_only = np.zeros((1, words), np.int32)
    read_only.flags.writeable = False
    return [
        None, 1, -1, 10**9, 1 << 70, -(1 << 70), 1.5, True, "1", b"x", [1], (1,), {},
        np.int64(1), np.float64(1.0), 1 + 2j,
        np.zeros(words, np.int32), np.zeros((2, words), np.int32), np.zeros((1, words), np.int8),
        np.zeros((1, words), np.float32), np.zeros((1, words - 1), np.int32),
        np.zeros((1, 1, words), np.int32), read_only, np.zeros(vocab), np.zeros(vocab, np.int32),
        np.full(vocab, np.nan), np.zeros(vocab, complex),
        np.array(["a"] * vocab), np.zeros((2, vocab)), np.zeros(vocab - 1), np.array([True, False]),
    ]  # fmt: skip


CALLS: dict[str, Callable[[Guide, Any], Any]] = {
    "allowed": lambda g, a: g.allowed(a),
    "mask": lambda g, a: g.mask(a),
    "advance state": lambda g, a: g.advance(a, 1),
    "advance token": lambda g, a: g.advance(g.start(), a),
    "is_accept": lambda g, a: g.is_accept(a),
    "distance": lambda g, a: g.distance(a),
    "fill_bitmask out": lambda g, a: g.fill_bitmask(g.start(), a),
    "fill_bitmask row": lambda g, a: g.fill_bitmask(g.start(), np.zeros((2, g.bitmask_words), np.int32), a),
    "fill_bitmask state": lambda g, a: g.fill_bitmask(a, np.zeros((1, g.bitmask_words), np.int32)),
    "apply_mask logits": lambda g, a: g.apply_mask(a, g.start()),
    "apply_mask state": lambda g, a: g.apply_mask(np.zeros(g.vocab_size), a),
    "greedy logits": lambda g, a: g.greedy(g.start(), a),
    "greedy state": lambda g, a: g.greedy(a, np.zeros(g.vocab_size)),
    "allowed tokens_left": lambda g, a: g.allowed(g.start(), tokens_left=a),
    "fill tokens_left": lambda g, a: g.fill_bitmask(
        g.start(), np.zeros((1, g.bitmask_words), np.int32), tokens_left=a
    ),
    "monkey rng": lambda g, a: g.monkey(a, 5),
    "monkey max_tokens": lambda g, a: g.monkey(1, a),
    "decode": lambda g, a: g.decode(a),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_only_moonmask_errors_escape_the_runtime(guide: Guide, call: str) -> None:
    """Every call with every hostile value (all of them: a sample missed ``1 << 70`` as a row)."""
    for value in _values(guide.bitmask_words, guide.vocab_size):
        try:
            CALLS[call](guide, value)
        except MoonmaskError as error:
            assert str(error)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64, np.float32, np.uint8])
def test_a_bitmask_that_cannot_hold_the_mask_is_refused(guide: Guide, dtype: type) -> None:
    out = np.zeros((1, guide.bitmask_words), dtype=dtype)
    with pytest.raises(RuntimeInputError, match="int32 or uint32"):
        guide.fill_bitmask(guide.start(), out)
    assert not out.any()


def test_rows_and_read_only_buffers(guide: Guide, tmp_path: Path) -> None:
    out = np.zeros((2, guide.bitmask_words), dtype=np.uint32)
    with pytest.raises(RuntimeInputError, match="row 2"):
        guide.fill_bitmask(guide.start(), out, 2)
    guide.fill_bitmask(guide.start(), out, 1)
    assert np.array_equal(out[1], guide.mask(guide.start())) and not out[0].any()
    out.flags.writeable = False
    with pytest.raises(RuntimeInputError, match="read-only"):
        guide.fill_bitmask(guide.start(), out, 0)
    with pytest.raises(RuntimeInputError, match="floating point"):
        guide.apply_mask(np.zeros(guide.vocab_size, dtype=np.int64), guide.start())
