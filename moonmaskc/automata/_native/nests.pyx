# cython: language_level=3
"""Native core of the nest regions: their rows in a DFA (``automata.nested``) and the tokens
that close their containers (``moonmaskc.nest_tokens``).

``unspelled_count(...)``: how many states ``nest_tokens.unspelled_endings`` names (the numpy
twin).

``expand_table(...)``: the table of ``nested.expand_nests`` with each marker edge's region
written in, before its columns are merged (see its docstring); ``nested._expanded_rows`` is the
numpy twin.

``popping_tokens(table, byte_class, pop_role, pops, node_parent, node_byte, node_token_offsets,
node_token_ids, token_ids, prune_from_nodes=PRUNE_FROM_NODES)``
  Takes: a DFA with nest regions, as ``table`` int32[S, C] (state 0 dead), ``byte_class``
  int32[256], ``pop_role`` int32[S] (the role of each state of a nested copy, copy >= 1 of a
  region; -1 for every other state) and ``pops`` uint8[roles, 256] (the bytes that close a
  container from a role); a byte trie numbered breadth first (``node_parent`` int32[N], the
  root's -1, every other node's below its own number and not below the previous node's;
  ``node_byte`` uint8[N];
  ``node_token_offsets`` int64[N + 1] and ``node_token_ids`` int32[T], the trie's own ids of the
  tokens ending at each node); ``token_ids`` int32[V], the id to hand on for each of the trie's
  token ids.
  Hands on ``(status, offsets, ids)``: for every state ``q``, the tokens whose walk from ``q``
  meets a pop (a byte of ``pops[pop_role[p]]`` read in a state ``p`` with ``pop_role[p] >= 0``)
  before a dead edge, as ``ids[offsets[q]:offsets[q + 1]]`` (int32, ``offsets`` int32[S + 1]),
  their ``token_ids`` in increasing order (one entry per trie entry). ``status`` is
  ``OK``, or ``BAD_INPUT`` (nothing else returned) when an array has the wrong shape or an index
  is out of range, or ``NO_MEMORY``.

``prune_from_nodes``: tries of more nodes are walked with pruning (below).

How: from every state, a depth-first walk of the trie (children are contiguous in breadth-first
numbering) that leaves out dead prefixes; under a pop every token of the subtree pops. The states
of one role in nested copies share their tokens (a nested copy's walk never leaves the copy before
it pops, whatever the region: ``nest_tokens``), so each role is walked once. On a trie of more
than ``prune_from_nodes`` nodes, a subtree is walked only while a state that pops on some byte is
within its height, by the fewest bytes from each state to such a state (a breadth-first search
backwards over the live edges, up to the trie's height): Llama-3's closing tokens (1,554 nodes)
walk 2x faster so, GPT-2's (123) faster whole. ``nest_tokens.dynamic_tokens_of`` is the
pure-Python twin (a probe DFA and its token table); the inputs are checked before any walk.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcpy

from moonmaskc.automata._native.table_checks cimport targets_in_range

import numpy as np

OK = 0
BAD_INPUT = 1
NO_MEMORY = 2

cdef int32_t _FAR = 2147483647  # no pop within reach


cdef int _by_value(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0]
    cdef int32_t y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef struct Found:
    int32_t* ids
    int64_t count
    int64_t capacity


cdef int _found_reserve(Found* found, int64_t need) noexcept nogil:
    """Room for ``need`` more entries (1 when there is no memory for them)."""
    cdef int32_t* grown
    if found.count + need > found.capacity:
        found.capacity = 2 * found.capacity + need + 64
        grown = <int32_t*>realloc(found.ids, found.capacity * sizeof(int32_t))
        if grown == NULL:
            return 1
        found.ids = grown
    return 0


cdef int _found_add(Found* found, const int64_t* token_offsets, const int32_t* token_ids_at,
                    const int32_t* token_ids, int64_t node) noexcept nogil:
    """The tokens ending at ``node``, listed."""
    cdef int64_t i
    if _found_reserve(found, token_offsets[node + 1] - token_offsets[node]):
        return 1
    for i in range(token_offsets[node], token_offsets[node + 1]):
        found.ids[found.count] = token_ids[token_ids_at[i]]
        found.count += 1
    return 0


cdef int _found_copy(Found* found, int64_t low, int64_t high) noexcept nogil:
    """Entries ``low .. high - 1`` of the list appended again."""
    if high <= low:
        return 0
    if _found_reserve(found, high - low):
        return 1
    memcpy(found.ids + found.count, found.ids + low, (high - low) * sizeof(int32_t))
    found.count += high - low
    return 0


cdef int _pop_distances(
    const int32_t* table, int64_t num_states, int64_t num_classes, const int32_t* pop_role,
    const uint8_t* role_pops, int32_t reach, int32_t* distance
) noexcept nogil:
    """``distance[p]``: the fewest bytes from ``p`` to a state that pops on some byte, by a
    breadth-first search backwards over the live edges, up to ``reach`` (``_FAR`` beyond)."""
    cdef int64_t* at = <int64_t*>calloc(num_states + 1, sizeof(int64_t))
    cdef int32_t* sources = NULL
    cdef int32_t* queue = <int32_t*>malloc(num_states * sizeof(int32_t))
    cdef int64_t s, c, i, head = 0, tail = 0, edges = 0
    cdef int32_t t, role
    if at == NULL or queue == NULL:
        free(at)
        free(queue)
        return 1
    for s in range(1, num_states):
        for c in range(num_classes):
            t = table[s * num_classes + c]
            if t != 0:
                at[t + 1] += 1
                edges += 1
    for s in range(num_states):
        at[s + 1] += at[s]
    sources = <int32_t*>malloc((edges + 1) * sizeof(int32_t))
    if sources == NULL:
        free(at)
        free(queue)
        return 1
    for s in range(1, num_states):
        for c in range(num_classes):
            t = table[s * num_classes + c]
            if t != 0:
                sources[at[t]] = <int32_t>s
                at[t] += 1
    for s in range(num_states, 0, -1):  # back to the starts
        at[s] = at[s - 1]
    at[0] = 0
    for s in range(num_states):
        distance[s] = _FAR
        role = pop_role[s]
        if s != 0 and role >= 0 and role_pops[role]:
            distance[s] = 0
            queue[tail] = <int32_t>s
            tail += 1
    while head < tail:
        t = queue[head]
        head += 1
        if distance[t] >= reach:
            continue
        for i in range(at[t], at[t + 1]):
            s = sources[i]
            if distance[s] == _FAR:
                distance[s] = distance[t] + 1
                queue[tail] = <int32_t>s
                tail += 1
    free(at)
    free(sources)
    free(queue)
    return 0


cdef struct Trie:
    const int32_t* node_parent
    const uint8_t* node_byte
    int64_t num_nodes
    const int64_t* token_offsets
    const int32_t* token_ids_at
    const int32_t* token_ids
    int64_t* first_child  # node p's children: first_child[p] .. first_child[p + 1] - 1
    int32_t* height  # the most bytes below each node
    int64_t* stack_node  # scratch for the walks
    int32_t* stack_state
    int64_t* under


cdef int _list_subtree(const Trie* trie, int64_t root, Found* found) noexcept nogil:
    """Every token of ``root``'s subtree, listed."""
    cdef int64_t below = 1, node, child
    trie.under[0] = root
    while below > 0:
        below -= 1
        node = trie.under[below]
        if _found_add(found, trie.token_offsets, trie.token_ids_at, trie.token_ids, node):
            return 1
        for child in range(trie.first_child[node], trie.first_child[node + 1]):
            trie.under[below] = child
            below += 1
    return 0


cdef int _walk_from(
    const Trie* trie, int32_t start, const int32_t* table, int64_t num_classes,
    const int32_t* byte_class, const int32_t* pop_role, const uint8_t* pops,
    const int32_t* distance, Found* found
) noexcept nogil:
    """The tokens that pop from ``start``, listed: a subtree is walked only while a pop is within
    its height (``distance``); under a pop every token of the subtree pops."""
    cdef int64_t top = 1, node, child
    cdef int32_t state, role, target, byte
    trie.stack_node[0] = 0
    trie.stack_state[0] = start
    while top > 0:
        top -= 1
        node = trie.stack_node[top]
        state = trie.stack_state[top]
        role = pop_role[state]
        for child in range(trie.first_child[node], trie.first_child[node + 1]):
            byte = trie.node_byte[child]
            if role >= 0 and pops[role * 256 + byte]:
                if _list_subtree(trie, child, found):
                    return 1
                continue
            target = table[state * num_classes + byte_class[byte]]
            if target != 0 and distance[target] < trie.height[child]:
                trie.stack_node[top] = child
                trie.stack_state[top] = target
                top += 1
    return 0


cdef int _walk_all(
    Trie* trie,
    const int32_t* table,
    int64_t num_states,
    int64_t num_classes,
    const int32_t* byte_class,
    const int32_t* pop_role,
    const uint8_t* pops,
    int32_t* distance,
    const uint8_t* role_pops,
    int64_t prune_from_nodes,
    int32_t* offsets,
    int64_t* role_first,
    Found* found,
) noexcept nogil:
    cdef int64_t q, node, first
    cdef int32_t role
    for node in range(1, trie.num_nodes):
        trie.first_child[trie.node_parent[node] + 1] += 1
    trie.first_child[0] = 1
    for node in range(1, trie.num_nodes + 1):
        trie.first_child[node] += trie.first_child[node - 1]
    for node in range(trie.num_nodes - 1, 0, -1):
        if trie.height[node] + 1 > trie.height[trie.node_parent[node]]:
            trie.height[trie.node_parent[node]] = trie.height[node] + 1
    if trie.num_nodes <= prune_from_nodes:
        for q in range(num_states):
            distance[q] = 0  # a few nodes: walked whole, cheaper than the search that prunes
    elif _pop_distances(table, num_states, num_classes, pop_role, role_pops, trie.height[0], distance):
        return 1
    offsets[0] = 0
    for q in range(num_states):
        first = found.count
        role = pop_role[q]
        if role >= 0 and role_first[role] >= 0:
            # A nested copy's walk never leaves it before it pops: the same tokens for each state
            # of one role, whatever its region.
            if _found_copy(found, offsets[role_first[role]], offsets[role_first[role] + 1]):
                return 1
        elif q != 0 and distance[q] < trie.height[0]:
            if _walk_from(trie, <int32_t>q, table, num_classes, byte_class, pop_role, pops, distance, found):
                return 1
            if found.count - first > 1:
                qsort(found.ids + first, found.count - first, sizeof(int32_t), _by_value)
        if role >= 0 and role_first[role] < 0:
            role_first[role] = q
        if found.count > 2147483647:
            return 1
        offsets[q + 1] = <int32_t>found.count
    return 0


PRUNE_FROM_NODES = 512
"""Tries of more nodes than this are walked with the pop distances' pruning: GPT-2's closing
tokens (123 nodes) walk faster whole, Llama-3's (1,554) faster pruned (by 2x on 7,806 states)."""


def popping_tokens(
    const int32_t[:, ::1] table not None,
    const int32_t[::1] byte_class not None,
    const int32_t[::1] pop_role not None,
    const uint8_t[:, ::1] pops not None,
    const int32_t[::1] node_parent not None,
    const uint8_t[::1] node_byte not None,
    const int64_t[::1] node_token_offsets not None,
    const int32_t[::1] node_token_ids not None,
    const int32_t[::1] token_ids not None,
    int64_t prune_from_nodes=PRUNE_FROM_NODES,
):
    """See the module docstring: ``(status, offsets, ids)``."""
    cdef int64_t num_states = table.shape[0]
    cdef int64_t num_classes = table.shape[1]
    cdef int64_t num_roles = pops.shape[0]
    cdef int64_t num_nodes = node_parent.shape[0]
    cdef int64_t num_listed = node_token_ids.shape[0]
    cdef int64_t num_tokens = token_ids.shape[0]
    cdef int64_t s, c, i
    cdef int64_t count = 0
    cdef int failed
    if (
        num_states < 1
        or num_classes < 1
        or byte_class.shape[0] != 256
        or pop_role.shape[0] != num_states
        or pops.shape[1] != 256
        or num_nodes < 1
        or node_byte.shape[0] != num_nodes
        or node_token_offsets.shape[0] != num_nodes + 1
        or node_parent[0] != -1
        or node_token_offsets[0] != 0
        or node_token_offsets[num_nodes] != num_listed
    ):
        return BAD_INPUT, None, None
    if not targets_in_range(&table[0, 0], num_states * num_classes, num_states):
        return BAD_INPUT, None, None
    for s in range(num_states):
        if pop_role[s] < -1 or pop_role[s] >= num_roles:
            return BAD_INPUT, None, None
    for c in range(256):
        if byte_class[c] < 0 or byte_class[c] >= num_classes:
            return BAD_INPUT, None, None
    for i in range(1, num_nodes):
        if node_parent[i] < 0 or node_parent[i] >= i or node_parent[i] < node_parent[i - 1]:
            return BAD_INPUT, None, None
        if node_token_offsets[i] > node_token_offsets[i + 1]:
            return BAD_INPUT, None, None
    if node_token_offsets[0] > node_token_offsets[1]:
        return BAD_INPUT, None, None
    for i in range(num_listed):
        if node_token_ids[i] < 0 or node_token_ids[i] >= num_tokens:
            return BAD_INPUT, None, None
    offsets = np.empty(num_states + 1, dtype=np.int32)
    cdef int32_t[::1] offsets_view = offsets
    cdef Trie trie
    cdef Found found
    found.ids = NULL
    found.count = 0
    found.capacity = 0
    trie.node_parent = &node_parent[0]
    trie.node_byte = &node_byte[0]
    trie.num_nodes = num_nodes
    trie.token_offsets = &node_token_offsets[0]
    trie.token_ids_at = &node_token_ids[0] if num_listed > 0 else NULL
    trie.token_ids = &token_ids[0] if num_tokens > 0 else NULL
    trie.first_child = <int64_t*>calloc(num_nodes + 1, sizeof(int64_t))
    trie.height = <int32_t*>calloc(num_nodes, sizeof(int32_t))
    trie.stack_node = <int64_t*>malloc(num_nodes * sizeof(int64_t))
    trie.stack_state = <int32_t*>malloc(num_nodes * sizeof(int32_t))
    trie.under = <int64_t*>malloc(num_nodes * sizeof(int64_t))
    cdef int32_t* distance = <int32_t*>malloc(num_states * sizeof(int32_t))
    cdef int64_t* role_first = <int64_t*>malloc((num_roles + 1) * sizeof(int64_t))
    cdef uint8_t* role_pops = <uint8_t*>calloc(num_roles + 1, sizeof(uint8_t))
    failed = (
        trie.first_child == NULL or trie.height == NULL or trie.stack_node == NULL
        or trie.stack_state == NULL or trie.under == NULL or distance == NULL or role_first == NULL
        or role_pops == NULL
    )
    if not failed:
        for i in range(num_roles):
            role_first[i] = -1
            for c in range(256):
                if pops[i, c]:
                    role_pops[i] = 1
                    break
        with nogil:
            failed = _walk_all(
                &trie,
                &table[0, 0],
                num_states,
                num_classes,
                &byte_class[0],
                &pop_role[0],
                &pops[0, 0] if num_roles > 0 else NULL,
                distance,
                role_pops,
                prune_from_nodes,
                &offsets_view[0],
                role_first,
                &found,
            )
    free(trie.first_child)
    free(trie.height)
    free(trie.stack_node)
    free(trie.stack_state)
    free(trie.under)
    free(distance)
    free(role_first)
    free(role_pops)
    count = found.count
    if failed:
        free(found.ids)
        return NO_MEMORY, None, None
    ids = np.empty(count, dtype=np.int32)
    cdef int32_t[::1] ids_view = ids
    for i in range(count):
        ids_view[i] = found.ids[i]
    free(found.ids)
    return OK, offsets, ids


# -- nest regions written into a DFA (``automata.nested.expand_nests``) ---------------------------

SHARED_START = 3
GOES_ON = 4

cdef enum:
    _DEAD_CODE = -1
    _EXIT_CODE = -2
    _SOURCE_CODE = -3


cdef int _by_value64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef inline int32_t _placed_code(int64_t code, int64_t base, int32_t source, int32_t exit_state) noexcept nogil:
    if code >= 0:
        return <int32_t>(base + code)
    if code == _SOURCE_CODE:
        return source
    if code == _EXIT_CODE:
        return exit_state
    return 0


cdef bint _codes_valid(const int64_t* codes, int64_t size, int64_t block_size) noexcept nogil:
    cdef int64_t i
    for i in range(size):
        if codes[i] < _SOURCE_CODE or codes[i] >= block_size:
            return False
    return True


def expand_table(
    const int32_t[:, ::1] table not None,
    const int32_t[::1] byte_class not None,
    const uint8_t[::1] accepting not None,
    const int32_t[::1] level_class not None,
    int64_t level_classes,
    int64_t marker,
    const int64_t[:, ::1] block not None,
    const int64_t[::1] start_codes not None,
    const uint8_t[::1] starts not None,
    const uint8_t[::1] goes_on not None,
    const int64_t[::1] goes_on_local not None,
    const int64_t[:, ::1] return_codes not None,
):
    """The table of ``expand_nests`` before its columns are merged: ``(status, expanded, joint,
    sources, exits, returns)``.

    Takes the DFA (``table`` int32[S, C], ``byte_class``, ``accepting`` uint8[S]), the level's
    byte classes (``level_class``, ``level_classes`` of them), the marker byte, and the template
    of one region (``nested._Template``): ``block`` int64[B, 256] and ``start_codes`` int64[256]
    as codes (a block state, or -1 dead, -2 the region's exit, -3 its source), ``starts`` and
    ``goes_on`` uint8[256], ``goes_on_local`` int64[G] (block states), ``return_codes``
    int64[2, kinds]. Works on the joint classes of the DFA's and the level's bytes, the marker in
    a class of its own (``joint`` int32[256]: the class of each byte, classes numbered by their
    sorted keys, as ``np.unique`` numbers them). Each live edge on the marker (``sources``, in
    state order, with its target in ``exits``) becomes a region: the block's rows appended
    (``expanded`` int32[S + R * B, J]), the source's row led into the block, ``returns``
    int32[R, 2, kinds] placed. ``status`` ``SHARED_START`` / ``GOES_ON`` (a source, or an exit,
    that one stack cannot run: the region cannot be expanded), ``BAD_INPUT``, or ``OK``; with no live
    edge on the marker, ``OK`` and no sources."""
    cdef int64_t num_states = table.shape[0], num_classes = table.shape[1]
    cdef int64_t block_size = block.shape[0], kinds = return_codes.shape[1]
    cdef int64_t count = goes_on_local.shape[0]
    cdef int64_t b, j, k, s, r, g, key, column, marker_column, regions, total, base, row
    cdef int64_t[256] keys
    cdef int32_t[256] rep
    cdef int32_t joint_count = 0
    cdef int32_t source, exit_state, value, placed
    cdef int64_t code
    if (
        num_states < 1 or num_classes < 1 or byte_class.shape[0] != 256 or level_class.shape[0] != 256
        or accepting.shape[0] != num_states or level_classes < 1 or marker < 0 or marker > 255
        or block.shape[1] != 256 or start_codes.shape[0] != 256 or starts.shape[0] != 256
        or goes_on.shape[0] != 256 or return_codes.shape[0] != 2 or level_classes > (1 << 30)
    ):
        return BAD_INPUT, None, None, None, None, None
    if not targets_in_range(&table[0, 0], num_states * num_classes, num_states):
        return BAD_INPUT, None, None, None, None, None
    for b in range(256):
        if byte_class[b] < 0 or byte_class[b] >= num_classes:
            return BAD_INPUT, None, None, None, None, None
        if level_class[b] < 0 or level_class[b] >= level_classes:
            return BAD_INPUT, None, None, None, None, None
    # (the block's codes are checked as they are read: only the joint classes' columns are)
    if not _codes_valid(&start_codes[0], 256, block_size):
        return BAD_INPUT, None, None, None, None, None
    if kinds > 0 and not _codes_valid(&return_codes[0, 0], 2 * kinds, block_size):
        return BAD_INPUT, None, None, None, None, None
    for g in range(count):
        if goes_on_local[g] < 0 or goes_on_local[g] >= block_size:
            return BAD_INPUT, None, None, None, None, None
    # The joint classes: bytes sorted by (key, byte), one class per distinct key.
    for b in range(256):  # (key + 1) * 256 + byte: the marker's key, -1, first
        key = 0 if b == marker else <int64_t>byte_class[b] * level_classes + level_class[b] + 1
        keys[b] = key * 256 + b
    qsort(keys, 256, sizeof(int64_t), _by_value64)
    joint = np.empty(256, dtype=np.int32)
    cdef int32_t[::1] joint_view = joint
    for b in range(256):
        if b == 0 or keys[b] // 256 != keys[b - 1] // 256:
            rep[joint_count] = <int32_t>(keys[b] % 256)
            joint_count += 1
        joint_view[keys[b] % 256] = joint_count - 1
    marker_column = joint_view[marker]
    column = byte_class[marker]
    regions = 0
    for s in range(1, num_states):
        if table[s, column] != 0:
            regions += 1
    if regions == 0:
        return OK, None, joint, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), None
    total = num_states + regions * block_size
    if total > 2147483647:
        return BAD_INPUT, None, None, None, None, None
    expanded = np.empty((total, joint_count), dtype=np.int32)
    cdef int32_t[:, ::1] out = expanded
    for s in range(num_states):
        for j in range(joint_count):
            out[s, j] = table[s, byte_class[rep[j]]]
    sources = np.empty(regions, dtype=np.int32)
    exits = np.empty(regions, dtype=np.int32)
    cdef int32_t[::1] sources_view = sources
    cdef int32_t[::1] exits_view = exits
    r = 0
    for s in range(1, num_states):
        if table[s, column] == 0:
            continue
        if accepting[s]:
            return SHARED_START, None, None, None, None, None
        for j in range(joint_count):
            if j != marker_column and out[s, j] != 0 and starts[rep[j]]:
                return SHARED_START, None, None, None, None, None
        sources_view[r] = <int32_t>s
        exits_view[r] = out[s, marker_column]
        r += 1
    returns = np.empty((regions, 2, kinds), dtype=np.int32)
    cdef int32_t[:, :, ::1] returns_view = returns
    for r in range(regions):
        source = sources_view[r]
        exit_state = exits_view[r]
        base = num_states + r * block_size
        for j in range(joint_count):
            if goes_on[rep[j]] and out[exit_state, j] != 0:
                return GOES_ON, None, None, None, None, None
        for b in range(block_size):
            for j in range(joint_count):
                code = block[b, rep[j]]
                if code < _SOURCE_CODE or code >= block_size:
                    return BAD_INPUT, None, None, None, None, None
                out[base + b, j] = _placed_code(code, base, source, exit_state)
        for g in range(count):
            row = base + goes_on_local[g]
            for j in range(joint_count):
                value = out[exit_state, j]
                if value != 0:
                    out[row, j] = value
        for j in range(joint_count):
            placed = _placed_code(start_codes[rep[j]], base, source, exit_state)
            if placed != 0:
                out[source, j] = placed
            elif j == marker_column:
                out[source, j] = 0
        for k in range(2):
            for j in range(kinds):
                returns_view[r, k, j] = _placed_code(return_codes[k, j], base, source, exit_state)
    return OK, expanded, joint, sources, exits, returns


# -- the budgets' fact (``nest_tokens.unspelled_endings``) ---------------------------------------


def unspelled_count(
    const int32_t[:, ::1] table not None,
    const int32_t[::1] byte_class not None,
    const int32_t[::1] distance not None,
    const uint8_t[::1] singles not None,
    const uint8_t[:, ::1] pops not None,
    const int32_t[::1] region not None,
    const int32_t[::1] copy not None,
    const int32_t[::1] role not None,
    const int32_t[::1] level_distance not None,
    const uint8_t[::1] open_bytes not None,
):
    """How many states of a DFA with nest regions have no fewest-bytes ending spelled one byte per
    token (``nest_tokens.unspelled_endings``, which is the numpy twin and says what this means):
    ``(status, count)``, ``status`` ``OK`` or ``BAD_INPUT``."""
    cdef int64_t num_states = table.shape[0], num_classes = table.shape[1]
    cdef int64_t num_roles = pops.shape[0]
    cdef int64_t s, c, b, r, stuck = 0
    cdef int32_t d, t
    cdef bint all_spelled = True, found
    if (
        num_states < 1 or num_classes < 1 or byte_class.shape[0] != 256 or singles.shape[0] != 256
        or pops.shape[1] != 256 or distance.shape[0] != num_states or region.shape[0] != num_states
        or copy.shape[0] != num_states or role.shape[0] != num_states
        or level_distance.shape[0] != num_roles or num_roles < 1
    ):
        return BAD_INPUT, 0
    if not targets_in_range(&table[0, 0], num_states * num_classes, num_states):
        return BAD_INPUT, 0
    for b in range(256):
        if byte_class[b] < 0 or byte_class[b] >= num_classes:
            return BAD_INPUT, 0
    for s in range(num_states):
        if role[s] < -1 or role[s] >= num_roles:
            return BAD_INPUT, 0
    spelled = np.zeros(num_classes, dtype=np.uint8)
    is_call = np.zeros(num_classes, dtype=np.uint8)
    closing = np.zeros(num_roles, dtype=np.uint8)
    cdef uint8_t[::1] spelled_view = spelled
    cdef uint8_t[::1] call_view = is_call
    cdef uint8_t[::1] closing_view = closing
    for b in range(256):
        if singles[b]:
            spelled_view[byte_class[b]] = 1
    for b in range(open_bytes.shape[0]):
        call_view[byte_class[open_bytes[b]]] = 1
    for c in range(num_classes):
        if not spelled_view[c]:
            all_spelled = False
    for r in range(num_roles):
        for b in range(256):
            if pops[r, b] and singles[b]:
                closing_view[r] = 1
                break
    for s in range(num_states):
        d = distance[s]
        if d <= 0:
            continue
        r = role[s] if role[s] > 0 else 0
        if copy[s] >= 1 and level_distance[r] == 1 and closing_view[r]:
            continue  # one closing byte from its level's end: that byte is a token of its own
        if all_spelled and copy[s] < 1:
            continue  # the table's own distance: some edge leads one byte nearer
        found = False
        for c in range(num_classes):
            t = table[s, c]
            if (
                t != 0
                and distance[t] == d - 1
                and (all_spelled or spelled_view[c])
                and not (call_view[c] and region[s] >= 0)
            ):
                found = True
                break
        if not found:
            stuck += 1
    return OK, stuck
