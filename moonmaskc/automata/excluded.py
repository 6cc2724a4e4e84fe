"""A DFA's language without a finite set of its words, built directly.

Takes: a DFA and words (bytes) it accepts. Hands on: the minimal DFA (canonical numbering) of
its language minus those words, the same DFA that ``product.difference`` gives with the DFA of the
words, without building that DFA or the product: the words' trie, each trie node stepping like the
state its prefix reaches, in front of a copy of the DFA that a step off the trie leads into. The
native core builds that table (``excluded.pyx`` ``trie_in_front``); without it, numpy and a dict.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

import numpy as np

from moonmaskc.automata.counted import check_product_operands
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.minimize import minimal_dense
from moonmaskc.automata.native import native
from moonmaskc.errors import LimitError, MalformedArraysError
from moonmaskc.limits import Limits


def without_words(dfa: DFA, words: Iterable[bytes], limits: Limits | None = None) -> DFA:
    """The minimal DFA of ``dfa``'s language without ``words`` (words it does not accept change
    nothing); ``LimitError`` when the trie and the copy together pass ``max_states``."""
    limits = limits or Limits()
    check_product_operands(dfa)
    module = native("excluded")
    if module is not None:
        return _native_without(module, dfa, sorted(set(words)), limits)
    taken = sorted({word for word in words if dfa.accepts(word)})  # (others: nothing to take out)
    # Each byte of a word gets a column of its own; the others keep the DFA's classes.
    spelled = sorted(set(b"".join(taken)))
    byte_class = dfa.byte_class.copy()
    byte_class[spelled] = dfa.num_classes + np.arange(len(spelled), dtype=np.int32)
    columns = np.concatenate([np.arange(dfa.num_classes), dfa.byte_class[spelled]])
    base = np.take(dfa.transitions, columns, axis=1)
    copied = dfa.num_states
    trie_state = [dfa.start]  # the DFA state each trie node's prefix reaches; node 0 the root
    is_word = [False]
    children: dict[tuple[int, int], int] = {}
    edges: list[tuple[int, int, int]] = []  # (node, column, child)
    column_of_byte = byte_class.tolist()
    for word in taken:
        node, state = 0, dfa.start
        for byte in word:
            column = column_of_byte[byte]
            state = base.item(state, column)
            child = children.get((node, byte))
            if child is None:
                child = children[(node, byte)] = len(trie_state)
                trie_state.append(state)
                is_word.append(False)
                edges.append((node, column, child))
            node = child
        is_word[node] = True
    if copied + len(trie_state) > limits.max_states:
        raise _too_many_states(copied, len(taken), len(trie_state), limits)
    trie_rows = base[trie_state]
    if edges:
        nodes, edge_columns, targets = np.array(edges, dtype=np.int64).T
        trie_rows[nodes, edge_columns] = targets + copied
    table = np.ascontiguousarray(np.concatenate([base, trie_rows]), dtype=np.int32)
    accepting = np.concatenate([dfa.accepting, dfa.accepting[trie_state] & ~np.array(is_word)])
    return minimal_dense(table, byte_class, accepting, copied)


def _native_without(module: ModuleType, dfa: DFA, words: list[bytes], limits: Limits) -> DFA:
    """``without_words`` with the trie built by ``excluded.pyx`` ``trie_in_front`` (which checks
    every index); ``words`` distinct and sorted."""
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, words), np.int64, len(words)), out=offsets[1:])
    status, table, byte_class, accepting, taken, nodes = module.trie_in_front(
        np.ascontiguousarray(dfa.transitions, dtype=np.int32),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        np.ascontiguousarray(dfa.accepting, dtype=np.bool_).view(np.uint8),
        dfa.start,
        np.frombuffer(b"".join(words), dtype=np.uint8),
        offsets,
        limits.max_states,
    )
    if status == module.LIMIT:
        raise _too_many_states(dfa.num_states, taken, nodes, limits)
    if status != module.OK:
        raise MalformedArraysError("a DFA the native core cannot take words out of (malformed arrays)")
    return minimal_dense(table, byte_class, accepting.view(np.bool_), dfa.num_states)


def _too_many_states(copied: int, taken: int, nodes: int, limits: Limits) -> LimitError:
    return LimitError(
        "max_states",
        limits.max_states,
        f"the automaton of {copied} states without {taken} words needs "
        f"{copied + nodes} states, more than {limits.max_states}",
        flag="--max-states",
    )
