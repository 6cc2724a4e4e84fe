"""Token classes: tokens that act alike on every DFA state, found by composing state maps over the trie.

Takes: a ``DFA`` (dead state 0), the ``ByteTrie`` of a vocabulary and its eos id. Hands on:
``TokenClasses``, where
- ``token_class[t]`` is the class of token ``t``; class 0 holds the tokens that never keep the DFA
  alive (special and empty tokens, and tokens that die from every state);
- ``next_table`` (a ``moonmaskc.next_table.NextTable``) gives, for every state, its row (the
  distinct set of classes it allows, rows numbered by their first state), and the state each of
  those classes leads to, in ascending class order: what a dense ``class_next[s, c]`` (0 when not
  allowed) would hold, without its zeros. Two tokens share a class exactly when they lead every
  state to the same place. eos leads an accepting state to itself.

How: every trie node (a byte prefix ``p``) has a state map ``s -> delta*(s, p)``. A child's map is
its parent's map followed by one byte class, so the maps are computed level by level, once per
distinct (parent map, byte class) pair, and each distinct map is stored once. The dead map (every
state to 0) prunes its whole subtree. Real vocabularies on JSON-like DFAs yield a few hundred
distinct maps, so the work is about ``states x distinct pairs`` rather than ``states x trie nodes``.

The same composition runs in C when the native core is built (``moonmaskc.automata._native.token_walk``,
imported lazily through ``moonmaskc.automata.native``, which needs only the standard library); every
array is checked here before it goes there. There each map is kept sparse (the states it keeps alive
and their targets), so a composition costs its parent's support rather than every state, and the
compact table is written from the maps directly (each state's classes deduplicated into rows by
hashing, in C): no [states, classes] array on that path. The numpy path builds the dense table and
converts it (``NextTable.from_dense``); both give the same arrays. Otherwise only numpy is
imported here (plus ``moonmaskc.errors`` for the size bound and malformed inputs).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from moonmaskc.automata.native import native
from moonmaskc.errors import LimitError, MalformedArraysError
from moonmaskc.limits import DEFAULT_MAX_TABLE_CELLS
from moonmaskc.next_table import NextTable, state_dtype

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA
    from moonmaskc.trie import ByteTrie

GATHER_CELLS_PER_BATCH = 1 << 18
DENSE_PAIR_KEYS = 1 << 24
FINGERPRINT_SEED = 20261129
DEAD_MAP = 0
IDENTITY_MAP = 1
LOOP_GROUP_BYTES = 10
MAX_LOOP_GROUPS = 64
MIN_GROUPED_STATES = 640
MIN_GROUPED_NODES = 4096
MIN_GROUPED_DFA = 2048  # (smaller DFAs seldom group MIN_GROUPED_STATES states: not searched)
MIN_INSIDE_GROUP = 128  # (smaller groups of inside states cost more than they save)
INSIDE_DEPTH = 6  # (a string's longest escape, \\uXXXX, is five states inside it)
MIN_HOMES = 32  # (fewer homes lead to fewer than MIN_GROUPED_STATES states in practice: skip them)


@dataclass(frozen=True, eq=False)
class TokenClasses:
    token_class: np.ndarray  # uint16 or int32 [vocab_size]
    next_table: NextTable  # the rows of the states and their next states

    @property
    def num_classes(self) -> int:
        return self.next_table.num_classes


def token_classes(
    dfa: DFA,
    trie: ByteTrie,
    vocab_size: int,
    eos_id: int,
    on_level: Callable[[float], None] | None = None,
    max_cells: int = DEFAULT_MAX_TABLE_CELLS,
) -> TokenClasses:
    """The token classes of ``dfa`` for the vocabulary of ``trie``; ``on_level(fraction_done)``.

    The maps are composed by the native core when it is built (``moonmaskc.automata.native``),
    else in numpy; the classes are the same either way (map ids may differ, but classes are
    numbered by their first token)."""
    module = native("token_walk")
    _check_inputs(dfa, trie, vocab_size, eos_id, targets_checked_later=module is not None)
    states = np.arange(dfa.num_states)
    eos_row = np.where(dfa.accepting, states, 0).astype(state_dtype(dfa.num_states))
    if module is not None:
        node_map, eos_map, map_count, next_table = _native_maps(
            module, dfa, trie, eos_row, on_level, max_cells
        )
        status, token_class, class_maps = module.classes_by_first_token(
            node_map, trie.node_of_token(vocab_size), eos_id, eos_map, map_count
        )
        if status != module.OK:
            raise MalformedArraysError("a token or a map outside the native core's maps")
        return _numbered_classes(dfa, token_class, class_maps, next_table, max_cells)
    maps = _MapStore(dfa.num_states, max_cells)
    node_map = _compose_over_trie(dfa, trie, maps, on_level)
    eos_map = int(maps.add(maps.padded(eos_row[None, :]))[0])
    map_count = maps.count
    nodes = trie.node_of_token(vocab_size)
    token_map = np.where(nodes >= 0, node_map[nodes], DEAD_MAP)
    token_map[eos_id] = eos_map
    first_token = np.full(map_count, vocab_size, dtype=np.int64)  # the first token of each map
    np.minimum.at(first_token, token_map, np.arange(vocab_size))
    used = np.flatnonzero(first_token < vocab_size)
    by_first_token = used[np.argsort(first_token[used], kind="stable")]
    class_maps = np.concatenate([[DEAD_MAP], by_first_token[by_first_token != DEAD_MAP]])
    class_of_map = np.zeros(map_count, dtype=np.int32)
    class_of_map[class_maps] = np.arange(len(class_maps))
    return _numbered_classes(
        dfa,
        class_of_map[token_map],
        class_maps,
        lambda map_ids: NextTable.from_dense(maps.class_table(map_ids)),
        max_cells,
    )


def _numbered_classes(
    dfa: DFA,
    token_class: np.ndarray,
    class_maps: np.ndarray,
    next_table: Callable[[np.ndarray], NextTable],
    max_cells: int,
) -> TokenClasses:
    """The classes of the tokens (``token_class``, class ``j`` being map ``class_maps[j]``), in
    the narrowest dtype, and their next-state table, within ``max_cells``."""
    if dfa.num_states * len(class_maps) > max_cells:
        raise _too_many_cells(dfa.num_states, len(class_maps), max_cells)
    class_dtype = np.uint16 if len(class_maps) <= np.iinfo(np.uint16).max else np.int32
    return TokenClasses(token_class=token_class.astype(class_dtype), next_table=next_table(class_maps))


def _check_inputs(
    dfa: DFA, trie: ByteTrie, vocab_size: int, eos_id: int, targets_checked_later: bool = False
) -> None:
    """Raise ``MalformedArraysError`` unless the DFA's and the trie's arrays keep every index in
    range (and state 0 is dead): checked on both paths, before any native code runs but
    ``state_columns``, which checks every transition's target itself before anything reads the
    table (``targets_checked_later``: the native path)."""
    transitions, byte_class = dfa.transitions, dfa.byte_class
    states, classes = transitions.shape if transitions.ndim == 2 else (0, 0)
    if transitions.ndim != 2 or states < 1 or classes < 1 or not _is_int(transitions):
        raise MalformedArraysError("DFA transitions must be a non-empty 2-D integer array")
    if not targets_checked_later and (transitions.min() < 0 or transitions.max() >= states):
        raise MalformedArraysError("DFA transitions lead outside the DFA's states")
    if transitions[0].any():
        raise MalformedArraysError("state 0 of the DFA must be dead (lead only to itself)")
    if byte_class.shape != (256,) or not _is_int(byte_class):
        raise MalformedArraysError("the DFA's byte classes must be 256 integers")
    if byte_class.min() < 0 or byte_class.max() >= classes:
        raise MalformedArraysError("the DFA's byte classes point outside its transition columns")
    if dfa.accepting.shape != (states,):
        raise MalformedArraysError("the DFA's accepting flags do not match its states")
    lowest_id, highest_id = _check_trie(trie)
    if not 0 <= eos_id < vocab_size or lowest_id < 0 or highest_id >= vocab_size:
        raise MalformedArraysError("token ids (or the eos id) outside the vocabulary")


_CHECKED_TRIES: weakref.WeakKeyDictionary[ByteTrie, tuple[int, int]] = weakref.WeakKeyDictionary()


def _check_trie(trie: ByteTrie) -> tuple[int, int]:
    """The lowest and highest token id at the trie's nodes (0, -1 for none); ``MalformedArraysError``
    unless the trie's arrays keep every index in range. A trie whose arrays are all read-only (as
    ``trie_for`` hands them on) is checked once per object."""
    known = _CHECKED_TRIES.get(trie)
    if known is not None:
        return known
    parents, node_byte, levels = trie.node_parent, trie.node_byte, trie.level_offsets
    nodes = len(parents) if parents.ndim == 1 else 0
    arrays = (parents, node_byte, levels, trie.node_token_offsets, trie.node_token_ids)
    if nodes < 1 or any(array.ndim != 1 or not _is_int(array) for array in arrays):
        raise MalformedArraysError("the vocabulary trie's arrays must be non-empty 1-D integer arrays")
    if len(node_byte) != nodes or node_byte.min() < 0 or node_byte.max() > 255:
        raise MalformedArraysError("the vocabulary trie's node bytes do not match its nodes")
    if parents[0] != -1 or (parents[1:] < 0).any() or (parents[1:] >= np.arange(1, nodes)).any():
        raise MalformedArraysError("a node of the vocabulary trie has no parent before it")
    if (
        len(levels) < 2
        or levels[0] != 0
        or levels[1] != 1
        or levels[-1] != nodes
        or (np.diff(levels) < 0).any()
    ):
        raise MalformedArraysError("the vocabulary trie's level offsets do not cover its nodes")
    depths = np.flatnonzero(np.diff(levels)[1:]) + 1  # the levels below the root that hold nodes
    firsts = levels[depths]  # (a level's nodes run up to the next listed level's first node)
    if len(depths) and (
        (np.maximum.reduceat(parents, firsts) >= firsts).any()
        or (np.minimum.reduceat(parents, firsts) < levels[depths - 1]).any()
    ):
        raise MalformedArraysError("a node of the vocabulary trie has its parent outside the level above")
    offsets, token_ids = trie.node_token_offsets, trie.node_token_ids
    if (
        len(offsets) != nodes + 1
        or offsets[0] != 0
        or offsets[-1] != len(token_ids)
        or (np.diff(offsets) < 0).any()
    ):
        raise MalformedArraysError("the vocabulary trie's token offsets do not match its tokens")
    ids = (int(token_ids.min()), int(token_ids.max())) if len(token_ids) else (0, -1)
    if not any(array.flags.writeable for array in arrays):
        _CHECKED_TRIES[trie] = ids
    return ids


_FIRST_CHILDREN: weakref.WeakKeyDictionary[ByteTrie, np.ndarray] = weakref.WeakKeyDictionary()


def first_children(trie: ByteTrie) -> np.ndarray:
    """int32[nodes + 1]: ``trie.first_child`` (where each node's children start, in the level below:
    breadth-first order keeps a node's children together), then the node count, where the last
    node's children would start; kept per trie whose arrays are read-only, as ``trie_for`` hands
    them on."""
    known = _FIRST_CHILDREN.get(trie)
    if known is not None:
        return known
    first = np.empty(trie.num_nodes + 1, dtype=np.int32)
    first[:-1] = trie.first_child
    first[-1] = trie.num_nodes
    if not trie.node_parent.flags.writeable:
        first.flags.writeable = False
        _FIRST_CHILDREN[trie] = first
    return first


def _is_int(array: np.ndarray) -> bool:
    return bool(np.issubdtype(array.dtype, np.integer))


def loop_groups(
    transitions: np.ndarray, home: np.ndarray, role: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The *loop groups* the native composition keeps implicit, from each state's ``home``
    (``token_walk.grouped_homes``: homes, their lead-ins and the states inside them) and ``role``
    (int[states], 0 for none; states of one home kind and one role share a group): ``(group_of, group_home,
    group_loops)``, int32[states] (the group of each state, -1 outside every group),
    int32[states] (its home) and uint8[groups, classes] (1 where the byte class leads every home
    of the group back to itself).

    A home (the inside of a string: at least ``LOOP_GROUP_BYTES`` bytes lead back to it) keeps most
    of the trie alive, and so does a state that most of its home's looping bytes lead home (a
    string's first character, a key being spelled): every prefix of looping bytes sends it home,
    and each distinct prefix's map would list it. So does a state *inside* a home (an escape or a
    multi-byte character of the string): wherever its escape goes on, the string does after it.
    Homes with the same looping classes, and the states whose home they are, form a group, one
    per role (the inside states by what their bytes do, so that a group's states go home on the
    same prefixes); a map that sends most of a group home holds that as one bit and lists only the
    others. At most ``MAX_LOOP_GROUPS`` groups (the largest); None when fewer than
    ``MIN_GROUPED_STATES`` states would be grouped, where the plain composition costs less."""
    homes = np.flatnonzero(home == np.arange(len(home)))
    if role is None:
        role = np.zeros(len(home), dtype=np.int64)
    if np.count_nonzero((home >= 0) & (role == 0)) < max(MIN_GROUPED_STATES, 1):
        return None  # (the states inside the homes join groups made anyway, never make them)
    loops = transitions[homes] == homes[:, None]
    packed = np.packbits(loops, axis=1)
    keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    _, first, kind_of_home = np.unique(keys, return_index=True, return_inverse=True)
    kinds = loops[first]
    kind_of_state = np.full(len(home), -1, dtype=np.int64)
    kind_of_state[homes] = kind_of_home.reshape(-1)
    members = np.flatnonzero(home >= 0)
    roles = int(role.max()) + 1
    member_key = kind_of_state[home[members]] * roles + role[members]  # (kind, role)
    sizes = np.bincount(member_key, minlength=len(kinds) * roles)
    sizes[(np.arange(len(sizes)) % roles != 0) & (sizes < MIN_INSIDE_GROUP)] = 0
    kept = np.argsort(-sizes, kind="stable")[: min(MAX_LOOP_GROUPS, np.count_nonzero(sizes))]
    group_of_key = np.full(len(sizes), -1, dtype=np.int32)
    group_of_key[kept] = np.arange(len(kept), dtype=np.int32)
    group_of = np.full(len(home), -1, dtype=np.int32)
    group_of[members] = group_of_key[member_key]
    group_home = np.where(group_of >= 0, home, -1).astype(np.int32)
    return group_of, group_home, np.ascontiguousarray(kinds[kept // roles], dtype=np.uint8)


def _native_maps(
    module: ModuleType,
    dfa: DFA,
    trie: ByteTrie,
    eos_row: np.ndarray,
    on_level: Callable[[float], None] | None,
    max_cells: int,
) -> tuple[np.ndarray, int, int, Callable[[np.ndarray], NextTable]]:
    """The native composition (inputs checked by ``_check_inputs``): the map of every node, the
    eos map, the number of maps and ``next_table(map_ids)``, the compact table whose class ``j``
    is map ``map_ids[j]`` (written by the native core from the sparse maps)."""
    narrow = state_dtype(dfa.num_states) == np.uint16
    table = np.ascontiguousarray(dfa.transitions, dtype=np.int32)
    columns_status, columns = module.state_columns(table, narrow)
    if columns_status != module.OK:
        raise MalformedArraysError("a DFA transition outside its states (rejected by the native core)")
    byte_class = np.ascontiguousarray(dfa.byte_class, dtype=np.int32)
    groups = None
    if dfa.num_states >= max(MIN_GROUPED_DFA, MIN_GROUPED_STATES) and trie.num_nodes >= MIN_GROUPED_NODES:
        # (else too few states to group, or too few prefixes to repeat them: a probe's tokens)
        home_status, _, home, signature = module.grouped_homes(
            table, byte_class, LOOP_GROUP_BYTES, MIN_HOMES, INSIDE_DEPTH
        )
        if home_status != module.OK:
            raise MalformedArraysError("a byte class outside the DFA's columns (rejected by the native core)")
        groups = loop_groups(table, home, np.unique(signature, return_inverse=True)[1].reshape(-1))
    group_of, group_home, group_loops = groups if groups is not None else (None, None, None)
    first_child = first_children(trie)
    status, count, node_map, maps, eos_map = module.compose_over_trie(
        columns,
        np.ascontiguousarray(trie.node_parent, dtype=np.int32),
        np.ascontiguousarray(trie.node_byte, dtype=np.uint8),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        np.ascontiguousarray(trie.level_offsets, dtype=np.int64),
        min(max(int(max_cells), 0), np.iinfo(np.int64).max),
        eos_row,
        on_level,
        group_of=group_of,
        group_home=group_home,
        group_loops=group_loops,
        first_child=first_child,
    )
    if status == module.LIMIT:
        raise _too_many_cells(dfa.num_states, count, max_cells)
    if status != module.OK:
        raise MalformedArraysError(
            "the vocabulary trie or the DFA is malformed (rejected by the native core)"
        )

    def next_table(map_ids: np.ndarray) -> NextTable:
        table_status, *arrays = maps.compact_table(np.ascontiguousarray(map_ids, dtype=np.int64))
        if table_status != module.OK:
            raise MalformedArraysError("a map id outside the native core's maps")
        state_row, row_class_offsets, row_classes, next_offsets, next_states = arrays
        return NextTable(state_row, row_class_offsets, row_classes, next_offsets, next_states, len(map_ids))

    return node_map, int(eos_map), int(count), next_table


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

    def class_table(self, map_ids: np.ndarray) -> np.ndarray:
        """The [states, len(map_ids)] table of the maps ``map_ids`` (their rows, transposed)."""
        return np.ascontiguousarray(self._matrix[map_ids][:, : self.num_states].T)

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
