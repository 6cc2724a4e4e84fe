"""The Thompson construction by the native core: IR to the flat NFA the native subset construction takes.

Takes: an IR flattened by ``flat_ir.flatten``, ``Limits`` and the native ``thompson`` module.
Hands on: ``NativeInput`` (see ``flat_nfa``), the same lists with the same state numbers as
``build_flat_nfa(node, limits).native_input()`` builds in Python, except that masks and embedded
DFAs are numbered in the order of ``flat_ir.flatten`` (the subset construction does not depend on
that numbering); or ``None`` when the IR nests deeper than ``MAX_NATIVE_DEPTH`` calls, and the
Python builder is to run instead (it has the deep worker's stack and Python's recursion limit to
report on).

The Python side flattens the IR once per distinct node (``flat_ir``); the native side expands it
into states and edges (``_native/thompson.pyx``), once per use of each node.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from moonmaskc.automata.flat_ir import FlatIR
from moonmaskc.automata.flat_nfa import NativeInput, stacked_dfas
from moonmaskc.automata.thompson import nfa_state_limit
from moonmaskc.errors import MalformedArraysError
from moonmaskc.limits import Limits

MAX_NATIVE_DEPTH = 20_000
"""Nested calls of the native builder (a few hundred bytes of C stack each, so that a few MB are
enough on any thread); deeper IRs are built by the Python builder."""


def native_thompson_input(module: ModuleType, flat: FlatIR, limits: Limits) -> NativeInput | None:
    """``flat`` as the native subset construction's input, built in C (see the module docstring)."""
    dfa_states = np.fromiter((dfa.num_states for dfa in flat.dfas), dtype=np.int32, count=len(flat.dfas))
    dfa_start = np.fromiter((dfa.start for dfa in flat.dfas), dtype=np.int32, count=len(flat.dfas))
    status, num_states, final, edge_source, edge_mask, edge_target, eps_source, eps_target, blocks = (
        module.build(
            flat.kind,
            flat.first,
            flat.second,
            flat.child_offsets,
            flat.children,
            flat.root,
            len(flat.masks),
            dfa_states,
            dfa_start,
            limits.max_nfa_states,
            MAX_NATIVE_DEPTH,
        )
    )
    if status == module.TOO_DEEP:
        return None
    if status == module.LIMIT:
        raise nfa_state_limit(limits)
    if status != module.OK:
        raise MalformedArraysError("the flattened IR is malformed (rejected by the native Thompson builder)")
    used = np.unique(blocks[:, 2]) if len(blocks) else np.zeros(0, dtype=np.int32)
    shapes, transitions, byte_class, accepting = stacked_dfas([flat.dfas[int(index)] for index in used])
    if len(used):
        renumber = np.zeros(len(flat.dfas), dtype=np.int32)
        renumber[used] = np.arange(len(used), dtype=np.int32)
        blocks = np.ascontiguousarray(
            np.column_stack((blocks[:, 0], blocks[:, 1], renumber[blocks[:, 2]])), dtype=np.int32
        )
    return NativeInput(
        num_states,
        0,
        final,
        edge_source,
        edge_mask,
        edge_target,
        flat.masks,
        eps_source,
        eps_target,
        blocks,
        shapes,
        transitions,
        byte_class,
        accepting,
    )
