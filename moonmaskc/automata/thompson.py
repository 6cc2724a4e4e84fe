"""Thompson construction: IR over bytes to an epsilon-NFA over byte sets.

Takes: an ``ir.Node`` and ``Limits``. Hands on: an ``NFA`` with one start and one final state, byte
edges ``(mask, target)`` (``mask`` a 256-bit integer, bit b set = byte b, as in ``ir.ByteSet``) and
epsilon edges, plus ``closure(state)``: the states reachable by epsilon moves that matter to the
subset construction (those with byte edges, and the final state).

Counted repetitions ``x{m,n}`` become m copies of ``x`` and n - m optional copies whose skip edges
jump straight to the exit, so a state set after k bytes never holds more than O(1) copies: this
keeps ``[a-z]{1,2000}`` linear instead of quadratic. Embedded DFAs (``ir.Automaton``) are copied in
state by state.

Fewer states than the textbook construction: the branches of an alternation and the body of a
repetition start at the state they are entered from, not at a fresh state behind an epsilon edge.
That is sound because no construction ever adds an edge *into* the state it starts from (a star
loops back to a loop state of its own, every exit is a fresh state), so what leaves a shared entry
is exactly the union of the branches.

A sequence that spells ``X (S X)*`` (a JSON list: an element, then separator-element pairs) is
built as one loop through a single copy of ``X``: ``X``'s exit leads by ``S`` back to a loop state
of its own, as a star's body does. An embedded automaton as ``X`` is thus copied once, not twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Protocol

import numpy as np

from moonmaskc import ir
from moonmaskc.errors import LimitError, NFAArraysError
from moonmaskc.limits import Limits

if TYPE_CHECKING:
    from moonmaskc.automata.dfa import DFA


@dataclass(frozen=True, eq=False)
class NFAArrays:
    """An ``NFA`` as flat arrays over byte classes, what the native subset construction reads.

    ``class_of``: int32[256], byte -> class (``num_classes`` of them). Byte edges in CSR form, one
    entry per (edge, class it covers): the edges of state ``s`` are ``edge_class[i]``,
    ``edge_target[i]`` for ``edge_offsets[s] <= i < edge_offsets[s + 1]`` (int64[n + 1], int32[E],
    int32[E]). Epsilon edges likewise: ``eps_offsets`` int64[n + 1], ``eps_target`` int32[M].
    ``important``: uint8[n], 1 for the states that ``NFA.closure`` keeps (those with any byte edge,
    even one on the empty set, and the final state), so that the native state sets are the pure
    ones. ``final`` is -1 when the NFA has none."""

    num_states: int
    start: int
    final: int
    num_classes: int
    class_of: np.ndarray
    edge_offsets: np.ndarray
    edge_class: np.ndarray
    edge_target: np.ndarray
    eps_offsets: np.ndarray
    eps_target: np.ndarray
    important: np.ndarray

    def check(self) -> None:
        """Raise ``NFAArraysError`` unless the arrays are safe to hand to native code."""
        n, c = self.num_states, self.num_classes
        if not all(type(value) is int for value in (n, c, self.start, self.final)):
            raise NFAArraysError("NFA arrays: num_states, num_classes, start and final must be ints")
        if not 1 <= n < 2**31 - 1:
            raise NFAArraysError(f"NFA arrays: num_states = {n} is out of range")
        if not 1 <= c <= 256:
            raise NFAArraysError(f"NFA arrays: num_classes = {c} is not in 1..256")
        if not 0 <= self.start < n or not -1 <= self.final < n:
            raise NFAArraysError(f"NFA arrays: start {self.start} or final {self.final} is not a state")
        _check_vector("class_of", self.class_of, np.int32, 256)
        _check_vector("important", self.important, np.uint8, n)
        _check_range("class_of", self.class_of, c)
        for name, offsets, columns in (
            (
                "edge",
                self.edge_offsets,
                (("edge_class", self.edge_class, c), ("edge_target", self.edge_target, n)),
            ),
            ("eps", self.eps_offsets, (("eps_target", self.eps_target, n),)),
        ):
            _check_vector(f"{name}_offsets", offsets, np.int64, n + 1)
            size = int(offsets[n])
            if offsets[0] != 0 or bool(np.any(offsets[1:] < offsets[:-1])):
                raise NFAArraysError(f"NFA arrays: {name}_offsets must start at 0 and never fall")
            for label, column, bound in columns:
                _check_vector(label, column, np.int32, size)
                _check_range(label, column, bound)


def _check_vector(name: str, array: object, dtype: type, size: int) -> None:
    if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape != (size,):
        shown = f"{array.dtype}{list(array.shape)}" if isinstance(array, np.ndarray) else type(array).__name__
        raise NFAArraysError(f"NFA arrays: {name} must be {np.dtype(dtype)}[{size}], not {shown}")
    if not array.flags.c_contiguous:
        raise NFAArraysError(f"NFA arrays: {name} must be contiguous")


def _check_range(name: str, array: np.ndarray, bound: int) -> None:
    if array.size and (int(array.min()) < 0 or int(array.max()) >= bound):
        raise NFAArraysError(f"NFA arrays: {name} holds values outside 0..{bound - 1}")


def nfa_state_limit(limits: Limits) -> LimitError:
    return LimitError(
        "max_states",
        limits.max_states,
        f"the NFA grew past {limits.max_nfa_states} states "
        f"(8 x the DFA state bound) while expanding repetitions",
        flag="--max-states",
    )


class NFA:
    """A Thompson NFA. ``edges[s]`` are (byte mask, target) pairs, ``epsilon[s]`` epsilon targets.
    ``ordered_edges`` holds the states whose edges have disjoint masks, distinct targets, and come
    in order of their smallest byte (the states copied from an embedded DFA)."""

    def __init__(self, limits: Limits) -> None:
        self.edges: list[list[tuple[int, int]]] = []
        self.epsilon: list[list[int]] = []
        self.limits = limits
        self._max_states = limits.max_nfa_states
        self.start = self.new_state()
        self.final = -1
        self.ordered_edges: set[int] = set()
        self._closures: dict[int, frozenset[int]] = {}

    @property
    def num_states(self) -> int:
        return len(self.edges)

    def new_state(self) -> int:
        if len(self.edges) >= self._max_states:
            raise nfa_state_limit(self.limits)
        self.edges.append([])
        self.epsilon.append([])
        return len(self.edges) - 1

    def closure(self, state: int) -> frozenset[int]:
        """States reachable from ``state`` by epsilon moves that have byte edges or are final."""
        cached = self._closures.get(state)
        if cached is not None:
            return cached
        edges, epsilon, final = self.edges, self.epsilon, self.final
        if not epsilon[state]:
            result = frozenset((state,)) if edges[state] or state == final else frozenset()
            self._closures[state] = result
            return result
        seen = {state}
        stack = [state]
        important: list[int] = []
        while stack:
            s = stack.pop()
            if edges[s] or s == final:
                important.append(s)
            for t in epsilon[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        result = frozenset(important)
        self._closures[state] = result
        return result

    def to_arrays(self, class_of: Sequence[int], covered: Mapping[int, int]) -> NFAArrays:
        """The NFA as flat arrays over byte classes (see ``NFAArrays``), given what
        ``classes.byte_classes`` hands on: ``class_of[byte]`` and, for each edge mask, the classes
        it covers as a bit set. Python walks the edges once; the expansion per class is done in
        numpy."""
        n = self.num_states
        num_classes = max(class_of) + 1
        masks: tuple[int, ...] = ()
        targets: tuple[int, ...] = ()
        pairs = list(chain.from_iterable(self.edges))
        if pairs:
            masks, targets = zip(*pairs, strict=True)
        raw_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, self.edges), dtype=np.int64, count=n), out=raw_offsets[1:])
        mask_index: dict[int, int] = {}
        pool: list[int] = []  # the classes of every mask of ``covered``, one mask after the other
        pool_start = np.zeros(len(covered) + 1, dtype=np.int64)
        for index, (mask, bits) in enumerate(covered.items()):
            if bits >> num_classes:
                raise NFAArraysError(
                    f"NFA arrays: an edge mask ({mask:#x}) covers classes past {num_classes}"
                )
            mask_index[mask] = index
            while bits:
                low = bits & -bits
                pool.append(low.bit_length() - 1)
                bits ^= low
            pool_start[index + 1] = len(pool)
        try:
            edge_mask = np.fromiter(map(mask_index.__getitem__, masks), dtype=np.int64, count=len(masks))
        except KeyError as missing:
            raise NFAArraysError(
                f"NFA arrays: no byte classes given for an edge mask ({missing.args[0]:#x})"
            ) from None
        counts = (pool_start[1:] - pool_start[:-1])[edge_mask]
        ends = np.cumsum(counts)
        total = int(ends[-1]) if len(ends) else 0
        # entry j of edge e (e's entries starting at ends[e] - counts[e]) is pool[pool_start[mask] + j]
        shift = np.repeat(pool_start[:-1][edge_mask] - (ends - counts), counts)
        edge_class = np.asarray(pool, dtype=np.int32)[shift + np.arange(total, dtype=np.int64)]
        edge_offsets = np.zeros(n + 1, dtype=np.int64)
        edge_offsets[1:] = np.concatenate(([0], ends))[raw_offsets[1:]]
        eps_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, self.epsilon), dtype=np.int64, count=n), out=eps_offsets[1:])
        important = (raw_offsets[1:] > raw_offsets[:-1]).astype(np.uint8)
        if self.final >= 0:
            important[self.final] = 1
        return NFAArrays(
            num_states=n,
            start=self.start,
            final=self.final,
            num_classes=num_classes,
            class_of=np.asarray(class_of, dtype=np.int32),
            edge_offsets=edge_offsets,
            edge_class=edge_class,
            edge_target=np.repeat(np.array(targets, dtype=np.int32), counts),
            eps_offsets=eps_offsets,
            eps_target=np.fromiter(
                chain.from_iterable(self.epsilon), dtype=np.int32, count=int(eps_offsets[n])
            ),
            important=important,
        )

    def add_edge(self, source: int, mask: int, target: int) -> None:
        self.edges[source].append((mask, target))

    def add_epsilon(self, source: int, target: int) -> None:
        self.epsilon[source].append(target)

    def embed(self, entry: int, dfa: DFA) -> int:
        """Copy ``dfa`` in state by state, entered from ``entry``; return its exit state."""
        exit_state = self.new_state()
        if dfa.start == 0:
            return exit_state  # empty language: the exit is unreachable
        first = self.num_states
        for _ in range(1, dfa.num_states):
            self.new_state()
        self.epsilon[entry].append(first - 1 + dfa.start)
        accepting = dfa.accepting.tolist()
        edges = self.edges
        self.ordered_edges.update(range(first, first + dfa.num_states - 1))
        for q, row in enumerate(dfa.mask_edges()):
            if q == 0:
                continue
            state = first - 1 + q
            edges[state] = [(mask, first - 1 + target) for mask, target in row]  # by smallest byte
            if accepting[q]:
                self.epsilon[state].append(exit_state)
        return exit_state

    def accepts(self, data: bytes) -> bool:
        """Simulate the NFA on ``data`` (a reference for tests; slow)."""
        current = set(self.closure(self.start))
        for byte in data:
            following: set[int] = set()
            for s in current:
                for mask, target in self.edges[s]:
                    if mask >> byte & 1:
                        following |= self.closure(target)
            current = following
            if not current:
                return False
        return self.final in current


def build_nfa(node: ir.Node, limits: Limits | None = None) -> NFA:
    """Thompson NFA for ``node``."""
    nfa = NFA(limits or Limits())
    nfa.final = _Builder(nfa).build(node, nfa.start)
    return nfa


class NFAStore(Protocol):
    """What the builder writes into: the pure ``NFA`` (per-state lists) or ``FlatNFA`` (flat lists,
    embedded automata kept whole until ``to_arrays``)."""

    def new_state(self) -> int: ...

    def add_edge(self, source: int, mask: int, target: int) -> None: ...

    def add_epsilon(self, source: int, target: int) -> None: ...

    def embed(self, entry: int, dfa: DFA) -> int: ...


class _Builder:
    def __init__(self, nfa: NFAStore) -> None:
        self.nfa = nfa

    def build(self, node: ir.Node, entry: int) -> int:
        """Add ``node`` starting at ``entry``; return its exit state."""
        nfa = self.nfa
        if isinstance(node, ir.ByteSet):
            exit_state = nfa.new_state()
            nfa.add_edge(entry, node.mask, exit_state)
            return exit_state
        if isinstance(node, ir.Seq):
            return self._seq(node.items, entry)
        if isinstance(node, ir.Alt):
            exit_state = nfa.new_state()
            for item in node.items:  # every branch leaves from the entry itself (see the docstring)
                nfa.add_epsilon(self.build(item, entry), exit_state)
            return exit_state
        if isinstance(node, ir.Repeat):
            return self._repeat(node, entry)
        return nfa.embed(entry, node.dfa)

    def _seq(self, items: tuple[ir.Node, ...], entry: int) -> int:
        loops = _separated_loops(items)
        current = entry
        index = 0
        while index < len(items):
            found = loops.get(index)
            if found is None:
                current = self.build(items[index], current)
                index += 1
                continue
            repeat_index, separator = found
            current = self._separated_loop(items[index:repeat_index], separator, current)
            index = repeat_index + 1
        return current

    def _separated_loop(self, body: tuple[ir.Node, ...], separator: tuple[ir.Node, ...], entry: int) -> int:
        """``body (separator body)*`` with one copy of ``body``: the separator leads back to a loop
        state of its own, as in a star."""
        nfa = self.nfa
        loop = nfa.new_state()
        nfa.add_epsilon(entry, loop)
        body_exit = self._seq(body, loop)
        nfa.add_epsilon(self._seq(separator, body_exit), loop)
        exit_state = nfa.new_state()
        nfa.add_epsilon(body_exit, exit_state)
        return exit_state

    def _repeat(self, node: ir.Repeat, entry: int) -> int:
        nfa = self.nfa
        current = entry
        if node.max is None and node.min:  # X{m,} = X{m-1} X+, and X+ = X (X)*: one loop, one copy
            for _ in range(node.min - 1):
                current = self.build(node.item, current)
            return self._separated_loop((node.item,), (), current)
        for _ in range(node.min):
            current = self.build(node.item, current)
        if node.max is None:
            loop = nfa.new_state()  # a state of its own: the body returns here, never to ``current``
            nfa.add_epsilon(current, loop)
            nfa.add_epsilon(self.build(node.item, loop), loop)
            exit_state = nfa.new_state()
            nfa.add_epsilon(loop, exit_state)
            return exit_state
        exit_state = nfa.new_state()
        for _ in range(node.max - node.min):
            nfa.add_epsilon(current, exit_state)
            current = self.build(node.item, current)
        nfa.add_epsilon(current, exit_state)
        return exit_state


def _separated_loops(items: tuple[ir.Node, ...]) -> dict[int, tuple[int, tuple[ir.Node, ...]]]:
    """Where ``items`` spell ``X (S X)*`` (as JSON arrays and objects do: an element, then any
    number of separator-element pairs): the index where ``X`` starts -> (the index of the
    repetition, ``S``). Built as one loop, ``X`` is copied into the NFA once instead of twice."""
    loops: dict[int, tuple[int, tuple[ir.Node, ...]]] = {}
    taken = 0
    for index, item in enumerate(items):
        if not (isinstance(item, ir.Repeat) and item.min == 0 and item.max is None):
            continue
        body = item.item.items if isinstance(item.item, ir.Seq) else (item.item,)
        for split in range(1, len(body)):  # the longest repeated part first
            length = len(body) - split
            start = index - length
            if start >= taken and items[start:index] == body[split:]:
                loops[start] = (index, body[:split])
                taken = index + 1
                break
    return loops
