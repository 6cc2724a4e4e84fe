"""A transition table's distinct columns: the byte classes of a table built column by column.

Takes: an int32 ``[states, columns]`` table. Hands on: ``distinct_columns``, the table with each
distinct column once and, per old column, its new one. With the native core, the columns are
numbered by ``minimize.pyx``'s ``column_classes`` (a digest per column in one row-major pass,
columns compared in full where digests agree: no transposed copy) and gathered row by row
(``merged_columns``); without it, by their bytes.
Both number the distinct columns in order of first appearance.
"""

from __future__ import annotations

import numpy as np

from moonmaskc.automata.native import native


def distinct_columns(table: np.ndarray, given_up: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``table``'s distinct columns in order of first appearance, and the new column of each old
    one (``table`` itself when its columns are all distinct). With the old columns numbered by
    their smallest byte, so are the new ones. ``given_up``: the caller no longer needs ``table``
    (a writable int32 C-contiguous array), so the native core may write the result over it (a
    view of it), sparing a new buffer as large."""
    table = np.ascontiguousarray(table, dtype=np.int32)
    module = native("minimize")
    if module is not None and table.shape[0] > 0 and table.shape[1] > 0:
        if given_up and table.flags.writeable and table.flags.owndata:
            merged, column_of = module.merged_columns_in_place(table)
        else:
            merged, column_of = module.merged_columns(table)
        return (table if merged is None else merged), column_of.astype(np.int64)
    return _pure_distinct_columns(table)


def _pure_distinct_columns(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``distinct_columns`` by each column's bytes (a lexicographic sort of columns is far slower)."""
    by_column = np.ascontiguousarray(table.T)
    seen: dict[bytes, int] = {}
    kept: list[int] = []
    column_of = np.empty(table.shape[1], dtype=np.int64)
    for column in range(table.shape[1]):
        found = seen.setdefault(by_column[column].tobytes(), len(kept))
        if found == len(kept):
            kept.append(column)
        column_of[column] = found
    return np.ascontiguousarray(table[:, kept]), column_of
