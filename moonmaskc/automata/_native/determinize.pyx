# cython: language_level=3
"""Subset construction over byte classes in C: the native twin of ``determinize._subsets``.

In: an epsilon-NFA as the flat arrays of ``thompson.NFAArrays`` (``num_states``, ``start``,
``final`` (-1 for none), ``num_classes``; byte edges in CSR form per state, one entry per class an
edge covers: ``edge_offsets`` int64[n + 1], ``edge_class`` int32[E], ``edge_target`` int32[E];
epsilon edges ``eps_offsets`` int64[n + 1], ``eps_target`` int32[M]; ``important`` uint8[n], the
states an epsilon closure keeps) and ``max_states``.

Out, from ``subsets``: ``(transitions, accepting, start)``, transitions int32[D, C] (0 = the dead
state, the empty set, which is state 0), accepting uint8[D] (the final state is in the set), and
the start state (1, or 0 when the start closure is empty). States are numbered breadth first from
the start and, within one state, in class order, as the pure construction numbers them; nothing
is pruned. ``StateLimit`` is raised when a state numbered above ``max_states`` would be needed.
``distances(transitions, accepting)`` gives the fewest bytes from each state to acceptance (-1
where out of reach), what pruning needs.

A DFA state is the sorted set of the important NFA states it holds, kept in one pool and found
again through an open-addressing hash table. For each DFA state, the closures of the targets of
its members' edges are bucketed by class (a counting sort), each bucket is deduplicated with a
stamp per NFA state, sorted and looked up. Epsilon closures are computed once per NFA state and
cached. The construction runs without the GIL, on memory of its own that is freed on every path.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memcmp, memset

import numpy as np


class StateLimit(Exception):
    """The DFA needs more than ``max_states`` states (the caller raises its ``LimitError``)."""


cdef enum:
    OK = 0
    TOO_MANY_STATES = 1
    NO_MEMORY = 2


cdef struct Construction:
    # the NFA (borrowed from the caller's arrays)
    int32_t n
    int32_t start
    int32_t final
    int32_t num_classes
    const int64_t* edge_offsets
    const int32_t* edge_class
    const int32_t* edge_target
    const int64_t* eps_offsets
    const int32_t* eps_target
    const uint8_t* important
    int64_t max_states
    # epsilon closures, cached per NFA state: closure_pool[closure_at[s] : + closure_size[s]]
    int64_t* closure_at  # -1 until computed
    int32_t* closure_size
    int32_t* closure_pool
    int64_t closure_used
    int64_t closure_capacity
    int32_t* stack
    int64_t* seen  # stamp per NFA state: closures and bucket deduplication
    int64_t stamp
    # DFA states: the members of state d are members[member_at[d] : + member_count[d]]
    int32_t* members
    int64_t members_used
    int64_t members_capacity
    int64_t* member_at
    int32_t* member_count
    uint64_t* hashes
    int32_t* transitions  # states_capacity rows of num_classes
    uint8_t* accepting
    int64_t states
    int64_t states_capacity
    # hash table of DFA states (0 = empty slot: the empty set, state 0, is never stored)
    int32_t* slots
    uint64_t slot_mask
    # scratch: per class bucket bounds, and the buckets
    int64_t* bucket_at  # num_classes + 1
    int64_t* bucket_fill  # num_classes
    int32_t* buckets
    int64_t buckets_capacity


cdef int _reserve(void** data, int64_t* capacity, int64_t needed, size_t item) noexcept nogil:
    """Grow ``*data`` (``*capacity`` items of ``item`` bytes) to hold ``needed`` items; -1 when out of
    memory (``*data`` is then left as it was, to be freed by the caller)."""
    cdef int64_t wanted = capacity[0]
    cdef void* grown
    if needed <= wanted:
        return 0
    if wanted < 16:
        wanted = 16
    while wanted < needed:
        wanted *= 2
    grown = realloc(data[0], <size_t>wanted * item)
    if grown == NULL:
        return -1
    data[0] = grown
    capacity[0] = wanted
    return 0


cdef void _free(Construction* c) noexcept nogil:
    free(c.closure_at)
    free(c.closure_size)
    free(c.closure_pool)
    free(c.stack)
    free(c.seen)
    free(c.members)
    free(c.member_at)
    free(c.member_count)
    free(c.hashes)
    free(c.transitions)
    free(c.accepting)
    free(c.slots)
    free(c.bucket_at)
    free(c.bucket_fill)
    free(c.buckets)


cdef int _closure(Construction* c, int32_t state) noexcept nogil:
    """Cache the important states reachable from ``state`` by epsilon moves; -1 when out of memory."""
    cdef int64_t top = 0, i, end
    cdef int32_t s, t
    if c.closure_at[state] >= 0:
        return 0
    c.closure_at[state] = c.closure_used
    c.stamp += 1
    c.seen[state] = c.stamp
    c.stack[0] = state
    top = 1
    while top > 0:
        top -= 1
        s = c.stack[top]
        if c.important[s]:
            if _reserve(<void**>&c.closure_pool, &c.closure_capacity, c.closure_used + 1, sizeof(int32_t)):
                c.closure_at[state] = -1
                return -1
            c.closure_pool[c.closure_used] = s
            c.closure_used += 1
        i = c.eps_offsets[s]
        end = c.eps_offsets[s + 1]
        while i < end:
            t = c.eps_target[i]
            if c.seen[t] != c.stamp:
                c.seen[t] = c.stamp
                c.stack[top] = t  # each state is pushed at most once: the stack never passes n
                top += 1
            i += 1
    c.closure_size[state] = <int32_t>(c.closure_used - c.closure_at[state])
    return 0


cdef int _ascending(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0]
    cdef int32_t y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef void _sort(int32_t* items, int64_t count) noexcept nogil:
    cdef int64_t i, j
    cdef int32_t item
    if count > 24:
        qsort(items, <size_t>count, sizeof(int32_t), _ascending)
        return
    i = 1
    while i < count:
        item = items[i]
        j = i
        while j > 0 and items[j - 1] > item:
            items[j] = items[j - 1]
            j -= 1
        items[j] = item
        i += 1


cdef uint64_t _hash(const int32_t* items, int64_t count) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>count
    cdef int64_t i = 0
    while i < count:
        h = (h ^ <uint64_t><uint32_t>items[i]) * 0x100000001B3ULL
        h ^= h >> 29
        i += 1
    h ^= h >> 32
    h *= 0xD6E8FEB86659FD93ULL
    h ^= h >> 32
    return h


cdef int _grow_slots(Construction* c) noexcept nogil:
    """Double the hash table and insert every state again; -1 when out of memory."""
    cdef uint64_t size = (c.slot_mask + 1) * 2
    cdef uint64_t mask = size - 1, at
    cdef int32_t* slots = <int32_t*>malloc(size * sizeof(int32_t))
    cdef int64_t d
    if slots == NULL:
        return -1
    memset(slots, 0, size * sizeof(int32_t))
    d = 1
    while d < c.states:
        if c.member_count[d] > 0:  # every stored state; state 0 and an empty start are not stored
            at = c.hashes[d] & mask
            while slots[at] != 0:
                at = (at + 1) & mask
            slots[at] = <int32_t>d
        d += 1
    free(c.slots)
    c.slots = slots
    c.slot_mask = mask
    return 0


cdef int _new_state(Construction* c, const int32_t* items, int64_t count, uint64_t h, int accepting) noexcept nogil:
    """Append a DFA state holding ``items`` (not stored in the hash table); -1 when out of memory."""
    cdef int64_t d = c.states
    cdef int64_t capacity = c.states_capacity
    if d + 1 > capacity:
        capacity = c.states_capacity
        if _reserve(<void**>&c.member_at, &capacity, d + 1, sizeof(int64_t)):
            return -1
        capacity = c.states_capacity
        if _reserve(<void**>&c.member_count, &capacity, d + 1, sizeof(int32_t)):
            return -1
        capacity = c.states_capacity
        if _reserve(<void**>&c.hashes, &capacity, d + 1, sizeof(uint64_t)):
            return -1
        capacity = c.states_capacity
        if _reserve(<void**>&c.accepting, &capacity, d + 1, sizeof(uint8_t)):
            return -1
        capacity = c.states_capacity
        if _reserve(<void**>&c.transitions, &capacity, d + 1, sizeof(int32_t) * c.num_classes):
            return -1
        c.states_capacity = capacity
    if _reserve(<void**>&c.members, &c.members_capacity, c.members_used + count, sizeof(int32_t)):
        return -1
    if count:
        memcpy(c.members + c.members_used, items, <size_t>count * sizeof(int32_t))
    c.member_at[d] = c.members_used
    c.member_count[d] = <int32_t>count
    c.members_used += count
    c.hashes[d] = h
    c.accepting[d] = <uint8_t>accepting
    memset(c.transitions + d * c.num_classes, 0, <size_t>c.num_classes * sizeof(int32_t))
    c.states = d + 1
    return 0


cdef int64_t _state_of(Construction* c, const int32_t* items, int64_t count, int accepting) noexcept nogil:
    """The DFA state holding the sorted ``items`` (count > 0), added when new; -1 when out of memory,
    -2 when a new state would pass ``max_states``."""
    cdef uint64_t h = _hash(items, count)
    cdef uint64_t at = h & c.slot_mask
    cdef int32_t d
    while True:
        d = c.slots[at]
        if d == 0:
            break
        if (
            c.hashes[d] == h
            and c.member_count[d] == count
            and memcmp(c.members + c.member_at[d], items, <size_t>count * sizeof(int32_t)) == 0
        ):
            return d
        at = (at + 1) & c.slot_mask
    if c.states > c.max_states:
        return -2
    if _new_state(c, items, count, h, accepting):
        return -1
    c.slots[at] = <int32_t>(c.states - 1)
    if <uint64_t>c.states * 2 > c.slot_mask + 1:
        if _grow_slots(c):
            return -1
    return c.states - 1


cdef int _expand(Construction* c, int64_t d) noexcept nogil:
    """Fill row ``d`` of the transitions, adding the states it leads to; an error code."""
    cdef int32_t k = c.num_classes
    cdef int64_t first = c.member_at[d], last = first + c.member_count[d]
    cdef int64_t m, e, end, i, j, total, at, size, found
    cdef int32_t s, t, cls, x
    cdef int32_t* bucket
    cdef int accepting
    memset(c.bucket_at, 0, <size_t>(k + 1) * sizeof(int64_t))
    # first pass: how many NFA states each class collects (closures computed and cached here)
    m = first
    while m < last:
        s = c.members[m]
        e = c.edge_offsets[s]
        end = c.edge_offsets[s + 1]
        while e < end:
            t = c.edge_target[e]
            if c.closure_at[t] < 0 and _closure(c, t):
                return NO_MEMORY
            c.bucket_at[c.edge_class[e] + 1] += c.closure_size[t]
            e += 1
        m += 1
    cls = 0
    while cls < k:
        c.bucket_at[cls + 1] += c.bucket_at[cls]
        c.bucket_fill[cls] = c.bucket_at[cls]
        cls += 1
    total = c.bucket_at[k]
    if _reserve(<void**>&c.buckets, &c.buckets_capacity, total, sizeof(int32_t)):
        return NO_MEMORY
    # second pass: the closures into their class buckets
    m = first
    while m < last:
        s = c.members[m]
        e = c.edge_offsets[s]
        end = c.edge_offsets[s + 1]
        while e < end:
            t = c.edge_target[e]
            size = c.closure_size[t]
            if size:
                cls = c.edge_class[e]
                memcpy(c.buckets + c.bucket_fill[cls], c.closure_pool + c.closure_at[t], <size_t>size * sizeof(int32_t))
                c.bucket_fill[cls] += size
            e += 1
        m += 1
    # per class in order (new states are numbered in class order): dedupe, sort, look up
    cls = 0
    while cls < k:
        at = c.bucket_at[cls]
        size = c.bucket_at[cls + 1] - at
        if size:
            bucket = c.buckets + at
            c.stamp += 1
            accepting = 0
            j = 0
            i = 0
            while i < size:
                x = bucket[i]
                if c.seen[x] != c.stamp:
                    c.seen[x] = c.stamp
                    bucket[j] = x
                    j += 1
                    if x == c.final:
                        accepting = 1
                i += 1
            _sort(bucket, j)
            found = _state_of(c, bucket, j, accepting)
            if found == -1:
                return NO_MEMORY
            if found == -2:
                return TOO_MANY_STATES
            c.transitions[d * k + cls] = <int32_t>found
        cls += 1
    return OK


cdef int _construct(Construction* c) noexcept nogil:
    """The whole subset construction; an error code."""
    cdef int64_t n = c.n, i, d
    cdef int32_t s
    cdef int accepting = 0
    c.closure_at = <int64_t*>malloc(<size_t>n * sizeof(int64_t))
    c.closure_size = <int32_t*>malloc(<size_t>n * sizeof(int32_t))
    c.stack = <int32_t*>malloc(<size_t>n * sizeof(int32_t))
    c.seen = <int64_t*>malloc(<size_t>n * sizeof(int64_t))
    c.bucket_at = <int64_t*>malloc(<size_t>(c.num_classes + 1) * sizeof(int64_t))
    c.bucket_fill = <int64_t*>malloc(<size_t>c.num_classes * sizeof(int64_t))
    c.slots = <int32_t*>malloc(64 * sizeof(int32_t))
    if (
        c.closure_at == NULL or c.closure_size == NULL or c.stack == NULL or c.seen == NULL
        or c.bucket_at == NULL or c.bucket_fill == NULL or c.slots == NULL
    ):
        return NO_MEMORY
    c.slot_mask = 63
    memset(c.slots, 0, 64 * sizeof(int32_t))
    i = 0
    while i < n:
        c.closure_at[i] = -1
        c.closure_size[i] = 0
        c.seen[i] = 0
        i += 1
    if _new_state(c, NULL, 0, 0, 0):  # state 0: the empty set, dead
        return NO_MEMORY
    if _closure(c, c.start):
        return NO_MEMORY
    if c.closure_size[c.start] == 0:
        return OK  # the empty language: only the dead state; the start is 0
    if _reserve(<void**>&c.buckets, &c.buckets_capacity, c.closure_size[c.start], sizeof(int32_t)):
        return NO_MEMORY
    memcpy(c.buckets, c.closure_pool + c.closure_at[c.start], <size_t>c.closure_size[c.start] * sizeof(int32_t))
    _sort(c.buckets, c.closure_size[c.start])
    i = 0
    while i < c.closure_size[c.start]:
        if c.buckets[i] == c.final:
            accepting = 1
        i += 1
    # the start is state 1 without a check against max_states, as in the pure construction
    if _new_state(c, c.buckets, c.closure_size[c.start], _hash(c.buckets, c.closure_size[c.start]), accepting):
        return NO_MEMORY
    c.slots[c.hashes[1] & c.slot_mask] = 1
    d = 1
    while d < c.states:  # the states form their own breadth-first queue
        i = _expand(c, d)
        if i != OK:
            return <int>i
        d += 1
    return OK


cdef int _check_offsets(const int64_t[::1] offsets, int64_t n, int64_t size) except -1:
    cdef int64_t i
    if offsets.shape[0] != n + 1 or offsets[0] != 0 or offsets[n] != size:
        raise ValueError("offsets must have n + 1 entries, from 0 to the number of entries")
    i = 0
    while i < n:
        if offsets[i + 1] < offsets[i]:
            raise ValueError("offsets must never fall")
        i += 1
    return 0


cdef int _check_values(const int32_t[::1] values, int64_t bound, str name) except -1:
    cdef int64_t i = 0
    cdef int64_t size = values.shape[0]
    while i < size:
        if values[i] < 0 or values[i] >= bound:
            raise ValueError(f"{name} holds a value outside 0..{bound - 1}")
        i += 1
    return 0


def subsets(
    int32_t num_states,
    int32_t start,
    int32_t final,
    int32_t num_classes,
    const int64_t[::1] edge_offsets not None,
    const int32_t[::1] edge_class not None,
    const int32_t[::1] edge_target not None,
    const int64_t[::1] eps_offsets not None,
    const int32_t[::1] eps_target not None,
    const uint8_t[::1] important not None,
    int64_t max_states,
):
    """The reachable sets of NFA states as a DFA, unpruned: ``(transitions int32[D, C], accepting
    uint8[D], start)``; see the module docstring. Raises ``StateLimit`` past ``max_states``, and
    ``ValueError`` on arrays that do not fit together (checked here too, never trusted)."""
    cdef Construction c
    cdef int status
    cdef int32_t[:, ::1] table
    cdef uint8_t[::1] flags
    if num_states < 1 or num_classes < 1 or num_classes > 256:
        raise ValueError("an NFA needs at least one state and 1..256 classes")
    if start < 0 or start >= num_states or final < -1 or final >= num_states:
        raise ValueError("start and final must be states (final may be -1)")
    if important.shape[0] != num_states:
        raise ValueError("important must have one entry per state")
    _check_offsets(edge_offsets, num_states, edge_class.shape[0])
    _check_offsets(eps_offsets, num_states, eps_target.shape[0])
    if edge_target.shape[0] != edge_class.shape[0]:
        raise ValueError("edge_class and edge_target must have the same length")
    _check_values(edge_class, num_classes, "edge_class")
    _check_values(edge_target, num_states, "edge_target")
    _check_values(eps_target, num_states, "eps_target")
    memset(&c, 0, sizeof(Construction))
    c.n = num_states
    c.start = start
    c.final = final
    c.num_classes = num_classes
    c.max_states = max_states if max_states < 2147483646 else 2147483646  # state numbers are int32
    c.important = &important[0]
    c.edge_offsets = &edge_offsets[0]
    c.eps_offsets = &eps_offsets[0]
    if edge_class.shape[0]:
        c.edge_class = &edge_class[0]
        c.edge_target = &edge_target[0]
    if eps_target.shape[0]:
        c.eps_target = &eps_target[0]
    try:
        with nogil:
            status = _construct(&c)
        if status == NO_MEMORY:
            raise MemoryError("the subset construction ran out of memory")
        if status == TOO_MANY_STATES:
            raise StateLimit(max_states)
        transitions = np.empty((c.states, num_classes), dtype=np.int32)
        accepting = np.empty(c.states, dtype=np.uint8)
        table = transitions
        flags = accepting
        memcpy(&table[0, 0], c.transitions, <size_t>(c.states * num_classes) * sizeof(int32_t))
        memcpy(&flags[0], c.accepting, <size_t>c.states * sizeof(uint8_t))
        return transitions, accepting, 1 if c.states > 1 else 0
    finally:
        _free(&c)


def distances(const int32_t[:, ::1] transitions not None, const uint8_t[::1] accepting not None):
    """Fewest bytes from each state to an accepting one (int32[D], -1 where out of reach), by a
    breadth-first search backwards over the live edges (those into a state other than 0)."""
    cdef int64_t states = transitions.shape[0], classes = transitions.shape[1]
    cdef int64_t s, cls, i, head, tail, edges = 0
    cdef int32_t t
    cdef int64_t* last = NULL  # the source + 1 that last counted an edge into each state
    cdef int64_t* at = NULL  # predecessors of t: sources[at[t] : at[t + 1]]
    cdef int32_t* sources = NULL
    cdef int32_t* queue = NULL
    cdef int32_t[::1] found
    cdef int32_t* dist
    cdef const uint8_t* flags
    cdef const int32_t* table
    if accepting.shape[0] != states:
        raise ValueError("accepting must have one entry per state")
    s = 0
    while s < states:
        cls = 0
        while cls < classes:
            if transitions[s, cls] < 0 or transitions[s, cls] >= states:
                raise ValueError("transitions hold a target that is not a state")
            cls += 1
        s += 1
    distance = np.full(states, -1, dtype=np.int32)
    if states == 0 or classes == 0:
        if states:
            distance[np.asarray(accepting, dtype=bool)] = 0
        return distance
    found = distance
    dist = &found[0]
    flags = &accepting[0]
    table = &transitions[0, 0]
    try:
        last = <int64_t*>malloc(<size_t>states * sizeof(int64_t))
        at = <int64_t*>malloc(<size_t>(states + 1) * sizeof(int64_t))
        queue = <int32_t*>malloc(<size_t>states * sizeof(int32_t))
        if last == NULL or at == NULL or queue == NULL:
            raise MemoryError("distances: out of memory")
        with nogil:
            memset(last, 0, <size_t>states * sizeof(int64_t))
            memset(at, 0, <size_t>(states + 1) * sizeof(int64_t))
            s = 0
            while s < states:  # count the distinct live edges into each state
                cls = 0
                while cls < classes:
                    t = table[s * classes + cls]
                    if t != 0 and last[t] != s + 1:
                        last[t] = s + 1
                        at[t + 1] += 1
                        edges += 1
                    cls += 1
                s += 1
            s = 0
            while s < states:
                at[s + 1] += at[s]
                s += 1
        sources = <int32_t*>malloc(<size_t>(edges if edges else 1) * sizeof(int32_t))
        if sources == NULL:
            raise MemoryError("distances: out of memory")
        with nogil:
            memset(last, 0, <size_t>states * sizeof(int64_t))
            s = 0
            while s < states:  # at[t] ends as the end of t's predecessors, then falls back below
                cls = 0
                while cls < classes:
                    t = table[s * classes + cls]
                    if t != 0 and last[t] != s + 1:
                        last[t] = s + 1
                        sources[at[t]] = <int32_t>s
                        at[t] += 1
                    cls += 1
                s += 1
            s = states
            while s > 0:
                at[s] = at[s - 1]
                s -= 1
            at[0] = 0
            tail = 0
            s = 0
            while s < states:
                if flags[s]:
                    dist[s] = 0
                    queue[tail] = <int32_t>s
                    tail += 1
                s += 1
            head = 0
            while head < tail:
                t = queue[head]
                head += 1
                i = at[t]
                while i < at[t + 1]:
                    s = sources[i]
                    if dist[s] < 0:
                        dist[s] = dist[t] + 1
                        queue[tail] = <int32_t>s
                        tail += 1
                    i += 1
        return distance
    finally:
        free(last)
        free(at)
        free(sources)
        free(queue)
