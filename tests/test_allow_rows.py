"""The integrations' shared allow-rows (``moonmaskc.integrations.allow_rows``) on a real artifact:
rows equal to the guide's allowed tokens, cached per state and per binding budget, the budget's
cache bounded, and the two errors apart (no continuation at all; no way to finish in the budget)."""

from __future__ import annotations

import numpy as np
import pytest

import moonmaskc
from moonmaskc.errors import RuntimeInputError
from moonmaskc.integrations.allow_rows import AllowRows, NoContinuation
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import Vocabulary


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Guide:
    path = moonmaskc.compile_regex(r"[a-c]{1,3}x").save(tmp_path_factory.mktemp("rows") / "g.npz")
    return Guide.load(path)


def test_rows_are_the_allowed_tokens_and_are_built_once(guide: Guide) -> None:
    rows = AllowRows(guide)
    start = guide.start()
    row = rows.row(start)
    assert row.dtype == bool and row.shape == (guide.vocab_size,)
    assert np.flatnonzero(row).tolist() == sorted(guide.allowed(start).tolist()) == list(b"abc")
    assert rows.row(start) is row  # cached
    assert rows.row(start, tokens_left=guide.loose_budget(start)) is row  # the budget does not bind


def test_a_binding_budget_leaves_only_the_tokens_that_can_finish(guide: Guide) -> None:
    rows = AllowRows(guide, budget_rows_kept=1)
    after_a = guide.advance(guide.start(), ord("a"))
    after_aa = guide.advance(after_a, ord("a")) if after_a is not None else None
    assert after_a is not None and after_aa is not None
    assert guide.loose_budget(after_a) > 2 and guide.loose_budget(after_aa) > 2
    tight = rows.row(after_a, tokens_left=2)  # "x", then eos
    assert np.flatnonzero(tight).tolist() == [ord("x")]
    assert rows.row(after_a, tokens_left=2) is tight
    assert np.flatnonzero(rows.row(after_aa, tokens_left=2)).tolist() == [ord("x")]  # the cache restarts
    again = rows.row(after_a, tokens_left=2)
    assert again is not tight and np.array_equal(again, tight)
    assert np.flatnonzero(rows.row(after_a, tokens_left=3)).tolist() == list(b"abcx")  # not binding
    with pytest.raises(RuntimeInputError, match="needs at least") as caught:
        rows.row(after_a, tokens_left=1)
    assert not isinstance(caught.value, NoContinuation)


def test_a_state_no_token_continues_is_a_no_continuation_error(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A vocabulary that cannot spell the ``b`` the pattern needs after ``a``."""
    vocabulary = Vocabulary.from_tokens([b"a", b"c", b"</s>"], eos_id=2)
    artifact = moonmaskc.compile_regex("ab", tokenizer=vocabulary)
    guide = Guide.load(artifact.save(tmp_path_factory.mktemp("none") / "ab.npz"))
    rows = AllowRows(guide)
    assert np.flatnonzero(rows.row(guide.start())).tolist() == [0]
    after_a = guide.advance(guide.start(), 0)
    assert after_a is not None
    with pytest.raises(NoContinuation, match="no token of the vocabulary can continue from state"):
        rows.row(after_a)
