"""``$`` wherever it stands (inside a repetition, before more of the pattern), by end markers.

Takes: the IR of a pattern parsed with ``$`` read as one or more ``END_MARKER`` bytes (a byte no
UTF-8 text holds), and ``Limits``. Hands on: the IR of the texts ``s`` such that ``s`` followed by
some markers is in that language: ``$`` then holds exactly at the end of the text, as the
zero-width anchor does (a ``$`` before the end would need a marker where a character stands; two
``$`` in a row each take markers of their own).

The parser tries this only where the anchors of a pattern cannot be read as anchors of its
alternatives (``^([^,]+(,|$)){3,}$``), and only where ``$`` means the end of the text alone (the
ECMAScript flavor of JSON Schema ``pattern``; Python's ``$`` also matches before a final newline).
The result is one DFA: a state accepts when markers alone lead from it to acceptance, and the
markers' transitions are removed.
"""

from __future__ import annotations

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.minimize import minimal_dense
from moonmaskc.frontends.regex.builder import END_MARKER
from moonmaskc.limits import Limits

MARKERS_AFTER = ir.star(ir.byte_set(1 << END_MARKER))


def without_end_markers(node: ir.Node, limits: Limits) -> ir.Node:
    """The texts that some end markers after them bring into ``node``'s language."""
    dfa = compile_ir(node, limits)
    table = np.ascontiguousarray(dfa.transitions[:, dfa.byte_class])
    after_marker = table[:, END_MARKER].copy()
    accepting = dfa.accepting.astype(bool)
    while True:
        grown = accepting | accepting[after_marker]
        grown[0] = False
        if np.array_equal(grown, accepting):
            break
        accepting = grown
    table[:, END_MARKER] = 0
    return ir.Automaton(
        minimal_dense(table, np.arange(256, dtype=np.int32), accepting, dfa.start), "anchored at the end"
    )
