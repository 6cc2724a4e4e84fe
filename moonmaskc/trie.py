"""The byte trie of a vocabulary, in flat numpy arrays laid out level by level.

Takes: a ``Vocabulary``. Hands on: a ``ByteTrie`` whose nodes are numbered breadth first, so that
the nodes of depth ``d`` are the contiguous range ``level_offsets[d]:level_offsets[d + 1]`` and the
children of a node are contiguous (``first_child``, ``child_count``) and sorted by byte. Node 0 is
the root (the empty prefix). Every token that may appear in a mask for its bytes (not eos, not a
special token, not empty) ends at exactly one node; ``node_token_offsets`` / ``node_token_ids``
list the tokens ending at each node (several when tokens share their bytes, as SentencePiece's
``▁`` and ``<0x20>`` do).

``trie_for(vocabulary)`` builds it once per vocabulary and keeps it in the disk cache
(``moonmaskc.cache``) keyed by the vocabulary fingerprint.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from moonmaskc.cache import cache_path, read_cached_arrays, write_cached_arrays
from moonmaskc.vocabulary import Vocabulary

_ARRAY_NAMES = ("node_parent", "node_byte", "level_offsets", "node_token_offsets", "node_token_ids")


@dataclass(frozen=True, eq=False)
class ByteTrie:
    fingerprint: str
    node_parent: np.ndarray  # int32[N]; the root's parent is -1
    node_byte: np.ndarray  # uint8[N]; the byte on the edge into the node (0 for the root)
    level_offsets: np.ndarray  # int64[depth + 2]
    node_token_offsets: np.ndarray  # int64[N + 1]
    node_token_ids: np.ndarray  # int32[tokens]

    @property
    def num_nodes(self) -> int:
        return len(self.node_parent)

    @property
    def max_depth(self) -> int:
        return len(self.level_offsets) - 2

    def level(self, depth: int) -> tuple[int, int]:
        return int(self.level_offsets[depth]), int(self.level_offsets[depth + 1])

    @cached_property
    def token_nodes(self) -> np.ndarray:
        """The node of each entry of ``node_token_ids`` (computed once per trie)."""
        return np.repeat(np.arange(self.num_nodes), np.diff(self.node_token_offsets))

    @cached_property
    def _nodes_of_tokens(self) -> dict[int, np.ndarray]:
        return {}

    def node_of_token(self, vocab_size: int) -> np.ndarray:
        """int32[vocab_size], read-only: the node at which each token ends, -1 for a token that
        ends at no node (special and empty tokens); computed once per trie and size."""
        found = self._nodes_of_tokens.get(vocab_size)
        if found is None:
            found = np.full(vocab_size, -1, dtype=np.int32)
            inside = self.node_token_ids < vocab_size
            found[self.node_token_ids[inside]] = self.token_nodes[inside]
            found.flags.writeable = False
            self._nodes_of_tokens[vocab_size] = found
        return found

    @property
    def child_count(self) -> np.ndarray:
        return np.bincount(self.node_parent[1:], minlength=self.num_nodes).astype(np.int32)

    @property
    def first_child(self) -> np.ndarray:
        """Id of each node's first child (the next free id when it has none)."""
        counts = self.child_count
        return (np.cumsum(counts) - counts + 1).astype(np.int32)

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {name: getattr(self, name) for name in _ARRAY_NAMES}
        arrays["fingerprint"] = np.array(self.fingerprint)
        return arrays


def build_trie(vocabulary: Vocabulary) -> ByteTrie:
    """Build the trie of ``vocabulary`` (plain Python over the sorted token bytes)."""
    token_bytes = vocabulary.token_bytes
    ids_by_bytes: dict[bytes, list[int]] = {}
    for token_id in vocabulary.maskable_ids().tolist():
        ids_by_bytes.setdefault(token_bytes[token_id], []).append(token_id)
    words = sorted(ids_by_bytes)
    node_of: dict[bytes, int] = {b"": 0}
    parents: list[int] = [-1]
    node_bytes: list[int] = [0]
    level_offsets = [0, 1]
    depth = 1
    while True:
        level: list[bytes] = []
        for word in words:
            if len(word) >= depth:
                prefix = word[:depth]
                if not level or level[-1] != prefix:
                    level.append(prefix)
        if not level:
            break
        for prefix in level:
            node_of[prefix] = len(parents)
            parents.append(node_of[prefix[:-1]])
            node_bytes.append(prefix[-1])
        level_offsets.append(len(parents))
        words = [w for w in words if len(w) > depth]
        depth += 1
    num_nodes = len(parents)
    token_counts = np.zeros(num_nodes, dtype=np.int64)
    ending: list[tuple[int, int]] = []
    for word, ids in ids_by_bytes.items():
        node = node_of[word]
        token_counts[node] += len(ids)
        ending.extend((node, token_id) for token_id in ids)
    ending.sort()
    return ByteTrie(
        fingerprint=vocabulary.fingerprint,
        node_parent=np.array(parents, dtype=np.int32),
        node_byte=np.array(node_bytes, dtype=np.uint8),
        level_offsets=np.array(level_offsets, dtype=np.int64),
        node_token_offsets=np.concatenate([[0], np.cumsum(token_counts)]).astype(np.int64),
        node_token_ids=np.array([token_id for _, token_id in ending], dtype=np.int32),
    )


_LOADED: weakref.WeakKeyDictionary[Vocabulary, ByteTrie] = weakref.WeakKeyDictionary()


def trie_for(vocabulary: Vocabulary, use_cache: bool = True) -> ByteTrie:
    """The trie of ``vocabulary``: kept in memory for as long as the ``Vocabulary`` object lives
    (repeated compiles with one loaded vocabulary pay nothing), else from the disk cache when a
    valid copy is there, else built and cached. Its arrays are read-only."""
    if not use_cache:
        return build_trie(vocabulary)
    trie = _LOADED.get(vocabulary)
    if trie is not None:
        return trie
    path = cache_path("trie", vocabulary.fingerprint)
    arrays = read_cached_arrays(path)
    trie = _trie_from_arrays(arrays, vocabulary) if arrays is not None else None
    if trie is None:
        trie = build_trie(vocabulary)
        write_cached_arrays(path, trie.to_arrays())
    for name in _ARRAY_NAMES:  # shared by every compile with this vocabulary: checked once
        getattr(trie, name).flags.writeable = False
    _LOADED[vocabulary] = trie
    return trie


def _trie_from_arrays(arrays: dict[str, np.ndarray], vocabulary: Vocabulary) -> ByteTrie | None:
    """A trie read from the cache, or ``None`` unless it is the trie of exactly ``vocabulary``."""
    if set(arrays) != {*_ARRAY_NAMES, "fingerprint"} or str(arrays["fingerprint"]) != vocabulary.fingerprint:
        return None
    trie = ByteTrie(
        fingerprint=vocabulary.fingerprint,
        node_parent=arrays["node_parent"].astype(np.int32),
        node_byte=arrays["node_byte"].astype(np.uint8),
        level_offsets=arrays["level_offsets"].astype(np.int64),
        node_token_offsets=arrays["node_token_offsets"].astype(np.int64),
        node_token_ids=arrays["node_token_ids"].astype(np.int32),
    )
    return trie if trie_matches(trie, vocabulary) else None


def trie_matches(trie: ByteTrie, vocabulary: Vocabulary) -> bool:
    """Whether every maskable token ends at the node spelling its bytes, and nothing else does."""
    n = trie.num_nodes
    parents = trie.node_parent
    if (
        n < 1
        or len(trie.node_byte) != n
        or len(trie.node_token_offsets) != n + 1
        or trie.level_offsets[0] != 0
        or trie.level_offsets[-1] != n
        or (np.diff(trie.level_offsets) <= 0).any()
        or parents[0] != -1
        or (parents[1:] < 0).any()
        or (parents[1:] >= np.arange(1, n)).any()
        or (np.diff(parents[1:]) < 0).any()
        or (np.diff(trie.node_token_offsets) < 0).any()
        or trie.node_token_offsets[-1] != len(trie.node_token_ids)
    ):
        return False
    depth = np.repeat(np.arange(len(trie.level_offsets) - 1), np.diff(trie.level_offsets))
    edge_keys = parents[1:].astype(np.int64) * 256 + trie.node_byte[1:]
    if (depth[parents[1:]] != depth[1:] - 1).any() or (np.diff(edge_keys) <= 0).any():
        return False
    expected = vocabulary.maskable_ids()
    if not np.array_equal(np.sort(trie.node_token_ids), expected):
        return False
    token_nodes = np.repeat(np.arange(n), np.diff(trie.node_token_offsets))
    order = np.argsort(trie.node_token_ids, kind="stable")
    token_nodes = token_nodes[order]
    lengths = vocabulary.token_lengths()[expected]
    width = int(lengths.max(initial=0))
    padded = np.zeros((len(expected), width), dtype=np.uint8)
    data = np.frombuffer(b"".join(vocabulary.token_bytes[i] for i in expected.tolist()), dtype=np.uint8)
    rows = np.repeat(np.arange(len(expected)), lengths)
    columns = np.arange(len(data)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[rows, columns] = data
    node = token_nodes.astype(np.int64)
    for position in range(width - 1, -1, -1):
        inside = lengths > position
        current = node[inside]
        if (current <= 0).any() or (trie.node_byte[current] != padded[inside, position]).any():
            return False
        node[inside] = parents[current]
    return bool((node == 0).all())
