"""Native pruning, distances and Hopcroft minimisation (``_native/minimize.pyx``) against the pure
path: the same canonical minimal DFA, array for array, on hypothesis IRs, random dense tables,
the example schemas; and malformed arrays raise a ``MoonmaskError`` before reaching C. And
``canonical_minimal`` (renumbered columns, minimisation, merged columns and distances in one call)
against the composition it replaced, its malformed inputs rejected natively."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.determinize import determinize, flat_subsets, native_subsets
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.distances import prune, shortest_distances
from moonmaskc.automata.flat_nfa import build_flat_nfa
from moonmaskc.automata.minimize import (
    _columns_by_smallest_byte,
    _empty_dfa,
    _native_minimal,
    equivalent_state_pairs,
    minimal_dense,
    minimize,
)
from moonmaskc.automata.native import PURE_ENV, native, pure_forced
from moonmaskc.automata.thompson import build_nfa
from moonmaskc.errors import LimitError, MalformedDFAError, MoonmaskError
from moonmaskc.frontends.regex import parse
from moonmaskc.limits import Limits
from tests.test_automata import ir_nodes

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "schemas"
FIXTURE_HEALTH = [HealthCheck.function_scoped_fixture]


def native_module() -> ModuleType:
    """The native minimize module, or skip the calling test saying why it is absent."""
    if pure_forced():
        pytest.skip(f"{PURE_ENV} forces the pure core: nothing native to compare")
    module = native("minimize")
    if module is None:
        pytest.skip(
            "moonmaskc.automata._native.minimize is not built (reinstall with a C compiler, or "
            "cythonize -i -3 moonmaskc/automata/_native/minimize.pyx)"
        )
    return module


@contextmanager
def pure_core(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with monkeypatch.context() as patch:
        patch.setenv(PURE_ENV, "1")
        yield


def assert_same_dfa(expected: DFA, actual: DFA) -> None:
    assert actual.start == expected.start
    for name in ("transitions", "byte_class", "accepting", "distance"):
        left, right = getattr(expected, name), getattr(actual, name)
        assert left.dtype == right.dtype, name
        assert np.array_equal(left, right), name


def dense_of(dfa: DFA) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    return dfa.transitions, dfa.byte_class, dfa.accepting, dfa.start


def check_minimal(dfa: DFA) -> None:
    """Canonical-form invariants that do not depend on the pure path."""
    assert equivalent_state_pairs(dfa) == []
    assert not dfa.transitions[0].any() and not dfa.accepting[0]
    if dfa.start:
        assert dfa.start == 1
        assert np.all(dfa.distance[1:] >= 0)
        assert np.array_equal(dfa.distance, shortest_distances(dfa.transitions, dfa.accepting))
        columns = dfa.transitions.T
        assert len({column.tobytes() for column in columns}) == len(columns)  # merged


def compare_on(unminimised: DFA, expected: DFA, monkeypatch: pytest.MonkeyPatch) -> None:
    """Native ``minimal_dense``, ``minimize``, ``prune`` and ``shortest_distances`` on
    ``unminimised`` against ``expected`` (the pure path's minimal DFA) and the pure path."""
    native_module()
    actual = minimal_dense(*dense_of(unminimised))
    assert_same_dfa(expected, actual)
    check_minimal(actual)
    assert_same_dfa(expected, minimize(unminimised))
    with pure_core(monkeypatch):
        pure_pruned = prune(unminimised)
        pure_distance = shortest_distances(unminimised.transitions, unminimised.accepting)
    assert_same_dfa(pure_pruned, prune(unminimised))
    assert np.array_equal(pure_distance, shortest_distances(unminimised.transitions, unminimised.accepting))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=FIXTURE_HEALTH)
@given(node=ir_nodes())
def test_native_minimal_dense_matches_pure_compile_on_irs(
    node: ir.Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    native_module()
    with pure_core(monkeypatch):
        expected = compile_ir(node)
        unminimised = determinize(build_nfa(node))
        assert_same_dfa(expected, minimal_dense(*dense_of(unminimised)))  # the pure twin agrees too
    compare_on(unminimised, expected, monkeypatch)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda path: path.stem)
def test_native_minimal_dense_matches_pure_compile_on_example_schemas(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moonmaskc.frontends.schema import compile_schema_ir

    native_module()
    node = compile_schema_ir(json.loads(path.read_text(encoding="utf-8"))).node
    with pure_core(monkeypatch):
        expected = compile_ir(node)
        unminimised = determinize(build_nfa(node))
    compare_on(unminimised, expected, monkeypatch)


@st.composite
def dense_dfas(draw: st.DrawFn, dead_row: bool = True) -> DFA:
    """A random dense DFA: any table (unreachable states, states that cannot reach acceptance,
    equivalent states), dead state 0 (when ``dead_row``), byte classes as runs of bytes whose
    class numbers are drawn freely (out of byte order, several runs per class, unused classes)."""
    num_states = draw(st.integers(1, 12))
    num_classes = draw(st.integers(1, 4))
    rows = draw(
        st.lists(
            st.lists(st.integers(0, num_states - 1), min_size=num_classes, max_size=num_classes),
            min_size=num_states,
            max_size=num_states,
        )
    )
    accepting = draw(st.lists(st.booleans(), min_size=num_states, max_size=num_states))
    if dead_row:
        rows[0] = [0] * num_classes
        accepting[0] = False
    cuts = sorted(draw(st.sets(st.integers(1, 255), max_size=5)))
    labels = draw(st.lists(st.integers(0, num_classes - 1), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
    byte_class = np.zeros(256, dtype=np.int32)
    for lo, hi, label in zip([0, *cuts], [*cuts, 256], labels, strict=True):
        byte_class[lo:hi] = label
    start = draw(st.integers(0, num_states - 1))
    table = np.array(rows, dtype=np.int32).reshape(num_states, num_classes)
    return DFA(table, byte_class, np.array(accepting, dtype=bool), start)


def representatives(dfa: DFA) -> list[int]:
    return sorted({int(np.flatnonzero(dfa.byte_class == c)[0]) for c in np.unique(dfa.byte_class)})


def words(alphabet: list[int], max_len: int) -> Iterator[bytes]:
    level = [b""]
    for _ in range(max_len + 1):
        yield from level
        level = [word + bytes([b]) for word in level for b in alphabet]


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=FIXTURE_HEALTH)
@given(dfa=dense_dfas())
def test_native_minimal_dense_matches_pure_on_random_tables(
    dfa: DFA, monkeypatch: pytest.MonkeyPatch
) -> None:
    native_module()
    with pure_core(monkeypatch):
        expected = minimal_dense(*dense_of(dfa))
        pure_pruned = prune(dfa)
        pure_distance = shortest_distances(dfa.transitions, dfa.accepting)
    actual = minimal_dense(*dense_of(dfa))
    assert_same_dfa(expected, actual)
    check_minimal(actual)
    assert_same_dfa(pure_pruned, prune(dfa))
    assert np.array_equal(pure_distance, shortest_distances(dfa.transitions, dfa.accepting))
    # the same language, on every word of up to 4 bytes over one byte per class
    for word in words(representatives(dfa), 4 if dfa.num_states > 3 else 5):
        assert actual.accepts(word) == dfa.accepts(word), word
    if len(np.unique(dfa.byte_class)) == dfa.num_classes:  # no unused class: minimize(prune) agrees
        assert_same_dfa(expected, minimize(prune(dfa)))
        with pure_core(monkeypatch):
            assert_same_dfa(expected, minimize(prune(dfa)))


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=FIXTURE_HEALTH)
@given(dfa=dense_dfas(dead_row=False))
def test_native_distances_match_pure_on_any_table(dfa: DFA, monkeypatch: pytest.MonkeyPatch) -> None:
    """Distances do not need a dead state 0: state 0 may accept or lead anywhere."""
    native_module()
    with pure_core(monkeypatch):
        expected = shortest_distances(dfa.transitions, dfa.accepting)
    assert np.array_equal(expected, shortest_distances(dfa.transitions, dfa.accepting))


def test_empty_language_and_single_state() -> None:
    native_module()
    byte_class = np.zeros(256, dtype=np.int32)
    dead_end = np.array([[0, 0], [2, 0], [1, 1]], dtype=np.int32)  # no state accepts
    for table, accepting, start in [
        (dead_end, np.zeros(3, dtype=bool), 1),
        (np.zeros((1, 1), dtype=np.int32), np.zeros(1, dtype=bool), 0),
        (dead_end, np.array([False, False, True]), 0),  # start 0: dead from the start
    ]:
        classes = byte_class if table.shape[1] == 1 else np.arange(256, dtype=np.int32) % 2
        result = minimal_dense(table, classes, accepting, start)
        assert result.start == 0 and result.num_states == 1 and result.is_empty
    only_empty_word = minimal_dense(np.zeros((2, 1), dtype=np.int32), byte_class, np.array([False, True]), 1)
    assert only_empty_word.accepts(b"") and not only_empty_word.accepts(b"a")
    assert only_empty_word.num_states == 2 and list(only_empty_word.distance) == [-1, 0]


def test_result_never_shares_the_callers_byte_class() -> None:
    native_module()
    byte_class = np.zeros(256, dtype=np.int32)
    result = minimal_dense(np.array([[0], [1]], dtype=np.int32), byte_class, np.array([False, True]), 1)
    assert not np.shares_memory(result.byte_class, byte_class)


def valid_arrays() -> dict[str, Any]:
    return {
        "transitions": np.array([[0, 0], [2, 0], [2, 1]], dtype=np.int32),
        "byte_class": (np.arange(256) % 2).astype(np.int32),
        "accepting": np.array([False, False, True]),
        "start": 1,
    }


MALFORMED: dict[str, Callable[[dict[str, Any]], None]] = {
    "transitions int64": lambda a: a.update(transitions=a["transitions"].astype(np.int64)),
    "transitions big-endian": lambda a: a.update(transitions=a["transitions"].astype(">i4")),
    "transitions a list": lambda a: a.update(transitions=a["transitions"].tolist()),
    "transitions 1-D": lambda a: a.update(transitions=a["transitions"].ravel()),
    "transitions 3-D": lambda a: a.update(transitions=a["transitions"][:, :, None]),
    "transitions Fortran order": lambda a: a.update(transitions=np.asfortranarray(a["transitions"])),
    "transitions strided": lambda a: a.update(transitions=np.repeat(a["transitions"], 2, axis=1)[:, ::2]),
    "no class": lambda a: a.update(transitions=np.zeros((3, 0), dtype=np.int32)),
    "no state": lambda a: a.update(transitions=np.zeros((0, 2), dtype=np.int32)),
    "target too large": lambda a: a["transitions"].__setitem__((1, 1), 3),
    "negative target": lambda a: a["transitions"].__setitem__((2, 0), -1),
    "most negative target": lambda a: a["transitions"].__setitem__((2, 0), np.iinfo(np.int32).min),
    "row 0 not dead": lambda a: a["transitions"].__setitem__((0, 1), 2),
    "state 0 accepts": lambda a: a["accepting"].__setitem__(0, True),
    "byte class too large": lambda a: a["byte_class"].__setitem__(7, 2),
    "negative byte class": lambda a: a["byte_class"].__setitem__(7, -1),
    "byte class int64": lambda a: a.update(byte_class=a["byte_class"].astype(np.int64)),
    "byte class short": lambda a: a.update(byte_class=a["byte_class"][:255].copy()),
    "byte class strided": lambda a: a.update(byte_class=np.repeat(a["byte_class"], 2)[::2]),
    "accepting uint8": lambda a: a.update(accepting=a["accepting"].astype(np.uint8)),
    "accepting short": lambda a: a.update(accepting=a["accepting"][:2].copy()),
    "accepting strided": lambda a: a.update(accepting=np.repeat(a["accepting"], 2)[::2]),
    "start too large": lambda a: a.update(start=3),
    "negative start": lambda a: a.update(start=-1),
    "start a float": lambda a: a.update(start=1.0),
}


@pytest.mark.parametrize("core", ["native", "pure"])
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_arrays_raise_a_moonmask_error(
    name: str, core: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if core == "native":
        native_module()
    else:
        monkeypatch.setenv(PURE_ENV, "1")
    arrays = valid_arrays()
    minimal_dense(**arrays)  # valid as given
    MALFORMED[name](arrays)
    with pytest.raises(MoonmaskError):
        minimal_dense(**arrays)


def test_malformed_dfas_raise_a_moonmask_error_in_prune_and_distances() -> None:
    native_module()
    table = np.array([[0, 0], [2, 0], [2, 5]], dtype=np.int32)  # 5: no such state
    accepting = np.array([False, False, True])
    with pytest.raises(MoonmaskError):
        shortest_distances(table, accepting)
    with pytest.raises(MoonmaskError):
        prune(DFA(table, np.zeros(256, dtype=np.int32), accepting, 1))
    with pytest.raises(MoonmaskError):
        minimize(DFA(table, np.zeros(256, dtype=np.int32), accepting, 1))
    with pytest.raises(MoonmaskError):
        prune(
            DFA(
                np.array([[0], [1]], dtype=np.int32), np.zeros(256, dtype=np.int32), np.array([True, True]), 1
            )
        )


def test_native_module_checks_bounds_when_called_directly() -> None:
    """The Python stage validates first; called directly, the module still refuses to read out of
    bounds (``ValueError``, never a crash)."""
    module = native_module()
    table = np.array([[0, 0], [2, 0], [2, 7]], dtype=np.int32)
    flags = np.array([0, 0, 1], dtype=np.uint8)
    for call in (
        lambda: module.distances(table, flags),
        lambda: module.prune(table, np.array([-1, 1, 0], dtype=np.int32)),
        lambda: module.minimal(table, flags, 1),
        lambda: module.minimal(np.array([[0, 1], [1, 1]], dtype=np.int32), flags[:2], 1),  # row 0 live
        lambda: module.minimal(table[:, :1].copy(), flags, 3),  # start out of range
        lambda: module.minimal(np.zeros((2, 0), dtype=np.int32), flags[:2], 1),
        lambda: module.distances(table, flags[:2]),
    ):
        with pytest.raises(ValueError):
            call()


def blown_up(seed: int, base_states: int, copies: int, num_classes: int) -> DFA:
    """A random DFA of ``base_states`` states, each live state copied ``copies`` times (every copy
    leading to a random copy of each target), plus a few dead ends and unreachable states: many
    equivalent states for Hopcroft to merge, in blocks much larger than the splitters."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, base_states, size=(base_states, num_classes), dtype=np.int32)
    base[0] = 0
    base_accepting = rng.random(base_states) < 0.3
    base_accepting[0] = False
    n = 1 + (base_states - 1) * copies
    copy_of = np.concatenate([[0], np.repeat(np.arange(1, base_states), copies)])  # state -> base state
    first_copy = np.concatenate([[0], 1 + (np.arange(base_states - 1) * copies)])
    targets = base[copy_of]
    offsets = rng.integers(0, copies, size=targets.shape, dtype=np.int32)
    table = np.where(targets == 0, 0, first_copy[targets] + offsets).astype(np.int32)
    order = np.concatenate([[0], 1 + rng.permutation(n - 1)])  # shuffle the state numbers
    rank = np.empty(n, dtype=np.int32)
    rank[order] = np.arange(n, dtype=np.int32)
    shuffled = np.ascontiguousarray(rank[table][order])
    byte_class = (np.arange(256) * num_classes // 256).astype(np.int32)
    return DFA(shuffled, byte_class, base_accepting[copy_of][order], int(rank[1]))


@pytest.mark.parametrize(
    "seed, base_states, copies, num_classes",
    [(1, 40, 50, 3), (2, 200, 10, 5), (6, 12, 300, 2), (4, 600, 3, 8)],
)
def test_native_minimal_dense_merges_large_blocks_as_pure_does(
    seed: int, base_states: int, copies: int, num_classes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    native_module()
    dfa = blown_up(seed, base_states, copies, num_classes)
    with pure_core(monkeypatch):
        expected = minimal_dense(*dense_of(dfa))
    actual = minimal_dense(*dense_of(dfa))
    assert_same_dfa(expected, actual)
    check_minimal(actual)
    assert 1 < actual.num_states <= base_states


# --- canonical_minimal: columns renumbered, minimised, merged, distances, in one native call ----


def old_native_minimal_dense(module: ModuleType, dfa: DFA) -> DFA:
    """The native ``minimal_dense`` as it was composed before ``canonical_minimal``: columns by
    smallest byte in numpy, ``minimal``, ``column_classes`` and the merge in numpy."""
    table, classes = _columns_by_smallest_byte(dfa.transitions, dfa.byte_class)
    found = module.minimal(table, dfa.accepting.view(np.uint8), dfa.start)
    if found is None:
        return _empty_dfa()
    minimal_table, minimal_accepting, distance = found
    column_class = module.column_classes(minimal_table)
    if int(column_class.max()) + 1 < minimal_table.shape[1]:
        _, kept = np.unique(column_class, return_index=True)
        minimal_table = np.ascontiguousarray(minimal_table[:, kept])
        classes = column_class[classes]
    return DFA(minimal_table, classes, minimal_accepting, 1, distance)


def canonical(module: ModuleType, dfa: DFA) -> DFA:
    return _native_minimal(module, dfa.transitions, dfa.byte_class, dfa.accepting.view(np.uint8), dfa.start)


@cache
def embeddable() -> list[ir.Automaton]:
    patterns = [r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,24}", r"[^\x00-\x1f\"\\]{0,4}", r"(ab|c)*", r"x?"]
    return [ir.Automaton(compile_ir(parse(pattern).node)) for pattern in patterns] + [
        ir.Automaton(compile_ir(ir.NOTHING))
    ]


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=FIXTURE_HEALTH)
@given(first=ir_nodes(), second=ir_nodes(), data=st.data())
def test_canonical_minimal_matches_the_old_path_on_irs_with_embedded_automata(
    first: ir.Node, second: ir.Node, data: st.DataObject
) -> None:
    """On the unpruned subset construction of hypothesis IRs (plain, and embedding automata several
    times): ``canonical_minimal`` gives the old composition's DFA array for array, and
    ``compile_ir`` gives what the old native path (``to_arrays``, ``native_subsets``, the old
    ``minimal_dense``) gave."""
    module = native_module()
    embedded = ir.Automaton(compile_ir(ir.seq(first, ir.star(second))))
    other = data.draw(st.sampled_from(embeddable()))
    for node in (
        first,
        ir.seq(ir.alt(embedded, other, second), ir.repeat(embedded, 0, 2), ir.repeat(other, 0, 1)),
    ):
        try:
            transitions, accepting, start, class_of = flat_subsets(build_flat_nfa(node), Limits())
        except LimitError:  # (random draws can blow up past --max-states): compile_ir refuses too
            with pytest.raises(LimitError):
                compile_ir(node)
            continue
        unminimised = DFA(transitions, class_of, accepting, start)
        expected = old_native_minimal_dense(module, unminimised)
        assert_same_dfa(expected, canonical(module, unminimised))
        assert_same_dfa(expected, minimal_dense(*dense_of(unminimised)))
        arrays = build_flat_nfa(node).to_arrays()
        old_transitions, old_accepting, old_start = native_subsets(arrays, Limits())
        old = old_native_minimal_dense(
            module, DFA(old_transitions, arrays.class_of, old_accepting, old_start)
        )
        assert_same_dfa(old, compile_ir(node))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(dfa=dense_dfas())
def test_canonical_minimal_matches_the_old_path_on_random_tables(dfa: DFA) -> None:
    """Columns out of byte order, unused columns, unreachable and dead-end states."""
    module = native_module()
    expected = old_native_minimal_dense(module, dfa)
    actual = canonical(module, dfa)
    assert_same_dfa(expected, actual)
    assert not np.shares_memory(actual.byte_class, dfa.byte_class)
    assert not np.shares_memory(actual.transitions, dfa.transitions)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda path: path.stem)
def test_canonical_minimal_matches_the_old_path_on_example_schemas(path: Path) -> None:
    from moonmaskc.frontends.schema import compile_schema_ir

    module = native_module()
    node = compile_schema_ir(json.loads(path.read_text(encoding="utf-8"))).node
    transitions, accepting, start, class_of = flat_subsets(build_flat_nfa(node), Limits())
    unminimised = DFA(transitions, class_of, accepting, start)
    assert_same_dfa(old_native_minimal_dense(module, unminimised), compile_ir(node))


def valid_native_arrays() -> dict[str, Any]:
    arrays = valid_arrays()
    arrays["accepting"] = arrays["accepting"].astype(np.uint8)
    return arrays


NATIVE_MALFORMED: dict[str, Callable[[dict[str, Any]], None]] = {
    **{name: change for name, change in MALFORMED.items() if name != "accepting uint8"},
    "accepting int32": lambda a: a.update(accepting=a["accepting"].astype(np.int32)),
    "accepting 2-D": lambda a: a.update(accepting=a["accepting"][:, None]),
    "byte class 257 entries": lambda a: a.update(byte_class=np.append(a["byte_class"], np.int32(0))),
    "start huge": lambda a: a.update(start=2**70),
}


@pytest.mark.parametrize("name", sorted(NATIVE_MALFORMED))
def test_canonical_minimal_checks_every_input(name: str) -> None:
    """Called directly, ``canonical_minimal`` refuses malformed arrays (``ValueError``, or
    ``TypeError`` / ``OverflowError`` for an argument of the wrong kind), never reads out of bounds;
    through ``_native_minimal`` that is a ``MalformedDFAError``, a ``MoonmaskError``."""
    module = native_module()
    arrays = valid_native_arrays()
    module.canonical_minimal(**arrays)  # valid as given
    NATIVE_MALFORMED[name](arrays)
    with pytest.raises((ValueError, TypeError, OverflowError)):
        module.canonical_minimal(**arrays)
    with pytest.raises(MalformedDFAError) as caught:
        _native_minimal(module, **arrays)
    assert isinstance(caught.value, MoonmaskError)


def test_canonical_minimal_drops_unused_columns_and_merges_equal_ones() -> None:
    module = native_module()
    # column 2 unused, columns 0 and 3 equal, classes out of byte order
    table = np.array([[0, 0, 0, 0], [2, 1, 2, 2], [0, 2, 1, 0]], dtype=np.int32)
    byte_class = np.full(256, 3, dtype=np.int32)
    byte_class[:10] = 1
    byte_class[100:] = 0
    found = module.canonical_minimal(table, byte_class, np.array([0, 0, 1], dtype=np.uint8), 1)
    assert found is not None
    minimal_table, classes, accepting, distance = found
    assert classes[0] == 0 and classes[10] == 1 and classes[100] == 1
    assert minimal_table.shape[1] == 2 and accepting.dtype == bool and distance.tolist() == [-1, 1, 0]
    assert module.canonical_minimal(table, byte_class, np.zeros(3, dtype=np.uint8), 1) is None
