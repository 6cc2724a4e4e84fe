# cython: language_level=3
"""Native core of the product construction of DFAs (``moonmaskc.automata.product``).

Takes, for m DFAs (1 <= m <= 30) already brought onto their joint byte classes (k columns):

- ``tables``: int32[R, k], the m transition tables stacked, member i owning rows
  ``offsets[i] .. offsets[i + 1] - 1``; its targets are its own state numbers (0 .. n_i - 1);
- ``offsets``: int64[m + 1], ``offsets[0] == 0`` and ``offsets[m] == R``, every member with >= 1 state;
- ``accepting``: uint8[R], the members' accepting flags stacked the same way;
- ``starts``: int32[m], the members' start states;
- ``accept_rule``: uint8[2^m], whether a tuple accepts, by the bit pattern of its accepting members
  (bit i set = member i accepts);
- ``hopeless_rule``: uint8[2^m], whether a tuple can never accept, by the bit pattern of its live
  (non-zero) members; such a tuple is sent to the dead state at once;
- ``max_states``: the largest state number the product may use.

Hands on ``(transitions, accepting, start)``: int32[N, k], bool[N] and the start state of the
(unminimised) product DFA, state 0 dead, the other tuples numbered in the order a breadth-first walk
from the tuple of start states first meets them (classes in column order); or ``None`` when the
product needs a state number above ``max_states``. Malformed input raises ``ValueError``; memory
exhaustion raises ``MemoryError``.

Tuples live in an open-addressing hash table (linear probing) over malloc'd memory, freed on every
path; the walk runs without the GIL.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np

cdef enum:
    _OK = 0
    _TOO_MANY = 1
    _NO_MEMORY = 2
    _EMPTY_SLOT = -1
    _MAX_MEMBERS = 30
    _FIRST_SLOTS = 256
    _FIRST_CAPACITY = 64

cdef int64_t _MAX_ID = 2147483646  # state numbers are int32


cdef struct Walk:
    # inputs (borrowed)
    int m
    Py_ssize_t k
    const int32_t* tables
    const int64_t* offsets
    const uint8_t* hopeless
    int64_t max_states
    # tuples in id order (m members each), their hashes, and the product's rows (k columns each)
    int32_t* tuples
    uint64_t* hashes
    int32_t* rows
    Py_ssize_t count
    Py_ssize_t capacity
    # open addressing: slot -> id or _EMPTY_SLOT; a power of two, at most half full
    int32_t* slots
    Py_ssize_t slot_mask
    # scratch: the current tuple, and its targets (k x m) with their live-member patterns (k)
    int32_t* current
    int32_t* targets
    uint64_t* live


cdef inline uint64_t _hash(const int32_t* members, int m) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL
    cdef int i
    for i in range(m):
        h = (h ^ <uint64_t><uint32_t>members[i]) * 0x100000001B3ULL
        h ^= h >> 29
    h ^= h >> 32
    h *= 0xD6E8FEB86659FD93ULL
    h ^= h >> 32
    return h


cdef int _grow_slots(Walk* w) noexcept nogil:
    """Double the hash table and put every known tuple back."""
    cdef Py_ssize_t size = (w.slot_mask + 1) * 2
    cdef int32_t* slots = <int32_t*>malloc(size * sizeof(int32_t))
    cdef Py_ssize_t ident, slot
    if slots == NULL:
        return _NO_MEMORY
    memset(slots, 0xFF, size * sizeof(int32_t))  # every slot _EMPTY_SLOT
    for ident in range(w.count):
        slot = <Py_ssize_t>(w.hashes[ident] & <uint64_t>(size - 1))
        while slots[slot] != _EMPTY_SLOT:
            slot = (slot + 1) & (size - 1)
        slots[slot] = <int32_t>ident
    free(w.slots)
    w.slots = slots
    w.slot_mask = size - 1
    return _OK


cdef int _grow_states(Walk* w) noexcept nogil:
    """Double the room for tuples, hashes and rows."""
    cdef Py_ssize_t capacity = w.capacity * 2
    cdef int32_t* tuples = <int32_t*>realloc(w.tuples, capacity * w.m * sizeof(int32_t))
    if tuples == NULL:
        return _NO_MEMORY
    w.tuples = tuples
    cdef uint64_t* hashes = <uint64_t*>realloc(w.hashes, capacity * sizeof(uint64_t))
    if hashes == NULL:
        return _NO_MEMORY
    w.hashes = hashes
    cdef int32_t* rows = <int32_t*>realloc(w.rows, capacity * w.k * sizeof(int32_t))
    if rows == NULL:
        return _NO_MEMORY
    w.rows = rows
    w.capacity = capacity
    return _OK


cdef int _find_or_add(Walk* w, const int32_t* members, int32_t* ident) noexcept nogil:
    """The id of the tuple ``members``, numbering it next when new."""
    cdef uint64_t h = _hash(members, w.m)
    cdef Py_ssize_t slot = <Py_ssize_t>(h & <uint64_t>w.slot_mask)
    cdef int32_t found
    cdef int status
    cdef const int32_t* known
    cdef int i
    cdef bint same
    while True:
        found = w.slots[slot]
        if found == _EMPTY_SLOT:
            break
        if w.hashes[found] == h:
            known = w.tuples + <Py_ssize_t>found * w.m
            same = True
            for i in range(w.m):
                if known[i] != members[i]:
                    same = False
                    break
            if same:
                ident[0] = found
                return _OK
        slot = (slot + 1) & w.slot_mask
    if w.count > w.max_states:
        return _TOO_MANY
    if w.count == w.capacity:
        status = _grow_states(w)
        if status != _OK:
            return status
    found = <int32_t>w.count
    memcpy(w.tuples + w.count * w.m, members, w.m * sizeof(int32_t))
    w.hashes[found] = h
    w.slots[slot] = found
    w.count += 1
    ident[0] = found
    if 2 * w.count > w.slot_mask + 1:
        return _grow_slots(w)
    return _OK


cdef int _walk(Walk* w, const int32_t* starts, int32_t* start_id) noexcept nogil:
    """Breadth-first walk from the tuple of start states; fills ``w.rows`` for ids 0 .. count - 1."""
    cdef int m = w.m
    cdef Py_ssize_t k = w.k
    cdef Py_ssize_t index, c
    cdef int i, status
    cdef uint64_t pattern
    cdef int32_t target_id
    cdef const int32_t* row
    cdef int32_t* targets = w.targets
    cdef uint64_t* live = w.live
    # the dead tuple is state 0, whatever the rule says of it
    memset(w.current, 0, m * sizeof(int32_t))
    status = _find_or_add(w, w.current, &target_id)
    if status != _OK:
        return status
    memset(w.rows, 0, k * sizeof(int32_t))
    pattern = 0
    for i in range(m):
        if starts[i] != 0:
            pattern |= (<uint64_t>1) << i
    start_id[0] = 0
    if not w.hopeless[pattern]:
        status = _find_or_add(w, starts, start_id)
        if status != _OK:
            return status
    index = 1
    while index < w.count:
        memcpy(w.current, w.tuples + index * m, m * sizeof(int32_t))  # tuples may move on growth
        memset(live, 0, k * sizeof(uint64_t))
        for i in range(m):
            row = w.tables + (w.offsets[i] + w.current[i]) * k
            for c in range(k):
                targets[c * m + i] = row[c]
                if row[c] != 0:
                    live[c] |= (<uint64_t>1) << i
        for c in range(k):
            if w.hopeless[live[c]]:
                target_id = 0
            else:
                status = _find_or_add(w, targets + c * m, &target_id)
                if status != _OK:
                    return status
            w.rows[index * k + c] = target_id  # rows may move on growth: index afresh
        index += 1
    return _OK


cdef void _release(Walk* w) noexcept nogil:
    free(w.tuples)
    free(w.hashes)
    free(w.rows)
    free(w.slots)
    free(w.current)
    free(w.targets)
    free(w.live)
    w.tuples = NULL
    w.hashes = NULL
    w.rows = NULL
    w.slots = NULL
    w.current = NULL
    w.targets = NULL
    w.live = NULL


cdef Py_ssize_t _first_bad_row(const int32_t[:, ::1] tables, int64_t first, int64_t end) noexcept nogil:
    """The first row of ``first .. end - 1`` with a target outside ``0 .. end - first - 1``, or -1."""
    cdef Py_ssize_t r, c
    cdef int32_t t
    cdef int64_t size = end - first
    for r in range(first, end):
        for c in range(tables.shape[1]):
            t = tables[r, c]
            if t < 0 or t >= size:
                return r
    return -1


def _check_inputs(
    const int32_t[:, ::1] tables,
    const int64_t[::1] offsets,
    const uint8_t[::1] accepting,
    const int32_t[::1] starts,
    const uint8_t[::1] accept_rule,
    const uint8_t[::1] hopeless_rule,
) -> None:
    """Raise ValueError unless the arrays fit together as the module docstring says."""
    cdef Py_ssize_t m = starts.shape[0]
    cdef Py_ssize_t i, bad
    cdef int64_t first, end
    if m < 1 or m > _MAX_MEMBERS:
        raise ValueError(f"a native product takes 1 to {_MAX_MEMBERS} automata, not {m}")
    if tables.shape[1] < 1:
        raise ValueError("the automata need at least one byte class")
    if offsets.shape[0] != m + 1 or offsets[0] != 0 or offsets[m] != tables.shape[0]:
        raise ValueError("offsets must run from 0 to the number of stacked rows, one more than automata")
    if accepting.shape[0] != tables.shape[0]:
        raise ValueError("accepting must have one flag per stacked row")
    if accept_rule.shape[0] != (1 << m) or hopeless_rule.shape[0] != (1 << m):
        raise ValueError("the accept and hopeless rules must have 2^m entries")
    for i in range(m):
        first = offsets[i]
        end = offsets[i + 1]
        if end <= first or end > tables.shape[0]:
            raise ValueError(f"automaton {i} has no states")
        if starts[i] < 0 or starts[i] >= end - first:
            raise ValueError(f"start state {starts[i]} of automaton {i} is out of range")
        with nogil:
            bad = _first_bad_row(tables, first, end)
        if bad >= 0:
            raise ValueError(f"automaton {i} has a transition outside its {end - first} states (state {bad - first})")


def product_table(
    const int32_t[:, ::1] tables,
    const int64_t[::1] offsets,
    const uint8_t[::1] accepting,
    const int32_t[::1] starts,
    const uint8_t[::1] accept_rule,
    const uint8_t[::1] hopeless_rule,
    long long max_states,
):
    """The breadth-first product (see the module docstring): ``(transitions, accepting, start)``, or
    ``None`` when it needs a state number above ``max_states``."""
    _check_inputs(tables, offsets, accepting, starts, accept_rule, hopeless_rule)
    cdef Walk w
    cdef int status = _OK
    cdef int32_t start_id = 0
    cdef Py_ssize_t ident
    cdef int i
    cdef uint64_t pattern
    cdef const int32_t* members
    cdef int32_t[:, ::1] out_rows
    cdef uint8_t[::1] out_flags
    memset(&w, 0, sizeof(Walk))
    w.m = <int>starts.shape[0]
    w.k = tables.shape[1]
    w.tables = &tables[0, 0]
    w.offsets = &offsets[0]
    w.hopeless = &hopeless_rule[0]
    w.max_states = min(max(max_states, 0), _MAX_ID)
    w.capacity = _FIRST_CAPACITY
    w.slot_mask = _FIRST_SLOTS - 1
    try:
        w.tuples = <int32_t*>malloc(w.capacity * w.m * sizeof(int32_t))
        w.hashes = <uint64_t*>malloc(w.capacity * sizeof(uint64_t))
        w.rows = <int32_t*>malloc(w.capacity * w.k * sizeof(int32_t))
        w.slots = <int32_t*>malloc(_FIRST_SLOTS * sizeof(int32_t))
        w.current = <int32_t*>malloc(w.m * sizeof(int32_t))
        w.targets = <int32_t*>malloc(w.k * w.m * sizeof(int32_t))
        w.live = <uint64_t*>malloc(w.k * sizeof(uint64_t))
        if (
            w.tuples == NULL or w.hashes == NULL or w.rows == NULL or w.slots == NULL
            or w.current == NULL or w.targets == NULL or w.live == NULL
        ):
            raise MemoryError("no memory for the product's tables")
        memset(w.slots, 0xFF, _FIRST_SLOTS * sizeof(int32_t))  # every slot _EMPTY_SLOT
        with nogil:
            status = _walk(&w, &starts[0], &start_id)
        if status == _NO_MEMORY:
            raise MemoryError("no memory for the product's tables")
        if status == _TOO_MANY:
            return None
        transitions = np.empty((w.count, w.k), dtype=np.int32)
        flags = np.zeros(w.count, dtype=np.bool_)
        out_rows = transitions
        out_flags = flags.view(np.uint8)
        with nogil:
            memcpy(&out_rows[0, 0], w.rows, w.count * w.k * sizeof(int32_t))
            for ident in range(1, w.count):
                members = w.tuples + ident * w.m
                pattern = 0
                for i in range(w.m):
                    if accepting[offsets[i] + members[i]]:
                        pattern |= (<uint64_t>1) << i
                out_flags[ident] = accept_rule[pattern]
        return transitions, flags, int(start_id)
    finally:
        _release(&w)
