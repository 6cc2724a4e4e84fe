"""Distances to acceptance and pruning.

Takes: a DFA's dense table or its live predecessors, and acceptance flags. Hands on: the fewest
bytes from each state to acceptance (-1 where out of reach), the longest completion (-1 where a
cycle is in reach), and ``prune``: the DFA with every state that cannot reach acceptance sent to
the dead state 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

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


def shortest_distances(transitions: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    return np.asarray(_distance_list(transitions.tolist(), accepting.tolist()), dtype=np.int32)


def prune(dfa: DFA) -> DFA:
    """Send every state that cannot reach acceptance to the dead state 0 and drop it."""
    from moonmaskc.automata.dfa import DFA

    transitions = dfa.transitions
    distance = dfa.distance
    alive = distance >= 0
    alive[0] = True
    if dfa.accepting[0]:
        raise ValueError("state 0 must be the dead state")
    new_id = np.cumsum(alive, dtype=np.int64) - 1
    new_id[~alive] = 0
    new_id[0] = 0
    kept = np.flatnonzero(alive)
    pruned = new_id[transitions[kept]].astype(np.int32)
    pruned[0, :] = 0
    start = int(new_id[dfa.start]) if alive[dfa.start] else 0
    return DFA(pruned, dfa.byte_class, dfa.accepting[kept], start, distance[kept])


def _completion_lengths(
    predecessors: Sequence[Sequence[int]], accepting: Sequence[bool]
) -> tuple[list[int], list[int]]:
    """Shortest and longest completion of every state of a DFA whose state 0 is dead, given the
    distinct live predecessors of every state (``_Tables.predecessors``).

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
