"""The compact next-state table: for every state, the state each of its allowed token classes leads to.

Takes: the CSR arrays of a token table (artifact format version 3, ``docs/artifact-format.md``):
- ``state_row``: int32[states], the mask row of each state (row 0, the dead state's, is empty);
- ``row_class_offsets`` (int64[rows + 1]) and ``row_classes`` (int32): the token classes each row
  allows, ascending, row ``r``'s at ``row_classes[row_class_offsets[r]:row_class_offsets[r + 1]]``;
- ``next_offsets`` (int64[states + 1]) and ``next_states`` (uint16, int32 past 65,535 states): the
  state each class of its row leads state ``s`` to, in the row's class order, at
  ``next_states[next_offsets[s]:next_offsets[s + 1]]`` (never 0: a class that leads to the dead
  state is not allowed);
or a dense ``[states, classes]`` table (format versions 1 and 2, and the pure token walk), turned
into those arrays by ``NextTable.from_dense``.

Hands on: ``NextTable``. ``following(state, cls)`` is the next state (0 when ``cls`` is not allowed)
in constant time: the rank of ``cls`` among its row's classes comes from the row's rank array
(int32[classes], -1 where not allowed), built on first use and kept while all kept rank arrays hold
at most ``RANK_CELLS`` cells (``warm`` builds them all at once within that bound); a row past the
bound searches its class list instead (``np.searchsorted``). Plus the vectorised views the budget
rule and the checks need: a state's classes and next states, the next state of every class of a
state, the classes each row allows, the states that allow a class, and the entries chunk by chunk.

``check_next_arrays`` (in ``moonmaskc.format``) validates the arrays of a file before they get here.
Only numpy is imported here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

__all__ = ["RANK_CELLS", "NextTable", "rows_of_states", "state_dtype"]

RANK_CELLS = 1 << 23
"""int32 cells of rank arrays kept over all rows of one table (32 MiB)."""
CHUNK_ENTRIES = 1 << 22
"""Next-state entries handled together by the vectorised passes over a whole table."""


def state_dtype(num_states: int) -> type[np.unsignedinteger] | type[np.signedinteger]:
    """The smallest dtype that holds every state id: uint16 up to 65,535 states, else int32."""
    return np.uint16 if num_states <= np.iinfo(np.uint16).max else np.int32


def rows_allowed(row_class_offsets: np.ndarray, row_classes: np.ndarray, num_classes: int) -> np.ndarray:
    """bool[rows, classes] of rows given as lists of classes (row ``r`` allows
    ``row_classes[row_class_offsets[r]:row_class_offsets[r + 1]]``; offsets from 0, ascending, and
    classes in range: the caller's to check)."""
    rows = len(row_class_offsets) - 1
    allowed = np.zeros(rows * num_classes, dtype=bool)
    owner = np.repeat(np.arange(rows, dtype=np.int64), np.diff(row_class_offsets))
    allowed[owner * num_classes + row_classes[: len(owner)]] = True  # (one flat index: 3x faster)
    return allowed.reshape(rows, num_classes)


def concatenated_ranges(values: np.ndarray, starts: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The concatenation of ``values[starts[k]:starts[k + 1]]`` for every ``k`` in ``keys`` (the
    ranges of a CSR layout: a state's entries, a row's classes, a class's tokens)."""
    low = starts[keys]
    counts = starts[keys + 1] - low
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=values.dtype)
    offsets = np.cumsum(counts) - counts
    index = np.repeat(low - offsets, counts) + np.arange(total, dtype=np.int64)
    return values[index]


def rows_of_states(allowed_classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bool[states, classes] -> the row of each state (rows numbered by their first state, so the
    dead state 0 has row 0) and the first state of each row."""
    from moonmaskc.token_masks import distinct_rows

    first_state, inverse = distinct_rows(allowed_classes)
    order = np.argsort(first_state, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse].astype(np.int32), first_state[order]


class NextTable:
    """Next states of every state, compact (see the module docstring). The arrays are taken as
    they are: check them first (``moonmaskc.format.check_next_arrays``) when they come from a file."""

    def __init__(
        self,
        state_row: np.ndarray,
        row_class_offsets: np.ndarray,
        row_classes: np.ndarray,
        next_offsets: np.ndarray,
        next_states: np.ndarray,
        num_classes: int,
    ) -> None:
        self.state_row = state_row
        self.row_class_offsets = row_class_offsets
        self.row_classes = row_classes
        self.next_offsets = next_offsets
        self.next_states = next_states
        self.num_classes = int(num_classes)
        self._ranks: list[np.ndarray | None] = [None] * self.num_rows
        self._rank_cells = 0
        # Per state, its row's rank array once a step has used it (or ``warm`` has run), and where
        # its entries start (a list, made on first use): on the per-step path a list lookup is
        # several times cheaper than ``ndarray.item``.
        self._state_ranks: list[np.ndarray | None] = [None] * self.num_states
        self._starts: list[int] | None = None

    @property
    def num_states(self) -> int:
        return len(self.state_row)

    @property
    def num_rows(self) -> int:
        return len(self.row_class_offsets) - 1

    @property
    def nbytes(self) -> int:
        return sum(
            array.nbytes
            for array in (
                self.state_row,
                self.row_class_offsets,
                self.row_classes,
                self.next_offsets,
                self.next_states,
            )
        )

    # construction -------------------------------------------------------------------------------

    @classmethod
    def from_checked_arrays(
        cls, arrays: Mapping[str, np.ndarray], state_row: np.ndarray, num_classes: int
    ) -> NextTable:
        """The table of a file's ``NEXT_ARRAYS`` once ``check_next_arrays`` has passed them, in
        the dtypes the writer uses (no copy then): a file may hold the checked values in any integer
        dtype, and offsets narrower than int64 would overflow in the table's arithmetic."""
        return cls(
            state_row,
            np.asarray(arrays["tokens_row_class_offsets"], dtype=np.int64),
            np.asarray(arrays["tokens_row_classes"], dtype=np.int32),
            np.asarray(arrays["tokens_next_offsets"], dtype=np.int64),
            np.asarray(arrays["tokens_next"]),
            num_classes,
        )

    @classmethod
    def from_dense(
        cls, class_next: np.ndarray, state_row: np.ndarray | None = None, num_rows: int | None = None
    ) -> NextTable:
        """The compact form of ``class_next`` ([states, classes], 0 = not allowed). Without
        ``state_row`` the rows are the distinct allowed-class patterns numbered by their first
        state; with it (a file's rows, ``num_rows`` of them), ``ValueError`` unless every row
        belongs to some state and the states of a row allow the same classes."""
        class_next = np.asarray(class_next)
        states, classes = class_next.shape
        allowed = class_next != 0
        if state_row is None:
            state_row, first_state = rows_of_states(allowed)
        else:
            state_row = np.asarray(state_row, dtype=np.int32)
            rows = int(state_row.max(initial=-1)) + 1 if num_rows is None else num_rows
            _, first_state = np.unique(state_row, return_index=True)
            if len(first_state) != rows:
                raise ValueError("some mask rows belong to no state")
            packed = np.packbits(allowed, axis=1)
            if not np.array_equal(packed, packed[first_state][state_row]):
                raise ValueError("states that share a mask row allow different tokens")
        row_allowed = allowed[first_state]
        row_counts = row_allowed.view(np.int8).sum(axis=1, dtype=np.int64)
        row_class_offsets = np.zeros(len(first_state) + 1, dtype=np.int64)
        np.cumsum(row_counts, out=row_class_offsets[1:])
        row_classes = (np.flatnonzero(row_allowed) % max(classes, 1)).astype(np.int32)
        next_offsets = np.zeros(states + 1, dtype=np.int64)
        np.cumsum(row_counts[state_row], out=next_offsets[1:])  # a state allows its row's classes
        # Row-major, so each state's classes ascending; compress, not a 2-D boolean index (0.5 ms
        # against 0.65 on a 1,388 x 438 table).
        next_states = np.compress(allowed.ravel(), class_next.ravel()).astype(state_dtype(states))
        return cls(state_row, row_class_offsets, row_classes, next_offsets, next_states, classes)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The ``tokens_*`` arrays of format version 3 (``tokens_state_row`` included)."""
        return {
            "tokens_state_row": self.state_row,
            "tokens_row_class_offsets": self.row_class_offsets,
            "tokens_row_classes": self.row_classes,
            "tokens_next_offsets": self.next_offsets,
            "tokens_next": self.next_states,
        }

    # constant-time lookups ----------------------------------------------------------------------

    def following(self, state: int, cls: int) -> int:
        """The state a token of class ``cls`` leads ``state`` to; 0 when it is not allowed there."""
        ranks = self._state_ranks[state]
        if ranks is None:
            return self._following_first(state, cls)
        rank: int = ranks.item(cls)
        if rank < 0:
            return 0
        found: int = self.next_states.item(self._starts[state] + rank)  # type: ignore[index]
        return found

    def _following_first(self, state: int, cls: int) -> int:
        """``following`` for a state whose rank array is not at hand yet: built (or found) and
        kept for the state, or, past the bound, the row's class list searched."""
        if self._starts is None:
            self._starts = self.next_offsets[:-1].tolist()
        row: int = self.state_row.item(state)
        ranks = self._ranks[row]
        if ranks is None:
            ranks = self._rank_row(row)
            if ranks is None:  # past the bound: search the row's class list
                return self._searched(state, row, cls)
        self._state_ranks[state] = ranks  # plain list assignment: safe across threads
        return self.following(state, cls)

    def _searched(self, state: int, row: int, cls: int) -> int:
        low, high = self.row_class_offsets.item(row), self.row_class_offsets.item(row + 1)
        classes = self.row_classes[low:high]
        rank = int(np.searchsorted(classes, cls))
        if rank < high - low and classes.item(rank) == cls:
            found: int = self.next_states.item(self.next_offsets.item(state) + rank)
            return found
        return 0

    def _rank_row(self, row: int) -> np.ndarray | None:
        """The rank array of ``row``, built and kept; ``None`` when keeping it would pass the bound."""
        if self._rank_cells + self.num_classes > RANK_CELLS:
            return None
        low, high = self.row_class_offsets.item(row), self.row_class_offsets.item(row + 1)
        ranks = np.full(self.num_classes, -1, dtype=np.int32)
        ranks[self.row_classes[low:high]] = np.arange(high - low, dtype=np.int32)
        ranks.flags.writeable = False
        self._rank_cells += self.num_classes
        self._ranks[row] = ranks  # plain list assignment: safe across threads
        return ranks

    def warm(self) -> None:
        """Build every row's rank array now (in one pass when they all fit in ``RANK_CELLS``; else
        row by row until the bound) and hand it to every state of the row, so that ``following``
        never builds one later."""
        self._build_ranks()
        if self._starts is None:
            self._starts = self.next_offsets[:-1].tolist()
        ranks = self._ranks
        self._state_ranks = [ranks[row] for row in self.state_row.tolist()]

    def _build_ranks(self) -> None:
        rows, classes = self.num_rows, self.num_classes
        if all(ranks is not None for ranks in self._ranks):
            return
        if rows * classes <= RANK_CELLS:
            matrix = np.full((rows, classes), -1, dtype=np.int32)
            counts = np.diff(self.row_class_offsets)
            row_of = np.repeat(np.arange(rows), counts)
            matrix[row_of, self.row_classes] = np.arange(len(self.row_classes)) - np.repeat(
                self.row_class_offsets[:-1], counts
            )
            matrix.flags.writeable = False
            self._ranks = list(matrix)
            self._rank_cells = rows * classes
            return
        for row in range(rows):
            if self._ranks[row] is None and self._rank_row(row) is None:
                break

    # per state ----------------------------------------------------------------------------------

    def row_span(self, row: int) -> np.ndarray:
        """The classes ``row`` allows, ascending (a view)."""
        return self.row_classes[self.row_class_offsets.item(row) : self.row_class_offsets.item(row + 1)]

    def entries(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """The classes ``state`` allows (ascending) and the state each leads to (views)."""
        low, high = self.next_offsets.item(state), self.next_offsets.item(state + 1)
        return self.row_span(self.state_row.item(state)), self.next_states[low:high]

    def dense_row(self, state: int) -> np.ndarray:
        """int64[classes]: the next state of every class from ``state`` (0 where not allowed)."""
        classes, targets = self.entries(state)
        out = np.zeros(self.num_classes, dtype=np.int64)
        out[classes] = targets
        return out

    # whole table --------------------------------------------------------------------------------

    def row_allowed(self) -> np.ndarray:
        """bool[rows, classes]: the classes each row allows."""
        return rows_allowed(self.row_class_offsets, self.row_classes, self.num_classes)

    def allows_class(self, cls: int) -> np.ndarray:
        """bool[states]: the states that allow class ``cls``."""
        rows = np.zeros(self.num_rows, dtype=bool)
        at = np.flatnonzero(self.row_classes == cls)
        rows[np.searchsorted(self.row_class_offsets, at, side="right") - 1] = True
        return rows[self.state_row]

    def chunks(self, max_entries: int = CHUNK_ENTRIES) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """``(low, high, classes, targets)`` for runs of states ``low:high`` with about
        ``max_entries`` entries each: the class and the next state of each of their entries, state
        after state."""
        offsets = self.next_offsets
        states = self.num_states
        low = 0
        while low < states:
            high = int(np.searchsorted(offsets, offsets[low] + max_entries, side="right")) - 1
            high = min(max(high, low + 1), states)
            first, last = int(offsets[low]), int(offsets[high])
            counts = np.diff(offsets[low : high + 1])
            shift = np.repeat(self.row_class_offsets[self.state_row[low:high]] - offsets[low:high], counts)
            classes = self.row_classes[np.arange(first, last, dtype=np.int64) + shift]
            yield low, high, classes, self.next_states[first:last]
            low = high

    def dense(self) -> np.ndarray:
        """The dense [states, classes] table (0 = not allowed), for tests and small tables."""
        out = np.zeros((self.num_states, self.num_classes), dtype=self.next_states.dtype)
        for low, high, classes, targets in self.chunks():
            counts = np.diff(self.next_offsets[low : high + 1])
            out[np.repeat(np.arange(low, high), counts), classes] = targets
        return out

    def same_as(self, other: NextTable) -> bool:
        """Whether both tables hold the same arrays (dtypes included) and class count."""
        mine, theirs = self.to_arrays(), other.to_arrays()
        return self.num_classes == other.num_classes and all(
            mine[name].dtype == theirs[name].dtype and np.array_equal(mine[name], theirs[name])
            for name in mine
        )
