"""The compact next-state table (artifact format version 3) and the files of versions 1 and 2.

Takes: the artifacts of ``conftest`` (bytes vocabulary and GPT-2), rewritten as version 1 and 2 files or
with one next-state array broken. Checks: a version 3 file round-trips (``Artifact.load``,
``Guide.load``, with and without ``warm``); version 1 and 2 files still load and serve the same
masks and steps; every broken array gives an ``ArtifactError`` (serving load, verified load,
``Artifact.load``) or a ``ValueError`` (``TokenTable.from_arrays``), never another exception; the
rank arrays respect their bound and the search past it gives the same next states; ``from_dense``
and ``dense`` are inverse (also on hypothesis tables whose states share few rows, with the rows
given or found), and its arrays are the CSR layout by definition.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import moonmaskc.next_table as next_table_module
from moonmaskc.artifact import Artifact
from moonmaskc.errors import ArtifactError
from moonmaskc.format import MASK_ARRAYS, NEXT_ARRAYS, MaskRows, write_artifact
from moonmaskc.next_table import NextTable
from moonmaskc.runtime import Guide
from moonmaskc.runtime_budget import fewest_tokens_to_eos
from moonmaskc.token_table import TokenTable


def arrays_of(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def legacy_arrays(arrays: dict[str, np.ndarray], version: int) -> dict[str, np.ndarray]:
    """The same table as a version 2 file (a dense ``tokens_class_next``) or a version 1 file (that,
    and the mask rows stored whole as ``tokens_mask_rows``)."""
    table = TokenTable.from_arrays(arrays)
    legacy = {name: array for name, array in arrays.items() if name not in NEXT_ARRAYS}
    legacy["tokens_class_next"] = table.next_table.dense()
    legacy["format_version"] = np.array(version, dtype=np.int32)
    if version == 1:
        words = (len(arrays["vocab_token_lengths"]) + 31) // 32
        legacy["tokens_mask_rows"] = MaskRows(arrays, words).full()
        for name in MASK_ARRAYS:
            del legacy[name]
    return legacy


def served(guide: Guide, every: int = 1) -> list[object]:
    """Masks, next states of every token (allowed or not, a sample on large vocabularies),
    acceptance, fewest tokens to eos and the budgeted masks of the states."""
    seen: list[object] = []
    rng = np.random.default_rng(0)
    tokens = np.arange(guide.vocab_size)
    if guide.vocab_size > 600:
        tokens = rng.choice(guide.vocab_size, size=300, replace=False)
    for state in range(0, guide.num_states, every):
        seen.append(guide.mask(state).tobytes())
        allowed = guide.allowed(state)
        seen.append(
            [guide.advance(state, int(token)) for token in (*allowed[:50].tolist(), *tokens.tolist())]
        )
        seen.append((guide.is_accept(state), guide.fewest_tokens(state), guide.decreasing(state).tolist()))
        if guide.fewest_tokens(state) > 0:
            seen.append(guide.allowed(state, tokens_left=guide.fewest_tokens(state)).tolist())
    return seen


def two_class_state(arrays: dict[str, np.ndarray]) -> int:
    """The first state whose row allows two classes or more."""
    counts = np.diff(arrays["tokens_row_class_offsets"])[arrays["tokens_state_row"]]
    return int(np.flatnonzero(counts >= 2)[0])


def compact_tamperings(arrays: dict[str, np.ndarray]) -> Iterator[tuple[str, np.ndarray]]:
    """Version 3 next-state arrays each broken in one way."""
    state, states = two_class_state(arrays), len(arrays["tokens_state_row"])
    row = int(arrays["tokens_state_row"][state])
    row_offsets, row_classes = arrays["tokens_row_class_offsets"], arrays["tokens_row_classes"]
    next_offsets, following = arrays["tokens_next_offsets"], arrays["tokens_next"]
    first, first_next = int(row_offsets[row]), int(next_offsets[state])
    yield "tokens_next", _with(following, first_next, 0)  # an allowed class leads to the dead state
    yield "tokens_next", _with(following, first_next, states)  # outside the DFA
    yield "tokens_next", following.astype(np.float64)  # not integers
    yield "tokens_next", following[:-1]  # fewer entries than the offsets say
    yield "tokens_next", following.reshape(1, -1)  # not 1-D
    yield "tokens_row_classes", _with(row_classes, first, 0)  # the never-allowed class
    yield "tokens_row_classes", _with(row_classes, first, int(row_classes[first + 1]))  # not ascending
    yield "tokens_row_classes", _with(row_classes, first, 1 << 20)  # past the classes
    yield "tokens_row_classes", row_classes[:-1]
    yield "tokens_row_class_offsets", _with(row_offsets, 1, 1)  # the dead state's row allows a class
    yield "tokens_row_class_offsets", _with(row_offsets, row + 1, int(row_offsets[row]) - 1)  # falls
    yield "tokens_row_class_offsets", row_offsets[:-1]  # one row short
    yield "tokens_row_class_offsets", row_offsets.astype(np.float32)
    yield "tokens_next_offsets", _with(next_offsets, state + 1, int(next_offsets[state + 1]) + 1)
    yield "tokens_next_offsets", _with(next_offsets, 0, -1)
    yield "tokens_next_offsets", next_offsets[:-1]
    yield "tokens_next_offsets", next_offsets.astype(np.uint64) + np.uint64(1 << 63)
    other = int(np.flatnonzero(np.diff(row_offsets) != row_offsets[row + 1] - row_offsets[row])[0])
    yield "tokens_state_row", _with(arrays["tokens_state_row"], state, other)  # counts disagree


def _with(array: np.ndarray, index: int, value: int) -> np.ndarray:
    changed = array.copy()
    changed[index] = value
    return changed


# -- version 3 ---------------------------------------------------------------------------------


def test_version_3_round_trips(gpt2_artifact: Path) -> None:
    arrays = arrays_of(gpt2_artifact)
    assert int(arrays["format_version"]) == 3 and "tokens_class_next" not in arrays
    assert arrays["tokens_next"].dtype == np.uint16 and arrays["tokens_row_classes"].dtype == np.int32
    in_memory = Artifact.load(gpt2_artifact)
    assert in_memory.token_table is not None
    again = TokenTable.from_arrays(in_memory.token_table.to_arrays())
    assert again.next_table.same_as(in_memory.token_table.next_table)
    built = Guide.from_artifact(in_memory)
    expected = served(built, every=3)
    assert served(Guide.load(gpt2_artifact), every=3) == expected
    assert served(Guide.load(gpt2_artifact, verify=True).warm(), every=3) == expected


def test_every_state_and_token_steps_as_the_dense_table_says(bytes_artifact: Path) -> None:
    """On the bytes vocabulary, every (state, token) pair of the served guide against the dense
    table rebuilt from the compact arrays, cold, warm, and past the rank bound."""
    dense = TokenTable.from_arrays(arrays_of(bytes_artifact)).next_table.dense()
    token_class = arrays_of(bytes_artifact)["tokens_token_class"]
    expected = [[int(dense[s, c]) or None for c in token_class.tolist()] for s in range(len(dense))]
    cold, warm = Guide.load(bytes_artifact), Guide.load(bytes_artifact).warm()
    for guide in (cold, warm):
        got = [[guide.advance(s, t) for t in range(guide.vocab_size)] for s in range(guide.num_states)]
        assert got == expected


def test_rank_arrays_stay_within_their_bound(bytes_artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = TokenTable.from_arrays(arrays_of(bytes_artifact)).next_table
    dense = table.dense()
    monkeypatch.setattr(next_table_module, "RANK_CELLS", 3 * table.num_classes)
    bounded = NextTable(
        table.state_row,
        table.row_class_offsets,
        table.row_classes,
        table.next_offsets,
        table.next_states,
        table.num_classes,
    )
    bounded.warm()
    assert sum(ranks is not None for ranks in bounded._ranks) == 3
    for state in range(table.num_states):
        for cls in range(table.num_classes):
            assert bounded.following(state, cls) == dense[state, cls]
    assert sum(ranks is not None for ranks in bounded._ranks) == 3
    assert table.num_rows > 3


def test_from_dense_and_dense_are_inverse() -> None:
    rng = np.random.default_rng(7)
    states, classes = 40, 9
    dense = rng.integers(1, states, size=(states, classes)).astype(np.uint16)
    dense[rng.random((states, classes)) < 0.6] = 0
    dense[0] = 0
    dense[:, 0] = 0
    dense[5] = dense[6] = 0  # two more states with the empty row
    table = NextTable.from_dense(dense)
    assert np.array_equal(table.dense(), dense) and table.next_states.dtype == np.uint16
    assert table.state_row[0] == table.state_row[5] == table.state_row[6] == 0
    first_states = np.unique(table.state_row, return_index=True)[1]
    assert np.all(np.diff(first_states) > 0)  # rows numbered by their first state
    for state in range(states):
        for cls in range(classes):
            assert table.following(state, cls) == dense[state, cls]
    assert np.array_equal(table.allows_class(3), dense[:, 3] != 0)
    accepting = np.zeros(states, dtype=bool)
    accepting[[2, 9]] = True
    token_class = np.arange(classes)
    assert np.array_equal(
        fewest_tokens_to_eos(table, token_class, accepting, 0),
        fewest_tokens_to_eos(dense, token_class, accepting, 0),
    )
    with pytest.raises(ValueError, match="allow different"):
        NextTable.from_dense(dense, np.zeros(states, dtype=np.int32), 1)


@st.composite
def tables_with_shared_rows(draw: st.DrawFn) -> np.ndarray:
    """Dense next-state tables whose states draw their allowed classes from a few patterns (as a
    DFA's states share mask rows), with next states of their own; state 0 allows nothing."""
    states = draw(st.integers(1, 70))
    classes = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    patterns = rng.random((draw(st.integers(1, 6)), classes)) < draw(st.floats(0.0, 1.0))
    allowed = patterns[rng.integers(0, len(patterns), size=states)]
    allowed[0] = False
    dtype = np.uint16 if draw(st.booleans()) else np.int32
    return np.where(allowed, rng.integers(1, max(states, 2), size=(states, classes)), 0).astype(dtype)


@given(tables_with_shared_rows())
@settings(max_examples=150, deadline=None)
def test_from_dense_gives_the_csr_layout_of_any_table(dense: np.ndarray) -> None:
    table = NextTable.from_dense(dense)
    assert np.array_equal(table.dense(), dense)
    given_rows = NextTable.from_dense(dense, table.state_row, table.num_rows)
    states, classes = dense.shape
    for found in (table, given_rows):
        assert np.array_equal(found.dense(), dense)
        for state in range(states):
            row = int(found.state_row[state])
            low, high = found.row_class_offsets[row], found.row_class_offsets[row + 1]
            assert found.row_classes[low:high].tolist() == np.flatnonzero(dense[state]).tolist()
            begin, end = found.next_offsets[state], found.next_offsets[state + 1]
            assert found.next_states[begin:end].tolist() == dense[state][dense[state] != 0].tolist()
        assert found.row_classes.dtype == np.int32 and found.next_offsets.dtype == np.int64
        assert found.next_states.dtype == np.uint16  # at most 65,535 states
        assert found.num_classes == classes


# -- versions 1 and 2 ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_older_versions_load_and_serve_the_same(gpt2_artifact: Path, tmp_path: Path, version: int) -> None:
    expected = served(Guide.load(gpt2_artifact), every=3)
    path = write_artifact(tmp_path / f"v{version}.npz", legacy_arrays(arrays_of(gpt2_artifact), version))
    assert served(Guide.load(path), every=3) == expected
    assert served(Guide.load(path, verify=True).warm(), every=3) == expected
    artifact = Artifact.load(path)
    assert artifact.token_table is not None
    original = Artifact.load(gpt2_artifact).token_table
    assert original is not None and artifact.token_table.next_table.same_as(original.next_table)
    resaved = artifact.save(tmp_path / "resaved.npz")  # relinking an old file writes version 3
    assert int(np.load(resaved)["format_version"]) == 3
    assert served(Guide.load(resaved), every=3) == expected


def test_a_version_2_table_whose_rows_disagree_is_refused(bytes_artifact: Path, tmp_path: Path) -> None:
    legacy = legacy_arrays(arrays_of(bytes_artifact), 2)
    dense = legacy["tokens_class_next"].copy()
    shared = np.flatnonzero(np.bincount(legacy["tokens_state_row"]) > 1)
    row = int(shared[shared > 0][-1])  # a row (not the dead state's) that two states or more share
    twin = int(np.flatnonzero(legacy["tokens_state_row"] == row)[-1])
    dense[twin, np.flatnonzero(dense[twin])[0]] = 0  # one state of a shared row allows a class less
    legacy["tokens_class_next"] = dense
    path = write_artifact(tmp_path / "v2.npz", legacy)
    guide = Guide.load(path)
    with pytest.raises(ArtifactError, match="tokens_state_row"):
        guide.advance(twin, 0)
    with pytest.raises(ArtifactError):
        Artifact.load(path)


# -- broken arrays ---------------------------------------------------------------------------------


def test_each_broken_next_array_is_a_clear_error(bytes_artifact: Path, tmp_path: Path) -> None:
    arrays = arrays_of(bytes_artifact)
    state = two_class_state(arrays)
    cases = list(compact_tamperings(arrays))
    for name in NEXT_ARRAYS:  # and each one missing
        cases.append((name, np.zeros(0)))
    for index, (name, tampered) in enumerate(cases):
        broken = dict(arrays)
        if tampered.size == 0 and tampered.dtype == np.float64:
            del broken[name]
        else:
            broken[name] = tampered
        path = write_artifact(tmp_path / f"broken-{index}.npz", broken)
        with pytest.raises(ArtifactError) as caught:
            loaded = Guide.load(path)
            loaded.warm()
            loaded.advance(state, int(loaded.allowed(state)[0]))
            loaded.fewest_tokens(state)
        named = "tokens_next_offsets" if name == "tokens_state_row" else name  # counts disagree
        assert str(path) in str(caught.value) and named in str(caught.value), (name, str(caught.value))
        with pytest.raises(ArtifactError):
            Guide.load(path, verify=True)
        with pytest.raises(ArtifactError):
            Artifact.load(path)
        with pytest.raises(ValueError):
            TokenTable.from_arrays(broken)
