"""Stack patterns: which stacks let each dynamic token of a state in a nested container through.

Takes: a DFA with nest regions (``automata.nested``), one of its states ``q`` in a nested container
(copy 1, where the stack holds one entry or more) and the ids and bytes of ``q``'s dynamic tokens
(``TokenTable.nest_dynamic``). Hands on: ``role_ways``, the ways the tokens take from a role of
copy 1 (the same in every region), and ``stack_patterns`` of a state from them: ``StackPatterns``,
one row per way a token gets through; ``StackPatterns.allowed(stack)`` gives the tokens a stack
lets through in a few vector operations, the same set as walking every token with that stack
(``DFA.walk_counted``), so that a guide walks the tokens of a state once, not once per stack.

How: each token is walked once with the stack unknown below the entries the token pushes itself.
A pop of an unknown entry branches over the kinds that entry may hold, and over whether it was
the stack's last (then the walk goes on in the value itself, copy 0, and the rest of the token
is walked as it is, since nothing unknown is left). A way through so reads the top ``read``
entries and needs their kinds to be ``want`` (the stack's low bits); it needs the stack to hold
exactly ``read`` entries when it reached the bottom and more otherwise; and at most ``most``
entries, so that its own pushes stay within ``MAX_NEST_ENTRIES``. For a given stack exactly one
branch of a token's walk is the concrete walk, so the ways are disjoint.

Only numpy and the standard library are imported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import MAX_NEST_ENTRIES

MAX_WAYS = 1 << 14
"""The most ways the tokens of a role may take; past it ``role_ways`` gives up (None) and the
guide walks the tokens per stack instead."""


class StackPatterns:
    """The ways the dynamic tokens of one state get through (see the module docstring): those
    that stay in the nested container as arrays, and those that reach the stack's bottom, whose
    rest is walked from the region's copy 0 the first time a stack of their depth is met (a deep
    stack never needs them)."""

    def __init__(
        self,
        dfa: DFA,
        bottom_states: list[int],
        nested_states: dict[int, int],
        found: RoleWays,
        bits: int,
    ) -> None:
        self._dfa, self._bottom_states, self._bits = dfa, bottom_states, bits
        self.tokens, self.read, self.read_mask, self.want, self.most, roles, self.pushed = found.arrays
        self.states = np.asarray([nested_states[role] for role in roles.tolist()], dtype=np.int64)
        self._bottoms = found.bottoms_by_read
        self._resolved: dict[int, tuple[np.ndarray, ...]] = {}

    def allowed(self, stack: int, entries: int) -> np.ndarray:
        """int32: the tokens that ``stack`` (of ``entries`` entries) lets through, in no order
        (each once: for a given stack one way of a token at most fits)."""
        fits, bottoms, kept = self._fitting(stack, entries)
        if bottoms is None:
            return self.tokens[fits]
        return np.concatenate([self.tokens[fits], bottoms[0][kept]])

    def through(self, stack: int, entries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tokens that ``stack`` (of ``entries`` entries) lets through, ascending (int32), and
        where each leads: the DFA state, and the entries of the stack after it where that state
        lies in a nested container (elsewhere the register is no stack: a bound needs no more)."""
        fits, bottoms, kept = self._fitting(stack, entries)
        tokens = self.tokens[fits]
        states = self.states[fits]
        after = entries - self.read[fits] + self.pushed[fits]
        if bottoms is not None:
            bottom_tokens, _, _, bottom_states, bottom_after = bottoms
            tokens = np.concatenate([tokens, bottom_tokens[kept]])
            states = np.concatenate([states, bottom_states[kept]])
            after = np.concatenate([after, bottom_after[kept]])
        order = np.argsort(tokens, kind="stable")
        return tokens[order].astype(np.int32), states[order], after[order].astype(np.int64)

    def _fitting(
        self, stack: int, entries: int
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None, np.ndarray | None]:
        """Which ways ``stack`` (of ``entries`` entries) lets through: a mask over the ways that
        stay in the nested container, and the ways that read the whole stack (``_bottoms_of``,
        None when none do) with a mask over them."""
        fits = ((stack & self.read_mask) == self.want) & (self.most >= entries) & (self.read < entries)
        if entries not in self._bottoms:
            return fits, None, None
        bottoms = self._bottoms_of(entries)
        low = stack & ((1 << (entries * self._bits)) - 1)
        return fits, bottoms, (bottoms[1] == low) & (bottoms[2] >= entries)

    def _bottoms_of(self, read: int) -> tuple[np.ndarray, ...]:
        """The ways that read ``read`` entries, the whole stack, and go on after the bottom: their
        tokens, wanted kinds, most entries, the state they end in and the entries of its stack."""
        found = self._resolved.get(read)
        if found is None:
            kept = []
            for token, want, most, rest, kind in self._bottoms[read]:
                final, register, died = self._dfa.walk_counted(rest, self._bottom_states[kind], 0)
                if died is None and final:
                    entries = (register.bit_length() - 1) // self._bits if register else 0
                    kept.append((token, want, most, final, entries))
            found = self._resolved[read] = tuple(
                np.asarray([way[index] for way in kept], dtype=np.int32 if index == 0 else np.int64)
                for index in range(5)
            )
        return found


@dataclass(frozen=True)
class PatternTables:
    """A DFA's nest regions as lists, for walking tokens byte by byte (built once per guide)."""

    role: list[int]
    region: list[int]
    pops: list[list[bool]]
    calls: list[list[bool]]
    callee: list[int]
    returns: list[list[list[int]]]
    nested_states: list[dict[int, int]]  # per region: the state of each role in copy 1
    bits: int
    kinds: int
    structure: bytes = b""  # a digest of all a walk in copy 1 reads, in roles (``role_ways``)

    @classmethod
    def of(cls, dfa: DFA) -> PatternTables:
        nests = dfa.nests
        if nests is None:
            raise ValueError("the DFA has no nest regions")
        nested_states: list[dict[int, int]] = [{} for _ in range(nests.num_regions)]
        for state in np.nonzero(nests.copy >= 1)[0].tolist():
            nested_states[int(nests.region[state])][int(nests.role[state])] = state
        return cls(
            structure=_copy_structure(dfa, nested_states),
            role=nests.role.tolist(),
            region=nests.region.tolist(),
            pops=nests.pops.tolist(),
            calls=nests.calls.tolist(),
            callee=nests.callee.tolist(),
            returns=nests.returns.tolist(),
            nested_states=nested_states,
            bits=nests.entry_bits,
            kinds=int(nests.returns.shape[2]),
        )


@dataclass(frozen=True)
class RoleWays:
    """The ways of the dynamic tokens of one role of copy 1, the same in every region: ``ways``
    (token, read, want, bottom, most, the role it ends in, the entries it leaves pushed) that stay
    in the nested container, and ``bottoms`` (token, read, want, most, the bytes left, the kind
    popped last) that reach the stack's bottom, whose fate the rest of the token decides from the
    region's own copy 0 (``StackPatterns``)."""

    ways: list[tuple[int, int, int, bool, int, int, int]]
    bottoms: list[tuple[int, int, int, int, bytes, int]]
    bits: int = 1

    @cached_property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The ``ways`` as arrays: tokens (int32), read, the stack bits read, want, most, the
        role each ends in, the entries it leaves pushed (int64)."""
        columns = list(zip(*self.ways, strict=True)) if self.ways else [()] * 7
        read = np.asarray(columns[1], dtype=np.int64)
        return (
            np.asarray(columns[0], dtype=np.int32),
            read,
            (np.int64(1) << (read * self.bits)) - 1,
            np.asarray(columns[2], dtype=np.int64),
            np.asarray(columns[4], dtype=np.int64),
            np.asarray(columns[5], dtype=np.int64),
            np.asarray(columns[6], dtype=np.int64),
        )

    @cached_property
    def bottoms_by_read(self) -> dict[int, list[tuple[int, int, int, bytes, int]]]:
        """The ``bottoms`` by how many entries they read: (token, want, most, rest, kind)."""
        found: dict[int, list[tuple[int, int, int, bytes, int]]] = {}
        for token, read, want, most, rest, kind in self.bottoms:
            found.setdefault(read, []).append((token, want, most, rest, kind))
        return found


def _copy_structure(dfa: DFA, nested_states: list[dict[int, int]]) -> bytes:
    """A digest of what a walk in copy 1 reads, in roles: the edges of one region's copy 1 (each
    target as its role), its returns, and the pops, calls and callees of the roles. Two DFAs with
    the same digest have the same ways for the same tokens (``kept_role_ways``)."""
    nests = dfa.nests
    assert nests is not None
    digest = hashlib.blake2b(digest_size=20)
    if nested_states and nested_states[0]:
        roles = sorted(nested_states[0])
        states = np.asarray([nested_states[0][role] for role in roles], dtype=np.int64)
        targets = dfa.transitions[states][:, dfa.byte_class].astype(np.int64)
        inside = (nests.region[targets] == 0) & (nests.copy[targets] >= 1)
        target_roles = np.where(inside, nests.role[targets], np.where(targets == 0, -1, -2))
        returns = nests.returns[0, 1].astype(np.int64)
        for part in (
            np.asarray(roles, dtype=np.int64),
            target_roles.astype(np.int64),
            nests.role[returns].astype(np.int64),
            nests.pops.astype(np.uint8),
            nests.calls.astype(np.uint8),
            nests.callee.astype(np.int64),
            np.asarray([nests.entry_bits, MAX_NEST_ENTRIES], dtype=np.int64),
        ):
            digest.update(str(part.shape).encode())
            digest.update(np.ascontiguousarray(part).tobytes())
    return digest.digest()


KEPT_ROLE_WAYS = 4096
"""How many roles' ways ``kept_role_ways`` keeps per process."""
_KEPT: dict[tuple[bytes, int, bytes, int], RoleWays | None] = {}


def kept_role_ways(
    dfa: DFA, tables: PatternTables, state: int, tokens: Sequence[tuple[int, bytes]]
) -> RoleWays | None:
    """``role_ways``, kept per process by the copy's structure, the role and the tokens (their
    ids and bytes): another guide of the same level and vocabulary finds them again."""
    digest = hashlib.blake2b(digest_size=20)
    for token, data in tokens:
        digest.update(token.to_bytes(4, "little") + len(data).to_bytes(4, "little") + data)
    key = (tables.structure, tables.role[state], digest.digest(), MAX_WAYS)
    if key not in _KEPT:
        if len(_KEPT) >= KEPT_ROLE_WAYS:
            _KEPT.clear()
        _KEPT[key] = role_ways(dfa, tables, state, tokens)
    return _KEPT[key]


def role_ways(
    dfa: DFA, tables: PatternTables, state: int, tokens: Sequence[tuple[int, bytes]]
) -> RoleWays | None:
    """The ways ``tokens`` (id, bytes) take from ``state`` (in copy 1 of a nest region), for
    every state of its role; None past ``MAX_WAYS``."""
    returns = tables.returns[tables.region[state]]
    role_of, pops, calls, callee = tables.role, tables.pops, tables.calls, tables.callee
    bits = tables.bits
    ways: list[tuple[int, int, int, bool, int, int, int]] = []
    bottoms: list[tuple[int, int, int, int, bytes, int]] = []
    for token, data in tokens:
        # (state, offset, kinds pushed by the token, entries read, their kinds, most entries)
        todo: list[tuple[int, int, tuple[int, ...], int, int, int]] = [(state, 0, (), 0, 0, MAX_NEST_ENTRIES)]
        while todo:
            current, offset, pushed, read, want, most = todo.pop()
            alive = True
            while offset < len(data):
                byte = data[offset]
                offset += 1
                role = role_of[current]
                if pops[role][byte]:
                    if pushed:  # an entry of the token's own
                        current, pushed = returns[1][pushed[-1]], pushed[:-1]
                        continue
                    for kind in range(tables.kinds):
                        wanted = want | (kind << (read * bits))
                        if read + 1 <= most:  # the stack's last entry: on in the value itself
                            bottoms.append((token, read + 1, wanted, most, data[offset:], kind))
                        if read + 2 <= most:  # an entry below it is left
                            todo.append((returns[1][kind], offset, (), read + 1, wanted, most))
                    alive = False
                    break
                target = dfa.step(current, byte)
                if not target:
                    alive = False
                    break
                if calls[role][byte]:
                    most = min(most, MAX_NEST_ENTRIES - 1 - len(pushed) + read)
                    if most <= read:
                        alive = False
                        break
                    pushed = (*pushed, callee[role] - 1)
                current = target
            if alive:
                ways.append((token, read, want, False, most, role_of[current], len(pushed)))
            if len(ways) + len(bottoms) > MAX_WAYS:
                return None
    return RoleWays(ways, bottoms, bits)


def stack_patterns(dfa: DFA, tables: PatternTables, state: int, found: RoleWays) -> StackPatterns:
    """The patterns of ``state`` (in copy 1 of a nest region) from the ways of its role."""
    region = tables.region[state]
    return StackPatterns(dfa, tables.returns[region][0], tables.nested_states[region], found, tables.bits)
