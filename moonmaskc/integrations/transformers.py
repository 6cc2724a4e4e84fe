"""A ``transformers`` logits processor that masks every generation step with a moonmaskc artifact.

Takes: an artifact with a token table (a path, an in-memory ``Artifact`` or a runtime ``Guide``)
compiled for the model's vocabulary. Hands on: ``MoonmaskLogitsProcessor``, to pass to
``model.generate(..., logits_processor=LogitsProcessorList([processor]))``.

Invariants:
- One instance per ``generate`` call: the first call records the prompt length and the batch size;
  every later call reads the tokens generated since the prompt.
- Each row's state is found from that row's own generated tokens (a cache maps each generated
  prefix to its state, so beam reordering and several tokens per step are handled).
- A row may end (eos) only in an accepting state. After eos a row stays finished: only eos and
  ``pad_token_id`` remain allowed, and what ``generate`` appends to a finished row is not checked.
- Scores past the artifact's vocabulary (padded embedding matrices) are never allowed.
- With a token budget (``max_new_tokens``, or the generation config's), a row may take a token
  only when a valid end with eos still fits in the tokens left after it (``Guide.allowed(...,
  tokens_left=...)``): every row ends valid, with eos, within the budget. While the budget is loose
  the masks are the unbudgeted ones.

Importing this module imports torch and transformers; ``import moonmaskc`` never does.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import torch
from transformers import LogitsProcessor

from moonmaskc.errors import RuntimeInputError
from moonmaskc.integrations.allow_rows import AllowRows, NoContinuation
from moonmaskc.runtime import Guide

__all__ = ["MoonmaskLogitsProcessor", "as_guide"]

FINISHED = -1


def as_guide(source: Any, tokenizer: Any = None) -> Guide:
    """A runtime ``Guide`` from a ``Guide``, an in-memory ``Artifact`` or an artifact path.

    ``tokenizer`` (a ``Vocabulary`` or a ``load_vocabulary`` spec), when given, must match the
    artifact's vocabulary fingerprint."""
    if isinstance(source, Guide):
        source.check_tokenizer(tokenizer)
        return source
    if isinstance(source, str | os.PathLike):
        return Guide.load(source, tokenizer=tokenizer)
    if hasattr(source, "token_table") and hasattr(source, "dfa"):
        return Guide.from_artifact(source, tokenizer=tokenizer)
    raise TypeError(f"expected an artifact path, an Artifact or a Guide, not {type(source).__name__}")


class MoonmaskLogitsProcessor(LogitsProcessor):
    """Sets the score of every token the artifact does not allow next to -inf, row by row.

    ``artifact``: a path, an ``Artifact`` (with a token table) or a ``Guide``. ``pad_token_id``:
    the id ``generate`` writes into finished rows, when it differs from eos. ``tokenizer``: an
    optional vocabulary spec checked against the artifact's fingerprint.

    ``max_new_tokens``: the token budget of the ``generate`` call (eos included); give the same
    value as to ``generate``. Every row then ends valid and with eos within it. When the start
    state's shortest valid output (``Guide.fewest_tokens``) is longer, ``RuntimeInputError`` at
    once. ``generation_config``: a ``GenerationConfig`` (or a model, whose ``generation_config`` is
    used), read at the first call when ``max_new_tokens`` is not given: its ``max_new_tokens``, else
    its ``max_length`` minus the prompt length. Without either, no budget.

    After ``generate``, ``states`` holds each row's state (``FINISHED`` = -1 once eos was
    emitted), ``mask_seconds`` the time spent in this processor and ``calls`` its call count;
    ``max_new_tokens`` the budget in force (``None``: none).
    """

    def __init__(
        self,
        artifact: Any,
        pad_token_id: int | None = None,
        tokenizer: Any = None,
        max_new_tokens: int | None = None,
        generation_config: Any = None,
    ) -> None:
        self.guide = as_guide(artifact, tokenizer=tokenizer).warm()  # every fill one row copy from here on
        self.pad_token_id = pad_token_id
        self.max_new_tokens: int | None = None
        self._generation_config = generation_config
        self._allow_rows = AllowRows(self.guide)
        if max_new_tokens is not None:
            self.max_new_tokens = self._checked_budget(max_new_tokens, "max_new_tokens")
        self.prompt_length: int | None = None
        self.batch_size: int | None = None
        self.states: list[int] = []
        self.mask_seconds = 0.0
        self.calls = 0
        self._known: dict[bytes, int] = {}
        self._finished_ids = np.array(
            sorted({self.guide.eos} | ({pad_token_id} if pad_token_id is not None else set())), dtype=np.int64
        )

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        began = time.perf_counter()
        batch, length = int(input_ids.shape[0]), int(input_ids.shape[1])
        if self.prompt_length is None:
            self.prompt_length = length
            self.batch_size = batch
            if self.max_new_tokens is None and self._generation_config is not None:
                self.max_new_tokens = self._budget_from_config(length)
        if batch != self.batch_size or length < self.prompt_length:
            raise RuntimeInputError(
                f"this MoonmaskLogitsProcessor served a batch of {self.batch_size} rows after a prompt of "
                f"{self.prompt_length} tokens and now sees {batch} rows of {length} tokens: use one "
                "processor per generate call"
            )
        width = int(scores.shape[-1])
        if width < self.guide.vocab_size:
            raise RuntimeInputError(
                f"the model scores {width} tokens but the artifact's vocabulary has {self.guide.vocab_size}: "
                "compile the artifact with this model's tokenizer"
            )
        generated = input_ids[:, self.prompt_length :].detach().to("cpu").numpy().astype(np.int64)
        fresh: dict[bytes, int] = {}
        self.states = [self._state_of(row, generated[row], fresh) for row in range(batch)]
        self._known = fresh
        tokens_left = None if self.max_new_tokens is None else self.max_new_tokens - generated.shape[1]
        allowed = np.zeros((batch, width), dtype=bool)
        for row, state in enumerate(self.states):
            allowed[row, : self.guide.vocab_size] = self._allowed_row(row, state, tokens_left)
            if state == FINISHED:
                allowed[row, self._finished_ids[self._finished_ids < width]] = True
        keep = torch.from_numpy(allowed).to(scores.device)
        masked = scores.masked_fill(~keep, float("-inf"))
        self.mask_seconds += time.perf_counter() - began
        self.calls += 1
        return masked  # type: ignore[return-value]

    def _checked_budget(self, value: Any, origin: str) -> int:
        """``value`` as a budget; ``RuntimeInputError`` unless it is a positive int in which the
        start state's shortest valid output (eos included) fits."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise RuntimeInputError(f"{origin} must be an int, not {type(value).__name__}")
        value = int(value)
        start = self.guide.start()
        fewest = self.guide.fewest_tokens(start)
        if value <= 0:
            raise RuntimeInputError(f"{origin} is {value}: at least one new token (eos) is needed")
        if fewest <= 0:
            raise RuntimeInputError(
                "no output of this artifact can end with eos: no token sequence of its vocabulary "
                "completes it"
            )
        if fewest > value:
            raise RuntimeInputError(
                f"the shortest valid output of this artifact takes {fewest} tokens (eos included), more "
                f"than {origin} = {value}: raise the budget so that every row can end valid"
            )
        return value

    def _budget_from_config(self, prompt_length: int) -> int | None:
        config = getattr(self._generation_config, "generation_config", self._generation_config)
        max_new_tokens = getattr(config, "max_new_tokens", None)
        if max_new_tokens is not None:
            return self._checked_budget(max_new_tokens, "the generation config's max_new_tokens")
        max_length = getattr(config, "max_length", None)
        if max_length is None:
            return None
        return self._checked_budget(
            int(max_length) - prompt_length,
            f"the generation config's max_length {max_length} minus the prompt's {prompt_length} tokens",
        )

    def _allowed_row(self, row: int, state: int, tokens_left: int | None = None) -> np.ndarray:
        """The boolean allow-row of ``state`` over the vocabulary, under the budget rule once
        ``tokens_left`` binds it (``AllowRows``); errors name the row and the budget."""
        if state == FINISHED:
            return np.zeros(self.guide.vocab_size, dtype=bool)
        try:
            return self._allow_rows.row(state, tokens_left)
        except NoContinuation as error:
            raise RuntimeInputError(f"row {row}: {error}") from None
        except RuntimeInputError as error:
            raise RuntimeInputError(
                f"row {row}, {self.max_new_tokens} new tokens allowed, {tokens_left} left: {error}"
            ) from None

    def _state_of(self, row: int, tokens: np.ndarray, fresh: dict[bytes, int]) -> int:
        """The state after ``tokens`` (the row's generated tokens). The previous call's prefixes
        are looked up first; ``fresh`` collects this call's, for the next call."""
        key = tokens.tobytes()
        known = fresh.get(key, self._known.get(key))
        if known is not None:
            fresh[key] = known
            return known
        if len(tokens) == 0:
            state = self.guide.start()
        else:
            previous = self._known.get(tokens[:-1].tobytes())
            state = (
                self._step(row, previous, int(tokens[-1]), len(tokens) - 1)
                if previous is not None
                else self._walk(row, tokens)
            )
        fresh[key] = state
        return state

    def _walk(self, row: int, tokens: np.ndarray) -> int:
        state = self.guide.start()
        for position, token in enumerate(tokens.tolist()):
            state = self._step(row, state, token, position)
        return state

    def _step(self, row: int, state: int, token: int, position: int) -> int:
        if state == FINISHED:
            return FINISHED
        if token == self.guide.eos and self.guide.is_accept(state):
            return FINISHED
        following = self.guide.advance(state, token) if 0 <= token < self.guide.vocab_size else None
        if following is None:
            raise RuntimeInputError(
                f"row {row}: generated token {token} at position {position} is not allowed in state "
                f"{state}; another logits processor or warper must have changed the masked scores"
            )
        return following
