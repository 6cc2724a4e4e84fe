"""Subset construction over byte classes, then pruning.

Takes: an ``NFA`` and ``Limits``. Hands on: ``Tables`` (grouped live edges; see
``moonmaskc.automata.tables``), states numbered breadth-first from the start in class order, or a
``DFA`` through ``determinize``, or dense arrays through ``subset_arrays``.

``determinize`` and ``subset_arrays`` run the native construction (``_native/determinize.pyx``,
over ``NFA.to_arrays``) when it is built and not switched off (``MOONMASKC_PURE=1``), else the pure
one; both give the same pruned DFA, numbered the same way. ``flat_subsets`` runs it straight from a
``FlatNFA`` (``FlatNFA.native_input``): byte classes, CSR arrays and subsets in one native call;
``native_input_subsets`` does the same from any ``NativeInput`` (also made by the native Thompson
builder). Unpruned, the pure construction (``pure_subsets``) and the native one
(``native_subsets``) give the same arrays.

One step of the pure construction stands on its own, ``united_groups``: where each byte class
leads from several NFA states (or sets of them) at once, one (class bit set, NFA state set) pair
per distinct set.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from types import ModuleType

import numpy as np

from moonmaskc.automata.classes import byte_classes
from moonmaskc.automata.dfa import DFA, _merged_by_key
from moonmaskc.automata.distances import completion_lengths
from moonmaskc.automata.flat_nfa import FlatNFA, NativeInput
from moonmaskc.automata.native import native
from moonmaskc.automata.tables import Groups, Tables, _dense, _pruned
from moonmaskc.automata.thompson import NFA, NFAArrays
from moonmaskc.errors import LimitError, MalformedArraysError
from moonmaskc.limits import Limits

GroupedSets = list[tuple[int, frozenset[int]]]


class _Moves:
    """Per NFA state, where its byte classes lead: ``groups(state)`` is one ``(bits, set)`` pair per
    distinct non-empty set of NFA states (the union of the closures of the edge targets on those
    classes), ordered by lowest class (see ``Tables``)."""

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
                found = united_groups(
                    [(covered[mask], targets)]
                    for mask, target in edges
                    if covered[mask] and (targets := closure(target))
                )
            self._groups[state] = found
        return found


def united_groups(alternatives: Iterable[GroupedSets]) -> GroupedSets:
    """Where each class leads from any of several sources (NFA states, or sets of them).

    Takes: one grouped list per source, ``(bits, targets)`` pairs with bit ``c`` of ``bits`` set
    when class ``c`` leads to the NFA states ``targets``, the classes of one source's pairs
    disjoint. Returns: the same for all sources together, class ``c`` leading to the union of the
    sets of every source pair holding it: one pair per distinct set, the classes of the pairs
    disjoint, ordered by lowest class. Sources that move on disjoint classes (a state inside an
    embedded automaton beside the state that follows it, say) put their groups side by side; where
    two move on one class, every pair of their groups that meets leads to the union of the two
    sets."""
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


def _subset_tables(nfa: NFA, limits: Limits) -> Tables:
    """Subset construction over byte classes, pruned; classes numbered in byte order."""
    class_of, covered = byte_classes(nfa)
    groups, sets, start = _subsets(nfa, _Moves(nfa, covered), limits)
    final = nfa.final
    accepting = [final in members for members in sets]
    tables = Tables(groups, max(class_of) + 1, class_of, accepting, start, [])
    tables.distance, tables.longest = completion_lengths(tables.predecessors, accepting)
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
        pairs = groups_of(next(iter(key))) if len(key) == 1 else united_groups(map(groups_of, key))
        row: Groups = []
        for bits, target_key in pairs:  # by lowest class: new states numbered in class order
            target = ids.get(target_key)
            if target is None:
                target = len(keys)
                if target > limits.max_states:
                    raise _too_many_states(limits)
                ids[target_key] = target
                keys.append(target_key)
            row.append((bits, target))
        all_groups.append(row)
    return all_groups, keys, start


def _too_many_states(limits: Limits) -> LimitError:
    return LimitError(
        "max_states",
        limits.max_states,
        f"the DFA needs more than {limits.max_states} states",
        flag="--max-states",
    )


def determinize(nfa: NFA, limits: Limits | None = None) -> DFA:
    """Subset construction over byte classes, then pruning (not minimised, classes not merged).
    The native construction when built, else the pure one: the same DFA either way."""
    limits = limits or nfa.limits
    module = native("determinize")
    if module is None:
        return _subset_tables(nfa, limits).to_dfa(merge_columns=False)
    transitions, class_of, accepting, start, distance = _native_pruned(module, nfa, limits)
    return DFA(transitions, class_of, accepting, start, distance)


def subset_arrays(nfa: NFA, limits: Limits | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The subset construction as dense arrays, *pruned* on both paths (every state but 0 can reach
    acceptance): ``(transitions int32[D, C], class_of int32[256], accepting bool[D], start)``,
    states numbered breadth first from the start in class order, classes by their smallest byte
    (not merged). Native when built, else the pure ``_subset_tables``; the same arrays either way."""
    limits = limits or nfa.limits
    module = native("determinize")
    if module is None:
        tables = _subset_tables(nfa, limits)
        return (
            tables.transitions(),
            np.array(tables.class_of, dtype=np.int32),
            np.array(tables.accepting, dtype=bool),
            tables.start,
        )
    transitions, class_of, accepting, start, _ = _native_pruned(module, nfa, limits)
    return transitions, class_of, accepting, start


def native_subsets(arrays: NFAArrays, limits: Limits) -> tuple[np.ndarray, np.ndarray, int]:
    """The native subset construction on checked arrays, *unpruned*: ``(transitions int32[D, C],
    accepting bool[D], start)``, state 0 the empty set. Raises ``NFAArraysError`` on malformed
    arrays, ``LimitError`` past ``limits.max_states``, ``RuntimeError`` when the native core is not
    built (or ``MOONMASKC_PURE`` is set)."""
    module = native("determinize")
    if module is None:
        raise RuntimeError("the native determinize module is not built (or MOONMASKC_PURE is set)")
    return _native_unpruned(module, arrays, limits)


def pure_subsets(nfa: NFA, limits: Limits | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """The pure subset construction, *unpruned*: ``(transitions int32[D, C], accepting bool[D],
    start)``, state 0 the empty set, the others the reachable sets of NFA states numbered breadth
    first from the start in class order, classes those of ``byte_classes(nfa)``. The same arrays
    as ``native_subsets`` on ``nfa.to_arrays(*byte_classes(nfa))``. Raises ``LimitError`` past
    ``limits.max_states`` (default: ``nfa.limits``)."""
    limits = limits or nfa.limits
    class_of, covered = byte_classes(nfa)
    groups, sets, start = _subsets(nfa, _Moves(nfa, covered), limits)
    final = nfa.final
    accepting = np.array([final in members for members in sets], dtype=bool)
    return _dense(groups, max(class_of) + 1), accepting, start


def flat_subsets(flat: FlatNFA, limits: Limits) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """The native subset construction straight from a flat NFA, *unpruned*: ``(transitions
    int32[D, C], accepting bool[D], start, class_of int32[256])``, the same as ``native_subsets``
    on ``flat.to_arrays()`` (whose ``class_of`` this is). Raises ``MalformedArraysError`` on
    malformed flat lists (checked in the native code), ``LimitError`` past ``limits.max_states``,
    ``RuntimeError`` when the native core is not built (or ``MOONMASKC_PURE`` is set)."""
    module = native("determinize")
    if module is None:
        raise RuntimeError("the native determinize module is not built (or MOONMASKC_PURE is set)")
    transitions, accepting, start, class_of = native_input_subsets(module, flat.native_input(), limits)
    return transitions, accepting.view(bool), start, class_of


def native_input_subsets(
    module: ModuleType, inputs: NativeInput, limits: Limits
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """The native subset construction on a flat NFA given as ``NativeInput`` (from
    ``FlatNFA.native_input`` or the native Thompson builder), *unpruned*: ``(transitions
    int32[D, C], accepting uint8[D], start, class_of int32[256])``, as ``flat_subsets`` (which
    hands on accepting as bool). ``module`` is the native ``determinize`` module
    (``native("determinize")``), which checks every index, shape and dtype of ``inputs`` before
    use: a malformed input (its ``ValueError``, or a ``TypeError`` / ``OverflowError`` for an
    argument of the wrong kind) is a ``MalformedArraysError``, more than ``limits.max_states``
    states a ``LimitError``."""
    try:
        transitions, accepting, start, class_of = module.flat_subsets(*inputs, limits.max_states)
    except module.StateLimit:
        raise _too_many_states(limits) from None
    except (ValueError, TypeError, OverflowError) as error:
        raise MalformedArraysError(f"flat NFA: {error}") from error
    return transitions, accepting, start, class_of


def _native_unpruned(
    module: ModuleType, arrays: NFAArrays, limits: Limits
) -> tuple[np.ndarray, np.ndarray, int]:
    arrays.check()  # nothing malformed reaches native code
    try:
        transitions, accepting, start = module.subsets(
            arrays.num_states,
            arrays.start,
            arrays.final,
            arrays.num_classes,
            arrays.edge_offsets,
            arrays.edge_class,
            arrays.edge_target,
            arrays.eps_offsets,
            arrays.eps_target,
            arrays.important,
            limits.max_states,
        )
    except module.StateLimit:
        raise _too_many_states(limits) from None
    return transitions, accepting.view(bool), int(start)


def _native_pruned(
    module: ModuleType, nfa: NFA, limits: Limits
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """Native subsets, pruned as ``_pruned`` prunes (the states that cannot reach acceptance go,
    the others keep their order): transitions, class_of, accepting, start, distance."""
    class_of, covered = byte_classes(nfa)
    arrays = nfa.to_arrays(class_of, covered)
    transitions, accepting, start = _native_unpruned(module, arrays, limits)
    distance = module.distances(transitions, accepting.view(np.uint8))
    alive = distance >= 0
    alive[0] = True
    if not alive.all():
        new_id = np.cumsum(alive, dtype=np.int32) - 1
        new_id[~alive] = 0
        kept = np.flatnonzero(alive)
        transitions = new_id[transitions[kept]]
        accepting, distance, start = accepting[kept], distance[kept], int(new_id[start])
    return transitions, arrays.class_of, accepting, start, distance
