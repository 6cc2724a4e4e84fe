# cython: language_level=3
"""The check every native reader of flat IR rows (``flat_ir.FlatIR``) makes before it walks them.

In: the rows (``kind`` int8[N], ``first`` / ``second`` int32[N], ``child_offsets`` int64[N + 1],
``children`` int32[C]), the number of masks a byte set may point to (-1: not checked) and the
number of embedded DFAs an automaton may point to. Out: ``flat_rows_ok``, True when every row is
well formed (a kind of ``flat_ir``, its arguments in their domains, byte sets and automata without
children, a repetition with exactly one) and every child comes before its parent (so the rows hold
no cycle).

Also ``separated_loop_start``, where a sequence's items spell ``X (S X)*`` (the one loop the
Thompson builder makes of a JSON list, and the work estimate counts as it does), for rows that
passed the check.
"""

from libc.stdint cimport int8_t, int32_t, int64_t

cdef enum:
    FLAT_BYTE_SET = 0
    FLAT_SEQ = 1
    FLAT_ALT = 2
    FLAT_REPEAT = 3
    FLAT_AUTOMATON = 4


cdef inline bint flat_rows_ok(
    const int8_t[::1] kind,
    const int32_t[::1] first,
    const int32_t[::1] second,
    const int64_t[::1] child_offsets,
    const int32_t[::1] children,
    int64_t num_masks,
    int64_t num_dfas,
):
    cdef int64_t n = kind.shape[0], row, at
    if first.shape[0] != n or second.shape[0] != n or child_offsets.shape[0] != n + 1:
        return False
    if child_offsets[0] != 0 or child_offsets[n] != children.shape[0]:
        return False
    for row in range(n):
        if child_offsets[row + 1] < child_offsets[row]:
            return False
        for at in range(child_offsets[row], child_offsets[row + 1]):
            if children[at] < 0 or children[at] >= row:
                return False
        if kind[row] == FLAT_BYTE_SET or kind[row] == FLAT_AUTOMATON:
            if child_offsets[row + 1] != child_offsets[row] or first[row] < 0:
                return False
            if kind[row] == FLAT_BYTE_SET and num_masks >= 0 and first[row] >= num_masks:
                return False
            if kind[row] == FLAT_AUTOMATON and first[row] >= num_dfas:
                return False
        elif kind[row] == FLAT_REPEAT:
            if child_offsets[row + 1] - child_offsets[row] != 1 or first[row] < 0:
                return False
            if second[row] < -1 or (second[row] != -1 and second[row] < first[row]):
                return False
        elif kind[row] != FLAT_SEQ and kind[row] != FLAT_ALT:
            return False
    return True


cdef inline bint _same_rows(const int32_t* a, const int32_t* b, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef inline int64_t separated_loop_start(
    const int8_t* kind,
    const int32_t* first,
    const int32_t* second,
    const int64_t* offsets,
    const int32_t* children,
    const int32_t* items,
    int64_t index,
    int64_t taken,
) noexcept nogil:
    """Where ``items[index]`` is the star of a ``X (S X)*`` loop whose first ``X`` starts at or
    after ``taken``, the longest repeated part first: the index where that ``X`` starts (``S`` is
    then the star body's first ``body length - (index - start)`` items); else -1
    (``thompson._separated_loops``)."""
    cdef int32_t item = items[index], body
    cdef int64_t body_len, split, length, start
    if not (kind[item] == FLAT_REPEAT and first[item] == 0 and second[item] == -1):
        return -1
    body = children[offsets[item]]
    if kind[body] != FLAT_SEQ:
        return -1  # a body of one item has no split
    body_len = offsets[body + 1] - offsets[body]
    for split in range(1, body_len):
        length = body_len - split
        start = index - length
        if start >= taken and _same_rows(&items[start], &children[offsets[body] + split], length):
            return start
    return -1
