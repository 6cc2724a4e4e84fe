"""A transition table's distinct columns: the byte classes of a table built column by column.

Takes: an int32 ``[states, columns]`` table. Hands on: ``distinct_columns``, the table with each
distinct column once and, per old column, its new one.
"""

from __future__ import annotations

import numpy as np


def distinct_columns(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``table``'s distinct columns in order of first appearance, and the new column of each old
    one (columns compared by their bytes: a lexicographic sort of columns is far slower). With the
    old columns numbered by their smallest byte, so are the new ones."""
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
