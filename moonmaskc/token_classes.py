"""Token classes: tokens that act alike on every DFA state, found by composing state maps over the trie.

Takes: a ``DFA`` (dead state 0), the ``ByteTrie`` of a vocabulary and its eos id. Hands on:
``TokenClasses``, where
- ``token_class[t]`` is the class of token ``t``; class 0 holds the tokens that never keep the DFA
  alive (special and empty tokens, and tokens that die from every state);
- ``class_next[s, c]`` is the state that any token of class ``c`` leads to from state ``s`` (0 when
  the token is not allowed there). Columns are pairwise distinct: two tokens share a class exactly
  when they lead every state to the same place. eos leads an accepting state to itself.

How: every trie node (a byte prefix ``p``) has a state map ``s -> delta*(s, p)``. A child's map is
its parent's map followed by one byte class, so the maps are computed level by level, once per
distinct (parent map, byte class) pair, and each distinct map is stored once. The dead map (every
state to 0) prunes its whole subtree. Real vocabularies on JSON-like DFAs yield a few hundred
distinct maps, so the work is about ``states x distinct pairs`` rather than ``states x trie nodes``.

Only numpy is imported here (plus ``moonmaskc.errors`` for the size bound).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from moonmaskc.errors import LimitError
from moonmaskc.limits import DEFAULT_MAX_TABLE_CELLS

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA
    from moonmaskc.trie import ByteTrie

GATHER_CELLS_PER_BATCH = 1 << 18
DENSE_PAIR_KEYS = 1 << 24
FINGERPRINT_SEED = 20261129
DEAD_MAP = 0
IDENTITY_MAP = 1


@dataclass(frozen=True, eq=False)
class TokenClasses:
    token_class: np.ndarray  # uint16 or int32 [vocab_size]
    class_next: np.ndarray  # uint16 or int32 [states, classes]

    @property
    def num_classes(self) -> int:
        return int(self.class_next.shape[1])


def state_dtype(num_states: int) -> type[np.unsignedinteger] | type[np.signedinteger]:
    """The smallest dtype that holds every state id."""
    return np.uint16 if num_states <= np.iinfo(np.uint16).max else np.int32


def token_classes(
    dfa: DFA,
    trie: ByteTrie,
    vocab_size: int,
    eos_id: int,
    on_level: Callable[[float], None] | None = None,
    max_cells: int = DEFAULT_MAX_TABLE_CELLS,
) -> TokenClasses:
    """The token classes of ``dfa`` for the vocabulary of ``trie``; ``on_level(fraction_done)``."""
    maps = _MapStore(dfa.num_states, max_cells)
    node_map = _compose_over_trie(dfa, trie, maps, on_level)
    token_map = np.full(vocab_size, DEAD_MAP, dtype=np.int64)
    token_map[trie.node_token_ids] = node_map[trie.token_nodes]
    states = np.arange(dfa.num_states)
    eos_map = maps.padded(np.where(dfa.accepting, states, 0)[None, :])
    token_map[eos_id] = maps.add(eos_map)[0]
    first_token = np.full(maps.count, vocab_size, dtype=np.int64)  # the first token of each map
    np.minimum.at(first_token, token_map, np.arange(vocab_size))
    used = np.flatnonzero(first_token < vocab_size)
    by_first_token = used[np.argsort(first_token[used], kind="stable")]
    class_maps = np.concatenate([[DEAD_MAP], by_first_token[by_first_token != DEAD_MAP]])
    if dfa.num_states * len(class_maps) > max_cells:
        raise _too_many_cells(dfa.num_states, len(class_maps), max_cells)
    class_of_map = np.zeros(maps.count, dtype=np.int64)
    class_of_map[class_maps] = np.arange(len(class_maps))
    class_dtype = np.uint16 if len(class_maps) <= np.iinfo(np.uint16).max else np.int32
    return TokenClasses(
        token_class=class_of_map[token_map].astype(class_dtype),
        class_next=np.ascontiguousarray(maps.rows(class_maps)[:, : dfa.num_states].T),
    )


def _compose_over_trie(
    dfa: DFA, trie: ByteTrie, maps: _MapStore, on_level: Callable[[float], None] | None
) -> np.ndarray:
    """The map id of every trie node (``DEAD_MAP`` below a dead prefix)."""
    classes = dfa.num_classes
    columns = np.ascontiguousarray(dfa.transitions.T).astype(maps.dtype)
    node_class = dfa.byte_class.astype(np.int64)[trie.node_byte]
    parents = trie.node_parent
    node_map = np.full(trie.num_nodes, DEAD_MAP, dtype=np.int64)
    node_map[0] = IDENTITY_MAP
    known = _PairIds()  # map * classes + byte class -> the composed map's id
    for depth in range(1, trie.max_depth + 1):
        low, high = trie.level(depth)
        parent_map = node_map[parents[low:high]]
        live = np.flatnonzero(parent_map != DEAD_MAP)
        if len(live) == 0:
            break
        keys = parent_map[live] * classes + node_class[low + live]
        known.reserve(maps.count * classes)
        ids = known.lookup(keys)
        missing = np.flatnonzero(ids < 0)
        if len(missing):
            pair_keys = known.distinct(keys[missing])
            known.store(pair_keys, _compose(maps, columns, pair_keys // classes, pair_keys % classes))
            ids[missing] = known.lookup(keys[missing])
        node_map[low + live] = ids
        if on_level is not None:
            on_level(high / trie.num_nodes)
    return node_map


class _PairIds:
    """Integer keys (map id * classes + byte class) -> composed map ids, -1 for keys not stored: a
    dense table while the key range is at most ``DENSE_PAIR_KEYS`` (a lookup is one gather, no
    sort), a dict beyond it (the key range grows with the number of distinct maps)."""

    def __init__(self) -> None:
        self._table: np.ndarray | None = np.full(1024, -1, dtype=np.int64)
        self._dict: dict[int, int] = {}

    def reserve(self, key_range: int) -> None:
        table = self._table
        if table is None or key_range <= len(table):
            return
        if key_range > DENSE_PAIR_KEYS:
            stored = np.flatnonzero(table >= 0)
            self._dict = dict(zip(stored.tolist(), table[stored].tolist(), strict=True))
            self._table = None
            return
        self._table = np.full(min(2 * key_range, DENSE_PAIR_KEYS), -1, dtype=np.int64)
        self._table[: len(table)] = table

    def distinct(self, keys: np.ndarray) -> np.ndarray:
        """The distinct keys among ``keys``, none of them stored yet (in the dense table: each
        key's last position wins a scatter, so no sort is needed)."""
        table = self._table
        if table is None:
            return np.unique(keys)
        positions = np.arange(len(keys), dtype=np.int64)
        table[keys] = positions
        distinct = keys[table[keys] == positions]
        table[keys] = -1
        return distinct

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        if self._table is not None:
            return self._table[keys]
        found = self._dict.get
        return np.fromiter((found(key, -1) for key in keys.tolist()), dtype=np.int64, count=len(keys))

    def store(self, keys: np.ndarray, ids: np.ndarray) -> None:
        if self._table is not None:
            self._table[keys] = ids
        else:
            self._dict.update(zip(keys.tolist(), ids.tolist(), strict=True))


def _compose(
    maps: _MapStore, columns: np.ndarray, map_ids: np.ndarray, byte_classes: np.ndarray
) -> np.ndarray:
    """Ids of the maps ``s -> transitions[map(s), byte_class]`` for each (map, byte class) pair;
    ``columns[c]`` is the transition column of byte class ``c``."""
    ids = np.empty(len(map_ids), dtype=np.int64)
    batch = max(1, GATHER_CELLS_PER_BATCH // max(maps.num_states, 1))
    for first in range(0, len(map_ids), batch):
        pairs = slice(first, first + batch)
        index = maps.rows(map_ids[pairs]).astype(np.intp)
        index += (byte_classes[pairs] * maps.num_states)[:, None]
        ids[pairs] = maps.add(np.take(columns.ravel(), index))
    return ids


class _MapStore:
    """Distinct state maps (``int -> int`` arrays over all states), each stored once as a row.

    Rows are padded with dead states (0) to a whole number of 64-bit words, so that a row's
    fingerprint is a multiply-and-add over its words in numpy; a composed map's padding stays 0,
    because the dead state leads nowhere."""

    def __init__(self, num_states: int, max_cells: int) -> None:
        self.num_states = num_states
        self.dtype = state_dtype(num_states)
        per_word = 8 // np.dtype(self.dtype).itemsize
        self.width = -(-num_states // per_word) * per_word
        self.max_cells = max_cells
        self._weights = np.random.default_rng(FINGERPRINT_SEED).integers(
            1, np.iinfo(np.int64).max, self.width // per_word, dtype=np.uint64
        ) | np.uint64(1)
        self._matrix = np.zeros((64, self.width), dtype=self.dtype)
        self._matrix[IDENTITY_MAP, :num_states] = np.arange(num_states)
        self.count = 2
        self._ids_by_fingerprint: dict[int, list[int]] = {}
        for map_id, fingerprint in enumerate(self._fingerprints(self._matrix[:2]).tolist()):
            self._ids_by_fingerprint.setdefault(fingerprint, []).append(map_id)

    def padded(self, rows: np.ndarray) -> np.ndarray:
        out = np.zeros((len(rows), self.width), dtype=self.dtype)
        out[:, : rows.shape[1]] = rows
        return out

    def rows(self, map_ids: np.ndarray) -> np.ndarray:
        """The padded rows of ``map_ids``."""
        return self._matrix[map_ids]

    def _fingerprints(self, rows: np.ndarray) -> np.ndarray:
        return (np.ascontiguousarray(rows).view(np.uint64) * self._weights).sum(axis=1, dtype=np.uint64)

    def add(self, rows: np.ndarray) -> np.ndarray:
        """The id of each padded row, storing the rows not seen before. Rows are found by their
        fingerprint; every row is then compared in full with the row it was given, and the rare
        fingerprint collisions are settled row by row."""
        fingerprints = self._fingerprints(rows).tolist()
        known = self._ids_by_fingerprint
        found: list[int] = []
        for index, fingerprint in enumerate(fingerprints):
            candidates = known.get(fingerprint)
            if candidates is None:
                candidates = known[fingerprint] = [self._append(rows[index])]
            found.append(candidates[0])
        ids = np.array(found, dtype=np.int64)
        same = (self._matrix[ids] == rows).all(axis=1)
        if not same.all():
            for index in np.flatnonzero(~same).tolist():
                ids[index] = self._find_or_append(rows[index], fingerprints[index])
        return ids

    def _find_or_append(self, row: np.ndarray, fingerprint: int) -> int:
        candidates = self._ids_by_fingerprint[fingerprint]
        for candidate in candidates:
            if np.array_equal(self._matrix[candidate], row):
                return candidate
        candidates.append(self._append(row))
        return candidates[-1]

    def _append(self, row: np.ndarray) -> int:
        if self.count == len(self._matrix):
            if self.count * self.num_states > self.max_cells:
                raise _too_many_cells(self.num_states, self.count, self.max_cells)
            # In place (realloc, which moves large buffers by remapping pages instead of copying
            # them): safe because no view of the matrix outlives a call of this class.
            self._matrix.resize((2 * self.count, self.width), refcheck=False)
        self._matrix[self.count] = row
        self.count += 1
        return self.count - 1


def _too_many_cells(states: int, maps: int, max_cells: int) -> LimitError:
    return LimitError(
        "max_table_cells",
        max_cells,
        f"the token table needs {states} states x {maps} distinct token behaviours "
        "(more than the table may hold)",
        flag="--max-table-cells",
    )
