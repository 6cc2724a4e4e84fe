"""The Thompson NFA written straight into flat lists, for the native subset construction.

Takes: an ``ir.Node`` and ``Limits`` (``build_flat_nfa``), built by the same ``_Builder`` as the
pure ``NFA``. Hands on: ``NativeInput`` (``FlatNFA.native_input``): the flat lists almost raw, as
arrays, for ``_native/determinize.pyx`` ``flat_subsets``, which finds the byte classes and builds
the CSR arrays itself, in C (what ``compile_ir`` runs); or ``NFAArrays`` (``FlatNFA.to_arrays``):
byte classes, CSR byte edges per class, CSR epsilon edges, the important states, built by numpy.

What differs from ``NFA``: states are a counter and edges are appended to flat lists, and an
embedded DFA (``ir.Automaton``, every string format and sub-language a schema reuses) is kept whole
as a block of states and expanded by numpy in ``to_arrays``: its transitions over the global byte
classes are one gather of its dense table, instead of a Python loop over its states. The language
is the same; the state numbering may differ from ``NFA``'s, which the canonical minimal DFA hides.
"""

from __future__ import annotations

from itertools import pairwise
from typing import NamedTuple

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.thompson import NFAArrays, _Builder, nfa_state_limit
from moonmaskc.errors import MalformedArraysError
from moonmaskc.limits import Limits


def _constant(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


_NO_MASKS = _constant(np.zeros((0, 32), dtype=np.uint8))
_NO_BLOCKS = _constant(np.zeros((0, 3), dtype=np.int32))
_NO_SHAPES = _constant(np.zeros((0, 2), dtype=np.int32))
_NO_TABLES = _constant(np.zeros(0, dtype=np.int32))
_NO_BYTE_CLASSES = _constant(np.zeros((0, 256), dtype=np.int32))
_NO_FLAGS = _constant(np.zeros(0, dtype=np.uint8))


class NativeInput(NamedTuple):
    """A ``FlatNFA`` as the arguments of ``_native/determinize.pyx`` ``flat_subsets`` (before
    ``max_states``), in its order. Byte edges: ``edge_source``, ``edge_mask``, ``edge_target``
    int32[E], the mask an index into ``masks`` uint8[M, 32], the distinct masks as little-endian
    bitmaps. Epsilon edges: ``eps_source``, ``eps_target`` int32[P]. Embedded DFAs: ``blocks``
    int32[B, 3] (first state, exit state, DFA index); per distinct DFA, by first use,
    ``dfa_shapes`` int32[K, 2] (states, classes), the tables raveled one after the other into
    ``dfa_transitions`` int32, ``dfa_byte_class`` int32[K, 256], ``dfa_accepting`` uint8 (one
    after the other)."""

    num_states: int
    start: int
    final: int
    edge_source: np.ndarray
    edge_mask: np.ndarray
    edge_target: np.ndarray
    masks: np.ndarray
    eps_source: np.ndarray
    eps_target: np.ndarray
    blocks: np.ndarray
    dfa_shapes: np.ndarray
    dfa_transitions: np.ndarray
    dfa_byte_class: np.ndarray
    dfa_accepting: np.ndarray


class FlatNFA:
    """An NFA as flat lists: byte edges (source, mask, target), epsilon edges (source, target), and
    embedded DFAs as blocks (first state, DFA, exit state); state ``first - 1 + q`` is DFA state
    ``q`` for ``q >= 1``."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._max_states = limits.max_nfa_states
        self.num_states = 0
        self.edge_source: list[int] = []
        self.edge_mask: list[int] = []
        self.edge_target: list[int] = []
        self.eps_source: list[int] = []
        self.eps_target: list[int] = []
        self.blocks: list[tuple[int, DFA, int]] = []
        self.start = self.new_state()
        self.final = -1

    def new_state(self) -> int:
        state = self.num_states
        if state >= self._max_states:
            raise nfa_state_limit(self.limits)
        self.num_states = state + 1
        return state

    def add_edge(self, source: int, mask: int, target: int) -> None:
        self.edge_source.append(source)
        self.edge_mask.append(mask)
        self.edge_target.append(target)

    def add_epsilon(self, source: int, target: int) -> None:
        self.eps_source.append(source)
        self.eps_target.append(target)

    def embed(self, entry: int, dfa: DFA) -> int:
        exit_state = self.new_state()
        if dfa.start == 0:
            return exit_state  # empty language: the exit is unreachable
        first = self.num_states
        if first + dfa.num_states - 1 > self._max_states:
            raise nfa_state_limit(self.limits)
        self.num_states = first + dfa.num_states - 1
        self.add_epsilon(entry, first - 1 + dfa.start)
        self.blocks.append((first, dfa, exit_state))
        return exit_state

    def native_input(self) -> NativeInput:
        """The flat lists as arrays for the native ``flat_subsets`` (see ``NativeInput``): one
        array per list, the distinct masks as bytes, the distinct embedded DFAs stacked. Nothing
        is checked here but what numpy must convert (``MalformedArraysError`` on a mask or a
        number that does not fit); the native code checks every index before use."""
        mask_ids = dict.fromkeys(self.edge_mask, 0)
        for index, mask in enumerate(mask_ids):
            mask_ids[mask] = index
        try:
            masks = (
                np.frombuffer(b"".join([mask.to_bytes(32, "little") for mask in mask_ids]), np.uint8).reshape(
                    len(mask_ids), 32
                )
                if mask_ids
                else _NO_MASKS
            )
            edge_mask = np.fromiter(map(mask_ids.__getitem__, self.edge_mask), np.int32, len(self.edge_mask))
            edge_source = np.array(self.edge_source, dtype=np.int32)
            edge_target = np.array(self.edge_target, dtype=np.int32)
            eps_source = np.array(self.eps_source, dtype=np.int32)
            eps_target = np.array(self.eps_target, dtype=np.int32)
            blocks = _native_blocks(self.blocks)
        except (OverflowError, TypeError, AttributeError) as error:
            raise MalformedArraysError(f"flat NFA: a mask or a state does not fit: {error}") from error
        return NativeInput(
            self.num_states,
            self.start,
            self.final,
            edge_source,
            edge_mask,
            edge_target,
            masks,
            eps_source,
            eps_target,
            *blocks,
        )

    def to_arrays(self) -> NFAArrays:
        n = self.num_states
        masks = _distinct_masks(self.edge_mask, self.blocks)
        class_of, mask_classes = _byte_classes(masks)
        num_classes = int(class_of.max()) + 1
        mask_id = {mask: index for index, mask in enumerate(masks)}
        # plain edges: one entry per (edge, class it covers)
        edge_masks = np.fromiter(map(mask_id.__getitem__, self.edge_mask), np.int64, len(self.edge_mask))
        covers = mask_classes[edge_masks]  # bool[edges, classes]
        rows, columns = np.nonzero(covers)
        sources = [np.asarray(self.edge_source, dtype=np.int64)[rows]]
        classes = [columns.astype(np.int64)]
        targets = [np.asarray(self.edge_target, dtype=np.int64)[rows]]
        has_edge = np.zeros(n, dtype=bool)
        has_edge[np.asarray(self.edge_source, dtype=np.int64)] = True  # an empty-set edge counts
        eps_sources = [np.asarray(self.eps_source, dtype=np.int64)]
        eps_targets = [np.asarray(self.eps_target, dtype=np.int64)]
        representative = _class_representatives(class_of, num_classes)
        for dfa, firsts, exits in _blocks_by_dfa(self.blocks):
            table = dfa.transitions[1:, dfa.byte_class[representative]]  # DFA states 1.. x global classes
            row, column = np.nonzero(table)
            shift = firsts[:, None]  # one copy of the DFA per block, states first .. first + n - 2
            sources.append((row[None, :] + shift).ravel())
            classes.append(np.tile(column.astype(np.int64), len(firsts)))
            targets.append((table[row, column].astype(np.int64)[None, :] + (shift - 1)).ravel())
            live_rows = np.flatnonzero(np.any(table != 0, axis=1))
            has_edge[(live_rows[None, :] + shift).ravel()] = True
            accepting = np.flatnonzero(dfa.accepting[1:])
            eps_sources.append((accepting[None, :] + shift).ravel())
            eps_targets.append(np.repeat(exits, len(accepting)))
        edge_offsets, edge_order = _csr(np.concatenate(sources), n)
        eps_offsets, eps_order = _csr(np.concatenate(eps_sources), n)
        important = has_edge.astype(np.uint8)
        if self.final >= 0:
            important[self.final] = 1
        return NFAArrays(
            num_states=n,
            start=self.start,
            final=self.final,
            num_classes=num_classes,
            class_of=class_of,
            edge_offsets=edge_offsets,
            edge_class=np.ascontiguousarray(np.concatenate(classes)[edge_order], dtype=np.int32),
            edge_target=np.ascontiguousarray(np.concatenate(targets)[edge_order], dtype=np.int32),
            eps_offsets=eps_offsets,
            eps_target=np.ascontiguousarray(np.concatenate(eps_targets)[eps_order], dtype=np.int32),
            important=important,
        )


def build_flat_nfa(node: ir.Node, limits: Limits | None = None) -> FlatNFA:
    """Thompson NFA for ``node`` as flat lists (see the module docstring)."""
    nfa = FlatNFA(limits or Limits())
    nfa.final = _Builder(nfa).build(node, nfa.start)
    return nfa


def _blocks_by_dfa(blocks: list[tuple[int, DFA, int]]) -> list[tuple[DFA, np.ndarray, np.ndarray]]:
    """The blocks grouped by DFA (a schema embeds one string automaton many times): each DFA with
    the first states and exit states of its copies."""
    grouped: dict[int, tuple[DFA, list[int], list[int]]] = {}
    for first, dfa, exit_state in blocks:
        found = grouped.setdefault(id(dfa), (dfa, [], []))
        found[1].append(first)
        found[2].append(exit_state)
    return [
        (dfa, np.asarray(firsts, dtype=np.int64), np.asarray(exits, dtype=np.int64))
        for dfa, firsts, exits in grouped.values()
    ]


def _distinct_masks(edge_masks: list[int], blocks: list[tuple[int, DFA, int]]) -> list[int]:
    """Every distinct byte mask that tells bytes apart: the plain edges' and, per embedded DFA,
    the byte set of each of its classes."""
    masks = dict.fromkeys(edge_masks)
    seen: set[int] = set()
    for _, dfa, _ in blocks:
        if id(dfa) not in seen:
            seen.add(id(dfa))
            masks.update(dict.fromkeys(dfa.class_masks()))
    return list(masks)


def _byte_classes(masks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The coarsest byte classes that no mask tells apart, numbered by smallest byte (int32[256]),
    and which classes each mask covers (bool[masks, classes]). One sweep over the bytes where some
    mask's run starts or ends, each mask owning one bit of a signature toggled there."""
    toggles = {0: 0, 256: 0}
    for index, mask in enumerate(masks):
        bit = 1 << index
        edges = mask ^ (mask << 1)  # bit b set where bytes b - 1 and b differ in membership
        while edges:
            low = edges & -edges
            at = low.bit_length() - 1
            toggles[at] = toggles.get(at, 0) ^ bit
            edges ^= low
    class_of = np.zeros(256, dtype=np.int32)
    class_ids: dict[int, int] = {}
    signature = 0
    for cut, end in pairwise(sorted(toggles)):
        signature ^= toggles[cut]
        class_of[cut:end] = class_ids.setdefault(signature, len(class_ids))
    covers = np.zeros((len(masks), len(class_ids)), dtype=bool)
    for signature, cls in class_ids.items():
        while signature:
            low = signature & -signature
            covers[low.bit_length() - 1, cls] = True
            signature ^= low
    return class_of, covers


def _class_representatives(class_of: np.ndarray, num_classes: int) -> np.ndarray:
    """The smallest byte of each class."""
    representative = np.full(num_classes, 256, dtype=np.int64)
    np.minimum.at(representative, class_of, np.arange(256))
    return representative


def _csr(sources: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64[n + 1]) and the stable order that groups entries by source."""
    order = np.argsort(sources, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(sources, minlength=n), out=offsets[1:])
    return offsets, order


def _native_blocks(
    blocks: list[tuple[int, DFA, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The embedded DFAs for ``flat_subsets``: one (first state, exit state, DFA index) row per
    block, and the distinct DFAs' shapes, transitions (stacked flat), byte classes and acceptance."""
    if not blocks:
        return _NO_BLOCKS, _NO_SHAPES, _NO_TABLES, _NO_BYTE_CLASSES, _NO_FLAGS
    dfa_ids: dict[int, int] = {}
    dfas: list[DFA] = []
    rows: list[tuple[int, int, int]] = []
    for first, dfa, exit_state in blocks:
        dfa_index = dfa_ids.get(id(dfa))
        if dfa_index is None:
            dfa_index = dfa_ids[id(dfa)] = len(dfas)
            dfas.append(dfa)
        rows.append((first, exit_state, dfa_index))
    return (np.array(rows, dtype=np.int32), *stacked_dfas(dfas))


def stacked_dfas(dfas: list[DFA]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The DFAs as ``flat_subsets`` takes them: shapes int32[K, 2], transitions raveled one after
    the other, byte classes int32[K, 256], acceptance uint8 one after the other."""
    if not dfas:
        return _NO_SHAPES, _NO_TABLES, _NO_BYTE_CLASSES, _NO_FLAGS
    return (
        np.array([dfa.transitions.shape for dfa in dfas], dtype=np.int32),
        np.concatenate([dfa.transitions.ravel() for dfa in dfas]),
        np.stack([dfa.byte_class for dfa in dfas]),
        np.concatenate([dfa.accepting for dfa in dfas]).view(np.uint8),
    )
