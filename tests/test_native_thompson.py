"""The native Thompson builder against the Python one: the same NFA, edge for edge.

``thompson_native.native_thompson_input`` (the IR flattened once per distinct node, expanded in C)
must write the same byte edges, epsilon edges and embedded blocks, in the same order and with the
same state numbers, as ``build_flat_nfa`` (the Python builder) on: hypothesis IRs with embedded
automata, the example schemas, JSONSchemaBench schemas from every subset and the shared GBNF
grammars at depth 3. Masks and DFAs are compared by value (the two number them differently). Also:
the NFA state bound gives the same ``LimitError``, an IR too deep for the C stack is left to the
Python builder, and malformed flat arrays are refused before the walk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.flat_ir import flatten
from moonmaskc.automata.flat_nfa import build_flat_nfa
from moonmaskc.automata.native import native
from moonmaskc.automata.thompson_native import MAX_NATIVE_DEPTH, native_thompson_input
from moonmaskc.errors import LimitError, MoonmaskError
from moonmaskc.frontends import gbnf
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.limits import Limits
from tests.conftest import PROJECT_ROOT, data_dir
from tests.test_automata import ir_nodes

MODULE = native("thompson")
pytestmark = pytest.mark.skipif(MODULE is None, reason="the native core is not built")

Lists = tuple[int, int, list[tuple[int, int, int]], list[tuple[int, int]], list[tuple[int, int, bytes]]]


def _dfa_key(
    shape: tuple[int, int], table: np.ndarray, byte_class: np.ndarray, accepting: np.ndarray
) -> bytes:
    return (
        repr(shape).encode()
        + table.astype(np.int32).tobytes()
        + byte_class.astype(np.int32).tobytes()
        + accepting.astype(np.uint8).tobytes()
    )


def python_lists(node: ir.Node, limits: Limits) -> Lists:
    flat = build_flat_nfa(node, limits)
    blocks = [
        (first, exit_state, _dfa_key(dfa.transitions.shape, dfa.transitions, dfa.byte_class, dfa.accepting))
        for first, dfa, exit_state in flat.blocks
    ]
    edges = list(zip(flat.edge_source, flat.edge_mask, flat.edge_target, strict=True))
    epsilon = list(zip(flat.eps_source, flat.eps_target, strict=True))
    return flat.num_states, flat.final, edges, epsilon, blocks


def native_lists(node: ir.Node, limits: Limits) -> Lists:
    assert MODULE is not None
    made = native_thompson_input(MODULE, flatten(node), limits)
    assert made is not None
    assert made.start == 0
    masks = [int.from_bytes(row.tobytes(), "little") for row in made.masks]
    offsets = np.concatenate(([0], np.cumsum(made.dfa_shapes[:, 0] * made.dfa_shapes[:, 1])))
    state_offsets = np.concatenate(([0], np.cumsum(made.dfa_shapes[:, 0])))
    keys = []
    for index, (states, classes) in enumerate(made.dfa_shapes.tolist()):
        table = made.dfa_transitions[offsets[index] : offsets[index + 1]].reshape(states, classes)
        accepting = made.dfa_accepting[state_offsets[index] : state_offsets[index + 1]]
        keys.append(_dfa_key((states, classes), table, made.dfa_byte_class[index], accepting))
    edges = [
        (int(s), masks[m], int(t))
        for s, m, t in zip(made.edge_source, made.edge_mask, made.edge_target, strict=True)
    ]
    epsilon = [(int(s), int(t)) for s, t in zip(made.eps_source, made.eps_target, strict=True)]
    blocks = [(int(first), int(exit_state), keys[index]) for first, exit_state, index in made.blocks.tolist()]
    return made.num_states, made.final, edges, epsilon, blocks


def assert_same_nfa(node: ir.Node, limits: Limits | None = None) -> None:
    limits = limits or Limits()
    expected = python_lists(node, limits)
    built = native_lists(node, limits)
    assert built[:2] == expected[:2]
    assert built[2] == expected[2]
    assert built[3] == expected[3]
    assert built[4] == expected[4]


def _automaton_leaves() -> st.SearchStrategy[ir.Node]:
    small = [ir.text("ab"), ir.star(ir.text("c")), ir.alt(ir.text("a"), ir.text("bc")), ir.NOTHING]
    return st.sampled_from(small).map(lambda node: ir.Automaton(compile_ir(node)))


def ir_with_automata() -> st.SearchStrategy[ir.Node]:
    """``test_automata.ir_nodes`` with embedded automata and the empty language among the leaves,
    longer sequences and three-part loops."""
    more_leaves = st.one_of(st.just(ir.NOTHING), _automaton_leaves())
    return ir_nodes(more_leaves, longest_seq=4, three_part_loops=True, max_leaves=10)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(ir_with_automata())
def test_hypothesis_irs_build_the_same_nfa(node: ir.Node) -> None:
    assert_same_nfa(node)


def test_separated_loops_and_shared_subtrees() -> None:
    element = ir.alt(ir.text("true"), ir.text("null"))
    listing = ir.seq(ir.text("["), element, ir.star(ir.seq(ir.text(","), element)), ir.text("]"))
    assert_same_nfa(ir.seq(listing, ir.repeat(listing, 2, None), ir.repeat(listing, 0, 3)))


def _schema_texts() -> list[tuple[str, str]]:
    texts = [
        (path.stem, path.read_text())
        for path in sorted((PROJECT_ROOT / "examples" / "schemas").glob("*.json"))
    ]
    bench = data_dir() / "schemas" / "jsonschemabench"
    for subset in sorted(bench.glob("*")) if bench.is_dir() else []:
        for path in sorted(subset.glob("*.json"))[:4]:
            texts.append((f"{subset.name}/{path.stem}", path.read_text()))
    return texts


SCHEMAS = _schema_texts()


@pytest.mark.parametrize(("name", "text"), SCHEMAS, ids=[name for name, _ in SCHEMAS])
def test_schema_irs_build_the_same_nfa(name: str, text: str) -> None:
    try:
        node = compile_schema_ir(text, lenient=True).node
    except MoonmaskError as error:
        pytest.skip(f"{name} does not compile: {error}")
    assert_same_nfa(node, Limits(max_states=1_000_000))


def _gbnf_files() -> list[Path]:
    return sorted((data_dir() / "gbnf").glob("*.gbnf"))


@pytest.mark.parametrize("path", _gbnf_files(), ids=lambda path: path.stem)
def test_shared_gbnf_grammars_build_the_same_nfa(path: Path) -> None:
    node = gbnf.parse(path.read_text(), max_depth=3).node
    assert_same_nfa(node, Limits(max_states=1_000_000))


def test_the_schema_and_gbnf_samples_are_present() -> None:
    if not (data_dir() / "gbnf").is_dir():
        pytest.skip(f"{data_dir()} is absent: set MOONMASKC_DATA to the shared data folder")
    assert len(_gbnf_files()) >= 8
    assert len(SCHEMAS) >= 40


def test_the_nfa_state_bound_is_the_same_error() -> None:
    node = ir.repeat(ir.text("abc"), 0, 400)
    limits = Limits(max_states=100)
    assert MODULE is not None
    with pytest.raises(LimitError) as from_python:
        build_flat_nfa(node, limits)
    with pytest.raises(LimitError) as from_native:
        native_thompson_input(MODULE, flatten(node), limits)
    assert str(from_native.value) == str(from_python.value)
    assert "--max-states" in str(from_native.value)


def test_an_ir_too_deep_for_the_c_stack_is_left_to_the_python_builder() -> None:
    node: ir.Node = ir.text("x")
    for level in range(MAX_NATIVE_DEPTH // 2):
        node = ir.alt(ir.seq(ir.text("ab"[level % 2]), node), ir.text("c"))
    assert MODULE is not None
    assert native_thompson_input(MODULE, flatten(node), Limits()) is None


def test_compile_ir_agrees_with_the_python_builder_on_a_deep_ir() -> None:
    node: ir.Node = ir.text("x")
    for _ in range(300):
        node = ir.seq(ir.text("("), ir.alt(node, ir.text("y")), ir.text(")"))
    dfa = compile_ir(node, Limits(max_states=100_000))
    assert dfa.accepts(b"(" * 300 + b"x" + b")" * 300)
    assert dfa.accepts(b"(" * 299 + b"(y)" + b")" * 299)
    assert not dfa.accepts(b"(" * 299 + b"x" + b")" * 300)


def _flat_arrays(node: ir.Node) -> dict[str, Any]:
    flat = flatten(node)
    return {
        "kind": flat.kind.copy(),
        "first": flat.first.copy(),
        "second": flat.second.copy(),
        "child_offsets": flat.child_offsets.copy(),
        "children": flat.children.copy(),
        "root": flat.root,
        "num_masks": len(flat.masks),
        "dfa_states": np.zeros(0, dtype=np.int32),
        "dfa_start": np.zeros(0, dtype=np.int32),
        "max_states": 1000,
        "max_depth": 1000,
    }


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda a: a["children"].__setitem__(0, len(a["kind"]) - 1), id="child-after-parent"),
        pytest.param(lambda a: a["children"].__setitem__(0, -1), id="negative-child"),
        pytest.param(lambda a: a["first"].__setitem__(0, a["num_masks"]), id="mask-out-of-range"),
        pytest.param(lambda a: a["kind"].__setitem__(0, 9), id="unknown-kind"),
        pytest.param(lambda a: a.__setitem__("root", len(a["kind"])), id="root-out-of-range"),
        pytest.param(lambda a: a["child_offsets"].__setitem__(-1, 0), id="offsets-short"),
        pytest.param(lambda a: a["second"].__setitem__(len(a["kind"]) - 1, -2), id="bad-repeat-max"),
    ],
)
def test_malformed_flat_arrays_are_refused_before_the_walk(corrupt: Any) -> None:
    node = ir.repeat(ir.seq(ir.text("ab"), ir.byte_set(ir.mask_of(b"xyz"))), 1, 3)
    arrays = _flat_arrays(node)
    assert MODULE is not None
    assert MODULE.build(**arrays)[0] == MODULE.OK
    corrupt(arrays)
    assert MODULE.build(**arrays)[0] == MODULE.BAD_INPUT
