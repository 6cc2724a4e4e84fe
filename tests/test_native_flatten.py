"""The native IR flattening (``_native/flatten.pyx`` through ``flat_ir.flatten``) against the
Python walk (``flat_ir.python_flatten``): the same rows, row for row (kinds, arguments, children,
root, masks, embedded DFAs by identity, the node object of each row), on hypothesis IRs with
embedded automata and shared subtrees, on the example schemas and JSONSchemaBench schemas from
every subset, and on the shared GBNF grammars. Also: a repetition count past 32 bits is an
``OverflowError`` on both sides, an IR deeper than any recursion limit is flattened, and what is
not an IR node is a ``TypeError``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from moonmaskc import ir
from moonmaskc.automata.flat_ir import FlatIR, flatten, python_flatten
from moonmaskc.automata.native import native
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends import gbnf
from moonmaskc.frontends.schema import compile_schema_ir
from tests.test_native_thompson import SCHEMAS, _gbnf_files, ir_with_automata

MODULE = native("flatten")
pytestmark = pytest.mark.skipif(MODULE is None, reason="the native core is not built")


def assert_same_rows(node: ir.Node) -> FlatIR:
    expected = python_flatten(node)
    found = flatten(node)
    for name in ("kind", "first", "second", "child_offsets", "children", "masks"):
        ours, theirs = getattr(found, name), getattr(expected, name)
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), name
    assert found.root == expected.root
    assert [id(dfa) for dfa in found.dfas] == [id(dfa) for dfa in expected.dfas]
    assert [id(row_node) for row_node in found.nodes] == [id(row_node) for row_node in expected.nodes]
    return found


@settings(max_examples=400, deadline=None, derandomize=True)
@given(ir_with_automata())
def test_hypothesis_irs_flatten_to_the_same_rows(node: ir.Node) -> None:
    assert_same_rows(node)


def test_equal_subtrees_share_rows_and_automata_do_not() -> None:
    from moonmaskc.automata.build import compile_ir

    element = ir.alt(ir.text("true"), ir.text("null"))
    twin = ir.alt(ir.text("true"), ir.text("null"))  # equal, another object
    automaton = compile_ir(ir.text("x"))
    node = ir.seq(element, twin, ir.Automaton(automaton), ir.Automaton(automaton), ir.EPSILON)
    flat = assert_same_rows(ir.seq(node, ir.star(node)))
    assert int((flat.kind == 2).sum()) == 1  # one Alt row for the two equal alternations
    assert int((flat.kind == 4).sum()) == 2 and len(flat.dfas) == 1


@pytest.mark.parametrize(("name", "text"), SCHEMAS, ids=[name for name, _ in SCHEMAS])
def test_schema_irs_flatten_to_the_same_rows(name: str, text: str) -> None:
    try:
        node = compile_schema_ir(text, lenient=True).node
    except MoonmaskError as error:
        pytest.skip(f"{name} does not compile: {error}")
    assert_same_rows(node)


@pytest.mark.parametrize("path", _gbnf_files(), ids=lambda path: path.stem)
def test_shared_gbnf_grammars_flatten_to_the_same_rows(path: Path) -> None:
    assert_same_rows(gbnf.parse(path.read_text(), max_depth=3).node)


def test_counts_past_32_bits_overflow_on_both_sides() -> None:
    node = ir.seq(ir.text("ab"), ir.repeat(ir.text("c"), 0, 3_000_000_000))
    with pytest.raises(OverflowError):
        python_flatten(node)
    with pytest.raises(OverflowError):
        flatten(node)


def test_a_deep_ir_is_flattened_without_recursion() -> None:
    node: ir.Node = ir.text("x")
    for level in range(50_000):
        node = ir.alt(ir.seq(ir.text("ab"[level % 2]), node), ir.text("c"))
    flat = assert_same_rows(node)
    assert len(flat.kind) > 100_000


def test_what_is_not_an_ir_node_is_a_type_error() -> None:
    assert MODULE is not None
    with pytest.raises(TypeError):
        MODULE.flatten(ir.Seq((ir.text("a"), "b")), ir.ByteSet, ir.Seq, ir.Alt, ir.Repeat, ir.Automaton)  # type: ignore[arg-type]
