"""Boolean operations on DFAs by product construction.

Takes: pruned DFAs (``moonmaskc.automata.DFA``, dead state 0) and ``Limits``. Hands on: new minimal DFAs
for intersection, union, difference, "exactly one of", and emptiness / disjointness answers.

The product walks tuples of states reachable from the tuple of start states over the joint byte
classes; a tuple whose combination can never accept (whatever the live members do next) is sent to
the dead state at once, so intersections stay small.

The walk runs in the native core (``moonmaskc.automata._native.product``) when it is built and not
switched off (``MOONMASKC_PURE=1``), for up to ``NATIVE_MAX_DFAS`` automata; else in Python (numpy
for two automata). Both number the tuples alike, and the minimal DFAs are identical. Malformed DFA
arrays raise ``MalformedDFAError`` on both paths.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from types import ModuleType

import numpy as np

from moonmaskc.automata.counted import check_product_operands
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.distances import prune
from moonmaskc.automata.minimize import minimize
from moonmaskc.automata.native import native
from moonmaskc.errors import LimitError, MalformedDFAError
from moonmaskc.limits import Limits

AcceptRule = Callable[[Sequence[bool]], bool]
_MAX_LIVE_FOR_DEADNESS_CHECK = 12
# The native walk takes the accept and hopeless rules as tables of 2^m entries; past this many
# automata the pure walk (which decides them lazily) runs instead.
NATIVE_MAX_DFAS = 16


def _check_dfa(dfa: DFA, position: int) -> None:
    """Raise ``MalformedDFAError`` unless ``dfa``'s arrays are what ``DFA`` promises."""

    def fail(reason: str) -> MalformedDFAError:
        return MalformedDFAError(f"automaton {position} of a product is malformed: {reason}")

    transitions, byte_class, accepting = dfa.transitions, dfa.byte_class, dfa.accepting
    for name, array, dtype in (
        ("transitions", transitions, np.int32),
        ("byte_class", byte_class, np.int32),
        ("accepting", accepting, np.bool_),
    ):
        if not isinstance(array, np.ndarray) or array.dtype != dtype:
            raise fail(f"{name} must be a numpy array of {np.dtype(dtype).name}")
        if not array.flags.c_contiguous:
            raise fail(f"{name} must be C-contiguous")
    if transitions.ndim != 2 or transitions.shape[0] < 1 or transitions.shape[1] < 1:
        raise fail(f"transitions must be 2-D with at least one state and one class, not {transitions.shape}")
    num_states, num_classes = transitions.shape
    if byte_class.shape != (256,):
        raise fail(f"byte_class must have 256 entries, not shape {byte_class.shape}")
    if accepting.shape != (num_states,):
        raise fail(f"accepting must have one flag per state ({num_states}), not shape {accepting.shape}")
    if int(transitions.min()) < 0 or int(transitions.max()) >= num_states:
        raise fail(f"a transition leads outside the {num_states} states")
    if int(byte_class.min()) < 0 or int(byte_class.max()) >= num_classes:
        raise fail(f"a byte class lies outside the {num_classes} columns")
    if not isinstance(dfa.start, int | np.integer) or not 0 <= dfa.start < num_states:
        raise fail(f"start state {dfa.start} is outside the {num_states} states")
    if accepting[0] or transitions[0].any():
        raise fail("state 0 must be dead: never accepting, every transition back to 0")


def _limit_error(count: int, limits: Limits) -> LimitError:
    return LimitError(
        "max_states",
        limits.max_states,
        f"a product of {count} automata needs more than {limits.max_states} states",
        flag="--max-states",
    )


def _joint_classes(dfas: Sequence[DFA]) -> tuple[np.ndarray, np.ndarray]:
    """Joint byte classes: (byte -> joint class, joint class -> per-DFA class columns)."""
    stacked = np.stack([d.byte_class for d in dfas], axis=1)  # 256 x m
    if len(dfas) <= 8 and stacked.size and 0 <= stacked.min() and stacked.max() < 256:
        # Each row as one integer, the first DFA's class in the highest byte: the sorted distinct
        # keys are the sorted distinct rows (what ``np.unique(axis=0)`` gives, a sort of 1-D keys).
        keys = np.zeros(len(stacked), dtype=np.uint64)
        for column in range(stacked.shape[1]):
            keys = (keys << np.uint64(8)) | stacked[:, column].astype(np.uint64)
        _, first_of_key, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return inverse.reshape(-1).astype(np.int32), stacked[first_of_key]
    unique_rows, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int32), unique_rows


def _hopeless_rule(accept: AcceptRule) -> Callable[[tuple[bool, ...]], bool]:
    """Whether a tuple whose members are live as flagged can never accept, whatever the live
    members do next (cached per pattern; undecided, so False, past a dozen live members)."""
    cache: dict[tuple[bool, ...], bool] = {}

    def hopeless(live: tuple[bool, ...]) -> bool:
        cached = cache.get(live)
        if cached is None:
            live_positions = [i for i, flag in enumerate(live) if flag]
            if len(live_positions) > _MAX_LIVE_FOR_DEADNESS_CHECK:
                cached = False
            else:
                cached = True
                for flags in itertools.product((False, True), repeat=len(live_positions)):
                    full = [False] * len(live)
                    for position, flag in zip(live_positions, flags, strict=True):
                        full[position] = flag
                    if accept(full):
                        cached = False
                        break
            cache[live] = cached
        return cached

    return hopeless


def _rule_tables(accept: AcceptRule, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``accept`` and the hopeless rule of ``_hopeless_rule`` as uint8 tables over the 2^count bit
    patterns (bit i = member i): whether a tuple accepts, by its accepting members; whether it can
    never accept, by its live members. A tuple is hopeless when no set of its live members accepts
    (found for all patterns at once by an OR over subsets), undecided (so not hopeless) past
    ``_MAX_LIVE_FOR_DEADNESS_CHECK`` live members, as ``_hopeless_rule`` says."""
    patterns = np.arange(1 << count, dtype=np.int64)
    members = ((patterns[:, None] >> np.arange(count)) & 1).astype(bool)
    accepts = np.array([bool(accept(flags)) for flags in members.tolist()], dtype=bool)
    some_subset_accepts = accepts.copy()
    for i in range(count):
        halves = some_subset_accepts.reshape(-1, 2, 1 << i)  # [:, 1, :] has bit i set
        halves[:, 1, :] |= halves[:, 0, :]
    hopeless = ~some_subset_accepts & (members.sum(axis=1) <= _MAX_LIVE_FOR_DEADNESS_CHECK)
    return accepts.astype(np.uint8), hopeless.astype(np.uint8)


def _native_product(
    module: ModuleType, dfas: Sequence[DFA], accept: AcceptRule, limits: Limits
) -> DFA | None:
    """``product`` by the native walk, or ``None`` for the one case it leaves to the pure walk: every
    automaton empty under a rule that accepts with no member accepting."""
    accept_table, hopeless_table = _rule_tables(accept, len(dfas))
    starts = np.array([int(d.start) for d in dfas], dtype=np.int32)
    if accept_table[0] and not starts.any():
        return None
    byte_class, columns = _joint_classes(dfas)
    tables = np.concatenate([d.transitions[:, columns[:, i]] for i, d in enumerate(dfas)])
    offsets = np.zeros(len(dfas) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([d.num_states for d in dfas])
    accepting = np.concatenate([d.accepting for d in dfas]).view(np.uint8)
    walked = module.product_table(
        np.ascontiguousarray(tables, dtype=np.int32),
        offsets,
        accepting,
        starts,
        accept_table,
        hopeless_table,
        limits.max_states,
    )
    if walked is None:
        raise _limit_error(len(dfas), limits)
    transitions, accept_flags, start = walked
    return minimize(prune(DFA(transitions, byte_class, accept_flags, start)))


def product(dfas: Sequence[DFA], accept: AcceptRule, limits: Limits | None = None) -> DFA:
    """The minimal DFA of the strings whose per-DFA acceptance flags satisfy ``accept``."""
    limits = limits or Limits()
    if not dfas:
        raise ValueError("product needs at least one DFA")
    for position, dfa in enumerate(dfas):
        _check_dfa(dfa, position)
    check_product_operands(*dfas)
    module = native("product")
    if module is not None and len(dfas) <= NATIVE_MAX_DFAS:
        result = _native_product(module, dfas, accept, limits)
        if result is not None:
            return result
    if len(dfas) == 2:
        return _pair_product(dfas[0], dfas[1], accept, limits)
    byte_class, columns = _joint_classes(dfas)
    num_classes = columns.shape[0]
    tables = [d.transitions[:, columns[:, i]].tolist() for i, d in enumerate(dfas)]
    accepting = [d.accepting.tolist() for d in dfas]
    live_hopeless = _hopeless_rule(accept)

    def hopeless(state: tuple[int, ...]) -> bool:
        return live_hopeless(tuple(s != 0 for s in state))

    dead = tuple(0 for _ in dfas)
    ids: dict[tuple[int, ...], int] = {dead: 0}
    states: list[tuple[int, ...]] = [dead]
    start = tuple(d.start for d in dfas)
    start_id = 0
    if not hopeless(start):
        ids[start] = start_id = 1
        states.append(start)
    rows: list[list[int]] = [[0] * num_classes]
    index = 1
    while index < len(states):
        current = states[index]
        index += 1
        row = [0] * num_classes
        for cls in range(num_classes):
            target = tuple(table[s][cls] for table, s in zip(tables, current, strict=True))
            target_id = ids.get(target)
            if target_id is None:
                if hopeless(target):
                    target_id = ids[target] = 0
                else:
                    target_id = ids[target] = len(states)
                    if target_id > limits.max_states:
                        raise _limit_error(len(dfas), limits)
                    states.append(target)
            row[cls] = target_id
        rows.append(row)
    transitions = np.array(rows, dtype=np.int32).reshape(len(states), num_classes)
    accept_flags = np.array(
        [
            i != 0 and accept([acc[s] for acc, s in zip(accepting, st, strict=True)])
            for i, st in enumerate(states)
        ],
        dtype=bool,
    )
    return minimize(prune(DFA(transitions, byte_class, accept_flags, start_id)))


# Pairs stepped at once by ``_pair_product`` (pairs x joint classes), which bounds its temporaries.
_PAIR_CELLS_PER_BATCH = 1 << 20


def _pair_product(a: DFA, b: DFA, accept: AcceptRule, limits: Limits) -> DFA:
    """``product`` of two DFAs, breadth-first with numpy: a pair of states is the code
    ``sa * |b| + sb``, a batch of pairs is stepped on every class at once, and the targets are looked
    up among the codes seen so far in a sorted array. Batches are taken in id order and new pairs
    numbered in the order they are first met, as a sequential breadth-first walk numbers them."""
    byte_class, columns = _joint_classes([a, b])
    num_classes = columns.shape[0]
    table_a = a.transitions[:, columns[:, 0]].astype(np.int64)
    table_b = b.transitions[:, columns[:, 1]].astype(np.int64)
    size_b = table_b.shape[0]
    hopeless = _hopeless_rule(accept)
    # hopeless_by_live[live_a, live_b]: a pair that can never accept goes to the dead state at once
    hopeless_by_live = np.array([[hopeless((x, y)) for y in (False, True)] for x in (False, True)])
    start = a.start * size_b + b.start
    if hopeless_by_live[int(a.start != 0), int(b.start != 0)]:
        nothing = DFA(np.zeros((1, num_classes), np.int32), byte_class, np.zeros(1, dtype=bool), 0)
        return minimize(prune(nothing))
    known_codes = np.array([0, start], dtype=np.int64)  # sorted: the codes seen so far
    known_ids = np.array([0, 1], dtype=np.int64)
    codes = [np.array([0, start], dtype=np.int64)]  # in id order
    rows = [np.zeros((1, num_classes), dtype=np.int32)]
    count = 2
    batch = max(1, _PAIR_CELLS_PER_BATCH // num_classes)
    level = codes[0][1:]
    while len(level):
        found: list[np.ndarray] = []
        for first in range(0, len(level), batch):
            pairs = level[first : first + batch]
            targets_a = table_a[pairs // size_b]
            targets_b = table_b[pairs % size_b]
            targets = targets_a * size_b + targets_b
            targets[hopeless_by_live[(targets_a != 0).astype(np.intp), (targets_b != 0).astype(np.intp)]] = 0
            flat = targets.ravel()
            position = np.minimum(np.searchsorted(known_codes, flat), len(known_codes) - 1)
            unseen = known_codes[position] != flat
            if unseen.any():
                fresh, first_seen = np.unique(flat[unseen], return_index=True)
                fresh = fresh[np.argsort(first_seen, kind="stable")]
                if count + len(fresh) - 1 > limits.max_states:
                    raise _limit_error(2, limits)
                merged = np.concatenate([known_codes, fresh])
                order = np.argsort(merged, kind="stable")
                known_codes = merged[order]
                known_ids = np.concatenate([known_ids, np.arange(count, count + len(fresh))])[order]
                count += len(fresh)
                position = np.searchsorted(known_codes, flat)
                found.append(fresh)
            rows.append(known_ids[position].reshape(targets.shape).astype(np.int32))
        codes += found
        level = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
    transitions = np.concatenate(rows)
    all_codes = np.concatenate(codes)
    accept_table = np.array([[bool(accept([x, y])) for y in (False, True)] for x in (False, True)])
    accepting = accept_table[
        a.accepting[all_codes // size_b].astype(np.intp), b.accepting[all_codes % size_b].astype(np.intp)
    ]
    accepting[0] = False
    return minimize(prune(DFA(transitions, byte_class, accepting, 1)))


def intersect(a: DFA, b: DFA, limits: Limits | None = None) -> DFA:
    return product([a, b], all, limits)


def union(a: DFA, b: DFA, limits: Limits | None = None) -> DFA:
    return product([a, b], any, limits)


def difference(a: DFA, b: DFA, limits: Limits | None = None) -> DFA:
    """Strings of ``a`` that ``b`` does not accept."""
    return product([a, b], lambda flags: flags[0] and not flags[1], limits)


def exactly_one(dfas: Sequence[DFA], limits: Limits | None = None) -> DFA:
    """Strings accepted by exactly one of ``dfas``."""
    return product(dfas, lambda flags: sum(flags) == 1, limits)


def is_empty(dfa: DFA) -> bool:
    return dfa.start == 0


def disjoint(a: DFA, b: DFA, limits: Limits | None = None) -> bool:
    return is_empty(intersect(a, b, limits))
