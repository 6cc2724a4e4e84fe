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
    if dfa.regions is not None or dfa.nests is not None:
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
    """``sample`` with the register of the regions beside the state (a counted region's
    counter, a nest region's stack)."""
    state, count = dfa.start, 0
    out = bytearray()
    while True:
        if dfa.accepting[state] and (len(out) >= max_len or rng.random() < stop_probability):
            return bytes(out)
        want = dfa.cost(state, count) - 1 if len(out) >= max_len else None
        choices = []
        for b in range(256):
            moved = dfa.step_register(state, b, count)
            if moved is not None and (want is None or dfa.cost(*moved) == want):
                choices.append((b, *moved))
        if not choices:
            return bytes(out)
        byte, state, count = rng.choice(choices)
        out.append(byte)
