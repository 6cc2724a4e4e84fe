"""The tokens a nest region's stack decides: per role, those whose bytes close a container.

Takes: one level of a nested value (``automata.nested``: the level DFA ``L``, its call byte, the
opening bytes) and a vocabulary. Hands on (``dynamic_tokens``): for each copy and role of a nest
region, the ids of the tokens whose walk from that role reaches a *pop* (a byte that closes a
container of a copy >= 1) before it dies or leaves the region. Those are the only tokens whose
fate depends on the stack: the token table of a DFA with nest regions is built with every pop
edge dead, so a state's row holds the tokens that need no pop, with their next states, and leaves
out exactly these (the runtime walks them with the stack).

How (``dynamic_tokens_of``): the trie of the tokens that hold a closing byte, walked from every
state by the native core (``nests.pyx`` ``popping_tokens``), which lists the tokens that meet a
pop; on the pure path, a *probe* DFA (``probe_of``), the DFA with every pop edge led into an
absorbing accepting state ``POPPED``, whose token table over those tokens says, per state, which
tokens end in ``POPPED``. ``unspelled_endings`` checks the fact the runtime's budgets inside
nested containers rest on (natively counted by ``unspelled_count``). Per role
(``dynamic_tokens``) the sets depend only on the role and on whether the copy is 0 (whose closing
bytes end the value instead of popping): before its first pop a token never leaves copy 1, and a
token that leaves copy 0 pops no more; the value alone as a document holds them all.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import native
from moonmaskc.automata.nested import NEST_OPEN_BYTES, NestRegions, expand_nests
from moonmaskc.errors import MalformedArraysError
from moonmaskc.next_table import concatenated_ranges
from moonmaskc.vocabulary import Vocabulary

if TYPE_CHECKING:
    from moonmaskc.trie import ByteTrie

PROBE_MARKER = 0xC0
_OPEN_BYTES = np.frombuffer(NEST_OPEN_BYTES, dtype=np.uint8).astype(np.intp)


def value_alone(level: DFA, call: int, open_bytes: bytes) -> DFA:
    """The free value alone as a document: the marker and nothing else, expanded."""
    from moonmaskc import ir
    from moonmaskc.automata.build import compile_ir

    host = compile_ir(ir.literal(bytes([PROBE_MARKER])))
    return expand_nests(host, PROBE_MARKER, level, call, open_bytes)


def probe_dfa(level: DFA, call: int, open_bytes: bytes) -> tuple[DFA, NestRegions, int]:
    """The probe (``probe_of``) of the value alone, its nest regions (one region) and its
    ``POPPED`` state."""
    expanded = value_alone(level, call, open_bytes)
    assert expanded.nests is not None
    probe, popped, _ = probe_of(expanded)
    return probe, expanded.nests, popped


def dynamic_tokens(
    level: DFA, call: int, open_bytes: bytes, vocabulary: Vocabulary
) -> dict[tuple[bool, int], np.ndarray]:
    """``{(nested, role): token ids}``: the tokens that reach a pop from ``role`` in a copy >= 1
    (``nested``) or in copy 0; roles with none are left out. The sets depend on the role and on
    whether the copy is 0, not on the region or what follows it, so the value alone holds them
    all (``dynamic_tokens_of`` of it)."""
    expanded = value_alone(level, call, open_bytes)
    nests = expanded.nests
    assert nests is not None
    offsets, ids = dynamic_tokens_of(expanded, vocabulary)
    found: dict[tuple[bool, int], np.ndarray] = {}
    for state in np.nonzero(nests.region >= 0)[0].tolist():
        key = (bool(nests.copy[state] >= 1), int(nests.role[state]))
        if key not in found and offsets[state + 1] > offsets[state]:
            found[key] = ids[offsets[state] : offsets[state + 1]]
    return found


def probe_of(dfa: DFA) -> tuple[DFA, int, bytes]:
    """``dfa`` (with nest regions) with every pop edge led into an absorbing accepting state
    ``POPPED`` (a new last state), each closing byte in a class of its own: the probe, ``POPPED``
    and the closing bytes."""
    nests = dfa.nests
    if nests is None:
        raise ValueError("the DFA has no nest regions")
    states, classes = dfa.transitions.shape
    popped = states
    closers = list(nests.closing_bytes)
    byte_class = dfa.byte_class.astype(np.int64).copy()
    width = classes + len(closers)
    table = np.empty((states + 1, width), dtype=np.int32)
    table[:states, :classes] = dfa.transitions
    table[:states, classes:] = np.take(dfa.transitions, byte_class[closers], axis=1)  # a class each
    table[states] = popped
    byte_class[closers] = classes + np.arange(len(closers))
    nested = np.nonzero((nests.region >= 0) & (nests.copy >= 1))[0]
    for byte in closers:
        popping = nested[nests.pops[nests.role[nested], byte]]
        table[popping, byte_class[byte]] = popped
    accepting = np.concatenate([dfa.accepting, [True]])
    probe = DFA(np.ascontiguousarray(table, dtype=np.int32), byte_class, accepting, dfa.start)
    return probe, popped, bytes(closers)


def dynamic_tokens_of(dfa: DFA, vocabulary: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """For every state of ``dfa`` (with nest regions), the tokens whose walk from it reaches a pop:
    ``(offsets, ids)``, int32[num_states + 1] and int32[n], the ids of state ``q`` being
    ``ids[offsets[q]:offsets[q + 1]]`` in increasing order. Unlike ``dynamic_tokens`` this holds
    the states outside regions too: a token may enter a region, open two containers and close one
    (``:[[]``). Only a token that holds a closing byte can pop: the trie of those tokens is
    walked from every state, natively (``nests.pyx`` ``popping_tokens``); the pure path reads the
    token table of a probe of the whole DFA instead, every pop edge led into an absorbing
    accepting state (the closing bytes get classes of their own there)."""
    from moonmaskc.trie import trie_for

    nests = dfa.nests
    if nests is None:
        raise ValueError("the DFA has no nest regions")
    module = native("nests")
    if module is not None:
        closing, members = _closing_tokens(vocabulary, nests.closing_bytes)
        return _native_popping_tokens(module, dfa, nests, trie_for(closing), members)
    return _probed_tokens(dfa, vocabulary)


def _native_popping_tokens(
    module: ModuleType, dfa: DFA, nests: NestRegions, trie: ByteTrie, members: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``dynamic_tokens_of`` by the native walk of ``trie`` (the closing tokens') from every state
    (``nests.pyx`` ``popping_tokens``, which checks every index); ``members``: the vocabulary's id
    of each of the trie's tokens."""
    nested = (nests.region >= 0) & (nests.copy >= 1)
    pop_role = np.where(nested, nests.role, -1).astype(np.int32)
    status, offsets, ids = module.popping_tokens(
        np.ascontiguousarray(dfa.transitions, dtype=np.int32),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        pop_role,
        np.ascontiguousarray(nests.pops, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(trie.node_parent, dtype=np.int32),
        np.ascontiguousarray(trie.node_byte, dtype=np.uint8),
        np.ascontiguousarray(trie.node_token_offsets, dtype=np.int64),
        np.ascontiguousarray(trie.node_token_ids, dtype=np.int32),
        _narrow_ids(members),
    )
    if status == module.NO_MEMORY:
        raise MemoryError("no memory for the tokens that close a free value's containers")
    if status != module.OK:
        raise MalformedArraysError("a nest region's DFA or the closing tokens' trie is malformed")
    return offsets, ids


def _narrow_ids(members: np.ndarray) -> np.ndarray:
    if members.size and (int(members.min()) < 0 or int(members.max()) > np.iinfo(np.int32).max):
        raise MalformedArraysError("a token id outside int32")
    return np.ascontiguousarray(members, dtype=np.int32)


def _probed_tokens(dfa: DFA, vocabulary: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """``dynamic_tokens_of`` in numpy (the pure path): the token table of the probe."""
    from moonmaskc.token_classes import token_classes
    from moonmaskc.trie import trie_for

    probe, popped, closers = probe_of(dfa)
    states = popped
    # Only a token that holds a closing byte can pop: the probe walks those alone.
    closing, members = _closing_tokens(vocabulary, closers)
    probe_table = token_classes(probe, trie_for(closing), closing.size, closing.eos_id)
    next_table = probe_table.next_table
    hits = np.nonzero(next_table.next_states == popped)[0]
    hit_states = np.searchsorted(next_table.next_offsets, hits, side="right") - 1
    hits, hit_states = hits[hit_states < popped], hit_states[hit_states < popped]  # not POPPED's own
    rows = next_table.state_row[hit_states]
    hit_classes = next_table.row_classes[
        next_table.row_class_offsets[rows] + (hits - next_table.next_offsets[hit_states])
    ]
    sub_class = np.asarray(probe_table.token_class, dtype=np.int64)  # by the probe's token ids
    order = members[np.argsort(sub_class, kind="stable")]  # the vocabulary's ids, by class
    starts = np.concatenate([[0], np.cumsum(np.bincount(sub_class))])
    # Each hit (state, class) stands for the class's members: list them all, then sort.
    tokens = concatenated_ranges(order, starts, hit_classes)
    owners = np.repeat(hit_states, starts[hit_classes + 1] - starts[hit_classes])
    ranked = np.argsort(owners * (int(members.max(initial=0)) + 1) + tokens, kind="stable")
    offsets = np.zeros(states + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.bincount(owners, minlength=states))
    return offsets.astype(np.int32), tokens[ranked].astype(np.int32)


def unspelled_endings(dfa: DFA, singles: np.ndarray) -> str | None:
    """None when from every state of ``dfa`` (with nest regions) some fewest-bytes ending takes
    only bytes that are tokens of their own (``singles``: bool[256]), else why not. The runtime's
    budgets inside nested containers count bytes as tokens (``runtime_nested``): the bound
    ``distance + entries + 1`` is then reachable one token per byte. Checked edge by edge: each
    state with bytes to go has an edge on such a byte into a state one byte nearer, or (in a
    nested container one byte from its level's end) a closing byte that is one."""
    nests = dfa.nests
    if nests is None:
        raise ValueError("the DFA has no nest regions")
    module = native("nests")
    if module is not None:
        count = _native_unspelled(module, dfa, nests, singles)
    else:
        count = _unspelled_states(dfa, nests, singles).size
    if count == 0:
        return None
    missing = ", ".join(f"0x{byte:02x}" for byte in np.nonzero(~singles)[0][:8].tolist())
    return (
        f"the vocabulary spells no fewest-bytes ending of {count} states one byte per token "
        f"(bytes without a token of their own: {missing}...), which a free value's stack needs "
        "to keep its budgets"
    )


def _native_unspelled(module: ModuleType, dfa: DFA, nests: NestRegions, singles: np.ndarray) -> int:
    """``unspelled_endings``' count of states by ``nests.pyx`` ``unspelled_count``."""
    status, count = module.unspelled_count(
        np.ascontiguousarray(dfa.transitions, dtype=np.int32),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        np.ascontiguousarray(dfa.distance, dtype=np.int32),
        np.ascontiguousarray(singles, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(nests.pops, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(nests.region, dtype=np.int32),
        np.ascontiguousarray(nests.copy, dtype=np.int32),
        np.ascontiguousarray(nests.role, dtype=np.int32),
        np.ascontiguousarray(nests.level_distance, dtype=np.int32),
        np.frombuffer(NEST_OPEN_BYTES, dtype=np.uint8),
    )
    if status != module.OK:
        raise MalformedArraysError("a nest region's DFA is malformed (rejected by the native core)")
    return int(count)


def _unspelled_states(dfa: DFA, nests: NestRegions, singles: np.ndarray) -> np.ndarray:
    """The states ``unspelled_endings`` counts, in numpy (the pure path)."""
    table = dfa.transitions
    spelled = np.zeros(table.shape[1], dtype=bool)
    spelled[dfa.byte_class[singles]] = True  # a class with a byte of its own
    distance = dfa.distance
    closing = (nests.pops & singles[None, :]).any(axis=1)  # per role: a closing byte of its own
    roles = np.maximum(nests.role, 0)
    at_end = (nests.copy >= 1) & (nests.level_distance[roles] == 1)
    pending = (distance > 0) & ~(at_end & closing[roles])
    if spelled.all():
        # Outside the nested copies a distance is the table's own (a breadth-first search over
        # edges that never enter a nested copy: those reach acceptance only by a pop, dead in the
        # table), so some edge leads one byte nearer, and with every class spelled it is fine.
        pending &= nests.copy >= 1
    rows = np.nonzero(pending)[0]
    targets = table[rows]
    nearer = (targets != 0) & (distance[targets] == distance[rows, None] - 1)
    # In a region an opening byte is a call, and a nested state's distance leaves out the entry
    # the call pushes: such an edge may look one byte nearer without being so (nor is it ever).
    calls = dfa.byte_class[_OPEN_BYTES]
    nearer[:, calls] &= (nests.region[rows] < 0)[:, None]
    if not spelled.all():
        nearer &= spelled[None, :]
    return rows[~nearer.any(axis=1)]


_CLOSING: dict[tuple[str, bytes], tuple[Vocabulary, np.ndarray]] = {}


def _closing_tokens(vocabulary: Vocabulary, closers: bytes) -> tuple[Vocabulary, np.ndarray]:
    """The vocabulary's tokens that hold one of ``closers`` (and eos, as id 0), as a vocabulary of
    their own, and the old id of each of its tokens (kept per vocabulary)."""
    key = (vocabulary.fingerprint, closers)
    found = _CLOSING.get(key)
    if found is None:
        ids = [i for i, data in enumerate(vocabulary.token_bytes) if any(b in data for b in closers)]
        tokens = [b"", *(vocabulary.token_bytes[i] for i in ids)]
        sub = Vocabulary.from_tokens(tokens, eos_id=0, name=f"{vocabulary.name} (closing tokens)")
        if len(_CLOSING) >= 8:
            _CLOSING.clear()
        found = _CLOSING[key] = (sub, np.asarray([vocabulary.eos_id, *ids], dtype=np.int64))
    return found
