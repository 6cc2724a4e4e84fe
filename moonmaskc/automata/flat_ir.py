"""An IR tree as flat arrays, each distinct node once: the input of the native Thompson builder.

Takes: an ``ir.Node``. Hands on: ``FlatIR``: one row per distinct node (children before their
parents, the root last), its kind, two integer arguments and its children in CSR form, plus the
distinct byte masks (as 32-byte little-endian bitmaps), the distinct embedded DFAs the rows
point to, and per row the first node object seen for it (for messages and for questions only a
DFA answers, such as the work bound's).

Nodes are told apart as the IR compares them (``==``: structural for ``ByteSet``, ``Seq``, ``Alt``
and ``Repeat``, identity for ``Automaton``), so two equal nodes get one row and equal slices of
children are equal slices of row numbers: what the builder's ``X (S X)*`` detection compares.
Rows are children first (a row's children have smaller numbers), the root not necessarily last. A
schema's IR shares subtrees heavily; the walk here visits each distinct node once, where the tree
walk of the builder visits it once per use.

Kinds and arguments:

- ``BYTE_SET``: ``first`` = the row of its mask in ``masks``;
- ``SEQ``, ``ALT``: the children in order;
- ``REPEAT``: one child, ``first`` = min, ``second`` = max (``-1`` for unbounded);
- ``AUTOMATON``: ``first`` = the index of its DFA in ``dfas``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import native

BYTE_SET, SEQ, ALT, REPEAT, AUTOMATON = 0, 1, 2, 3, 4


class FlatIR(NamedTuple):
    """See the module docstring. ``kind`` int8[N], ``first`` and ``second`` int32[N],
    ``child_offsets`` int64[N + 1], ``children`` int32[C], ``masks`` uint8[M, 32]."""

    kind: np.ndarray
    first: np.ndarray
    second: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray
    root: int
    masks: np.ndarray
    dfas: list[DFA]
    nodes: list[ir.Node]


def flatten(root: ir.Node) -> FlatIR:
    """``root`` as a ``FlatIR``: by the native core's walk (``_native/flatten.pyx``, the same rows
    with its two dictionaries in C) when it is built, else by ``python_flatten``."""
    module = native("flatten")
    if module is None:
        return python_flatten(root)
    kind, first, second, offsets, children, root_row, masks, dfas, nodes = module.flatten(
        root, ir.ByteSet, ir.Seq, ir.Alt, ir.Repeat, ir.Automaton
    )
    return FlatIR(kind, first, second, offsets, children, root_row, _mask_bitmaps(masks), dfas, nodes)


def _mask_bitmaps(masks: list[int]) -> np.ndarray:
    """uint8[M, 32]: each mask as a 32-byte little-endian bitmap."""
    if not masks:
        return np.zeros((0, 32), dtype=np.uint8)
    return np.frombuffer(b"".join([mask.to_bytes(32, "little") for mask in masks]), np.uint8).reshape(
        len(masks), 32
    )


def python_flatten(root: ir.Node) -> FlatIR:
    """``root`` as a ``FlatIR`` (an iterative walk: no recursion on the IR's depth).

    Rows are hash-consed bottom-up: a node's key is its kind and arguments with its children's
    rows, so two nodes get one row exactly when the IR's ``==`` calls them equal, while each node
    object is looked up by identity first (cheap), never through the IR's own ``__eq__``."""
    row_of_id: dict[int, int] = {}
    row_of_key: dict[tuple[object, ...], int] = {}
    kinds: list[int] = []
    nodes: list[ir.Node] = []
    firsts: list[int] = []
    seconds: list[int] = []
    counts: list[int] = []
    children: list[int] = []
    mask_rows: dict[int, int] = {}
    dfa_rows: dict[int, int] = {}
    dfas: list[DFA] = []
    byte_set, automaton, repeat, seq = ir.ByteSet, ir.Automaton, ir.Repeat, ir.Seq
    pending: list[ir.Node] = [root]
    while pending:
        node = pending[-1]
        if id(node) in row_of_id:
            pending.pop()
            continue
        kind = type(node)
        key: tuple[object, ...]
        if kind is byte_set:
            mask = node.mask  # type: ignore[union-attr]
            key = (BYTE_SET, mask)
            row = row_of_key.get(key)
            if row is None:
                row = row_of_key[key] = len(kinds)
                kinds.append(BYTE_SET)
                nodes.append(node)
                firsts.append(mask_rows.setdefault(mask, len(mask_rows)))
                seconds.append(0)
                counts.append(0)
        elif kind is automaton:
            dfa = node.dfa  # type: ignore[union-attr]
            index = dfa_rows.get(id(dfa))
            if index is None:
                index = dfa_rows[id(dfa)] = len(dfas)
                dfas.append(dfa)
            row = len(kinds)  # compared by identity: a row of its own
            kinds.append(AUTOMATON)
            nodes.append(node)
            firsts.append(index)
            seconds.append(0)
            counts.append(0)
        else:
            items: tuple[ir.Node, ...] = (node.item,) if kind is repeat else node.items  # type: ignore[union-attr]
            missing = [item for item in items if id(item) not in row_of_id]
            if missing:
                pending.extend(reversed(missing))
                continue
            child_rows = tuple([row_of_id[id(item)] for item in items])
            if kind is repeat:
                most = node.max  # type: ignore[union-attr]
                code, first, second = REPEAT, node.min, -1 if most is None else most  # type: ignore[union-attr]
            else:
                code, first, second = (SEQ if kind is seq else ALT), 0, 0
            key = (code, first, second, child_rows)
            row = row_of_key.get(key)
            if row is None:
                row = row_of_key[key] = len(kinds)
                kinds.append(code)
                nodes.append(node)
                firsts.append(first)
                seconds.append(second)
                counts.append(len(child_rows))
                children.extend(child_rows)
        row_of_id[id(node)] = row
        pending.pop()
    offsets = np.zeros(len(kinds) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    masks = _mask_bitmaps(list(mask_rows))
    return FlatIR(
        kind=np.array(kinds, dtype=np.int8),
        first=np.array(firsts, dtype=np.int32),
        second=np.array(seconds, dtype=np.int32),
        child_offsets=offsets,
        children=np.array(children, dtype=np.int32),
        root=row_of_id[id(root)],
        masks=masks,
        dfas=dfas,
        nodes=nodes,
    )
