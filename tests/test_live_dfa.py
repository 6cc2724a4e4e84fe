"""``build.live_dfa``: the DFA that the work bound's clear-boundary check reads.

Takes: hypothesis IRs (embedded automata, the empty language, three-part loops among them) and the
repetitions that ask the work bound its question. Checks, under the pure core (``MOONMASKC_PURE=1``:
the pruned subset construction, not minimised) and the native one (the minimal DFA): every state
but the dead one reaches acceptance; minimised, it is the DFA ``compile_ir`` builds; whether the
copies of a string have clear boundaries, read byte by byte by its definition, is the same on it as
on the minimal DFA; and the work estimate, which reads that off it, gives the same figures under
both cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir, live_dfa
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.distances import shortest_distances
from moonmaskc.automata.minimize import minimize
from moonmaskc.automata.native import PURE_ENV, native_built
from moonmaskc.automata.work import estimate
from moonmaskc.limits import Limits
from tests.test_automata import assert_same_dfa
from tests.test_native_estimate import ASKING
from tests.test_native_thompson import ir_with_automata

CORES = [True, False] if native_built() else [True]


@contextmanager
def core(pure: bool) -> Iterator[None]:
    """The pure core (``MOONMASKC_PURE=1``) or the native one, for the block."""
    with pytest.MonkeyPatch.context() as patch:
        if pure:
            patch.setenv(PURE_ENV, "1")
        else:
            patch.delenv(PURE_ENV, raising=False)
        yield


def clear_by_bytes(dfa: DFA) -> bool:
    """No byte that continues a string past an accepting state starts one (the definition, byte by
    byte on ``dfa``)."""
    if dfa.start == 0:
        return True
    table, byte_class = dfa.transitions, dfa.byte_class
    accepting = [state for state in range(1, dfa.num_states) if dfa.accepting[state]]
    continuing = {byte for byte in range(256) for state in accepting if table[state, byte_class[byte]]}
    starting = {byte for byte in range(256) if table[dfa.start, byte_class[byte]]}
    return not continuing & starting


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ir_with_automata())
def test_live_dfa_is_pruned_has_the_language_and_the_same_answer(node: ir.Node) -> None:
    minimal = compile_ir(node)
    for pure in CORES:
        with core(pure):
            live = live_dfa(node)
            if live.start:
                assert (shortest_distances(live.transitions, live.accepting)[1:] >= 0).all()
            assert_same_dfa(minimize(live), minimal)
            assert clear_by_bytes(live) == clear_by_bytes(minimal)


@pytest.mark.parametrize("pure", CORES)
@pytest.mark.parametrize("name", list(ASKING))
def test_the_estimates_that_ask_are_the_same_under_each_core(name: str, pure: bool) -> None:
    big = Limits(max_work=1 << 56, max_states=1 << 20)
    with core(False if native_built() else True):
        expected = estimate(ASKING[name], big)
    with core(pure):
        assert estimate(ASKING[name], big) == expected
