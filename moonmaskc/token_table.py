"""The token table: for every DFA state, the tokens that may come next and the state each leads to.

Takes: a ``DFA`` (dead state 0, every other state co-accessible) and a ``Vocabulary``.
Hands on: a ``TokenTable`` that stores
- ``mask_rows``: uint32[rows, words], the distinct masks, each once; token ``i`` is bit ``i % 32``
  of word ``i // 32`` (little-endian bit order, the layout of xgrammar, llguidance and
  outlines-core bitmasks); bits past ``vocab_size`` are 0;
- ``state_row``: int32[states], the mask row of each state (state 0, the dead state, has the
  empty row 0);
- ``token_class``: [vocab_size], the class of each token: tokens of one class lead every state to
  the same place (class 0: tokens never allowed, such as special and empty tokens);
- ``class_next``: [states, classes], the state a token of class ``c`` leads to from state ``s``,
  0 when it is not allowed there. eos leads an accepting state to itself: it ends the text.

So ``next state = class_next[s, token_class[t]]`` in constant time, and the table is
``states x classes`` (a few hundred classes on real vocabularies) instead of one entry per allowed
token. The classes come from ``moonmaskc.token_classes`` (state maps composed over the trie).

A token is allowed in state ``s`` when all its bytes keep the DFA alive; eos only when ``s``
accepts; special and empty tokens never.

Only numpy is imported here. The runtime serves tables from files through
``moonmaskc.runtime_table``; ``TokenTable.from_arrays`` reads them whole (``inspect``, relinking).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from moonmaskc.errors import ArtifactError
from moonmaskc.format import (
    MASK_ARRAYS,
    V1_MASK_ARRAY,
    VOCAB_ARRAYS,
    MaskRows,
    check_mask_arrays,
    encode_mask_rows,
)
from moonmaskc.runtime_budget import fewest_tokens_to_eos, verify_eos_steps
from moonmaskc.token_classes import DEFAULT_MAX_TABLE_CELLS, token_classes
from moonmaskc.token_masks import distinct_rows, packed_masks

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA
    from moonmaskc.trie import ByteTrie
    from moonmaskc.vocabulary import Vocabulary

ProgressCallback = Callable[[int, int], None]

TABLE_ARRAY_NAMES = ("tokens_state_row", "tokens_token_class", "tokens_class_next")
VOCAB_ARRAY_NAMES = VOCAB_ARRAYS  # the names live in moonmaskc.format
ALLOWED_ROWS_CACHED = 256


@dataclass(eq=False)
class TokenTable:
    """Masks and next states of every state for one vocabulary (see the module docstring)."""

    mask_rows: np.ndarray
    state_row: np.ndarray
    token_class: np.ndarray
    class_next: np.ndarray
    vocab_arrays: dict[str, np.ndarray]
    _allowed_cache: dict[int, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._allowed_cache = {}
        self._eos_steps: np.ndarray | None = None

    @property
    def num_states(self) -> int:
        return len(self.state_row)

    @property
    def num_rows(self) -> int:
        return len(self.mask_rows)

    @property
    def num_classes(self) -> int:
        return int(self.class_next.shape[1])

    @property
    def vocab_size(self) -> int:
        return len(self.vocab_arrays["vocab_token_lengths"])

    @property
    def eos_id(self) -> int:
        return int(self.vocab_arrays["vocab_eos_id"])

    @property
    def fingerprint(self) -> str:
        return str(self.vocab_arrays["vocab_fingerprint"])

    def allowed(self, state: int) -> np.ndarray:
        """Sorted int32 ids of the tokens allowed in ``state`` (read-only; unpacked from the mask
        row on first use and kept, up to ``ALLOWED_ROWS_CACHED`` rows at a time)."""
        row = int(self.state_row[state])
        ids = self._allowed_cache.get(row)
        if ids is None:
            bits = np.unpackbits(self.mask_rows[row].view(np.uint8), bitorder="little")
            ids = np.flatnonzero(bits).astype(np.int32)
            ids.flags.writeable = False
            if len(self._allowed_cache) >= ALLOWED_ROWS_CACHED:
                self._allowed_cache.clear()  # plain dict operations only: safe across threads
            self._allowed_cache[row] = ids
        return ids

    @property
    def eos_steps(self) -> np.ndarray:
        """int32[states]: the fewest tokens, eos included, from each state to a valid end (-1 where
        none, 0 for the dead state; ``moonmaskc.runtime_budget``), computed on first use."""
        found = self._eos_steps
        if found is None:
            eos_class = int(self.token_class[self.eos_id])
            accepting = self.class_next[:, eos_class] != 0
            found = fewest_tokens_to_eos(self.class_next, self.token_class, accepting, self.eos_id)
            self._eos_steps = found
        return found

    @eos_steps.setter
    def eos_steps(self, steps: np.ndarray) -> None:
        self._eos_steps = steps

    def row_classes(self) -> np.ndarray:
        """bool[rows, classes]: the token classes each mask row allows (read from the first state
        of each row), what ``packed_masks`` packs into ``mask_rows``."""
        _, first_state = np.unique(self.state_row, return_index=True)
        return self.class_next[first_state] != 0

    def next_of(self, state: int) -> np.ndarray:
        """The state each token of ``allowed(state)`` leads to, in the same order."""
        return self.class_next[state][self.token_class[self.allowed(state)]]

    def vocabulary(self) -> Vocabulary:
        from moonmaskc.vocabulary import Vocabulary

        return Vocabulary.from_arrays(self.vocab_arrays)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Numeric and unicode arrays only (``tokens_*``, ``vocab_*``): safe for ``allow_pickle=False``.
        The mask rows are delta-coded (``moonmaskc.format.encode_mask_rows``)."""
        return {
            **encode_mask_rows(self.mask_rows),
            "tokens_eos_steps": self.eos_steps,
            "tokens_state_row": self.state_row,
            "tokens_token_class": self.token_class,
            "tokens_class_next": self.class_next,
            **self.vocab_arrays,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> TokenTable:
        """Read a table back, checking that its arrays agree; ``ValueError`` when they do not."""
        missing = [name for name in (*TABLE_ARRAY_NAMES, *VOCAB_ARRAY_NAMES) if name not in arrays]
        if missing:
            raise ValueError(f"missing arrays {', '.join(missing)}")
        if not _shapes_agree(arrays):
            raise ValueError("token table arrays have inconsistent shapes or types")
        if V1_MASK_ARRAY in arrays:  # format version 1: the rows as they are
            mask_rows = np.ascontiguousarray(arrays[V1_MASK_ARRAY], dtype=np.uint32)
        else:
            words = (len(arrays["vocab_token_lengths"]) + 31) // 32
            rows = len(arrays["tokens_mask_base"])
            try:
                check_mask_arrays(arrays, rows, words, "the artifact")
            except ArtifactError as error:
                raise ValueError(str(error)) from None
            mask_rows = MaskRows(arrays, words).full()
        table = cls(
            mask_rows=mask_rows,
            state_row=np.asarray(arrays["tokens_state_row"], dtype=np.int32),
            token_class=np.asarray(arrays["tokens_token_class"]),
            class_next=np.ascontiguousarray(arrays["tokens_class_next"]),
            vocab_arrays={name: arrays[name] for name in VOCAB_ARRAY_NAMES},
        )
        table.check()
        if "tokens_eos_steps" in arrays:
            steps = np.asarray(arrays["tokens_eos_steps"])
            eos_class = int(table.token_class[table.eos_id])
            accepting = table.class_next[:, eos_class] != 0
            verify_eos_steps(steps, table.class_next, table.token_class, accepting, table.eos_id)
            table._eos_steps = steps.astype(np.int32)
        return table

    def check(self) -> None:
        """Raise ``ValueError`` unless masks, token classes and next states agree with each other."""
        rows, words = self.mask_rows.shape
        states, classes = self.class_next.shape
        if words != (self.vocab_size + 31) // 32 or rows < 1:
            raise ValueError("mask rows do not match the vocabulary size")
        if len(self.token_class) != self.vocab_size or states != self.num_states or classes < 1:
            raise ValueError("token classes or next states do not match the vocabulary or the states")
        if self.token_class.min(initial=0) < 0 or self.token_class.max(initial=0) >= classes:
            raise ValueError("token classes outside the class table")
        if self.class_next.min(initial=0) < 0 or self.class_next.max(initial=0) >= states:
            raise ValueError("next states point outside the DFA")
        if self.class_next[0].any() or self.class_next[:, 0].any():
            raise ValueError("the dead state or the never-allowed class 0 leads somewhere")
        if self.state_row.min(initial=0) < 0 or self.state_row.max(initial=0) >= rows:
            raise ValueError("state rows point outside the mask rows")
        row_classes = self.row_classes()
        if len(row_classes) != rows:
            raise ValueError("some mask rows belong to no state")
        allowed_classes = np.packbits(self.class_next != 0, axis=1)
        if not np.array_equal(allowed_classes, np.packbits(row_classes, axis=1)[self.state_row]):
            raise ValueError("states that share a mask row allow different tokens")
        expected = packed_masks(row_classes, self.token_class)
        if not np.array_equal(expected, self.mask_rows):
            raise ValueError("mask rows disagree with the next-state table")


def _shapes_agree(arrays: Mapping[str, np.ndarray]) -> bool:
    if V1_MASK_ARRAY not in arrays and any(name not in arrays for name in MASK_ARRAYS):
        return False
    return (
        arrays["tokens_state_row"].ndim == 1
        and arrays["tokens_token_class"].ndim == 1
        and arrays["tokens_class_next"].ndim == 2
        and all(
            np.issubdtype(arrays[name].dtype, np.integer)
            for name in ("tokens_state_row", "tokens_token_class", "tokens_class_next")
        )
        and arrays["vocab_token_lengths"].ndim == 1
        and len(arrays["tokens_state_row"]) > 0
    )


def build_token_table(
    dfa: DFA,
    vocabulary: Vocabulary,
    progress: ProgressCallback | None = None,
    trie: ByteTrie | None = None,
    max_cells: int = DEFAULT_MAX_TABLE_CELLS,
) -> TokenTable:
    """The token table of ``dfa`` for ``vocabulary``; ``progress(done_states, total_states)``.

    ``max_cells`` bounds ``states x distinct token behaviours`` (``LimitError`` beyond it)."""
    from moonmaskc.trie import trie_for

    if trie is None:
        trie = trie_for(vocabulary)
    num_states = dfa.num_states
    report = progress if progress is not None else (lambda done, total: None)
    report(0, num_states)
    classes = token_classes(
        dfa,
        trie,
        vocabulary.size,
        vocabulary.eos_id,
        on_level=lambda fraction: report(int(fraction * (num_states - 1)), num_states),
        max_cells=max_cells,
    )
    state_row, representatives = _rows_of_states(classes.class_next != 0)
    mask_rows = packed_masks(classes.class_next[representatives] != 0, classes.token_class)
    report(num_states, num_states)
    return TokenTable(
        mask_rows=mask_rows,
        state_row=state_row,
        token_class=classes.token_class,
        class_next=classes.class_next,
        vocab_arrays=_vocabulary_arrays(vocabulary),
    )


_VOCABULARY_ARRAYS: weakref.WeakKeyDictionary[Vocabulary, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()


def _vocabulary_arrays(vocabulary: Vocabulary) -> dict[str, np.ndarray]:
    """``vocabulary.to_arrays()``, computed once per vocabulary object and shared read-only."""
    arrays = _VOCABULARY_ARRAYS.get(vocabulary)
    if arrays is None:
        arrays = vocabulary.to_arrays()
        for array in arrays.values():
            array.flags.writeable = False
        _VOCABULARY_ARRAYS[vocabulary] = arrays
    return dict(arrays)


def _rows_of_states(allowed_classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row of each state (rows numbered by their first state, so the dead state 0 has row 0)
    and the first state of each row."""
    first_state, inverse = distinct_rows(allowed_classes)  # class 0 gives it a column
    order = np.argsort(first_state, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse].astype(np.int32), first_state[order]
