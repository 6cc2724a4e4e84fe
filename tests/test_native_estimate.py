"""The work bound's estimate in C (``_native/estimate.pyx`` through ``work.flat_estimate``) against
the Python fold (``work.estimate``): the same figures, and the same bound when refused. (Where
several nodes are past a bound, the message may name another of them: the fold reaches a node's
leaves before the subtrees of their left siblings, the rows put every subtree in order.)

On hypothesis IRs with embedded automata and three-part loops (with the default bounds and with
small ones), on repetitions whose square asks back for the clear-boundary answer (one byte, an
embedded DFA, overlapping and clear bodies past ``CHEAP_SQUARE``), on figures past 64 bits (both
sides refuse with the same bound), on the example schemas and JSONSchemaBench schemas from every
subset, and on the shared GBNF grammars. Malformed rows are a ``MalformedArraysError``. And the
path a user takes, ``compile_ir(node, limits, check_work=True)``, refuses what ``check_work``
refuses, with the same message.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.flat_ir import flatten
from moonmaskc.automata.native import native
from moonmaskc.automata.work import CHEAP_SQUARE, Estimate, check_work, estimate, flat_estimate
from moonmaskc.errors import LimitError, MalformedArraysError, MoonmaskError
from moonmaskc.frontends import gbnf
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.limits import Limits
from tests.test_native_thompson import SCHEMAS, _gbnf_files, ir_with_automata

MODULE = native("estimate")
pytestmark = pytest.mark.skipif(MODULE is None, reason="the native core is not built")


def outcome(run: object, node: ir.Node, limits: Limits) -> Estimate | str:
    """The figures, or the refusal's bound."""
    try:
        if run is estimate:
            return estimate(node, limits)
        return flat_estimate(flatten(node), limits)
    except LimitError as error:
        assert f"--{error.bound.replace('_', '-')}" in str(error)
        return error.bound


def assert_same_estimate(node: ir.Node, limits: Limits | None = None) -> Estimate | str:
    limits = limits or Limits()
    expected = outcome(estimate, node, limits)
    assert outcome(flat_estimate, node, limits) == expected
    return expected


@settings(max_examples=300, deadline=None, derandomize=True)
@given(ir_with_automata())
def test_hypothesis_irs_have_the_same_figures(node: ir.Node) -> None:
    assert isinstance(assert_same_estimate(node), Estimate)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(ir_with_automata(), st.integers(0, 40), st.integers(0, 60))
def test_hypothesis_irs_meet_small_bounds_at_the_same_node(node: ir.Node, states: int, work: int) -> None:
    assert_same_estimate(node, Limits(max_states=states, max_work=work))


ASKING = {
    "one byte, no question": ir.repeat(ir.byte_set(ir.mask_of(b"ab")), 0, 5_000),
    "overlapping copies": ir.repeat(ir.repeat(ir.text("a"), 1, 100), 1, 100),
    "clear copies past the cheap square": ir.repeat(
        ir.seq(ir.text("a"), ir.optional(ir.text("b"))), 3_000, 3_000
    ),
    "an embedded DFA, clear": ir.repeat(ir.Automaton(compile_ir(ir.text('"x"'))), 2, 50),
    "an embedded DFA, overlapping": ir.repeat(ir.Automaton(compile_ir(ir.plus(ir.text("a")))), 2, 50),
    "a list of overlapping copies": ir.seq(
        ir.repeat(ir.text("a"), 1, 700), ir.star(ir.seq(ir.text(","), ir.repeat(ir.text("a"), 1, 700)))
    ),
}


@pytest.mark.parametrize("name", list(ASKING))
def test_repetitions_that_ask_for_clear_boundaries(name: str) -> None:
    assert CHEAP_SQUARE < 10**7
    for limits in (Limits(), Limits(max_work=10**6), Limits(max_work=10**9, max_states=10**6)):
        assert_same_estimate(ASKING[name], limits)


def test_the_overlapping_case_is_the_square_and_the_clear_one_is_linear() -> None:
    big = Limits(max_work=1 << 56, max_states=1 << 20)
    overlapping = assert_same_estimate(ASKING["overlapping copies"], big)
    clear = assert_same_estimate(ASKING["clear copies past the cheap square"], big)
    assert isinstance(overlapping, Estimate) and isinstance(clear, Estimate)
    assert overlapping.work >= (100 * 100) ** 2
    assert clear.work < 10 * 3_000 * 4


def test_figures_past_64_bits_saturate_past_every_bound() -> None:
    """An embedded DFA of 2**40 states repeated 2**30 times, beside another: 2**70 NFA states, kept
    at 2**62 in C (past any bound, at most 2**59) instead of wrapping around."""
    flat = flatten(ir.alt(ir.repeat(ir.Automaton(compile_ir(ir.text("x"))), 1 << 30, 1 << 30), ir.text("y")))
    rows = len(flat.kind)
    repeat_row = int(np.flatnonzero(flat.kind == 3)[0])
    clear = np.full(rows, -1, dtype=np.int8)
    clear[flat.children[flat.child_offsets[repeat_row]]] = 1
    states, work = np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=np.int64)
    assert MODULE is not None
    arguments = (flat.kind, flat.first, flat.second, flat.child_offsets, flat.children)
    status, row = MODULE.estimate(
        *arguments, np.array([1 << 40]), clear, 1 << 59, 1 << 59, CHEAP_SQUARE, 0, states, work
    )
    assert (status, row) == (MODULE.STATES, repeat_row)
    assert states[row] == work[row] == 1 << 62
    status, _ = MODULE.estimate(
        *arguments, np.array([1 << 40]), clear, 1 << 62, 1 << 62, CHEAP_SQUARE, 0, states, work
    )
    assert status == MODULE.OK
    assert states[flat.root] == 1 << 62


@pytest.mark.parametrize(("name", "text"), SCHEMAS, ids=[name for name, _ in SCHEMAS])
def test_schema_irs_have_the_same_figures(name: str, text: str) -> None:
    try:
        node = compile_schema_ir(text, lenient=True).node
    except MoonmaskError as error:
        pytest.skip(f"{name} does not compile: {error}")
    assert_same_estimate(node, Limits(max_states=1_000_000))
    assert_same_estimate(node, Limits(max_states=50, max_work=2_000))


@pytest.mark.parametrize("path", _gbnf_files(), ids=lambda path: path.stem)
def test_shared_gbnf_grammars_have_the_same_figures(path: Path) -> None:
    node = gbnf.parse(path.read_text(), max_depth=3).node
    assert_same_estimate(node, Limits(max_states=1_000_000))


def test_compile_ir_with_check_work_refuses_as_check_work_does() -> None:
    node = ir.seq(ir.text("x" * 300), ASKING["overlapping copies"])
    limits = Limits(max_work=10**6)
    with pytest.raises(LimitError) as from_fold:
        check_work(node, limits)
    with pytest.raises(LimitError) as from_compile:
        compile_ir(node, limits, check_work=True)
    assert str(from_compile.value) == str(from_fold.value)
    assert "--max-work" in str(from_compile.value)


def test_malformed_rows_are_refused() -> None:
    flat = flatten(ir.seq(ir.text("ab"), ir.star(ir.text("c"))))
    children = flat.children.copy()
    children[0] = len(flat.kind)  # a child after its parent
    with pytest.raises(MalformedArraysError):
        flat_estimate(flat._replace(children=children), Limits())
    kinds = flat.kind.copy()
    kinds[0] = 9
    with pytest.raises(MalformedArraysError):
        flat_estimate(flat._replace(kind=kinds), Limits())
    offsets = flat.child_offsets.copy()
    offsets[-1] += 1
    with pytest.raises(MalformedArraysError):
        flat_estimate(flat._replace(child_offsets=offsets), Limits())
    assert MODULE is not None
    status, _ = MODULE.estimate(
        flat.kind,
        flat.first,
        flat.second,
        flat.child_offsets,
        flat.children,
        np.zeros(0, dtype=np.int64),
        np.full(len(flat.kind), -1, dtype=np.int8),
        100,
        100,
        CHEAP_SQUARE,
        len(flat.kind) + 1,
        np.zeros(len(flat.kind), dtype=np.int64),
        np.zeros(len(flat.kind), dtype=np.int64),
    )
    assert status == MODULE.BAD_INPUT


def test_a_count_past_32_bits_meets_the_bound_by_name() -> None:
    """A repetition count that the flat rows' 32-bit integers cannot hold leaves the IR to the
    Python stages, whose work bound refuses it by name (not an ``OverflowError``)."""
    pattern = {"type": "string", "pattern": "(ab){3000000000}"}
    schema = {"type": "object", "properties": {f"p{index}": pattern for index in range(30)}}
    with pytest.raises(LimitError) as refused:
        moonmaskc.compile_schema(schema, tokenizer=None, max_repeat=1 << 40)
    assert refused.value.bound in ("max_states", "max_work")
    node = ir.seq(ir.text("x" * 300), ir.repeat(ir.text("c"), 3_000_000_000, None))
    assert ir.size(node) > 200  # flattened for the native builder, were the count to fit
    with pytest.raises(LimitError):
        compile_ir(node, Limits(max_repeat=1 << 40))  # no estimate asked: the NFA bound
