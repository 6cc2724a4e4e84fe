"""``automata.columns.distinct_columns`` against a column-by-column reference on random tables, on
the native core (``column_classes``, a new table or one written over the given one) and on the
pure path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc.automata.columns import _pure_distinct_columns, distinct_columns
from moonmaskc.automata.native import native


def _reference(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    kept: list[int] = []
    column_of = []
    for column in range(table.shape[1]):
        for index, other in enumerate(kept):
            if np.array_equal(table[:, column], table[:, other]):
                column_of.append(index)
                break
        else:
            column_of.append(len(kept))
            kept.append(column)
    return table[:, kept], np.asarray(column_of)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda states: st.lists(
            st.lists(st.integers(0, 3), min_size=states, max_size=states), min_size=1, max_size=20
        )
    )
)
def test_distinct_columns_match_the_reference(columns: list[list[int]]) -> None:
    table = np.asarray(columns, dtype=np.int32).T.copy()
    expected, expected_of = _reference(table)
    given_up = table.copy()
    for distinct, column_of in (
        distinct_columns(table),
        _pure_distinct_columns(table),
        distinct_columns(given_up, given_up=True),
    ):
        assert np.array_equal(distinct, expected)
        assert column_of.tolist() == expected_of.tolist()
        assert np.array_equal(distinct[:, column_of], table)
        assert distinct.flags.c_contiguous


def test_a_given_up_table_is_written_over() -> None:
    """With the native core, a table given up holds the result (no new buffer); one that is not
    given up, or not owned, is left as it was."""
    if native("minimize") is None:
        pytest.skip("the native core is not built")
    rng = np.random.default_rng(3)
    table = rng.integers(0, 9, size=(500, 12), dtype=np.int32)[:, [0, 1, 1, 2, 3, 0, 4, 5, 6, 7, 8, 9]]
    table = np.ascontiguousarray(table)
    kept = table.copy()
    distinct, column_of = distinct_columns(table)
    assert np.array_equal(table, kept) and not np.shares_memory(distinct, table)
    view = kept[:]  # (not owning its data: copied, not written over)
    assert np.array_equal(distinct_columns(view, given_up=True)[0], distinct) and np.array_equal(view, table)
    given_up, given_up_of = distinct_columns(kept, given_up=True)
    assert np.shares_memory(given_up, kept) and np.array_equal(given_up, distinct)
    assert np.array_equal(given_up_of, column_of)


def test_the_native_core_numbers_the_columns_when_built() -> None:
    """A wide table with repeated columns (a digest collision would still be compared in full)."""
    if native("minimize") is None:
        pytest.skip("the native core is not built")
    rng = np.random.default_rng(7)
    base = rng.integers(0, 50_000, size=(3_000, 40), dtype=np.int32)
    table = base[:, rng.integers(0, 40, size=300)]
    distinct, column_of = distinct_columns(table)
    expected, expected_of = _reference(table)
    assert np.array_equal(distinct, expected)
    assert column_of.tolist() == expected_of.tolist()
