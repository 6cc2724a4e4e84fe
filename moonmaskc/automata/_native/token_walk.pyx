# cython: language_level=3
"""Native token walk: state maps composed over a vocabulary trie, and packed token masks.

``compose_over_trie(columns, node_parent, node_byte, byte_class, level_offsets, max_cells,
extra_row, on_level)``
  Takes: ``columns`` (uint16 or int32 [byte classes, states]: ``columns[c, s]`` is the DFA's
  transition from ``s`` on byte class ``c``, state 0 dead), the trie's ``node_parent`` (int32[N],
  root -1, every other parent a smaller node id), ``node_byte`` (uint8[N]), ``byte_class``
  (int32[256]), ``level_offsets`` (int64[depth + 2]), the bound ``max_cells`` on maps x states,
  ``extra_row`` (one more map to store once the trie is done, the eos map) and ``on_level`` (called
  with the fraction of nodes done after each level, or ``None``).
  Hands on: ``(status, count, node_map, maps, extra_id)``. With status ``OK``: ``node_map``
  (int32[N]) is the map id of every node (0 the dead map, which prunes its subtree; 1 the identity,
  the root's), ``maps`` (the columns' dtype, [count, states]) holds each distinct map once and
  ``extra_id`` is the id of ``extra_row``. With status ``LIMIT``: the store held ``count`` maps
  and needed room for more while ``count x states > max_cells`` (the same test as the numpy map
  store, on the same growth schedule: 64 rows, doubled). With status ``BAD_INPUT``: an array broke
  the contract above (the Python side validates first; this is the backstop).
  Each distinct (map, byte class) pair is composed once (a hash table of pairs); a composed map is
  found among the stored ones by a hash of its row, then compared in full.

``pack_masks(allowed, token_class, window)``
  Takes: ``allowed`` (uint8[rows, classes], 0 or 1: the classes each row allows) and
  ``token_class`` (uint16 or int32 [vocab], every value below ``classes``).
  Hands on: ``(status, masks)``, ``masks`` uint32[rows, words] with bit ``t % 32`` of word
  ``t // 32`` set when ``allowed[row, token_class[t]]``; bits past the vocabulary are 0.
  Each row starts from the cheapest of: no token, every token, or one of the ``window`` rows
  before it; then the bits of every class on which the row and its start differ are flipped
  (classes hold disjoint tokens). The cost of a start is the number of tokens to flip.

Both release the GIL while they work. No negative indexing anywhere (the checked build turns
bounds and wraparound checks on).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

cdef enum:
    _OK = 0
    _LIMIT = 1
    _BAD_INPUT = 2
    _FIRST_CAPACITY = 64
    _NO_MEMORY = -2
    _OVER_LIMIT = -1

OK = _OK
LIMIT = _LIMIT
BAD_INPUT = _BAD_INPUT

ctypedef fused state_t:
    uint16_t
    int32_t

ctypedef fused class_t:
    uint16_t
    int32_t


# ---------------------------------------------------------------------------------------------
# The map store: rows of ``row_bytes`` bytes, found by hash (open addressing over map ids).


cdef struct MapStore:
    char* rows
    uint64_t* hashes  # the hash of each stored row
    int32_t* support  # the states each map keeps alive (not sent to 0), map after map
    int64_t* support_start  # where each map's support starts in ``support`` [capacity + 1]
    int64_t support_capacity
    int64_t count
    int64_t capacity
    int64_t row_bytes
    int64_t num_states
    int64_t max_cells
    int32_t* slots  # map ids, -1 where empty
    uint64_t slot_mask


cdef inline uint64_t _mix(uint64_t h) noexcept nogil:
    h ^= h >> 31
    h *= <uint64_t>0x9E3779B97F4A7C15
    h ^= h >> 29
    h *= <uint64_t>0xBF58476D1CE4E5B9
    h ^= h >> 32
    return h


cdef int _store_init(
    MapStore* store, int64_t num_states, int64_t row_bytes, int64_t max_cells
) noexcept nogil:
    store.count = 0
    store.capacity = _FIRST_CAPACITY
    store.row_bytes = row_bytes
    store.num_states = num_states
    store.max_cells = max_cells
    store.rows = <char*>malloc(<size_t>(_FIRST_CAPACITY * row_bytes) + 1)
    store.hashes = <uint64_t*>malloc(_FIRST_CAPACITY * sizeof(uint64_t))
    store.slots = <int32_t*>malloc(4 * _FIRST_CAPACITY * sizeof(int32_t))
    store.slot_mask = 4 * _FIRST_CAPACITY - 1
    store.support_capacity = 4 * num_states + 64
    store.support = <int32_t*>malloc(<size_t>store.support_capacity * sizeof(int32_t))
    store.support_start = <int64_t*>malloc((_FIRST_CAPACITY + 1) * sizeof(int64_t))
    if (
        store.rows == NULL
        or store.hashes == NULL
        or store.slots == NULL
        or store.support == NULL
        or store.support_start == NULL
    ):
        return _NO_MEMORY
    memset(store.slots, 0xFF, 4 * _FIRST_CAPACITY * sizeof(int32_t))
    store.support_start[0] = 0
    return 0


cdef void _store_free(MapStore* store) noexcept nogil:
    free(store.rows)
    free(store.hashes)
    free(store.slots)
    free(store.support)
    free(store.support_start)
    store.rows = NULL
    store.hashes = NULL
    store.slots = NULL
    store.support = NULL
    store.support_start = NULL


cdef void _slot_insert(MapStore* store, int32_t map_id) noexcept nogil:
    cdef uint64_t i = store.hashes[map_id] & store.slot_mask
    while store.slots[i] >= 0:
        i = (i + 1) & store.slot_mask
    store.slots[i] = map_id


cdef int _store_append(
    MapStore* store, const char* row, uint64_t h, const int32_t* support, int64_t support_size
) noexcept nogil:
    """Append ``row`` (hash ``h``, alive on ``support``) unconditionally: its id, ``_OVER_LIMIT``
    or ``_NO_MEMORY``."""
    cdef int64_t capacity, size, i, used
    cdef char* rows
    cdef uint64_t* hashes
    cdef int32_t* slots
    cdef int32_t* grown_support
    cdef int64_t* starts
    if store.count == store.capacity:
        if store.count * store.num_states > store.max_cells:
            return _OVER_LIMIT
        if store.capacity >= (1 << 30):
            return _NO_MEMORY
        capacity = 2 * store.capacity
        rows = <char*>realloc(store.rows, <size_t>(capacity * store.row_bytes) + 1)
        if rows == NULL:
            return _NO_MEMORY
        store.rows = rows
        hashes = <uint64_t*>realloc(store.hashes, <size_t>capacity * sizeof(uint64_t))
        if hashes == NULL:
            return _NO_MEMORY
        store.hashes = hashes
        starts = <int64_t*>realloc(store.support_start, <size_t>(capacity + 1) * sizeof(int64_t))
        if starts == NULL:
            return _NO_MEMORY
        store.support_start = starts
        store.capacity = capacity
    used = store.support_start[store.count]
    if used + support_size > store.support_capacity:
        size = 2 * store.support_capacity
        while used + support_size > size:
            size *= 2
        grown_support = <int32_t*>realloc(store.support, <size_t>size * sizeof(int32_t))
        if grown_support == NULL:
            return _NO_MEMORY
        store.support = grown_support
        store.support_capacity = size
    if 2 * (store.count + 1) > <int64_t>(store.slot_mask + 1):
        size = 2 * <int64_t>(store.slot_mask + 1)
        slots = <int32_t*>realloc(store.slots, <size_t>size * sizeof(int32_t))
        if slots == NULL:
            return _NO_MEMORY
        memset(slots, 0xFF, <size_t>size * sizeof(int32_t))
        store.slots = slots
        store.slot_mask = <uint64_t>(size - 1)
        for i in range(store.count):
            _slot_insert(store, <int32_t>i)
    memcpy(store.rows + store.count * store.row_bytes, row, <size_t>store.row_bytes)
    store.hashes[store.count] = h
    memcpy(store.support + used, support, <size_t>support_size * sizeof(int32_t))
    store.support_start[store.count + 1] = used + support_size
    _slot_insert(store, <int32_t>store.count)
    store.count += 1
    return <int>(store.count - 1)


cdef int _store_find_or_append(
    MapStore* store, const state_t* row, uint64_t h, int32_t* scratch_support
) noexcept nogil:
    """The id of the stored row equal to ``row``, appending it when there is none (its support
    is found then, in ``scratch_support``)."""
    cdef uint64_t i = h & store.slot_mask
    cdef int32_t candidate
    cdef int64_t s, size
    while True:
        candidate = store.slots[i]
        if candidate < 0:
            size = 0
            for s in range(store.num_states):
                scratch_support[size] = <int32_t>s
                size += row[s] != 0
            return _store_append(store, <const char*>row, h, scratch_support, size)
        if store.hashes[candidate] == h and memcmp(
            store.rows + candidate * store.row_bytes, row, <size_t>store.row_bytes
        ) == 0:
            return candidate
        i = (i + 1) & store.slot_mask


cdef uint64_t* _weights(int64_t num_states) noexcept nogil:
    """One odd pseudo-random 64-bit weight per state (splitmix64 from a fixed seed)."""
    cdef uint64_t* weights = <uint64_t*>malloc(<size_t>(num_states + 1) * sizeof(uint64_t))
    cdef uint64_t x = 20261129
    cdef uint64_t z
    cdef int64_t s
    if weights == NULL:
        return NULL
    for s in range(num_states):
        x += <uint64_t>0x9E3779B97F4A7C15
        z = x
        z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
        weights[s] = (z ^ (z >> 31)) | 1
    return weights


cdef uint64_t _row_hash(const state_t* row, const uint64_t* weights, int64_t num_states) noexcept nogil:
    cdef uint64_t h = 0
    cdef int64_t s
    for s in range(num_states):
        h += <uint64_t>row[s] * weights[s]
    return _mix(h)


cdef inline uint64_t _compose_row(
    state_t* out,
    const state_t* source,
    const int32_t* source_support,
    int64_t source_size,
    const state_t* column,
    const uint64_t* weights,
    int64_t num_states,
) noexcept nogil:
    """``out[s] = column[source[s]]`` for every state (0 off the source's support, since the dead
    state leads nowhere); the hash of ``out`` (the zeros add nothing to it)."""
    cdef uint64_t h = 0
    cdef int64_t j
    cdef int32_t s
    cdef state_t value
    memset(out, 0, <size_t>num_states * sizeof(state_t))
    for j in range(source_size):
        s = source_support[j]
        value = column[source[s]]
        out[s] = value
        h += <uint64_t>value * weights[s]
    return _mix(h)


# ---------------------------------------------------------------------------------------------
# (map id, byte class) pairs -> composed map id: open addressing over int64 keys.


cdef struct PairTable:
    int64_t* keys  # -1 where empty
    int32_t* values
    int64_t count
    uint64_t mask


cdef int _pairs_init(PairTable* pairs) noexcept nogil:
    pairs.count = 0
    pairs.mask = 1023
    pairs.keys = <int64_t*>malloc(1024 * sizeof(int64_t))
    pairs.values = <int32_t*>malloc(1024 * sizeof(int32_t))
    if pairs.keys == NULL or pairs.values == NULL:
        return _NO_MEMORY
    memset(pairs.keys, 0xFF, 1024 * sizeof(int64_t))
    return 0


cdef void _pairs_free(PairTable* pairs) noexcept nogil:
    free(pairs.keys)
    free(pairs.values)
    pairs.keys = NULL
    pairs.values = NULL


cdef inline uint64_t _pair_slot(int64_t key, uint64_t mask) noexcept nogil:
    return ((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> 20) & mask


cdef inline int32_t _pairs_get(const PairTable* pairs, int64_t key) noexcept nogil:
    cdef uint64_t i = _pair_slot(key, pairs.mask)
    while pairs.keys[i] >= 0:
        if pairs.keys[i] == key:
            return pairs.values[i]
        i = (i + 1) & pairs.mask
    return -1


cdef int _pairs_put(PairTable* pairs, int64_t key, int32_t value) noexcept nogil:
    cdef int64_t* old_keys
    cdef int32_t* old_values
    cdef uint64_t old_size, j, i
    if 2 * (pairs.count + 1) > <int64_t>(pairs.mask + 1):
        old_keys = pairs.keys
        old_values = pairs.values
        old_size = pairs.mask + 1
        pairs.keys = <int64_t*>malloc(2 * old_size * sizeof(int64_t))
        pairs.values = <int32_t*>malloc(2 * old_size * sizeof(int32_t))
        if pairs.keys == NULL or pairs.values == NULL:
            free(old_keys)
            free(old_values)
            return _NO_MEMORY
        memset(pairs.keys, 0xFF, 2 * old_size * sizeof(int64_t))
        pairs.mask = 2 * old_size - 1
        for j in range(old_size):
            if old_keys[j] >= 0:
                i = _pair_slot(old_keys[j], pairs.mask)
                while pairs.keys[i] >= 0:
                    i = (i + 1) & pairs.mask
                pairs.keys[i] = old_keys[j]
                pairs.values[i] = old_values[j]
        free(old_keys)
        free(old_values)
    i = _pair_slot(key, pairs.mask)
    while pairs.keys[i] >= 0:
        i = (i + 1) & pairs.mask
    pairs.keys[i] = key
    pairs.values[i] = value
    pairs.count += 1
    return 0


# ---------------------------------------------------------------------------------------------
# Composition over the trie.


cdef int _compose_level(
    MapStore* store,
    PairTable* pairs,
    const state_t* columns,
    const int32_t* node_parent,
    const uint8_t* node_byte,
    const int32_t* byte_class,
    int64_t num_classes,
    int32_t* node_map,
    state_t* scratch,
    int32_t* scratch_support,
    const uint64_t* weights,
    int64_t low,
    int64_t high,
    int64_t* live,
) noexcept nogil:
    """Map ids of the nodes ``low:high`` (one trie level): 0, ``_OVER_LIMIT``, ``_NO_MEMORY``
    or ``BAD_INPUT`` (a parent that is not a smaller node id)."""
    cdef int64_t node, parent, key, byte_cls, first
    cdef int64_t num_states = store.num_states
    cdef int32_t parent_map, found
    cdef uint64_t h
    cdef int status
    live[0] = 0
    for node in range(low, high):
        parent = node_parent[node]
        if parent < 0 or parent >= node:
            return _BAD_INPUT
        parent_map = node_map[parent]
        if parent_map == 0:
            node_map[node] = 0
            continue
        live[0] += 1
        byte_cls = byte_class[node_byte[node]]
        key = <int64_t>parent_map * num_classes + byte_cls
        found = _pairs_get(pairs, key)
        if found < 0:
            first = store.support_start[parent_map]
            h = _compose_row(
                scratch,
                <const state_t*>(store.rows + parent_map * store.row_bytes),
                store.support + first,
                store.support_start[parent_map + 1] - first,
                columns + byte_cls * num_states,
                weights,
                num_states,
            )
            found = _store_find_or_append(store, scratch, h, scratch_support)
            if found < 0:
                return found
            status = _pairs_put(pairs, key, found)
            if status < 0:
                return status
        node_map[node] = found
    return 0


def compose_over_trie(
    const state_t[:, ::1] columns,
    const int32_t[::1] node_parent,
    const uint8_t[::1] node_byte,
    const int32_t[::1] byte_class,
    const int64_t[::1] level_offsets,
    int64_t max_cells,
    const state_t[::1] extra_row,
    on_level=None,
):
    """See the module docstring: ``(status, count, node_map, maps, extra_id)``."""
    cdef int64_t num_classes = columns.shape[0]
    cdef int64_t num_states = columns.shape[1]
    cdef int64_t num_nodes = node_parent.shape[0]
    cdef int64_t depth_count = level_offsets.shape[0]
    cdef int64_t row_bytes = num_states * sizeof(state_t)
    cdef int64_t s, c, d, low, high, live
    cdef int status = 0
    cdef int found
    cdef uint64_t h
    cdef MapStore store
    cdef PairTable pairs
    cdef uint64_t* weights = NULL
    cdef state_t* scratch = NULL
    cdef int32_t* scratch_support = NULL
    cdef const state_t* column_data
    cdef int32_t* node_data
    cdef state_t[:, ::1] maps_view

    # The backstop checks (the Python side has checked all of this with clear messages).
    if (
        num_states < 1
        or num_classes < 1
        or num_nodes < 1
        or node_byte.shape[0] != num_nodes
        or byte_class.shape[0] != 256
        or extra_row.shape[0] != num_states
        or depth_count < 2
        or level_offsets[0] != 0
        or level_offsets[1] != 1
        or level_offsets[depth_count - 1] != num_nodes
        or max_cells < 0
    ):
        return _BAD_INPUT, 0, None, None, -1
    for d in range(1, depth_count):
        if level_offsets[d] < level_offsets[d - 1]:
            return _BAD_INPUT, 0, None, None, -1
    for c in range(256):
        if byte_class[c] < 0 or byte_class[c] >= num_classes:
            return _BAD_INPUT, 0, None, None, -1
    for c in range(num_classes):
        for s in range(num_states):
            if columns[c, s] < 0 or columns[c, s] >= num_states:
                return _BAD_INPUT, 0, None, None, -1
    for s in range(num_states):
        if extra_row[s] < 0 or extra_row[s] >= num_states:
            return _BAD_INPUT, 0, None, None, -1

    node_map = np.zeros(num_nodes, dtype=np.int32)
    cdef int32_t[::1] node_map_view = node_map
    node_data = &node_map_view[0]
    node_data[0] = 1
    column_data = &columns[0, 0]
    store.rows = NULL
    store.hashes = NULL
    store.slots = NULL
    store.support = NULL
    store.support_start = NULL
    pairs.keys = NULL
    pairs.values = NULL
    try:
        with nogil:
            weights = _weights(num_states)
            scratch = <state_t*>malloc(<size_t>row_bytes)
            scratch_support = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
            if weights == NULL or scratch == NULL or scratch_support == NULL:
                status = _NO_MEMORY
            if status == 0:
                status = _store_init(&store, num_states, row_bytes, max_cells)
            if status == 0:
                status = _pairs_init(&pairs)
            if status == 0:  # the dead map 0 and the identity 1, both stored as they are
                memset(scratch, 0, <size_t>row_bytes)
                h = _row_hash(scratch, weights, num_states)
                found = _store_append(&store, <const char*>scratch, h, scratch_support, 0)
                for s in range(1, num_states):
                    scratch_support[s - 1] = <int32_t>s
                    scratch[s] = <state_t>s
                if found >= 0:
                    found = _store_append(
                        &store,
                        <const char*>scratch,
                        _row_hash(scratch, weights, num_states),
                        scratch_support,
                        num_states - 1,
                    )
                if found < 0:
                    status = found
        if status == _NO_MEMORY:
            raise MemoryError("token walk: no memory for the state maps")
        for d in range(1, depth_count - 1):
            low = level_offsets[d]
            high = level_offsets[d + 1]
            with nogil:
                status = _compose_level(
                    &store, &pairs, column_data, &node_parent[0], &node_byte[0], &byte_class[0],
                    num_classes, node_data, scratch, scratch_support, weights, low, high, &live,
                )
            if status == _NO_MEMORY:
                raise MemoryError("token walk: no memory for the state maps")
            if status == _OVER_LIMIT:
                return _LIMIT, store.count, None, None, -1
            if status != 0:
                return _BAD_INPUT, 0, None, None, -1
            if live == 0:
                break
            if on_level is not None:
                on_level(<double>high / <double>num_nodes)
        with nogil:
            h = _row_hash(&extra_row[0], weights, num_states)
            found = _store_find_or_append(&store, &extra_row[0], h, scratch_support)
        if found == _NO_MEMORY:
            raise MemoryError("token walk: no memory for the state maps")
        if found == _OVER_LIMIT:
            return _LIMIT, store.count, None, None, -1
        if state_t is uint16_t:
            maps = np.empty((store.count, num_states), dtype=np.uint16)
        else:
            maps = np.empty((store.count, num_states), dtype=np.int32)
        maps_view = maps
        memcpy(&maps_view[0, 0], store.rows, <size_t>(store.count * row_bytes))
        return _OK, store.count, node_map, maps, found
    finally:
        _store_free(&store)
        _pairs_free(&pairs)
        free(weights)
        free(scratch)
        free(scratch_support)


# ---------------------------------------------------------------------------------------------
# Mask packing.


cdef struct SizedClass:
    int64_t size
    int64_t cls


cdef int _bigger_first(const void* a, const void* b) noexcept nogil:
    cdef const SizedClass* x = <const SizedClass*>a
    cdef const SizedClass* y = <const SizedClass*>b
    if x.size != y.size:
        return -1 if x.size > y.size else 1
    return -1 if x.cls < y.cls else (1 if x.cls > y.cls else 0)


cdef inline void _flip_class(
    uint32_t* row, const int32_t* tokens, int64_t first, int64_t last
) noexcept nogil:
    cdef int64_t j
    cdef int32_t token
    for j in range(first, last):
        token = tokens[j]
        row[token >> 5] ^= (<uint32_t>1) << (token & 31)


cdef int _pack(
    const uint8_t* allowed,
    int64_t rows,
    int64_t classes,
    const class_t* token_class,
    int64_t vocab_size,
    uint32_t* out,
    int64_t words,
    int64_t window,
) noexcept nogil:
    """Fill ``out`` (zeroed): 0, ``BAD_INPUT`` (a token class out of range) or ``_NO_MEMORY``."""
    cdef int64_t* starts = <int64_t*>malloc(<size_t>(classes + 1) * sizeof(int64_t))
    cdef int32_t* tokens = <int32_t*>malloc(<size_t>(vocab_size + 1) * sizeof(int32_t))
    cdef SizedClass* order = <SizedClass*>malloc(<size_t>(classes + 1) * sizeof(SizedClass))
    cdef int64_t* fill = <int64_t*>malloc(<size_t>(classes + 1) * sizeof(int64_t))
    cdef uint32_t* full = <uint32_t*>malloc(<size_t>(words + 1) * sizeof(uint32_t))
    cdef uint8_t* pattern = NULL  # rows x used classes, biggest class first
    cdef int64_t* allowed_tokens = NULL
    cdef int64_t used = 0
    cdef int64_t r, k, t, c, p, first, best, cost, base
    cdef const uint8_t* mine
    cdef const uint8_t* theirs
    cdef uint32_t* row
    cdef uint8_t start_bit
    cdef int status = 0
    if starts == NULL or tokens == NULL or order == NULL or fill == NULL or full == NULL:
        status = _NO_MEMORY
    if status == 0:
        memset(starts, 0, <size_t>(classes + 1) * sizeof(int64_t))
        for t in range(vocab_size):
            c = token_class[t]
            if c < 0 or c >= classes:
                status = _BAD_INPUT
                break
            starts[c + 1] += 1
    if status == 0:
        for c in range(classes):
            if starts[c + 1] > 0:
                order[used].size = starts[c + 1]
                order[used].cls = c
                used += 1
            starts[c + 1] += starts[c]
            fill[c] = starts[c]
        for t in range(vocab_size):  # tokens by class, ascending within each class
            c = token_class[t]
            tokens[fill[c]] = <int32_t>t
            fill[c] += 1
        qsort(order, <size_t>used, sizeof(SizedClass), _bigger_first)
        pattern = <uint8_t*>malloc(<size_t>(rows * used + 1))
        allowed_tokens = <int64_t*>malloc(<size_t>(rows + 1) * sizeof(int64_t))
        if pattern == NULL or allowed_tokens == NULL:
            status = _NO_MEMORY
    if status == 0:
        for r in range(rows):
            cost = 0
            for k in range(used):
                start_bit = 1 if allowed[r * classes + order[k].cls] else 0
                pattern[r * used + k] = start_bit
                if start_bit:
                    cost += order[k].size
            allowed_tokens[r] = cost
        memset(full, 0xFF, <size_t>words * sizeof(uint32_t))
        if vocab_size % 32:
            full[words - 1] = ((<uint32_t>1) << (vocab_size % 32)) - 1
        for r in range(rows):
            # base: -1 no token, -2 every token, else an earlier row
            best = allowed_tokens[r]
            base = -1
            if vocab_size - allowed_tokens[r] < best:
                best = vocab_size - allowed_tokens[r]
                base = -2
            mine = pattern + r * used
            first = r - window if r > window else 0
            p = r - 1
            while p >= first and best > 0:
                theirs = pattern + p * used
                cost = 0
                for k in range(used):
                    if mine[k] != theirs[k]:
                        cost += order[k].size
                        if cost >= best:
                            break
                if cost < best:
                    best = cost
                    base = p
                p -= 1
            row = out + r * words
            if base == -2:
                memcpy(row, full, <size_t>words * sizeof(uint32_t))
            elif base >= 0:
                memcpy(row, out + base * words, <size_t>words * sizeof(uint32_t))
            for k in range(used):
                if base == -1:
                    start_bit = 0
                elif base == -2:
                    start_bit = 1
                else:
                    start_bit = pattern[base * used + k]
                if mine[k] != start_bit:
                    c = order[k].cls
                    _flip_class(row, tokens, starts[c], starts[c + 1])
    free(starts)
    free(tokens)
    free(order)
    free(fill)
    free(full)
    free(pattern)
    free(allowed_tokens)
    return status


def pack_masks(const uint8_t[:, ::1] allowed, const class_t[::1] token_class, Py_ssize_t window=32):
    """See the module docstring: ``(status, masks)``."""
    cdef int64_t rows = allowed.shape[0]
    cdef int64_t classes = allowed.shape[1]
    cdef int64_t vocab_size = token_class.shape[0]
    cdef int64_t words = (vocab_size + 31) // 32
    cdef int status = 0
    masks = np.zeros((rows, words), dtype=np.uint32)
    if rows == 0 or vocab_size == 0:
        return _OK, masks
    if classes == 0 or window < 0:
        return _BAD_INPUT, None
    cdef uint32_t[:, ::1] out = masks
    with nogil:
        status = _pack(&allowed[0, 0], rows, classes, &token_class[0], vocab_size, &out[0, 0], words, window)
    if status == _NO_MEMORY:
        raise MemoryError("token walk: no memory to pack the masks")
    if status != 0:
        return _BAD_INPUT, None
    return _OK, masks
