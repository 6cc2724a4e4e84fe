"""``automata.columns.distinct_columns`` against a column-by-column reference on random tables, on
the native core (``column_classes``) and on the pure path."""

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
    for distinct, column_of in (distinct_columns(table), _pure_distinct_columns(table)):
        assert np.array_equal(distinct, expected)
        assert column_of.tolist() == expected_of.tolist()
        assert np.array_equal(distinct[:, column_of], table)


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
