# cython: language_level=3
"""Native core of a DFA's language without a finite set of its words (``automata.excluded``).

``trie_in_front(table, byte_class, accepting, start, words, offsets, max_states)``
  Takes: a DFA (``table`` int32[S, C] with state 0 dead, ``byte_class`` int32[256],
  ``accepting`` uint8[S], ``start``), the words (their bytes one after the other in ``words``
  uint8[n], word ``i`` being ``words[offsets[i]:offsets[i + 1]]``, ``offsets`` int64[W + 1],
  distinct and sorted) and the most states the result may have.
  Hands on ``(status, table, byte_class, accepting, taken, nodes)``: the DFA that
  ``without_words`` minimises, not minimal yet: each byte of a word the DFA accepts (``taken`` of
  them) in a column of its own (``byte_class`` int32[256]: the DFA's classes, then one per such
  byte in byte order), the DFA's rows (``table`` int32[S + nodes, C + k]) and one row per node of
  the taken words' trie behind them (node 0 the root, in the order the words spell them): a trie
  node steps like the DFA state its prefix reaches, its bytes on the trie into its children and
  its other bytes into that copy of the DFA; a node where a taken word ends does not accept
  (``accepting`` uint8[S + nodes]). ``status`` ``OK``; ``LIMIT`` when ``S + nodes`` passes
  ``max_states`` (``taken`` and ``nodes`` say how far); ``BAD_INPUT`` (nothing else) for a target,
  class, start or offset out of range.

``automata.excluded.without_words`` keeps the numpy path (the pure twin) beside it.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from moonmaskc.automata._native.table_checks cimport targets_in_range

import numpy as np

OK = 0
BAD_INPUT = 1
LIMIT = 2


def trie_in_front(
    const int32_t[:, ::1] table not None,
    const int32_t[::1] byte_class not None,
    const uint8_t[::1] accepting not None,
    int64_t start,
    const uint8_t[::1] words not None,
    const int64_t[::1] offsets not None,
    int64_t max_states,
):
    """See the module docstring."""
    cdef int64_t num_states = table.shape[0], num_classes = table.shape[1]
    cdef int64_t count = offsets.shape[0] - 1
    cdef int64_t i, j, b, s, c, node, child, nodes, taken, spelled_count, width, total
    cdef int32_t state
    cdef uint32_t bad = 0
    cdef uint8_t[::1] accepted_view
    cdef int32_t[256] new_class
    cdef uint8_t[256] spelled
    if (
        num_states < 1 or num_classes < 1 or byte_class.shape[0] != 256
        or accepting.shape[0] != num_states or start < 0 or start >= num_states
        or count < 0 or offsets[0] != 0 or offsets[count] != words.shape[0]
    ):
        return BAD_INPUT, None, None, None, 0, 0
    if not targets_in_range(&table[0, 0], num_states * num_classes, num_states):
        return BAD_INPUT, None, None, None, 0, 0
    for b in range(256):
        bad |= <uint32_t>(<uint32_t>byte_class[b] >= <uint32_t>num_classes)
    for i in range(count):
        bad |= <uint32_t>(offsets[i] > offsets[i + 1])
    if bad:
        return BAD_INPUT, None, None, None, 0, 0
    # The words the DFA accepts, and the bytes they spell.
    accepted = np.zeros(count, dtype=np.uint8)
    accepted_view = accepted
    for b in range(256):
        spelled[b] = 0
    taken = 0
    for i in range(count):
        state = <int32_t>start
        for j in range(offsets[i], offsets[i + 1]):
            state = table[state, byte_class[words[j]]]
            if state == 0:
                break
        if state != 0 and accepting[state]:
            accepted_view[i] = 1
            taken += 1
            for j in range(offsets[i], offsets[i + 1]):
                spelled[words[j]] = 1
    spelled_count = 0
    for b in range(256):
        new_class[b] = byte_class[b]
        if spelled[b]:
            new_class[b] = <int32_t>(num_classes + spelled_count)
            spelled_count += 1
    width = num_classes + spelled_count
    # Trie nodes: at most one per byte of a taken word, and the root. The words are sorted, so a
    # word's new nodes are those past its longest common prefix with the word taken before it.
    nodes = 1
    for i in range(count):
        if accepted_view[i]:
            nodes += offsets[i + 1] - offsets[i]
    trie_state = np.empty(nodes, dtype=np.int32)
    parent_of = np.empty(nodes, dtype=np.int32)
    byte_of = np.empty(nodes, dtype=np.uint8)
    is_word = np.zeros(nodes, dtype=np.uint8)
    path = np.empty(nodes, dtype=np.int32)  # the nodes of the previous word's prefixes
    cdef int32_t[::1] trie_view = trie_state
    cdef int32_t[::1] parent_view = parent_of
    cdef uint8_t[::1] byte_view = byte_of
    cdef uint8_t[::1] word_view = is_word
    cdef int32_t[::1] path_view = path
    cdef int64_t previous = -1, common, length
    trie_view[0] = <int32_t>start
    path_view[0] = 0
    total = 1
    for i in range(count):
        if not accepted_view[i]:
            continue
        length = offsets[i + 1] - offsets[i]
        common = 0
        if previous >= 0:
            while (
                common < length
                and common < offsets[previous + 1] - offsets[previous]
                and words[offsets[i] + common] == words[offsets[previous] + common]
            ):
                common += 1
        node = path_view[common]
        state = trie_view[node]
        for j in range(common, length):
            b = words[offsets[i] + j]
            state = table[state, byte_class[b]]
            child = total
            total += 1
            trie_view[child] = state
            parent_view[child] = <int32_t>node
            byte_view[child] = <uint8_t>b
            path_view[j + 1] = <int32_t>child
            node = child
        word_view[node] = 1
        previous = i
    if num_states + total > max_states:
        return LIMIT, None, None, None, taken, total
    out = np.empty((num_states + total, width), dtype=np.int32)
    out_accepting = np.empty(num_states + total, dtype=np.uint8)
    out_class = np.empty(256, dtype=np.int32)
    cdef int32_t[:, ::1] out_view = out
    cdef uint8_t[::1] out_accepting_view = out_accepting
    cdef int32_t[::1] out_class_view = out_class
    cdef int32_t[256] column_source  # the DFA's class each new column copies
    for c in range(num_classes):
        column_source[c] = <int32_t>c
    for b in range(256):
        out_class_view[b] = new_class[b]
        if spelled[b]:
            column_source[new_class[b]] = byte_class[b]
    for s in range(num_states):
        for c in range(width):
            out_view[s, c] = table[s, column_source[c]]
        out_accepting_view[s] = accepting[s]
    for node in range(total):
        s = trie_view[node]
        for c in range(width):
            out_view[num_states + node, c] = table[s, column_source[c]]
        out_accepting_view[num_states + node] = accepting[s] and not word_view[node]
    for node in range(1, total):
        out_view[num_states + parent_view[node], new_class[byte_view[node]]] = <int32_t>(num_states + node)
    return OK, out, out_class, out_accepting, taken, total
