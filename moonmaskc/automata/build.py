"""IR to minimal DFA: the one place that chains the automata stages.

Takes: an ``ir.Node`` and ``Limits``. Hands on: the minimal ``DFA``, numbered breadth-first from the
start in byte order, with byte classes merged so that no two columns are equal.

With the native core: flat NFA (``flat_nfa``) -> byte classes and CSR arrays -> native subset construction ->
native prune + Hopcroft + canonical renumbering (``minimal_dense``). Without it: the pure stages on
grouped edges (``_subset_tables``, ``_minimal``). Both give the same arrays.
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.automata.determinize import _subset_tables, native_subsets
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.flat_nfa import build_flat_nfa
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
    if native("determinize") is not None and native("minimize") is not None:
        arrays = build_flat_nfa(node, limits).to_arrays()
        transitions, accepting, start = native_subsets(arrays, limits)
        return minimal_dense(transitions, arrays.class_of, accepting, start)
    tables = _subset_tables(build_nfa(node, limits), limits)
    if tables.start == 0:
        return _empty_dfa()
    return _minimal(tables, breadth_first=True).to_dfa()
