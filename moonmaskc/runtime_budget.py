"""Token budgets: the fewest tokens from each state to a valid end, and the masks that keep within a budget.

Takes: a token table's next states (a ``moonmaskc.next_table.NextTable``, or a dense
``[states, classes]`` array, 0 = not allowed, which is converted to one), ``token_class``
(``[vocab]``), the DFA's ``accepting`` flags and the eos id. Hands on:

- ``fewest_tokens_to_eos``: int32[states], for every state the fewest tokens, eos included, that
  end the text validly: 1 in an accepting state (eos), else 1 + the least value among the states
  one non-eos token leads to; -1 where no token sequence ends validly (the vocabulary cannot spell
  any ending), 0 for the dead state 0. A reverse breadth-first search over the distinct edges of
  the class graph: in C when the native core is built (``token_walk.fewest_steps``), else
  vectorised with numpy (the table's entries a few million at a time); the same values.
- ``BudgetRule``: the budget rule over one table. With ``tokens_left`` tokens still allowed
  (the one being chosen and eos included), a non-eos token is allowed when its next state ``n``
  can still end in time, ``fewest[n] + 1 <= tokens_left``; eos is allowed in an accepting state
  (``tokens_left >= 1``). When ``tokens_left`` is at least ``loose_budget(state)`` the rule removes
  nothing from the unbudgeted mask, so callers keep their fast path; below it a packed row is
  built from the state's next states and cached per ``(state, budget)`` (budgets above the state's largest
  finite need share one entry).
- ``verify_eos_steps``: the exact check of stored values (the shortest-path equations, state by state).

Invariant that makes a budget a guarantee: if ``fewest[state] <= tokens_left`` then some token is
allowed (one on a shortest ending), and after any allowed token the next state again fits in
``tokens_left - 1``; so decoding that only takes allowed tokens ends with eos within the budget.

Only numpy and the standard library are imported (and ``moonmaskc.errors``, ``moonmaskc.next_table``,
``moonmaskc.automata.native``, which finds the native core with the standard library alone).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np

from moonmaskc.automata.native import native
from moonmaskc.errors import RuntimeInputError
from moonmaskc.next_table import NextTable, concatenated_ranges

__all__ = [
    "IMPOSSIBLE",
    "BudgetRow",
    "BudgetRule",
    "as_next_table",
    "fewest_tokens_to_eos",
    "usable_classes",
    "verify_eos_steps",
]

IMPOSSIBLE = -1
"""The value of ``fewest_tokens_to_eos`` for a live state from which no token sequence ends validly."""
NEVER = sys.maxsize - 1
"""``loose_budget`` of a state where the budget always matters (or that cannot end at all)."""
_UNKNOWN = sys.maxsize
_ROWS_CACHED = 1024


def usable_classes(num_classes: int, token_class: np.ndarray, eos_id: int) -> np.ndarray:
    """bool[classes]: the classes that hold at least one token and that can move the text on.

    Class 0 (never allowed) and eos's class are left out: eos's class leads an accepting state to
    itself and is not allowed anywhere else, so its edges never shorten an ending."""
    usable = np.zeros(num_classes, dtype=bool)
    usable[np.asarray(token_class, dtype=np.int64)] = True
    usable[0] = False
    usable[int(token_class[eos_id])] = False
    return usable


def as_next_table(table: NextTable | np.ndarray) -> NextTable:
    """``table`` as a ``NextTable``: a dense ``[states, classes]`` array (0 = not allowed) is
    converted; ``ValueError`` when it is not a 2-D integer array with next states in range."""
    if isinstance(table, NextTable):
        return table
    dense = np.asarray(table)
    if dense.ndim != 2 or not np.issubdtype(dense.dtype, np.integer):
        raise ValueError("class_next must be a 2-D integer array")
    if dense.size and (dense.min() < 0 or dense.max() >= dense.shape[0]):
        raise ValueError("next states point outside the DFA")
    return NextTable.from_dense(dense)


def _check_inputs(table: NextTable, token_class: np.ndarray, accepting: np.ndarray, eos_id: int) -> None:
    states, classes = table.num_states, table.num_classes
    if accepting.shape != (states,):
        raise ValueError(f"accepting has shape {accepting.shape}; {states} states are needed")
    if token_class.ndim != 1 or not np.issubdtype(token_class.dtype, np.integer) or len(token_class) == 0:
        raise ValueError("token_class must be a non-empty 1-D integer array")
    if token_class.min() < 0 or token_class.max() >= classes:
        raise ValueError("token classes outside the class table")
    if not 0 <= eos_id < len(token_class):
        raise ValueError(f"eos id {eos_id} is outside the vocabulary")


def _distinct_edges(table: NextTable, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sources, targets)`` of every distinct edge ``s -> t`` of the table over the ``usable``
    classes (self loops dropped), a few million entries at a time."""
    states = table.num_states
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for low, high, classes, following in table.chunks():
        counts = np.diff(table.next_offsets[low : high + 1])
        origin = np.repeat(np.arange(low, high, dtype=np.int64), counts)
        keep = usable[classes] & (following != origin)
        # Sorted by state already, so a stable sort only sorts within each state (timed 7x faster
        # than np.unique on 4M entries); then equal neighbours are dropped.
        keys = np.sort(origin[keep] * states + following[keep], kind="stable")
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys
        sources.append(keys // states)
        targets.append(keys % states)
    if not sources:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(sources), np.concatenate(targets)


def fewest_tokens_to_eos(
    table: NextTable | np.ndarray, token_class: np.ndarray, accepting: np.ndarray, eos_id: int
) -> np.ndarray:
    """int32[states]: the fewest tokens, eos included, from each state to a valid end (see the
    module docstring); -1 where impossible, 0 for the dead state 0. ``ValueError`` on
    inconsistent inputs."""
    table = as_next_table(table)
    token_class = np.asarray(token_class)
    accepting = np.asarray(accepting, dtype=bool)
    _check_inputs(table, token_class, accepting, eos_id)
    usable = usable_classes(table.num_classes, token_class, eos_id)
    module = native("token_walk")
    if module is not None:
        return _native_steps(module, table, usable, accepting)
    return _numpy_steps(table, usable, accepting)


def _native_steps(
    module: ModuleType, table: NextTable, usable: np.ndarray, accepting: np.ndarray
) -> np.ndarray:
    """``fewest_tokens_to_eos`` in C (``token_walk.fewest_steps``, which checks every index)."""
    targets = table.next_states
    if targets.dtype not in (np.uint16, np.int32):
        targets = targets.astype(np.int32)
    status, steps = module.fewest_steps(
        np.ascontiguousarray(table.next_offsets, dtype=np.int64),
        np.ascontiguousarray(targets),
        np.ascontiguousarray(table.state_row, dtype=np.int32),
        np.ascontiguousarray(table.row_class_offsets, dtype=np.int64),
        np.ascontiguousarray(table.row_classes, dtype=np.int32),
        usable.view(np.uint8),
        np.ascontiguousarray(accepting).view(np.uint8),
    )
    if status != module.OK:
        raise ValueError("the next-state table is malformed (rejected by the native core)")
    return np.asarray(steps)


def _numpy_steps(table: NextTable, usable: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """``fewest_tokens_to_eos`` with numpy: the distinct edges a few million at a time, then a
    breadth-first search a level at a time."""
    states = table.num_states
    sources, targets = _distinct_edges(table, usable)
    # Reverse adjacency (CSR): the predecessors of state t are preds[starts[t]:starts[t + 1]].
    preds = sources[np.argsort(targets, kind="stable")]
    starts = np.zeros(states + 1, dtype=np.int64)
    np.cumsum(np.bincount(targets, minlength=states), out=starts[1:])
    steps = np.full(states, IMPOSSIBLE, dtype=np.int32)
    frontier = np.flatnonzero(accepting)
    frontier = frontier[frontier != 0]
    steps[frontier] = 1
    level = 1
    while frontier.size:
        found = concatenated_ranges(preds, starts, frontier)
        found = found[steps[found] == IMPOSSIBLE]
        if not found.size:
            break
        found = np.unique(found)
        level += 1
        steps[found] = level
        frontier = found
    steps[0] = 0
    return steps


def verify_eos_steps(
    steps: np.ndarray,
    table: NextTable | np.ndarray,
    token_class: np.ndarray,
    accepting: np.ndarray,
    eos_id: int,
) -> None:
    """``ValueError`` unless ``steps`` is exactly ``fewest_tokens_to_eos`` of the table.

    Checks the shortest-path equations state by state (one gather over the table, no search):
    with positive edge weights their only solution is the true one, given that every state marked
    impossible has only impossible successors."""
    steps = np.asarray(steps)
    table = as_next_table(table)
    accepting = np.asarray(accepting, dtype=bool)
    token_class = np.asarray(token_class)
    _check_inputs(table, token_class, accepting, eos_id)
    states = table.num_states
    if steps.shape != (states,) or not np.issubdtype(steps.dtype, np.integer):
        raise ValueError(f"eos steps must be an integer array of {states} entries")
    if steps[0] != 0 or (steps[1:] < IMPOSSIBLE).any() or (steps[1:] == 0).any():
        raise ValueError("eos steps: the dead state must be 0 and every other state -1 or positive")
    usable = usable_classes(table.num_classes, token_class, eos_id)
    far = np.iinfo(np.int64).max // 2
    lookup = np.where(steps > 0, steps.astype(np.int64), far)
    lookup[0] = far
    for low, high, classes, following in table.chunks():
        values = np.where(usable[classes], lookup[following], far)
        starts = table.next_offsets[low:high] - table.next_offsets[low]
        some = starts < table.next_offsets[low + 1 : high + 1] - table.next_offsets[low]
        best = np.full(high - low, far, dtype=np.int64)
        if values.size:
            best[some] = np.minimum.reduceat(values, starts[some])
        expected = np.where(best < far, best + 1, IMPOSSIBLE)
        expected = np.where(accepting[low:high], 1, expected)
        if low == 0:
            expected[0] = 0
        wrong = np.flatnonzero(expected != steps[low:high])
        if wrong.size:
            state = int(wrong[0]) + low
            raise ValueError(
                f"eos steps disagree with the token table at state {state}: "
                f"stored {int(steps[state])}, computed {int(expected[wrong[0]])}"
            )


class BudgetRow:
    """A budgeted mask: the packed uint32 row (read-only) and, on first use, its sorted int32 ids."""

    __slots__ = ("_ids", "bits", "packed")

    def __init__(self, bits: np.ndarray, packed: np.ndarray) -> None:
        self.bits = bits
        self.packed = packed
        self._ids: np.ndarray | None = None

    @property
    def ids(self) -> np.ndarray:
        ids = self._ids
        if ids is None:
            ids = np.flatnonzero(self.bits).astype(np.int32)
            ids.flags.writeable = False
            self._ids = ids
        return ids


class BudgetRule:
    """The budget rule over one token table (see the module docstring).

    ``steps``: stored ``fewest_tokens_to_eos`` values (an artifact's ``eos_steps``), checked for
    shape and range only; computed here when ``None``."""

    def __init__(
        self,
        table: NextTable | np.ndarray,
        token_class: np.ndarray,
        accepting: np.ndarray,
        eos_id: int,
        steps: np.ndarray | None = None,
    ) -> None:
        self.table = table = as_next_table(table)
        self.token_class = np.asarray(token_class)
        self.accepting = np.asarray(accepting, dtype=bool)
        self.eos_id = int(eos_id)
        self.vocab_size = len(self.token_class)
        self.words = (self.vocab_size + 31) // 32
        states = table.num_states
        if steps is None:
            steps = fewest_tokens_to_eos(table, self.token_class, self.accepting, self.eos_id)
        else:
            steps = np.asarray(steps)
            if (
                steps.shape != (states,)
                or not np.issubdtype(steps.dtype, np.integer)
                or (states and (steps.min() < IMPOSSIBLE or steps[0] != 0))
            ):
                raise ValueError(f"eos steps must be {states} integers, 0 for the dead state, -1 or more")
            steps = steps.astype(np.int32)
        steps.flags.writeable = False
        self.steps = steps
        self._steps_list: list[int] = steps.tolist()
        # need[s] = tokens needed after moving to s, the move included: fewest + 1; 0 for "not
        # allowed" (next state 0); a huge value for states that cannot end.
        need = np.where(steps > 0, steps.astype(np.int64) + 1, NEVER)
        need[0] = 0
        self._need = need
        # Classes that hold no token but eos: eos is decided on its own (allowed where accepting).
        members = np.bincount(self.token_class, minlength=table.num_classes)
        members[int(self.token_class[self.eos_id])] -= 1
        self._unusable = np.flatnonzero(members == 0)
        self.loose: list[int] = [_UNKNOWN] * states
        self._cap: list[int] = [0] * states
        self._rows: dict[tuple[int, int], BudgetRow] = {}

    def fewest(self, state: int) -> int:
        """Fewest tokens, eos included, from ``state`` to a valid end (-1: impossible, 0: dead state)."""
        return self._steps_list[state]

    def _needs(self, state: int) -> np.ndarray:
        """int64[classes]: tokens needed after each class in ``state`` (0: not allowed)."""
        classes, following = self.table.entries(state)
        needs = np.zeros(self.table.num_classes, dtype=np.int64)
        needs[classes] = self._need[following]
        needs[self._unusable] = 0
        return needs

    def loose_budget(self, state: int) -> int:
        """The least budget from which the rule removes nothing from ``state``'s mask: the largest
        need of an allowed token (1 for eos); ``NEVER`` when some allowed token leads where the
        text cannot end, or ``state`` itself cannot end."""
        value = self.loose[state]
        if value == _UNKNOWN:
            needs = self._needs(state)
            finite = needs[needs < NEVER]
            cap = int(finite.max(initial=0))
            if self.accepting[state] and state:
                cap = max(cap, 1)
            self._cap[state] = cap
            value = NEVER if self._steps_list[state] <= 0 or (needs == NEVER).any() else cap
            self.loose[state] = value
        return value

    def check(self, state: int, tokens_left: Any) -> int:
        """``tokens_left`` as an int; ``RuntimeInputError`` unless it is a positive int and
        ``state`` can end with eos within it."""
        if isinstance(tokens_left, bool | np.bool_) or not isinstance(tokens_left, int | np.integer):
            raise RuntimeInputError(f"tokens_left must be an int, not {type(tokens_left).__name__}")
        tokens_left = int(tokens_left)
        if tokens_left <= 0:
            raise RuntimeInputError(
                f"tokens_left is {tokens_left}: the budget is spent (at least 1 token, eos, must be left)"
            )
        fewest = self._steps_list[state]
        if fewest == 0:
            raise RuntimeInputError(f"state {state} is the dead state: it cannot end with eos")
        if fewest < 0:
            raise RuntimeInputError(
                f"state {state} cannot end with eos at all: no token sequence of this vocabulary completes it"
            )
        if fewest > tokens_left:
            raise RuntimeInputError(
                f"state {state} needs at least {fewest} tokens (eos included) to end validly, "
                f"but tokens_left is {tokens_left}"
            )
        return tokens_left

    def row(self, state: int, tokens_left: Any) -> BudgetRow | None:
        """The budgeted mask of ``state``, or ``None`` when the budget is loose there (the
        unbudgeted mask is the answer). Validates ``tokens_left`` (see ``check``)."""
        tokens_left = self.check(state, tokens_left)
        if tokens_left >= self.loose_budget(state):
            return None
        budget = min(tokens_left, self._cap[state])
        key = (state, budget)
        cached = self._rows.get(key)
        if cached is None:
            needs = self._needs(state)
            classes = (needs > 0) & (needs <= budget)
            bits = np.zeros(self.words * 32, dtype=bool)
            bits[: self.vocab_size] = classes[self.token_class]
            bits[self.eos_id] = bool(self.accepting[state])
            packed = np.packbits(bits, bitorder="little").view("<u4").astype(np.uint32, copy=False)
            packed.flags.writeable = False
            bits = bits[: self.vocab_size]
            bits.flags.writeable = False
            cached = BudgetRow(bits, packed)
            if len(self._rows) >= _ROWS_CACHED:
                self._rows.clear()
            self._rows[key] = cached
        return cached

    def tightest(self, state: int) -> np.ndarray:
        """Sorted int32 ids allowed with the tightest budget, ``fewest(state)``: eos alone in an
        accepting state, else the tokens on a shortest ending. Empty when ``state`` cannot end."""
        fewest = self._steps_list[state]
        if fewest <= 0:
            return np.zeros(0, dtype=np.int32)
        row = self.row(state, fewest)
        if row is None:
            allowed = np.zeros(self.table.num_classes, dtype=bool)
            allowed[self.table.entries(state)[0]] = True
            bits = allowed[self.token_class]
            bits[self.eos_id] = bool(self.accepting[state])
            return np.flatnonzero(bits).astype(np.int32)
        return row.ids
