"""Deterministic automata over bytes: subset construction, pruning, distances, minimisation.

Takes: an ``NFA`` (or an ``ir.Node`` through ``compile_ir``) and ``Limits``. Hands on: a ``DFA`` with
- ``transitions``: int32[num_states, num_classes], ``byte_class``: int32[256] (byte -> column);
- state 0 is the dead state: every transition leads to itself, it never accepts;
- every other state can reach acceptance, so a step into state 0 means the prefix can never be
  completed;
- ``distance``: int32[num_states], the fewest bytes from each state to acceptance (-1 for state 0);
- ``accepting``: bool[num_states]; ``start``: the start state (0 when the language is empty).

``compile_ir`` returns the minimal DFA (Hopcroft), numbered breadth-first from the start state in
byte order, with byte classes merged so that no two columns are equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice, pairwise

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
        """For each state, its live transitions as (byte mask, target), one per distinct target, a
        mask being a 256-bit integer (bit b set = byte b); computed once per DFA."""
        if self._mask_edges is None:
            class_masks = [0] * self.num_classes
            for b, cls in enumerate(self.byte_class.tolist()):
                class_masks[cls] |= 1 << b
            result: list[list[tuple[int, int]]] = []
            for row in self.transitions.tolist():
                by_target: dict[int, int] = {}
                for cls, target in enumerate(row):
                    if target:
                        by_target[target] = by_target.get(target, 0) | class_masks[cls]
                result.append([(mask, target) for target, mask in by_target.items()])
            self._mask_edges = result
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
# The automaton as plain lists (what compile_ir works on; numpy only at the very end)
# ---------------------------------------------------------------------------------------------


class _LiveEdges:
    """The live transitions of a DFA with dead state 0, per state: ``targets[s]`` the live targets
    and ``classes[s]`` the classes that lead to them, both in class order (empty for state 0), and
    ``predecessors[t]`` the distinct live states with an edge into ``t``."""

    __slots__ = ("classes", "predecessors", "targets")

    def __init__(self, targets: list[list[int]], classes: list[tuple[int, ...]]) -> None:
        self.targets = targets
        self.classes = classes
        self.predecessors: list[list[int]] = [[] for _ in targets]
        for source in range(1, len(targets)):
            for target in set(targets[source]):
                self.predecessors[target].append(source)

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence[int]]) -> _LiveEdges:
        targets: list[list[int]] = [[]]
        classes: list[tuple[int, ...]] = [()]
        for row in islice(rows, 1, None):
            live = tuple(c for c, t in enumerate(row) if t)
            classes.append(live)
            targets.append([row[c] for c in live])
        return cls(targets, classes)


class _Tables:
    """A DFA in Python lists: ``rows[state][class]``, ``class_of[byte]``, dead state 0."""

    __slots__ = ("_live", "accepting", "class_of", "distance", "longest", "rows", "start")

    def __init__(
        self,
        rows: list[list[int]],
        class_of: list[int],
        accepting: list[bool],
        start: int,
        distance: list[int],
        longest: list[int] | None = None,
        live: _LiveEdges | None = None,
    ) -> None:
        self.rows = rows
        self.class_of = class_of
        self.accepting = accepting
        self.start = start
        self.distance = distance
        self.longest = longest  # see _longest_words; None until known
        self._live = live

    @property
    def live(self) -> _LiveEdges:
        """The live edges; the subset construction hands them on, other tables compute them once."""
        if self._live is None:
            self._live = _LiveEdges.of_rows(self.rows)
        return self._live

    @classmethod
    def of(cls, dfa: DFA) -> _Tables:
        return cls(
            dfa.transitions.tolist(),
            dfa.byte_class.tolist(),
            dfa.accepting.tolist(),
            dfa.start,
            dfa.distance.tolist(),
        )

    def to_dfa(self) -> DFA:
        return DFA(
            np.array(self.rows, dtype=np.int32).reshape(len(self.rows), -1),
            np.array(self.class_of, dtype=np.int32),
            np.array(self.accepting, dtype=bool),
            self.start,
            np.array(self.distance, dtype=np.int32),
        )


def _pruned(tables: _Tables) -> _Tables:
    """``prune`` on lists; nothing to copy in the usual case where every state is alive."""
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
    rows = tables.rows
    pruned = [[0] * len(rows[0])] + [[new_id[t] for t in rows[s]] for s in kept[1:]]
    return _Tables(
        pruned,
        tables.class_of,
        [tables.accepting[s] for s in kept],
        new_id[tables.start],
        [distance[s] for s in kept],
    )


# ---------------------------------------------------------------------------------------------
# Subset construction
# ---------------------------------------------------------------------------------------------


def _byte_classes(nfa: NFA) -> tuple[list[int], dict[int, list[int]]]:
    """The coarsest byte classes that no NFA edge tells apart (two bytes share a class when every
    edge mask holds both or neither), numbered by their smallest byte: ``class_of[byte]``, and for
    each distinct edge mask the classes it covers.

    One sweep over the bytes where some mask's run starts or ends: each distinct mask owns one bit
    of a signature that is toggled at those points, and the bytes between two points share the
    signature, i.e. the set of masks that hold them."""
    masks = list({mask for edges in nfa.edges for mask, _ in edges})
    toggles = {0: 0}
    for index, mask in enumerate(masks):
        bit = 1 << index
        for first, end in ir.mask_runs(mask):
            toggles[first] = toggles.get(first, 0) ^ bit
            toggles[end] = toggles.get(end, 0) ^ bit
    toggles.setdefault(256, 0)
    cuts = sorted(toggles)
    class_of = [0] * 256
    class_ids: dict[int, int] = {}
    signature = 0
    for cut, end in pairwise(cuts):
        signature ^= toggles[cut]
        cls = class_ids.setdefault(signature, len(class_ids))
        class_of[cut:end] = [cls] * (end - cut)
    covered: dict[int, list[int]] = {mask: [] for mask in masks}
    for signature, cls in class_ids.items():
        while signature:
            low = signature & -signature
            covered[masks[low.bit_length() - 1]].append(cls)
            signature ^= low
    return class_of, covered


class _Moves:
    """Per NFA state, byte class -> the union of the closures of its targets on that class."""

    def __init__(self, nfa: NFA, covered: dict[int, list[int]]) -> None:
        self.nfa = nfa
        self.covered = covered
        self._moves: dict[int, dict[int, frozenset[int]]] = {}

    def of(self, state: int) -> dict[int, frozenset[int]]:
        found = self._moves.get(state)
        if found is None:
            covered, closure = self.covered, self.nfa.closure
            found = self._moves[state] = {}
            for mask, target in self.nfa.edges[state]:
                targets = closure(target)
                for cls in covered[mask]:
                    bucket = found.get(cls)
                    found[cls] = targets if bucket is None or bucket is targets else bucket | targets
        return found


def _subset_tables(nfa: NFA, limits: Limits) -> _Tables:
    """Subset construction over byte classes, pruned; classes numbered in byte order."""
    class_of, covered = _byte_classes(nfa)
    rows, sets, start, live = _subsets(nfa, _Moves(nfa, covered), max(class_of) + 1, limits)
    final = nfa.final
    accepting = [final in members for members in sets]
    distance, longest = _completion_lengths(live.predecessors, accepting)
    return _pruned(_Tables(rows, class_of, accepting, start, distance, longest, live))


def _subsets(
    nfa: NFA, moves: _Moves, num_classes: int, limits: Limits
) -> tuple[list[list[int]], list[frozenset[int]], int, _LiveEdges]:
    """The reachable sets of NFA states (the empty set, dead, first), their rows and live edges."""
    dead: frozenset[int] = frozenset()
    ids: dict[frozenset[int], int] = {dead: 0}
    keys: list[frozenset[int]] = [dead]
    start_key = nfa.closure(nfa.start)
    start = ids.setdefault(start_key, len(keys))
    if start == len(keys):
        keys.append(start_key)
    rows: list[list[int]] = [[0] * num_classes]
    live_targets: list[list[int]] = [[]]
    live_classes: list[tuple[int, ...]] = [()]
    moves_of = moves.of
    for key in islice(keys, 1, None):  # grows while it is walked
        members = iter(key)
        successors = moves_of(next(members))
        following = next(members, None)
        if following is not None:
            successors = dict(successors)
            while following is not None:
                for cls, targets in moves_of(following).items():
                    bucket = successors.get(cls)
                    successors[cls] = targets if bucket is None or bucket is targets else bucket | targets
                following = next(members, None)
        row = [0] * num_classes
        live_row: list[int] = []
        live_row_classes: list[int] = []
        for cls in sorted(successors):  # new states numbered in class order
            target_key = successors[cls]
            if not target_key:
                continue
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
            row[cls] = target
            live_row.append(target)
            live_row_classes.append(cls)
        rows.append(row)
        live_targets.append(live_row)
        live_classes.append(tuple(live_row_classes))
    return rows, keys, start, _LiveEdges(live_targets, live_classes)


def determinize(nfa: NFA, limits: Limits | None = None) -> DFA:
    """Subset construction over byte classes, then pruning (not minimised)."""
    return _subset_tables(nfa, limits or nfa.limits).to_dfa()


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
    distinct live predecessors of every state (``_LiveEdges.predecessors``).

    Shortest: breadth-first backwards from the accepting states (-1 where acceptance is out of
    reach). Longest (meaningful once the DFA is pruned): Kahn's algorithm backwards from the states
    without live successors, -1 where a cycle is reachable and completions are unbounded.
    """
    n = len(predecessors)
    pending = [0] * n  # distinct live successors not yet settled
    for sources in predecessors:
        for source in sources:
            pending[source] += 1
    shortest = _backward_breadth_first(predecessors, accepting)
    longest = [-1] * n
    ready = [s for s in range(1, n) if not pending[s]]
    for s in ready:
        longest[s] = 0
    for t in ready:  # grows while it is walked
        step = longest[t] + 1
        for s in predecessors[t]:
            if longest[s] < step:
                longest[s] = step
            pending[s] -= 1
            if not pending[s]:
                ready.append(s)
    for s in range(1, n):
        if pending[s]:
            longest[s] = -1
    return shortest, longest


def _longest_words(tables: _Tables) -> list[int]:
    """For each live state of a pruned DFA, the length of its longest completion, or -1 when a
    cycle is reachable (completions are then unbounded); -1 for the dead state."""
    if tables.longest is None:
        tables.longest = _completion_lengths(tables.live.predecessors, tables.accepting)[1]
    return tables.longest


def _seed_partition(tables: _Tables) -> list[int]:
    """Blocks by what equivalent states always share: acceptance, shortest and longest completion
    and the classes that lead to a live state. The dead state (distance -1; in a pruned DFA the
    only one) is alone in its block."""
    ids: dict[tuple[bool, int, int, tuple[int, ...]], int] = {}
    return [
        ids.setdefault(key, len(ids))
        for key in zip(
            tables.accepting, tables.distance, _longest_words(tables), tables.live.classes, strict=True
        )
    ]


def _refined_by_successors(live: _LiveEdges, block_of: list[int], max_checks: int) -> tuple[list[int], bool]:
    """Split the blocks of ``block_of`` (in place) until all states of a block have their live
    successors in the same blocks, class by class; ``False`` when ``max_checks`` state
    examinations did not suffice (``block_of`` is then a valid, coarser, partial result).

    The seed must give all states of a block the same live classes (as ``_seed_partition`` does), so
    comparing the blocks of the live targets in class order compares whole rows. A block is
    examined in full once; later only the states whose successors moved to a new block (the
    predecessors of moved states) are examined, against one state of the block that was not: the
    others kept their successors' blocks and still agree with it."""
    targets, predecessors = live.targets, live.predecessors
    blocks: list[set[int]] = [set() for _ in range(max(block_of) + 1)]
    for s, b in enumerate(block_of):
        blocks[b].add(s)
    lookup = block_of.__getitem__
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
            parts: dict[tuple[int, ...], list[int]] = {}
            for s in examined:
                key = tuple(map(lookup, targets[s]))
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
    rows = tables.rows
    block_of = _seed_partition(tables)
    if max(block_of) + 1 == len(rows):  # every state alone already: nothing left to split
        return block_of
    block_of, stable = _refined_by_successors(tables.live, block_of, REFINE_CHECKS_PER_STATE * len(rows))
    if stable:
        return block_of
    return _hopcroft_blocks(rows, block_of)


def _minimal(tables: _Tables, byte_order: Sequence[int], breadth_first: bool = False) -> _Tables:
    """Minimise pruned tables; number the states dead first, then breadth-first from the start,
    following classes in ``byte_order``. ``breadth_first``: the tables are numbered so already (as
    the subset construction numbers them), so when no two states merge they are the answer."""
    if tables.start == 0:
        return tables
    rows = tables.rows
    block_of = _coarsest_partition(tables)
    if breadth_first and max(block_of) + 1 == len(rows):
        return tables
    representative: dict[int, int] = {}
    for s, b in enumerate(block_of):
        representative.setdefault(b, s)
    new_id = {block_of[0]: 0, block_of[tables.start]: 1}
    sequence = [block_of[0], block_of[tables.start]]
    for b in islice(sequence, 1, None):  # grows while it is walked: a breadth-first queue
        row = rows[representative[b]]
        for cls in byte_order:
            tb = block_of[row[cls]]
            if tb not in new_id:
                new_id[tb] = len(new_id)
                sequence.append(tb)
    state_id = [new_id.get(b, -1) for b in block_of]
    lookup = state_id.__getitem__
    members = [representative[b] for b in sequence]
    return _Tables(
        [list(map(lookup, rows[s])) for s in members],
        tables.class_of,
        [tables.accepting[s] for s in members],
        1,
        [tables.distance[s] for s in members],
    )


def _merged_columns(tables: _Tables) -> _Tables:
    """Merge classes whose columns are equal; classes numbered by their smallest byte."""
    rows = tables.rows
    columns = list(zip(*rows, strict=True))
    new_class: dict[tuple[int, ...], int] = {}
    old_to_new = [0] * len(columns)
    kept_columns: list[int] = []
    for old in dict.fromkeys(tables.class_of):  # old classes in order of their first byte
        column = columns[old]
        index = new_class.get(column)
        if index is None:
            index = new_class[column] = len(kept_columns)
            kept_columns.append(old)
        old_to_new[old] = index
    class_of = [old_to_new[c] for c in tables.class_of]
    if kept_columns != list(range(len(columns))):
        rows = [[row[c] for c in kept_columns] for row in rows]
    # the live edges stay valid: merged columns are equal, so their classes are live together
    return _Tables(
        rows, class_of, tables.accepting, tables.start, tables.distance, tables.longest, tables._live
    )


def minimize(dfa: DFA) -> DFA:
    """The minimal DFA equivalent to ``dfa`` (which must be pruned), in canonical numbering."""
    if dfa.start == 0:
        return _empty_dfa()
    order = dfa.class_representatives()
    byte_order = sorted(range(dfa.num_classes), key=lambda c: order[c])
    return _merged_columns(_minimal(_Tables.of(dfa), byte_order)).to_dfa()


def merge_classes(dfa: DFA) -> DFA:
    """Merge byte classes whose columns are equal; classes numbered by their smallest byte."""
    return _merged_columns(_Tables.of(dfa)).to_dfa()


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
    # Classes that no state tells apart are merged before minimising (less to refine) and again
    # after if states were merged (that may make more columns equal). Both number classes by their first byte,
    # so byte order is class order and the canonical numbering is unchanged.
    tables = _merged_columns(tables)
    minimal = _minimal(tables, range(len(tables.rows[0])), breadth_first=True)
    if len(minimal.rows) == len(tables.rows):  # only renumbered: no two columns became equal
        return minimal.to_dfa()
    return _merged_columns(minimal).to_dfa()


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
