"""Nest regions: a marker byte of a minimal DFA expanded into a value of any depth, with a stack.

Takes: a minimal DFA over bytes in which one *marker byte* ``M`` stands for one nested value of
any depth (the JSON Schema front end: a free value, which ``{}`` or ``true`` accepts); the DFA of
one *level* of that value, ``L``, in which a *call byte* ``N`` stands for a nested container; the
bytes that open a container (``b"{["``). ``L`` is the value with its nested containers left out:
a scalar, or a container whose members or elements are scalars or ``N``.
Hands on (``expand_nests``): a DFA over bytes whose ``nests`` (``NestRegions``) say which of its
states belong to a nest region, each a few copies of ``L``'s states per marker edge instead of
one copy of the value per depth and per bracket kind. Beside the DFA state runs a stack ``s``, an
int:

- a region's states come in two *copies*: copy 0 is the value at the marker's place, copy 1 a
  nested container, whatever holds it;
- an opening byte where ``L`` has an ``N`` edge (a *call*) enters copy 1 and pushes the *kind* of
  the call, which of ``L``'s *return states* (a state an ``N`` edge leads to: after an object
  member, after an array element) the container returns to: ``s := 2 | kind`` from copy 0 (a 1 bit
  marks the stack's bottom), else ``s := s << 1 | kind``;
- a byte that closes a container in copy 1 (an edge of ``L`` into an accepting state with no edge
  out) is a *pop*: it shifts the kind out of ``s`` and leads to that return state, in copy 0 when
  ``s`` is then 1 (and ``s := 0``), else in copy 1. Pop edges are dead in the table:
  a DFA cannot hold them, so every stage that only reads the table (the token table's walk)
  sees the value without its pops;
- in copy 0 the value ends where ``L`` accepts: its edges into ``L``'s final state lead to the
  marker edge's target ``r`` and its accepting states that go on (a number) also take ``r``'s edges.

A stack holds at most ``MAX_NEST_ENTRIES`` entries (``s`` fits the 31 bits the runtime keeps
beside a state): values nest at most that many levels below a region's outermost container.
A marker edge is expanded only where the stack stays deterministic: its source state does not
accept and has no other edge on a byte a value starts with (``]`` beside the first element of an
array is fine: the source keeps it), and ``r``'s bytes are not bytes a number goes on with. Otherwise
``NestRegionError``: the caller compiles the value of bounded depth instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import TypeVar

import numpy as np

from moonmaskc.automata.columns import distinct_columns as _distinct_columns
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import native
from moonmaskc.errors import MalformedArraysError, MoonmaskError

NEST_MARKER = 0xFF
"""The marker byte of a free value (one of ``automata.counted.MARKER_BYTES``, which the counted
strings leave to it)."""

NEST_CALL = 0xC1
"""The call byte of a level automaton (``L``'s stand-in for a nested container): any byte that
no JSON text holds; it lives only inside ``L``, never in a schema's DFA."""
NEST_OPEN_BYTES = b"{["

_ACTIVE_NEST: ContextVar[int | None] = ContextVar("moonmaskc_nest_marker", default=None)

MAX_NEST_ENTRIES = 30
"""The most entries a nest region's stack holds (``s < 2**31``)."""


_T = TypeVar("_T")


class NestRegionError(MoonmaskError):
    """A marker edge whose value one stack cannot run: the caller writes the value out."""


def with_nest_marker(marker: int | None, function: Callable[[], _T]) -> _T:
    """``function()`` while every product checks its operands for ``marker``
    (``check_no_nest_marker``); ``function()`` as it is for None."""
    token = _ACTIVE_NEST.set(marker)
    try:
        return function()
    finally:
        _ACTIVE_NEST.reset(token)


def check_no_nest_marker(*dfas: DFA) -> None:
    """``NestRegionError`` when one of ``dfas`` has a live edge on the marker in use: a product
    of free values' markers is not the product of the values they stand for."""
    marker = _ACTIVE_NEST.get()
    if marker is None:
        return
    for dfa in dfas:
        if dfa.transitions[:, dfa.byte_class[marker]].any():
            raise NestRegionError("a free value reaches a product of automata (allOf, not, oneOf, ...)")


@dataclass(frozen=True)
class NestRegions:
    """Which states of a DFA lie in nest regions, and how their stack moves.

    - ``region``, ``copy``, ``role``: int32[num_states], the region of each state (-1 outside),
      its copy (0 the value itself, 1 a nested container) and the state of ``L`` it copies (-1
      outside);
    - ``exit``: int32[num_regions], the marker edge's target;
    - ``returns``: int32[num_regions, 2, kinds]: the state a pop of a container of ``kind`` leads
      to, in copy 0 or 1: ``returns[region, copy, kind]``;
    - ``pops``: bool[roles, 256], the bytes that close a container from a role (in copy 1);
    - ``calls``: bool[roles, 256], the bytes that open a nested container from a role, and
      ``callee``: int32[roles], 1 + the kind of such a call (0 where a role calls nothing);
    - ``level_distance``: int32[roles], the fewest bytes from a role to the end of its level's
      value (its container's closing byte included).
    """

    region: np.ndarray
    copy: np.ndarray
    role: np.ndarray
    exit: np.ndarray
    returns: np.ndarray
    pops: np.ndarray
    calls: np.ndarray
    callee: np.ndarray
    level_distance: np.ndarray

    @property
    def num_regions(self) -> int:
        return int(self.exit.shape[0])

    @cached_property
    def closing_bytes(self) -> bytes:
        """The bytes that close a container from some role, ascending."""
        return bytes(np.flatnonzero(self.pops.any(axis=0)).tolist())

    @cached_property
    def entry_bits(self) -> int:
        """Bits per stack entry: the kind of each open container."""
        return max(1, (int(self.returns.shape[2]) - 1).bit_length())

    def entries(self, stack: int) -> int:
        """How many entries ``stack`` holds (0 outside any nested container)."""
        if stack == 0:
            return 0
        return (stack.bit_length() - 1) // self.entry_bits

    def step(self, state: int, byte: int, target: int, stack: int) -> tuple[int, int] | None:
        """The state and stack after ``byte`` from ``state`` with ``stack``, where the table says
        ``target``; None when the byte is refused (a dead edge that is no pop, or a stack full)."""
        region = int(self.region[state])
        if region < 0:
            return (target, 0) if target else None
        role = int(self.role[state])
        copy = int(self.copy[state])
        bits = self.entry_bits
        if copy and self.pops[role, byte]:
            kind = stack & ((1 << bits) - 1)
            stack >>= bits
            caller = 1
            if stack == 1:  # the bottom: back in the value itself
                caller, stack = 0, 0
            return int(self.returns[region, caller, kind]), stack
        if not target:
            return None
        if self.calls[role, byte]:
            kind = int(self.callee[role]) - 1
            if copy == 0:
                return target, (1 << bits) | kind
            if self.entries(stack) >= MAX_NEST_ENTRIES:
                return None
            return target, (stack << bits) | kind
        return target, stack

    def completion(self, distance: np.ndarray, state: int, stack: int) -> int:
        """The fewest bytes to acceptance from ``state`` with ``stack`` (``distance``: the DFA's)."""
        return int(distance[state]) + self.entries(stack)


def walk(dfa: DFA, data: Iterable[int], state: int | None = None, stack: int = 0) -> tuple[int, int]:
    """The state and stack after ``data`` from ``state`` (the start) with ``stack`` (a counted
    region's counter where the walk is in one: ``DFA.walk_counted``); state 0 once a byte is
    refused."""
    found, register, _ = dfa.walk_counted(bytes(data), state, stack)
    return (found, register) if found else (0, 0)


def accepts(dfa: DFA, data: bytes) -> bool:
    """Whether ``dfa`` with its stacks accepts ``data``."""
    state, stack = walk(dfa, data)
    return bool(state) and stack == 0 and bool(dfa.accepting[state])


def expand_nests(dfa: DFA, marker: int, level: DFA, call: int, open_bytes: bytes) -> DFA:
    """``dfa`` with each edge on ``marker`` expanded into a nest region of ``level`` (see the
    module docstring); ``dfa`` itself when no live edge is on ``marker``. The regions' rows are
    written by the native core when it is built (``nests.pyx`` ``expand_table``), else in numpy
    (``_expanded_rows``); the same table either way."""
    column = int(dfa.byte_class[marker])
    if not np.any(dfa.transitions[1:, column]):
        return dfa
    template = _template(level, call, open_bytes)
    module = native("nests")
    if module is not None:
        expanded, joint, sources, exits, returns = _native_rows(module, dfa, marker, level, template)
    else:
        expanded, joint, sources, exits, returns = _expanded_rows(dfa, marker, level, template)
    states, regions, size = dfa.num_states, len(sources), template.block.shape[0]
    region = np.full(states + regions * size, -1, dtype=np.int32)
    region[states:] = np.repeat(np.arange(regions, dtype=np.int32), size)
    region[sources] = np.arange(regions, dtype=np.int32)
    copy = np.concatenate([np.full(states, -1, dtype=np.int32), np.tile(template.block_copy, regions)])
    copy[sources] = 0
    role = np.concatenate([np.full(states, -1, dtype=np.int32), np.tile(template.block_role, regions)])
    role[sources] = level.start
    nests = NestRegions(
        region=region,
        copy=copy,
        role=role,
        exit=exits,
        returns=returns,
        pops=template.pops,
        calls=template.calls,
        callee=template.callee32,
        level_distance=template.level_distance,
    )
    all_accepting = np.concatenate(
        [dfa.accepting, (template.block_accepting[None, :] & dfa.accepting[exits][:, None]).reshape(-1)]
    )
    transitions, column_of = _distinct_columns(expanded, given_up=True)
    byte_class = column_of[joint]
    distance = _distances(transitions, byte_class, all_accepting, nests)
    result = DFA(transitions, byte_class.astype(np.int32), all_accepting, dfa.start, distance)
    result.nests = nests
    if dfa.regions is not None:  # counted regions: the new states lie outside them
        added = regions * size
        result.regions = dataclasses.replace(
            dfa.regions,
            region=np.concatenate([dfa.regions.region, np.full(added, -1, dtype=np.int32)]),
            role=np.concatenate([dfa.regions.role, np.full(added, -1, dtype=np.int32)]),
        )
    return result


_SHARED_START = "a free value shares its first byte with another value"
_GOES_ON = "a free value is followed by a byte a number goes on with"

ExpandedRows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""``(expanded, joint, sources, exits, returns)``: the table with the regions' rows (int32, on
the joint classes), the joint class of each byte, each region's source and exit (int32), and
``NestRegions.returns``."""


def _native_rows(module: ModuleType, dfa: DFA, marker: int, level: DFA, template: _Template) -> ExpandedRows:
    """``_expanded_rows`` by ``nests.pyx`` ``expand_table`` (which checks every index)."""
    status, expanded, joint, sources, exits, returns = module.expand_table(
        np.ascontiguousarray(dfa.transitions, dtype=np.int32),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        np.ascontiguousarray(dfa.accepting, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(level.byte_class, dtype=np.int32),
        level.num_classes,
        marker,
        np.ascontiguousarray(template.block, dtype=np.int64),
        np.ascontiguousarray(template.start_codes, dtype=np.int64),
        np.ascontiguousarray(template.starts, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(template.goes_on, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(template.goes_on_local, dtype=np.int64),
        np.ascontiguousarray(template.return_codes, dtype=np.int64),
    )
    if status == module.SHARED_START:
        raise NestRegionError(_SHARED_START)
    if status == module.GOES_ON:
        raise NestRegionError(_GOES_ON)
    if status != module.OK or expanded is None:
        raise MalformedArraysError("a DFA or a nest level the native core cannot expand (malformed arrays)")
    return expanded, joint, sources, exits, returns


def _expanded_rows(dfa: DFA, marker: int, level: DFA, template: _Template) -> ExpandedRows:
    """The regions' rows in numpy (the pure path; see ``nests.pyx`` ``expand_table``)."""
    column = int(dfa.byte_class[marker])
    sources = [int(s) for s in np.nonzero(dfa.transitions[:, column])[0] if s]
    # Work on the byte classes both automata tell apart (a [states, 256] table of a DFA of
    # 150,000 states would take 150 MB), the marker in a class of its own.
    keys = dfa.byte_class.astype(np.int64) * level.num_classes + level.byte_class
    keys[marker] = -1
    _, first, joint = np.unique(keys, return_index=True, return_inverse=True)
    joint = joint.reshape(-1)
    representatives = first  # the smallest byte of each joint class, in class order
    marker_column = int(joint[marker])
    table = np.take(dfa.transitions, dfa.byte_class[representatives], axis=1)
    starts = template.starts[representatives]
    goes_on = template.goes_on[representatives]
    block = np.take(template.block, representatives, axis=1)
    start_codes = template.start_codes[representatives]
    regions: list[tuple[int, int]] = []  # (source, exit)
    for source in sources:
        others = table[source] != 0
        others[marker_column] = False
        if dfa.accepting[source] or np.any(others & starts):
            raise NestRegionError(_SHARED_START)
        regions.append((source, int(table[source, marker_column])))
    copies, kinds = 2, len(template.returns)
    size = block.shape[0]
    rows = [table]
    returns = np.zeros((len(regions), copies, kinds), dtype=np.int32)
    next_state = dfa.num_states
    for index, (source, exit_state) in enumerate(regions):
        exit_row = table[exit_state]
        if np.any(exit_row[goes_on] != 0):
            raise NestRegionError(_GOES_ON)
        new_rows = _placed(block, next_state, source, exit_state)
        merged = new_rows[template.goes_on_local]
        new_rows[template.goes_on_local] = np.where(exit_row != 0, exit_row, merged)
        own = table[source].copy()
        own[marker_column] = 0
        start_row = _placed(start_codes, next_state, source, exit_state)
        table[source] = np.where(start_row != 0, start_row, own)
        rows.append(new_rows)
        returns[index] = _placed(template.return_codes, next_state, source, exit_state)
        next_state += size
    expanded = np.ascontiguousarray(np.concatenate(rows, axis=0), dtype=np.int32)
    return (
        expanded,
        joint,
        np.asarray(sources, dtype=np.int32),
        np.asarray([e for _, e in regions], dtype=np.int32),
        returns,
    )


_DEAD, _EXIT, _SOURCE = -1, -2, -3  # the codes of a template's block besides its own states


def _placed(codes: np.ndarray, base: int, source: int, exit_state: int) -> np.ndarray:
    """A template block's codes as state ids, its states numbered from ``base``."""
    size = int(codes.max(initial=-1)) + 1
    lookup = np.empty(size + 3, dtype=np.int32)  # by code + 3: _SOURCE, _EXIT, _DEAD, the states
    lookup[:3] = (source, exit_state, 0)
    lookup[3:] = np.arange(base, base + size, dtype=np.int32)
    return lookup[codes + 3]


_TEMPLATES: dict[tuple[int, int, bytes], tuple[DFA, _Template]] = {}


def _template(level: DFA, call: int, open_bytes: bytes) -> _Template:
    """``_Template.of``, kept per level automaton (the front end keeps one per layout)."""
    key = (id(level), call, open_bytes)
    found = _TEMPLATES.get(key)
    if found is None or found[0] is not level:
        if len(_TEMPLATES) >= 8:
            _TEMPLATES.clear()
        found = _TEMPLATES[key] = (level, _Template.of(level, call, open_bytes))
    return found[1]


def _byte_table(dfa: DFA) -> np.ndarray:
    return np.ascontiguousarray(dfa.transitions[:, dfa.byte_class], dtype=np.int32)


@dataclass(frozen=True)
class _Template:
    """``L`` read as one level of a nested value."""

    inner: np.ndarray  # int32[roles, 256]: L's edges, the call byte's dropped
    ends: np.ndarray  # bool[roles, 256]: edges into L's final state (no edge out)
    goes_on: np.ndarray  # bool[256]: bytes on which an accepting state of L goes on
    goes_on_roles: np.ndarray  # L's accepting states with edges out: in copy 0, + the exit's
    starts: np.ndarray  # bool[256]: the bytes a value starts with
    final_accepting: np.ndarray  # bool[roles]: L's accepting states
    call_targets: np.ndarray  # int32[roles, 256]: the L state a call enters, -1 where none
    callee: np.ndarray  # int64[roles]: 1 + the kind of a call from the role (0: none)
    returns: list[int]  # the return states, by kind
    members: list[np.ndarray]  # the roles of each copy
    in_container: np.ndarray  # bool[roles]: roles inside a container (the roles of copy 1)
    level_distance: np.ndarray  # int32[roles]
    # One region's new states as a block (every (copy, role) but copy 0's start, which is the
    # marker's source): their rows as codes (a block index, ``_DEAD``, ``_EXIT``, ``_SOURCE``),
    # copy 0's start row the same way, and per block state its copy, role and acceptance (when
    # the exit accepts); the copy-0 states that also take the exit's edges; the pops' targets.
    block: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 256), np.int64))
    start_codes: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(256, np.int64))
    block_copy: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int32))
    block_role: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int32))
    block_accepting: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, bool))
    goes_on_local: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    return_codes: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0), np.int64))

    @classmethod
    def of(cls, level: DFA, call: int, open_bytes: bytes) -> _Template:
        table = _byte_table(level)
        roles = level.num_states
        final = level.accepting & ~np.any(table != 0, axis=1)
        if int(np.count_nonzero(final)) != 1:
            raise ValueError("a nest level must end in exactly one final state")
        final_state = int(np.nonzero(final)[0][0])
        inner = table.copy()
        inner[:, call] = 0
        ends = (inner == final_state) & (np.arange(roles) != 0)[:, None]
        call_sources = np.nonzero(table[:, call])[0]
        returns = sorted({int(table[s, call]) for s in call_sources if s})
        opens = np.zeros(256, dtype=bool)
        opens[list(open_bytes)] = True
        call_targets = np.full((roles, 256), -1, dtype=np.int32)
        callee = np.zeros(roles, dtype=np.int64)
        for source in call_sources:
            if not source:
                continue
            if np.any(inner[source][opens] != 0):
                raise ValueError("a nest level's call position also takes an opening byte itself")
            call_targets[source, opens] = table[level.start, opens]
            callee[source] = 1 + returns.index(int(table[source, call]))
        accepting_goes_on = level.accepting & ~final
        goes_on = np.any(inner[accepting_goes_on] != 0, axis=0)
        container_start = {int(table[level.start, b]) for b in open_bytes}
        in_container = _reachable(table, container_start, final_state)
        top = _reachable(table, {level.start}, final_state)
        members = [np.nonzero(top)[0], np.nonzero(in_container)[0]]
        without_calls = DFA(level.transitions.copy(), level.byte_class, level.accepting, level.start)
        without_calls.transitions[:, level.byte_class[call]] = 0
        template = cls(
            inner=inner,
            ends=ends,
            goes_on=goes_on,
            goes_on_roles=np.nonzero(accepting_goes_on)[0],
            starts=inner[level.start] != 0,
            final_accepting=level.accepting & ~final,
            call_targets=call_targets,
            callee=callee,
            returns=returns,
            members=members,
            in_container=in_container,
            level_distance=without_calls.distance,
        )
        return template._with_block(level.start)

    @cached_property
    def pops(self) -> np.ndarray:
        """``NestRegions.pops`` (read-only: every expansion of this level shares it)."""
        return _read_only(self.ends & self.in_container[:, None])

    @cached_property
    def calls(self) -> np.ndarray:
        """``NestRegions.calls`` (read-only)."""
        return _read_only(self.call_targets >= 0)

    @cached_property
    def callee32(self) -> np.ndarray:
        """``NestRegions.callee`` (read-only)."""
        return _read_only(self.callee.astype(np.int32))

    def _with_block(self, start: int) -> _Template:
        """This template with its block (see the fields)."""
        copies, kinds = 2, len(self.returns)
        roles = self.inner.shape[0]
        local = np.full((copies, roles), _DEAD, dtype=np.int64)
        local[0, start] = _SOURCE
        kept = [(c, r) for c in range(copies) for r in self.members[c].tolist() if c or r != start]
        for index, (c, r) in enumerate(kept):
            local[c, r] = index
        local_with_dead = np.concatenate([local, np.full((copies, 1), _DEAD, np.int64)], axis=1)
        codes = np.zeros((copies, roles, 256), dtype=np.int64)
        for c in range(copies):
            targets = local_with_dead[c][np.where(self.inner > 0, self.inner, roles)]
            for role in np.nonzero(self.callee)[0].tolist():
                live = self.call_targets[role] >= 0
                targets[role, live] = local[1, self.call_targets[role, live]]
            targets[self.ends] = _EXIT if c == 0 else _DEAD  # in copy 1 a pop: the stack's
            codes[c] = targets
        block = np.stack([codes[c, r] for c, r in kept]) if kept else np.zeros((0, 256), np.int64)
        goes_on = set(self.goes_on_roles.tolist())
        return_codes = np.full((copies, kinds), _DEAD, dtype=np.int64)
        for caller in range(copies):
            for kind in range(kinds):
                return_codes[caller, kind] = local[caller, self.returns[kind]]
        return dataclasses.replace(
            self,
            block=block,
            start_codes=codes[0, start],
            block_copy=np.asarray([c for c, _ in kept], dtype=np.int32),
            block_role=np.asarray([r for _, r in kept], dtype=np.int32),
            block_accepting=np.asarray(
                [c == 0 and bool(self.final_accepting[r]) for c, r in kept], dtype=bool
            ),
            goes_on_local=np.asarray(
                [i for i, (c, r) in enumerate(kept) if c == 0 and r in goes_on], dtype=np.int64
            ),
            return_codes=return_codes,
        )


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _reachable(table: np.ndarray, starts: set[int], final_state: int) -> np.ndarray:
    """The roles of ``L`` reachable from ``starts`` within one level (a call byte's edge leads to
    its return state), neither dead nor the final state."""
    seen = np.zeros(table.shape[0], dtype=bool)
    todo = [s for s in starts if s and s != final_state]
    for s in todo:
        seen[s] = True
    while todo:
        state = todo.pop()
        for target in np.unique(table[state]):
            target = int(target)
            if target and target != final_state and not seen[target]:
                seen[target] = True
                todo.append(target)
    return seen


def _distances(
    transitions: np.ndarray, byte_class: np.ndarray, accepting: np.ndarray, nests: NestRegions
) -> np.ndarray:
    """int32[num_states]: the fewest bytes to acceptance with an empty stack, and for the states
    of copies ``k >= 1`` the fewest bytes to the end of their level's value plus the exit's: with a
    stack ``s`` add ``NestRegions.entries(s)`` (one closing byte per entry)."""
    from moonmaskc.automata.distances import shortest_distances

    distance = shortest_distances(transitions, accepting).astype(np.int64)
    nested = np.nonzero(nests.copy >= 1)[0]
    exits = nests.exit[nests.region[nested]]
    distance[nested] = nests.level_distance[nests.role[nested]] + distance[exits]
    del byte_class
    return distance.astype(np.int32)
