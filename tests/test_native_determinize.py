"""The native subset construction (``_native/determinize.pyx``) against the pure one: the same DFA,
numbered the same way, on random IRs, the example schemas and regexes; the same ``LimitError``;
malformed flat arrays rejected with a ``MoonmaskError``, never handed to native code."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata import determinize as determinize_module
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.classes import _byte_classes
from moonmaskc.automata.determinize import determinize, native_subsets, subset_arrays
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import native
from moonmaskc.automata.tables import _dense
from moonmaskc.automata.thompson import NFA, NFAArrays, NFAArraysError, build_nfa
from moonmaskc.errors import LimitError, MoonmaskError
from moonmaskc.frontends.regex import parse
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.limits import Limits
from tests.test_automata import ir_nodes

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "schemas"
SCHEMAS = sorted(path.stem for path in EXAMPLES.glob("*.json"))
REGEXES = [
    r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,24}",
    r"(a|b)*a(a|b){5}",
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    r"[^\x00-\x1f\"\\]{0,40}",
    r"(\d{3}-){2}\d{4}|\(\d{3}\) \d{3}-\d{4}",
    r"([A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*",
    r"a{3,7}(b|c{2,})?",
    r"",
]

needs_native = pytest.mark.skipif(
    native("determinize") is None,
    reason="the native determinize module is not built (or MOONMASKC_PURE is set): nothing to compare",
)


def _schema_node(name: str) -> ir.Node:
    schema = json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    return compile_schema_ir(schema).node


def _arrays(nfa: NFA) -> NFAArrays:
    class_of, covered = _byte_classes(nfa)
    return nfa.to_arrays(class_of, covered)


def _both_ways(
    node: ir.Node, monkeypatch: pytest.MonkeyPatch, limits: Limits | None = None
) -> tuple[DFA, DFA]:
    """(pure, native) ``determinize`` of ``node``, each on an NFA of its own."""
    with monkeypatch.context() as patch:
        patch.setenv("MOONMASKC_PURE", "1")
        assert native("determinize") is None
        pure = determinize(build_nfa(node), limits)
    native_dfa = determinize(build_nfa(node), limits)
    return pure, native_dfa


def assert_identical(pure: DFA, other: DFA) -> None:
    """The same arrays, dtypes included: same states, same numbering, same classes."""
    for name in ("transitions", "byte_class", "accepting", "distance"):
        expected, found = getattr(pure, name), getattr(other, name)
        assert found.dtype == expected.dtype, name
        assert np.array_equal(found, expected), name
    assert other.start == pure.start


def assert_native_matches_pure(node: ir.Node, monkeypatch: pytest.MonkeyPatch) -> None:
    pure, native_dfa = _both_ways(node, monkeypatch)
    assert_identical(pure, native_dfa)
    # the unpruned construction too: the same sets, numbered breadth first in class order
    nfa = build_nfa(node)
    class_of, covered = _byte_classes(nfa)
    groups, _, start = determinize_module._subsets(nfa, determinize_module._Moves(nfa, covered), Limits())
    transitions, accepting, native_start = native_subsets(nfa.to_arrays(class_of, covered), Limits())
    assert native_start == start
    assert np.array_equal(transitions, _dense(groups, max(class_of) + 1))
    assert accepting.dtype == bool
    # and the arrays interface: the same on both paths
    native_arrays = subset_arrays(nfa)
    with monkeypatch.context() as patch:
        patch.setenv("MOONMASKC_PURE", "1")
        pure_arrays = subset_arrays(nfa)
    for expected, found in zip(pure_arrays[:3], native_arrays[:3], strict=True):
        assert found.dtype == expected.dtype
        assert np.array_equal(found, expected)
    assert native_arrays[3] == pure_arrays[3]


@needs_native
@settings(max_examples=300, deadline=None, derandomize=True)
@given(ir_nodes())
def test_native_matches_pure_on_random_irs(node: ir.Node) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_native_matches_pure(node, monkeypatch)


@needs_native
@settings(max_examples=60, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes())
def test_native_matches_pure_with_embedded_automata(first: ir.Node, second: ir.Node) -> None:
    """States copied from an embedded DFA (many classes per state, ``ordered_edges``)."""
    embedded = ir.Automaton(compile_ir(ir.seq(first, ir.star(second))))
    node = ir.seq(ir.alt(embedded, second), ir.repeat(embedded, 0, 2))
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_native_matches_pure(node, monkeypatch)


@needs_native
@pytest.mark.parametrize("name", SCHEMAS)
def test_native_matches_pure_on_example_schemas(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_native_matches_pure(_schema_node(name), monkeypatch)


@needs_native
@pytest.mark.parametrize("pattern", REGEXES)
def test_native_matches_pure_on_regexes(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_native_matches_pure(parse(pattern).node, monkeypatch)


@needs_native
@pytest.mark.parametrize(
    "node",
    [
        ir.NOTHING,
        ir.EPSILON,
        ir.Seq((ir.text("ab"), ir.NOTHING)),  # an edge on the empty byte set, deep inside
        ir.Alt((ir.text("a"), ir.Seq((ir.text("a"), ir.NOTHING)), ir.text("ab"))),
        ir.star(ir.Alt((ir.text("x"), ir.NOTHING))),
    ],
    ids=["nothing", "epsilon", "dead-end", "dead-branch", "dead-loop"],
)
def test_native_matches_pure_on_degenerate_languages(node: ir.Node, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edge on no byte still makes its state one of the set (as ``NFA.closure`` keeps it)."""
    assert_native_matches_pure(node, monkeypatch)


@needs_native
def test_limit_error_is_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    node = parse("(a|b)*a(a|b){6}").node  # 2^7 states and more
    unpruned = native_subsets(_arrays(build_nfa(node)), Limits())[0].shape[0]
    for max_states in (0, 1, 5, unpruned - 2, unpruned - 1, unpruned):
        limits = Limits(max_states=max_states)
        outcomes: list[int | tuple[str, str, int, str | None]] = []
        for pure in (True, False):
            with monkeypatch.context() as patch:
                if pure:
                    patch.setenv("MOONMASKC_PURE", "1")
                try:
                    outcomes.append(determinize(build_nfa(node), limits).num_states)
                except LimitError as error:
                    outcomes.append((str(error), error.bound, error.limit, error.flag))
        assert outcomes[0] == outcomes[1], max_states
        # the largest state number is unpruned - 1: up to that bound the construction succeeds
        assert isinstance(outcomes[1], tuple) == (unpruned - 1 > max_states), max_states
    with pytest.raises(LimitError) as caught:
        native_subsets(_arrays(build_nfa(node)), Limits(max_states=10))
    assert caught.value.bound == "max_states" and caught.value.flag == "--max-states"
    assert "the DFA needs more than 10 states" in str(caught.value)


def test_to_arrays_spells_the_nfa() -> None:
    """Every (state, class, target) of the arrays, and nothing else, is an NFA edge on a byte of
    that class; epsilon edges and important states as the NFA has them."""
    nfa = build_nfa(_schema_node("order"))
    class_of, covered = _byte_classes(nfa)
    arrays = nfa.to_arrays(class_of, covered)
    arrays.check()
    assert arrays.num_classes == max(class_of) + 1
    assert arrays.class_of.tolist() == class_of
    for s in range(nfa.num_states):
        lo, hi = int(arrays.edge_offsets[s]), int(arrays.edge_offsets[s + 1])
        found = sorted(
            zip(arrays.edge_class[lo:hi].tolist(), arrays.edge_target[lo:hi].tolist(), strict=True)
        )
        expected = sorted(
            (c, target)
            for mask, target in nfa.edges[s]
            for c in range(arrays.num_classes)
            if covered[mask] >> c & 1
        )
        assert found == expected
        lo, hi = int(arrays.eps_offsets[s]), int(arrays.eps_offsets[s + 1])
        assert arrays.eps_target[lo:hi].tolist() == nfa.epsilon[s]
        assert bool(arrays.important[s]) == (bool(nfa.edges[s]) or s == nfa.final)


def _malformed(arrays: NFAArrays) -> list[tuple[str, NFAArrays]]:
    replace = dataclasses.replace
    bad_target = arrays.edge_target.copy()
    bad_target[len(bad_target) // 2] = arrays.num_states
    negative_target = arrays.eps_target.copy()
    negative_target[0] = -1
    bad_class = arrays.edge_class.copy()
    bad_class[-1] = arrays.num_classes
    falling = arrays.edge_offsets.copy()
    falling[1], falling[2] = falling[2] + 1, falling[1]
    too_far = arrays.eps_offsets.copy()
    too_far[-1] += 5
    return [
        ("target out of range", replace(arrays, edge_target=bad_target)),
        ("negative epsilon target", replace(arrays, eps_target=negative_target)),
        ("class out of range", replace(arrays, edge_class=bad_class)),
        ("offsets falling", replace(arrays, edge_offsets=falling)),
        ("offsets past the end", replace(arrays, eps_offsets=too_far)),
        ("wrong dtype", replace(arrays, edge_target=arrays.edge_target.astype(np.int64))),
        ("wrong shape", replace(arrays, class_of=arrays.class_of[:255])),
        ("not contiguous", replace(arrays, edge_class=np.repeat(arrays.edge_class, 2)[::2])),
        ("not an array", replace(arrays, important=arrays.important.tolist())),
        ("start out of range", replace(arrays, start=arrays.num_states)),
        ("final out of range", replace(arrays, final=-2)),
        ("too many classes", replace(arrays, num_classes=257)),
        ("num_states not an int", replace(arrays, num_states=float(arrays.num_states))),
        ("short important", replace(arrays, important=arrays.important[:-1])),
    ]


def test_malformed_arrays_are_a_moonmask_error() -> None:
    arrays = _arrays(build_nfa(parse(r"[a-z]+(,[0-9]{2,4})*").node))
    arrays.check()
    for label, bad in _malformed(arrays):
        with pytest.raises(NFAArraysError):
            bad.check()
        assert issubclass(NFAArraysError, MoonmaskError), label


def test_to_arrays_refuses_a_mask_without_classes() -> None:
    nfa = build_nfa(parse("[a-c]x").node)
    class_of, covered = _byte_classes(nfa)
    covered.pop(next(iter(covered)))
    with pytest.raises(NFAArraysError):
        nfa.to_arrays(class_of, covered)


@needs_native
def test_malformed_arrays_never_reach_native_code() -> None:
    """Through ``native_subsets`` the check raises first; called directly, the module checks again
    and raises ``ValueError`` (or ``TypeError`` for a wrong type), never crashes."""
    module = native("determinize")
    assert module is not None
    arrays = _arrays(build_nfa(parse(r"[a-z]+(,[0-9]{2,4})*").node))
    for label, bad in _malformed(arrays):
        with pytest.raises(NFAArraysError):
            native_subsets(bad, Limits())
        if label in ("wrong shape", "num_states not an int"):
            continue  # class_of is never read natively; Cython takes 5.0 for 5, which is harmless
        with pytest.raises((ValueError, TypeError, OverflowError)):
            module.subsets(
                bad.num_states,
                bad.start,
                bad.final,
                bad.num_classes,
                bad.edge_offsets,
                bad.edge_class,
                bad.edge_target,
                bad.eps_offsets,
                bad.eps_target,
                bad.important,
                1000,
            )
            pytest.fail(f"{label}: accepted by the native module")
    with pytest.raises(ValueError):
        module.distances(np.array([[0, 2], [1, 0]], dtype=np.int32), np.zeros(2, dtype=np.uint8))


@needs_native
@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.integers(0, 5), min_size=3, max_size=3), min_size=1, max_size=6), st.data())
def test_native_distances_against_breadth_first_search(rows: list[list[int]], data: st.DataObject) -> None:
    from moonmaskc.automata.distances import shortest_distances

    module = native("determinize")
    assert module is not None
    table = np.array([[t % len(rows) for t in row] for row in rows], dtype=np.int32)
    table[0] = 0
    accepting = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))))
    accepting[0] = False
    expected = shortest_distances(table, accepting)
    assert np.array_equal(module.distances(table, accepting.view(np.uint8)), expected)
