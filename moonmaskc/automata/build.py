"""IR to minimal DFA: the one place that chains the automata stages.

Takes: an ``ir.Node`` and ``Limits``. Hands on: the minimal ``DFA``, numbered breadth-first from the
start in byte order, with byte classes merged so that no two columns are equal.
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.automata.determinize import _subset_tables
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.minimize import _empty_dfa, _minimal
from moonmaskc.automata.thompson import build_nfa
from moonmaskc.gc_pause import collector_paused
from moonmaskc.limits import Limits


def compile_ir(node: ir.Node, limits: Limits | None = None) -> DFA:
    """IR to minimal DFA: Thompson NFA, subset construction, pruning, minimisation."""
    with collector_paused():
        return _compile_ir(node, limits or Limits())


def _compile_ir(node: ir.Node, limits: Limits) -> DFA:
    tables = _subset_tables(build_nfa(node, limits), limits)
    if tables.start == 0:
        return _empty_dfa()
    return _minimal(tables, breadth_first=True).to_dfa()
