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

from bisect import bisect_right
from collections import deque
from collections.abc import Sequence

import numpy as np

from moonmaskc import ir
from moonmaskc.errors import LimitError
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


def _reverse_edges(transitions: np.ndarray) -> list[list[int]]:
    reverse: list[list[int]] = [[] for _ in range(transitions.shape[0])]
    for source, row in enumerate(transitions.tolist()):
        for target in set(row):
            reverse[target].append(source)
    return reverse


def _distances(transitions: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Breadth-first search backwards from the accepting states; -1 where unreachable."""
    n = transitions.shape[0]
    distance = np.full(n, -1, dtype=np.int32)
    reverse = _reverse_edges(transitions)
    queue = deque(int(s) for s in np.flatnonzero(accepting))
    for s in queue:
        distance[s] = 0
    dist_list = distance.tolist()
    while queue:
        t = queue.popleft()
        for s in reverse[t]:
            if dist_list[s] < 0:
                dist_list[s] = dist_list[t] + 1
                queue.append(s)
    return np.asarray(dist_list, dtype=np.int32)


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
# Subset construction
# ---------------------------------------------------------------------------------------------


def _byte_classes(nfa: NFA) -> tuple[np.ndarray, list[int]]:
    cuts = {0}
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            cuts.add(lo)
            if hi < 255:
                cuts.add(hi + 1)
    ordered = sorted(cuts)
    byte_class = np.array([bisect_right(ordered, b) - 1 for b in range(256)], dtype=np.int32)
    return byte_class, ordered


def determinize(nfa: NFA, limits: Limits | None = None) -> DFA:
    """Subset construction over byte classes, then pruning (not minimised)."""
    limits = limits or nfa.limits
    byte_class, cuts = _byte_classes(nfa)
    num_classes = len(cuts)
    class_of = byte_class.tolist()
    # Per NFA state: (first class, last class, closure of the target).
    class_edges: dict[int, list[tuple[int, int, frozenset[int]]]] = {}

    def edges_of(state: int) -> list[tuple[int, int, frozenset[int]]]:
        cached = class_edges.get(state)
        if cached is None:
            cached = [(class_of[lo], class_of[hi], nfa.closure(t)) for lo, hi, t in nfa.edges[state]]
            class_edges[state] = cached
        return cached

    dead: frozenset[int] = frozenset()
    ids: dict[frozenset[int], int] = {dead: 0}
    sets: list[frozenset[int]] = [dead]
    start_set = nfa.closure(nfa.start)
    start = ids.setdefault(start_set, len(sets))
    if start == len(sets):
        sets.append(start_set)
    rows: list[list[int]] = [[0] * num_classes]
    index = 1
    while index < len(sets):
        members = sets[index]
        index += 1
        successors: list[set[int] | None] = [None] * num_classes
        for s in members:
            for first, last, closure in edges_of(s):
                for cls in range(first, last + 1):
                    bucket = successors[cls]
                    if bucket is None:
                        successors[cls] = set(closure)
                    else:
                        bucket |= closure
        row = [0] * num_classes
        for cls, bucket in enumerate(successors):
            if bucket:
                key = frozenset(bucket)
                target = ids.get(key)
                if target is None:
                    target = len(sets)
                    if target > limits.max_states:
                        raise LimitError(
                            "max_states",
                            limits.max_states,
                            f"the DFA needs more than {limits.max_states} states",
                            flag="--max-states",
                        )
                    ids[key] = target
                    sets.append(key)
                row[cls] = target
        rows.append(row)
    transitions = np.array(rows, dtype=np.int32).reshape(len(sets), num_classes)
    accepting = np.array([nfa.final in members for members in sets], dtype=bool)
    return prune(DFA(transitions, byte_class, accepting, start))


# ---------------------------------------------------------------------------------------------
# Minimisation
# ---------------------------------------------------------------------------------------------


def _hopcroft_blocks(transitions: Sequence[Sequence[int]], accepting: Sequence[bool]) -> list[int]:
    """Hopcroft's partition refinement on a pruned DFA whose state 0 is dead.

    The dead state sits alone in its block and never serves as a splitter: once the partition is
    stable under every live block it is stable under the dead one too (its preimage is the
    complement of the others'), so only live transitions are ever visited.
    """
    n = len(transitions)
    incoming: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for source, row in enumerate(transitions):
        if source == 0:
            continue
        for cls, target in enumerate(row):
            if target:
                incoming[target].append((cls, source))
    accepting_states = {s for s in range(1, n) if accepting[s]}
    other_states = set(range(1, n)) - accepting_states
    blocks: list[set[int]] = [{0}] + [b for b in (accepting_states, other_states) if b]
    block_of = [0] * n
    for index, block in enumerate(blocks):
        for s in block:
            block_of[s] = index
    pending = set(range(1, len(blocks)))
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


def minimize(dfa: DFA) -> DFA:
    """The minimal DFA equivalent to ``dfa`` (which must be pruned), in canonical numbering."""
    if dfa.start == 0:
        return _empty_dfa()
    rows = dfa.transitions.tolist()
    block_of = _hopcroft_blocks(rows, dfa.accepting.tolist())
    # Renumber: dead block 0, then breadth-first from the start in byte order.
    representative: dict[int, int] = {}
    for s, b in enumerate(block_of):
        representative.setdefault(b, s)
    order = dfa.class_representatives()
    byte_order = sorted(range(dfa.num_classes), key=lambda c: order[c])
    new_id = {block_of[0]: 0}
    queue = deque([block_of[dfa.start]])
    new_id.setdefault(block_of[dfa.start], 1)
    sequence = [block_of[0], block_of[dfa.start]]
    while queue:
        b = queue.popleft()
        row = rows[representative[b]]
        for cls in byte_order:
            tb = block_of[row[cls]]
            if tb not in new_id:
                new_id[tb] = len(new_id)
                sequence.append(tb)
                queue.append(tb)
    table = np.array(
        [[new_id[block_of[t]] for t in rows[representative[b]]] for b in sequence], dtype=np.int32
    )
    members = [representative[b] for b in sequence]
    return merge_classes(DFA(table, dfa.byte_class, dfa.accepting[members], 1, dfa.distance[members]))


def merge_classes(dfa: DFA) -> DFA:
    """Merge byte classes whose columns are equal; classes numbered by their smallest byte."""
    columns = [tuple(column) for column in dfa.transitions.T.tolist()]
    new_class: dict[tuple[int, ...], int] = {}
    old_to_new: list[int] = [0] * dfa.num_classes
    kept_columns: list[int] = []
    for old in dict.fromkeys(dfa.byte_class.tolist()):  # old classes in order of their first byte
        column = columns[old]
        index = new_class.get(column)
        if index is None:
            index = new_class[column] = len(kept_columns)
            kept_columns.append(old)
        old_to_new[old] = index
    byte_class = np.asarray(old_to_new, dtype=np.int32)[dfa.byte_class]
    transitions = dfa.transitions[:, kept_columns]
    return DFA(transitions, byte_class, dfa.accepting, dfa.start, dfa.distance)


def _empty_dfa() -> DFA:
    return DFA(np.zeros((1, 1), dtype=np.int32), np.zeros(256, dtype=np.int32), np.zeros(1, dtype=bool), 0)


def compile_ir(node: ir.Node, limits: Limits | None = None) -> DFA:
    """IR to minimal DFA: Thompson NFA, subset construction, pruning, minimisation."""
    limits = limits or Limits()
    return minimize(determinize(build_nfa(node, limits), limits))


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
