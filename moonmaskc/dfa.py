"""Deterministic automata over bytes: subset construction, pruning, distances, minimisation.

Takes: an ``NFA`` (or an ``ir.Node`` through ``compile_ir``) and ``Limits``. Hands on: a ``DFA`` with
- ``transitions``: int32[num_states, num_classes], ``byte_class``: int32[256] (byte -> column);
- state 0 is the dead state: every transition leads to itself, it never accepts;
- every other state can reach acceptance, so a step into state 0 means the prefix can never be
  completed;
- ``distance``: int32[num_states], the fewest bytes from each state to acceptance (-1 for state 0);
- ``accepting``: bool[num_states]; ``start``: the start state (0 when the language is empty).

``compile_ir`` returns the minimal DFA, numbered breadth-first from the start state in byte order,
with byte classes merged so that no two columns are equal.

Between the NFA and the returned DFA the automaton is kept as grouped live edges: per state, one
(class bit set, target) pair per distinct live target (``_Tables``). Schema automata have a few
targets per state over dozens of byte classes, so the subset construction, the completion lengths
and the minimisation (refinement by successor blocks, with Hopcroft as the fallback) work per
target rather than per class; the dense table is built in numpy at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice, pairwise
from typing import TypeVar

import numpy as np

from moonmaskc import ir
from moonmaskc.errors import LimitError
from moonmaskc.gc_pause import collector_paused
from moonmaskc.limits import Limits
from moonmaskc.nfa import NFA, build_nfa


class DFA:
    """A pruned DFA over bytes with dead state 0 (see the module docstring)."""

    def __init__(
        self,
        transitions: np.ndarray,
        byte_class: np.ndarray,
        accepting: np.ndarray,
        start: int,
        distance: np.ndarray | None = None,
    ) -> None:
        self.transitions = np.ascontiguousarray(transitions, dtype=np.int32)
        self.byte_class = np.ascontiguousarray(byte_class, dtype=np.int32)
        self.accepting = np.ascontiguousarray(accepting, dtype=bool)
        self.start = int(start)
        if self.transitions.ndim != 2 or self.byte_class.shape != (256,):
            raise ValueError("transitions must be 2-D and byte_class must have 256 entries")
        self._distance = None if distance is None else np.ascontiguousarray(distance, dtype=np.int32)
        self._rows: list[list[int]] | None = None
        self._classes: list[int] | None = None
        self._mask_edges: list[list[tuple[int, int]]] | None = None

    @property
    def distance(self) -> np.ndarray:
        """Fewest bytes from each state to acceptance (-1 where none), computed on first use."""
        if self._distance is None:
            self._distance = _distances(self.transitions, self.accepting)
        return self._distance

    @property
    def num_states(self) -> int:
        return int(self.transitions.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.transitions.shape[1])

    @property
    def is_empty(self) -> bool:
        return self.start == 0

    def _tables(self) -> tuple[list[list[int]], list[int]]:
        if self._rows is None or self._classes is None:
            self._rows = self.transitions.tolist()
            self._classes = self.byte_class.tolist()
        return self._rows, self._classes

    def step(self, state: int, byte: int) -> int:
        rows, classes = self._tables()
        return rows[state][classes[byte]]

    def walk(self, data: bytes, state: int | None = None) -> tuple[int, int | None]:
        """Run ``data`` from ``state`` (default: start). Returns the final state and, when the
        walk died, the offset of the byte that led into the dead state (else ``None``)."""
        rows, classes = self._tables()
        current = self.start if state is None else state
        if current == 0:
            return 0, 0
        for offset, byte in enumerate(data):
            current = rows[current][classes[byte]]
            if current == 0:
                return 0, offset
        return current, None

    def accepts(self, data: bytes) -> bool:
        state, _ = self.walk(data)
        return bool(self.accepting[state])

    def is_live(self, state: int) -> bool:
        return state != 0

    def class_ranges(self) -> list[list[tuple[int, int]]]:
        """For each class, the byte ranges it covers."""
        result: list[list[tuple[int, int]]] = [[] for _ in range(self.num_classes)]
        classes = self.byte_class.tolist()
        b = 0
        while b < 256:
            start, cls = b, classes[b]
            while b + 1 < 256 and classes[b + 1] == cls:
                b += 1
            result[cls].append((start, b))
            b += 1
        return result

    def mask_edges(self) -> list[list[tuple[int, int]]]:
        """For each state, its live transitions as (byte mask, target), one per distinct target, in
        order of their smallest byte, a mask being a 256-bit integer (bit b set = byte b); computed
        once per DFA."""
        if self._mask_edges is None:
            class_masks = [0] * self.num_classes
            for b, cls in enumerate(self.byte_class.tolist()):
                class_masks[cls] |= 1 << b
            by_first_byte = sorted(
                range(self.num_classes), key=lambda cls: class_masks[cls] & -class_masks[cls]
            )
            self._mask_edges = [
                _merged_by_key((class_masks[cls], row[cls]) for cls in by_first_byte if row[cls])
                for row in self.transitions.tolist()
            ]
        return self._mask_edges

    def class_representatives(self) -> list[int]:
        """The smallest byte of each class."""
        reps = [-1] * self.num_classes
        for b, cls in enumerate(self.byte_class.tolist()):
            if reps[cls] < 0:
                reps[cls] = b
        return reps

    def out_degree(self, state: int) -> int:
        """Number of bytes that lead from ``state`` to a live state."""
        live_classes = self.transitions[state] != 0
        return int(np.count_nonzero(live_classes[self.byte_class]))

    def shortest_completion(self, state: int) -> bytes | None:
        """The smallest (by byte value) of the shortest byte strings leading to acceptance."""
        if state == 0:
            return None
        rows, classes = self._tables()
        out = bytearray()
        while not self.accepting[state]:
            want = self.distance[state] - 1
            for b in range(256):
                target = rows[state][classes[b]]
                if target != 0 and self.distance[target] == want:
                    out.append(b)
                    state = target
                    break
        return bytes(out)


# ---------------------------------------------------------------------------------------------
# Distances and pruning
# ---------------------------------------------------------------------------------------------


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


def _distances(transitions: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    return np.asarray(_distance_list(transitions.tolist(), accepting.tolist()), dtype=np.int32)


def prune(dfa: DFA) -> DFA:
    """Send every state that cannot reach acceptance to the dead state 0 and drop it."""
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


# ---------------------------------------------------------------------------------------------
# The automaton as grouped live edges (what compile_ir works on; numpy only at the very end)
# ---------------------------------------------------------------------------------------------

Groups = list[tuple[int, int]]
_Key = TypeVar("_Key", int, frozenset[int])
SMALL_TABLE_CELLS = 4096


class _Tables:
    """A DFA as grouped live edges, dead state 0.

    ``groups[s]`` holds one ``(bits, target)`` pair per distinct live target of state ``s``: bit
    ``c`` of ``bits`` is set when class ``c`` leads there. Pairs are ordered by their lowest class,
    so walking them visits targets in class order; the dead state has none. Classes are numbered by
    their smallest byte (``class_of[byte]``). Most states have a handful of targets over dozens of
    classes, so every pass below is over targets, not classes; the dense table is built in numpy
    once, at the end."""

    __slots__ = (
        "_predecessors",
        "accepting",
        "class_of",
        "distance",
        "groups",
        "longest",
        "num_classes",
        "start",
    )

    def __init__(
        self,
        groups: list[Groups],
        num_classes: int,
        class_of: list[int],
        accepting: list[bool],
        start: int,
        distance: list[int],
        longest: list[int] | None = None,
    ) -> None:
        self.groups = groups
        self.num_classes = num_classes
        self.class_of = class_of
        self.accepting = accepting
        self.start = start
        self.distance = distance
        self.longest = longest  # see _longest_words; None until known
        self._predecessors: list[list[int]] | None = None

    @property
    def predecessors(self) -> list[list[int]]:
        """For each state, the distinct states with a live edge into it."""
        if self._predecessors is None:
            predecessors: list[list[int]] = [[] for _ in self.groups]
            for source, pairs in enumerate(self.groups):
                for _, target in pairs:
                    predecessors[target].append(source)
            self._predecessors = predecessors
        return self._predecessors

    @classmethod
    def of(cls, dfa: DFA) -> _Tables:
        """The tables of ``dfa``, its classes renumbered by their smallest byte."""
        representatives = dfa.class_representatives()
        order = sorted(range(dfa.num_classes), key=representatives.__getitem__)
        rank = [0] * dfa.num_classes
        for new, old in enumerate(order):
            rank[old] = new
        return cls(
            [
                _merged_by_key((1 << c, target) for c, target in enumerate(row) if target)
                for row in dfa.transitions[:, order].tolist()
            ],
            dfa.num_classes,
            [rank[c] for c in dfa.byte_class.tolist()],
            dfa.accepting.tolist(),
            dfa.start,
            dfa.distance.tolist(),
        )

    def transitions(self) -> np.ndarray:
        """The dense table int32[states, classes]."""
        return _dense(self.groups, self.num_classes)

    def to_dfa(self, merge_columns: bool = True) -> DFA:
        """The DFA, with classes whose columns are equal merged (numbered by smallest byte)."""
        table, class_of = self.transitions(), np.array(self.class_of, dtype=np.int32)
        if merge_columns:
            table, class_of = _merged_columns(table, class_of)
        return DFA(
            table,
            class_of,
            np.array(self.accepting, dtype=bool),
            self.start,
            np.array(self.distance, dtype=np.int32),
        )


def _class_positions(bits: int) -> list[int]:
    positions = []
    while bits:
        low = bits & -bits
        positions.append(low.bit_length() - 1)
        bits ^= low
    return positions


def _dense(groups: list[Groups], num_classes: int) -> np.ndarray:
    """Scatter grouped live edges into an int32[states, classes] table (0 where not live)."""
    positions: dict[int, list[int]] = {}
    if len(groups) * num_classes <= SMALL_TABLE_CELLS:  # Python lists beat numpy's call overhead
        rows = [[0] * num_classes for _ in groups]
        for row, pairs in zip(rows, groups, strict=True):
            for bits, target in pairs:
                found = positions.get(bits)
                if found is None:
                    found = positions[bits] = _class_positions(bits)
                for c in found:
                    row[c] = target
        return np.array(rows, dtype=np.int32).reshape(len(groups), num_classes)
    sources: list[int] = []
    targets: list[int] = []
    counts: list[int] = []
    classes: list[int] = []
    for source, pairs in enumerate(groups):
        for bits, target in pairs:
            found = positions.get(bits)
            if found is None:
                found = positions[bits] = _class_positions(bits)
            sources.append(source)
            targets.append(target)
            counts.append(len(found))
            classes.extend(found)
    table = np.zeros((len(groups), num_classes), dtype=np.int32)
    repeats = np.array(counts, dtype=np.intp)
    rows_index = np.repeat(np.array(sources, dtype=np.intp), repeats)
    table[rows_index, np.array(classes, dtype=np.intp)] = np.repeat(
        np.array(targets, dtype=np.int32), repeats
    )
    return table


def _merged_columns(table: np.ndarray, class_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge classes whose columns are equal; classes stay numbered by their smallest byte (they
    must be so numbered on entry)."""
    columns = np.ascontiguousarray(table.T)
    first_class: dict[bytes, int] = {}
    new_class: list[int] = []
    kept: list[int] = []
    for c, column in enumerate(columns):
        merged = first_class.setdefault(column.tobytes(), len(kept))
        if merged == len(kept):
            kept.append(c)
        new_class.append(merged)
    if len(kept) == len(columns):
        return table, class_of
    return np.ascontiguousarray(table[:, kept]), np.array(new_class, dtype=np.int32)[class_of]


def _pruned(tables: _Tables) -> _Tables:
    """``prune`` on tables; nothing to copy in the usual case where every state is alive."""
    distance = tables.distance
    n = len(distance)
    if all(d >= 0 for d in distance[1:]):
        return tables
    new_id = [0] * n
    kept = [0]
    for s in range(1, n):
        if distance[s] >= 0:
            new_id[s] = len(kept)
            kept.append(s)
    groups = tables.groups
    pruned: list[Groups] = [[]]
    for s in kept[1:]:
        pruned.append([(bits, new_id[t]) for bits, t in groups[s] if distance[t] >= 0])
    return _Tables(
        pruned,
        tables.num_classes,
        tables.class_of,
        [tables.accepting[s] for s in kept],
        new_id[tables.start],
        [distance[s] for s in kept],
    )


# ---------------------------------------------------------------------------------------------
# Subset construction
# ---------------------------------------------------------------------------------------------


def _byte_classes(nfa: NFA) -> tuple[list[int], dict[int, int]]:
    """The coarsest byte classes that no NFA edge tells apart (two bytes share a class when every
    edge mask holds both or neither), numbered by their smallest byte: ``class_of[byte]``, and for
    each distinct edge mask the classes it covers (bit ``c`` set for class ``c``).

    One sweep over the bytes where some mask's run starts or ends: each distinct mask owns one bit
    of a signature that is toggled at those points, and the bytes between two points share the
    signature, i.e. the set of masks that hold them."""
    masks = list({mask for edges in nfa.edges for mask, _ in edges})
    toggles = {0: 0, 256: 0}
    for index, mask in enumerate(masks):
        bit = 1 << index
        edges = mask ^ (mask << 1)  # bit b set where byte b - 1 and byte b differ in membership
        while edges:
            low = edges & -edges
            at = low.bit_length() - 1
            toggles[at] = toggles.get(at, 0) ^ bit
            edges ^= low
    cuts = sorted(toggles)
    class_of = [0] * 256
    class_ids: dict[int, int] = {}
    signature = 0
    for cut, end in pairwise(cuts):
        signature ^= toggles[cut]
        cls = class_ids.setdefault(signature, len(class_ids))
        class_of[cut:end] = [cls] * (end - cut)
    covered: dict[int, int] = {mask: 0 for mask in masks}
    for signature, cls in class_ids.items():
        while signature:
            low = signature & -signature
            covered[masks[low.bit_length() - 1]] |= 1 << cls
            signature ^= low
    return class_of, covered


GroupedSets = list[tuple[int, frozenset[int]]]


class _Moves:
    """Per NFA state, where its byte classes lead: ``groups(state)`` is one ``(bits, set)`` pair per
    distinct non-empty set of NFA states (the union of the closures of the edge targets on those
    classes), ordered by lowest class (see ``_Tables``)."""

    def __init__(self, nfa: NFA, covered: dict[int, int]) -> None:
        self.nfa = nfa
        self.covered = covered
        self._groups: dict[int, GroupedSets] = {}

    def groups(self, state: int) -> GroupedSets:
        found = self._groups.get(state)
        if found is None:
            covered, closure, edges = self.covered, self.nfa.closure, self.nfa.edges[state]
            if len(edges) == 1 or state in self.nfa.ordered_edges:  # already one group per edge, in order
                found = [
                    (covered[mask], targets)
                    for mask, target in edges
                    if covered[mask] and (targets := closure(target))
                ]
            else:
                found = _united(
                    [(covered[mask], targets)]
                    for mask, target in edges
                    if covered[mask] and (targets := closure(target))
                )
            self._groups[state] = found
        return found


def _united(alternatives: Iterable[GroupedSets]) -> GroupedSets:
    """Where each class leads from any of several sources given as grouped sets: sources that move
    on disjoint classes (a state inside an embedded automaton beside the state that follows it, say)
    put their groups side by side; where two move on one class, every pair of their groups that
    meets leads to the union of the two sets. One pair per distinct set, by lowest class."""
    pairs: GroupedSets = []
    seen = 0
    for source in alternatives:
        source_classes = 0
        for bits, _ in source:
            source_classes |= bits
        if not source_classes & seen:
            pairs.extend(source)
        else:
            united: GroupedSets = []
            for bits, targets in pairs:
                only_before = bits & ~source_classes
                if only_before:
                    united.append((only_before, targets))
                if bits & source_classes:
                    for source_bits, source_targets in source:
                        both = bits & source_bits
                        if both:
                            united.append((both, targets | source_targets))
            for source_bits, source_targets in source:
                only_source = source_bits & ~seen
                if only_source:
                    united.append((only_source, source_targets))
            pairs = united
        seen |= source_classes
    if len(pairs) < 2:
        return pairs
    pairs = _merged_by_key(pairs)
    pairs.sort(key=_lowest_bit)
    return pairs


def _lowest_bit(pair: tuple[int, frozenset[int]]) -> int:
    return pair[0] & -pair[0]


def _merged_by_key(pairs: Iterable[tuple[int, _Key]]) -> list[tuple[int, _Key]]:
    """``(bits, key)`` pairs with the bits of equal keys or-ed together, each key in the place of
    its first pair (so pairs in class order stay in class order)."""
    merged: dict[_Key, int] = {}
    for bits, key in pairs:
        merged[key] = merged.get(key, 0) | bits
    return [(bits, key) for key, bits in merged.items()]


def _subset_tables(nfa: NFA, limits: Limits) -> _Tables:
    """Subset construction over byte classes, pruned; classes numbered in byte order."""
    class_of, covered = _byte_classes(nfa)
    groups, sets, start = _subsets(nfa, _Moves(nfa, covered), limits)
    final = nfa.final
    accepting = [final in members for members in sets]
    tables = _Tables(groups, max(class_of) + 1, class_of, accepting, start, [])
    tables.distance, tables.longest = _completion_lengths(tables.predecessors, accepting)
    return _pruned(tables)


def _subsets(nfa: NFA, moves: _Moves, limits: Limits) -> tuple[list[Groups], list[frozenset[int]], int]:
    """The reachable sets of NFA states (the empty set, dead, first) and their grouped live edges;
    states are numbered breadth-first from the start, in class order."""
    dead: frozenset[int] = frozenset()
    ids: dict[frozenset[int], int] = {dead: 0}
    keys: list[frozenset[int]] = [dead]
    start_key = nfa.closure(nfa.start)
    start = ids.setdefault(start_key, len(keys))
    if start == len(keys):
        keys.append(start_key)
    all_groups: list[Groups] = [[]]
    groups_of = moves.groups
    for key in islice(keys, 1, None):  # grows while it is walked
        pairs = groups_of(next(iter(key))) if len(key) == 1 else _united(map(groups_of, key))
        row: Groups = []
        for bits, target_key in pairs:  # by lowest class: new states numbered in class order
            target = ids.get(target_key)
            if target is None:
                target = len(keys)
                if target > limits.max_states:
                    raise LimitError(
                        "max_states",
                        limits.max_states,
                        f"the DFA needs more than {limits.max_states} states",
                        flag="--max-states",
                    )
                ids[target_key] = target
                keys.append(target_key)
            row.append((bits, target))
        all_groups.append(row)
    return all_groups, keys, start


def determinize(nfa: NFA, limits: Limits | None = None) -> DFA:
    """Subset construction over byte classes, then pruning (not minimised, classes not merged)."""
    return _subset_tables(nfa, limits or nfa.limits).to_dfa(merge_columns=False)


# ---------------------------------------------------------------------------------------------
# Minimisation
# ---------------------------------------------------------------------------------------------

# Refinement by successor blocks re-examines only the predecessors of states that moved; it is
# fast on the nearly minimal automata that the front ends build but has no n log n bound, so past
# this many examined states per DFA state Hopcroft refines what it has.
REFINE_CHECKS_PER_STATE = 8


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


def _longest_words(tables: _Tables) -> list[int]:
    """For each live state of a pruned DFA, the length of its longest completion, or -1 when a
    cycle is reachable (completions are then unbounded); -1 for the dead state."""
    if tables.longest is None:
        tables.longest = _completion_lengths(tables.predecessors, tables.accepting)[1]
    return tables.longest


def _seed_partition(tables: _Tables) -> list[int]:
    """Blocks by what equivalent states always share: acceptance, shortest and longest completion
    and the classes that lead to a live state. The dead state (distance -1; in a pruned DFA the
    only one) is alone in its block."""
    ids: dict[tuple[bool, int, int, int], int] = {}
    block_of = []
    for accepting, distance, longest, pairs in zip(
        tables.accepting, tables.distance, _longest_words(tables), tables.groups, strict=True
    ):
        live = 0
        for bits, _ in pairs:
            live |= bits
        block_of.append(ids.setdefault((accepting, distance, longest, live), len(ids)))
    if len(ids) == len(block_of):
        return block_of
    refined: dict[tuple[int, int], int] = {}
    return [
        refined.setdefault(key, len(refined))
        for key in zip(block_of, _longest_stays(tables.predecessors, block_of), strict=True)
    ]


def _longest_stays(predecessors: list[list[int]], block_of: list[int]) -> list[int]:
    """For each state of a block with more than one state, the length of the longest path of live
    edges that never leaves its block (-1 when a cycle inside the block is in reach; 0 for the
    states of single-state blocks). When the blocks only join states that equivalent states never
    tell apart, so does this length: equivalent states reach equivalent states, hence the same
    blocks, along every word. It tells apart, in one pass, the states of a chain that refinement
    would split one round at a time (``[a-z]{2,24}`` after a loop that the chain's states all keep
    alive)."""
    size = [0] * len(block_of)
    for b in block_of:
        size[b] += 1
    return _longest_paths(predecessors, block_of, (s for s, b in enumerate(block_of) if size[b] > 1))


def _refined_by_successors(tables: _Tables, block_of: list[int], max_checks: int) -> tuple[list[int], bool]:
    """Split the blocks of ``block_of`` (in place) until all states of a block lead each class into
    the same block; ``False`` when ``max_checks`` state examinations did not suffice (``block_of``
    is then a valid, coarser, partial result).

    A state's signature is its targets' blocks with the classes leading into each (pairs of one
    block merged, by lowest class: a canonical form of class -> block). A block is examined in full
    once; later only the states whose successors moved to a new block (the predecessors of moved
    states) are examined, against one state of the block that was not: the others kept their
    successors' blocks and still agree with it."""
    groups, predecessors = tables.groups, tables.predecessors
    blocks: list[set[int]] = [set() for _ in range(max(block_of) + 1)]
    for s, b in enumerate(block_of):
        blocks[b].add(s)
    to_examine: dict[int, set[int] | None] = {b: None for b, members in enumerate(blocks) if len(members) > 1}
    while to_examine:
        touched: set[int] = set()
        for b, changed in to_examine.items():
            block = blocks[b]
            if len(block) < 2:
                continue
            reference = None
            if changed is not None and len(changed) < len(block):
                reference = next(s for s in block if s not in changed)
                examined: Iterable[int] = [reference, *changed]
                max_checks -= len(changed) + 1
            else:
                examined = block
                max_checks -= len(block)
            if max_checks < 0:
                return block_of, False
            parts: dict[tuple[tuple[int, int], ...], list[int]] = {}
            for s in examined:
                into: dict[int, int] = {}
                for bits, t in groups[s]:
                    tb = block_of[t]
                    into[tb] = into.get(tb, 0) | bits
                key = tuple(into.items())
                part = parts.get(key)
                if part is None:
                    parts[key] = [s]
                else:
                    part.append(s)
            if len(parts) == 1:
                continue
            if reference is None:  # the largest part keeps the block
                moved_parts = sorted(parts.values(), key=len)[:-1]
            else:  # the reference's part keeps it, with every state not examined
                moved_parts = [part for part in parts.values() if part[0] != reference]
            for part in moved_parts:
                new_block = len(blocks)
                moved = set(part)
                blocks.append(moved)
                block -= moved
                for s in part:
                    block_of[s] = new_block
                    touched.update(predecessors[s])
        to_examine = {}
        for s in touched:
            b = block_of[s]
            found = to_examine.get(b)
            if found is None:
                to_examine[b] = {s}
            else:
                found.add(s)
    return block_of, True


def _hopcroft_blocks(transitions: Sequence[Sequence[int]], seed: Sequence[int]) -> list[int]:
    """Hopcroft's partition refinement of the partition ``seed`` on a pruned DFA whose state 0 is
    dead and alone in its block.

    The seed must give all states of a block the same set of classes that lead to a live state (as
    ``_seed_partition`` does), i.e. be stable under the union of the live states. Then neither the
    dead state's block nor the largest live block has to serve as a first splitter: stability under
    every other block implies stability under those two, whose preimages are what the union's
    preimage leaves of the others' (the "all blocks but one" start of Hopcroft's algorithm). So
    only live transitions are ever visited, and those into the largest block not at first.
    """
    n = len(transitions)
    incoming: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for source, row in enumerate(transitions):
        if source == 0:
            continue
        for cls, target in enumerate(row):
            if target:
                incoming[target].append((cls, source))
    blocks: list[set[int]] = [set() for _ in range(max(seed) + 1)]
    for s, b in enumerate(seed):
        blocks[b].add(s)
    block_of = list(seed)
    pending = set(range(len(blocks)))
    pending.discard(block_of[0])
    pending.discard(max(pending, key=lambda b: len(blocks[b]), default=None))
    while pending:
        splitter = blocks[pending.pop()]
        by_class: dict[int, list[int]] = {}
        for t in splitter:
            for cls, source in incoming[t]:
                found = by_class.get(cls)
                if found is None:
                    by_class[cls] = [source]
                else:
                    found.append(source)
        for sources in by_class.values():
            touched: dict[int, list[int]] = {}
            for s in sources:
                b = block_of[s]
                found = touched.get(b)
                if found is None:
                    touched[b] = [s]
                else:
                    found.append(s)
            for b, members in touched.items():
                if len(members) == len(blocks[b]):
                    continue
                moved = set(members)
                blocks[b] -= moved
                new_index = len(blocks)
                blocks.append(moved)
                for s in moved:
                    block_of[s] = new_index
                if b in pending or len(moved) <= len(blocks[b]):
                    pending.add(new_index)
                else:
                    pending.add(b)
    return block_of


def _coarsest_partition(tables: _Tables) -> list[int]:
    """Block of every state in the coarsest partition compatible with acceptance and transitions."""
    block_of = _seed_partition(tables)
    if max(block_of) + 1 == len(block_of):  # every state alone already: nothing left to split
        return block_of
    block_of, stable = _refined_by_successors(tables, block_of, REFINE_CHECKS_PER_STATE * len(block_of))
    if stable:
        return block_of
    return _hopcroft_blocks(tables.transitions().tolist(), block_of)


def _minimal(tables: _Tables, breadth_first: bool = False) -> _Tables:
    """Minimise pruned tables; number the states dead first, then breadth-first from the start,
    in class order. ``breadth_first``: the tables are numbered so already (as the subset
    construction numbers them), so when no two states merge they are the answer."""
    if tables.start == 0:
        return tables
    groups = tables.groups
    block_of = _coarsest_partition(tables)
    merged = max(block_of) + 1 < len(groups)
    if breadth_first and not merged:
        return tables
    representative: dict[int, int] = {}
    for s, b in enumerate(block_of):
        representative.setdefault(b, s)
    new_id = {block_of[0]: 0, block_of[tables.start]: 1}
    sequence = [block_of[0], block_of[tables.start]]
    for b in islice(sequence, 1, None):  # grows while it is walked: a breadth-first queue
        for _, t in groups[representative[b]]:
            tb = block_of[t]
            if tb not in new_id:
                new_id[tb] = len(new_id)
                sequence.append(tb)
    state_id = [new_id.get(b, -1) for b in block_of]
    members = [representative[b] for b in sequence]
    new_groups: list[Groups] = []
    for s in members:
        pairs = [(bits, state_id[t]) for bits, t in groups[s]]
        if merged and len(pairs) > 1 and len({t for _, t in pairs}) < len(pairs):
            pairs = _merged_by_key(pairs)
        new_groups.append(pairs)
    return _Tables(
        new_groups,
        tables.num_classes,
        tables.class_of,
        [tables.accepting[s] for s in members],
        1,
        [tables.distance[s] for s in members],
    )


def minimize(dfa: DFA) -> DFA:
    """The minimal DFA equivalent to ``dfa`` (which must be pruned), in canonical numbering."""
    if dfa.start == 0:
        return _empty_dfa()
    return _minimal(_Tables.of(dfa)).to_dfa()


def _empty_dfa() -> DFA:
    return DFA(np.zeros((1, 1), dtype=np.int32), np.zeros(256, dtype=np.int32), np.zeros(1, dtype=bool), 0)


def compile_ir(node: ir.Node, limits: Limits | None = None) -> DFA:
    """IR to minimal DFA: Thompson NFA, subset construction, pruning, minimisation."""
    with collector_paused():
        return _compile_ir(node, limits or Limits())


def _compile_ir(node: ir.Node, limits: Limits) -> DFA:
    tables = _subset_tables(build_nfa(node, limits), limits)
    if tables.start == 0:
        return _empty_dfa()
    return _minimal(tables, breadth_first=True).to_dfa()


def equivalent_state_pairs(dfa: DFA) -> list[tuple[int, int]]:
    """Pairs of distinct states with the same future language (empty for a minimal DFA).

    Computed independently of Hopcroft by Moore-style refinement, for tests.
    """
    n = dfa.num_states
    labels = dfa.accepting.astype(np.int64)
    count = len(np.unique(labels))
    while True:
        signature = np.concatenate([labels[:, None], labels[dfa.transitions]], axis=1)
        _, labels = np.unique(signature, axis=0, return_inverse=True)
        labels = labels.reshape(-1)
        new_count = int(labels.max()) + 1 if n else 0
        if new_count == count:
            break
        count = new_count
    pairs: list[tuple[int, int]] = []
    seen: dict[int, int] = {}
    for s in range(n):
        label = int(labels[s])
        if label in seen:
            pairs.append((seen[label], s))
        else:
            seen[label] = s
    return pairs
