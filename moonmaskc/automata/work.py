"""The work bound: what compiling an IR node will cost, estimated before any automaton is built.

Takes: an ``ir.Node`` and ``Limits``. Hands on: nothing, or a ``LimitError`` naming ``max_work``
(``--max-work``) or ``max_states`` (``--max-states``) when the estimate is past the bound. The
pipeline runs it on every front end's result before ``compile_ir``; the schema walk and the GBNF
expander run it before each automaton they build on the way.

Two figures, folded bottom-up over the IR (iteratively, each shared subtree once):

- ``states``: the NFA states that the Thompson builder makes (counted repetitions copy their
  body, a list ``X (S X)*`` holds one copy of ``X``, as the builder makes it): past
  ``limits.max_nfa_states`` the NFA bound would fire anyway, only after building it.
- ``work``: the subset construction's cost, the sum over DFA states of the NFA states each one
  tracks. It grows linearly with the copies of a counted repetition ``X{m,n}`` whose copies have
  *clear boundaries*: no byte that can continue a string of ``X`` past the end of one can also
  start ``X`` (``a{5}``, ``.``, ``ab?``, a JSON string with its quotes), so the next byte always
  says whether a copy ends. Otherwise (``a{1,100}``, ``a|aa``) the copies can split one input in
  many ways and every split is tracked at once: up to ``copies x states(X)`` NFA states in each of
  as many DFA states, so the estimate is the square of that. ``(a{1,100}){1,100}`` is about 10^8
  by this estimate (2 s of subset construction measured), ``(a{1,50}){1,50}`` about 7 x 10^6
  (0.1 s).

Whether the boundaries are clear is read off a DFA of ``X`` whose live states all reach acceptance
(``build.live_dfa``: the classes leaving its accepting states against those leaving its start),
built only when the square would be large, and only after ``X``'s own estimate has passed the
bound, so the check itself stays bounded.

``check_work`` folds the IR in Python. ``check_flat_work`` takes the IR already flattened for the
native Thompson builder (``flat_ir``) and runs the same fold in C (``_native/estimate.pyx``), row
by row, asking back here only for the clear-boundary answers (each needs a DFA); without the native
core it folds the IR.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.flat_ir import FlatIR
from moonmaskc.automata.native import native
from moonmaskc.automata.thompson import _separated_loops
from moonmaskc.errors import LimitError, MalformedArraysError
from moonmaskc.limits import Limits

# Below this, the quadratic estimate of a repetition is taken as it is (no DFA built to refine it).
CHEAP_SQUARE = 1_000_000
SHOWN_CHARACTERS = 60


@dataclass(frozen=True, slots=True)
class Estimate:
    """``states``: NFA states; ``work``: subset-construction steps (see the module docstring)."""

    states: int
    work: int


ONE_BYTE = Estimate(1, 1)


def _copies(node: ir.Repeat) -> int:
    return max(node.min, node.max if node.max is not None else node.min, 1)


def _shown(node: ir.Node) -> str:
    text = ir.to_regex(node)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 3] + "..."


class _Estimator:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.boundaries: dict[int, bool] = {}
        self.one_byte_fits = limits.max_nfa_states >= ONE_BYTE.states and limits.max_work >= ONE_BYTE.work

    def clear_enough(self, item: ir.Node, square: int) -> bool:
        """Whether the copies of ``item`` have clear boundaries, asked only where it matters: an
        embedded automaton is asked at once (its DFA is at hand); a small square is taken as it
        is (no DFA is built for it)."""
        if isinstance(item, ir.Automaton) or square > CHEAP_SQUARE:
            return self.has_clear_boundaries(item)
        return False

    def has_clear_boundaries(self, node: ir.Node) -> bool:
        """Whether the next byte always tells if a string of ``node`` goes on or a new copy
        starts: no byte that continues a string of ``node`` past an accepting point also starts
        one (read off a DFA whose live states all reach acceptance, ``build.live_dfa``; a prefix
        code continues with no byte at all)."""
        found = self.boundaries.get(id(node))
        if found is None:
            from moonmaskc.automata.build import live_dfa

            dfa = node.dfa if isinstance(node, ir.Automaton) else live_dfa(node, self.limits)
            transitions = dfa.transitions
            accepting = dfa.accepting.astype(bool)
            accepting[0] = False
            continues = (transitions[accepting] != 0).any(axis=0)
            starts = transitions[dfa.start] != 0 if dfa.start else continues & False
            found = not bool((continues & starts).any())
            self.boundaries[id(node)] = found
        return found

    def step(self, node: ir.Node, children: list[Estimate]) -> Estimate:
        if type(node) is ir.ByteSet and self.one_byte_fits:  # most nodes: no new object, no check
            return ONE_BYTE
        if isinstance(node, ir.ByteSet):
            estimate = ONE_BYTE
        elif isinstance(node, ir.Automaton):
            estimate = Estimate(node.dfa.num_states, node.dfa.num_states)
        elif isinstance(node, ir.Alt):
            estimate = Estimate(sum(c.states for c in children) + 1, max(1, sum(c.work for c in children)))
        elif isinstance(node, ir.Seq):
            states, work = sum(c.states for c in children) + 1, sum(c.work for c in children)
            # ``X (S X)*`` (a JSON list) is built with one copy of X (see thompson's docstring):
            # the X before the loop is counted once, inside the loop's body.
            for start, (loop_index, _) in _separated_loops(node.items).items():
                states -= sum(c.states for c in children[start:loop_index])
                work -= sum(c.work for c in children[start:loop_index])
            estimate = Estimate(states, max(1, work))
        else:
            assert isinstance(node, ir.Repeat)
            body = children[0]
            copies = _copies(node)
            states = copies * body.states + 2
            work = copies * body.work
            if copies > 1 and not isinstance(node.item, ir.ByteSet):  # one byte: always clear
                square = (copies * body.states) ** 2
                if square > work and not self.clear_enough(node.item, square):
                    work = square
            estimate = Estimate(states, work)
        self.check(node, estimate)
        return estimate

    def check(self, node: ir.Node, estimate: Estimate) -> None:
        limits = self.limits
        if estimate.states > limits.max_nfa_states:
            raise LimitError(
                "max_states",
                limits.max_states,
                f"the NFA of {_shown(node)} would need about {estimate.states} states, more than "
                f"{limits.max_nfa_states} (8 x the DFA state bound)",
                flag="--max-states",
            )
        if estimate.work > limits.max_work:
            raise LimitError(
                "max_work",
                limits.max_work,
                f"compiling {_shown(node)} would take about {estimate.work:,} steps of subset "
                "construction (counted repetitions of a body whose copies can overlap track every "
                "way to split the input)",
                flag="--max-work",
            )


def estimate(node: ir.Node, limits: Limits) -> Estimate:
    """The estimate of ``node`` (``LimitError`` as soon as a part of it is past a bound)."""
    estimator = _Estimator(limits)
    result: Estimate = ir.fold(node, estimator.step)
    return result


def check_work(node: ir.Node, limits: Limits) -> None:
    """Raise ``LimitError`` (``max_work`` or ``max_states``) when compiling ``node`` would be past a
    bound by the estimate of the module docstring; return at once otherwise."""
    estimate(node, limits)


def check_flat_work(flat: FlatIR, limits: Limits) -> None:
    """``check_work`` of the IR that ``flat`` holds, on its rows in C (same figures, same errors)."""
    flat_estimate(flat, limits)


def flat_estimate(flat: FlatIR, limits: Limits) -> Estimate:
    """``estimate`` of the IR that ``flat`` holds, on its rows in C (same figures, same errors);
    the Python fold without the native core."""
    module = native("estimate")
    if module is None:
        return estimate(flat.nodes[flat.root], limits)
    rows = len(flat.kind)
    states = np.empty(rows, dtype=np.int64)
    work = np.empty(rows, dtype=np.int64)
    clear = np.full(rows, -1, dtype=np.int8)
    dfa_states = np.fromiter((dfa.num_states for dfa in flat.dfas), dtype=np.int64, count=len(flat.dfas))
    estimator = _Estimator(limits)
    row = 0
    while True:
        status, row = module.estimate(
            flat.kind,
            flat.first,
            flat.second,
            flat.child_offsets,
            flat.children,
            dfa_states,
            clear,
            limits.max_nfa_states,
            limits.max_work,
            CHEAP_SQUARE,
            row,
            states,
            work,
        )
        if status == module.OK:
            return Estimate(int(states[flat.root]), int(work[flat.root]))
        if status == module.ASK:
            item = int(flat.children[flat.child_offsets[row]])
            clear[item] = estimator.has_clear_boundaries(flat.nodes[item])
            continue
        if status in (module.STATES, module.WORK):
            estimator.check(flat.nodes[row], Estimate(int(states[row]), int(work[row])))
        raise MalformedArraysError("the flattened IR is malformed (rejected by the native work estimate)")
