# cython: language_level=3
"""Distances to acceptance, pruning and Hopcroft minimisation of a dense DFA, in C.

In: a dense table ``transitions`` int32[n, k] (C-contiguous, n >= 1, k >= 1, every target in
[0, n)), acceptance flags ``accepting`` uint8[n] (a numpy bool array viewed as uint8), and for
``minimal`` a start state; ``minimal`` also wants state 0 dead (row 0 all zero, not accepting).
The Python stage (``minimize.minimal_dense``, ``distances.prune`` and ``shortest_distances``)
validates every array and raises ``MalformedDFAError`` first; the checks here (shapes, target
range, dead row) only keep a direct caller from reading out of bounds, with ``ValueError``.

Out:
- ``distances(transitions, accepting)``: int32[n], the fewest steps from each state to an
  accepting one, -1 where none (breadth first backwards from the accepting states);
- ``prune(transitions, distance)``: ``(table, kept)``, the rows of the states with
  ``distance >= 0`` and of state 0, in their order, every target renumbered and the dropped ones
  sent to 0 (row 0 all zero), and ``kept`` int32[m], the old number of each kept state;
- ``minimal(transitions, accepting, start)``: ``(table, accepting, distance)`` of the minimal DFA,
  int32[m, k], bool[m], int32[m]: dead state 0, start 1, the other states numbered breadth first
  from the start visiting targets in column order (callers number columns by smallest byte, so
  this is the canonical numbering); ``None`` when the start cannot reach acceptance. Columns are
  not merged: ``column_classes(table)`` gives int32[k], for each column the number of the first
  column equal to it among the distinct ones, counted in order (the caller merges with it);
- ``canonical_minimal(transitions, byte_class, accepting, start)``: all of it in one call, what
  ``DFA(table, byte_class, accepting, 1, distance)`` takes: the columns numbered by their smallest
  byte (unused ones dropped), ``minimal``, equal columns merged as ``column_classes`` numbers them,
  ``byte_class`` renumbered to match; ``None`` when the start cannot reach acceptance. It checks
  every input itself (``byte_class`` in range too), so ``compile_ir`` hands it the subset
  construction's arrays without a Python pass;
- ``merged_columns(table)``: ``(merged, column_of)``, the table with each distinct column once
  (None when all are distinct) and ``column_classes(table)``; ``merged_columns_in_place`` the
  same written over a table that the caller gives up (``merged`` a view of it).

``minimal`` reads the dense table once, into its live transitions (those not into the dead state 0,
state by state in column order: ``Edges``), and every later pass walks those; only the output rows
are dense again. It prunes, seeds the partition with the distance to acceptance (equivalent states
share it; distance 0 is acceptance, -1 only the dead state), then refines it with Hopcroft's
algorithm on the live transitions: the predecessors of each state in CSR form, built once; blocks
as ranges of one permutation of the states, with the marked states of a block gathered at its
front; the waiting splitters on a stack. The dead block is never a splitter: the seed is stable
under the whole state set, so being stable under every live block implies stability under it. A
split block keeps its larger part; the smaller part becomes a new block and a waiting splitter
(when the block was waiting, both parts wait; otherwise the smaller one suffices), so each state is
in O(log n) splitters and the work is O(E log n) for E live transitions. The loops run without the
GIL, on malloc'd memory that is freed on every path.
"""

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np

from moonmaskc.automata._native.owned cimport owned_int32, owned_int32_vector, owned_uint8
from moonmaskc.automata._native.table_checks cimport targets_in_range

cdef enum:
    OK = 0
    NO_MEMORY = -1
    BAD_TARGET = -2


cdef void* _alloc(Py_ssize_t count, size_t size) noexcept nogil:
    """Room for ``count`` items of ``size`` bytes (at least one, so that NULL means no memory)."""
    if count < 1:
        count = 1
    return malloc(<size_t>count * size)


cdef int _raise_for(int status) except -1:
    if status == NO_MEMORY:
        raise MemoryError("moonmaskc native minimize: out of memory")
    if status == BAD_TARGET:
        raise ValueError("a transition target is outside [0, states)")
    return 0


cdef int _check_table(Py_ssize_t n, Py_ssize_t k, Py_ssize_t flags) except -1:
    if n < 1 or k < 1:
        raise ValueError("the table needs at least one state and one class")
    if flags != n:
        raise ValueError("one flag per state is needed")
    return 0


cdef Py_ssize_t _live_numbering(
    const int32_t* distance, Py_ssize_t n, int32_t* new_id, int32_t* kept
) noexcept nogil:
    """Number the states with ``distance >= 0`` from 1 in their order, state 0 and the others 0;
    ``kept[i]``: the old number of new state ``i``. Returns how many states are kept."""
    cdef Py_ssize_t s, m = 1
    new_id[0] = 0
    kept[0] = 0
    for s in range(1, n):
        if distance[s] >= 0:
            new_id[s] = <int32_t>m
            kept[m] = <int32_t>s
            m += 1
        else:
            new_id[s] = 0
    return m


cdef void _fill_pruned(
    const int32_t* table, Py_ssize_t k, const int32_t* new_id, const int32_t* kept, Py_ssize_t m,
    int32_t* out,
) noexcept nogil:
    cdef Py_ssize_t i, c
    cdef const int32_t* source
    cdef int32_t* target
    for c in range(k):
        out[c] = 0
    for i in range(1, m):
        source = table + kept[i] * k
        target = out + i * k
        for c in range(k):
            target[c] = new_id[source[c]]


cdef struct Edges:
    # the transitions other than into state 0, state by state in column order:
    # state s's at [offsets[s], offsets[s + 1]) of cls (the column) and target
    Py_ssize_t* offsets
    int32_t* cls
    int32_t* target


cdef void _free_edges(Edges* edges) noexcept nogil:
    free(edges.offsets)
    free(edges.cls)
    free(edges.target)
    edges.offsets = NULL
    edges.cls = NULL
    edges.target = NULL


cdef inline bint _eight_dead(const int32_t* row) noexcept nogil:
    """Whether the eight transitions from ``row`` all lead to the dead state 0."""
    cdef uint64_t first, second, third, fourth
    memcpy(&first, row, 8)
    memcpy(&second, row + 2, 8)
    memcpy(&third, row + 4, 8)
    memcpy(&fourth, row + 6, 8)
    return (first | second | third | fourth) == 0


cdef int _sparse_edges(
    const int32_t* table, Py_ssize_t n, Py_ssize_t k, bint keep_dead, Edges* out
) noexcept nogil:
    """The live transitions of the dense ``table`` (``out`` zeroed; the caller frees it on every
    path), in the one pass over it that the minimisation makes: the later passes walk these
    (a JSON schema's DFA sends 90% of its transitions into the dead state). ``keep_dead``: the
    transitions into state 0 too (where state 0 is not known to be dead). Checks every target
    (``BAD_TARGET``)."""
    cdef Py_ssize_t capacity = n * 4 + k, count = 0, s, c
    cdef const int32_t* row
    cdef uint32_t target, bound = <uint32_t>n, outside = 0
    cdef int32_t* grown
    out.offsets = <Py_ssize_t*>_alloc(n + 1, sizeof(Py_ssize_t))
    out.cls = <int32_t*>_alloc(capacity, sizeof(int32_t))
    out.target = <int32_t*>_alloc(capacity, sizeof(int32_t))
    if out.offsets == NULL or out.cls == NULL or out.target == NULL:
        return NO_MEMORY
    for s in range(n):
        out.offsets[s] = count
        if count + k > capacity:  # room for a whole row, so that every slot is written blindly
            capacity = 2 * capacity if 2 * capacity >= count + k else count + k
            grown = <int32_t*>realloc(out.cls, <size_t>capacity * sizeof(int32_t))
            if grown == NULL:
                return NO_MEMORY
            out.cls = grown
            grown = <int32_t*>realloc(out.target, <size_t>capacity * sizeof(int32_t))
            if grown == NULL:
                return NO_MEMORY
            out.target = grown
        row = table + s * k
        if keep_dead:
            for c in range(k):
                target = <uint32_t>row[c]  # a negative target wraps past the bound
                outside |= target >= bound
                out.cls[count] = <int32_t>c
                out.target[count] = <int32_t>target
                count += 1
            continue
        c = 0
        while c < k:
            if (c & 7) == 0 and c + 8 <= k and _eight_dead(row + c):  # (as most are)
                c += 8
                continue
            target = <uint32_t>row[c]
            if target != 0:
                outside |= target >= bound
                out.cls[count] = <int32_t>c
                out.target[count] = <int32_t>target
                count += 1
            c += 1
    out.offsets[n] = count
    return BAD_TARGET if outside else OK


cdef int _reverse_bfs(
    const Edges* edges, Py_ssize_t n, const uint8_t* accepting, int32_t* distance
) noexcept nogil:
    """``distance[s]``: fewest steps from ``s`` to an accepting state over ``edges``, -1 where
    none. The distinct predecessors of every state are gathered in CSR form (one ``stamp`` per
    target and source), then walked breadth first from the accepting states."""
    cdef Py_ssize_t* offsets = <Py_ssize_t*>_alloc(n + 1, sizeof(Py_ssize_t))
    cdef int32_t* stamp = <int32_t*>_alloc(n, sizeof(int32_t))
    cdef int32_t* sources = NULL
    cdef Py_ssize_t s, e, i, head = 0, tail = 0
    cdef int32_t t, step
    cdef int status = OK
    if offsets == NULL or stamp == NULL:
        status = NO_MEMORY
    if status == OK:
        for s in range(n + 1):
            offsets[s] = 0
        for s in range(n):
            stamp[s] = -1
        for s in range(n):  # distinct predecessors only
            for e in range(edges.offsets[s], edges.offsets[s + 1]):
                t = edges.target[e]
                if stamp[t] != s:
                    stamp[t] = <int32_t>s
                    offsets[t + 1] += 1
        for s in range(n):
            offsets[s + 1] += offsets[s]
        sources = <int32_t*>_alloc(offsets[n], sizeof(int32_t))
        if sources == NULL:
            status = NO_MEMORY
    if status == OK:
        for s in range(n):
            stamp[s] = -1
        for s in range(n):  # offsets[t] serves as t's cursor, then moves back
            for e in range(edges.offsets[s], edges.offsets[s + 1]):
                t = edges.target[e]
                if stamp[t] != s:
                    stamp[t] = <int32_t>s
                    sources[offsets[t]] = <int32_t>s
                    offsets[t] += 1
        for s in range(n, 0, -1):
            offsets[s] = offsets[s - 1]
        offsets[0] = 0
        for s in range(n):  # breadth first; the queue reuses ``stamp``
            if accepting[s]:
                distance[s] = 0
                stamp[tail] = <int32_t>s
                tail += 1
            else:
                distance[s] = -1
        while head < tail:
            t = stamp[head]
            head += 1
            step = distance[t] + 1
            for i in range(offsets[t], offsets[t + 1]):
                s = sources[i]
                if distance[s] < 0:
                    distance[s] = step
                    stamp[tail] = <int32_t>s
                    tail += 1
    free(offsets)
    free(stamp)
    free(sources)
    return status


cdef int _pruned_edges(
    const Edges* edges, const int32_t* new_id, const int32_t* kept, Py_ssize_t m, Edges* out
) noexcept nogil:
    """The live transitions of the pruned DFA (``out`` zeroed, freed by the caller): kept state
    ``i``'s are old state ``kept[i]``'s into kept states, renumbered."""
    cdef Py_ssize_t i, e, count = 0
    cdef int32_t t
    cdef Py_ssize_t most = edges.offsets[kept[m - 1] + 1] if m > 1 else 0
    out.offsets = <Py_ssize_t*>_alloc(m + 1, sizeof(Py_ssize_t))
    out.cls = <int32_t*>_alloc(most, sizeof(int32_t))
    out.target = <int32_t*>_alloc(most, sizeof(int32_t))
    if out.offsets == NULL or out.cls == NULL or out.target == NULL:
        return NO_MEMORY
    out.offsets[0] = 0
    for i in range(1, m):
        out.offsets[i] = count
        for e in range(edges.offsets[kept[i]], edges.offsets[kept[i] + 1]):
            t = new_id[edges.target[e]]
            if t:
                out.cls[count] = edges.cls[e]
                out.target[count] = t
                count += 1
    out.offsets[m] = count
    return OK


cdef int _hopcroft(
    const Edges* live, Py_ssize_t m, Py_ssize_t k, const int32_t* distance,
    int32_t* block_of, int32_t* representative, Py_ssize_t* num_blocks,
) noexcept nogil:
    """Coarsest partition of the pruned DFA (state 0 dead and the only state with distance -1)
    that refines the partition by distance and is stable under the transitions. ``block_of[s]``:
    the block of ``s``; ``representative[b]``: one state of block ``b``; ``num_blocks``: how many
    blocks there are."""
    cdef int32_t* elems = <int32_t*>_alloc(m, sizeof(int32_t))  # the states, block by block
    cdef int32_t* where = <int32_t*>_alloc(m, sizeof(int32_t))  # position of each state in elems
    cdef int32_t* first = <int32_t*>_alloc(m, sizeof(int32_t))  # block b: elems[first[b]:end[b]]
    cdef int32_t* end = <int32_t*>_alloc(m, sizeof(int32_t))
    cdef int32_t* middle = <int32_t*>_alloc(m, sizeof(int32_t))  # marked: elems[first[b]:middle[b]]
    cdef int32_t* waiting = <int32_t*>_alloc(m, sizeof(int32_t))  # stack of splitters
    cdef uint8_t* is_waiting = <uint8_t*>_alloc(m, sizeof(uint8_t))
    cdef int32_t* touched = <int32_t*>_alloc(m, sizeof(int32_t))  # blocks with marked states
    cdef Py_ssize_t* by_distance = <Py_ssize_t*>_alloc(m + 1, sizeof(Py_ssize_t))
    cdef Py_ssize_t* in_offsets = <Py_ssize_t*>_alloc(m + 1, sizeof(Py_ssize_t))
    cdef Py_ssize_t* class_count = <Py_ssize_t*>_alloc(k, sizeof(Py_ssize_t))
    cdef Py_ssize_t* class_start = <Py_ssize_t*>_alloc(k, sizeof(Py_ssize_t))
    cdef Py_ssize_t* class_end = <Py_ssize_t*>_alloc(k, sizeof(Py_ssize_t))
    cdef int32_t* classes_seen = <int32_t*>_alloc(k, sizeof(int32_t))
    cdef int32_t* in_source = NULL  # live edges into each state: source and class
    cdef int32_t* in_class = NULL
    cdef int32_t* preimage = NULL  # sources of the edges into a splitter, bucketed by class
    cdef Py_ssize_t s, c, i, j, e, d, blocks, top, pos, edges, seen, marked_blocks
    cdef int32_t t, b, nb, splitter, p, q, other, cls
    cdef int status = OK
    if (
        elems == NULL or where == NULL or first == NULL or end == NULL or middle == NULL
        or waiting == NULL or is_waiting == NULL or touched == NULL or by_distance == NULL
        or in_offsets == NULL or class_count == NULL or class_start == NULL or class_end == NULL
        or classes_seen == NULL
    ):
        status = NO_MEMORY
    if status == OK:
        # live edges into every state, in CSR form
        for s in range(m + 1):
            in_offsets[s] = 0
        for s in range(1, m):
            for e in range(live.offsets[s], live.offsets[s + 1]):
                in_offsets[live.target[e] + 1] += 1
        for s in range(m):
            in_offsets[s + 1] += in_offsets[s]
        edges = in_offsets[m]
        in_source = <int32_t*>_alloc(edges, sizeof(int32_t))
        in_class = <int32_t*>_alloc(edges, sizeof(int32_t))
        preimage = <int32_t*>_alloc(edges, sizeof(int32_t))
        if in_source == NULL or in_class == NULL or preimage == NULL:
            status = NO_MEMORY
    if status == OK:
        for s in range(1, m):  # in_offsets[t] serves as t's cursor, then moves back
            for e in range(live.offsets[s], live.offsets[s + 1]):
                t = live.target[e]
                in_source[in_offsets[t]] = <int32_t>s
                in_class[in_offsets[t]] = live.cls[e]
                in_offsets[t] += 1
        for s in range(m, 0, -1):
            in_offsets[s] = in_offsets[s - 1]
        in_offsets[0] = 0
        # seed: one block per distance, in increasing order (the dead state, -1, is block 0)
        for d in range(m + 1):
            by_distance[d] = 0
        for s in range(m):
            by_distance[distance[s] + 1] += 1
        blocks = 0
        pos = 0
        for d in range(m + 1):
            if by_distance[d]:
                first[blocks] = <int32_t>pos
                middle[blocks] = <int32_t>pos
                pos += by_distance[d]
                end[blocks] = <int32_t>pos
                by_distance[d] = blocks
                blocks += 1
        for s in range(m):
            b = <int32_t>by_distance[distance[s] + 1]
            block_of[s] = b
            elems[middle[b]] = <int32_t>s
            where[s] = middle[b]
            middle[b] += 1
        top = 0
        for b in range(blocks):
            middle[b] = first[b]
            is_waiting[b] = b != block_of[0]
            if is_waiting[b]:
                waiting[top] = b
                top += 1
        for c in range(k):
            class_count[c] = 0
        while top > 0:
            top -= 1
            splitter = waiting[top]
            is_waiting[splitter] = 0
            # the sources of the edges into the splitter, bucketed by class (a counting sort)
            seen = 0
            for i in range(first[splitter], end[splitter]):
                t = elems[i]
                for e in range(in_offsets[t], in_offsets[t + 1]):
                    cls = in_class[e]
                    if class_count[cls] == 0:
                        classes_seen[seen] = cls
                        seen += 1
                    class_count[cls] += 1
            pos = 0
            for j in range(seen):
                cls = classes_seen[j]
                class_start[cls] = pos
                class_end[cls] = pos
                pos += class_count[cls]
                class_count[cls] = 0
            for i in range(first[splitter], end[splitter]):
                t = elems[i]
                for e in range(in_offsets[t], in_offsets[t + 1]):
                    cls = in_class[e]
                    preimage[class_end[cls]] = in_source[e]
                    class_end[cls] += 1
            for j in range(seen):
                cls = classes_seen[j]
                # mark: move each source to the front of its block (a DFA has one edge per
                # source and class, so no source comes twice)
                marked_blocks = 0
                for i in range(class_start[cls], class_end[cls]):
                    p = preimage[i]
                    b = block_of[p]
                    if end[b] - first[b] == 1:
                        continue
                    if middle[b] == first[b]:
                        touched[marked_blocks] = b
                        marked_blocks += 1
                    q = middle[b]
                    other = elems[q]
                    elems[where[p]] = other
                    where[other] = where[p]
                    elems[q] = p
                    where[p] = q
                    middle[b] = q + 1
                # split: the smaller part becomes a new block and waits
                for i in range(marked_blocks):
                    b = touched[i]
                    if middle[b] == end[b]:
                        middle[b] = first[b]
                        continue
                    nb = <int32_t>blocks
                    blocks += 1
                    if middle[b] - first[b] <= end[b] - middle[b]:
                        first[nb] = first[b]
                        end[nb] = middle[b]
                        first[b] = middle[b]
                    else:
                        first[nb] = middle[b]
                        end[nb] = end[b]
                        end[b] = middle[b]
                    middle[b] = first[b]
                    middle[nb] = first[nb]
                    for e in range(first[nb], end[nb]):
                        block_of[elems[e]] = nb
                    is_waiting[nb] = 1
                    waiting[top] = nb
                    top += 1
        for b in range(blocks):
            representative[b] = elems[first[b]]
        num_blocks[0] = blocks
    free(elems)
    free(where)
    free(first)
    free(end)
    free(middle)
    free(waiting)
    free(is_waiting)
    free(touched)
    free(by_distance)
    free(in_offsets)
    free(class_count)
    free(class_start)
    free(class_end)
    free(classes_seen)
    free(in_source)
    free(in_class)
    free(preimage)
    return status


cdef Py_ssize_t _breadth_first(
    const Edges* edges, const int32_t* block_of, const int32_t* representative,
    Py_ssize_t num_blocks, int32_t start, int32_t* order, int32_t* new_id,
) noexcept nogil:
    """Number the blocks reachable from the start: the dead state's 0, the start's 1, the others
    breadth first visiting targets in column order. ``order[i]``: the block numbered ``i``.
    Returns how many are numbered."""
    cdef Py_ssize_t b, e, head, count
    cdef int32_t state, target_block
    for b in range(num_blocks):
        new_id[b] = -1
    new_id[block_of[0]] = 0
    order[0] = block_of[0]
    new_id[block_of[start]] = 1
    order[1] = block_of[start]
    count = 2
    head = 1
    while head < count:
        state = representative[order[head]]
        head += 1
        for e in range(edges.offsets[state], edges.offsets[state + 1]):  # in column order
            target_block = block_of[edges.target[e]]
            if new_id[target_block] < 0:
                new_id[target_block] = <int32_t>count
                order[count] = target_block
                count += 1
    return count


cdef void _fill_minimal(
    const Edges* edges, Py_ssize_t k, const int32_t* distance, const int32_t* block_of,
    const int32_t* representative, const int32_t* order, const int32_t* new_id, Py_ssize_t size,
    int32_t* out, uint8_t* out_accepting, int32_t* out_distance,
) noexcept nogil:
    """The minimal DFA's dense rows: zero (the dead block is numbered 0) but for each block's
    representative's live transitions."""
    cdef Py_ssize_t i, e
    cdef int32_t state
    cdef int32_t* target
    memset(out, 0, <size_t>(size * k) * sizeof(int32_t))
    out_accepting[0] = 0
    out_distance[0] = -1
    for i in range(1, size):
        state = representative[order[i]]
        target = out + i * k
        for e in range(edges.offsets[state], edges.offsets[state + 1]):
            target[edges.cls[e]] = new_id[block_of[edges.target[e]]]
        out_distance[i] = distance[state]
        out_accepting[i] = distance[state] == 0


cdef void _column_classes(const int32_t* table, Py_ssize_t m, Py_ssize_t k, uint64_t* digest,
                          int32_t* kept, int32_t* column_class) noexcept nogil:
    """``column_class[c]``: the number of the first column equal to column ``c`` among the distinct
    columns, counted in order. Columns are told apart by a digest of their nonzero entries (row
    and value) built in one row-major pass, eight zeros skipped at once, and compared in full when
    their digests agree."""
    cdef Py_ssize_t r, c, j, distinct = 0
    cdef const int32_t* row
    cdef bint same
    for c in range(k):
        digest[c] = 1469598103934665603ULL
    for r in range(m):
        row = table + r * k
        c = 0
        while c < k:
            if (c & 7) == 0 and c + 8 <= k and _eight_dead(row + c):
                c += 8
                continue
            if row[c] != 0:
                digest[c] = (digest[c] ^ ((<uint64_t>r << 32) | <uint32_t>row[c])) * 1099511628211ULL
            c += 1
    for c in range(k):
        column_class[c] = -1
        for j in range(distinct):
            if digest[kept[j]] != digest[c]:
                continue
            same = True
            for r in range(m):
                if table[r * k + c] != table[r * k + kept[j]]:
                    same = False
                    break
            if same:
                column_class[c] = <int32_t>j
                break
        if column_class[c] < 0:
            column_class[c] = <int32_t>distinct
            kept[distinct] = <int32_t>c
            distinct += 1


def column_classes(const int32_t[:, ::1] table not None):
    """int32[k]: for each column, the number of the first column equal to it among the distinct
    columns, counted in order (what merging equal columns numbers them)."""
    cdef Py_ssize_t m = table.shape[0], k = table.shape[1]
    _check_table(m, k, m)
    cdef uint64_t* digest = <uint64_t*>_alloc(k, sizeof(uint64_t))
    cdef int32_t* kept = <int32_t*>_alloc(k, sizeof(int32_t))
    cdef int32_t[::1] out
    try:
        if digest == NULL or kept == NULL:
            _raise_for(NO_MEMORY)
        result = np.empty(k, dtype=np.int32)
        out = result
        with nogil:
            _column_classes(&table[0, 0], m, k, digest, kept, &out[0])
        return result
    finally:
        free(digest)
        free(kept)


cdef Py_ssize_t _first_columns(const int32_t* class_of, Py_ssize_t k, int32_t* first) noexcept nogil:
    """The first column of each distinct one into ``first`` (``class_of`` numbers them in order of
    first appearance); how many there are."""
    cdef Py_ssize_t column, distinct = 0
    for column in range(k):
        if class_of[column] == distinct:
            first[distinct] = <int32_t>column
            distinct += 1
    return distinct


def merged_columns(const int32_t[:, ::1] table not None):
    """``(merged, column_of)``: ``table`` with each distinct column once, in order of first
    appearance (int32[m, distinct], a new array; None when every column is distinct), and
    ``column_classes(table)``. The gather runs row by row, where numpy's ``take`` along the
    columns of a row-major table reads with a stride (7 ms on 33,000 x 73)."""
    return _merged(table, NULL, None)


def merged_columns_in_place(int32_t[:, ::1] table not None):
    """``merged_columns`` written over ``table`` itself, which the caller gives up: ``merged`` is a
    view of its first ``m x distinct`` values (row ``r`` of the result never overlaps a value of
    a later row, nor a later value of its own row, that is still to be read). No new buffer:
    fresh pages cost more than the gather (a 36,000 x 73 table: 7.4 -> 4.3 ms, the numbering of
    the columns included)."""
    return _merged(table, &table[0, 0], table)


cdef object _merged(const int32_t[:, ::1] table, int32_t* into, object given_up):
    """``merged_columns``, written to ``into`` (the table's own values, ``given_up`` the table:
    the result is a view of it) or, where that is NULL, to a new array."""
    cdef Py_ssize_t m = table.shape[0], k = table.shape[1], row, column, distinct
    classes = column_classes(table)
    cdef int32_t[::1] class_of = classes
    cdef int32_t* first = <int32_t*>_alloc(k, sizeof(int32_t))
    cdef const int32_t* values = &table[0, 0]
    cdef int32_t[:, ::1] out_view
    try:
        if first == NULL:
            _raise_for(NO_MEMORY)
        distinct = _first_columns(&class_of[0], k, first)
        if distinct == k:
            return None, classes
        if into == NULL:
            merged = np.empty((m, distinct), dtype=np.int32)
            out_view = merged
            into = &out_view[0, 0]
        with nogil:
            for row in range(m):
                for column in range(distinct):
                    into[row * distinct + column] = values[row * k + first[column]]
        if given_up is not None:
            merged = np.asarray(given_up).reshape(-1)[: m * distinct].reshape(m, distinct)
        return merged, classes
    finally:
        free(first)


def distances(const int32_t[:, ::1] transitions not None, const uint8_t[::1] accepting not None):
    """int32[n]: fewest steps from each state to an accepting one, -1 where none."""
    cdef Py_ssize_t n = transitions.shape[0], k = transitions.shape[1], c
    _check_table(n, k, accepting.shape[0])
    cdef const int32_t* table = &transitions[0, 0]
    cdef const uint8_t* flags = &accepting[0]
    cdef bint skip_dead = not flags[0]
    for c in range(k):
        if table[c] != 0:
            skip_dead = False
    result = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] out = result
    cdef int status
    cdef Edges edges
    memset(&edges, 0, sizeof(Edges))
    with nogil:
        status = _sparse_edges(table, n, k, not skip_dead, &edges)
        if status == OK:
            status = _reverse_bfs(&edges, n, flags, &out[0])
        _free_edges(&edges)
    _raise_for(status)
    return result


def prune(const int32_t[:, ::1] transitions not None, const int32_t[::1] distance not None):
    """``(table, kept)``: the rows of state 0 and of the states with ``distance >= 0``, renumbered
    in order, the dropped targets sent to 0; ``kept``: the old number of each kept state."""
    cdef Py_ssize_t n = transitions.shape[0], k = transitions.shape[1], m
    _check_table(n, k, distance.shape[0])
    cdef const int32_t* table = &transitions[0, 0]
    cdef bint in_range
    with nogil:
        in_range = targets_in_range(table, n * k, n)
    if not in_range:
        _raise_for(BAD_TARGET)
    cdef int32_t* new_id = <int32_t*>_alloc(n, sizeof(int32_t))
    cdef int32_t[::1] kept_view
    cdef int32_t[:, ::1] out_view
    try:
        if new_id == NULL:
            _raise_for(NO_MEMORY)
        kept = np.empty(n, dtype=np.int32)
        kept_view = kept
        with nogil:
            m = _live_numbering(&distance[0], n, new_id, &kept_view[0])
        kept = kept[:m].copy()
        kept_view = kept
        pruned = np.empty((m, k), dtype=np.int32)
        out_view = pruned
        with nogil:
            _fill_pruned(table, k, new_id, &kept_view[0], m, &out_view[0, 0])
        return pruned, kept
    finally:
        free(new_id)


cdef struct Minimal:
    Py_ssize_t size  # states of the minimal DFA; 0 when the start cannot reach acceptance
    int32_t* table  # size rows of k, owned (malloc'd) when size > 0
    uint8_t* accepting
    int32_t* distance


cdef void _free_minimal(Minimal* out) noexcept nogil:
    free(out.table)
    free(out.accepting)
    free(out.distance)
    out.table = NULL
    out.accepting = NULL
    out.distance = NULL


cdef int _minimal(
    const int32_t* table, Py_ssize_t n, Py_ssize_t k, const uint8_t* flags, Py_ssize_t start, Minimal* out
) noexcept nogil:
    """Prune, refine, renumber: the minimal DFA of the checked table (dead state 0, start in range)
    into ``out`` (zeroed by the caller; the caller frees it on every path); an error code. The
    dense table is read once, into its live transitions (``_sparse_edges``); every later pass
    walks those."""
    cdef int32_t* distance = <int32_t*>_alloc(n, sizeof(int32_t))
    cdef int32_t* new_id = <int32_t*>_alloc(n, sizeof(int32_t))
    cdef int32_t* kept = <int32_t*>_alloc(n, sizeof(int32_t))
    cdef int32_t* pruned_distance = NULL
    cdef const int32_t* live_distance = distance
    cdef Edges edges
    cdef Edges pruned
    cdef const Edges* live = &edges
    cdef int32_t* block_of = NULL
    cdef int32_t* representative = NULL
    cdef int32_t* order = NULL
    cdef int32_t* block_id = NULL
    cdef Py_ssize_t num_blocks = 0, i, m, size = 0
    cdef int status = OK
    memset(&edges, 0, sizeof(Edges))
    memset(&pruned, 0, sizeof(Edges))
    if distance == NULL or new_id == NULL or kept == NULL:
        status = NO_MEMORY
    if status == OK:
        status = _sparse_edges(table, n, k, False, &edges)
    if status == OK:
        status = _reverse_bfs(&edges, n, flags, distance)
    if status == OK and distance[start] >= 0:
        m = _live_numbering(distance, n, new_id, kept)
        if m < n:  # else every state but 0 is live and keeps its number
            pruned_distance = <int32_t*>_alloc(m, sizeof(int32_t))
            if pruned_distance == NULL:
                status = NO_MEMORY
            else:
                status = _pruned_edges(&edges, new_id, kept, m, &pruned)
                for i in range(m):
                    pruned_distance[i] = distance[kept[i]]
                live = &pruned
                live_distance = pruned_distance
        if status == OK:
            block_of = <int32_t*>_alloc(m, sizeof(int32_t))
            representative = <int32_t*>_alloc(m, sizeof(int32_t))
            order = <int32_t*>_alloc(m, sizeof(int32_t))
            block_id = <int32_t*>_alloc(m, sizeof(int32_t))
            if block_of == NULL or representative == NULL or order == NULL or block_id == NULL:
                status = NO_MEMORY
        if status == OK:
            status = _hopcroft(live, m, k, live_distance, block_of, representative, &num_blocks)
        if status == OK:
            size = _breadth_first(
                live, block_of, representative, num_blocks, <int32_t>new_id[start], order, block_id
            )
            out.table = <int32_t*>_alloc(size * k, sizeof(int32_t))
            out.accepting = <uint8_t*>_alloc(size, sizeof(uint8_t))
            out.distance = <int32_t*>_alloc(size, sizeof(int32_t))
            if out.table == NULL or out.accepting == NULL or out.distance == NULL:
                status = NO_MEMORY
            else:
                _fill_minimal(
                    live, k, live_distance, block_of, representative, order, block_id, size,
                    out.table, out.accepting, out.distance,
                )
                out.size = size
    free(distance)
    free(new_id)
    free(kept)
    free(pruned_distance)
    _free_edges(&edges)
    _free_edges(&pruned)
    free(block_of)
    free(representative)
    free(order)
    free(block_id)
    return status


cdef int _check_dead_start(const int32_t* table, Py_ssize_t n, Py_ssize_t k, const uint8_t* flags,
                           Py_ssize_t start) except -1:
    cdef Py_ssize_t c
    if start < 0 or start >= n:
        raise ValueError("the start state is outside [0, states)")
    if flags[0]:
        raise ValueError("state 0 must be dead: it accepts")
    for c in range(k):
        if table[c] != 0:
            raise ValueError("state 0 must be dead: it has a transition to another state")
    return 0


def minimal(
    const int32_t[:, ::1] transitions not None, const uint8_t[::1] accepting not None, Py_ssize_t start
):
    """``(table, accepting, distance)`` of the minimal DFA in canonical numbering (columns not
    merged), or ``None`` when the start cannot reach acceptance."""
    cdef Py_ssize_t n = transitions.shape[0], k = transitions.shape[1]
    _check_table(n, k, accepting.shape[0])
    _check_dead_start(&transitions[0, 0], n, k, &accepting[0], start)
    cdef Minimal out
    cdef int status
    cdef Py_ssize_t size
    memset(&out, 0, sizeof(Minimal))
    try:
        with nogil:
            status = _minimal(&transitions[0, 0], n, k, &accepting[0], start, &out)
        _raise_for(status)
        if out.size == 0:
            return None
        size = out.size
        result = owned_int32(&out.table, size, k)
        result_accepting = owned_uint8(&out.accepting, size).view(np.bool_)
        result_distance = owned_int32_vector(&out.distance, size)
        return result, result_accepting, result_distance
    finally:
        _free_minimal(&out)


cdef Py_ssize_t _rank_columns(const int32_t* byte_class, Py_ssize_t k, int32_t* rank) noexcept nogil:
    """``rank[c]``: column ``c``'s number when the columns are numbered by their smallest byte (-1
    for a column no byte uses); returns how many columns are used."""
    cdef Py_ssize_t c, b, used = 0
    for c in range(k):
        rank[c] = -1
    for b in range(256):
        c = byte_class[b]
        if rank[c] < 0:
            rank[c] = <int32_t>used
            used += 1
    return used


def canonical_minimal(
    const int32_t[:, ::1] transitions not None,
    const int32_t[::1] byte_class not None,
    const uint8_t[::1] accepting not None,
    Py_ssize_t start,
):
    """The canonical minimal DFA as ``(table int32[m, c], byte_class int32[256], accepting bool[m],
    distance int32[m])``, ready for ``DFA(table, byte_class, accepting, 1, distance)``, or ``None``
    when the start cannot reach acceptance: the columns numbered by their smallest byte first
    (those no byte uses dropped), then ``minimal``, then equal columns merged as ``column_classes``
    numbers them. The table needs a dead state 0; every input is checked (``ValueError``), every
    target among them, before any walk."""
    cdef Py_ssize_t n = transitions.shape[0], k = transitions.shape[1], used, b, c, r, j, distinct = 0
    _check_table(n, k, accepting.shape[0])
    if byte_class.shape[0] != 256:
        raise ValueError("byte_class must have 256 entries")
    for b in range(256):
        if byte_class[b] < 0 or byte_class[b] >= k:
            raise ValueError("a byte class is outside [0, classes)")
    _check_dead_start(&transitions[0, 0], n, k, &accepting[0], start)
    cdef bint in_range
    with nogil:
        in_range = targets_in_range(&transitions[0, 0], n * k, n)
    if not in_range:  # (the walks below index rows by their targets)
        _raise_for(BAD_TARGET)
    cdef const int32_t* table = &transitions[0, 0]
    cdef int32_t* rank = <int32_t*>_alloc(k, sizeof(int32_t))
    cdef int32_t* renumbered = NULL  # owned; NULL when the columns are numbered so already
    cdef int32_t classes[256]
    cdef uint64_t* digest = NULL
    cdef int32_t* kept = NULL
    cdef int32_t* column_class = NULL
    cdef bint in_order = True
    cdef int status = OK
    cdef Minimal out
    cdef int32_t[:, ::1] out_view
    cdef int32_t[::1] classes_view
    cdef Py_ssize_t size
    cdef int32_t* target
    cdef const int32_t* row
    memset(&out, 0, sizeof(Minimal))
    try:
        if rank == NULL:
            _raise_for(NO_MEMORY)
        with nogil:
            used = _rank_columns(&byte_class[0], k, rank)
            for c in range(k):
                if rank[c] != c:
                    in_order = False
            for b in range(256):
                classes[b] = rank[byte_class[b]]
            if not in_order:
                renumbered = <int32_t*>_alloc(n * used, sizeof(int32_t))
                if renumbered == NULL:
                    status = NO_MEMORY
                else:
                    for r in range(n):
                        row = table + r * k
                        target = renumbered + r * used
                        for c in range(k):
                            if rank[c] >= 0:
                                target[rank[c]] = row[c]
                    table = renumbered
                    k = used
            if status == OK:
                status = _minimal(table, n, k, &accepting[0], start, &out)
            if status == OK and out.size:
                digest = <uint64_t*>_alloc(k, sizeof(uint64_t))
                kept = <int32_t*>_alloc(k, sizeof(int32_t))
                column_class = <int32_t*>_alloc(k, sizeof(int32_t))
                if digest == NULL or kept == NULL or column_class == NULL:
                    status = NO_MEMORY
                else:
                    _column_classes(out.table, out.size, k, digest, kept, column_class)
                    for c in range(k):
                        if column_class[c] >= distinct:
                            distinct = column_class[c] + 1
        _raise_for(status)
        if out.size == 0:
            return None
        size = out.size
        result_classes = np.empty(256, dtype=np.int32)
        classes_view = result_classes
        for b in range(256):
            classes_view[b] = column_class[classes[b]]
        if distinct == k:
            result = owned_int32(&out.table, size, k)  # the minimisation's own table, no copy
        else:
            result = np.empty((size, distinct), dtype=np.int32)
            out_view = result
            with nogil:
                for r in range(size):
                    row = out.table + r * k
                    target = &out_view[r, 0]
                    for j in range(distinct):
                        target[j] = row[kept[j]]
        result_accepting = owned_uint8(&out.accepting, size).view(np.bool_)
        result_distance = owned_int32_vector(&out.distance, size)
        return result, result_classes, result_accepting, result_distance
    finally:
        _free_minimal(&out)
        free(rank)
        free(renumbered)
        free(digest)
        free(kept)
        free(column_class)
