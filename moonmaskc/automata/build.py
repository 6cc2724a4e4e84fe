"""IR to minimal DFA: the one place that chains the automata stages.

Takes: an ``ir.Node`` and ``Limits``. Hands on: the minimal ``DFA``, numbered breadth-first from the
start in byte order, with byte classes merged so that no two columns are equal.

With the native core: NFA -> byte classes -> flat NFA arrays -> native subset construction ->
native prune + Hopcroft + canonical renumbering (``minimal_dense``). Without it: the pure stages on
grouped edges (``_subset_tables``, ``_minimal``). Both give the same arrays.
"""

from __future__ import annotations

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.classes import _byte_classes
from moonmaskc.automata.determinize import _subset_tables, native_subsets
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.minimize import _empty_dfa, _minimal, minimal_dense
from moonmaskc.automata.native import native
from moonmaskc.automata.thompson import build_nfa
from moonmaskc.gc_pause import collector_paused
from moonmaskc.limits import Limits


def compile_ir(node: ir.Node, limits: Limits | None = None) -> DFA:
    """IR to minimal DFA: Thompson NFA, subset construction, pruning, minimisation."""
    with collector_paused():
        return _compile_ir(node, limits or Limits())


def _compile_ir(node: ir.Node, limits: Limits) -> DFA:
    nfa = build_nfa(node, limits)
    if native("determinize") is not None and native("minimize") is not None:
        class_of, covered = _byte_classes(nfa)
        transitions, accepting, start = native_subsets(nfa.to_arrays(class_of, covered), limits)
        return minimal_dense(transitions, np.asarray(class_of, dtype=np.int32), accepting, start)
    tables = _subset_tables(nfa, limits)
    if tables.start == 0:
        return _empty_dfa()
    return _minimal(tables, breadth_first=True).to_dfa()
