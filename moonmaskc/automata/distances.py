"""Distances to acceptance and pruning.

Takes: a DFA's dense table or its live predecessors, and acceptance flags. Hands on: the fewest
bytes from each state to acceptance (-1 where out of reach; ``shortest_distances`` from the dense
table), with the longest completion (-1 where a cycle is in reach; ``completion_lengths`` gives
both, from the live predecessors), and ``prune``: the DFA with every state that cannot reach
acceptance sent to the dead state 0.

``shortest_distances`` and ``prune`` run in the native core when it is built (same results); the
arrays are checked first (``_checked_table`` and friends), so malformed ones raise
``MalformedDFAError`` instead of reaching C.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from moonmaskc.automata.native import native
from moonmaskc.errors import MalformedDFAError

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA


def _distance_list(rows: Sequence[Sequence[int]], accepting: Sequence[bool]) -> list[int]:
    """Breadth-first search backwards from the accepting states; -1 where acceptance is unreachable."""
    n = len(rows)
    reverse: list[list[int]] = [[] for _ in range(n)]
    for source, row in enumerate(rows):
        for target in set(row):
            reverse[target].append(source)
    return _backward_breadth_first(reverse, accepting)


def _backward_breadth_first(predecessors: Sequence[Sequence[int]], accepting: Sequence[bool]) -> list[int]:
    """Fewest steps from each state to an accepting one along ``predecessors`` reversed; -1 if none."""
    distance = [-1] * len(predecessors)
    queue = [s for s in range(len(predecessors)) if accepting[s]]
    for s in queue:
        distance[s] = 0
    for t in queue:  # the list grows while it is walked: a breadth-first queue
        step = distance[t] + 1
        for s in predecessors[t]:
            if distance[s] < 0:
                distance[s] = step
                queue.append(s)
    return distance


def _checked_table(transitions: object) -> np.ndarray:
    """``transitions`` if it is a C-contiguous int32[states, classes] table with at least one state
    and one class and every target in [0, states); else ``MalformedDFAError``."""
    if not isinstance(transitions, np.ndarray):
        raise MalformedDFAError(f"transitions must be a numpy array, not {type(transitions).__name__}")
    if transitions.dtype != np.int32 or transitions.ndim != 2:
        raise MalformedDFAError(
            f"transitions must be a 2-D int32 array, not {transitions.ndim}-D {transitions.dtype}"
        )
    if not transitions.flags.c_contiguous:
        raise MalformedDFAError("transitions must be C-contiguous")
    num_states, num_classes = transitions.shape
    if num_states < 1 or num_classes < 1:
        raise MalformedDFAError(f"transitions must have a state and a class, not shape {transitions.shape}")
    if int(transitions.view(np.uint32).max()) >= num_states:  # a negative target reads as a huge one
        raise MalformedDFAError(f"a transition target is outside [0, {num_states})")
    return transitions


def _checked_vector(values: object, dtype: type, length: int, name: str) -> np.ndarray:
    """``values`` if it is a C-contiguous 1-D array of ``dtype`` and ``length``; else
    ``MalformedDFAError``."""
    if not isinstance(values, np.ndarray):
        raise MalformedDFAError(f"{name} must be a numpy array, not {type(values).__name__}")
    if values.dtype != dtype or values.shape != (length,):
        raise MalformedDFAError(
            f"{name} must be {np.dtype(dtype)}[{length}], not {values.dtype}{list(values.shape)}"
        )
    if not values.flags.c_contiguous:
        raise MalformedDFAError(f"{name} must be C-contiguous")
    return values


def _checked_start(start: object, num_states: int) -> int:
    try:
        index = operator.index(start)  # type: ignore[arg-type]
    except TypeError:
        raise MalformedDFAError(f"the start state must be an integer, not {type(start).__name__}") from None
    if not 0 <= index < num_states:
        raise MalformedDFAError(f"the start state {index} is outside [0, {num_states})")
    return index


def _check_dead_state(transitions: np.ndarray, accepting: np.ndarray) -> None:
    if accepting[0] or transitions[0].any():
        raise MalformedDFAError("state 0 must be the dead state: not accepting, every transition to 0")


def _native_form(transitions: np.ndarray, accepting: np.ndarray) -> bool:
    """Whether the arrays are laid out as a ``DFA`` holds them (what the native core takes)."""
    return (
        isinstance(transitions, np.ndarray)
        and isinstance(accepting, np.ndarray)
        and transitions.dtype == np.int32
        and transitions.ndim == 2
        and transitions.flags.c_contiguous
        and transitions.shape[0] >= 1
        and transitions.shape[1] >= 1
        and accepting.dtype == np.bool_
    )


def shortest_distances(transitions: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Fewest bytes from each state to acceptance, -1 where out of reach (int32[states])."""
    module = native("minimize")
    if module is not None and _native_form(transitions, accepting):
        try:  # the native search checks every target and the flags' length before its walk
            return module.distances(transitions, accepting.view(np.uint8))
        except ValueError as error:
            raise MalformedDFAError(f"distances: {error}") from None
    return np.asarray(_distance_list(transitions.tolist(), accepting.tolist()), dtype=np.int32)


def prune(dfa: DFA) -> DFA:
    """Send every state that cannot reach acceptance to the dead state 0 and drop it."""
    module = native("minimize")
    if module is None or not _native_form(dfa.transitions, dfa.accepting):
        return _pure_prune(dfa)
    from moonmaskc.automata.dfa import DFA

    if dfa.accepting[0]:
        raise MalformedDFAError("state 0 must be the dead state")
    table = _checked_table(dfa.transitions)
    num_states = table.shape[0]
    _checked_vector(dfa.accepting, np.bool_, num_states, "accepting")
    start = _checked_start(dfa.start, num_states)
    distance = _checked_vector(dfa.distance, np.int32, num_states, "distance")
    pruned, kept = module.prune(table, distance)
    new_start = int(np.searchsorted(kept, start)) if start and distance[start] >= 0 else 0
    return DFA(pruned, dfa.byte_class, dfa.accepting[kept], new_start, distance[kept])


def _pure_prune(dfa: DFA) -> DFA:
    """``prune`` in numpy (the pure path)."""
    from moonmaskc.automata.dfa import DFA

    transitions = dfa.transitions
    distance = dfa.distance
    alive = distance >= 0
    alive[0] = True
    if dfa.accepting[0]:
        raise MalformedDFAError("state 0 must be the dead state")
    new_id = np.cumsum(alive, dtype=np.int64) - 1
    new_id[~alive] = 0
    new_id[0] = 0
    kept = np.flatnonzero(alive)
    pruned = new_id[transitions[kept]].astype(np.int32)
    pruned[0, :] = 0
    start = int(new_id[dfa.start]) if alive[dfa.start] else 0
    return DFA(pruned, dfa.byte_class, dfa.accepting[kept], start, distance[kept])


def completion_lengths(
    predecessors: Sequence[Sequence[int]], accepting: Sequence[bool]
) -> tuple[list[int], list[int]]:
    """Shortest and longest completion of every state of a DFA whose state 0 is dead.

    Takes: the distinct live predecessors of every state (as ``Tables.predecessors`` lists them)
    and the acceptance flags. Returns ``(shortest, longest)``, one length per state.

    Shortest: breadth-first backwards from the accepting states (-1 where acceptance is out of
    reach). Longest (meaningful once the DFA is pruned): the longest path of live edges, -1 where
    a cycle is reachable and completions are unbounded, and for the dead state.
    """
    n = len(predecessors)
    longest = _longest_paths(predecessors, [0] * n, range(1, n))
    if n:
        longest[0] = -1
    return _backward_breadth_first(predecessors, accepting), longest


def _longest_paths(
    predecessors: Sequence[Sequence[int]], block_of: Sequence[int], walked: Iterable[int]
) -> list[int]:
    """For each state of ``walked`` (which must hold, with a state, every state of its block), the
    length of the longest path of live edges from it that never leaves its block, -1 when a cycle
    inside the block is in reach; 0 for the states not walked. Kahn's algorithm, backwards from
    the states without a successor in their block."""
    walked = list(walked)
    pending = [0] * len(predecessors)  # distinct successors in the block not yet settled
    for t in walked:
        b = block_of[t]
        for s in predecessors[t]:
            if block_of[s] == b:
                pending[s] += 1
    longest = [0] * len(predecessors)
    ready = [s for s in walked if not pending[s]]
    for t in ready:  # grows while it is walked
        b, step = block_of[t], longest[t] + 1
        for s in predecessors[t]:
            if block_of[s] == b:
                if longest[s] < step:
                    longest[s] = step
                pending[s] -= 1
                if not pending[s]:
                    ready.append(s)
    for s in walked:
        if pending[s]:
            longest[s] = -1
    return longest
