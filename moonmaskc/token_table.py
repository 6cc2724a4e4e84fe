"""The token table: for every DFA state, the tokens that may come next and the state each leads to.

Takes: a ``DFA`` (dead state 0, every other state co-accessible) and a ``Vocabulary``.
Hands on: a ``TokenTable`` that stores
- ``mask_rows``: uint32[rows, words], the distinct masks, each once; token ``i`` is bit ``i % 32``
  of word ``i // 32`` (little-endian bit order, the layout of xgrammar, llguidance and
  outlines-core bitmasks); bits past ``vocab_size`` are 0;
- ``state_row``: int32[states], the mask row of each state (state 0, the dead state, has the
  empty row);
- ``row_token_offsets`` / ``row_token_ids``: the sorted allowed token ids of each row (CSR);
- ``next_states``: for each state in turn, the state that each token of its row leads to, in the
  order of the row's ids (so ``next_offsets[s]`` follows from the row sizes). eos leads to the state
  itself: it ends the text, the state stays accepting.

A token is allowed in state ``s`` when all its bytes keep the DFA alive; eos only when ``s``
accepts; special and empty tokens never. ``build_token_table`` walks the vocabulary trie level
by level for a chunk of states at once, over the live (state, trie node) pairs only, so a prefix
that dies prunes its subtree for that state.

Only numpy is imported here: the runtime reads tables through ``TokenTable.from_arrays``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from moonmaskc.dfa import DFA
    from moonmaskc.trie import ByteTrie
    from moonmaskc.vocabulary import Vocabulary

ProgressCallback = Callable[[int, int], None]

TABLE_ARRAY_NAMES = (
    "tokens_mask_rows",
    "tokens_state_row",
    "tokens_row_token_offsets",
    "tokens_row_token_ids",
    "tokens_next_states",
)
VOCAB_ARRAY_NAMES = (
    "vocab_name",
    "vocab_fingerprint",
    "vocab_eos_id",
    "vocab_eos_token",
    "vocab_special_ids",
    "vocab_token_lengths",
    "vocab_token_bytes",
)
DENSE_CELLS_PER_CHUNK = 1 << 24


@dataclass(eq=False)
class TokenTable:
    """Masks and next states of every state for one vocabulary (see the module docstring)."""

    mask_rows: np.ndarray
    state_row: np.ndarray
    row_token_offsets: np.ndarray
    row_token_ids: np.ndarray
    next_states: np.ndarray
    vocab_arrays: dict[str, np.ndarray]
    next_offsets: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        row_sizes = np.diff(self.row_token_offsets)
        self.next_offsets = np.concatenate([[0], np.cumsum(row_sizes[self.state_row])]).astype(np.int64)

    @property
    def num_states(self) -> int:
        return len(self.state_row)

    @property
    def num_rows(self) -> int:
        return len(self.mask_rows)

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
        row = self.state_row[state]
        return self.row_token_ids[self.row_token_offsets[row] : self.row_token_offsets[row + 1]]

    def next_of(self, state: int) -> np.ndarray:
        """The state each token of ``allowed(state)`` leads to, in the same order."""
        return self.next_states[self.next_offsets[state] : self.next_offsets[state + 1]]

    def vocabulary(self) -> Vocabulary:
        from moonmaskc.vocabulary import Vocabulary

        return Vocabulary.from_arrays(self.vocab_arrays)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Numeric and unicode arrays only (``tokens_*``, ``vocab_*``): safe for ``allow_pickle=False``."""
        return {
            "tokens_mask_rows": self.mask_rows,
            "tokens_state_row": self.state_row,
            "tokens_row_token_offsets": self.row_token_offsets,
            "tokens_row_token_ids": self.row_token_ids,
            "tokens_next_states": self.next_states,
            **self.vocab_arrays,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> TokenTable:
        """Read a table back, checking that its arrays agree; ``ValueError`` when they do not."""
        missing = [name for name in (*TABLE_ARRAY_NAMES, *VOCAB_ARRAY_NAMES) if name not in arrays]
        if missing:
            raise ValueError(f"missing arrays {', '.join(missing)}")
        if not _shapes_agree(arrays):
            raise ValueError("token table arrays have inconsistent shapes or types")
        table = cls(
            mask_rows=np.ascontiguousarray(arrays["tokens_mask_rows"], dtype=np.uint32),
            state_row=np.asarray(arrays["tokens_state_row"], dtype=np.int32),
            row_token_offsets=np.asarray(arrays["tokens_row_token_offsets"], dtype=np.int64),
            row_token_ids=np.asarray(arrays["tokens_row_token_ids"], dtype=np.int32),
            next_states=np.asarray(arrays["tokens_next_states"]),
            vocab_arrays={name: arrays[name] for name in VOCAB_ARRAY_NAMES},
        )
        table.check()
        return table

    def check(self) -> None:
        """Raise ``ValueError`` unless masks, row ids and next states agree with each other."""
        rows, words = self.mask_rows.shape
        vocab_size = self.vocab_size
        offsets = self.row_token_offsets
        ids = self.row_token_ids
        if words != (vocab_size + 31) // 32 or len(offsets) != rows + 1 or offsets[0] != 0:
            raise ValueError("mask rows do not match the vocabulary size or the row offsets")
        if (np.diff(offsets) < 0).any() or offsets[-1] != len(ids):
            raise ValueError("row token offsets are not increasing")
        if len(ids) and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError("row token ids outside the vocabulary")
        row_of_id = np.repeat(np.arange(rows), np.diff(offsets))
        if len(ids) > 1 and ((np.diff(ids) <= 0) & (row_of_id[1:] == row_of_id[:-1])).any():
            raise ValueError("row token ids are not sorted")
        bits = (self.mask_rows[row_of_id, ids >> 5] >> (ids & 31).astype(np.uint32)) & 1
        set_bits = np.unpackbits(self.mask_rows.view(np.uint8), axis=1).sum(axis=1) if rows else np.zeros(0)
        if not bits.all() or not np.array_equal(set_bits, np.diff(offsets)):
            raise ValueError("mask rows disagree with the row token ids")
        if self.state_row.min(initial=0) < 0 or self.state_row.max(initial=0) >= max(rows, 1):
            raise ValueError("state rows point outside the mask rows")
        if len(self.next_states) != self.next_offsets[-1]:
            raise ValueError("next states do not match the allowed tokens")
        if len(self.next_states) and (
            self.next_states.min() < 1 or self.next_states.max() >= self.num_states
        ):
            raise ValueError("next states point outside the DFA or into the dead state")


def _shapes_agree(arrays: dict[str, np.ndarray]) -> bool:
    return (
        arrays["tokens_mask_rows"].ndim == 2
        and arrays["tokens_state_row"].ndim == 1
        and arrays["tokens_row_token_offsets"].ndim == 1
        and arrays["tokens_row_token_ids"].ndim == 1
        and arrays["tokens_next_states"].ndim == 1
        and np.issubdtype(arrays["tokens_next_states"].dtype, np.integer)
        and arrays["vocab_token_lengths"].ndim == 1
        and len(arrays["tokens_state_row"]) > 0
    )


def build_token_table(
    dfa: DFA,
    vocabulary: Vocabulary,
    progress: ProgressCallback | None = None,
    trie: ByteTrie | None = None,
) -> TokenTable:
    """The token table of ``dfa`` for ``vocabulary``; ``progress(done_states, total_states)``."""
    from moonmaskc.trie import trie_for

    if trie is None:
        trie = trie_for(vocabulary)
    walker = _TrieWalker(dfa, trie)
    vocab_size = vocabulary.size
    words = (vocab_size + 31) // 32
    num_states = dfa.num_states
    eos_id = vocabulary.eos_id
    rows: dict[bytes, int] = {b"\x00" * (4 * words): 0}
    row_masks: list[np.ndarray] = [np.zeros(words, dtype=np.uint32)]
    row_ids: list[np.ndarray] = [np.zeros(0, dtype=np.int32)]
    state_row = np.zeros(num_states, dtype=np.int32)
    next_parts: list[np.ndarray] = []
    chunk_size = max(1, DENSE_CELLS_PER_CHUNK // max(vocab_size, 1))
    live_states = np.arange(1, num_states, dtype=np.int32)
    if progress is not None:
        progress(0, num_states)
    for first in range(0, len(live_states), chunk_size):
        chunk = live_states[first : first + chunk_size]
        next_dense = walker.next_states_dense(chunk, vocab_size)
        accepting = dfa.accepting[chunk]
        next_dense[accepting, eos_id] = chunk[accepting]
        allowed = next_dense > 0
        packed = _pack_rows(allowed, words)
        for local, state in enumerate(chunk.tolist()):
            key = packed[local].tobytes()
            row = rows.get(key)
            if row is None:
                row = rows[key] = len(row_masks)
                row_masks.append(packed[local].copy())
                row_ids.append(np.flatnonzero(allowed[local]).astype(np.int32))
            state_row[state] = row
            next_parts.append(next_dense[local, row_ids[row]])
        if progress is not None:
            progress(min(num_states, 1 + first + len(chunk)), num_states)
    next_dtype = np.uint16 if num_states <= np.iinfo(np.uint16).max else np.int32
    sizes = np.array([len(ids) for ids in row_ids], dtype=np.int64)
    return TokenTable(
        mask_rows=np.stack(row_masks),
        state_row=state_row,
        row_token_offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        row_token_ids=np.concatenate(row_ids).astype(np.int32),
        next_states=(np.concatenate(next_parts) if next_parts else np.zeros(0)).astype(next_dtype),
        vocab_arrays=vocabulary.to_arrays(),
    )


def _pack_rows(allowed: np.ndarray, words: int) -> np.ndarray:
    """bool[n, vocab] -> uint32[n, words], token i at bit i % 32 of word i // 32."""
    padded = np.zeros((allowed.shape[0], words * 32), dtype=bool)
    padded[:, : allowed.shape[1]] = allowed
    return np.packbits(padded, axis=1, bitorder="little").view("<u4").astype(np.uint32)


class _TrieWalker:
    """Walks the trie from many DFA states at once, level by level, over live pairs only."""

    def __init__(self, dfa: DFA, trie: ByteTrie) -> None:
        self.transitions = dfa.transitions
        self.node_class = dfa.byte_class[trie.node_byte.astype(np.int64)]
        self.node_class[0] = 0
        self.child_count = trie.child_count.astype(np.int64)
        self.first_child = trie.first_child.astype(np.int64)
        self.token_offsets = trie.node_token_offsets
        self.token_ids = trie.node_token_ids
        self.token_count = np.diff(trie.node_token_offsets)
        self.max_depth = trie.max_depth

    def next_states_dense(self, states: np.ndarray, vocab_size: int) -> np.ndarray:
        """int32[len(states), vocab_size]: where each token leads from each state, 0 if it dies."""
        result = np.zeros((len(states), vocab_size), dtype=np.int32)
        origin = np.arange(len(states), dtype=np.int64)
        node = np.zeros(len(states), dtype=np.int64)
        current = states.astype(np.int64)
        for _ in range(self.max_depth):
            counts = self.child_count[node]
            total = int(counts.sum())
            if total == 0:
                break
            parent_index = np.repeat(np.arange(len(node)), counts)
            starts = np.cumsum(counts) - counts
            child = self.first_child[node][parent_index] + (np.arange(total) - starts[parent_index])
            nxt = self.transitions[current[parent_index], self.node_class[child]]
            alive = nxt != 0
            origin = origin[parent_index][alive]
            node = child[alive]
            current = nxt[alive].astype(np.int64)
            self._record_tokens(result, origin, node, current)
        return result

    def _record_tokens(
        self, result: np.ndarray, origin: np.ndarray, node: np.ndarray, state: np.ndarray
    ) -> None:
        counts = self.token_count[node]
        ending = counts > 0
        if not ending.any():
            return
        origin, node, state, counts = origin[ending], node[ending], state[ending], counts[ending]
        if (counts == 1).all():
            result[origin, self.token_ids[self.token_offsets[node]]] = state
            return
        index = np.repeat(np.arange(len(node)), counts)
        starts = np.cumsum(counts) - counts
        positions = self.token_offsets[node][index] + (np.arange(int(counts.sum())) - starts[index])
        result[origin[index], self.token_ids[positions]] = state[index]
