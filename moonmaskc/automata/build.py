"""IR to minimal DFA: the one place that chains the automata stages.

Takes: an ``ir.Node`` and ``Limits``. Hands on: the minimal ``DFA``, numbered breadth-first from the
start in byte order, with byte classes merged so that no two columns are equal.

With the native core, three native calls: the IR flattened once per distinct node (``flat_ir``)
-> (when asked) the work bound's estimate on those rows (``estimate.pyx``) -> the Thompson NFA as
flat lists (``thompson.pyx``, through ``thompson_native``; the Python builder of ``flat_nfa`` for
IRs of at most ``SMALL_IR`` nodes and when the IR nests too deep for C) -> byte classes, CSR arrays
and the subset construction (``determinize.pyx`` ``flat_subsets``) -> prune + Hopcroft + canonical
renumbering + merged columns + distances (``minimize.pyx`` ``canonical_minimal``). Each checks its
inputs before use. Without it: the pure stages on grouped edges (``_subset_tables``,
``_minimal``). Both give the same arrays. ``live_dfa``: a DFA whose live states all reach
acceptance, not minimised on the pure path (the work bound's clear-boundary question).
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.automata.determinize import _subset_tables, native_input_subsets
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.flat_ir import FlatIR, flatten
from moonmaskc.automata.flat_nfa import build_flat_nfa
from moonmaskc.automata.minimize import _empty_dfa, _minimal, _native_minimal
from moonmaskc.automata.native import native
from moonmaskc.automata.thompson import build_nfa
from moonmaskc.automata.thompson_native import native_thompson_input
from moonmaskc.automata.work import check_flat_work, check_work
from moonmaskc.gc_pause import collector_paused
from moonmaskc.limits import Limits

SMALL_IR = 12
"""IR trees of at most this many nodes (shared subtrees counted each time) are built by the Python
Thompson builder: the native one costs about 19 us whatever the size (flattening, estimate and
build), the Python one 1.5-3 us a node with the work estimate (timed on 2026-12-05: a byte set
5 us against 19, ``true|false|null`` 25 against 22, the e-mail regex of 14 nodes 42 against 22,
the ISO date-time of 55 nodes 88 against 25)."""


def flattened(node: ir.Node) -> FlatIR | None:
    """``flat_ir.flatten(node)``, or None when a repetition count does not fit the flat rows'
    32-bit integers: the Python stages take that IR (its NFA is past any bound the native builder
    allows, and the work bound says so by name)."""
    try:
        return flatten(node)
    except OverflowError:
        return None


def compile_ir(node: ir.Node, limits: Limits | None = None, *, check_work: bool = False) -> DFA:
    """IR to minimal DFA: Thompson NFA, subset construction, pruning, minimisation. With
    ``check_work``, the work bound's estimate first (``automata.work``: a ``LimitError`` before
    any automaton is built), on the IR flattened once for both when the native core builds it."""
    with collector_paused():
        return _compile_ir(node, limits or Limits(), check_work)


def live_dfa(node: ir.Node, limits: Limits | None = None) -> DFA:
    """A DFA of ``node`` whose every state but the dead one reaches acceptance, for questions about
    which bytes can follow which prefixes (answered alike on every such DFA of one language): the
    minimal DFA with the native core, where minimising costs little; without it the pruned subset
    construction, not minimised (in Python the minimisation takes about as long as the rest).
    No work bound: the caller has checked ``node``."""
    with collector_paused():
        return _compile_ir(node, limits or Limits(), False, pure_minimised=False)


def _compile_ir(node: ir.Node, limits: Limits, check: bool, pure_minimised: bool = True) -> DFA:
    """``compile_ir``; without the native core and ``pure_minimised``, the pruned subset
    construction as it is (``live_dfa``)."""
    subsets, minimize = native("determinize"), native("minimize")
    if subsets is not None and minimize is not None:
        thompson = native("thompson") if ir.size_exceeds(node, SMALL_IR) else None
        inputs = None
        flat = flattened(node) if thompson is not None else None
        if thompson is not None and flat is not None:
            if check:
                check_flat_work(flat, limits)
            inputs = native_thompson_input(thompson, flat, limits)
        elif check:
            check_work(node, limits)
        if inputs is None:
            inputs = build_flat_nfa(node, limits).native_input()
        transitions, accepting, start, class_of = native_input_subsets(subsets, inputs, limits)
        return _native_minimal(minimize, transitions, class_of, accepting, start)
    if check:
        check_work(node, limits)
    tables = _subset_tables(build_nfa(node, limits), limits)
    if tables.start == 0:
        return _empty_dfa()
    if not pure_minimised:
        return tables.to_dfa(merge_columns=False)
    return _minimal(tables, breadth_first=True).to_dfa()
