"""Boolean operations on DFAs by product construction, and random sampling.

Takes: pruned DFAs (``moonmaskc.dfa.DFA``, dead state 0) and ``Limits``. Hands on: new minimal DFAs
for intersection, union, difference, "exactly one of", and emptiness / disjointness answers; plus
``sample``, a random walk that returns an accepted byte string.

The product walks tuples of states reachable from the tuple of start states over the joint byte
classes; a tuple whose combination can never accept (whatever the live members do next) is sent to
the dead state at once, so intersections stay small.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

import numpy as np

from moonmaskc.dfa import DFA, minimize, prune
from moonmaskc.errors import LimitError
from moonmaskc.limits import Limits

AcceptRule = Callable[[Sequence[bool]], bool]
_MAX_LIVE_FOR_DEADNESS_CHECK = 12


def _joint_classes(dfas: Sequence[DFA]) -> tuple[np.ndarray, np.ndarray]:
    """Joint byte classes: (byte -> joint class, joint class -> per-DFA class columns)."""
    stacked = np.stack([d.byte_class for d in dfas], axis=1)  # 256 x m
    unique_rows, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int32), unique_rows


def product(dfas: Sequence[DFA], accept: AcceptRule, limits: Limits | None = None) -> DFA:
    """The minimal DFA of the strings whose per-DFA acceptance flags satisfy ``accept``."""
    limits = limits or Limits()
    if not dfas:
        raise ValueError("product needs at least one DFA")
    byte_class, columns = _joint_classes(dfas)
    num_classes = columns.shape[0]
    tables = [d.transitions[:, columns[:, i]].tolist() for i, d in enumerate(dfas)]
    accepting = [d.accepting.tolist() for d in dfas]
    dead_cache: dict[tuple[bool, ...], bool] = {}

    def hopeless(state: tuple[int, ...]) -> bool:
        live = tuple(s != 0 for s in state)
        cached = dead_cache.get(live)
        if cached is None:
            live_positions = [i for i, flag in enumerate(live) if flag]
            if len(live_positions) > _MAX_LIVE_FOR_DEADNESS_CHECK:
                cached = False
            else:
                cached = True
                for flags in itertools.product((False, True), repeat=len(live_positions)):
                    full = [False] * len(state)
                    for position, flag in zip(live_positions, flags, strict=True):
                        full[position] = flag
                    if accept(full):
                        cached = False
                        break
            dead_cache[live] = cached
        return cached

    dead = tuple(0 for _ in dfas)
    ids: dict[tuple[int, ...], int] = {dead: 0}
    states: list[tuple[int, ...]] = [dead]
    start = tuple(d.start for d in dfas)
    start_id = 0
    if not hopeless(start):
        ids[start] = start_id = 1
        states.append(start)
    rows: list[list[int]] = [[0] * num_classes]
    index = 1
    while index < len(states):
        current = states[index]
        index += 1
        row = [0] * num_classes
        for cls in range(num_classes):
            target = tuple(table[s][cls] for table, s in zip(tables, current, strict=True))
            target_id = ids.get(target)
            if target_id is None:
                if hopeless(target):
                    target_id = ids[target] = 0
                else:
                    target_id = ids[target] = len(states)
                    if target_id > limits.max_states:
                        raise LimitError(
                            "max_states",
                            limits.max_states,
                            f"a product of {len(dfas)} automata needs more than {limits.max_states} states",
                            flag="--max-states",
                        )
                    states.append(target)
            row[cls] = target_id
        rows.append(row)
    transitions = np.array(rows, dtype=np.int32).reshape(len(states), num_classes)
    accept_flags = np.array(
        [
            i != 0 and accept([acc[s] for acc, s in zip(accepting, st, strict=True)])
            for i, st in enumerate(states)
        ],
        dtype=bool,
    )
    return minimize(prune(DFA(transitions, byte_class, accept_flags, start_id)))


def intersect(a: DFA, b: DFA, limits: Limits | None = None) -> DFA:
    return product([a, b], all, limits)


def union(a: DFA, b: DFA, limits: Limits | None = None) -> DFA:
    return product([a, b], any, limits)


def difference(a: DFA, b: DFA, limits: Limits | None = None) -> DFA:
    """Strings of ``a`` that ``b`` does not accept."""
    return product([a, b], lambda flags: flags[0] and not flags[1], limits)


def exactly_one(dfas: Sequence[DFA], limits: Limits | None = None) -> DFA:
    """Strings accepted by exactly one of ``dfas``."""
    return product(dfas, lambda flags: sum(flags) == 1, limits)


def is_empty(dfa: DFA) -> bool:
    return dfa.start == 0


def disjoint(a: DFA, b: DFA, limits: Limits | None = None) -> bool:
    return is_empty(intersect(a, b, limits))


def sample(dfa: DFA, rng: random.Random, max_len: int = 256, stop_probability: float = 0.25) -> bytes | None:
    """A random accepted string: uniform over live bytes, stopping at accepting states with
    ``stop_probability``; once ``max_len`` bytes are spent, only distance-decreasing bytes."""
    if dfa.start == 0:
        return None
    state = dfa.start
    out = bytearray()
    rows = dfa.transitions.tolist()
    classes = dfa.byte_class.tolist()
    distance = dfa.distance.tolist()
    accepting = dfa.accepting.tolist()
    while True:
        if accepting[state] and (len(out) >= max_len or rng.random() < stop_probability):
            return bytes(out)
        row = rows[state]
        if len(out) >= max_len:
            want = distance[state] - 1
            choices = [b for b in range(256) if row[classes[b]] != 0 and distance[row[classes[b]]] == want]
        else:
            choices = [b for b in range(256) if row[classes[b]] != 0]
        if not choices:
            return bytes(out)
        byte = rng.choice(choices)
        out.append(byte)
        state = row[classes[byte]]
