"""Minimisation: the coarsest partition compatible with acceptance and transitions, renumbered.

Takes: pruned ``Tables`` or a pruned ``DFA``. Hands on: the minimal DFA, numbered dead first,
then breadth-first from the start in class order. Two steps of the pure path stand on their own:
``seed_partition`` (blocks by acceptance, completion lengths, live classes, longest stay in a
block) starts ``refined_by_successors`` (refinement by successor blocks, within a budget of
examined states), with Hopcroft as the fallback when the budget runs out.

``minimal_dense`` takes a dense DFA as arrays, pruned or not, checks them and returns the same
canonical minimal DFA; it (and so ``minimize``) runs in the native core when it is built: one
native call (``canonical_minimal``) numbers the columns by smallest byte, prunes, refines by
Hopcroft seeded with the distance to acceptance, renumbers and merges equal columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from types import ModuleType

import numpy as np

from moonmaskc.automata.dfa import DFA, _merged_by_key
from moonmaskc.automata.distances import (
    MalformedDFAError,
    _check_dead_state,
    _checked_start,
    _checked_table,
    _checked_vector,
    _longest_paths,
    _pure_prune,
    completion_lengths,
)
from moonmaskc.automata.native import native
from moonmaskc.automata.tables import Groups, Tables

# Refinement by successor blocks re-examines only the predecessors of states that moved; it is
# fast on the nearly minimal automata that the front ends build but has no n log n bound, so past
# this many examined states per DFA state Hopcroft refines what it has.
REFINE_CHECKS_PER_STATE = 8


def _longest_words(tables: Tables) -> list[int]:
    """For each live state of a pruned DFA, the length of its longest completion, or -1 when a
    cycle is reachable (completions are then unbounded); -1 for the dead state."""
    if tables.longest is None:
        tables.longest = completion_lengths(tables.predecessors, tables.accepting)[1]
    return tables.longest


def seed_partition(tables: Tables) -> list[int]:
    """The partition that minimisation starts from, for ``tables`` of a pruned DFA (distances
    filled): the block of each state, blocks numbered from 0 by first state.

    States share a block when they agree on what equivalent states always share: acceptance,
    shortest and longest completion, the classes that lead to a live state, and then (when a block
    holds several states) the longest path that stays in their block. So equivalent states are
    never apart; the dead state (distance -1; in a pruned DFA the only one) is alone in its block.
    Fills ``tables.longest`` when it is not known yet."""
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


def refined_by_successors(tables: Tables, block_of: list[int], max_checks: int) -> tuple[list[int], bool]:
    """Refine a partition of the states of ``tables`` by successor blocks.

    Takes: ``block_of``, the block of each state (blocks numbered from 0, e.g. ``seed_partition``),
    and ``max_checks``, the budget of state examinations. Splits the blocks of ``block_of`` (in
    place) until all states of a block lead each class into the same block, and returns
    ``(block_of, True)``; ``(block_of, False)`` when ``max_checks`` examinations did not suffice
    (``block_of`` is then a valid, coarser, partial result, which Hopcroft refines further).

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
    ``seed_partition`` does), i.e. be stable under the union of the live states. Then neither the
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


def _coarsest_partition(tables: Tables) -> list[int]:
    """Block of every state in the coarsest partition compatible with acceptance and transitions."""
    block_of = seed_partition(tables)
    if max(block_of) + 1 == len(block_of):  # every state alone already: nothing left to split
        return block_of
    block_of, stable = refined_by_successors(tables, block_of, REFINE_CHECKS_PER_STATE * len(block_of))
    if stable:
        return block_of
    return _hopcroft_blocks(tables.transitions().tolist(), block_of)


def _minimal(tables: Tables, breadth_first: bool = False) -> Tables:
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
    return Tables(
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
    if native("minimize") is not None:
        return minimal_dense(dfa.transitions, dfa.byte_class, dfa.accepting, dfa.start)
    return _minimal(Tables.of(dfa)).to_dfa()


def minimal_dense(transitions: np.ndarray, byte_class: np.ndarray, accepting: np.ndarray, start: int) -> DFA:
    """The canonical minimal DFA (columns merged, distances filled) of the dense DFA given by
    ``transitions`` int32[states, classes], ``byte_class`` int32[256], ``accepting`` bool[states]
    and ``start``, which need not be pruned but must have a dead state 0. Every array must be
    C-contiguous with its values in range, else ``MalformedDFAError``. Columns not numbered by their
    smallest byte are renumbered first (and columns that no byte uses dropped)."""
    module = native("minimize")
    if module is not None:
        # The native call checks every array, index and the dead state before use (its
        # ValueError is a MalformedDFAError): the pure path's checks would read the table twice.
        if not isinstance(accepting, np.ndarray) or accepting.dtype != np.bool_:
            raise MalformedDFAError(f"accepting must be a bool array, not {type(accepting).__name__}")
        return _native_minimal(module, transitions, byte_class, accepting.view(np.uint8), start)
    table = _checked_table(transitions)
    num_states, num_classes = table.shape
    classes = _checked_vector(byte_class, np.int32, 256, "byte_class")
    if int(classes.view(np.uint32).max()) >= num_classes:
        raise MalformedDFAError(f"a byte class is outside [0, {num_classes})")
    flags = _checked_vector(accepting, np.bool_, num_states, "accepting")
    first = _checked_start(start, num_states)
    _check_dead_state(table, flags)
    table, classes = _columns_by_smallest_byte(table, classes)
    pruned = _pure_prune(DFA(table, classes, flags, first))
    if pruned.start == 0:
        return _empty_dfa()
    return _minimal(Tables.of(pruned)).to_dfa()


def _native_minimal(
    module: ModuleType, transitions: np.ndarray, byte_class: np.ndarray, accepting: np.ndarray, start: int
) -> DFA:
    """``module.canonical_minimal``: columns numbered by smallest byte, prune, Hopcroft, canonical
    numbering, equal columns merged, distances, in one native call; ``accepting`` as uint8. The
    native checks (every input, before use) raise ``ValueError``, which becomes
    ``MalformedDFAError``. The result never shares an array with the caller."""
    try:
        found = module.canonical_minimal(transitions, byte_class, accepting, start)
    except (ValueError, TypeError, OverflowError) as error:
        raise MalformedDFAError(f"dense DFA: {error}") from error
    if found is None:
        return _empty_dfa()
    table, classes, flags, distance = found
    return DFA(table, classes, flags, 1, distance)


def _columns_by_smallest_byte(table: np.ndarray, byte_class: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``table`` and ``byte_class`` with the classes numbered by their smallest byte, the ones no
    byte falls in dropped; the same arrays when they are numbered so already."""
    present, first_byte = np.unique(byte_class, return_index=True)
    if len(present) == table.shape[1] and bool(np.all(np.diff(first_byte) > 0)):
        return table, byte_class
    order = present[np.argsort(first_byte)]
    rank = np.zeros(table.shape[1], dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return np.take(table, order, axis=1), rank[byte_class]


def _empty_dfa() -> DFA:
    return DFA(np.zeros((1, 1), dtype=np.int32), np.zeros(256, dtype=np.int32), np.zeros(1, dtype=bool), 0)


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
