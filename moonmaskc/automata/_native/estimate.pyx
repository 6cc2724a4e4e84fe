# cython: language_level=3
"""The work bound's estimate in C: the native twin of ``automata.work``'s fold, over flat IR rows.

In: an IR as ``flat_ir.FlatIR`` arrays (``kind`` int8[N], ``first`` / ``second`` int32[N],
``child_offsets`` int64[N + 1], ``children`` int32[C]), per embedded DFA its number of states
(int64[K]), ``clear`` int8[N] (per row: -1 not known yet, 0 or 1 whether the copies of that row's
language have clear boundaries, which only the caller can tell: it builds a DFA), the two bounds
(NFA states, subset-construction work), the square below which no boundary is asked for, the row to
start from, and ``states`` / ``work`` int64[N] to fill (kept between calls, so that a walk can
resume where it asked).

Out, from ``estimate``: ``(status, row)``:

- ``OK``: every row's estimate is within both bounds (``states`` / ``work`` filled);
- ``STATES`` / ``WORK``: ``row`` is the first row (children first) past that bound;
- ``ASK``: the caller is to set ``clear[r]`` for ``r = children of row`` (the repetition's body),
  then call again from ``row``;
- ``BAD_INPUT``: an index out of range, a child after its parent, a kind or argument outside its
  domain (every row is checked before the walk).

The figures are the Python fold's, computed with 64-bit integers that saturate at ``2**62``: the
bounds are at most ``2**59`` and every child's figure is within them before its parent is reached,
so no comparison changes. A sequence's items that a ``X (S X)*`` loop builds only once are left out
of its sum, as the Thompson builder leaves them out of the NFA.
"""

from libc.stdint cimport int8_t, int32_t, int64_t

from moonmaskc.automata._native.flat_rows cimport flat_rows_ok, separated_loop_start

OK = 0
STATES = 1
WORK = 2
ASK = 3
BAD_INPUT = 4

cdef int8_t _BYTE_SET = 0, _SEQ = 1, _ALT = 2, _REPEAT = 3, _AUTOMATON = 4
cdef int64_t _CAP = (<int64_t>1) << 62


cdef inline int64_t _add(int64_t a, int64_t b) noexcept nogil:
    return _CAP if a >= _CAP - b else a + b


cdef inline int64_t _mul(int64_t a, int64_t b) noexcept nogil:
    if a == 0 or b == 0:
        return 0
    return _CAP if a > _CAP // b else a * b


cdef int _check(
    const int8_t[::1] kind,
    const int32_t[::1] first,
    const int32_t[::1] second,
    const int64_t[::1] child_offsets,
    const int32_t[::1] children,
    const int64_t[::1] dfa_states,
    const int8_t[::1] clear,
    const int64_t[::1] states,
    const int64_t[::1] work,
):
    """0 when every row is well formed and children come before their parents
    (``flat_rows_ok``), the figures have a slot per row and every embedded DFA a state; else 1."""
    cdef int64_t n = kind.shape[0], row, num_dfas = dfa_states.shape[0]
    if clear.shape[0] != n or states.shape[0] != n or work.shape[0] != n:
        return 1
    for row in range(num_dfas):
        if dfa_states[row] < 1:
            return 1
    return 0 if flat_rows_ok(kind, first, second, child_offsets, children, -1, num_dfas) else 1


def estimate(
    const int8_t[::1] kind not None,
    const int32_t[::1] first not None,
    const int32_t[::1] second not None,
    const int64_t[::1] child_offsets not None,
    const int32_t[::1] children not None,
    const int64_t[::1] dfa_states not None,
    const int8_t[::1] clear not None,
    int64_t max_states,
    int64_t max_work,
    int64_t cheap_square,
    int64_t start_row,
    int64_t[::1] states not None,
    int64_t[::1] work not None,
):
    """See the module docstring."""
    cdef int64_t n = kind.shape[0], row, at, begin, end, index, loop_start, taken
    cdef int64_t row_states, row_work, copies, least, most, square
    cdef int32_t item
    cdef int8_t row_kind
    if _check(kind, first, second, child_offsets, children, dfa_states, clear, states, work):
        return (BAD_INPUT, -1)
    if start_row < 0 or start_row > n:
        return (BAD_INPUT, -1)
    cdef const int32_t* items_of = &children[0] if children.shape[0] else NULL
    skip_marks = bytearray(children.shape[0] + 1)
    cdef unsigned char[::1] skip = skip_marks
    for row in range(start_row, n):
        row_kind = kind[row]
        begin = child_offsets[row]
        end = child_offsets[row + 1]
        if row_kind == _BYTE_SET:
            row_states = 1
            row_work = 1
        elif row_kind == _AUTOMATON:
            row_states = dfa_states[first[row]]
            row_work = row_states
        elif row_kind == _ALT:
            row_states = 1
            row_work = 0
            for at in range(begin, end):
                row_states = _add(row_states, states[children[at]])
                row_work = _add(row_work, work[children[at]])
            if row_work < 1:
                row_work = 1
        elif row_kind == _SEQ:
            # Items from a loop's first X up to its star are counted once, inside the star: they
            # are marked first, then the rest summed (a sum that saturated cannot be subtracted from).
            taken = 0
            for index in range(end - begin):
                loop_start = separated_loop_start(
                    &kind[0], &first[0], &second[0], &child_offsets[0], items_of, &items_of[begin],
                    index, taken
                )
                if loop_start >= 0:
                    taken = index + 1
                    for at in range(begin + loop_start, begin + index):
                        skip[at] = 1
            row_states = 1
            row_work = 0
            for at in range(begin, end):
                if not skip[at]:
                    row_states = _add(row_states, states[children[at]])
                    row_work = _add(row_work, work[children[at]])
            if row_work < 1:
                row_work = 1
        else:
            item = children[begin]
            least = first[row]
            most = second[row]
            copies = least
            if most > copies:
                copies = most
            if copies < 1:
                copies = 1
            row_states = _add(_mul(copies, states[item]), 2)
            row_work = _mul(copies, work[item])
            if copies > 1 and kind[item] != _BYTE_SET:
                square = _mul(copies, states[item])
                square = _mul(square, square)
                if square > row_work:
                    if kind[item] == _AUTOMATON or square > cheap_square:
                        if clear[item] < 0:
                            return (ASK, row)
                        if clear[item] == 0:
                            row_work = square
                    else:
                        row_work = square
        states[row] = row_states
        work[row] = row_work
        if row_states > max_states:
            return (STATES, row)
        if row_work > max_work:
            return (WORK, row)
    return (OK, -1)
