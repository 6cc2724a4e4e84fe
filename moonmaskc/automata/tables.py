"""The automaton as grouped live edges, what the subset construction and minimisation work on.

Takes: a ``DFA`` (``Tables.of``) or the subset construction's output. Hands on: ``Tables``, per
state one (class bit set, target) pair per distinct live target, and back to a ``DFA`` with the
dense table built in numpy at the end (``to_dfa``).
"""

from __future__ import annotations

import numpy as np

from moonmaskc.automata.dfa import DFA, _merged_by_key

Groups = list[tuple[int, int]]
SMALL_TABLE_CELLS = 4096


class Tables:
    """A DFA as grouped live edges, dead state 0.

    ``groups[s]`` holds one ``(bits, target)`` pair per distinct live target of state ``s``: bit
    ``c`` of ``bits`` is set when class ``c`` leads there. Pairs are ordered by their lowest class,
    so walking them visits targets in class order; the dead state has none. Classes are numbered by
    their smallest byte (``class_of[byte]``). Per state also ``accepting``, ``distance`` (the
    shortest completion, -1 where out of reach) and ``longest`` (the longest completion, see
    ``distances.completion_lengths``; ``None`` until known), and on demand ``predecessors``. Most
    states have a handful of targets over dozens of classes, so every pass below is over targets,
    not classes; the dense table is built in numpy once, at the end."""

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
        self.longest = longest  # see distances.completion_lengths; None until known
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
    def of(cls, dfa: DFA) -> Tables:
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


def _pruned(tables: Tables) -> Tables:
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
    return Tables(
        pruned,
        tables.num_classes,
        tables.class_of,
        [tables.accepting[s] for s in kept],
        new_id[tables.start],
        [distance[s] for s in kept],
    )
