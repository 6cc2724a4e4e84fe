"""The native subset construction (``_native/determinize.pyx``) against the pure one: the same DFA,
numbered the same way, on random IRs, the example schemas and regexes; the same ``LimitError``;
malformed flat arrays rejected with a ``MoonmaskError``, never handed to native code. And
``flat_subsets`` (the flat NFA almost raw, classes and CSR built natively) against the arrays path
(``FlatNFA.to_arrays`` + ``native_subsets``), its malformed inputs rejected natively."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.classes import byte_classes
from moonmaskc.automata.determinize import (
    determinize,
    flat_subsets,
    native_input_subsets,
    native_subsets,
    pure_subsets,
    subset_arrays,
)
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.flat_nfa import NativeInput, build_flat_nfa
from moonmaskc.automata.native import native
from moonmaskc.automata.thompson import NFA, NFAArrays, NFAArraysError, build_nfa
from moonmaskc.errors import LimitError, MalformedArraysError, MoonmaskError
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
    class_of, covered = byte_classes(nfa)
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
    class_of, covered = byte_classes(nfa)
    pure_transitions, pure_accepting, start = pure_subsets(nfa, Limits())
    transitions, accepting, native_start = native_subsets(nfa.to_arrays(class_of, covered), Limits())
    assert native_start == start
    assert pure_transitions.shape[1] == max(class_of) + 1
    assert np.array_equal(transitions, pure_transitions)
    assert accepting.dtype == bool
    assert np.array_equal(accepting, pure_accepting)
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
    class_of, covered = byte_classes(nfa)
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
    class_of, covered = byte_classes(nfa)
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


# --- flat_subsets: the flat NFA handed over almost raw, classes and CSR built natively ----------


@cache
def _embeddable() -> list[ir.Automaton]:
    """Minimal DFAs to embed: many byte classes, an accepting start, an empty language."""
    return [ir.Automaton(compile_ir(parse(pattern).node)) for pattern in REGEXES[:4]] + [
        ir.Automaton(compile_ir(ir.NOTHING)),
        ir.Automaton(compile_ir(ir.EPSILON)),
    ]


def assert_flat_matches_arrays(node: ir.Node, limits: Limits | None = None) -> None:
    """``flat_subsets`` on a flat NFA against ``native_subsets`` on its ``to_arrays``: the same
    unpruned DFA, dtypes included, and the same byte classes."""
    limits = limits or Limits()
    flat = build_flat_nfa(node, limits)
    arrays = flat.to_arrays()
    try:
        expected_transitions, expected_accepting, expected_start = native_subsets(arrays, limits)
    except LimitError:  # (random draws can blow up past --max-states): both refuse alike
        with pytest.raises(LimitError):
            flat_subsets(flat, limits)
        return
    transitions, accepting, start, class_of = flat_subsets(flat, limits)
    assert start == expected_start
    for expected, found in (
        (expected_transitions, transitions),
        (expected_accepting, accepting),
        (arrays.class_of, class_of),
    ):
        assert found.dtype == expected.dtype
        assert found.shape == expected.shape
        assert np.array_equal(found, expected)


@needs_native
@settings(max_examples=300, deadline=None, derandomize=True)
@given(ir_nodes())
def test_flat_subsets_matches_the_arrays_path_on_random_irs(node: ir.Node) -> None:
    assert_flat_matches_arrays(node)


@needs_native
@settings(max_examples=150, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes(), st.data())
def test_flat_subsets_matches_the_arrays_path_with_embedded_automata(
    first: ir.Node, second: ir.Node, data: st.DataObject
) -> None:
    """Blocks: one DFA embedded several times (grouped into one stacked table), several distinct
    DFAs with their own byte classes, an empty one (no block at all) and an accepting start."""
    embedded = ir.Automaton(compile_ir(ir.seq(first, ir.star(second))))
    other = data.draw(st.sampled_from(_embeddable()))
    node = ir.seq(
        ir.alt(embedded, second, other),
        ir.repeat(embedded, 0, 2),
        ir.star(ir.alt(first, other)),
        ir.alt(embedded, ir.text("z")),
    )
    assert_flat_matches_arrays(node)
    assert_flat_matches_arrays(ir.alt(other, first))


@needs_native
@pytest.mark.parametrize("name", SCHEMAS)
def test_flat_subsets_matches_the_arrays_path_on_example_schemas(name: str) -> None:
    assert_flat_matches_arrays(_schema_node(name))


@needs_native
@pytest.mark.parametrize("pattern", REGEXES)
def test_flat_subsets_matches_the_arrays_path_on_regexes(pattern: str) -> None:
    assert_flat_matches_arrays(parse(pattern).node)


@needs_native
@pytest.mark.parametrize(
    "node",
    [
        ir.NOTHING,
        ir.EPSILON,
        ir.Seq((ir.text("ab"), ir.NOTHING)),
        ir.Alt((ir.text("a"), ir.Seq((ir.text("a"), ir.NOTHING)), ir.text("ab"))),
        ir.star(ir.Alt((ir.text("x"), ir.NOTHING))),
        ir.byte_set((1 << 256) - 1),
    ],
    ids=["nothing", "epsilon", "dead-end", "dead-branch", "dead-loop", "any-byte"],
)
def test_flat_subsets_matches_the_arrays_path_on_degenerate_languages(node: ir.Node) -> None:
    assert_flat_matches_arrays(node)


@needs_native
def test_flat_subsets_limit_error_is_the_arrays_paths() -> None:
    node = parse("(a|b)*a(a|b){6}").node
    unpruned = flat_subsets(build_flat_nfa(node), Limits())[0].shape[0]
    for max_states in (0, 1, 5, unpruned - 2, unpruned - 1, unpruned):
        limits = Limits(max_states=max_states)
        outcomes: list[int | str] = []
        for run in (
            lambda limits: native_subsets(build_flat_nfa(node, limits).to_arrays(), limits)[0].shape[0],
            lambda limits: flat_subsets(build_flat_nfa(node, limits), limits)[0].shape[0],
        ):
            try:
                outcomes.append(run(limits))
            except LimitError as error:
                assert error.bound == "max_states" and error.flag == "--max-states"
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1], max_states
        assert isinstance(outcomes[1], str) == (unpruned - 1 > max_states), max_states


def _flat_input() -> NativeInput:
    """A valid input with plain edges, epsilon edges and two distinct DFAs, one embedded twice."""
    embedded = ir.Automaton(compile_ir(parse(r"[a-c]+x?").node))
    other = ir.Automaton(compile_ir(parse(r"[0-9]{1,3}").node))
    node = ir.seq(ir.text("q"), embedded, ir.star(ir.alt(other, ir.text(","))), embedded)
    inputs = build_flat_nfa(node).native_input()
    assert len(inputs.edge_source) and len(inputs.eps_source) and len(inputs.dfa_shapes) == 2
    assert len(inputs.blocks) == 3
    return inputs


def _changed(inputs: NativeInput, name: str, change: Callable[[np.ndarray], object]) -> NativeInput:
    array = getattr(inputs, name).copy()
    result = change(array)
    changes: dict[str, Any] = {name: array if result is None else result}
    return inputs._replace(**changes)


def _last_block_first(inputs: NativeInput, shift: int) -> NativeInput:
    """The last block moved so that its last state is ``num_states - 1 + shift``."""
    states = int(inputs.dfa_shapes[inputs.blocks[-1, 2], 0])
    return _changed(
        inputs, "blocks", lambda a: a.__setitem__((-1, 0), inputs.num_states - states + 1 + shift)
    )


def _malformed_flat(inputs: NativeInput) -> list[tuple[str, NativeInput]]:
    n = inputs.num_states
    masks = len(inputs.masks)
    return [
        ("no state", inputs._replace(num_states=0)),
        ("too many states", inputs._replace(num_states=2**31)),
        ("start out of range", inputs._replace(start=n)),
        ("final out of range", inputs._replace(final=-2)),
        ("edge source out of range", _changed(inputs, "edge_source", lambda a: a.__setitem__(-1, n))),
        ("negative edge target", _changed(inputs, "edge_target", lambda a: a.__setitem__(0, -1))),
        ("mask index out of range", _changed(inputs, "edge_mask", lambda a: a.__setitem__(0, masks))),
        ("edge lists of different lengths", _changed(inputs, "edge_target", lambda a: a[:-1])),
        ("masks of 31 bytes", _changed(inputs, "masks", lambda a: a[:, :31].copy())),
        ("masks int32", _changed(inputs, "masks", lambda a: a.astype(np.int32))),
        ("epsilon source out of range", _changed(inputs, "eps_source", lambda a: a.__setitem__(0, n))),
        ("epsilon target negative", _changed(inputs, "eps_target", lambda a: a.__setitem__(-1, -3))),
        ("epsilon lists of different lengths", _changed(inputs, "eps_source", lambda a: a[1:])),
        ("block of an unknown DFA", _changed(inputs, "blocks", lambda a: a.__setitem__((0, 2), 2))),
        ("block of a negative DFA", _changed(inputs, "blocks", lambda a: a.__setitem__((0, 2), -1))),
        ("block exit out of range", _changed(inputs, "blocks", lambda a: a.__setitem__((1, 1), n))),
        ("block past the last state", _last_block_first(inputs, 1)),
        ("block before the first state", _changed(inputs, "blocks", lambda a: a.__setitem__((0, 0), -1))),
        ("blocks of two columns", _changed(inputs, "blocks", lambda a: a[:, :2].copy())),
        ("a DFA without classes", _changed(inputs, "dfa_shapes", lambda a: a.__setitem__((0, 1), 0))),
        ("a DFA of 257 classes", _changed(inputs, "dfa_shapes", lambda a: a.__setitem__((1, 1), 257))),
        ("a DFA without states", _changed(inputs, "dfa_shapes", lambda a: a.__setitem__((1, 0), 0))),
        ("tables too short", _changed(inputs, "dfa_transitions", lambda a: a[:-1])),
        ("acceptance too long", _changed(inputs, "dfa_accepting", lambda a: np.append(a, np.uint8(0)))),
        ("DFA target out of range", _changed(inputs, "dfa_transitions", lambda a: a.__setitem__(-1, 99))),
        ("negative DFA target", _changed(inputs, "dfa_transitions", lambda a: a.__setitem__(3, -1))),
        ("DFA class out of range", _changed(inputs, "dfa_byte_class", lambda a: a.__setitem__((1, 200), 99))),
        ("255 byte classes", _changed(inputs, "dfa_byte_class", lambda a: a[:, :255].copy())),
        ("edge sources int64", _changed(inputs, "edge_source", lambda a: a.astype(np.int64))),
        ("edge targets strided", _changed(inputs, "edge_target", lambda a: np.repeat(a, 2)[::2])),
        ("epsilon targets a list", _changed(inputs, "eps_target", lambda a: a.tolist())),
        ("acceptance int32", _changed(inputs, "dfa_accepting", lambda a: a.astype(np.int32))),
        ("edge sources not an array", inputs._replace(edge_source=cast(Any, object()))),
    ]


@needs_native
def test_flat_input_at_the_bounds_is_accepted() -> None:
    module = native("determinize")
    assert module is not None
    inputs = _flat_input()
    expected = native_input_subsets(module, inputs, Limits())
    found = native_input_subsets(module, _last_block_first(inputs, 0), Limits())
    assert found[0].shape[1] == expected[0].shape[1]  # the same classes; the block moved is fine


@needs_native
def test_malformed_flat_input_is_a_moonmask_error() -> None:
    """Every index, shape and dtype is checked natively before use: through
    ``native_input_subsets`` a ``MalformedArraysError``, called directly a ``ValueError``
    (``TypeError``, ``OverflowError`` for an argument of the wrong kind), never a crash."""
    module = native("determinize")
    assert module is not None
    inputs = _flat_input()
    native_input_subsets(module, inputs, Limits())  # valid as given
    for label, bad in _malformed_flat(inputs):
        with pytest.raises(MalformedArraysError) as caught:
            native_input_subsets(module, bad, Limits())
            pytest.fail(f"{label}: accepted")
        assert isinstance(caught.value, MoonmaskError), label
        with pytest.raises((ValueError, TypeError, OverflowError)):
            module.flat_subsets(*bad, 1000)
            pytest.fail(f"{label}: accepted by the native module")


@needs_native
def test_malformed_flat_nfa_is_a_moonmask_error() -> None:
    """A flat NFA whose lists break its contract: ``flat_subsets`` raises ``MalformedArraysError``."""
    node = ir.seq(ir.text("ab"), ir.Automaton(compile_ir(parse(r"[a-c]+").node)))
    for change in (
        lambda flat: flat.edge_target.__setitem__(0, flat.num_states),
        lambda flat: flat.edge_mask.__setitem__(0, -1),
        lambda flat: flat.edge_mask.__setitem__(0, 1 << 256),
        lambda flat: flat.edge_source.__setitem__(0, 2**40),
        lambda flat: flat.eps_target.__setitem__(0, -5),
        lambda flat: flat.blocks.__setitem__(0, (flat.num_states, *flat.blocks[0][1:])),
        lambda flat: setattr(flat, "start", flat.num_states),
    ):
        flat = build_flat_nfa(node)
        change(flat)
        with pytest.raises(MalformedArraysError):
            flat_subsets(flat, Limits())
