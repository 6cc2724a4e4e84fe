"""Boolean allow-rows over a vocabulary, for the integrations' logits processors.

Takes: a runtime ``Guide``. Hands on: ``AllowRows.row(state, tokens_left)``, the tokens allowed in
``state`` as a boolean array of the vocabulary's size, cached per state; once the budget rule
binds (``tokens_left`` below ``guide.loose_budget(state)``), the tokens that still leave room to
finish within ``tokens_left``, cached per (state, tokens left) up to ``budget_rows_kept`` rows (the
cache then starts again). A processor asks for the same few states step after step, so a row is
built once and then only looked up.

Errors: ``NoContinuation`` (a ``RuntimeInputError``) where no token of the vocabulary continues
from ``state``; the guide's ``RuntimeInputError`` where the budget leaves no way to finish. The
processors add where it happened (which row, which budget). Needs numpy and the runtime only.
"""

from __future__ import annotations

import numpy as np

from moonmaskc.errors import RuntimeInputError
from moonmaskc.runtime import Guide

BUDGET_ROWS_KEPT = 4096


class NoContinuation(RuntimeInputError):
    """No token of the vocabulary continues from a state (the vocabulary cannot spell it)."""


class AllowRows:
    """See the module docstring."""

    def __init__(self, guide: Guide, budget_rows_kept: int = BUDGET_ROWS_KEPT) -> None:
        self.guide = guide
        self._size = guide.vocab_size
        self._kept = budget_rows_kept
        self._rows: dict[object, np.ndarray] = {}  # by ``Guide.mask_key``
        self._budget_rows: dict[tuple[int, int], np.ndarray] = {}

    def row(self, state: int, tokens_left: int | None = None) -> np.ndarray:
        """The allow-row of ``state``, under the budget rule where ``tokens_left`` binds it."""
        if tokens_left is not None and tokens_left < self.guide.loose_budget(state):
            return self._budgeted(state, tokens_left)
        key = self.guide.mask_key(state)
        found = self._rows.get(key)
        if found is None:
            found = self._of(self.guide.allowed(state))
            if not found.any():
                raise NoContinuation(
                    f"no token of the vocabulary can continue from state {state} (the artifact's "
                    "vocabulary cannot spell any continuation here)"
                )
            self._rows[key] = found
        return found

    def _budgeted(self, state: int, tokens_left: int) -> np.ndarray:
        key = (state, tokens_left)
        found = self._budget_rows.get(key)
        if found is None:
            found = self._of(self.guide.allowed(state, tokens_left=tokens_left))
            if len(self._budget_rows) >= self._kept:
                self._budget_rows.clear()
            self._budget_rows[key] = found
        return found

    def _of(self, ids: np.ndarray) -> np.ndarray:
        row = np.zeros(self._size, dtype=bool)
        row[ids] = True
        return row
