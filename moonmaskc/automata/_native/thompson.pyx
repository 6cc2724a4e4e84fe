# cython: language_level=3
"""The Thompson construction in C: the native twin of ``thompson._Builder`` writing a ``FlatNFA``.

In: an IR as ``flat_ir.FlatIR`` arrays (``kind`` int8[N], ``first`` / ``second`` int32[N],
``child_offsets`` int64[N + 1], ``children`` int32[C], the root row), the number of masks, per
embedded DFA its number of states and start state (int32[K] each), ``max_states`` (the NFA bound)
and ``max_depth`` (nested calls allowed before giving up, so that the C stack never overflows).

Out, from ``build``: ``(status, num_states, final, edge_source, edge_mask, edge_target, eps_source,
eps_target, blocks)``: the same lists, in the same order, with the same state numbers, as the
Python builder writes into ``FlatNFA`` (``edge_mask`` a row of the flat IR's masks; ``blocks``
int32[B, 3]: first state, exit state, DFA index). ``status`` is ``OK``, ``LIMIT`` (more than
``max_states`` states), ``TOO_DEEP`` (the caller falls back to the Python builder) or
``BAD_INPUT`` (an index out of range, a cycle, a kind or argument outside its domain: every row
is checked before the walk). Nothing else is returned on a status other than ``OK``.

What the Python builder does, step by step: a byte set is one edge to a new state; a sequence
chains its items, except where items spell ``X (S X)*`` (an element, then a star of separator and
element, as JSON arrays and objects do), built as one loop with one copy of ``X``; an alternation
adds its exit state first, then each branch from the entry with an epsilon edge to that exit; a
repetition ``X{m,n}`` chains copies, ``X{m,}`` ends with a loop; an embedded DFA takes a block of
states after its exit state.
"""

from libc.stdint cimport int8_t, int32_t, int64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset

from moonmaskc.automata._native.flat_rows cimport flat_rows_ok, separated_loop_start

import numpy as np

OK = 0
LIMIT = 1
TOO_DEEP = 2
BAD_INPUT = 3
cdef int _OK = 0, _LIMIT = 1, _TOO_DEEP = 2, _BAD_INPUT = 3, _NO_MEMORY = 4

cdef int8_t _BYTE_SET = 0, _SEQ = 1, _ALT = 2, _REPEAT = 3, _AUTOMATON = 4


cdef struct Graph:
    const int8_t* kind
    const int32_t* first
    const int32_t* second
    const int64_t* offsets
    const int32_t* children
    const int32_t* dfa_states
    const int32_t* dfa_start
    int64_t max_depth


cdef struct Buffer:
    int32_t* data
    int64_t size
    int64_t capacity


cdef struct Out:
    Buffer edge_source
    Buffer edge_mask
    Buffer edge_target
    Buffer eps_source
    Buffer eps_target
    Buffer blocks
    Buffer scratch  # per sequence being built: where each separated loop starts, stacked
    int64_t num_states
    int64_t max_states
    int status


cdef int _push(Buffer* buffer, int32_t value) noexcept nogil:
    cdef int64_t capacity
    cdef int32_t* grown
    if buffer.size == buffer.capacity:
        capacity = buffer.capacity * 2 if buffer.capacity else 1024
        grown = <int32_t*>realloc(buffer.data, <size_t>capacity * sizeof(int32_t))
        if grown == NULL:
            return -1
        buffer.data = grown
        buffer.capacity = capacity
    buffer.data[buffer.size] = value
    buffer.size += 1
    return 0


cdef int64_t _new_state(Out* out) noexcept nogil:
    if out.num_states >= out.max_states:
        out.status = _LIMIT
        return -1
    out.num_states += 1
    return out.num_states - 1


cdef int _edge(Out* out, int64_t source, int32_t mask, int64_t target) noexcept nogil:
    if (
        _push(&out.edge_source, <int32_t>source) < 0
        or _push(&out.edge_mask, mask) < 0
        or _push(&out.edge_target, <int32_t>target) < 0
    ):
        out.status = _NO_MEMORY
        return -1
    return 0


cdef int _epsilon(Out* out, int64_t source, int64_t target) noexcept nogil:
    if _push(&out.eps_source, <int32_t>source) < 0 or _push(&out.eps_target, <int32_t>target) < 0:
        out.status = _NO_MEMORY
        return -1
    return 0


cdef int64_t _build(const Graph* g, Out* out, int32_t node, int64_t entry, int64_t depth) noexcept nogil:
    """Add ``node`` from ``entry``; its exit state, or -1 with ``out.status`` set."""
    cdef int8_t kind = g.kind[node]
    cdef int64_t exit_state, branch_exit, at
    if depth > g.max_depth:
        out.status = _TOO_DEEP
        return -1
    if kind == _BYTE_SET:
        exit_state = _new_state(out)
        if exit_state < 0 or _edge(out, entry, g.first[node], exit_state) < 0:
            return -1
        return exit_state
    if kind == _SEQ:
        at = g.offsets[node]
        return _seq(g, out, &g.children[at], g.offsets[node + 1] - at, entry, depth + 1)
    if kind == _ALT:
        exit_state = _new_state(out)
        if exit_state < 0:
            return -1
        for at in range(g.offsets[node], g.offsets[node + 1]):
            branch_exit = _build(g, out, g.children[at], entry, depth + 1)
            if branch_exit < 0 or _epsilon(out, branch_exit, exit_state) < 0:
                return -1
        return exit_state
    if kind == _REPEAT:
        return _repeat(g, out, node, entry, depth + 1)
    return _embed(g, out, g.first[node], entry)


cdef int64_t _embed(const Graph* g, Out* out, int32_t dfa, int64_t entry) noexcept nogil:
    cdef int64_t exit_state = _new_state(out)
    cdef int64_t first
    if exit_state < 0:
        return -1
    if g.dfa_start[dfa] == 0:
        return exit_state  # the empty language: the exit is unreachable
    first = out.num_states
    if first + g.dfa_states[dfa] - 1 > out.max_states:
        out.status = _LIMIT
        return -1
    out.num_states = first + g.dfa_states[dfa] - 1
    if _epsilon(out, entry, first - 1 + g.dfa_start[dfa]) < 0:
        return -1
    if (
        _push(&out.blocks, <int32_t>first) < 0
        or _push(&out.blocks, <int32_t>exit_state) < 0
        or _push(&out.blocks, dfa) < 0
    ):
        out.status = _NO_MEMORY
        return -1
    return exit_state


cdef int64_t _seq(
    const Graph* g, Out* out, const int32_t* items, int64_t n, int64_t entry, int64_t depth
) noexcept nogil:
    """The items in a row, ``X (S X)*`` as one loop (``thompson._separated_loops``): for each
    start of such an ``X``, two scratch entries, the index of the star and the length of ``S``."""
    cdef int64_t base = out.scratch.size
    cdef int64_t index, split, start, taken = 0, star, body_len, current
    cdef int32_t body
    if depth > g.max_depth:
        out.status = _TOO_DEEP
        return -1
    for index in range(2 * n):
        if _push(&out.scratch, -1) < 0:
            out.status = _NO_MEMORY
            return -1
    for index in range(n):
        start = separated_loop_start(g.kind, g.first, g.second, g.offsets, g.children, items, index, taken)
        if start >= 0:
            body = g.children[g.offsets[items[index]]]
            body_len = g.offsets[body + 1] - g.offsets[body]
            out.scratch.data[base + 2 * start] = <int32_t>index
            out.scratch.data[base + 2 * start + 1] = <int32_t>(body_len - (index - start))
            taken = index + 1
    current = entry
    index = 0
    while index < n:
        star = out.scratch.data[base + 2 * index]
        if star < 0:
            current = _build(g, out, items[index], current, depth + 1)
            if current < 0:
                return -1
            index += 1
            continue
        split = out.scratch.data[base + 2 * index + 1]
        body = g.children[g.offsets[items[star]]]
        current = _separated_loop(
            g, out, &items[index], star - index, &g.children[g.offsets[body]], split, current, depth + 1
        )
        if current < 0:
            return -1
        index = star + 1
    out.scratch.size = base
    return current


cdef int64_t _separated_loop(
    const Graph* g,
    Out* out,
    const int32_t* body,
    int64_t body_len,
    const int32_t* separator,
    int64_t separator_len,
    int64_t entry,
    int64_t depth,
) noexcept nogil:
    """``body (separator body)*`` with one copy of ``body``."""
    cdef int64_t loop = _new_state(out)
    cdef int64_t body_exit, separator_exit, exit_state
    if loop < 0 or _epsilon(out, entry, loop) < 0:
        return -1
    body_exit = _seq(g, out, body, body_len, loop, depth + 1)
    if body_exit < 0:
        return -1
    separator_exit = _seq(g, out, separator, separator_len, body_exit, depth + 1)
    if separator_exit < 0 or _epsilon(out, separator_exit, loop) < 0:
        return -1
    exit_state = _new_state(out)
    if exit_state < 0 or _epsilon(out, body_exit, exit_state) < 0:
        return -1
    return exit_state


cdef int64_t _repeat(const Graph* g, Out* out, int32_t node, int64_t entry, int64_t depth) noexcept nogil:
    cdef const int32_t* item_slot = &g.children[g.offsets[node]]
    cdef int32_t item = item_slot[0]
    cdef int64_t least = g.first[node], most = g.second[node]
    cdef int64_t current = entry, copy, loop, loop_exit, exit_state
    if most == -1 and least > 0:  # X{m,} = X{m-1} X (X)*
        for copy in range(least - 1):
            current = _build(g, out, item, current, depth + 1)
            if current < 0:
                return -1
        return _separated_loop(g, out, item_slot, 1, item_slot, 0, current, depth + 1)
    for copy in range(least):
        current = _build(g, out, item, current, depth + 1)
        if current < 0:
            return -1
    if most == -1:
        loop = _new_state(out)
        if loop < 0 or _epsilon(out, current, loop) < 0:
            return -1
        loop_exit = _build(g, out, item, loop, depth + 1)
        if loop_exit < 0 or _epsilon(out, loop_exit, loop) < 0:
            return -1
        exit_state = _new_state(out)
        if exit_state < 0 or _epsilon(out, loop, exit_state) < 0:
            return -1
        return exit_state
    exit_state = _new_state(out)
    if exit_state < 0:
        return -1
    for copy in range(most - least):
        if _epsilon(out, current, exit_state) < 0:
            return -1
        current = _build(g, out, item, current, depth + 1)
        if current < 0:
            return -1
    if _epsilon(out, current, exit_state) < 0:
        return -1
    return exit_state


cdef object _array(const Buffer* buffer):
    result = np.empty(buffer.size, dtype=np.int32)
    cdef int32_t[::1] view = result
    cdef int64_t i
    for i in range(buffer.size):
        view[i] = buffer.data[i]
    return result


cdef void _free(Out* out) noexcept nogil:
    free(out.edge_source.data)
    free(out.edge_mask.data)
    free(out.edge_target.data)
    free(out.eps_source.data)
    free(out.eps_target.data)
    free(out.blocks.data)
    free(out.scratch.data)


cdef int _check(
    const int8_t[::1] kind,
    const int32_t[::1] first,
    const int32_t[::1] second,
    const int64_t[::1] child_offsets,
    const int32_t[::1] children,
    int32_t root,
    int64_t num_masks,
    const int32_t[::1] dfa_states,
    const int32_t[::1] dfa_start,
):
    """``_OK`` when every row is well formed and children come before their parents (so the
    graph has no cycle: ``flat_rows_ok``), the root is a row and every embedded DFA's start is
    one of its states; else ``_BAD_INPUT``."""
    cdef int64_t row, num_dfas = dfa_states.shape[0]
    if dfa_start.shape[0] != num_dfas or root < 0 or root >= kind.shape[0]:
        return _BAD_INPUT
    for row in range(num_dfas):
        if dfa_states[row] < 1 or dfa_start[row] < 0 or dfa_start[row] >= dfa_states[row]:
            return _BAD_INPUT
    if not flat_rows_ok(kind, first, second, child_offsets, children, num_masks, num_dfas):
        return _BAD_INPUT
    return _OK


def build(
    const int8_t[::1] kind not None,
    const int32_t[::1] first not None,
    const int32_t[::1] second not None,
    const int64_t[::1] child_offsets not None,
    const int32_t[::1] children not None,
    int32_t root,
    int64_t num_masks,
    const int32_t[::1] dfa_states not None,
    const int32_t[::1] dfa_start not None,
    int64_t max_states,
    int64_t max_depth,
):
    """See the module docstring."""
    cdef Graph g
    cdef Out out
    cdef int64_t final = -1
    if _check(kind, first, second, child_offsets, children, root, num_masks, dfa_states, dfa_start) != _OK:
        return (BAD_INPUT, 0, -1, None, None, None, None, None, None)
    if max_states > 2147483646:
        max_states = 2147483646
    g.kind = &kind[0]
    g.first = &first[0]
    g.second = &second[0]
    g.offsets = &child_offsets[0]
    g.children = &children[0] if children.shape[0] else NULL
    g.dfa_states = &dfa_states[0] if dfa_states.shape[0] else NULL
    g.dfa_start = &dfa_start[0] if dfa_start.shape[0] else NULL
    g.max_depth = max_depth
    memset(&out, 0, sizeof(Out))
    out.max_states = max_states
    out.status = _OK
    try:
        with nogil:
            if _new_state(&out) >= 0:
                final = _build(&g, &out, root, 0, 0)
        if out.status == _NO_MEMORY:
            raise MemoryError("Thompson construction: out of memory")
        if out.status != _OK:
            return (out.status, 0, -1, None, None, None, None, None, None)
        return (
            _OK,
            out.num_states,
            final,
            _array(&out.edge_source),
            _array(&out.edge_mask),
            _array(&out.edge_target),
            _array(&out.eps_source),
            _array(&out.eps_target),
            _array(&out.blocks).reshape(-1, 3),
        )
    finally:
        _free(&out)
