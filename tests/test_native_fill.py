"""The native mask fill (``_native/fill.pyx`` through ``Guide.fill_bitmask``) against the numpy
path: the same words for every state of a real GPT-2 artifact, in every bitmask layout the runtime
accepts; and ``copy_row`` declining, without writing, every buffer it must leave to the checked
Python path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import moonmaskc
from moonmaskc.automata.native import native
from moonmaskc.errors import RuntimeInputError
from moonmaskc.runtime import Guide
from tests.conftest import PROJECT_ROOT, data_path

fill = native("fill")
pytestmark = pytest.mark.skipif(fill is None, reason="the native core is not built")


@pytest.fixture(scope="module")
def artifact_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    schema = json.loads((PROJECT_ROOT / "examples" / "schemas" / "order.json").read_text(encoding="utf-8"))
    artifact = moonmaskc.compile_schema(schema, tokenizer=str(data_path("tokenizers", "gpt2.json")))
    return artifact.save(tmp_path_factory.mktemp("fill") / "order.npz")


def _numpy_fill(guide: Guide, state: int, out: np.ndarray, row: int) -> None:
    mask = guide.mask(state)
    target = out[row] if out.ndim == 2 else out
    target[: guide.bitmask_words] = mask.view(target.dtype)
    target[guide.bitmask_words :] = 0


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("shape_extra", [(2, 0), (3, 5), (None, 0), (None, 7)])
def test_every_state_fills_as_the_numpy_path(artifact_path: Path, dtype: type, shape_extra: tuple) -> None:
    rows, extra = shape_extra
    guide = Guide.load(artifact_path)
    assert guide._filler is not None
    words = guide.bitmask_words + extra
    shape = (words,) if rows is None else (rows, words)
    for state in range(guide.num_states):
        row = 0 if rows is None else state % rows
        ours = np.full(shape, 0x5A5A5A5A, dtype=dtype)
        expected = np.full(shape, 0x5A5A5A5A, dtype=dtype)
        guide.fill_bitmask(state, ours, row)
        _numpy_fill(guide, state, expected, row)
        assert np.array_equal(ours, expected), state


def test_pure_forced_guide_fills_the_same(artifact_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    native_guide = Guide.load(artifact_path)
    monkeypatch.setenv("MOONMASKC_PURE", "1")
    pure_guide = Guide.load(artifact_path)
    assert pure_guide._filler is None
    for state in range(native_guide.num_states):
        a = np.zeros((1, native_guide.bitmask_words), np.int32)
        b = np.zeros((1, pure_guide.bitmask_words), np.int32)
        native_guide.fill_bitmask(state, a)
        pure_guide.fill_bitmask(state, b)
        assert np.array_equal(a, b)


def _declined(out: object, row: int, source: object, words: int) -> None:
    before = np.array(out, copy=True) if isinstance(out, np.ndarray) else None
    assert fill.copy_row(out, row, source, words) is False  # type: ignore[union-attr]
    if before is not None:
        assert np.array_equal(np.asarray(out), before)


def test_copy_row_declines_what_it_must_not_write() -> None:
    words = 8
    source = np.arange(words, dtype=np.uint32)
    read_only = np.zeros((2, words), np.int32)
    read_only.flags.writeable = False
    _declined(read_only, 0, source, words)
    _declined(np.zeros((2, words), np.int64), 0, source, words)
    _declined(np.zeros((2, words), np.int8), 0, source, words)
    _declined(np.zeros((2, words), np.float32), 0, source, words)
    _declined(np.zeros((2, words * 2), np.int32)[:, ::2], 0, source, words)  # not contiguous
    _declined(np.zeros((2, words - 1), np.int32), 0, source, words)  # too narrow
    _declined(np.zeros((2, 2, words), np.int32), 0, source, words)  # 3-D
    _declined(np.zeros((2, words), np.int32), 2, source, words)  # no such row
    _declined(np.zeros((2, words), np.int32), -1, source, words)
    _declined(np.zeros((2, words), np.int32), 1 << 70, source, words)  # past any index
    _declined(np.zeros((2, words), np.int32), 0, source[:-1], words)  # short source
    _declined(np.zeros((2, words), np.int32), 0, np.arange(words * 2, dtype=np.uint32)[::2], words)
    _declined(np.zeros((2, words), np.int32), 0, source, -1)
    _declined([0] * words, 0, source, words)  # no buffer protocol
    _declined(np.zeros((2, words), np.int32), 0, "not a buffer", words)
    written = np.zeros((2, words + 2), np.uint32)
    assert fill.copy_row(written, 1, source, words) is True  # type: ignore[union-attr]
    assert written[1].tolist() == [*range(words), 0, 0] and not written[0].any()


def test_a_declined_buffer_still_gets_the_runtime_error(artifact_path: Path) -> None:
    guide = Guide.load(artifact_path)
    read_only = np.zeros((1, guide.bitmask_words), np.int32)
    read_only.flags.writeable = False
    with pytest.raises(RuntimeInputError, match="read-only"):
        guide.fill_bitmask(guide.start(), read_only)
    with pytest.raises(RuntimeInputError):
        guide.fill_bitmask(guide.start(), np.zeros((1, guide.bitmask_words), np.int64))
    with pytest.raises(RuntimeInputError):
        guide.fill_bitmask(guide.start(), np.zeros((2, guide.bitmask_words), np.int32), 2)


def test_the_guide_fills_through_the_native_filler_before_and_after_warming(artifact_path: Path) -> None:
    """``fill_bitmask`` is the native ``StateRowFiller.fill``; it serves every state the same before
    and after ``warm()`` (which fills the per-state rows it shares with the filler), hands keyword
    budgets, numpy integer states and huge rows to the checked Python path, and leaves a numpy
    bitmask of the wrong width untouched with the runtime's error."""
    guide = Guide.load(artifact_path)
    assert type(guide.fill_bitmask.__self__).__name__ == "StateRowFiller"
    reference = Guide.load(artifact_path)
    cold = {}
    for state in range(guide.num_states):
        out = np.zeros((1, guide.bitmask_words), np.uint32)
        guide.fill_bitmask(state, out)
        cold[state] = out.copy()
    guide.warm()
    for state in range(guide.num_states):
        out = np.zeros((1, guide.bitmask_words), np.uint32)
        guide.fill_bitmask(state, out)
        expected = np.zeros_like(out)
        _numpy_fill(reference, state, expected, 0)
        assert np.array_equal(out, cold[state]) and np.array_equal(out, expected), state
    start = guide.start()
    budgeted = np.zeros((1, guide.bitmask_words), np.int32)
    guide.fill_bitmask(start, budgeted, tokens_left=1000)
    numpy_state = np.zeros((1, guide.bitmask_words), np.int32)
    guide.fill_bitmask(np.int64(start), numpy_state)
    assert np.array_equal(numpy_state, budgeted) and budgeted.any()
    with pytest.raises(RuntimeInputError):
        guide.fill_bitmask(start, np.zeros((2, guide.bitmask_words), np.int32), 1 << 70)
    with pytest.raises(RuntimeInputError):
        guide.fill_bitmask(guide.num_states, np.zeros((1, guide.bitmask_words), np.int32))
    narrow = np.full((1, guide.bitmask_words - 1), 7, np.int32)
    with pytest.raises(RuntimeInputError):
        guide.fill_bitmask(start, narrow)
    assert (narrow == 7).all()


def _row_like(words: int, constant: int, differing: list[int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    row = np.full(words, constant, dtype=np.uint32)
    row[differing] = rng.integers(1, 0xFFFFFFFF, size=len(differing), dtype=np.uint32)
    return row


@pytest.mark.parametrize("constant", [0, 0xFFFFFFFF])
@pytest.mark.parametrize("words", [1, 7, 64, 1571, 4008])
def test_fill_sources_keep_every_word(constant: int, words: int) -> None:
    """``fill_source`` keeps a row whose words mostly differ from 0 and from all ones, and makes a
    ``SparseRow`` of the others (at most ``words // SPARSE_SHARE`` differing words); either fills
    the same words as the row, in every width, with zeros after the row."""
    assert fill is not None
    rng = np.random.default_rng(words)
    share = fill.SPARSE_SHARE
    for count in sorted({0, 1, words // share, words // share + 1, words // 2, words}):
        differing = sorted(rng.choice(words, size=min(count, words), replace=False).tolist())
        row = _row_like(words, constant, differing, count)
        source = fill.fill_source(row)
        sparse = isinstance(source, fill.SparseRow)
        assert sparse == (len(differing) <= words // share), count
        if sparse:
            assert source.constant == constant or not differing or len(differing) == words
            assert np.array_equal(source.dense(), row)
        else:
            assert source is row
        for extra in (0, 3):
            out = np.full((2, words + extra), 0x5A5A5A5A, dtype=np.int32)
            assert fill.copy_row(out, 1, source, words) is True
            assert np.array_equal(out[1, :words].view(np.uint32), row), count
            assert not out[1, words:].any() and (out[0] == 0x5A5A5A5A).all()


def test_a_sparse_row_is_checked_when_made_and_used() -> None:
    assert fill is not None
    with pytest.raises(ValueError):
        fill.SparseRow(5, 8, [0], [1])  # a constant word other than 0 or all ones
    with pytest.raises(ValueError):
        fill.SparseRow(0, 8, [8], [1])  # past the row
    with pytest.raises(ValueError):
        fill.SparseRow(0, 8, [-1], [1])
    with pytest.raises(ValueError):
        fill.SparseRow(0, 8, [0, 1], [1])
    sparse = fill.SparseRow(0, 8, [2], [7])
    out = np.zeros((1, 16), np.int32)
    assert fill.copy_row(out, 0, sparse, 9) is False  # a row of another width: not written
    assert not out.any()
    assert fill.copy_row(out, 0, sparse, 8) is True and out[0].tolist() == [0, 0, 7] + [0] * 13


def test_the_guide_fills_from_sparse_rows_where_they_pay(artifact_path: Path) -> None:
    """Most of ``order.json``'s states allow a few tokens or all but a few: the guide's filler copies
    those from sparse rows (shared by the states of a row), the others from their rows."""
    assert fill is not None
    guide = Guide.load(artifact_path).warm()
    sources = guide._state_masks
    sparse = [isinstance(source, fill.SparseRow) for source in sources]
    assert 0.5 < sum(sparse) / len(sparse) < 1
    rows = guide._state_rows
    for state, source in enumerate(sources):
        assert source is guide._row_sources[rows[state]]
        dense = source.dense() if sparse[state] else source
        assert np.array_equal(dense, guide.mask(state)), state


def test_a_warmed_guide_pickles_with_its_sparse_rows() -> None:
    """A guide made in memory whose filler holds sparse rows survives pickling (a worker process
    gets one that way) and fills every state as the original does. (A guide loaded from a file
    holds memory maps, which do not pickle.)"""
    import pickle

    assert fill is not None
    schema = (PROJECT_ROOT / "examples" / "schemas" / "tool_call.json").read_text(encoding="utf-8")
    artifact = moonmaskc.compile_schema(schema, tokenizer=str(data_path("tokenizers", "gpt2.json")))
    guide = Guide.from_artifact(artifact).warm()
    assert any(isinstance(source, fill.SparseRow) for source in guide._state_masks)
    sparse = fill.SparseRow(0xFFFFFFFF, 8, [3], [5])
    again = pickle.loads(pickle.dumps(sparse))
    assert again.constant == sparse.constant and np.array_equal(again.dense(), sparse.dense())
    copy = pickle.loads(pickle.dumps(guide))
    for state in range(guide.num_states):
        ours = np.zeros((1, guide.bitmask_words), np.int32)
        theirs = np.zeros_like(ours)
        guide.fill_bitmask(state, ours)
        copy.fill_bitmask(state, theirs)
        assert np.array_equal(ours, theirs), state
