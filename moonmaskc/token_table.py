"""The token table: for every DFA state, the tokens that may come next and the state each leads to.

Takes: a ``DFA`` (dead state 0, every other state co-accessible) and a ``Vocabulary``.
Hands on: a ``TokenTable`` that stores
- ``mask_rows``: uint32[rows, words], the distinct masks, each once; token ``i`` is bit ``i % 32``
  of word ``i // 32`` (little-endian bit order, the layout of xgrammar, llguidance and
  outlines-core bitmasks); bits past ``vocab_size`` are 0;
- ``token_class``: [vocab_size], the class of each token: tokens of one class lead every state to
  the same place (class 0: tokens never allowed, such as special and empty tokens);
- ``next_table``: a ``moonmaskc.next_table.NextTable``: ``state_row`` (int32[states], the mask
  row of each state; state 0, the dead state, has the empty row 0), the classes each mask row
  allows (ascending; a mask row is exactly one set of allowed classes) and, per state, the state
  each of its row's classes leads to. eos leads an accepting state to itself: it ends the text.

So ``next state = next_table.following(s, token_class[t])`` in constant time, and the table holds
one entry per allowed (state, class) pair (a few hundred classes on real vocabularies) instead of
one per allowed token, or a dense ``states x classes`` grid mostly of zeros. The classes come from
``moonmaskc.token_classes`` (state maps composed over the trie).

A token is allowed in state ``s`` when all its bytes keep the DFA alive; eos only when ``s``
accepts; special and empty tokens never.

Only numpy is imported here. The runtime serves tables from files through
``moonmaskc.runtime_table``; ``TokenTable.from_arrays`` reads them whole (``inspect``, relinking),
any format version (the dense next states of versions 1 and 2 are converted).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from moonmaskc.errors import ArtifactError
from moonmaskc.format import (
    DENSE_NEXT_ARRAY,
    MASK_ARRAYS,
    NEXT_ARRAYS,
    REGION_COUNTS_ARRAY,
    V1_MASK_ARRAY,
    VOCAB_ARRAYS,
    MaskRows,
    check_mask_arrays,
    check_next_arrays,
    check_region_counts,
    encode_mask_rows,
)
from moonmaskc.next_table import NextTable, concatenated_ranges
from moonmaskc.runtime_budget import fewest_tokens_to_eos, verify_eos_steps
from moonmaskc.token_classes import DEFAULT_MAX_TABLE_CELLS, token_classes
from moonmaskc.token_masks import packed_masks, packed_row_masks

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA
    from moonmaskc.trie import ByteTrie
    from moonmaskc.vocabulary import Vocabulary

ProgressCallback = Callable[[int, int], None]

TABLE_ARRAY_NAMES = ("tokens_state_row", "tokens_token_class")
VOCAB_ARRAY_NAMES = VOCAB_ARRAYS  # the names live in moonmaskc.format
ALLOWED_ROWS_CACHED = 256


@dataclass(eq=False)
class TokenTable:
    """Masks and next states of every state for one vocabulary (see the module docstring)."""

    mask_rows: np.ndarray
    token_class: np.ndarray
    next_table: NextTable
    vocab_arrays: dict[str, np.ndarray]
    # Counted regions (``moonmaskc.counted_tokens``): int16[roles, vocab], the characters each
    # token starts from each role of a region; None for a DFA without regions.
    region_counts: np.ndarray | None = None
    # Nest regions (``moonmaskc.nest_tokens.dynamic_tokens_of``): per state, the tokens whose walk
    # reaches a pop (offsets int32[states + 1], ids int32[n]); None for a DFA without them.
    nest_dynamic: tuple[np.ndarray, np.ndarray] | None = None
    _allowed_cache: dict[int, np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._allowed_cache = {}
        self._eos_steps: np.ndarray | None = None

    @property
    def state_row(self) -> np.ndarray:
        """int32[states]: the mask row of each state."""
        return self.next_table.state_row

    @property
    def num_states(self) -> int:
        return len(self.state_row)

    @property
    def num_rows(self) -> int:
        return len(self.mask_rows)

    @property
    def num_classes(self) -> int:
        return self.next_table.num_classes

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
            found = fewest_tokens_to_eos(self.next_table, self.token_class, self.accepting(), self.eos_id)
            self._eos_steps = found
        return found

    @eos_steps.setter
    def eos_steps(self, steps: np.ndarray) -> None:
        self._eos_steps = steps

    def accepting(self) -> np.ndarray:
        """bool[states]: the states where eos is allowed (where the text may end)."""
        return self.next_table.allows_class(int(self.token_class[self.eos_id]))

    def row_classes(self) -> np.ndarray:
        """bool[rows, classes]: the token classes each mask row allows, what ``packed_masks``
        packs into ``mask_rows``."""
        return self.next_table.row_allowed()

    def following(self, state: int, token: int) -> int:
        """The state ``token`` leads ``state`` to; 0 when it is not allowed there."""
        return self.next_table.following(state, int(self.token_class[token]))

    def next_of(self, state: int) -> np.ndarray:
        """The state each token of ``allowed(state)`` leads to, in the same order."""
        return self.next_table.dense_row(state)[self.token_class[self.allowed(state)]]

    def vocabulary(self) -> Vocabulary:
        from moonmaskc.vocabulary import Vocabulary

        return Vocabulary.from_arrays(self.vocab_arrays)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Numeric and unicode arrays only (``tokens_*``, ``vocab_*``): safe for ``allow_pickle=False``.
        The mask rows are delta-coded (``moonmaskc.format.encode_mask_rows``)."""
        arrays = {
            **encode_mask_rows(self.mask_rows),
            "tokens_eos_steps": self.eos_steps,
            "tokens_token_class": self.token_class,
            **self.next_table.to_arrays(),
            **self.vocab_arrays,
        }
        if self.region_counts is not None:
            arrays[REGION_COUNTS_ARRAY] = self.region_counts
        if self.nest_dynamic is not None:
            from moonmaskc.nest_format import dynamic_arrays

            arrays.update(dynamic_arrays(self.nest_dynamic))
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> TokenTable:
        """Read a table back (format version 3, or the dense next states of versions 1 and 2),
        checking that its arrays agree; ``ValueError`` when they do not."""
        compact = all(name in arrays for name in NEXT_ARRAYS)
        next_names = NEXT_ARRAYS if compact or DENSE_NEXT_ARRAY not in arrays else (DENSE_NEXT_ARRAY,)
        needed = (*TABLE_ARRAY_NAMES, *next_names, *VOCAB_ARRAY_NAMES)
        missing = [name for name in needed if name not in arrays]
        if missing:
            raise ValueError(f"missing arrays {', '.join(missing)}")
        if not _shapes_agree(arrays, compact):
            raise ValueError("token table arrays have inconsistent shapes or types")
        vocab_size = len(arrays["vocab_token_lengths"])
        words = (vocab_size + 31) // 32
        if V1_MASK_ARRAY in arrays:  # format version 1: the rows as they are
            mask_rows = np.ascontiguousarray(arrays[V1_MASK_ARRAY], dtype=np.uint32)
        else:
            rows = len(arrays["tokens_mask_base"])
            try:
                check_mask_arrays(arrays, rows, vocab_size, "the artifact")
            except ArtifactError as error:
                raise ValueError(str(error)) from None
            mask_rows = MaskRows(arrays, words).full()
        state_row = np.asarray(arrays["tokens_state_row"], dtype=np.int32)
        token_class = np.asarray(arrays["tokens_token_class"])
        rows = len(mask_rows)
        if state_row.min() < 0 or state_row.max() >= rows or state_row[0] != 0:
            raise ValueError("state rows point outside the mask rows (or the dead state's is not 0)")
        if compact:
            if token_class.min(initial=0) < 0 or token_class.max(initial=0) > vocab_size:
                raise ValueError("token classes outside the class table")
            classes = int(token_class.max(initial=0)) + 1
            try:
                check_next_arrays(arrays, state_row, rows, classes, "the artifact")
            except ArtifactError as error:
                raise ValueError(str(error)) from None
            next_table = NextTable.from_checked_arrays(arrays, state_row, classes)
        else:
            next_table = _from_dense(np.asarray(arrays[DENSE_NEXT_ARRAY]), state_row, rows)
        table = cls(
            mask_rows=mask_rows,
            token_class=token_class,
            next_table=next_table,
            vocab_arrays={name: arrays[name] for name in VOCAB_ARRAY_NAMES},
        )
        if REGION_COUNTS_ARRAY in arrays:
            try:
                table.region_counts = check_region_counts(arrays, vocab_size, "the artifact")
            except ArtifactError as error:
                raise ValueError(str(error)) from None
        if "tokens_nest_offsets" in arrays:
            from moonmaskc.nest_format import checked_dynamic

            try:
                table.nest_dynamic = checked_dynamic(arrays, len(state_row), vocab_size, "the artifact")
            except ArtifactError as error:
                raise ValueError(str(error)) from None
        table.check()
        if "tokens_eos_steps" in arrays:
            steps = np.asarray(arrays["tokens_eos_steps"])
            verify_eos_steps(steps, table.next_table, table.token_class, table.accepting(), table.eos_id)
            table._eos_steps = steps.astype(np.int32)
        return table

    def check(self) -> None:
        """Raise ``ValueError`` unless masks, token classes and next states agree with each other."""
        rows, words = self.mask_rows.shape
        table = self.next_table
        states, classes = table.num_states, table.num_classes
        if words != (self.vocab_size + 31) // 32 or rows < 1:
            raise ValueError("mask rows do not match the vocabulary size")
        if len(self.token_class) != self.vocab_size or classes < 1:
            raise ValueError("token classes do not match the vocabulary")
        if self.token_class.min(initial=0) < 0 or self.token_class.max(initial=0) >= classes:
            raise ValueError("token classes outside the class table")
        if table.num_rows != rows or len(self.state_row) != states or int(self.state_row[0]) != 0:
            raise ValueError("state rows do not match the mask rows")
        try:
            check_next_arrays(table.to_arrays(), self.state_row, rows, classes, "the token table")
        except ArtifactError as error:
            raise ValueError(str(error)) from None
        if np.any(np.bincount(self.state_row, minlength=rows) == 0):
            raise ValueError("some mask rows belong to no state")
        holds_token = np.bincount(self.token_class.astype(np.intp), minlength=classes) > 0
        if not holds_token[table.row_classes].all():
            raise ValueError("a mask row allows a class that holds no token")
        expected = packed_masks(self.row_classes(), self.token_class)
        if not np.array_equal(expected, self.mask_rows):
            raise ValueError("mask rows disagree with the next-state table")


def _from_dense(class_next: np.ndarray, state_row: np.ndarray, rows: int) -> NextTable:
    """The compact table of a version 1 or 2 file's ``tokens_class_next`` (checked first: next
    states in range, nothing from the dead state or through the never-allowed class 0)."""
    states = len(state_row)
    if class_next.ndim != 2 or class_next.shape[0] != states or class_next.shape[1] < 1:
        raise ValueError("token classes or next states do not match the vocabulary or the states")
    if class_next.min(initial=0) < 0 or class_next.max(initial=0) >= states:
        raise ValueError("next states point outside the DFA")
    if class_next[0].any() or class_next[:, 0].any():
        raise ValueError("the dead state or the never-allowed class 0 leads somewhere")
    return NextTable.from_dense(class_next, state_row, rows)


def _shapes_agree(arrays: Mapping[str, np.ndarray], compact: bool) -> bool:
    if V1_MASK_ARRAY not in arrays and any(name not in arrays for name in MASK_ARRAYS):
        return False
    next_names = NEXT_ARRAYS if compact else (DENSE_NEXT_ARRAY,)
    return (
        arrays["tokens_state_row"].ndim == 1
        and arrays["tokens_token_class"].ndim == 1
        and (compact or arrays[DENSE_NEXT_ARRAY].ndim == 2)
        and all(
            np.issubdtype(arrays[name].dtype, np.integer)
            for name in ("tokens_state_row", "tokens_token_class", *next_names)
        )
        and arrays["vocab_token_lengths"].ndim == 1
        and len(arrays["tokens_state_row"]) > 0
        and len(arrays["tokens_token_class"]) > 0
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
    roles = _counted_regions_admitted(dfa, vocabulary) if dfa.regions is not None else None
    if dfa.nests is not None:
        _nest_regions_admitted(dfa, vocabulary)
    num_states = dfa.num_states
    on_level: Callable[[float], None] | None = None
    if progress is not None:
        report = progress
        report(0, num_states)

        def on_level(fraction: float) -> None:
            report(int(fraction * (num_states - 1)), num_states)

    classes = token_classes(
        dfa, trie, vocabulary.size, vocabulary.eos_id, on_level=on_level, max_cells=max_cells
    )
    next_table = classes.next_table
    mask_rows = packed_row_masks(
        next_table.row_class_offsets, next_table.row_classes, next_table.num_classes, classes.token_class
    )
    if progress is not None:
        progress(num_states, num_states)
    table = TokenTable(
        mask_rows=mask_rows,
        token_class=classes.token_class,
        next_table=classes.next_table,
        vocab_arrays=_vocabulary_arrays(vocabulary),
    )
    if roles is not None:
        table.region_counts = _counted_regions(dfa, table, roles)
    if dfa.nests is not None:
        from moonmaskc.nest_tokens import dynamic_tokens_of

        table.nest_dynamic = dynamic_tokens_of(dfa, vocabulary)  # (admitted above)
    return table


def _nest_regions_admitted(dfa: DFA, vocabulary: Vocabulary) -> None:
    """``NestRegionError`` (the compile writes the free values out) unless the fact the runtime's
    budgets rest on holds: from every state a fewest-bytes ending is spelled one byte per token
    (``nest_tokens.unspelled_endings``). Checked before the table is built: it needs none."""
    from moonmaskc.automata.nested import NestRegionError
    from moonmaskc.nest_tokens import unspelled_endings

    singles = _SINGLE_BYTES.get(vocabulary.fingerprint)
    if singles is None:
        singles = np.zeros(256, dtype=bool)
        singles[[data[0] for data in vocabulary.token_bytes if len(data) == 1]] = True
        _SINGLE_BYTES[vocabulary.fingerprint] = singles
    problem = unspelled_endings(dfa, singles)
    if problem is not None:
        raise NestRegionError(problem)


_COUNTS_CACHE: dict[tuple[str, bytes], np.ndarray] = {}
_SINGLE_BYTES: dict[str, np.ndarray] = {}  # vocabulary fingerprint -> bool[256]: the bytes that are tokens
_ENTERED_CACHE: dict[tuple[str, bytes, bytes], int] = {}


def _counted_regions_admitted(dfa: DFA, vocabulary: Vocabulary) -> np.ndarray:
    """The role of each state of ``dfa``'s counted regions (``counted_tokens.role_table``), once
    the facts that need no token table hold (else ``CountedRegionError``, and the compile writes
    the bounds out; checked before the table is built, which a refusal would waste): no region
    owes characters (``low`` 0: the front end writes ``minLength`` out); no token starts more
    characters in a region it enters than a region's upper bound (``most_entered``: so only the
    region a token starts in can refuse it)."""
    from moonmaskc.automata.counted import CountedRegionError
    from moonmaskc.counted_tokens import entry_bytes, most_entered, role_table

    regions = dfa.regions
    assert regions is not None
    if np.any(regions.low):
        owing = frozenset(
            zip(regions.low[regions.low > 0].tolist(), regions.high[regions.low > 0].tolist(), strict=True)
        )
        raise CountedRegionError("token tables serve counted regions without a lower bound only", owing)
    arrays = _vocabulary_arrays(vocabulary)
    lengths = np.asarray(arrays["vocab_token_lengths"], dtype=np.int64)
    roles = role_table(dfa.transitions, dfa.byte_class, regions)
    entries = entry_bytes(dfa.transitions, dfa.byte_class, regions)
    entered_key = (vocabulary.fingerprint, roles.tobytes(), entries.tobytes())
    entered = _ENTERED_CACHE.get(entered_key)
    if entered is None:
        entered = most_entered(
            roles, lengths, arrays["vocab_token_bytes"], arrays["vocab_special_ids"], entries
        )
        if len(_ENTERED_CACHE) >= 16:
            _ENTERED_CACHE.clear()
        _ENTERED_CACHE[entered_key] = entered
    if entered > int(regions.high.min()):
        narrow = regions.high < entered
        raise CountedRegionError(
            f"a token starts {entered} characters in a string it opens, past the smallest counted "
            f"bound ({int(regions.high.min())} characters)",
            frozenset(zip(regions.low[narrow].tolist(), regions.high[narrow].tolist(), strict=True)),
        )
    return roles


def _counted_regions(dfa: DFA, table: TokenTable, roles: np.ndarray) -> np.ndarray:
    """The characters each token starts from each role of ``dfa``'s counted regions
    (``counted_tokens.character_counts``; ``roles`` from ``_counted_regions_admitted``, which
    checked the rest), once the last fact that lets the runtime serve them with the rows as they
    are holds (else ``CountedRegionError``, and the compile writes the bounds out): from every
    region state a token that starts no character begins a fewest-token ending (so the budget's
    fewest tokens per state hold whatever the counter)."""
    from moonmaskc.automata.counted import CountedRegionError
    from moonmaskc.counted_tokens import character_counts

    regions = dfa.regions
    assert regions is not None
    arrays = table.vocab_arrays
    lengths = np.asarray(arrays["vocab_token_lengths"], dtype=np.int64)
    key = (table.fingerprint, roles.tobytes())
    counts = _COUNTS_CACHE.get(key)
    if counts is None:  # every schema's regions copy the same character automaton: once a process
        counts = character_counts(roles, lengths, arrays["vocab_token_bytes"])
        counts.flags.writeable = False
        if len(_COUNTS_CACHE) >= 4:
            _COUNTS_CACHE.clear()
        _COUNTS_CACHE[key] = counts
    steps = table.eos_steps
    classes = table.num_classes
    token_class = table.token_class.astype(np.intp)
    # quiet[r, c]: class c holds a token that starts no character from role r
    quiet = np.stack([np.bincount(token_class, weights=row == 0, minlength=classes) > 0 for row in counts])
    # Every entry (class, next state) of the region states that still need tokens, at once.
    states = np.nonzero((regions.region >= 0) & (steps > 0))[0]
    next_table = table.next_table
    owner = np.repeat(np.arange(len(states)), np.diff(next_table.next_offsets)[states])
    following = concatenated_ranges(next_table.next_states, next_table.next_offsets, states)
    entry_class = concatenated_ranges(
        next_table.row_classes, next_table.row_class_offsets, next_table.state_row[states]
    )
    ending = (steps[following] == steps[states][owner] - 1) & quiet[regions.role[states][owner], entry_class]
    served = np.zeros(len(states), dtype=bool)
    served[owner[ending]] = True
    if not served.all():
        state = int(states[np.argmin(served)])
        index = int(regions.region[state])
        raise CountedRegionError(
            f"no fewest-token ending from counted state {state} starts without a character",
            frozenset({(int(regions.low[index]), int(regions.high[index]))}),
        )
    return counts


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
