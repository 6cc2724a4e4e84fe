"""Counted regions: marker bytes of a minimal DFA expanded into one character counter's regions.

Takes: a minimal DFA over bytes in which each *marker byte* ``m`` (a byte that valid UTF-8 never
holds: ``MARKER_BYTES``) stands for ``C{lo, hi}``, from 0 to ``hi`` repetitions of a one-character
automaton ``C``; the bounds of each marker (``{m: (lo, hi)}``); ``C``'s DFA.
Hands on (``expand_markers``): a DFA over bytes whose ``regions`` (``Regions``) say which of its
states belong to a counted region: one copy of ``C``'s states per marker edge, instead of ``hi``
copies. Beside the DFA state runs one counter ``c``:

- a transition into a region's *boundary* (the copy of ``C``'s start) from outside sets ``c := 0``;
- a transition from the boundary into its own region starts a character: allowed when ``c < hi``,
  then ``c := c + 1``;
- a transition from the boundary out of its region is allowed when ``c >= lo``.

Every other transition leaves ``c`` alone. The language of the DFA with its counter is the marker
DFA's with every marker replaced by ``C{lo, hi}``: the substitution commutes with subset
construction and minimisation, so markers may go through both, but never through a product (an
intersection of two markers says nothing of their strings): ``check_no_markers``.

A marker edge is expanded only where the counter stays deterministic: its source state has no
other edge and does not accept (the region's boundary replaces it), its target neither accepts
nor has a marker edge, and no byte both starts a character and leaves the region. Otherwise
``CountedRegionError``: the caller compiles the explicit repetition instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from moonmaskc.automata.columns import distinct_columns as _distinct_columns
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import check_no_nest_marker
from moonmaskc.errors import MoonmaskError

MARKER_BYTES = (0xC0, 0xC1, *range(0xF5, 0x100))
"""Bytes that no valid UTF-8 text holds: the JSON Schema front end (whose every string is UTF-8)
may use them as markers, one per distinct pair of bounds."""
COUNTED_MARKER_BYTES = MARKER_BYTES[:-1]
"""The markers of counted strings: all but the last, which free values use (``automata.nested``)."""


_ACTIVE: ContextVar[Mapping[int, tuple[int, int]] | None] = ContextVar("moonmaskc_markers", default=None)
_T = TypeVar("_T")


class CountedRegionError(MoonmaskError):
    """A marker edge whose region cannot be run by one counter, or a marker in a product.
    ``bounds``: the (lo, hi) of the markers at fault (the compile writes those out and counts the
    others), or None for all of them."""

    def __init__(self, message: str, bounds: frozenset[tuple[int, int]] | None = None) -> None:
        super().__init__(message)
        self.bounds = bounds


@dataclass(frozen=True)
class Regions:
    """Which states of a DFA lie in counted regions, and the regions' bounds.

    - ``region``: int32[num_states], the region of each state, -1 outside every region;
    - ``role``: int32[num_states], the state of ``C`` each region state copies, numbered 0 (the
      boundary between characters) to ``num_roles - 1``; -1 outside;
    - ``low``, ``high``: int32[num_regions], the bounds of each region;
    - ``boundary``: int32[num_regions], each region's boundary state.
    """

    region: np.ndarray
    role: np.ndarray
    low: np.ndarray
    high: np.ndarray
    boundary: np.ndarray

    @property
    def num_regions(self) -> int:
        return int(self.low.shape[0])

    @property
    def num_roles(self) -> int:
        return int(self.role.max()) + 1 if self.role.size else 0

    def deficit(self, state: int, count: int) -> int:
        """The characters still owed at ``state`` with counter ``count``: ``low - count`` in a
        region (0 once reached), 0 outside. Each is one byte at least (``expand_markers`` checks
        that the character automaton has one-byte characters)."""
        inside = int(self.region[state])
        if inside < 0:
            return 0
        return max(0, int(self.low[inside]) - count)

    def entry_costs(self) -> np.ndarray:
        """int64[num_states]: what an edge into each state costs beyond its byte, when it comes
        from outside the state's region: a boundary's lower bound (the characters owed from
        counter 0), 0 for every other state."""
        costs = np.zeros(self.region.shape[0], dtype=np.int64)
        costs[self.boundary] = self.low
        return costs

    def counter_step(self, state: int, target: int, count: int) -> int | None:
        """The counter after the transition ``state -> target`` (both live) taken with counter
        ``count``, or None when the counter forbids the transition."""
        region = self.region
        inside = int(region[state])
        entered = int(region[target])
        if inside >= 0 and int(self.boundary[inside]) == state:
            if entered == inside:  # a character starts
                return count + 1 if count < int(self.high[inside]) else None
            if count < int(self.low[inside]):
                return None
            return 0  # left the region (maybe straight into another one's boundary)
        if entered >= 0 and entered != inside:
            return 0
        return count


@dataclass(frozen=True)
class CharRoles:
    """``C``'s DFA read as one character: its live states that are neither dead nor final, with
    the start first (role 0), and which of its states are final."""

    states: list[int]
    final: np.ndarray  # bool[C states]

    @classmethod
    def of(cls, char: DFA) -> CharRoles:
        final = char.accepting.copy()
        if char.start == 0 or final[char.start]:
            raise ValueError("a counted character automaton must not accept the empty string")
        if np.any(char.transitions[final] != 0):
            raise ValueError("a counted character automaton must end each character where it accepts")
        middle = [int(s) for s in range(1, char.num_states) if s != char.start and not final[s]]
        return cls([char.start, *middle], final)


def bounds_text(low: int, high: int) -> str:
    """A region's bounds as ``notes``, ``inspect`` and the printed grammar show them: ``{lo,hi}``."""
    return f"{{{low},{high}}}"


def has_markers(dfa: DFA, markers: Mapping[int, object]) -> bool:
    """Whether some live edge of ``dfa`` is on a marker byte."""
    if not markers:
        return False
    columns = np.unique(dfa.byte_class[list(markers)])
    return bool(np.any(dfa.transitions[:, columns] != 0))


def check_no_markers(markers: Mapping[int, tuple[int, int]], *dfas: DFA) -> None:
    """``CountedRegionError`` when one of ``dfas`` has a live edge on a marker byte (naming those
    markers' bounds): a product of marker languages is not the product of the languages the
    markers stand for."""
    found = {
        bounds
        for marker, bounds in markers.items()
        if any(has_markers(dfa, {marker: bounds}) for dfa in dfas)
    }
    if found:
        raise CountedRegionError(
            "a counted string reaches a product of automata (allOf, not, oneOf, ...)", frozenset(found)
        )


@contextmanager
def markers_in_use(markers: Mapping[int, tuple[int, int]]) -> Iterator[None]:
    """Within the block, every product (``product.product``, ``excluded.without_words``) first
    checks its operands with ``check_no_markers`` against ``markers``."""
    token = _ACTIVE.set(markers)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def with_markers(markers: Mapping[int, tuple[int, int]], function: Callable[[], _T]) -> _T:
    """``function()`` within ``markers_in_use(markers)``."""
    with markers_in_use(markers):
        return function()


def check_product_operands(*dfas: DFA) -> None:
    """``check_no_markers`` against the markers in use (``markers_in_use``), if any, and the
    same for a free value's marker (``automata.nested.check_no_nest_marker``)."""
    markers = _ACTIVE.get()
    if markers:
        check_no_markers(markers, *dfas)
    check_no_nest_marker(*dfas)


def expand_markers(dfa: DFA, markers: Mapping[int, tuple[int, int]], char: DFA) -> DFA:
    """``dfa`` with each marker edge expanded into a counted region of ``char`` (see the module
    docstring); ``dfa`` itself when no live edge is on a marker byte. Works on the columns of the
    byte classes that both automata tell apart (never a [states, 256] table: DFAs of 150,000
    states come here)."""
    if not has_markers(dfa, markers):
        return dfa
    roles = CharRoles.of(char)
    keys = dfa.byte_class.astype(np.int64) * char.num_classes + char.byte_class
    # Each marker byte gets a class of its own: the DFA may have merged it with bytes that lead
    # to the same place (the marker of ``"`` C* ``"`` and the literal ``"x"``).
    marker_bytes = np.asarray(sorted(markers), dtype=np.int64)
    keys[marker_bytes] = -1 - marker_bytes
    _, first, joint = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    joint = rank[joint.reshape(-1)]
    representatives = np.sort(first)  # the smallest byte of each joint class
    table = np.take(dfa.transitions, dfa.byte_class[representatives], axis=1)
    char_table = char.transitions[:, char.byte_class[representatives]]
    marker_of = {int(joint[marker]): marker for marker in markers}
    marker_columns = sorted(marker_of)
    sources = {int(s) for s in np.nonzero(np.any(table[:, marker_columns] != 0, axis=1))[0]}
    state_map = np.full(char.num_states, len(roles.states), dtype=np.int64)  # C state -> role
    for index, state in enumerate(roles.states):
        state_map[state] = index
    state_map[np.nonzero(roles.final)[0]] = 0  # a character ends: back at the boundary
    role_rows = state_map[char_table[roles.states]]  # [roles, joint classes]; len(states): dead
    starts = char_table[roles.states[0]] != 0
    rows = [table]
    regions_of = np.full(dfa.num_states, -1, dtype=np.int32)
    role = np.full(dfa.num_states, -1, dtype=np.int32)
    low: list[int] = []
    high: list[int] = []
    boundary: list[int] = []
    next_state = dfa.num_states
    middle_count = len(roles.states) - 1
    for source in sorted(sources):
        live = np.nonzero(table[source])[0]
        at_fault = frozenset(markers[marker_of[int(c)]] for c in live if int(c) in marker_of)
        if len(live) != 1 or dfa.accepting[source]:
            raise CountedRegionError(
                "a counted string shares its first character with another value", at_fault
            )
        lo, hi = markers[marker_of[int(live[0])]]
        after = int(table[source, live[0]])
        if dfa.accepting[after] or after in sources:
            raise CountedRegionError("a counted string is not followed by a closing byte", at_fault)
        exits = table[after]
        if any(int(target) in sources for target in np.unique(exits[exits != 0])):
            raise CountedRegionError("a counted string is followed directly by another one", at_fault)
        ids = np.zeros(len(roles.states) + 1, dtype=np.int32)  # roles -> new states; last: dead
        ids[0] = source
        ids[1:-1] = np.arange(next_state, next_state + middle_count, dtype=np.int32)
        gadget = ids[role_rows]
        if np.any(starts & (exits != 0)):
            raise CountedRegionError("a byte both starts a counted character and ends the string", at_fault)
        gadget[0] = np.where(starts, gadget[0], exits)
        if not np.any(gadget[0] == source):
            raise CountedRegionError("the counted character automaton has no one-byte character")
        rows[0][source] = gadget[0]
        rows.append(gadget[1:])
        region_index = len(low)
        regions_of[source] = region_index
        role[source] = 0
        regions_of = np.concatenate([regions_of, np.full(middle_count, region_index, dtype=np.int32)])
        role = np.concatenate([role, np.arange(1, middle_count + 1, dtype=np.int32)])
        low.append(lo)
        high.append(hi)
        boundary.append(source)
        next_state += middle_count
    expanded = np.ascontiguousarray(np.concatenate(rows, axis=0), dtype=np.int32)
    accepting = np.concatenate([dfa.accepting, np.zeros(next_state - dfa.num_states, dtype=bool)])
    columns, column_of = _distinct_columns(expanded, given_up=True)
    regions = Regions(
        regions_of,
        role,
        np.asarray(low, dtype=np.int32),
        np.asarray(high, dtype=np.int32),
        np.asarray(boundary, dtype=np.int32),
    )
    byte_class = column_of[joint].astype(np.int32)
    result = DFA(columns, byte_class, accepting, dfa.start, counted_distances(columns, accepting, regions))
    result.regions = regions
    return result


def counted_distances(transitions: np.ndarray, accepting: np.ndarray, regions: Regions) -> np.ndarray:
    """int32[num_states]: the fewest bytes from each state to acceptance with the counter, for a
    region state once its region's lower bound is met (add ``Regions.deficit`` for the bytes still
    owed); -1 for the dead state. An edge costs one byte, and an edge into a region's boundary
    from outside its region also the region's lower bound. Dijkstra, backwards from acceptance."""
    import heapq

    if not np.any(regions.low):  # no character owed on entry: every edge costs one byte
        from moonmaskc.automata.distances import shortest_distances

        return shortest_distances(np.ascontiguousarray(transitions, dtype=np.int32), accepting)
    num_states = transitions.shape[0]
    entry = regions.entry_costs()
    region = regions.region
    predecessors: list[list[tuple[int, int]]] = [[] for _ in range(num_states)]
    for source, row in enumerate(transitions.tolist()):
        if source == 0:
            continue
        for target in set(row):
            if target:
                inside = region[target] >= 0 and region[target] == region[source]
                predecessors[target].append((source, 1 + (0 if inside else int(entry[target]))))
    distance = np.full(num_states, -1, dtype=np.int64)
    heap = [(0, int(state)) for state in np.nonzero(accepting)[0]]
    heapq.heapify(heap)
    while heap:
        cost, state = heapq.heappop(heap)
        if distance[state] >= 0:
            continue
        distance[state] = cost
        for source, weight in predecessors[state]:
            if distance[source] < 0:
                heapq.heappush(heap, (cost + weight, source))
    if int(distance.max(initial=0)) > np.iinfo(np.int32).max:
        raise CountedRegionError("a counted string's shortest completion is too long to record")
    return distance.astype(np.int32)


def distances_agree(
    transitions: np.ndarray, accepting: np.ndarray, distance: np.ndarray, regions: Regions
) -> bool:
    """Whether ``distance`` is ``counted_distances``: 0 exactly at accepting states, -1 exactly at
    the dead state, and every other state one edge (with its cost) farther than its nearest
    successor. Vectorised, for the artifact loader."""
    wide = distance.astype(np.int64)
    if wide[0] != -1 or np.any(wide[1:] < 0) or not np.array_equal(wide == 0, accepting):
        return False
    targets = transitions.astype(np.int64)
    region = regions.region
    entry = regions.entry_costs()
    inside = (region[targets] >= 0) & (region[targets] == region[:, None])
    weights = 1 + np.where(inside, 0, entry[targets])
    following = np.where(targets != 0, wide[targets] + weights, np.iinfo(np.int64).max // 2)
    expected = np.where(accepting[1:], 0, following[1:].min(axis=1))
    return bool(np.array_equal(expected, wide[1:]))
