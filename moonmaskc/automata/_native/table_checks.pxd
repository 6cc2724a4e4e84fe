# cython: language_level=3
"""The check every native stage makes of a DFA's transition table before it indexes rows by
its targets.

In: the table as ``size`` int32 entries (rows x classes, row-major) and the number of states.
Out: ``targets_in_range``, True when every target is in ``[0, num_states)`` (a negative target
reads as a huge unsigned one); branch-free, so the loop vectorises.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t


cdef inline bint targets_in_range(const int32_t* table, int64_t size, int64_t num_states) noexcept nogil:
    cdef int64_t i
    cdef uint32_t bad = 0
    for i in range(size):
        bad |= <uint32_t>(<uint32_t>table[i] >= <uint32_t>num_states)
    return bad == 0
