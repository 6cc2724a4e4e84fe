"""An IR tree as flat arrays, each distinct node once: the input of the native Thompson builder.

Takes: an ``ir.Node``. Hands on: ``FlatIR``: one row per distinct node (children before their
parents, the root last), its kind, two integer arguments and its children in CSR form, plus the
distinct byte masks (as 32-byte little-endian bitmaps) and the distinct embedded DFAs the rows
point to.

Nodes are told apart as the IR compares them (``==``: structural for ``ByteSet``, ``Seq``, ``Alt``
and ``Repeat``, identity for ``Automaton``), so two equal nodes get one row and equal slices of
children are equal slices of row numbers: what the builder's ``X (S X)*`` detection compares. A
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


def flatten(root: ir.Node) -> FlatIR:
    """``root`` as a ``FlatIR`` (an iterative walk: no recursion on the IR's depth)."""
    row_of: dict[ir.Node, int] = {}
    kinds: list[int] = []
    firsts: list[int] = []
    seconds: list[int] = []
    counts: list[int] = []
    children: list[int] = []
    mask_rows: dict[int, int] = {}
    dfa_rows: dict[int, int] = {}
    dfas: list[DFA] = []
    pending: list[tuple[ir.Node, bool]] = [(root, False)]
    while pending:
        node, expanded = pending.pop()
        if node in row_of:
            continue
        kind = type(node)
        if kind is ir.ByteSet:
            mask = node.mask  # type: ignore[union-attr]
            kinds.append(BYTE_SET)
            firsts.append(mask_rows.setdefault(mask, len(mask_rows)))
            seconds.append(0)
            counts.append(0)
        elif kind is ir.Automaton:
            dfa = node.dfa  # type: ignore[union-attr]
            index = dfa_rows.get(id(dfa))
            if index is None:
                index = dfa_rows[id(dfa)] = len(dfas)
                dfas.append(dfa)
            kinds.append(AUTOMATON)
            firsts.append(index)
            seconds.append(0)
            counts.append(0)
        else:
            items: tuple[ir.Node, ...] = (node.item,) if kind is ir.Repeat else node.items  # type: ignore[union-attr]
            if not expanded:
                pending.append((node, True))
                pending.extend((item, False) for item in reversed(items) if item not in row_of)
                continue
            children.extend(row_of[item] for item in items)
            counts.append(len(items))
            if kind is ir.Repeat:
                kinds.append(REPEAT)
                firsts.append(node.min)  # type: ignore[union-attr]
                most = node.max  # type: ignore[union-attr]
                seconds.append(-1 if most is None else most)
            else:
                kinds.append(SEQ if kind is ir.Seq else ALT)
                firsts.append(0)
                seconds.append(0)
        row_of[node] = len(kinds) - 1
    offsets = np.zeros(len(kinds) + 1, dtype=np.int64)
    np.cumsum(np.asarray(counts, dtype=np.int64), out=offsets[1:])
    masks = (
        np.frombuffer(b"".join([mask.to_bytes(32, "little") for mask in mask_rows]), np.uint8).reshape(
            len(mask_rows), 32
        )
        if mask_rows
        else np.zeros((0, 32), dtype=np.uint8)
    )
    return FlatIR(
        kind=np.asarray(kinds, dtype=np.int8),
        first=np.asarray(firsts, dtype=np.int32),
        second=np.asarray(seconds, dtype=np.int32),
        child_offsets=offsets,
        children=np.asarray(children, dtype=np.int32),
        root=row_of[root],
        masks=masks,
        dfas=dfas,
    )
