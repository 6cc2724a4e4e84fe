"""Random accepted strings of a DFA.

Takes: a pruned ``DFA`` and a ``random.Random``. Hands on: an accepted byte string (``None`` for
an empty language): uniform over live bytes, stopping at accepting states at random, and once the
length budget is spent, only bytes that bring acceptance nearer.
"""

from __future__ import annotations

import random

from moonmaskc.automata.dfa import DFA


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
    if dfa.regions is not None:
        return _sample_counted(dfa, rng, max_len, stop_probability)
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


def _sample_counted(dfa: DFA, rng: random.Random, max_len: int, stop_probability: float) -> bytes:
    """``sample`` with the counter of the counted regions beside the state."""
    state, count = dfa.start, 0
    out = bytearray()
    rows = dfa.transitions.tolist()
    classes = dfa.byte_class.tolist()
    while True:
        if dfa.accepting[state] and (len(out) >= max_len or rng.random() < stop_probability):
            return bytes(out)
        row = rows[state]
        want = dfa.cost(state, count) - 1 if len(out) >= max_len else None
        choices = []
        for b in range(256):
            target = row[classes[b]]
            after = dfa.next_counter(state, target, count) if target else None
            if after is not None and (want is None or dfa.cost(target, after) == want):
                choices.append((b, target, after))
        if not choices:
            return bytes(out)
        byte, state, count = rng.choice(choices)
        out.append(byte)
