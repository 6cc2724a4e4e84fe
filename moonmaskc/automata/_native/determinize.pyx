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

``flat_subsets`` takes the flat NFA of ``flat_nfa.FlatNFA`` almost raw instead (see
``FlatNFA.native_input``: byte edges with an index into distinct 32-byte masks, epsilon edges, the
embedded DFAs kept whole as blocks over their stacked tables), checks every index, then builds in C
what ``FlatNFA.to_arrays`` builds in numpy: the coarsest byte classes (numbered by smallest byte),
one entry per (edge, class it covers), the embedded DFAs' rows copied once per block, CSR offsets,
the important states; and runs the same construction. It returns ``class_of`` too.

A DFA state is the sorted set of the important NFA states it holds, kept in one pool and found
again through an open-addressing hash table. For each DFA state, the closures of the targets of its
members' edges are bucketed by class (a counting sort), each bucket is deduplicated with a stamp
per NFA state, sorted and looked up; a DFA state of one NFA state whose edges come in ascending
class order (a state of an embedded DFA, a byte-set edge) skips the buckets: each class's set is
the closure of its one target (``_expand_single``; 15-25% of the construction's time on large
schemas). Epsilon closures are computed once per NFA state and cached. The construction runs
without the GIL, on memory of its own that is freed on every path.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memcmp, memset

import numpy as np

from moonmaskc.automata._native.owned cimport owned_int32, owned_uint8


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


cdef int _expand_single(Construction* c, int64_t d, int32_t s) noexcept nogil:
    """``_expand`` for a state of one NFA state ``s`` whose edges come in strictly ascending class
    order (one target per class: an embedded DFA's state, a byte-set edge): each class's set is
    the closure of its one target, so no buckets are needed, and the states are found (and
    numbered) in the same order as ``_expand`` finds them. An error code; ``-1`` (nothing done)
    when the edges are not in that order, for ``_expand`` to take the state."""
    cdef int32_t k = c.num_classes
    cdef int64_t e, end = c.edge_offsets[s + 1], i, size, found
    cdef int32_t t, cls, previous = -1
    cdef int accepting
    cdef const int32_t* members
    e = c.edge_offsets[s]
    while e < end:
        cls = c.edge_class[e]
        if cls <= previous:
            return -1
        previous = cls
        e += 1
    e = c.edge_offsets[s]
    while e < end:
        t = c.edge_target[e]
        if c.closure_at[t] < 0 and _closure(c, t):
            return NO_MEMORY
        size = c.closure_size[t]
        if size:
            members = c.closure_pool + c.closure_at[t]
            if size > 1:  # a closure lists its states as found: sorted here, in scratch
                if _reserve(<void**>&c.buckets, &c.buckets_capacity, size, sizeof(int32_t)):
                    return NO_MEMORY
                memcpy(c.buckets, members, <size_t>size * sizeof(int32_t))
                _sort(c.buckets, size)
                members = c.buckets
            accepting = 0
            i = 0
            while i < size:
                if members[i] == c.final:
                    accepting = 1
                i += 1
            found = _state_of(c, members, size, accepting)
            if found == -1:
                return NO_MEMORY
            if found == -2:
                return TOO_MANY_STATES
            c.transitions[d * k + c.edge_class[e]] = <int32_t>found
        e += 1
    return OK


cdef int _expand(Construction* c, int64_t d) noexcept nogil:
    """Fill row ``d`` of the transitions, adding the states it leads to; an error code."""
    cdef int32_t k = c.num_classes
    cdef int64_t first = c.member_at[d], last = first + c.member_count[d]
    cdef int64_t m, e, end, i, j, total, at, size, found
    cdef int32_t s, t, cls, x
    cdef int32_t* bucket
    cdef int accepting
    if last - first == 1:
        i = _expand_single(c, d, c.members[first])
        if i != -1:
            return <int>i
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
        return _run(&c, max_states)
    finally:
        _free(&c)


cdef tuple _run(Construction* c, int64_t max_states):
    """Run the construction filled in ``c`` and copy its result out: ``(transitions, accepting,
    start)``. The caller frees ``c``."""
    cdef int status
    with nogil:
        status = _construct(c)
    if status == NO_MEMORY:
        raise MemoryError("the subset construction ran out of memory")
    if status == TOO_MANY_STATES:
        raise StateLimit(max_states)
    # The construction's own buffers become the arrays (no copy); the unused capacity goes back.
    cdef void* fitted = realloc(c.transitions, <size_t>(c.states * c.num_classes) * sizeof(int32_t))
    if fitted != NULL:
        c.transitions = <int32_t*>fitted
    fitted = realloc(c.accepting, <size_t>c.states * sizeof(uint8_t))
    if fitted != NULL:
        c.accepting = <uint8_t*>fitted
    transitions = owned_int32(&c.transitions, c.states, c.num_classes)
    accepting = owned_uint8(&c.accepting, c.states)
    return transitions, accepting, 1 if c.states > 1 else 0


# --- the flat NFA of ``flat_nfa.FlatNFA``, taken almost raw -------------------------------------


cdef struct Meet:
    # the bytes cut into runs that no mask and no DFA splits: run i is bytes run_at[i] .. run_at[i + 1] - 1
    int32_t num_runs
    int32_t run_at[257]
    # the classes so far: run -> class, numbered by smallest byte
    int32_t class_of[256]
    int32_t num_classes
    # the partition to meet with: run -> label
    int32_t label[256]
    # scratch
    int32_t pair[512]
    int32_t label_end[257]
    int32_t by_label[256]
    int64_t mark[256]
    int64_t stamp
    int32_t id_of[256]
    int32_t fresh[256]
    int32_t rank[256]


cdef void _meet_binary(Meet* m) noexcept nogil:
    """Refine ``m.class_of`` by a 0/1 ``m.label``: runs stay together when they share their class and
    their label; new classes numbered in run order, so by smallest byte."""
    cdef int32_t i, key, k = 0
    for i in range(2 * m.num_classes):
        m.pair[i] = -1
    for i in range(m.num_runs):
        key = 2 * m.class_of[i] + m.label[i]
        if m.pair[key] < 0:
            m.pair[key] = k
            k += 1
        m.class_of[i] = m.pair[key]
    m.num_classes = k


cdef void _meet(Meet* m, int32_t num_labels) noexcept nogil:
    """Refine ``m.class_of`` by ``m.label`` (values in [0, num_labels), num_labels <= 256): runs stay
    together when they share their class and their label. The runs are bucketed by label, each
    bucket gives a fresh class to every old class it meets, then the classes are renumbered in run
    order, so by smallest byte."""
    cdef int32_t r, lab, c, i = 0, count = 0, k = 0
    for lab in range(num_labels + 1):
        m.label_end[lab] = 0
    for r in range(m.num_runs):
        m.label_end[m.label[r] + 1] += 1
    for lab in range(num_labels):
        m.label_end[lab + 1] += m.label_end[lab]
    for r in range(m.num_runs):  # label_end[lab] moves from the start of lab's bucket to its end
        lab = m.label[r]
        m.by_label[m.label_end[lab]] = r
        m.label_end[lab] += 1
    for lab in range(num_labels):
        m.stamp += 1
        while i < m.label_end[lab]:
            r = m.by_label[i]
            c = m.class_of[r]
            if m.mark[c] != m.stamp:
                m.mark[c] = m.stamp
                m.id_of[c] = count
                count += 1
            m.fresh[r] = m.id_of[c]
            i += 1
    for c in range(count):
        m.rank[c] = -1
    for r in range(m.num_runs):
        c = m.fresh[r]
        if m.rank[c] < 0:
            m.rank[c] = k
            k += 1
        m.class_of[r] = m.rank[c]
    m.num_classes = k


cdef inline void _mask_words(const uint8_t* mask, uint64_t* words) noexcept nogil:
    """The 32 little-endian bytes of a mask as four 64-bit words, bit b of the mask being bit
    b % 64 of word b // 64 (on any byte order)."""
    cdef int w, j
    cdef uint64_t word
    for w in range(4):
        word = 0
        for j in range(7, -1, -1):
            word = (word << 8) | mask[8 * w + j]
        words[w] = word


cdef struct Flat:
    # the flat NFA (borrowed from the caller's arrays, checked before)
    int32_t n
    int32_t final
    int64_t num_edges
    const int32_t* edge_source
    const int32_t* edge_mask
    const int32_t* edge_target
    int64_t num_masks
    const uint8_t* masks  # num_masks rows of 32 bytes
    int64_t num_eps
    const int32_t* eps_source
    const int32_t* eps_target
    int64_t num_blocks
    const int32_t* blocks  # num_blocks rows: first state, exit state, DFA
    int64_t num_dfas
    const int32_t* dfa_shapes  # num_dfas rows: states, classes
    const int32_t* dfa_transitions
    const int32_t* dfa_byte_class  # num_dfas rows of 256
    const uint8_t* dfa_accepting
    # the byte classes found
    int32_t class_of[256]
    # owned
    int32_t* representative  # smallest byte of each global class
    int64_t* cover_at  # the classes of mask i: cover_class[cover_at[i] : cover_at[i + 1]]
    int32_t* cover_class
    int64_t* state_at  # DFA d's states among all DFAs' states: state_at[d] .. state_at[d + 1]
    int64_t* row_at  # live entries of DFA state r (over all DFAs): row_*[row_at[r] : row_at[r + 1]]
    int32_t* row_class
    int32_t* row_target
    int64_t* edge_offsets
    int32_t* edge_class
    int32_t* edge_to
    int64_t* eps_offsets
    int32_t* eps_to
    int64_t* cursor
    uint8_t* important


cdef void _free_flat(Flat* f) noexcept nogil:
    free(f.representative)
    free(f.cover_at)
    free(f.cover_class)
    free(f.state_at)
    free(f.row_at)
    free(f.row_class)
    free(f.row_target)
    free(f.edge_offsets)
    free(f.edge_class)
    free(f.edge_to)
    free(f.eps_offsets)
    free(f.eps_to)
    free(f.cursor)
    free(f.important)


cdef void* _alloc(int64_t count, size_t size) noexcept nogil:
    """Room for ``count`` items of ``size`` bytes (at least one, so that NULL means no memory)."""
    if count < 1:
        count = 1
    return malloc(<size_t>count * size)


cdef int32_t _byte_classes(Flat* f, Meet* m) noexcept nogil:
    """The coarsest byte classes that neither a mask nor an embedded DFA's classes tell apart,
    numbered by smallest byte, into ``f.class_of``; returns how many there are. The bytes are first
    cut where any mask or DFA class changes (word operations per mask), then the runs between cuts
    are refined by each mask and each DFA."""
    cdef int64_t i, d
    cdef int32_t b, r, w
    cdef uint64_t words[4]
    cdef uint64_t cuts[4]
    cdef uint64_t carry
    cdef const int32_t* classes
    cuts[0] = 1  # byte 0 starts a run
    cuts[1] = cuts[2] = cuts[3] = 0
    for i in range(f.num_masks):
        _mask_words(f.masks + i * 32, words)
        carry = 0
        for w in range(4):  # bit b set where bytes b - 1 and b differ in membership
            cuts[w] |= words[w] ^ ((words[w] << 1) | carry)
            carry = words[w] >> 63
    for d in range(f.num_dfas):
        classes = f.dfa_byte_class + d * 256
        for b in range(1, 256):
            if classes[b] != classes[b - 1]:
                cuts[b >> 6] |= (<uint64_t>1) << (b & 63)
    m.num_runs = 0
    for b in range(256):
        if (cuts[b >> 6] >> (b & 63)) & 1:
            m.run_at[m.num_runs] = b
            m.class_of[m.num_runs] = 0
            m.num_runs += 1
    m.run_at[m.num_runs] = 256
    m.num_classes = 1
    m.stamp = 0
    for r in range(256):
        m.mark[r] = 0
    for i in range(f.num_masks):
        if m.num_classes == m.num_runs:
            break  # every run alone: nothing left to split
        _mask_words(f.masks + i * 32, words)
        for r in range(m.num_runs):
            b = m.run_at[r]
            m.label[r] = (words[b >> 6] >> (b & 63)) & 1
        _meet_binary(m)
    for d in range(f.num_dfas):
        if m.num_classes == m.num_runs:
            break
        classes = f.dfa_byte_class + d * 256
        for r in range(m.num_runs):
            m.label[r] = classes[m.run_at[r]]
        _meet(m, f.dfa_shapes[2 * d + 1])
    for r in range(m.num_runs):
        for b in range(m.run_at[r], m.run_at[r + 1]):
            f.class_of[b] = m.class_of[r]
    return m.num_classes


cdef int _flat_arrays(Flat* f, Construction* c) noexcept nogil:
    """Byte classes, the byte edges per class in CSR form (plain edges, then the embedded DFAs'
    rows copied once per block), the epsilon edges in CSR form and the important states, into
    ``c``; ``NO_MEMORY`` or ``OK``."""
    cdef Meet meet
    cdef int32_t k, b, cls, s, t, first, exit_state, states, classes
    cdef int32_t column[256]
    cdef int64_t i, j, d, q, r, total, size, at, base
    cdef const uint8_t* mask
    cdef const int32_t* table
    cdef const int32_t* block
    cdef int64_t n = f.n
    k = _byte_classes(f, &meet)
    f.representative = <int32_t*>_alloc(k, sizeof(int32_t))
    f.cover_at = <int64_t*>_alloc(f.num_masks + 1, sizeof(int64_t))
    f.state_at = <int64_t*>_alloc(f.num_dfas + 1, sizeof(int64_t))
    if f.representative == NULL or f.cover_at == NULL or f.state_at == NULL:
        return NO_MEMORY
    b = 255
    while b >= 0:
        f.representative[f.class_of[b]] = b
        b -= 1
    # the classes each mask covers: those whose smallest byte it holds (masks never split a class)
    f.cover_class = <int32_t*>_alloc(f.num_masks * k, sizeof(int32_t))
    if f.cover_class == NULL:
        return NO_MEMORY
    f.cover_at[0] = 0
    at = 0
    for i in range(f.num_masks):
        mask = f.masks + i * 32
        for cls in range(k):
            b = f.representative[cls]
            if (mask[b >> 3] >> (b & 7)) & 1:
                f.cover_class[at] = cls
                at += 1
        f.cover_at[i + 1] = at
    # the live entries of every DFA row over the global classes (row 0, the dead state, has none)
    f.state_at[0] = 0
    for d in range(f.num_dfas):
        f.state_at[d + 1] = f.state_at[d] + f.dfa_shapes[2 * d]
    f.row_at = <int64_t*>_alloc(f.state_at[f.num_dfas] + 1, sizeof(int64_t))
    if f.row_at == NULL:
        return NO_MEMORY
    total = 0
    for j in range(2):  # count, then fill
        table = f.dfa_transitions
        at = 0
        for d in range(f.num_dfas):
            states = f.dfa_shapes[2 * d]
            classes = f.dfa_shapes[2 * d + 1]
            for cls in range(k):
                column[cls] = f.dfa_byte_class[d * 256 + f.representative[cls]]
            r = f.state_at[d]
            f.row_at[r] = at
            f.row_at[r + 1] = at  # row 0: none
            for q in range(1, states):
                for cls in range(k):
                    t = table[q * classes + column[cls]]
                    if t != 0:
                        if j == 1:
                            f.row_class[at] = cls
                            f.row_target[at] = t
                        at += 1
                f.row_at[r + q + 1] = at
            table += <int64_t>states * classes
        f.row_at[f.state_at[f.num_dfas]] = at
        if j == 0:
            total = at
            f.row_class = <int32_t*>_alloc(total, sizeof(int32_t))
            f.row_target = <int32_t*>_alloc(total, sizeof(int32_t))
            if f.row_class == NULL or f.row_target == NULL:
                return NO_MEMORY
    # byte edges and epsilon edges per NFA state: count, then offsets, then fill
    f.edge_offsets = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    f.eps_offsets = <int64_t*>_alloc(n + 1, sizeof(int64_t))
    f.cursor = <int64_t*>_alloc(n, sizeof(int64_t))
    f.important = <uint8_t*>_alloc(n, sizeof(uint8_t))
    if f.edge_offsets == NULL or f.eps_offsets == NULL or f.cursor == NULL or f.important == NULL:
        return NO_MEMORY
    memset(f.edge_offsets, 0, <size_t>(n + 1) * sizeof(int64_t))
    memset(f.eps_offsets, 0, <size_t>(n + 1) * sizeof(int64_t))
    memset(f.important, 0, <size_t>n * sizeof(uint8_t))
    for i in range(f.num_edges):
        s = f.edge_source[i]
        j = f.edge_mask[i]
        f.edge_offsets[s + 1] += f.cover_at[j + 1] - f.cover_at[j]
        f.important[s] = 1  # an edge on no byte still counts, as ``NFA.closure`` keeps its state
    for i in range(f.num_eps):
        f.eps_offsets[f.eps_source[i] + 1] += 1
    for i in range(f.num_blocks):
        block = f.blocks + 3 * i
        first = block[0]
        d = block[2]
        base = f.state_at[d]
        for q in range(1, f.dfa_shapes[2 * d]):
            s = first - 1 + <int32_t>q
            size = f.row_at[base + q + 1] - f.row_at[base + q]
            if size:
                f.edge_offsets[s + 1] += size
                f.important[s] = 1
            if f.dfa_accepting[base + q]:
                f.eps_offsets[s + 1] += 1
    if f.final >= 0:
        f.important[f.final] = 1
    for i in range(n):
        f.edge_offsets[i + 1] += f.edge_offsets[i]
        f.eps_offsets[i + 1] += f.eps_offsets[i]
    f.edge_class = <int32_t*>_alloc(f.edge_offsets[n], sizeof(int32_t))
    f.edge_to = <int32_t*>_alloc(f.edge_offsets[n], sizeof(int32_t))
    f.eps_to = <int32_t*>_alloc(f.eps_offsets[n], sizeof(int32_t))
    if f.edge_class == NULL or f.edge_to == NULL or f.eps_to == NULL:
        return NO_MEMORY
    memcpy(f.cursor, f.edge_offsets, <size_t>n * sizeof(int64_t))
    for i in range(f.num_edges):
        s = f.edge_source[i]
        t = f.edge_target[i]
        j = f.edge_mask[i]
        for at in range(f.cover_at[j], f.cover_at[j + 1]):
            f.edge_class[f.cursor[s]] = f.cover_class[at]
            f.edge_to[f.cursor[s]] = t
            f.cursor[s] += 1
    for i in range(f.num_blocks):
        block = f.blocks + 3 * i
        first = block[0]
        d = block[2]
        base = f.state_at[d]
        for q in range(1, f.dfa_shapes[2 * d]):
            s = first - 1 + <int32_t>q
            for at in range(f.row_at[base + q], f.row_at[base + q + 1]):
                f.edge_class[f.cursor[s]] = f.row_class[at]
                f.edge_to[f.cursor[s]] = first - 1 + f.row_target[at]
                f.cursor[s] += 1
    memcpy(f.cursor, f.eps_offsets, <size_t>n * sizeof(int64_t))
    for i in range(f.num_eps):
        s = f.eps_source[i]
        f.eps_to[f.cursor[s]] = f.eps_target[i]
        f.cursor[s] += 1
    for i in range(f.num_blocks):
        block = f.blocks + 3 * i
        first = block[0]
        exit_state = block[1]
        d = block[2]
        base = f.state_at[d]
        for q in range(1, f.dfa_shapes[2 * d]):
            if f.dfa_accepting[base + q]:
                s = first - 1 + <int32_t>q
                f.eps_to[f.cursor[s]] = exit_state
                f.cursor[s] += 1
    c.num_classes = k
    c.edge_offsets = f.edge_offsets
    c.edge_class = f.edge_class
    c.edge_target = f.edge_to
    c.eps_offsets = f.eps_offsets
    c.eps_target = f.eps_to
    c.important = f.important
    return OK


def flat_subsets(
    int32_t num_states,
    int32_t start,
    int32_t final,
    const int32_t[::1] edge_source not None,
    const int32_t[::1] edge_mask not None,
    const int32_t[::1] edge_target not None,
    const uint8_t[:, ::1] masks not None,
    const int32_t[::1] eps_source not None,
    const int32_t[::1] eps_target not None,
    const int32_t[:, ::1] blocks not None,
    const int32_t[:, ::1] dfa_shapes not None,
    const int32_t[::1] dfa_transitions not None,
    const int32_t[:, ::1] dfa_byte_class not None,
    const uint8_t[::1] dfa_accepting not None,
    int64_t max_states,
):
    """The subset construction straight from a flat NFA, unpruned: ``(transitions int32[D, C],
    accepting uint8[D], start, class_of int32[256])``, the classes the coarsest that no mask and
    no embedded DFA tells apart, numbered by smallest byte.

    In: ``num_states``, ``start``, ``final`` (-1 for none); byte edges ``edge_source[i]`` ->
    ``edge_target[i]`` on the bytes of mask ``edge_mask[i]``, a row of ``masks`` uint8[M, 32] (bit
    b of byte b // 8, little-endian); epsilon edges ``eps_source[i]`` -> ``eps_target[i]``; embedded
    DFAs: ``blocks`` int32[B, 3], per block its first state, exit state and DFA, DFA state q >= 1
    being NFA state ``first - 1 + q``, its accepting states leading to the exit by an epsilon edge;
    per DFA ``dfa_shapes`` int32[K, 2] (states, classes), its dense table raveled into
    ``dfa_transitions`` (one after the other), its ``dfa_byte_class`` row int32[256] and its
    acceptance flags in ``dfa_accepting`` (one after the other). Every index is checked before use
    (``ValueError``); ``StateLimit`` past ``max_states``."""
    cdef Construction c
    cdef Flat f
    cdef int64_t n = num_states, num_edges, num_eps, num_blocks, num_dfas, i, d, b
    cdef int64_t tables = 0, states = 0, first, count, classes, at
    cdef int status
    cdef int32_t[::1] out
    if num_states < 1 or num_states >= 2147483647:
        raise ValueError("a flat NFA needs 1 .. 2**31 - 2 states")
    if start < 0 or start >= num_states or final < -1 or final >= num_states:
        raise ValueError("start and final must be states (final may be -1)")
    num_edges = edge_source.shape[0]
    if edge_mask.shape[0] != num_edges or edge_target.shape[0] != num_edges:
        raise ValueError("edge_source, edge_mask and edge_target must have the same length")
    if masks.shape[1] != 32:
        raise ValueError("masks must have 32 bytes per row")
    _check_values(edge_source, n, "edge_source")
    _check_values(edge_target, n, "edge_target")
    _check_values(edge_mask, masks.shape[0], "edge_mask")
    num_eps = eps_source.shape[0]
    if eps_target.shape[0] != num_eps:
        raise ValueError("eps_source and eps_target must have the same length")
    _check_values(eps_source, n, "eps_source")
    _check_values(eps_target, n, "eps_target")
    num_dfas = dfa_shapes.shape[0]
    if dfa_shapes.shape[1] != 2:
        raise ValueError("dfa_shapes must have two columns: states, classes")
    if dfa_byte_class.shape[0] != num_dfas or dfa_byte_class.shape[1] != 256:
        raise ValueError("dfa_byte_class must have one row of 256 classes per DFA")
    for d in range(num_dfas):
        count = dfa_shapes[d, 0]
        classes = dfa_shapes[d, 1]
        if count < 1 or classes < 1 or classes > 256:
            raise ValueError("an embedded DFA needs at least one state and 1..256 classes")
        for b in range(256):
            if dfa_byte_class[d, b] < 0 or dfa_byte_class[d, b] >= classes:
                raise ValueError("dfa_byte_class holds a class outside its DFA's classes")
        tables += count * classes
        states += count
    if dfa_transitions.shape[0] != tables or dfa_accepting.shape[0] != states:
        raise ValueError("dfa_transitions and dfa_accepting must hold exactly the DFAs of dfa_shapes")
    at = 0
    for d in range(num_dfas):
        count = dfa_shapes[d, 0]
        for i in range(at, at + count * dfa_shapes[d, 1]):
            if dfa_transitions[i] < 0 or dfa_transitions[i] >= count:
                raise ValueError("dfa_transitions holds a target outside its DFA's states")
        at += count * dfa_shapes[d, 1]
    num_blocks = blocks.shape[0]
    if blocks.shape[1] != 3:
        raise ValueError("blocks must have three columns: first state, exit state, DFA")
    for i in range(num_blocks):
        first = blocks[i, 0]
        d = blocks[i, 2]
        if d < 0 or d >= num_dfas:
            raise ValueError("a block names a DFA that is not given")
        if blocks[i, 1] < 0 or blocks[i, 1] >= n or first < 0 or first + dfa_shapes[d, 0] - 1 > n:
            raise ValueError("a block's states or exit state are not states of the NFA")
    memset(&c, 0, sizeof(Construction))
    memset(&f, 0, sizeof(Flat))
    f.n = num_states
    f.final = final
    f.num_edges = num_edges
    f.num_masks = masks.shape[0]
    f.num_eps = num_eps
    f.num_blocks = num_blocks
    f.num_dfas = num_dfas
    if num_edges:
        f.edge_source = &edge_source[0]
        f.edge_mask = &edge_mask[0]
        f.edge_target = &edge_target[0]
    if f.num_masks:
        f.masks = &masks[0, 0]
    if num_eps:
        f.eps_source = &eps_source[0]
        f.eps_target = &eps_target[0]
    if num_blocks:
        f.blocks = &blocks[0, 0]
    if num_dfas:
        f.dfa_shapes = &dfa_shapes[0, 0]
        f.dfa_byte_class = &dfa_byte_class[0, 0]
        f.dfa_accepting = &dfa_accepting[0]
    if tables:
        f.dfa_transitions = &dfa_transitions[0]
    c.n = num_states
    c.start = start
    c.final = final
    c.max_states = max_states if max_states < 2147483646 else 2147483646  # state numbers are int32
    try:
        with nogil:
            status = _flat_arrays(&f, &c)
        if status == NO_MEMORY:
            raise MemoryError("the subset construction ran out of memory")
        transitions, accepting, first_state = _run(&c, max_states)
        class_of = np.empty(256, dtype=np.int32)
        out = class_of
        memcpy(&out[0], f.class_of, 256 * sizeof(int32_t))
        return transitions, accepting, first_state, class_of
    finally:
        _free(&c)  # frees what the construction owns; the arrays it read are f's
        _free_flat(&f)


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
