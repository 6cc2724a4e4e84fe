"""The DFA over bytes that every stage hands on, and how to run it.

Takes: dense arrays. Hands on: a ``DFA`` with
- ``transitions``: int32[num_states, num_classes], ``byte_class``: int32[256] (byte -> column);
- state 0 is the dead state: every transition leads to itself, it never accepts;
- every other state can reach acceptance (once pruned), so a step into state 0 means the prefix
  can never be completed;
- ``distance``: int32[num_states], the fewest bytes from each state to acceptance (-1 for state 0);
- ``accepting``: bool[num_states]; ``start``: the start state (0 when the language is empty).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from moonmaskc.automata.counted import Regions
    from moonmaskc.automata.nested import NestRegions

_Key = TypeVar("_Key", int, frozenset[int])


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
        self._class_masks: list[int] | None = None
        self.regions: Regions | None = None  # counted regions (``automata.counted``), if any
        self.nests: NestRegions | None = None  # nest regions (``automata.nested``), if any

    @property
    def distance(self) -> np.ndarray:
        """Fewest bytes from each state to acceptance (-1 where none), computed on first use."""
        if self._distance is None:
            from moonmaskc.automata.distances import shortest_distances

            self._distance = shortest_distances(self.transitions, self.accepting)
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
        walk died, the offset of the byte that led into the dead state (else ``None``). With
        counted regions the counter runs beside (from 0), and a byte it forbids ends the walk;
        with nest regions their stack runs beside (``automata.nested``)."""
        if self.regions is not None or self.nests is not None:
            found, _, died_at = self.walk_counted(data, state)
            return found, died_at
        rows, classes = self._tables()
        current = self.start if state is None else state
        if current == 0:
            return 0, 0
        for offset, byte in enumerate(data):
            current = rows[current][classes[byte]]
            if current == 0:
                return 0, offset
        return current, None

    def walk_counted(
        self, data: bytes, state: int | None = None, count: int = 0
    ) -> tuple[int, int, int | None]:
        """``walk`` with the counter of the counted regions: the final state, the final counter
        and the offset of the byte that died (the DFA's dead state or the counter's bound). In a
        nest region the register is the region's stack instead (the regions never overlap)."""
        rows, classes = self._tables()
        regions, nests = self.regions, self.nests
        current = self.start if state is None else state
        if current == 0:
            return 0, 0, 0
        for offset, byte in enumerate(data):
            target = rows[current][classes[byte]]
            if nests is not None and nests.region[current] >= 0:
                moved = nests.step(current, byte, target, count)
                if moved is None:
                    return 0, 0, offset
                current, count = moved
                continue
            if target == 0:
                return 0, 0, offset
            if regions is not None:
                stepped = regions.counter_step(current, target, count)
                if stepped is None:
                    return 0, 0, offset
                count = stepped
            current = target
        return current, count, None

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
            class_masks = self.class_masks()
            by_first_byte = sorted(
                range(self.num_classes), key=lambda cls: class_masks[cls] & -class_masks[cls]
            )
            self._mask_edges = [
                _merged_by_key((class_masks[cls], row[cls]) for cls in by_first_byte if row[cls])
                for row in self.transitions.tolist()
            ]
        return self._mask_edges

    def class_masks(self) -> list[int]:
        """The byte set of each class as a 256-bit integer (bit b set = byte b), computed once."""
        if self._class_masks is None:
            masks = [0] * self.num_classes
            for b, cls in enumerate(self.byte_class.tolist()):
                masks[cls] |= 1 << b
            self._class_masks = masks
        return self._class_masks

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

    def cost(self, state: int, count: int = 0) -> int:
        """The fewest bytes from ``state`` (with counter ``count`` in a counted region) to
        acceptance; -1 from the dead state."""
        distance = int(self.distance[state])
        if state == 0:
            return distance
        if self.nests is not None and self.nests.region[state] >= 0:
            return distance + self.nests.entries(count)  # one closing byte per stack entry
        if self.regions is None:
            return distance
        return distance + self.regions.deficit(state, count)

    def next_counter(self, state: int, target: int, count: int) -> int | None:
        """The counter after ``state -> target`` (``count`` before), None when it forbids the edge;
        ``count`` unchanged without counted regions."""
        return count if self.regions is None else self.regions.counter_step(state, target, count)

    def step_register(self, state: int, byte: int, register: int) -> tuple[int, int] | None:
        """The state and register (a counted region's counter, a nest region's stack) after
        ``byte`` from ``state``; None when the byte is refused."""
        rows, classes = self._tables()
        target = rows[state][classes[byte]]
        if self.nests is not None and self.nests.region[state] >= 0:
            return self.nests.step(state, byte, target, register)  # a pop's table edge is dead
        if target == 0:
            return None
        after = self.next_counter(state, target, register)
        return None if after is None else (target, after)

    def shortest_completion(self, state: int, count: int = 0) -> bytes | None:
        """The smallest (by byte value) of the shortest byte strings leading to acceptance (from
        ``state`` with counter ``count`` in a counted region)."""
        if state == 0:
            return None
        out = bytearray()
        while not self.accepting[state]:
            want = self.cost(state, count) - 1
            for b in range(256):
                moved = self.step_register(state, b, count)
                if moved is not None and self.cost(*moved) == want:
                    out.append(b)
                    state, count = moved
                    break
            else:  # only a corrupted DFA has no byte one step nearer
                return None
        return bytes(out)


def _merged_by_key(pairs: Iterable[tuple[int, _Key]]) -> list[tuple[int, _Key]]:
    """``(bits, key)`` pairs with the bits of equal keys or-ed together, each key in the place of
    its first pair (so pairs in class order stay in class order)."""
    merged: dict[_Key, int] = {}
    for bits, key in pairs:
        merged[key] = merged.get(key, 0) | bits
    return [(bits, key) for key, bits in merged.items()]
