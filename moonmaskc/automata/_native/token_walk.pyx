# cython: language_level=3
"""Native token walk: state maps composed over a vocabulary trie, and packed token masks.

``compose_over_trie(columns, node_parent, node_byte, byte_class, level_offsets, max_cells,
extra_row, on_level, dense_pairs, group_of, group_home, group_loops, first_child)``
  Takes: ``columns`` (uint16 or int32 [byte classes, states]: ``columns[c, s]`` is the DFA's
  transition from ``s`` on byte class ``c``, state 0 dead), the trie's ``node_parent`` (int32[N],
  root -1, every other node's parent in the level above it), ``node_byte`` (uint8[N]), ``byte_class``
  (int32[256]), ``level_offsets`` (int64[depth + 2]), the bound ``max_cells`` on maps x states,
  ``extra_row`` (one more map to store once the trie is done, the eos map) and ``on_level`` (called
  with the fraction of nodes done after each level, or ``None``).
  Hands on: ``(status, count, node_map, maps, extra_id)``. With status ``OK``: ``node_map``
  (int32[N]) is the map id of every node (0 the dead map, which prunes its subtree; 1 the identity,
  the root's), ``maps`` (a ``StateMaps``) holds each distinct map once and ``extra_id`` is the id
  of ``extra_row``. With status ``LIMIT``: the store held ``count`` maps and needed room for more
  while ``count x states > max_cells`` (the same test as the numpy map store, on the same growth
  schedule: 64 maps, doubled). With status ``BAD_INPUT``: an array broke the contract above (the
  Python side validates first; this is the backstop).
  Each distinct (map, byte class) pair is composed once (a table of pairs: dense, indexed by the
  map id times the classes plus the class, up to ``dense_pairs`` entries, then hashed; tests set it
  small: a level's nodes come parent by parent, so the dense table's lookups are neighbours, the
  hashed one's scattered; 30% less time for ``tool_call.json``'s GPT-2 table); a level's new pairs
  are composed byte class by byte class, so that one transition column serves many compositions
  from cache. Maps are kept sparse: the states a map keeps alive (its support, ascending) and its
  targets there. A child's support is part of its parent's (the dead state leads nowhere), so
  composing, hashing and comparing a map costs its parent's support, not every state; a composed
  map is found among the stored ones by its hash, then compared in full (support and targets). Map
  ids follow the order of composition (the token classes do not depend on it).
  Optionally ``first_child`` (int32[N + 1]: the children of node ``p`` are the nodes
  ``first_child[p]:first_child[p + 1]``, in the level below it; the last entry ``N``): each level
  then visits only the children of the live nodes of the level above, not every node, where
  fewer than a quarter of the level above are live, so a small DFA's walk costs what its live
  prefixes do (the ``{"type": "integer"}`` walk over GPT-2's 98,000 nodes, 1,000 of them live:
  110 -> 15 us); where most are live, the whole level (a mispredicted branch per parent would
  cost more). The same maps and ids. A range outside the level below, or a child whose parent is
  not the node, is ``BAD_INPUT``.
  Optionally *loop groups* (all three or none): ``group_of`` (int32[states], each state's group,
  -1 outside every group, state 0 outside), ``group_home`` (int32[states], each grouped state's
  home: a live state, in this group, in another or in none) and ``group_loops`` (uint8[groups, classes],
  1 to 64 groups, each with a state: the classes that keep every home of the group in place; from
  ``home_states`` through ``moonmaskc.token_classes.loop_groups``). A map then holds "the states
  of this group that it does not list go home" as one bit, set exactly when at least half of them
  do (see "Loop groups" below), so that the inside of a string, which keeps most of the trie
  alive, costs a bit instead of an entry per string in every map. The maps, their ids and the
  compact table are the same as without groups.

``StateMaps.stored(map_id)``
  The stored form of one map, ``(support, targets, implicit)``: its listed states, their targets
  and the bits of its implicit groups (see "Loop groups"); None for an id outside the store.

``StateMaps.compact_table(map_ids, block_bytes)``
  Takes: ``map_ids`` (int64[k], every id below ``count``; map ``map_ids[j]`` is class ``j``) and
  the bytes of next states and classes written together (a block; tests set it small).
  Hands on: ``(status, state_row, row_class_offsets, row_classes, next_offsets, next_states)``, the
  compact next-state table (``moonmaskc.next_table``) of those classes, with no [states, k] array
  on the way: ``next_offsets`` (int64[states + 1]) from one count over the maps' supports; then,
  a block of states at a time (small enough to stay in cache, one cursor per map walking its
  support), each state's classes (ascending) and targets (the columns' dtype), and its row: the
  distinct class lists, found by hash and compared in full, numbered by their first state
  (``state_row`` int32[states], ``row_class_offsets`` int64[rows + 1], ``row_classes`` int32).
  Status ``BAD_INPUT`` (the arrays ``None``) for an id out of range.

``pack_masks(allowed, token_class, window)``
  Takes: ``allowed`` (uint8[rows, classes], 0 or 1: the classes each row allows) and
  ``token_class`` (uint16 or int32 [vocab], every value below ``classes``).
  Hands on: ``(status, masks)``, ``masks`` uint32[rows, words] with bit ``t % 32`` of word
  ``t // 32`` set when ``allowed[row, token_class[t]]``; bits past the vocabulary are 0.
  Each row starts from the cheapest of: no token, every token, or one of the ``window`` rows
  before it; then the bits of every class on which the row and its start differ are flipped
  (classes hold disjoint tokens). The cost of a start is the number of tokens to flip.

``pack_row_masks(row_offsets, row_classes, classes, token_class, window)``
  ``pack_masks`` with each row's classes as a list (a compact next-state table's
  ``row_class_offsets`` int64[rows + 1] and ``row_classes`` int32, every class below ``classes``;
  a class listed twice counts once) instead of a rows x classes array. Status ``BAD_INPUT`` (the
  masks ``None``) for an offset or a class out of range.

``classes_by_first_token(node_map, node_of_token, eos_id, eos_map, map_count)``
  Takes: the map of every trie node (``compose_over_trie``'s ``node_map``), the node of every token
  of the vocabulary (int32, -1 for a token at no node), the eos token and its map, and the number
  of maps.
  Hands on: ``(status, token_class, class_maps)``: the map of each token (0, the dead map, for a
  token that ends at no node) gives its class; class 0 is the dead map and the others are numbered
  by their first token. ``token_class`` is int32[vocab], ``class_maps`` int64[classes] the map of
  each class. Status ``BAD_INPUT`` (the arrays ``None``) for an index out of range.

``state_columns(table, narrow)``
  Takes: a DFA's transitions ``table`` (int32[states, classes]) and whether the states fit 16 bits.
  Hands on: ``(status, columns)``, the table transposed (``columns[c, s] = table[s, c]``), uint16
  when ``narrow`` else int32, what ``compose_over_trie`` takes. Copied in square tiles, so that
  both sides stay in cache (numpy's strided transpose and cast took 24 ms on 55,000 states x 71
  classes). Status ``BAD_INPUT`` (``columns`` ``None``) for a target outside ``[0, states)``, or
  past 16 bits when ``narrow``.

``home_states(table, byte_class, least, fewest_homes)``
  Takes: a DFA's transitions ``table`` (int32[states, classes], at most 256 classes), its
  ``byte_class`` (int32[256]), a number of bytes and of homes (with fewer homes than
  ``fewest_homes``, no state but a home gets one: the caller groups nothing so small). Hands on: ``(status, home)``, ``home``
  int32[states]: a state that at least ``least`` bytes lead back to itself is its own home (the
  inside of a string); another state's home is a home that at least three quarters of the
  bytes that keep it in place lead to from the state (the one the most lead to, the smallest on
  a tie: a string's first character, a key being spelled); -1 elsewhere (state 0 included). What
  picks ``compose_over_trie``'s loop groups. Status ``BAD_INPUT`` (``home`` ``None``) for a byte
  class outside the table's columns or a target outside the states.

``grouped_homes(table, byte_class, least, fewest_homes, depth)``
  ``home_states``, and the states *inside* the homes, from one pass over the table (the live bytes
  of every state kept as a list, which the rest reads). Hands on: ``(status, home, inside_home,
  signature)``: ``home`` as ``home_states`` gives it; ``inside_home`` is ``home`` with the states
  inside a home given that home too; ``signature`` (uint64[states]) 0 but at those states, where
  it is a hash (top bit set) of what each class does there: dies, leads to the home itself, or
  leads to another state of the home. Level by level, up to ``depth`` levels, a state without a
  home gets home ``h`` when every live byte leads to a state whose home (as the levels before
  found it) is ``h``, and one of them to ``h`` itself or to a state that got ``h`` at a level
  before; of those, the states that ``h`` reaches through such states keep it: the states of a
  string's escapes and multi-byte characters, not those that can only open the string (see
  ``moonmaskc.token_classes.loop_groups``). None are inside with fewer homes than
  ``fewest_homes``. Status ``BAD_INPUT`` (the arrays ``None``) as for ``home_states``.

``fewest_steps(next_offsets, next_states, state_row, row_class_offsets, row_classes, usable, accepting)``
  Takes: a compact next-state table (``moonmaskc.next_table``), the classes that may move the
  text on (uint8[classes], 0 or 1) and the accepting states (uint8[states]).
  Hands on: ``(status, steps)``, ``steps`` int32[states]: what
  ``moonmaskc.runtime_budget.fewest_tokens_to_eos`` computes with numpy (1 at an accepting state,
  else 1 + the least over the states one usable class leads to; -1 where none, 0 for the dead
  state), by a breadth-first search over the distinct reverse edges. Status ``BAD_INPUT``
  (``steps`` ``None``) for an offset, row, class or state out of range.

All release the GIL while they work. No negative indexing anywhere (the checked build turns
bounds and wraparound checks on).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MOONMASKC_PREFETCH(address) __builtin_prefetch(address)
    #else
    #define MOONMASKC_PREFETCH(address) ((void)0)
    #endif
    """
    void _prefetch "MOONMASKC_PREFETCH"(const void* address) noexcept nogil

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MOONMASKC_LOWEST_BIT(x) __builtin_ctzll(x)
    #else
    static int MOONMASKC_LOWEST_BIT(unsigned long long x) { int i = 0; while (!((x >> i) & 1)) i++; return i; }
    #endif
    """
    int _lowest_bit "MOONMASKC_LOWEST_BIT"(uint64_t x) noexcept nogil

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MOONMASKC_NOINLINE __attribute__((noinline))
    #else
    #define MOONMASKC_NOINLINE
    #endif
    /* The composition over a small DFA (its weights a table; see _compose), kept out of line and
       with restrict pointers so that the loop keeps every pointer in a register. */
    #define MOONMASKC_COMPOSE_SMALL(NAME, STATE)                                                 \
    static MOONMASKC_NOINLINE uint64_t NAME(                                                     \
        const int32_t* __restrict support, const STATE* __restrict targets, int64_t size,        \
        const STATE* __restrict column, const uint64_t* __restrict weights,                      \
        int32_t* __restrict out_support, STATE* __restrict out_targets, int64_t* out_size) {     \
        uint64_t h = 0;                                                                          \
        int64_t kept = 0;                                                                        \
        for (int64_t j = 0; j < size; j++) {                                                     \
            int32_t s = support[j];                                                              \
            STATE target = column[targets[j]];                                                   \
            out_support[kept] = s;                                                               \
            out_targets[kept] = target;                                                          \
            h += (uint64_t)target * weights[s];                                                  \
            kept += target != 0;                                                                 \
        }                                                                                        \
        *out_size = kept;                                                                        \
        return h;                                                                                \
    }
    MOONMASKC_COMPOSE_SMALL(moonmaskc_compose_small_u16, uint16_t)
    MOONMASKC_COMPOSE_SMALL(moonmaskc_compose_small_i32, int32_t)

    /* How many of `count` map ids are not the dead map 0: of `node_map[0:count]`, or of
       `node_map[nodes[j]]` for the `count` listed nodes. Out of line, so that the count stays in
       a register (inlined into the walk, it was kept on the stack: a store-to-load chain per
       node, 200 us over GPT-2's trie). */
    static MOONMASKC_NOINLINE int64_t moonmaskc_live_range(const int32_t* node_map, int64_t count) {
        int64_t live = 0;
        for (int64_t j = 0; j < count; j++) live += node_map[j] != 0;
        return live;
    }
    static MOONMASKC_NOINLINE int64_t moonmaskc_live_listed(
        const int32_t* node_map, const int32_t* nodes, int64_t count) {
        int64_t live = 0;
        for (int64_t j = 0; j < count; j++) live += node_map[nodes[j]] != 0;
        return live;
    }

    /* The live bytes of one table row (state `s`, `k` classes): each class with a target other
       than 0 and that target, written to `classes` and `targets`; the count is returned. Sets
       `*looping` to the bytes (per `class_bytes`) that lead back to `s`, and `*outside` when a
       target is not below `bound` (a negative one wraps past it). Eight classes are skipped at
       once when all are dead, as most are. */
    static int64_t moonmaskc_row_edges(
        const int32_t* __restrict row, int64_t k, int64_t s, uint32_t bound,
        const int64_t* __restrict class_bytes, uint8_t* __restrict classes,
        int32_t* __restrict targets, int64_t* looping, uint32_t* outside) {
        int64_t e = 0, count = 0, c = 0;
        uint32_t bad = 0;
        for (; c < k; c++) {
            if ((c & 7) == 0 && c + 8 <= k) {
                uint64_t a, b, x, y;
                memcpy(&a, row + c, 8);
                memcpy(&b, row + c + 2, 8);
                memcpy(&x, row + c + 4, 8);
                memcpy(&y, row + c + 6, 8);
                if ((a | b | x | y) == 0) {
                    c += 7;
                    continue;
                }
            }
            int32_t t = row[c];
            if (t != 0) {
                bad |= (uint32_t)t >= bound;
                classes[e] = (uint8_t)c;
                targets[e] = t;
                e++;
                if (t == s) count += class_bytes[c];
            }
        }
        *looping = count;
        *outside |= bad;
        return e;
    }

    /* Which of eight 0/1 bytes of two patterns differ (a nonzero byte each), and the first of
       them in such a word. */
    static inline uint64_t moonmaskc_differing(const uint8_t* mine, const uint8_t* theirs) {
        uint64_t a, b;
        memcpy(&a, mine, 8);
        memcpy(&b, theirs, 8);
        return a ^ b;
    }
    static inline int moonmaskc_first_byte(uint64_t differ) {
    #if defined(__GNUC__) || defined(__clang__)
        return __builtin_ctzll(differ) >> 3;
    #else
        int byte = 0;
        while (!((differ >> (8 * byte)) & 0xFF)) byte++;
        return byte;
    #endif
    }

    /* Flip in `row` the tokens of every class on which the patterns `mine` and `theirs` differ
       (0/1 bytes, `stride` of them, a multiple of 8; byte k is class class_at[k], whose tokens
       are tokens[starts[c]:starts[c + 1]]), found eight classes at a time. */
    static MOONMASKC_NOINLINE void moonmaskc_flip_differing(
        uint32_t* __restrict row, const uint8_t* mine, const uint8_t* theirs, int64_t stride,
        const int64_t* __restrict class_at, const int64_t* __restrict starts,
        const int32_t* __restrict tokens) {
        for (int64_t chunk = 0; chunk < stride; chunk += 8) {
            uint64_t differ = moonmaskc_differing(mine + chunk, theirs + chunk);
            while (differ) {
                int64_t c = class_at[chunk + moonmaskc_first_byte(differ)];
                for (int64_t j = starts[c]; j < starts[c + 1]; j++) {
                    int32_t token = tokens[j];
                    row[token >> 5] ^= (uint32_t)1 << (token & 31);
                }
                differ &= differ - 1;
            }
        }
    }

    /* The tokens to flip from the pattern `theirs` to `mine` (0/1 bytes, `stride` of them, a
       multiple of 8, zero past the classes): the sum of `sizes` where they differ, compared eight
       classes at a time; stops as soon as the sum reaches `best`. */
    static MOONMASKC_NOINLINE int64_t moonmaskc_flip_cost(
        const uint8_t* mine, const uint8_t* theirs, int64_t stride, const int64_t* sizes,
        int64_t best) {
        int64_t cost = 0;
        for (int64_t chunk = 0; chunk < stride; chunk += 8) {
            uint64_t differ = moonmaskc_differing(mine + chunk, theirs + chunk);
            while (differ) {
                cost += sizes[chunk + moonmaskc_first_byte(differ)];
                if (cost >= best) return cost;
                differ &= differ - 1;
            }
        }
        return cost;
    }
    """
    uint64_t _compose_small_u16 "moonmaskc_compose_small_u16"(
        const int32_t* support, const uint16_t* targets, int64_t size, const uint16_t* column,
        const uint64_t* weights, int32_t* out_support, uint16_t* out_targets, int64_t* out_size,
    ) noexcept nogil
    int64_t _live_range "moonmaskc_live_range"(const int32_t* node_map, int64_t count) noexcept nogil
    int64_t _live_listed "moonmaskc_live_listed"(
        const int32_t* node_map, const int32_t* nodes, int64_t count
    ) noexcept nogil
    int64_t _row_edges "moonmaskc_row_edges"(
        const int32_t* row, int64_t k, int64_t s, uint32_t bound, const int64_t* class_bytes,
        uint8_t* classes, int32_t* targets, int64_t* looping, uint32_t* outside
    ) noexcept nogil
    void _flip_differing "moonmaskc_flip_differing"(
        uint32_t* row, const uint8_t* mine, const uint8_t* theirs, int64_t stride,
        const int64_t* class_at, const int64_t* starts, const int32_t* tokens
    ) noexcept nogil
    int64_t _flip_cost "moonmaskc_flip_cost"(
        const uint8_t* mine, const uint8_t* theirs, int64_t stride, const int64_t* sizes, int64_t best
    ) noexcept nogil
    uint64_t _compose_small_i32 "moonmaskc_compose_small_i32"(
        const int32_t* support, const int32_t* targets, int64_t size, const int32_t* column,
        const uint64_t* weights, int32_t* out_support, int32_t* out_targets, int64_t* out_size,
    ) noexcept nogil

cdef enum:
    _OK = 0
    _LIMIT = 1
    _BAD_INPUT = 2
    _FIRST_CAPACITY = 64
    _PREFETCH_AHEAD = 16  # entries: a composition asks for a column's cache line this far ahead
    # The next states (and their classes) written together: every map's cursor sweeps the block,
    # so it should stay in a core's L2 cache. 512 KiB against 4 MiB before: 22-35% less time on
    # four schemas' tables (1 MiB L2 a core here).
    _TABLE_BLOCK_BYTES = 524288
    _DENSE_PAIR_ENTRIES = 4194304  # (map, byte class) pairs kept in a dense table up to this (16 MiB)
    _WEIGHT_TABLE_STATES = 16384  # up to this many states, the weights are a table (128 KiB)
    _NO_MEMORY = -2
    _OVER_LIMIT = -1
    _ABSENT = -1  # a pair not in the pair table
    _PENDING = -2  # the first pair of the current level not composed yet (the next one -3, ...)

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
# The map store: sparse maps (support and targets), found by hash (open addressing over map ids).


cdef struct MapStore:
    int32_t* support  # the states each map keeps alive (not sent to 0), ascending, map after map
    char* targets  # each map's targets on its support, ``target_size`` bytes each, map after map
    int64_t* support_start  # where each map starts in ``support`` and ``targets`` [capacity + 1]
    int64_t entry_capacity  # room (entries) in ``support`` and ``targets``
    int64_t target_size
    uint64_t* hashes  # the hash of each stored map
    int64_t count
    int64_t capacity  # grows like the numpy store's rows (64, doubled): the limit test's schedule
    int64_t num_states
    int64_t max_cells
    int32_t* slots  # map ids, -1 where empty
    uint64_t slot_mask
    # Loop groups (see "Loop groups" below): bit ``g`` of ``implicit[map]`` set when the map sends
    # the states of group ``g`` that it does not list to their homes.
    uint64_t* implicit  # [capacity]
    int64_t group_count
    int64_t* member_start  # [group_count + 1]
    int32_t* members  # each group's states, ascending, group after group
    int32_t* home  # [states]: the home of each state of a group (see "Loop groups")


cdef inline uint64_t _mix(uint64_t h) noexcept nogil:
    h ^= h >> 31
    h *= <uint64_t>0x9E3779B97F4A7C15
    h ^= h >> 29
    h *= <uint64_t>0xBF58476D1CE4E5B9
    h ^= h >> 32
    return h


cdef void _store_clear(MapStore* store) noexcept nogil:
    """An empty store owning nothing (safe to free, holds no map)."""
    memset(store, 0, sizeof(MapStore))


cdef int _store_init(
    MapStore* store, int64_t num_states, int64_t target_size, int64_t max_cells
) noexcept nogil:
    store.count = 0
    store.capacity = _FIRST_CAPACITY
    store.target_size = target_size
    store.num_states = num_states
    store.max_cells = max_cells
    store.entry_capacity = 2 * num_states + 64
    store.support = <int32_t*>malloc(<size_t>store.entry_capacity * sizeof(int32_t))
    store.targets = <char*>malloc(<size_t>(store.entry_capacity * target_size))
    store.hashes = <uint64_t*>malloc(_FIRST_CAPACITY * sizeof(uint64_t))
    store.slots = <int32_t*>malloc(4 * _FIRST_CAPACITY * sizeof(int32_t))
    store.slot_mask = 4 * _FIRST_CAPACITY - 1
    store.support_start = <int64_t*>malloc((_FIRST_CAPACITY + 1) * sizeof(int64_t))
    store.implicit = <uint64_t*>malloc(_FIRST_CAPACITY * sizeof(uint64_t))
    if (
        store.support == NULL
        or store.targets == NULL
        or store.hashes == NULL
        or store.slots == NULL
        or store.support_start == NULL
        or store.implicit == NULL
    ):
        return _NO_MEMORY
    memset(store.slots, 0xFF, 4 * _FIRST_CAPACITY * sizeof(int32_t))
    store.support_start[0] = 0
    return 0


cdef void _store_free(MapStore* store) noexcept nogil:
    free(store.support)
    free(store.targets)
    free(store.support_start)
    free(store.hashes)
    free(store.slots)
    free(store.implicit)
    free(store.member_start)
    free(store.members)
    free(store.home)
    _store_clear(store)


cdef void _slot_insert(MapStore* store, int32_t map_id) noexcept nogil:
    cdef uint64_t i = store.hashes[map_id] & store.slot_mask
    while store.slots[i] >= 0:
        i = (i + 1) & store.slot_mask
    store.slots[i] = map_id


cdef int _store_append(
    MapStore* store, const int32_t* support, const char* targets, int64_t size, uint64_t h,
    uint64_t implicit,
) noexcept nogil:
    """Append the map alive on ``support`` (``size`` states, ascending) with ``targets`` there and
    the groups ``implicit`` (hash ``h``) unconditionally: its id, ``_OVER_LIMIT`` or ``_NO_MEMORY``."""
    cdef int64_t capacity, grown, i, used
    cdef uint64_t* hashes
    cdef uint64_t* implicit_bits
    cdef int32_t* slots
    cdef int32_t* grown_support
    cdef char* grown_targets
    cdef int64_t* starts
    if store.count == store.capacity:
        if store.count * store.num_states > store.max_cells:
            return _OVER_LIMIT
        if store.capacity >= (1 << 30):
            return _NO_MEMORY
        capacity = 2 * store.capacity
        hashes = <uint64_t*>realloc(store.hashes, <size_t>capacity * sizeof(uint64_t))
        if hashes == NULL:
            return _NO_MEMORY
        store.hashes = hashes
        starts = <int64_t*>realloc(store.support_start, <size_t>(capacity + 1) * sizeof(int64_t))
        if starts == NULL:
            return _NO_MEMORY
        store.support_start = starts
        implicit_bits = <uint64_t*>realloc(store.implicit, <size_t>capacity * sizeof(uint64_t))
        if implicit_bits == NULL:
            return _NO_MEMORY
        store.implicit = implicit_bits
        store.capacity = capacity
    used = store.support_start[store.count]
    if used + size > store.entry_capacity:
        grown = 2 * store.entry_capacity
        while used + size > grown:
            grown *= 2
        grown_support = <int32_t*>realloc(store.support, <size_t>grown * sizeof(int32_t))
        if grown_support == NULL:
            return _NO_MEMORY
        store.support = grown_support
        grown_targets = <char*>realloc(store.targets, <size_t>(grown * store.target_size))
        if grown_targets == NULL:
            return _NO_MEMORY
        store.targets = grown_targets
        store.entry_capacity = grown
    if 2 * (store.count + 1) > <int64_t>(store.slot_mask + 1):
        grown = 2 * <int64_t>(store.slot_mask + 1)
        slots = <int32_t*>realloc(store.slots, <size_t>grown * sizeof(int32_t))
        if slots == NULL:
            return _NO_MEMORY
        memset(slots, 0xFF, <size_t>grown * sizeof(int32_t))
        store.slots = slots
        store.slot_mask = <uint64_t>(grown - 1)
        for i in range(store.count):
            _slot_insert(store, <int32_t>i)
    memcpy(store.support + used, support, <size_t>size * sizeof(int32_t))
    memcpy(store.targets + used * store.target_size, targets, <size_t>(size * store.target_size))
    store.support_start[store.count + 1] = used + size
    store.hashes[store.count] = h
    store.implicit[store.count] = implicit
    _slot_insert(store, <int32_t>store.count)
    store.count += 1
    return <int>(store.count - 1)


cdef int _store_find_or_append(
    MapStore* store, const int32_t* support, const char* targets, int64_t size, uint64_t h,
    uint64_t implicit,
) noexcept nogil:
    """The id of the stored map equal to the given one (same support, same targets, same implicit
    groups), appending it when there is none."""
    cdef uint64_t i = h & store.slot_mask
    cdef int32_t candidate
    cdef int64_t first
    while True:
        candidate = store.slots[i]
        if candidate < 0:
            return _store_append(store, support, targets, size, h, implicit)
        if store.hashes[candidate] == h and store.implicit[candidate] == implicit:
            first = store.support_start[candidate]
            if (
                store.support_start[candidate + 1] - first == size
                and memcmp(store.support + first, support, <size_t>size * sizeof(int32_t)) == 0
                and memcmp(
                    store.targets + first * store.target_size, targets, <size_t>(size * store.target_size)
                ) == 0
            ):
                return candidate
        i = (i + 1) & store.slot_mask


cdef inline uint64_t _weight(int64_t state) noexcept nogil:
    """A pseudo-random 64-bit weight of ``state``: a map's hash mixes the sum of ``target x weight``
    over its entries (a dead target adds nothing). Computed, not looked up: a table of weights as
    long as the states would miss the cache on a large DFA."""
    cdef uint64_t x = <uint64_t>(state + 1) * <uint64_t>0x9E3779B97F4A7C15
    return x ^ (x >> 29)


cdef uint64_t _sparse_row(
    const state_t* row,
    int64_t num_states,
    int32_t* out_support,
    state_t* out_targets,
    int64_t* out_size,
) noexcept nogil:
    """The support and targets of the dense ``row``; its hash."""
    cdef uint64_t h = 0
    cdef int64_t s
    cdef int64_t size = 0
    for s in range(num_states):
        if row[s] != 0:
            out_support[size] = <int32_t>s
            out_targets[size] = row[s]
            size += 1
            h += <uint64_t>row[s] * _weight(s)
    out_size[0] = size
    return _mix(h)


cdef uint64_t _compose(
    const int32_t* support,
    const state_t* targets,
    int64_t size,
    const state_t* column,
    const uint64_t* weights,
    int32_t* out_support,
    state_t* out_targets,
    int64_t* out_size,
) noexcept nogil:
    """The map ``s -> column[map(s)]`` of the map alive on ``support`` (``size`` states) with
    ``targets`` there: its support (the states whose target stays alive, still ascending), its
    targets and its hash. Branch-free: every state is written, and kept when its target is not 0.
    ``weights`` (``_weight`` of every state) is given for a DFA small enough that it and the column
    stay in cache, ``NULL`` otherwise (the weights are computed and the column prefetched)."""
    cdef uint64_t h = 0
    cdef int64_t j
    cdef int64_t kept = 0
    cdef int32_t s
    cdef state_t target
    if weights != NULL:
        if state_t is uint16_t:
            h = _compose_small_u16(support, targets, size, column, weights, out_support, out_targets, out_size)
        else:
            h = _compose_small_i32(support, targets, size, column, weights, out_support, out_targets, out_size)
        return _mix(h)
    for j in range(size):
        if j + _PREFETCH_AHEAD < size:
            _prefetch(column + targets[j + _PREFETCH_AHEAD])
        s = support[j]
        target = column[targets[j]]
        out_support[kept] = s
        out_targets[kept] = target
        h += <uint64_t>target * _weight(s)
        kept += target != 0
    out_size[0] = kept
    return _mix(h)


# Loop groups: the states a string's inside leads to, kept implicit in the maps.
#
# A group's *homes* are states that every byte of the group's looping classes leads back to
# themselves (the inside of a string); its other states are *lead-ins*, each with its home (the
# state most of its bytes lead to: the first character of a string, a key being spelled), or
# states *inside* a home (an escape or a multi-byte character of the string), grouped apart from
# their home by what their bytes do, so the home is then in another group. A map
# with the group's bit set sends each of the group's states to its home unless the map lists it
# (an *override*, whose target may be 0); without the bit it lists the states it keeps alive, as
# any other. The bit is set exactly when at least half of the group's states go home, so that
# equal maps are stored alike. A looping class keeps every home in place: it keeps the bit, and
# composes only the overrides.


cdef struct Grouping:
    const int32_t* group_of  # [states]: the group of each state, -1 outside every group
    const uint64_t* stay  # [classes]: the groups whose homes every byte of the class keeps in place
    int64_t* count  # [groups], zero between compositions: states of the group that a map sends home
    int32_t* touched  # [groups]: the groups counted in ``count``
    int64_t* stamp  # [states]: ``epoch`` where ``value`` holds the composed target of a state
    int32_t* value  # [states]
    int64_t epoch
    int32_t* spare_support  # [states], and the next: where merges write
    char* spare_targets


cdef int _grouping_init(
    MapStore* store,
    Grouping* grouping,
    const int32_t* group_of,
    const int32_t* group_home,
    const uint8_t* group_loops,
    int64_t group_count,
    int64_t num_classes,
    int64_t target_size,
) noexcept nogil:
    """The store's groups (``member_start``, ``members``, ``home``) and the composition's
    ``grouping`` (``stay`` per byte class and the scratch arrays) from checked ``group_of``,
    ``group_home`` and ``group_loops``: 0 or ``_NO_MEMORY``."""
    cdef int64_t s, g, c
    cdef int64_t num_states = store.num_states
    cdef uint64_t* stay
    grouping.group_of = group_of
    stay = <uint64_t*>calloc(<size_t>num_classes, sizeof(uint64_t))
    grouping.stay = stay
    grouping.count = <int64_t*>calloc(<size_t>group_count, sizeof(int64_t))
    grouping.touched = <int32_t*>malloc(<size_t>group_count * sizeof(int32_t))
    grouping.stamp = <int64_t*>calloc(<size_t>num_states, sizeof(int64_t))
    grouping.value = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
    grouping.epoch = 0
    grouping.spare_support = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
    grouping.spare_targets = <char*>malloc(<size_t>(num_states * target_size))
    store.member_start = <int64_t*>calloc(<size_t>(group_count + 1), sizeof(int64_t))
    store.members = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
    store.home = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
    if (
        stay == NULL
        or grouping.count == NULL
        or grouping.touched == NULL
        or grouping.stamp == NULL
        or grouping.value == NULL
        or grouping.spare_support == NULL
        or grouping.spare_targets == NULL
        or store.member_start == NULL
        or store.members == NULL
        or store.home == NULL
    ):
        return _NO_MEMORY
    store.group_count = group_count
    memcpy(store.home, group_home, <size_t>num_states * sizeof(int32_t))
    for g in range(group_count):
        for c in range(num_classes):
            if group_loops[g * num_classes + c]:
                stay[c] |= (<uint64_t>1) << g
    for s in range(num_states):
        if group_of[s] >= 0:
            store.member_start[group_of[s] + 1] += 1
    for g in range(group_count):
        store.member_start[g + 1] += store.member_start[g]
    for s in range(num_states):  # (members ascending: a counting sort by group)
        g = group_of[s]
        if g >= 0:
            store.members[store.member_start[g]] = <int32_t>s
            store.member_start[g] += 1
    for g in range(group_count, 0, -1):
        store.member_start[g] = store.member_start[g - 1]
    store.member_start[0] = 0
    return 0


cdef void _grouping_free(Grouping* grouping) noexcept nogil:
    free(<void*>grouping.stay)
    free(grouping.count)
    free(grouping.touched)
    free(grouping.stamp)
    free(grouping.value)
    free(grouping.spare_support)
    free(grouping.spare_targets)
    memset(grouping, 0, sizeof(Grouping))


cdef inline uint64_t _grouped_sum(
    const int32_t* support, const state_t* targets, int64_t size, const uint64_t* weights
) noexcept nogil:
    """The sum that a map's hash in a store with groups mixes: ``(target + 1) x weight`` over
    its entries (an override to 0 counts too)."""
    cdef uint64_t h = 0
    cdef int64_t j
    if weights != NULL:
        for j in range(size):
            h += (<uint64_t>targets[j] + 1) * weights[support[j]]
    else:
        for j in range(size):
            h += (<uint64_t>targets[j] + 1) * _weight(support[j])
    return h


cdef inline uint64_t _grouped_hash(uint64_t total, uint64_t implicit) noexcept nogil:
    return _mix(total + implicit * <uint64_t>0xD6E8FEB86659FD93)


cdef inline state_t _member_target(
    const MapStore* store, const Grouping* grouping, int32_t p, bint spread, const state_t* column
) noexcept nogil:
    """The composed target of group state ``p`` (see ``_merge_group``)."""
    if grouping.stamp[p] == grouping.epoch:
        return <state_t>grouping.value[p]
    if spread:
        return column[store.home[p]]
    return 0


cdef int64_t _merge_group(
    const MapStore* store,
    Grouping* grouping,
    int64_t g,
    bint spread,
    const state_t* column,
    const int32_t* support,
    const state_t* targets,
    int64_t size,
    int32_t* out_support,
    state_t* out_targets,
    uint64_t* implicit,
) noexcept nogil:
    """Group ``g``'s states merged into the entries ``support`` / ``targets`` (none of them in the
    group), written to ``out_*``: each state's composed target is ``value`` where stamped, else
    ``column[home]`` when the parent sent it home (``spread``), else 0. Sets the group's bit in
    ``implicit`` when at least half of them go home (listing the others, 0 included), else lists
    those alive. Gives the merged size."""
    cdef int64_t member, at = 0, merged = 0, home_count = 0
    cdef int64_t member_end = store.member_start[g + 1]
    cdef int32_t p
    cdef state_t target
    cdef bint listed
    for member in range(store.member_start[g], member_end):
        p = store.members[member]
        home_count += <int64_t>_member_target(store, grouping, p, spread, column) == store.home[p]
    cdef bint goes_home = 2 * home_count >= member_end - store.member_start[g]
    if goes_home:
        implicit[0] |= (<uint64_t>1) << g
    for member in range(store.member_start[g], member_end):
        p = store.members[member]
        while at < size and support[at] < p:
            out_support[merged] = support[at]
            out_targets[merged] = targets[at]
            merged += 1
            at += 1
        target = _member_target(store, grouping, p, spread, column)
        if goes_home:
            listed = <int64_t>target != store.home[p]
        else:
            listed = target != 0
        if listed:
            out_support[merged] = p
            out_targets[merged] = target
            merged += 1
    while at < size:
        out_support[merged] = support[at]
        out_targets[merged] = targets[at]
        merged += 1
        at += 1
    return merged


cdef int64_t _merge_groups(
    const MapStore* store,
    Grouping* grouping,
    uint64_t groups,
    uint64_t spread,
    const state_t* column,
    int32_t** support,
    state_t** targets,
    int32_t** spare_support,
    state_t** spare_targets,
    int64_t size,
    uint64_t* implicit,
) noexcept nogil:
    """Each group of ``groups`` merged in turn (``_merge_group``; ``spread``: those the parent
    sent home) into the ``size`` entries at ``support[0]`` / ``targets[0]``, each result written
    to the spare arrays and the pointers swapped, so that ``support[0]`` / ``targets[0]`` hold the
    entries after; the merged size."""
    cdef int64_t g
    cdef int32_t* swap_support
    cdef state_t* swap_targets
    while groups:
        g = _lowest_bit(groups)
        groups &= groups - 1
        size = _merge_group(
            store, grouping, g, (spread >> g) & 1, column, support[0], targets[0], size,
            spare_support[0], spare_targets[0], implicit,
        )
        swap_support = support[0]
        swap_targets = targets[0]
        support[0] = spare_support[0]
        targets[0] = spare_targets[0]
        spare_support[0] = swap_support
        spare_targets[0] = swap_targets
    return size


cdef int64_t _compose_grouped(
    const MapStore* store,
    Grouping* grouping,
    const int32_t* support,
    const state_t* targets,
    int64_t size,
    uint64_t parent_implicit,
    const state_t* column,
    int64_t byte_cls,
    const uint64_t* weights,
    int32_t* out_support,
    state_t* out_targets,
    uint64_t* out_implicit,
    uint64_t* out_hash,
    bint* in_spare,
) noexcept nogil:
    """``_compose`` for a store with groups: the map ``s -> column[map(s)]`` of the map with
    entries ``support`` / ``targets`` and the groups ``parent_implicit`` (see "Loop groups"
    above). Gives the size and sets the groups, the hash and ``in_spare`` (the entries are in the
    grouping's spare arrays, not in ``out_support`` / ``out_targets``). ``weights`` as for
    ``_compose``."""
    cdef uint64_t stay = grouping.stay[byte_cls]
    cdef uint64_t kept_bits = parent_implicit & stay  # still implicit: compose the overrides only
    cdef uint64_t spread = parent_implicit & ~stay  # every state of these composed, then decided
    cdef uint64_t listed_home = 0  # groups listed in the parent that now go home in the majority
    cdef uint64_t implicit, bit
    cdef int64_t j, kept = 0, touched = 0, merged, home
    cdef int32_t s, g
    cdef state_t target
    cdef uint64_t total = 0
    cdef const int32_t* homes = store.home
    cdef bint dropped
    cdef int32_t* current_support = out_support
    cdef state_t* current_targets = out_targets
    cdef int32_t* other_support = grouping.spare_support
    cdef state_t* other_targets = <state_t*>grouping.spare_targets
    grouping.epoch += 1
    cdef int64_t epoch = grouping.epoch
    for j in range(size):
        s = support[j]
        target = column[targets[j]]
        home = homes[s]
        if home < 0:  # outside every group: kept when alive (branch-free, as in ``_compose``)
            current_support[kept] = s
            current_targets[kept] = target
            if weights != NULL:
                total += (<uint64_t>target + 1) * weights[s] * (target != 0)
            else:
                total += (<uint64_t>target + 1) * _weight(s) * (target != 0)
            kept += target != 0
            continue
        g = grouping.group_of[s]
        bit = (<uint64_t>1) << g
        if kept_bits & bit:
            if <int64_t>target != home:
                current_support[kept] = s
                current_targets[kept] = target
                total += (<uint64_t>target + 1) * (weights[s] if weights != NULL else _weight(s))
                kept += 1
        elif spread & bit:
            grouping.stamp[s] = epoch
            grouping.value[s] = <int32_t>target
        elif target != 0:
            current_support[kept] = s
            current_targets[kept] = target
            total += (<uint64_t>target + 1) * (weights[s] if weights != NULL else _weight(s))
            kept += 1
            if <int64_t>target == home:
                if grouping.count[g] == 0:
                    grouping.touched[touched] = g
                    touched += 1
                grouping.count[g] += 1
    for j in range(touched):
        g = grouping.touched[j]
        if 2 * grouping.count[g] >= store.member_start[g + 1] - store.member_start[g]:
            listed_home |= (<uint64_t>1) << g
        grouping.count[g] = 0
    if listed_home:  # their entries leave the list, to be merged back as the bit says
        merged = 0
        for j in range(kept):
            s = current_support[j]
            g = grouping.group_of[s]
            if g >= 0 and (listed_home >> g) & 1:
                grouping.stamp[s] = epoch
                grouping.value[s] = <int32_t>current_targets[j]
                continue
            current_support[merged] = s
            current_targets[merged] = current_targets[j]
            merged += 1
        kept = merged
    implicit = kept_bits
    dropped = (spread | listed_home) != 0  # merged or filtered: the sum above covers other entries
    kept = _merge_groups(
        store, grouping, spread | listed_home, spread, column, &current_support, &current_targets,
        &other_support, &other_targets, kept, &implicit,
    )
    if dropped:
        total = _grouped_sum(current_support, current_targets, kept, weights)
    out_implicit[0] = implicit
    out_hash[0] = _grouped_hash(total, implicit)
    in_spare[0] = current_support != out_support
    return kept


cdef uint64_t _grouped_row(
    const MapStore* store,
    Grouping* grouping,
    const state_t* row,
    int64_t num_states,
    const uint64_t* weights,
    int32_t* out_support,
    state_t* out_targets,
    int64_t* out_size,
    uint64_t* out_implicit,
) noexcept nogil:
    """The dense ``row`` as a store with groups keeps it (see "Loop groups" above); its hash."""
    cdef int64_t s, g, size = 0
    cdef uint64_t implicit = 0
    cdef uint64_t groups = (~(<uint64_t>0)) >> (64 - store.group_count)
    grouping.epoch += 1
    for s in range(num_states):
        g = grouping.group_of[s]
        if g < 0:
            if row[s] != 0:
                out_support[size] = <int32_t>s
                out_targets[size] = row[s]
                size += 1
        else:
            grouping.stamp[s] = grouping.epoch
            grouping.value[s] = <int32_t>row[s]
    cdef int32_t* current_support = out_support
    cdef state_t* current_targets = out_targets
    cdef int32_t* other_support = grouping.spare_support
    cdef state_t* other_targets = <state_t*>grouping.spare_targets
    size = _merge_groups(
        store, grouping, groups, 0, row, &current_support, &current_targets, &other_support,
        &other_targets, size, &implicit,
    )
    if current_support != out_support:
        memcpy(out_support, current_support, <size_t>size * sizeof(int32_t))
        memcpy(out_targets, current_targets, <size_t>size * sizeof(state_t))
    out_size[0] = size
    out_implicit[0] = implicit
    return _grouped_hash(_grouped_sum(out_support, out_targets, size, weights), implicit)


cdef struct RowStore:
    int64_t* starts  # where each row's classes start in ``classes`` [capacity + 1]
    int32_t* classes  # each row's classes, ascending, row after row
    int64_t class_capacity
    uint64_t* hashes
    int64_t count
    int64_t capacity
    int32_t* slots  # row ids, -1 where empty
    uint64_t slot_mask


cdef int _rows_init(RowStore* rows) noexcept nogil:
    rows.count = 0
    rows.capacity = _FIRST_CAPACITY
    rows.class_capacity = 1024
    rows.starts = <int64_t*>malloc((_FIRST_CAPACITY + 1) * sizeof(int64_t))
    rows.classes = <int32_t*>malloc(<size_t>rows.class_capacity * sizeof(int32_t))
    rows.hashes = <uint64_t*>malloc(_FIRST_CAPACITY * sizeof(uint64_t))
    rows.slots = <int32_t*>malloc(4 * _FIRST_CAPACITY * sizeof(int32_t))
    rows.slot_mask = 4 * _FIRST_CAPACITY - 1
    if rows.starts == NULL or rows.classes == NULL or rows.hashes == NULL or rows.slots == NULL:
        return _NO_MEMORY
    memset(rows.slots, 0xFF, 4 * _FIRST_CAPACITY * sizeof(int32_t))
    rows.starts[0] = 0
    return 0


cdef void _rows_free(RowStore* rows) noexcept nogil:
    free(rows.starts)
    free(rows.classes)
    free(rows.hashes)
    free(rows.slots)
    memset(rows, 0, sizeof(RowStore))


cdef void _row_slot_insert(RowStore* rows, int32_t row) noexcept nogil:
    cdef uint64_t i = rows.hashes[row] & rows.slot_mask
    while rows.slots[i] >= 0:
        i = (i + 1) & rows.slot_mask
    rows.slots[i] = row


cdef int32_t _rows_find_or_append(
    RowStore* rows, const int32_t* classes, int64_t size, uint64_t h
) noexcept nogil:
    """The id of the stored row with exactly these classes, appending it when there is none (ids
    in order of first appearance); ``_NO_MEMORY``."""
    cdef uint64_t i = h & rows.slot_mask
    cdef int32_t candidate
    cdef int64_t first, used, grown, r
    cdef int64_t* starts
    cdef int32_t* grown_classes
    cdef uint64_t* hashes
    cdef int32_t* slots
    while True:
        candidate = rows.slots[i]
        if candidate < 0:
            break
        if rows.hashes[candidate] == h:
            first = rows.starts[candidate]
            if rows.starts[candidate + 1] - first == size and memcmp(
                rows.classes + first, classes, <size_t>size * sizeof(int32_t)
            ) == 0:
                return candidate
        i = (i + 1) & rows.slot_mask
    if rows.count == rows.capacity:
        if rows.capacity >= (1 << 30):
            return _NO_MEMORY
        grown = 2 * rows.capacity
        starts = <int64_t*>realloc(rows.starts, <size_t>(grown + 1) * sizeof(int64_t))
        if starts == NULL:
            return _NO_MEMORY
        rows.starts = starts
        hashes = <uint64_t*>realloc(rows.hashes, <size_t>grown * sizeof(uint64_t))
        if hashes == NULL:
            return _NO_MEMORY
        rows.hashes = hashes
        rows.capacity = grown
    used = rows.starts[rows.count]
    if used + size > rows.class_capacity:
        grown = 2 * rows.class_capacity
        while used + size > grown:
            grown *= 2
        grown_classes = <int32_t*>realloc(rows.classes, <size_t>grown * sizeof(int32_t))
        if grown_classes == NULL:
            return _NO_MEMORY
        rows.classes = grown_classes
        rows.class_capacity = grown
    if 2 * (rows.count + 1) > <int64_t>(rows.slot_mask + 1):
        grown = 2 * <int64_t>(rows.slot_mask + 1)
        slots = <int32_t*>realloc(rows.slots, <size_t>grown * sizeof(int32_t))
        if slots == NULL:
            return _NO_MEMORY
        memset(slots, 0xFF, <size_t>grown * sizeof(int32_t))
        rows.slots = slots
        rows.slot_mask = <uint64_t>(grown - 1)
        for r in range(rows.count):
            _row_slot_insert(rows, <int32_t>r)
    if size:
        memcpy(rows.classes + used, classes, <size_t>size * sizeof(int32_t))
    rows.starts[rows.count + 1] = used + size
    rows.hashes[rows.count] = h
    _row_slot_insert(rows, <int32_t>rows.count)
    rows.count += 1
    return <int32_t>(rows.count - 1)


cdef inline uint64_t _class_list_hash(const int32_t* classes, int64_t size) noexcept nogil:
    """A hash of the list: four lanes, each every fourth class, so that the multiplications do
    not wait on one another (one chain cost a third of ``compact_table``), then mixed."""
    cdef uint64_t k = <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t a = <uint64_t>size
    cdef uint64_t b = 1
    cdef uint64_t c = 2
    cdef uint64_t d = 3
    cdef int64_t i = 0
    while i + 4 <= size:
        a = a * k + <uint64_t>classes[i] + 1
        b = b * k + <uint64_t>classes[i + 1] + 1
        c = c * k + <uint64_t>classes[i + 2] + 1
        d = d * k + <uint64_t>classes[i + 3] + 1
        i += 4
    while i < size:
        a = a * k + <uint64_t>classes[i] + 1
        i += 1
    return _mix(((a * k + b) * k + c) * k + d)


cdef void _count_entries(
    const MapStore* store,
    const state_t* targets,
    const int64_t* map_ids,
    int64_t k,
    int64_t* next_offsets,
    int64_t* stamp,
) noexcept nogil:
    """``next_offsets`` (zeroed, [states + 1]): where each state's entries start, the entries of
    state ``s`` being the maps (of ``map_ids``) alive at ``s``. ``stamp`` ([states], -1 where
    unset) marks the states a map lists while its groups are counted."""
    cdef int64_t j, at, end
    cdef int64_t num_states = store.num_states
    cdef const int32_t* support = store.support
    cdef uint64_t implicit
    cdef int32_t g, s
    for j in range(k):
        end = store.support_start[map_ids[j] + 1]
        implicit = store.implicit[map_ids[j]]
        if implicit == 0:
            for at in range(store.support_start[map_ids[j]], end):
                next_offsets[support[at] + 1] += 1
            continue
        for at in range(store.support_start[map_ids[j]], end):  # (listed: alive unless sent to 0)
            s = support[at]
            next_offsets[s + 1] += targets[at] != 0
            stamp[s] = j
        while implicit:
            g = _lowest_bit(implicit)
            implicit &= implicit - 1
            for at in range(store.member_start[g], store.member_start[g + 1]):
                s = store.members[at]
                next_offsets[s + 1] += stamp[s] != j
    for j in range(num_states):
        next_offsets[j + 1] += next_offsets[j]


cdef int _fill_compact(
    const MapStore* store,
    const int64_t* map_ids,
    int64_t k,
    const int64_t* next_offsets,
    state_t* out_next,
    int32_t* state_row,
    RowStore* rows,
    int64_t* cursors,
    int64_t* fill,
    int32_t* block_classes,
    int64_t block_entries,
    int64_t* stamp,
) noexcept nogil:
    """Write every state's next states (``out_next``, at ``next_offsets``) and its row
    (``state_row``, the rows stored in ``rows``): 0 or ``_NO_MEMORY``. ``cursors`` has room for
    ``2 k``, ``fill`` for every state, ``block_classes`` for ``block_entries`` (at least ``k``),
    ``stamp`` for every state (-1 where unset).

    The states are taken a block at a time, as many as hold at most ``block_entries`` entries, so
    that the block's part of ``out_next`` and its classes (``block_classes``) stay in cache while
    every map's cursor moves through its part of the block; maps are taken in class order, so each
    state's classes come out ascending. A map's implicit groups give their states in the block
    that it does not list their homes. Then each state of the block finds its row by the hash of
    its class list (compared in full)."""
    cdef const int32_t* support = store.support
    cdef const state_t* targets = <const state_t*>store.targets
    cdef int64_t* ends = cursors + k
    cdef int64_t num_states = store.num_states
    cdef int64_t j, low, high, at, end, base, position, s, size
    cdef int32_t row, g
    cdef uint64_t implicit
    cdef int64_t group_low[64]  # each group's states in the block: group_low[g]:group_high[g]
    cdef int64_t group_high[64]
    for g in range(store.group_count):
        group_high[g] = store.member_start[g]
    for j in range(k):
        cursors[j] = store.support_start[map_ids[j]]
        ends[j] = store.support_start[map_ids[j] + 1]
    low = 0
    while low < num_states:
        base = next_offsets[low]
        high = low + 1
        while high < num_states and next_offsets[high + 1] - base <= block_entries:
            high += 1
        for s in range(low, high):
            fill[s] = next_offsets[s] - base
        for g in range(store.group_count):
            group_low[g] = group_high[g]
            while group_high[g] < store.member_start[g + 1] and store.members[group_high[g]] < high:
                group_high[g] += 1
        for j in range(k):
            at = cursors[j]
            end = ends[j]
            implicit = store.implicit[map_ids[j]]
            if implicit == 0:
                while at < end and support[at] < high:
                    s = support[at]
                    position = fill[s]
                    fill[s] = position + 1
                    out_next[base + position] = targets[at]
                    block_classes[position] = <int32_t>j
                    at += 1
                cursors[j] = at
                continue
            while at < end and support[at] < high:
                s = support[at]
                stamp[s] = j
                if targets[at] != 0:
                    position = fill[s]
                    fill[s] = position + 1
                    out_next[base + position] = targets[at]
                    block_classes[position] = <int32_t>j
                at += 1
            cursors[j] = at
            while implicit:
                g = _lowest_bit(implicit)
                implicit &= implicit - 1
                for at in range(group_low[g], group_high[g]):
                    s = store.members[at]
                    if stamp[s] != j:
                        position = fill[s]
                        fill[s] = position + 1
                        out_next[base + position] = <state_t>store.home[s]
                        block_classes[position] = <int32_t>j
        for s in range(low, high):
            position = next_offsets[s] - base
            size = next_offsets[s + 1] - next_offsets[s]
            row = _rows_find_or_append(
                rows, block_classes + position, size, _class_list_hash(block_classes + position, size)
            )
            if row < 0:
                return _NO_MEMORY
            state_row[s] = row
        low = high
    return 0


cdef class StateMaps:
    """The distinct state maps of one ``compose_over_trie`` call, kept sparse (see the module
    docstring); only ``compose_over_trie`` fills one."""

    cdef MapStore store

    def __cinit__(self) -> None:
        _store_clear(&self.store)

    def __dealloc__(self) -> None:
        _store_free(&self.store)

    @property
    def count(self) -> int:
        return self.store.count

    def stored(self, int64_t map_id):
        """``(support, targets, implicit)`` of a stored map as kept (int32, int64 and the bits of
        its implicit groups), None for an id outside the store: what the tests check the stored
        form against."""
        if map_id < 0 or map_id >= self.store.count:
            return None
        first = self.store.support_start[map_id]
        size = self.store.support_start[map_id + 1] - first
        support = np.empty(size, dtype=np.int32)
        targets = np.empty(size, dtype=np.int64)
        cdef int64_t j
        for j in range(size):
            support[j] = self.store.support[first + j]
            if self.store.target_size == sizeof(uint16_t):
                targets[j] = (<const uint16_t*>self.store.targets)[first + j]
            else:
                targets[j] = (<const int32_t*>self.store.targets)[first + j]
        return support, targets, int(self.store.implicit[map_id])

    def compact_table(self, const int64_t[::1] map_ids, int64_t block_bytes=_TABLE_BLOCK_BYTES):
        """See the module docstring: ``(status, state_row, row_class_offsets, row_classes,
        next_offsets, next_states)``."""
        cdef int64_t k = map_ids.shape[0]
        cdef int64_t num_states = self.store.num_states
        cdef int64_t j
        cdef bint narrow_dtype = self.store.target_size == sizeof(uint16_t)
        cdef const int64_t* ids = NULL
        cdef int64_t* stamp = NULL
        for j in range(k):
            if map_ids[j] < 0 or map_ids[j] >= self.store.count:
                return _BAD_INPUT, None, None, None, None, None
        if num_states < 1:
            return _BAD_INPUT, None, None, None, None, None
        next_offsets = np.zeros(num_states + 1, dtype=np.int64)
        cdef int64_t[::1] offsets = next_offsets
        stamp = <int64_t*>malloc(<size_t>num_states * sizeof(int64_t))
        if stamp == NULL:
            raise MemoryError("token walk: no memory for the next-state table")
        if k:
            ids = &map_ids[0]
            with nogil:
                memset(stamp, 0xFF, <size_t>num_states * sizeof(int64_t))
                if narrow_dtype:
                    _count_entries(
                        &self.store, <const uint16_t*>self.store.targets, ids, k, &offsets[0], stamp
                    )
                else:
                    _count_entries(
                        &self.store, <const int32_t*>self.store.targets, ids, k, &offsets[0], stamp
                    )
                memset(stamp, 0xFF, <size_t>num_states * sizeof(int64_t))
        try:
            return self._filled(map_ids, block_bytes, next_offsets, stamp)
        finally:
            free(stamp)

    cdef _filled(self, const int64_t[::1] map_ids, int64_t block_bytes, next_offsets, int64_t* stamp):
        """``compact_table`` once ``next_offsets`` is counted."""
        cdef int64_t k = map_ids.shape[0]
        cdef int64_t num_states = self.store.num_states
        cdef int64_t total, block_entries
        cdef int status = 0
        cdef bint narrow_dtype = self.store.target_size == sizeof(uint16_t)
        cdef const int64_t* ids = &map_ids[0] if k else NULL
        cdef int64_t* cursors = NULL
        cdef int64_t* fill = NULL
        cdef int32_t* block_classes = NULL
        cdef uint16_t* narrow = NULL
        cdef int32_t* wide = NULL
        cdef uint16_t[::1] narrow_view
        cdef int32_t[::1] wide_view
        cdef int64_t[::1] row_offsets_view
        cdef RowStore rows
        cdef int64_t[::1] offsets = next_offsets
        total = offsets[num_states]
        next_states = np.empty(total, dtype=np.uint16 if narrow_dtype else np.int32)
        if total:
            if narrow_dtype:
                narrow_view = next_states
                narrow = &narrow_view[0]
            else:
                wide_view = next_states
                wide = &wide_view[0]
        state_row = np.empty(num_states, dtype=np.int32)
        cdef int32_t[::1] state_row_view = state_row
        block_entries = block_bytes // <int64_t>(self.store.target_size + sizeof(int32_t))
        if block_entries < k:
            block_entries = k
        if block_entries < 1:
            block_entries = 1
        memset(&rows, 0, sizeof(RowStore))
        try:
            with nogil:
                cursors = <int64_t*>malloc(<size_t>(2 * k + 1) * sizeof(int64_t))
                fill = <int64_t*>malloc(<size_t>num_states * sizeof(int64_t))
                block_classes = <int32_t*>malloc(<size_t>(block_entries + 1) * sizeof(int32_t))
                if cursors == NULL or fill == NULL or block_classes == NULL:
                    status = _NO_MEMORY
                if status == 0:
                    status = _rows_init(&rows)
                if status == 0:
                    if narrow_dtype:
                        status = _fill_compact(
                            &self.store, ids, k, &offsets[0], narrow,
                            &state_row_view[0], &rows, cursors, fill, block_classes, block_entries,
                            stamp,
                        )
                    else:
                        status = _fill_compact(
                            &self.store, ids, k, &offsets[0], wide,
                            &state_row_view[0], &rows, cursors, fill, block_classes, block_entries,
                            stamp,
                        )
            if status == _NO_MEMORY:
                raise MemoryError("token walk: no memory for the next-state table")
            row_class_offsets = np.empty(rows.count + 1, dtype=np.int64)
            row_classes = np.empty(rows.starts[rows.count], dtype=np.int32)
            row_offsets_view = row_class_offsets
            memcpy(&row_offsets_view[0], rows.starts, <size_t>(rows.count + 1) * sizeof(int64_t))
            if rows.starts[rows.count]:
                wide_view = row_classes
                memcpy(&wide_view[0], rows.classes, <size_t>rows.starts[rows.count] * sizeof(int32_t))
            return _OK, state_row, row_class_offsets, row_classes, next_offsets, next_states
        finally:
            free(cursors)
            free(fill)
            free(block_classes)
            _rows_free(&rows)


# ---------------------------------------------------------------------------------------------
# (map id, byte class) pairs -> composed map id: open addressing over int64 keys.


cdef struct PairTable:
    # Dense while it is small: ``dense[key]`` (``_ABSENT`` where absent), the keys being
    # ``map * classes + class``, so a trie level's nodes, which come parent by parent, look up
    # neighbouring entries; past ``dense_limit`` entries it hashes instead (``dense`` NULL).
    int32_t* dense
    int64_t dense_size
    int64_t dense_limit
    int64_t* keys  # -1 where empty
    int32_t* values
    int64_t count
    uint64_t mask


cdef int _pairs_hashed(PairTable* pairs) noexcept nogil:
    """An empty hash table of 1,024 slots (the dense table is moved into it by the caller)."""
    pairs.mask = 1023
    pairs.keys = <int64_t*>malloc(1024 * sizeof(int64_t))
    pairs.values = <int32_t*>malloc(1024 * sizeof(int32_t))
    if pairs.keys == NULL or pairs.values == NULL:
        return _NO_MEMORY
    memset(pairs.keys, 0xFF, 1024 * sizeof(int64_t))
    return 0


cdef int _pairs_init(PairTable* pairs, int64_t num_classes, int64_t dense_limit) noexcept nogil:
    """An empty table: dense (room for the pairs of ``_FIRST_CAPACITY`` maps) when that fits
    ``dense_limit`` entries, else hashed."""
    pairs.count = 0
    pairs.keys = NULL
    pairs.values = NULL
    pairs.dense = NULL
    pairs.mask = 0
    pairs.dense_limit = dense_limit
    pairs.dense_size = _FIRST_CAPACITY * num_classes
    if pairs.dense_size > dense_limit:
        return _pairs_hashed(pairs)
    pairs.dense = <int32_t*>malloc(<size_t>pairs.dense_size * sizeof(int32_t))
    if pairs.dense == NULL:
        return _NO_MEMORY
    memset(pairs.dense, 0xFF, <size_t>pairs.dense_size * sizeof(int32_t))  # _ABSENT
    return 0


cdef void _pairs_free(PairTable* pairs) noexcept nogil:
    free(pairs.dense)
    free(pairs.keys)
    free(pairs.values)
    pairs.dense = NULL
    pairs.keys = NULL
    pairs.values = NULL


cdef inline uint64_t _pair_slot(int64_t key, uint64_t mask) noexcept nogil:
    return ((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> 20) & mask


cdef inline int32_t _pairs_get(const PairTable* pairs, int64_t key) noexcept nogil:
    """The value of ``key``, ``_ABSENT`` when it is not there."""
    cdef uint64_t i
    if pairs.dense != NULL:
        return pairs.dense[key] if key < pairs.dense_size else _ABSENT
    i = _pair_slot(key, pairs.mask)
    while pairs.keys[i] >= 0:
        if pairs.keys[i] == key:
            return pairs.values[i]
        i = (i + 1) & pairs.mask
    return _ABSENT


cdef inline void _pairs_set(PairTable* pairs, int64_t key, int32_t value) noexcept nogil:
    """Change the value of ``key``, which is there."""
    cdef uint64_t i
    if pairs.dense != NULL:
        pairs.dense[key] = value
        return
    i = _pair_slot(key, pairs.mask)
    while pairs.keys[i] != key:
        i = (i + 1) & pairs.mask
    pairs.values[i] = value


cdef int _pairs_put(PairTable* pairs, int64_t key, int32_t value) noexcept nogil:
    """Add ``key`` (not there yet) with ``value``: 0 or ``_NO_MEMORY``."""
    cdef int64_t* old_keys
    cdef int32_t* old_values
    cdef int32_t* dense
    cdef uint64_t old_size, j, i
    cdef int64_t size, at
    if pairs.dense != NULL and key >= pairs.dense_size:
        size = 2 * pairs.dense_size
        while size <= key:
            size *= 2
        if size <= pairs.dense_limit:
            dense = <int32_t*>realloc(pairs.dense, <size_t>size * sizeof(int32_t))
            if dense == NULL:
                return _NO_MEMORY
            memset(dense + pairs.dense_size, 0xFF, <size_t>(size - pairs.dense_size) * sizeof(int32_t))
            pairs.dense = dense
            pairs.dense_size = size
        else:  # too big to stay dense: every pair moves into a hash table
            dense = pairs.dense
            size = pairs.dense_size
            pairs.dense = NULL
            pairs.count = 0
            if _pairs_hashed(pairs):
                free(dense)
                return _NO_MEMORY
            for at in range(size):
                if dense[at] != _ABSENT and _pairs_put(pairs, at, dense[at]):
                    free(dense)
                    return _NO_MEMORY
            free(dense)
    if pairs.dense != NULL:
        pairs.dense[key] = value
        pairs.count += 1
        return 0
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


# A level's pairs not composed yet, the ``k``-th met at ``k`` (each array with room for a level).
cdef struct Pending:
    int32_t* parent_map
    int32_t* byte_cls
    int32_t* order  # the pairs byte class by byte class (a counting sort)
    int32_t* composed  # the map id each pair composes to
    int64_t* class_start  # [classes + 1], the counting sort's


cdef int _compose_level(
    MapStore* store,
    PairTable* pairs,
    const state_t* columns,
    const uint64_t* weights,
    const int32_t* node_parent,
    const uint8_t* node_byte,
    const int32_t* byte_class,
    int64_t num_classes,
    int32_t* node_map,
    Pending* pending,
    int32_t* scratch_support,
    state_t* scratch_targets,
    int64_t low,
    int64_t high,
    int64_t* live,
    Grouping* grouping,
    const int32_t* listed,
    int64_t listed_count,
) noexcept nogil:
    """Map ids of the nodes ``low:high`` (one trie level), or of the ``listed_count`` nodes of
    ``listed`` in it when that is not NULL (the others dead): 0, ``_OVER_LIMIT``, ``_NO_MEMORY``
    or ``BAD_INPUT`` (a parent that is not in an earlier level).

    The level's pairs not composed yet are gathered first: the ``k``-th one met is listed in
    ``pending`` and stored in the pair table as ``_PENDING - k``, and so are its nodes' map ids
    meanwhile. They are composed byte class by byte class, so that the class's transition column
    stays in cache across its compositions; then the pending pairs and nodes get their ids. (Map ids follow that order; the token classes
    built from them do not depend on it.)"""
    cdef int64_t node, parent, key, byte_cls, first, size, count, j, k, at
    cdef int64_t num_states = store.num_states
    cdef int64_t visits = listed_count if listed != NULL else high - low
    cdef int32_t parent_map, found
    cdef uint64_t h, implicit
    cdef int status
    cdef bint in_spare
    live[0] = 0
    count = 0
    for at in range(visits):
        node = listed[at] if listed != NULL else low + at
        parent = node_parent[node]
        if parent < 0 or parent >= low:  # (this level's map ids are not final yet)
            return _BAD_INPUT
        parent_map = node_map[parent]
        if parent_map == 0:
            node_map[node] = 0
            continue
        live[0] += 1
        byte_cls = byte_class[node_byte[node]]
        key = <int64_t>parent_map * num_classes + byte_cls
        found = _pairs_get(pairs, key)
        if found == _ABSENT:
            found = <int32_t>(_PENDING - count)
            status = _pairs_put(pairs, key, found)
            if status < 0:
                return status
            pending.parent_map[count] = parent_map
            pending.byte_cls[count] = <int32_t>byte_cls
            count += 1
        node_map[node] = found
    if count == 0:
        return 0
    memset(pending.class_start, 0, <size_t>(num_classes + 1) * sizeof(int64_t))
    for k in range(count):
        pending.class_start[pending.byte_cls[k] + 1] += 1
    for byte_cls in range(num_classes):
        pending.class_start[byte_cls + 1] += pending.class_start[byte_cls]
    for k in range(count):
        byte_cls = pending.byte_cls[k]
        pending.order[pending.class_start[byte_cls]] = <int32_t>k
        pending.class_start[byte_cls] += 1
    for j in range(count):
        k = pending.order[j]
        parent_map = pending.parent_map[k]
        byte_cls = pending.byte_cls[k]
        first = store.support_start[parent_map]
        if grouping == NULL:
            h = _compose(
                store.support + first,
                (<const state_t*>store.targets) + first,
                store.support_start[parent_map + 1] - first,
                columns + byte_cls * num_states,
                weights,
                scratch_support,
                scratch_targets,
                &size,
            )
            found = _store_find_or_append(store, scratch_support, <const char*>scratch_targets, size, h, 0)
        else:
            size = _compose_grouped(
                store,
                grouping,
                store.support + first,
                (<const state_t*>store.targets) + first,
                store.support_start[parent_map + 1] - first,
                store.implicit[parent_map],
                columns + byte_cls * num_states,
                byte_cls,
                weights,
                scratch_support,
                scratch_targets,
                &implicit,
                &h,
                &in_spare,
            )
            if in_spare:
                found = _store_find_or_append(
                    store, grouping.spare_support, grouping.spare_targets, size, h, implicit
                )
            else:
                found = _store_find_or_append(
                    store, scratch_support, <const char*>scratch_targets, size, h, implicit
                )
        if found < 0:
            return found
        _pairs_set(pairs, <int64_t>parent_map * num_classes + byte_cls, found)
        pending.composed[k] = found
    for at in range(visits):
        node = listed[at] if listed != NULL else low + at
        if node_map[node] <= _PENDING:
            node_map[node] = pending.composed[_PENDING - node_map[node]]
    return 0


cdef int _children(
    const int32_t* first_child,
    const int32_t* node_parent,
    const int32_t* node_map,
    const int32_t* parents,
    int64_t parent_count,
    int64_t parent_low,
    int64_t low,
    int64_t high,
    int32_t* out,
    int64_t* out_count,
) noexcept nogil:
    """The children of the live nodes among ``parents`` (or, where it is NULL, among the
    ``parent_count`` nodes from ``parent_low``: the level above ``low:high``), in order, into
    ``out``: 0, or ``_BAD_INPUT`` where a child range leaves the level or a child's parent is not
    the node whose range holds it."""
    cdef int64_t j, p, child, start, end, count = 0
    for j in range(parent_count):
        p = parents[j] if parents != NULL else parent_low + j
        if node_map[p] == 0:
            continue
        start = first_child[p]
        end = first_child[p + 1]
        if start >= end:
            continue
        if start < low or end > high:
            return _BAD_INPUT
        for child in range(start, end):
            if node_parent[child] != p:
                return _BAD_INPUT
            out[count] = <int32_t>child
            count += 1
    out_count[0] = count
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
    int64_t dense_pairs=_DENSE_PAIR_ENTRIES,
    const int32_t[::1] group_of=None,
    const int32_t[::1] group_home=None,
    const uint8_t[:, ::1] group_loops=None,
    const int32_t[::1] first_child=None,
):
    """See the module docstring: ``(status, count, node_map, maps, extra_id)``."""
    cdef int64_t num_classes = columns.shape[0]
    cdef int64_t num_states = columns.shape[1]
    cdef int64_t num_nodes = node_parent.shape[0]
    cdef int64_t depth_count = level_offsets.shape[0]
    cdef int64_t s, c, d, low, high, live, size, g, home
    cdef int64_t group_count = 0
    cdef int status = 0
    cdef int found
    cdef uint64_t h
    cdef uint64_t implicit = 0
    cdef Grouping grouping
    cdef Grouping* grouping_used = NULL
    cdef int64_t[64] group_sizes
    cdef state_t* identity = NULL
    cdef MapStore* store
    cdef PairTable pairs
    cdef int32_t* scratch_support = NULL
    cdef state_t* scratch_targets = NULL
    cdef uint64_t* weights = NULL
    cdef Pending pending
    cdef int32_t* listed_memory = NULL
    cdef int32_t* listed = NULL  # with ``first_child``: the live nodes of the level before, then this one's
    cdef int32_t* listed_next = NULL
    cdef int32_t* swap_listed
    cdef int64_t listed_count = 0, next_count = 0
    cdef int64_t parents_low = 0, parents_high = 1, parents_alive = 1  # the level above: the root
    cdef bint parents_listed = False
    cdef const state_t* column_data
    cdef int32_t* node_data

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
    if (group_of is None) != (group_loops is None) or (group_of is None) != (group_home is None):
        return _BAD_INPUT, 0, None, None, -1
    if group_of is not None:
        group_count = group_loops.shape[0]
        if (
            group_of.shape[0] != num_states
            or group_home.shape[0] != num_states
            or group_loops.shape[1] != num_classes
            or group_count < 1
            or group_count > 64
            or group_of[0] != -1
        ):
            return _BAD_INPUT, 0, None, None, -1
        memset(group_sizes, 0, sizeof(group_sizes))
        for s in range(num_states):
            g = group_of[s]
            if g < -1 or g >= group_count:
                return _BAD_INPUT, 0, None, None, -1
            if g >= 0:  # its home: a live state that the group's looping classes keep in place
                group_sizes[g] += 1
                home = group_home[s]
                if home < 1 or home >= num_states:
                    return _BAD_INPUT, 0, None, None, -1
                for c in range(num_classes):
                    if group_loops[g, c] != 0 and columns[c, home] != home:
                        return _BAD_INPUT, 0, None, None, -1
        for g in range(group_count):
            if group_sizes[g] == 0:
                return _BAD_INPUT, 0, None, None, -1

    node_map = np.zeros(num_nodes, dtype=np.int32)
    cdef int32_t[::1] node_map_view = node_map
    node_data = &node_map_view[0]
    node_data[0] = 1
    column_data = &columns[0, 0]
    cdef StateMaps maps = StateMaps()  # owns the store from here on (freed with it)
    store = &maps.store
    pairs.dense = NULL
    pairs.keys = NULL
    pairs.values = NULL
    memset(&pending, 0, sizeof(Pending))
    memset(&grouping, 0, sizeof(Grouping))
    try:
        with nogil:
            scratch_support = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
            scratch_targets = <state_t*>malloc(<size_t>num_states * sizeof(state_t))
            pending.parent_map = <int32_t*>malloc(<size_t>num_nodes * sizeof(int32_t))
            pending.byte_cls = <int32_t*>malloc(<size_t>num_nodes * sizeof(int32_t))
            pending.order = <int32_t*>malloc(<size_t>num_nodes * sizeof(int32_t))
            pending.composed = <int32_t*>malloc(<size_t>num_nodes * sizeof(int32_t))
            pending.class_start = <int64_t*>malloc(<size_t>(num_classes + 1) * sizeof(int64_t))
            if (
                scratch_support == NULL
                or scratch_targets == NULL
                or pending.parent_map == NULL
                or pending.byte_cls == NULL
                or pending.order == NULL
                or pending.composed == NULL
                or pending.class_start == NULL
            ):
                status = _NO_MEMORY
            if status == 0 and num_states <= _WEIGHT_TABLE_STATES:
                weights = <uint64_t*>malloc(<size_t>num_states * sizeof(uint64_t))
                if weights == NULL:
                    status = _NO_MEMORY
                else:
                    for s in range(num_states):
                        weights[s] = _weight(s)
            if status == 0:
                status = _store_init(store, num_states, sizeof(state_t), max_cells)
            if status == 0:
                status = _pairs_init(&pairs, num_classes, dense_pairs)
            if status == 0 and group_count > 0:
                status = _grouping_init(
                    store, &grouping, &group_of[0], &group_home[0], &group_loops[0, 0], group_count,
                    num_classes, sizeof(state_t),
                )
                grouping_used = &grouping
            if status == 0:  # the dead map 0 and the identity 1
                if group_count == 0:
                    found = _store_append(store, scratch_support, <const char*>scratch_targets, 0, _mix(0), 0)
                    h = 0
                    for s in range(1, num_states):
                        scratch_support[s - 1] = <int32_t>s
                        scratch_targets[s - 1] = <state_t>s
                        h += <uint64_t>s * _weight(s)
                    size = num_states - 1
                    h = _mix(h)
                else:
                    found = _store_append(
                        store, scratch_support, <const char*>scratch_targets, 0, _grouped_hash(0, 0), 0
                    )
                    identity = <state_t*>malloc(<size_t>num_states * sizeof(state_t))
                    if identity == NULL:
                        found = _NO_MEMORY
                    else:
                        for s in range(num_states):
                            identity[s] = <state_t>s
                        h = _grouped_row(
                            store, &grouping, identity, num_states, weights, scratch_support,
                            scratch_targets, &size, &implicit,
                        )
                        free(identity)
                if found >= 0:
                    found = _store_append(
                        store, scratch_support, <const char*>scratch_targets, size, h, implicit
                    )
                if found < 0:
                    status = found
        if status == _NO_MEMORY:
            raise MemoryError("token walk: no memory for the state maps")
        if first_child is not None:  # the live nodes of each level, found from their parents'
            if first_child.shape[0] != num_nodes + 1:
                return _BAD_INPUT, 0, None, None, -1
            listed_memory = <int32_t*>malloc(<size_t>(2 * num_nodes + 2) * sizeof(int32_t))
            if listed_memory == NULL:
                raise MemoryError("token walk: no memory for the live nodes")
            listed = listed_memory
            listed_next = listed + num_nodes + 1
        for d in range(1, depth_count - 1):
            low = level_offsets[d]
            high = level_offsets[d + 1]
            status = 0
            with nogil:
                # The children of the live nodes where few of the level above are live (a small
                # DFA's); the whole level where most are (a walk over the level costs a
                # mispredicted branch per parent, one over the nodes does not).
                if listed_memory != NULL and 4 * parents_alive < high - low:
                    status = _children(
                        &first_child[0], &node_parent[0], node_data,
                        listed if parents_listed else NULL,
                        listed_count if parents_listed else parents_high - parents_low,
                        parents_low, low, high, listed_next, &next_count,
                    )
                    swap_listed = listed
                    listed = listed_next
                    listed_next = swap_listed
                    listed_count = next_count
                    parents_listed = True
                else:
                    parents_listed = False
                if status == 0:
                    status = _compose_level(
                        store, &pairs, column_data, weights, &node_parent[0], &node_byte[0],
                        &byte_class[0], num_classes, node_data, &pending, scratch_support,
                        scratch_targets, low, high, &live, grouping_used,
                        listed if parents_listed else NULL, listed_count,
                    )
                # (counted only where it could make the next level's walk the children's: the
                # deep levels of a real trie are never four times wider than the one above)
                parents_alive = listed_count if parents_listed else high - low
                if (
                    listed_memory != NULL
                    and d + 2 < depth_count
                    and 4 * parents_alive < level_offsets[d + 2] - level_offsets[d + 1]
                ):
                    if parents_listed:
                        parents_alive = _live_listed(node_data, listed, listed_count)
                    else:
                        parents_alive = _live_range(node_data + low, high - low)
                parents_low = low
                parents_high = high
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
            if group_count == 0:
                h = _sparse_row(&extra_row[0], num_states, scratch_support, scratch_targets, &size)
            else:
                h = _grouped_row(
                    store, &grouping, &extra_row[0], num_states, weights, scratch_support,
                    scratch_targets, &size, &implicit,
                )
            found = _store_find_or_append(
                store, scratch_support, <const char*>scratch_targets, size, h, implicit if group_count else 0
            )
        if found == _NO_MEMORY:
            raise MemoryError("token walk: no memory for the state maps")
        if found == _OVER_LIMIT:
            return _LIMIT, store.count, None, None, -1
        return _OK, store.count, node_map, maps, found
    finally:
        free(listed_memory)
        _pairs_free(&pairs)
        free(scratch_support)
        free(scratch_targets)
        free(weights)
        free(pending.parent_map)
        free(pending.byte_cls)
        free(pending.order)
        free(pending.composed)
        free(pending.class_start)
        _grouping_free(&grouping)


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


cdef enum:
    _LANES = 4  # the vocabulary's quarters, bucketed side by side (see _bucket_tokens)


cdef int _bucket_tokens(
    const class_t* token_class, int64_t vocab_size, int64_t classes, int64_t* starts, int32_t* tokens
) noexcept nogil:
    """``tokens``: the token ids by class, ascending within each class; ``starts[c]:starts[c + 1]``
    class ``c``'s (``starts`` has ``classes + 1`` entries). 0, ``BAD_INPUT`` (a class out of range)
    or ``_NO_MEMORY``.

    One vocabulary-long counter per class would make every token wait for the one before it
    whenever they share a class (most tokens share one: the dead class of a small DFA), so each
    quarter of the vocabulary has its own counters and the four quarters are read side by side."""
    cdef int64_t quarter = vocab_size // _LANES
    cdef int64_t lanes = _LANES if quarter > 0 else 1
    cdef int64_t length, i, q, c, t, total
    cdef int64_t* lane_count
    if lanes == 1:
        quarter = vocab_size
    lane_count = <int64_t*>calloc(<size_t>(lanes * classes + 1), sizeof(int64_t))
    if lane_count == NULL:
        return _NO_MEMORY
    for q in range(lanes):  # the last lane also takes the tokens past lanes * quarter
        length = quarter if q < lanes - 1 else vocab_size - q * quarter
        for i in range(length):
            c = token_class[q * quarter + i]
            if c < 0 or c >= classes:
                free(lane_count)
                return _BAD_INPUT
    if lanes == _LANES:
        for i in range(quarter):
            lane_count[token_class[i]] += 1
            lane_count[classes + token_class[quarter + i]] += 1
            lane_count[2 * classes + token_class[2 * quarter + i]] += 1
            lane_count[3 * classes + token_class[3 * quarter + i]] += 1
    for t in range((lanes - 1) * quarter + (quarter if lanes == _LANES else 0), vocab_size):
        lane_count[(lanes - 1) * classes + token_class[t]] += 1
    total = 0
    for c in range(classes):  # each lane's counter becomes where its next token of c goes
        starts[c] = total
        for q in range(lanes):
            i = lane_count[q * classes + c]
            lane_count[q * classes + c] = total
            total += i
    starts[classes] = total
    if lanes == _LANES:
        for i in range(quarter):
            c = token_class[i]
            tokens[lane_count[c]] = <int32_t>i
            lane_count[c] += 1
            c = classes + token_class[quarter + i]
            tokens[lane_count[c]] = <int32_t>(quarter + i)
            lane_count[c] += 1
            c = 2 * classes + token_class[2 * quarter + i]
            tokens[lane_count[c]] = <int32_t>(2 * quarter + i)
            lane_count[c] += 1
            c = 3 * classes + token_class[3 * quarter + i]
            tokens[lane_count[c]] = <int32_t>(3 * quarter + i)
            lane_count[c] += 1
    for t in range((lanes - 1) * quarter + (quarter if lanes == _LANES else 0), vocab_size):
        c = (lanes - 1) * classes + token_class[t]
        tokens[lane_count[c]] = <int32_t>t
        lane_count[c] += 1
    free(lane_count)
    return 0


cdef int _pack(
    const uint8_t* allowed,
    const int64_t* row_offsets,
    const int32_t* row_classes,
    int64_t rows,
    int64_t classes,
    const class_t* token_class,
    int64_t vocab_size,
    uint32_t* out,
    int64_t words,
    int64_t window,
) noexcept nogil:
    """Fill ``out`` (zeroed) from the classes of each row, ``allowed`` (rows x classes, 0 or 1) or,
    where that is NULL, the lists ``row_classes[row_offsets[r]:row_offsets[r + 1]]`` (checked
    here): 0, ``BAD_INPUT`` (a class or an offset out of range) or ``_NO_MEMORY``."""
    cdef int64_t* starts = <int64_t*>malloc(<size_t>(classes + 1) * sizeof(int64_t))
    cdef int32_t* tokens = <int32_t*>malloc(<size_t>(vocab_size + 1) * sizeof(int32_t))
    cdef SizedClass* order = <SizedClass*>malloc(<size_t>(classes + 1) * sizeof(SizedClass))
    cdef uint32_t* full = <uint32_t*>malloc(<size_t>(words + 1) * sizeof(uint32_t))
    cdef uint8_t* pattern = NULL  # rows x stride (used classes, biggest first, then zeros),
    # then a row of no class and a row of every class
    cdef int64_t* allowed_tokens = NULL
    cdef int64_t* sizes = NULL  # the used classes' sizes, biggest first, then zeros
    cdef int64_t* class_at = NULL  # the used classes, biggest first, then zeros
    cdef int64_t* rank = NULL  # each class's place among the used ones, -1 for a class of no token
    cdef int64_t j
    cdef int64_t used = 0
    cdef int64_t stride = 0
    cdef int64_t r, k, c, p, first, best, cost, base
    cdef const uint8_t* mine
    cdef const uint8_t* source
    cdef uint8_t* written
    cdef uint32_t* row
    cdef uint8_t bit
    cdef int status = 0
    if starts == NULL or tokens == NULL or order == NULL or full == NULL:
        status = _NO_MEMORY
    if status == 0:
        status = _bucket_tokens(token_class, vocab_size, classes, starts, tokens)
    if status == 0:
        for c in range(classes):
            if starts[c + 1] > starts[c]:
                order[used].size = starts[c + 1] - starts[c]
                order[used].cls = c
                used += 1
        qsort(order, <size_t>used, sizeof(SizedClass), _bigger_first)
        stride = (used + 7) // 8 * 8
        pattern = <uint8_t*>calloc(<size_t>((rows + 2) * stride + 1), 1)
        allowed_tokens = <int64_t*>malloc(<size_t>(rows + 1) * sizeof(int64_t))
        sizes = <int64_t*>calloc(<size_t>(stride + 1), sizeof(int64_t))
        class_at = <int64_t*>calloc(<size_t>(stride + 1), sizeof(int64_t))
        rank = <int64_t*>malloc(<size_t>(classes + 1) * sizeof(int64_t))
        if pattern == NULL or allowed_tokens == NULL or sizes == NULL or class_at == NULL or rank == NULL:
            status = _NO_MEMORY
    if status == 0:
        for c in range(classes):
            rank[c] = -1
        for k in range(used):
            sizes[k] = order[k].size
            class_at[k] = order[k].cls
            rank[order[k].cls] = k
            pattern[(rows + 1) * stride + k] = 1
        if allowed != NULL:
            for r in range(rows):
                cost = 0
                source = allowed + r * classes
                written = pattern + r * stride
                for k in range(used):
                    bit = source[class_at[k]] != 0
                    written[k] = bit
                    cost += sizes[k] * bit
                allowed_tokens[r] = cost
        else:
            if row_offsets[0] != 0:
                status = _BAD_INPUT
            for r in range(rows if status == 0 else 0):
                if row_offsets[r + 1] < row_offsets[r] or row_offsets[r + 1] > row_offsets[rows]:
                    status = _BAD_INPUT
                    break
                cost = 0
                written = pattern + r * stride
                for j in range(row_offsets[r], row_offsets[r + 1]):
                    c = row_classes[j]
                    if c < 0 or c >= classes:
                        status = _BAD_INPUT
                        break
                    k = rank[c]
                    if k >= 0 and not written[k]:  # (a class listed twice counts once)
                        written[k] = 1
                        cost += sizes[k]
                allowed_tokens[r] = cost
                if status != 0:
                    break
    if status == 0:
        memset(full, 0xFF, <size_t>words * sizeof(uint32_t))
        if vocab_size % 32:
            full[words - 1] = ((<uint32_t>1) << (vocab_size % 32)) - 1
        for r in range(rows):
            # base: rows (no token), rows + 1 (every token) or an earlier row
            best = allowed_tokens[r]
            base = rows
            if vocab_size - allowed_tokens[r] < best:
                best = vocab_size - allowed_tokens[r]
                base = rows + 1
            mine = pattern + r * stride
            first = r - window if r > window else 0
            p = r - 1
            while p >= first and best > 0:
                cost = _flip_cost(mine, pattern + p * stride, stride, sizes, best)
                if cost < best:
                    best = cost
                    base = p
                p -= 1
            row = out + r * words
            if base == rows + 1:
                memcpy(row, full, <size_t>words * sizeof(uint32_t))
            elif base < rows:
                memcpy(row, out + base * words, <size_t>words * sizeof(uint32_t))
            _flip_differing(row, mine, pattern + base * stride, stride, class_at, starts, tokens)
    free(starts)
    free(tokens)
    free(order)
    free(full)
    free(pattern)
    free(allowed_tokens)
    free(sizes)
    free(class_at)
    free(rank)
    return status


cdef object _packed(
    const uint8_t* allowed,
    const int64_t* row_offsets,
    const int32_t* row_classes,
    int64_t rows,
    int64_t classes,
    const class_t* token_class,
    int64_t vocab_size,
    Py_ssize_t window,
):
    """``(status, masks)`` of ``_pack`` on masks it allocates (the caller has checked the shapes;
    at least one row and one token)."""
    cdef int64_t words = (vocab_size + 31) // 32
    cdef int status
    masks = np.zeros((rows, words), dtype=np.uint32)
    cdef uint32_t[:, ::1] out = masks
    with nogil:
        status = _pack(
            allowed, row_offsets, row_classes, rows, classes, token_class, vocab_size, &out[0, 0], words, window
        )
    if status == _NO_MEMORY:
        raise MemoryError("token walk: no memory to pack the masks")
    if status != 0:
        return _BAD_INPUT, None
    return _OK, masks


def pack_masks(const uint8_t[:, ::1] allowed, const class_t[::1] token_class, Py_ssize_t window=32):
    """See the module docstring: ``(status, masks)``."""
    cdef int64_t rows = allowed.shape[0]
    cdef int64_t classes = allowed.shape[1]
    cdef int64_t vocab_size = token_class.shape[0]
    if rows == 0 or vocab_size == 0:
        return _OK, np.zeros((rows, (vocab_size + 31) // 32), dtype=np.uint32)
    if classes == 0 or window < 0:
        return _BAD_INPUT, None
    return _packed(&allowed[0, 0], NULL, NULL, rows, classes, &token_class[0], vocab_size, window)


def pack_row_masks(
    const int64_t[::1] row_offsets not None,
    const int32_t[::1] row_classes not None,
    int64_t classes,
    const class_t[::1] token_class,
    Py_ssize_t window=32,
):
    """See the module docstring: ``(status, masks)``."""
    cdef int64_t rows = row_offsets.shape[0] - 1
    cdef int64_t vocab_size = token_class.shape[0]
    cdef const int32_t* listed = NULL
    if rows < 0 or classes < 0 or window < 0 or row_offsets[rows] > row_classes.shape[0]:
        return _BAD_INPUT, None
    if rows == 0 or vocab_size == 0:
        return _OK, np.zeros((rows, (vocab_size + 31) // 32), dtype=np.uint32)
    if classes == 0:
        return _BAD_INPUT, None
    if row_classes.shape[0] > 0:
        listed = &row_classes[0]
    return _packed(NULL, &row_offsets[0], listed, rows, classes, &token_class[0], vocab_size, window)


# ---------------------------------------------------------------------------------------------
# Token classes, numbered by their first token.


def classes_by_first_token(
    const int32_t[::1] node_map,
    const int32_t[::1] node_of_token,
    int64_t eos_id,
    int64_t eos_map,
    int64_t map_count,
):
    """See the module docstring: ``(status, token_class, class_maps)``."""
    cdef int64_t num_nodes = node_map.shape[0]
    cdef int64_t vocab_size = node_of_token.shape[0]
    cdef int64_t node, token, m, count
    cdef int32_t* class_of_map = NULL
    cdef int status = _OK
    if vocab_size < 1 or map_count < 1 or not 0 <= eos_id < vocab_size or not 0 <= eos_map < map_count:
        return _BAD_INPUT, None, None
    token_class = np.empty(vocab_size, dtype=np.int32)
    class_maps = np.empty(min(map_count, vocab_size + 1), dtype=np.int64)
    cdef int32_t[::1] classes_view = token_class
    cdef int64_t[::1] maps_view = class_maps
    cdef int32_t* out_class = &classes_view[0]
    cdef int64_t* out_maps = &maps_view[0]
    cdef const int32_t* maps_of_nodes = &node_map[0]
    cdef const int32_t* nodes = &node_of_token[0]
    try:
        with nogil:
            class_of_map = <int32_t*>malloc(<size_t>map_count * sizeof(int32_t))
            if class_of_map != NULL:
                memset(class_of_map, 0xFF, <size_t>map_count * sizeof(int32_t))
                class_of_map[0] = 0  # the dead map is class 0, whether a token has it or not
                out_maps[0] = 0
                count = 1
                for token in range(vocab_size):
                    node = nodes[token]
                    if node < -1 or node >= num_nodes:
                        status = _BAD_INPUT
                        break
                    m = maps_of_nodes[node] if node >= 0 else 0
                    if token == eos_id:
                        m = eos_map
                    if m < 0 or m >= map_count:
                        status = _BAD_INPUT
                        break
                    if class_of_map[m] < 0:
                        class_of_map[m] = <int32_t>count
                        out_maps[count] = m
                        count += 1
                    out_class[token] = class_of_map[m]
        if class_of_map == NULL:
            raise MemoryError("token walk: no memory to number the token classes")
        if status != _OK:
            return status, None, None
        return _OK, token_class, class_maps[:count]
    finally:
        free(class_of_map)


cdef enum:
    _TILE = 64


cdef struct LiveEdges:
    int64_t* start  # [states + 1]: each state's live bytes, in class order
    uint8_t* byte_cls
    int32_t* target


cdef int _live_edges(
    const int32_t* rows, int64_t num_states, int64_t num_classes, const int64_t* class_bytes,
    LiveEdges* edges, int64_t* looping,
) noexcept nogil:
    """One pass over the table: every state's live bytes (class and target) in ``edges``, and
    the bytes that lead each state back to itself (``looping``): 0, ``_BAD_INPUT`` (a target
    outside the states) or ``_NO_MEMORY``."""
    cdef int64_t s, e = 0, capacity = num_states * 8 + 64
    cdef uint32_t outside = 0
    cdef uint32_t bound = <uint32_t>num_states
    cdef uint8_t* grown_classes
    cdef int32_t* grown_targets
    edges.start = <int64_t*>malloc(<size_t>(num_states + 1) * sizeof(int64_t))
    edges.byte_cls = <uint8_t*>malloc(<size_t>capacity)
    edges.target = <int32_t*>malloc(<size_t>capacity * sizeof(int32_t))
    if edges.start == NULL or edges.byte_cls == NULL or edges.target == NULL:
        return _NO_MEMORY
    edges.start[0] = 0
    for s in range(num_states):
        if e + num_classes > capacity:
            capacity = 2 * capacity + num_classes
            grown_classes = <uint8_t*>realloc(edges.byte_cls, <size_t>capacity)
            if grown_classes == NULL:
                return _NO_MEMORY
            edges.byte_cls = grown_classes
            grown_targets = <int32_t*>realloc(edges.target, <size_t>capacity * sizeof(int32_t))
            if grown_targets == NULL:
                return _NO_MEMORY
            edges.target = grown_targets
        e += _row_edges(
            rows + s * num_classes, num_classes, s, bound, class_bytes, edges.byte_cls + e,
            edges.target + e, looping + s, &outside,
        )
        if outside:
            return _BAD_INPUT
        edges.start[s + 1] = e
    return 0


cdef void _lead_ins(
    const int32_t* rows, int64_t num_states, int64_t num_classes, const int64_t* class_bytes,
    const LiveEdges* edges, const int64_t* looping, int32_t* home,
) noexcept nogil:
    """Each state's home among the homes already in ``home`` (see ``home_states``)."""
    cdef int64_t s, e, c, t, k, found, best, best_count
    cdef int64_t seen_target[256]
    cdef int64_t seen_count[256]
    for s in range(1, num_states):
        if home[s] == s:
            continue
        k = 0
        for e in range(edges.start[s], edges.start[s + 1]):
            c = edges.byte_cls[e]
            t = edges.target[e]
            if home[t] != t or rows[t * num_classes + c] != t:
                continue
            found = -1
            for best in range(k):
                if seen_target[best] == t:
                    found = best
                    break
            if found < 0:
                seen_target[k] = t
                seen_count[k] = 0
                found = k
                k += 1
            seen_count[found] += class_bytes[c]
        best = -1
        best_count = 0
        for found in range(k):
            if 4 * seen_count[found] < 3 * looping[seen_target[found]]:
                continue
            if seen_count[found] > best_count or (seen_count[found] == best_count and seen_target[found] < best):
                best = seen_target[found]
                best_count = seen_count[found]
        if best >= 0:
            home[s] = <int32_t>best


cdef int _insides(
    int64_t num_states, const LiveEdges* edges, const int32_t* home, int64_t depth,
    int32_t* inside_home, uint64_t* signature,
) noexcept nogil:
    """The states inside the homes (see ``grouped_homes``) into ``inside_home`` (a copy of
    ``home``) and ``signature``: 0 or ``_NO_MEMORY``. The states without a home are sorted first:
    those whose live bytes all lead to states of one home, one to the home itself (the first
    level), those that lead to states of two homes or to none (never inside), and the others,
    whose live bytes to states without a home the later levels look at. Last, a search from every
    home through the states given it keeps those it reaches."""
    cdef int64_t s, e, t, j, own, found, level, count = 0
    cdef bint conflict, at_home, open_edges, changed
    cdef int64_t* label = <int64_t*>malloc(<size_t>num_states * sizeof(int64_t))
    cdef int64_t* grouped_home = <int64_t*>malloc(<size_t>num_states * sizeof(int64_t))
    cdef int64_t* pending = <int64_t*>malloc(<size_t>num_states * sizeof(int64_t))
    cdef int32_t* open_states = <int32_t*>malloc(<size_t>num_states * sizeof(int32_t))
    if label == NULL or grouped_home == NULL or pending == NULL or open_states == NULL:
        free(label)
        free(grouped_home)
        free(pending)
        free(open_states)
        return _NO_MEMORY
    for s in range(num_states):
        label[s] = home[s]
    for s in range(1, num_states if depth >= 1 else 1):
        if home[s] >= 0:
            continue
        own = -1
        conflict = False
        at_home = False
        open_edges = False
        for e in range(edges.start[s], edges.start[s + 1]):
            t = edges.target[e]
            if home[t] >= 0:
                if own >= 0 and home[t] != own:
                    conflict = True
                    break
                own = home[t]
                at_home |= home[t] == t
            else:
                open_edges = True
        if conflict or edges.start[s] == edges.start[s + 1]:
            continue
        if open_edges:
            grouped_home[s] = own
            open_states[count] = <int32_t>s
            count += 1
        elif at_home:
            label[s] = -2 - own  # (committed below, so that no state of this level sees it)
    for s in range(1, num_states):
        if label[s] <= -2:
            label[s] = -2 - label[s]
            _mark_inside(edges, s, label[s], inside_home, signature)
    for level in range(2, depth + 1):
        changed = False
        for j in range(count):
            s = open_states[j]
            pending[j] = -1
            if label[s] >= 0:
                continue
            own = grouped_home[s]
            for e in range(edges.start[s], edges.start[s + 1]):
                t = edges.target[e]
                if home[t] >= 0:
                    continue
                found = label[t]
                if found < 0 or (own >= 0 and found != own):
                    own = -1
                    break
                own = found
            pending[j] = own
        for j in range(count):
            if pending[j] >= 0:
                s = open_states[j]
                label[s] = pending[j]
                _mark_inside(edges, s, label[s], inside_home, signature)
                changed = True
        if not changed:
            break
    count = 0
    for s in range(1, num_states):
        if home[s] == s:
            open_states[count] = <int32_t>s
            count += 1
    while count > 0:  # the search from the homes (a state is pushed once: its label goes)
        count -= 1
        s = open_states[count]
        own = inside_home[s]
        for e in range(edges.start[s], edges.start[s + 1]):
            t = edges.target[e]
            if home[t] < 0 and label[t] >= 0 and inside_home[t] == own:
                label[t] = -1
                open_states[count] = <int32_t>t
                count += 1
    for s in range(1, num_states):
        if home[s] < 0 and label[s] >= 0:
            inside_home[s] = -1
            signature[s] = 0
    free(label)
    free(grouped_home)
    free(pending)
    free(open_states)
    return 0


cdef inline void _mark_inside(
    const LiveEdges* edges, int64_t s, int64_t own, int32_t* inside_home, uint64_t* signature
) noexcept nogil:
    """State ``s`` inside home ``own``: its home and its signature (see ``grouped_homes``), the
    hash of its live classes, each with its code (1 to the home itself, 2 elsewhere; the classes
    not listed die)."""
    cdef uint64_t h = <uint64_t>0x84222325CBF29CE4
    cdef int64_t e
    for e in range(edges.start[s], edges.start[s + 1]):
        h = (h ^ <uint64_t>(2 * edges.byte_cls[e] + (1 if edges.target[e] == own else 2))) * <uint64_t>0x100000001B3
    inside_home[s] = <int32_t>own
    signature[s] = _mix(h) | (<uint64_t>1 << 63)


cdef object _homes(
    const int32_t[:, ::1] table, const int32_t[::1] byte_class, int64_t least, int64_t fewest_homes,
    int64_t depth, bint insides,
):
    """``home_states`` (``insides`` false) or ``grouped_homes``, from one pass over the table."""
    cdef int64_t num_states = table.shape[0]
    cdef int64_t num_classes = table.shape[1]
    cdef int64_t s, c, homes = 0
    cdef int status = 0
    cdef int64_t class_bytes[256]
    cdef LiveEdges edges
    cdef int64_t* looping = NULL
    if (
        byte_class.shape[0] != 256 or num_classes > 256 or num_classes < 1 or num_states < 1
        or depth < 0
    ):
        return (_BAD_INPUT, None, None, None) if insides else (_BAD_INPUT, None)
    memset(class_bytes, 0, sizeof(class_bytes))
    for c in range(256):
        if byte_class[c] < 0 or byte_class[c] >= num_classes:
            return (_BAD_INPUT, None, None, None) if insides else (_BAD_INPUT, None)
        class_bytes[byte_class[c]] += 1
    home = np.full(num_states, -1, dtype=np.int32)
    inside_home = np.full(num_states, -1, dtype=np.int32)
    signature = np.zeros(num_states, dtype=np.uint64)
    cdef int32_t[::1] home_view = home
    cdef int32_t[::1] inside_view = inside_home
    cdef uint64_t[::1] signature_view = signature
    memset(&edges, 0, sizeof(LiveEdges))
    try:
        with nogil:
            looping = <int64_t*>malloc(<size_t>num_states * sizeof(int64_t))
            status = _NO_MEMORY if looping == NULL else _live_edges(
                &table[0, 0], num_states, num_classes, class_bytes, &edges, looping
            )
            if status == 0:
                for s in range(1, num_states):  # the homes: at least ``least`` bytes lead back
                    if looping[s] >= least:
                        home_view[s] = <int32_t>s
                        homes += 1
                if homes >= fewest_homes:  # the lead-ins: bytes that their home keeps, to it
                    _lead_ins(&table[0, 0], num_states, num_classes, class_bytes, &edges, looping, &home_view[0])
                if insides:
                    memcpy(&inside_view[0], &home_view[0], <size_t>num_states * sizeof(int32_t))
                    if homes >= fewest_homes:
                        status = _insides(
                            num_states, &edges, &home_view[0], depth, &inside_view[0], &signature_view[0]
                        )
        if status == _NO_MEMORY:
            raise MemoryError("token walk: no memory to find the homes")
        if status != 0:
            return (_BAD_INPUT, None, None, None) if insides else (_BAD_INPUT, None)
        return (_OK, home, inside_home, signature) if insides else (_OK, home)
    finally:
        free(looping)
        free(edges.start)
        free(edges.byte_cls)
        free(edges.target)


def home_states(
    const int32_t[:, ::1] table not None,
    const int32_t[::1] byte_class not None,
    int64_t least,
    int64_t fewest_homes=0,
):
    """See the module docstring: ``(status, home)``."""
    return _homes(table, byte_class, least, fewest_homes, 0, False)


def grouped_homes(
    const int32_t[:, ::1] table not None,
    const int32_t[::1] byte_class not None,
    int64_t least,
    int64_t fewest_homes,
    int64_t depth,
):
    """See the module docstring: ``(status, home, inside_home, signature)``."""
    return _homes(table, byte_class, least, fewest_homes, depth, True)


def state_columns(const int32_t[:, ::1] table not None, bint narrow):
    """See the module docstring: ``(status, columns)``."""
    cdef int64_t num_states = table.shape[0]
    cdef int64_t num_classes = table.shape[1]
    cdef uint32_t outside = 0
    cdef uint16_t[:, ::1] narrow_view
    cdef int32_t[:, ::1] wide_view
    if num_states < 1 or num_classes < 1 or (narrow and num_states > 65535):
        return _BAD_INPUT, None
    columns = np.empty((num_classes, num_states), dtype=np.uint16 if narrow else np.int32)
    if narrow:
        narrow_view = columns
        with nogil:
            outside = _tiles(&table[0, 0], &narrow_view[0, 0], num_states, num_classes)
    else:
        wide_view = columns
        with nogil:
            outside = _tiles(&table[0, 0], &wide_view[0, 0], num_states, num_classes)
    if outside:
        return _BAD_INPUT, None
    return _OK, columns


cdef uint32_t _tiles(
    const int32_t* rows, state_t* out, int64_t num_states, int64_t num_classes
) noexcept nogil:
    """``out[c, s] = rows[s, c]`` tile by tile; non-zero when a target is outside the states."""
    cdef int64_t s0 = 0, c0, s, c, s_end, c_end
    cdef uint32_t target, outside = 0
    cdef uint32_t bound = <uint32_t>num_states
    while s0 < num_states:
        s_end = s0 + _TILE if s0 + _TILE < num_states else num_states
        c0 = 0
        while c0 < num_classes:
            c_end = c0 + _TILE if c0 + _TILE < num_classes else num_classes
            for s in range(s0, s_end):
                for c in range(c0, c_end):
                    target = <uint32_t>rows[s * num_classes + c]  # a negative one wraps past bound
                    outside |= target >= bound
                    out[c * num_states + s] = <state_t>target
            c0 = c_end
        s0 = s_end
    return outside


# ---------------------------------------------------------------------------------------------
# The fewest tokens from each state to a valid end: a reverse breadth-first search.


cdef int _reverse_edges(
    const int64_t[::1] next_offsets,
    const state_t[::1] next_states,
    const int32_t[::1] state_row,
    const int64_t[::1] row_class_offsets,
    const int32_t[::1] row_classes,
    const uint8_t[::1] usable,
    int64_t* starts,
    int64_t* stamp,
    int32_t* preds,
) noexcept nogil:
    """Each distinct edge ``s -> t`` of the table over a usable class, self loops left out: with
    ``preds`` NULL, counted into ``starts[t + 1]`` (zeroed), every index checked (``_BAD_INPUT``);
    else written at ``preds[starts[t]]``, which moves on (the arrays were checked by the count)."""
    cdef int64_t states = state_row.shape[0]
    cdef int64_t rows = row_class_offsets.shape[0] - 1
    cdef int64_t classes = usable.shape[0]
    cdef int64_t entries = next_states.shape[0]
    cdef int64_t s, e, t, c, row, low, high, first
    for s in range(states):
        stamp[s] = -1
    for s in range(states):
        row = state_row[s]
        low = next_offsets[s]
        high = next_offsets[s + 1]
        if preds == NULL:
            if row < 0 or row >= rows or low > high or high > entries:
                return _BAD_INPUT
            first = row_class_offsets[row]
            if first < 0 or row_class_offsets[row + 1] - first != high - low or (
                row_class_offsets[row + 1] > row_classes.shape[0]
            ):
                return _BAD_INPUT
        first = row_class_offsets[row]
        for e in range(low, high):
            t = next_states[e]
            c = row_classes[first + e - low]
            if preds == NULL and (t < 0 or t >= states or c < 0 or c >= classes):
                return _BAD_INPUT
            if usable[c] and t != s and stamp[t] != s:
                stamp[t] = s
                if preds == NULL:
                    starts[t + 1] += 1
                else:
                    preds[starts[t]] = <int32_t>s
                    starts[t] += 1
    return _OK


def fewest_steps(
    const int64_t[::1] next_offsets not None,
    const state_t[::1] next_states not None,
    const int32_t[::1] state_row not None,
    const int64_t[::1] row_class_offsets not None,
    const int32_t[::1] row_classes not None,
    const uint8_t[::1] usable not None,
    const uint8_t[::1] accepting not None,
):
    """See ``moonmaskc.runtime_budget.fewest_tokens_to_eos``: ``(status, steps)``, ``steps``
    int32[states] (-1 where no ending, 0 for the dead state 0, 1 where ``accepting``), from the
    compact next-state table and the classes that may move the text on (``usable``, 0 or 1).
    Every index is checked before use: status ``BAD_INPUT`` (``steps`` ``None``) for arrays that
    break the table's contract."""
    cdef int64_t states = state_row.shape[0]
    cdef int64_t s, e, t, low, head, tail, q
    cdef int status = _OK
    cdef int64_t* starts = NULL  # reverse adjacency (CSR): the predecessors of t, distinct
    cdef int32_t* preds = NULL
    cdef int64_t* stamp = NULL  # the last source that gave t an edge (distinct edges per source)
    cdef int32_t* queue = NULL
    if (
        states < 1
        or next_offsets.shape[0] != states + 1
        or accepting.shape[0] != states
        or row_class_offsets.shape[0] < 1
        or next_offsets[0] != 0
        or next_offsets[states] != next_states.shape[0]
    ):
        return _BAD_INPUT, None
    steps = np.full(states, -1, dtype=np.int32)
    cdef int32_t[::1] out = steps
    try:
        with nogil:
            starts = <int64_t*>calloc(<size_t>(states + 1), sizeof(int64_t))
            stamp = <int64_t*>malloc(<size_t>states * sizeof(int64_t))
            queue = <int32_t*>malloc(<size_t>states * sizeof(int32_t))
            if starts == NULL or stamp == NULL or queue == NULL:
                status = _NO_MEMORY
            if status == _OK:  # count each target's distinct predecessors, checking every index
                status = _reverse_edges(
                    next_offsets, next_states, state_row, row_class_offsets, row_classes, usable,
                    starts, stamp, NULL,
                )
            if status == _OK:
                for t in range(states):
                    starts[t + 1] += starts[t]
                preds = <int32_t*>malloc(<size_t>(starts[states] + 1) * sizeof(int32_t))
                if preds == NULL:
                    status = _NO_MEMORY
            if status == _OK:
                _reverse_edges(
                    next_offsets, next_states, state_row, row_class_offsets, row_classes, usable,
                    starts, stamp, preds,
                )
                # starts[t] now holds t's end: its start is the previous target's end.
                head = 0
                tail = 0
                for s in range(1, states):
                    if accepting[s]:
                        out[s] = 1
                        queue[tail] = <int32_t>s
                        tail += 1
                while head < tail:
                    t = queue[head]
                    head += 1
                    low = starts[t - 1] if t > 0 else 0
                    for e in range(low, starts[t]):
                        q = preds[e]
                        if q != 0 and out[q] < 0:
                            out[q] = out[t] + 1
                            queue[tail] = <int32_t>q
                            tail += 1
                out[0] = 0
        if status == _NO_MEMORY:
            raise MemoryError("token walk: no memory for the fewest steps to eos")
        if status != _OK:
            return status, None
        return _OK, steps
    finally:
        free(starts)
        free(preds)
        free(stamp)
        free(queue)
