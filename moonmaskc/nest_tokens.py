"""The tokens a nest region's stack decides: per role, those whose bytes close a container.

Takes: one level of a nested value (``automata.nested``: the level DFA ``L``, its call byte, the
opening bytes) and a vocabulary. Hands on (``dynamic_tokens``): for each copy and role of a nest
region, the ids of the tokens whose walk from that role reaches a *pop* (a byte that closes a
container of a copy >= 1) before it dies or leaves the region. Those are the only tokens whose
fate depends on the stack: the token table of a DFA with nest regions is built with every pop
edge dead, so a state's row holds the tokens that need no pop, with their next states, and leaves
out exactly these (the runtime walks them with the stack).

How: a *probe* DFA, the value alone as a document (the marker and nothing else, expanded), with
every pop edge led into an absorbing accepting state ``POPPED`` and the region's exit into an
absorbing accepting state of its own; the token table of the probe (native trie walk) then says,
per state, which tokens end in ``POPPED``. The sets depend on the role and on whether the copy is
0 (whose closing bytes end the value instead of popping), not on the region or what follows it:
before its first pop a token never leaves a copy >= 1, and a token that leaves copy 0 pops no more.
"""

from __future__ import annotations

import numpy as np

from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import NestRegions, expand_nests
from moonmaskc.vocabulary import Vocabulary

PROBE_MARKER = 0xC0


def probe_dfa(level: DFA, call: int, open_bytes: bytes) -> tuple[DFA, NestRegions, int]:
    """The probe of the module docstring, its nest regions (one region) and its ``POPPED`` state."""
    from moonmaskc import ir
    from moonmaskc.automata.build import compile_ir

    host = compile_ir(ir.literal(bytes([PROBE_MARKER])))
    expanded = expand_nests(host, PROBE_MARKER, level, call, open_bytes)
    nests = expanded.nests
    assert nests is not None
    table = expanded.transitions[:, expanded.byte_class]
    states = table.shape[0]
    popped, left = states, states + 1
    probe = np.vstack([table, np.full((1, 256), popped, np.int32), np.full((1, 256), left, np.int32)])
    exit_state = int(nests.exit[0])
    probe[probe == exit_state] = left  # leaving the region: no pop can follow
    nested = np.nonzero((nests.region >= 0) & (nests.copy >= 1))[0]
    for state in nested.tolist():
        probe[state, nests.pops[int(nests.role[state])]] = popped
    accepting = np.concatenate([np.zeros(states, dtype=bool), [True, True]])
    columns, byte_class = np.unique(probe.T, axis=0, return_inverse=True)
    return (
        DFA(np.ascontiguousarray(columns.T), byte_class.reshape(-1), accepting, expanded.start),
        nests,
        popped,
    )


def dynamic_tokens(
    level: DFA, call: int, open_bytes: bytes, vocabulary: Vocabulary
) -> dict[tuple[bool, int], np.ndarray]:
    """``{(nested, role): token ids}``: the tokens that reach a pop from ``role`` in a copy >= 1
    (``nested``) or in copy 0; roles with none are left out."""
    from moonmaskc.token_table import build_token_table

    probe, nests, popped = probe_dfa(level, call, open_bytes)
    table = build_token_table(probe, vocabulary)
    found: dict[tuple[bool, int], np.ndarray] = {}
    for state in np.nonzero(nests.region >= 0)[0].tolist():
        key = (bool(nests.copy[state] >= 1), int(nests.role[state]))
        if key in found:
            continue
        allowed = table.allowed(state)
        reached = allowed[table.next_of(state) == popped]
        if reached.size:
            found[key] = np.sort(reached).astype(np.int32)
    return found


def dynamic_tokens_of(dfa: DFA, vocabulary: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """For every state of ``dfa`` (with nest regions), the tokens whose walk from it reaches a pop:
    ``(offsets, ids)``, int32[num_states + 1] and int32[n], the ids of state ``q`` being
    ``ids[offsets[q]:offsets[q + 1]]`` in increasing order. Unlike ``dynamic_tokens`` this holds
    the states outside regions too: a token may enter a region, open two containers and close one
    (``:[[]``). From the token table of a probe of the whole DFA, every pop edge led into an
    absorbing accepting state."""
    from moonmaskc.token_table import build_token_table

    nests = dfa.nests
    if nests is None:
        raise ValueError("the DFA has no nest regions")
    table = dfa.transitions[:, dfa.byte_class]
    states = table.shape[0]
    popped = states
    probe = np.vstack([table, np.full((1, 256), popped, np.int32)])
    nested = np.nonzero((nests.region >= 0) & (nests.copy >= 1))[0]
    for state in nested.tolist():
        probe[state, nests.pops[int(nests.role[state])]] = popped
    accepting = np.concatenate([dfa.accepting, [True]])
    columns, byte_class = np.unique(probe.T, axis=0, return_inverse=True)
    probe_dfa = DFA(np.ascontiguousarray(columns.T), byte_class.reshape(-1), accepting, dfa.start)
    probe_table = build_token_table(probe_dfa, vocabulary)
    offsets = np.zeros(states + 1, dtype=np.int64)
    found: list[np.ndarray] = []
    for state in range(1, states):
        allowed = probe_table.allowed(state)
        reached = allowed[probe_table.next_of(state) == popped] if allowed.size else allowed
        found.append(np.sort(reached).astype(np.int32))
        offsets[state + 1] = offsets[state] + reached.size
    ids = np.concatenate(found) if found else np.zeros(0, dtype=np.int32)
    return offsets.astype(np.int32), ids.astype(np.int32)
