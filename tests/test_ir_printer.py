"""The native printer of the IR (``automata/_native/printer.pyx``) against the pure ``to_regex``.

Both print the same text for hypothesis IRs (with automaton leaves and marker names), for the IR
of real schemas and grammars, and with the kept texts of subtrees found or not; the native one
keeps the same texts the pure one keeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.native import PURE_ENV, native
from moonmaskc.frontends.gbnf import parse as parse_gbnf
from moonmaskc.frontends.schema import compile_schema_ir
from tests.conftest import data_path
from tests.test_automata import ir_nodes

T = TypeVar("T")
LEAF = ir.Automaton(compile_ir(ir.text("ab")), "letters")
NAMES = {ord("a"): "(?#marker)", 0xFF: "(?#any JSON value)"}


@pytest.fixture(autouse=True)
def built() -> None:
    if native("printer") is None:
        pytest.skip("the native core is not built")


def on_both_cores(monkeypatch: pytest.MonkeyPatch, run: Callable[[], T]) -> tuple[T, T]:
    """``run()`` on the native core, then on the pure one, each from an empty memo."""
    results = []
    for pure in (False, True):
        with monkeypatch.context() as patch:
            if pure:
                patch.setenv(PURE_ENV, "1")
            ir._PRINTED.clear()
            results.append(run())
    return results[0], results[1]


def both_prints(
    monkeypatch: pytest.MonkeyPatch, node: ir.Node, names: dict[int, str] | None
) -> tuple[str, str]:
    """The native print, then the pure print, each from an empty memo and again from the one the
    first print left (the kept texts must give the same text)."""

    def twice() -> str:
        fresh = ir.to_regex(node, names)
        assert ir.to_regex(node, names) == fresh
        return fresh

    return on_both_cores(monkeypatch, twice)


@settings(max_examples=300, deadline=None)
@given(ir_nodes(more_leaves=st.just(LEAF), max_leaves=40), st.booleans())
def test_hypothesis_irs_print_alike(node: ir.Node, named: bool) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        bigger = ir.seq(node, ir.star(node), ir.alt(node, ir.text("yz")), ir.repeat(node, 2, 5))
        native_text, pure_text = both_prints(monkeypatch, bigger, NAMES if named else None)
    assert native_text == pure_text


def test_repetitions_and_sequences_print_as_the_pure_printer_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every suffix form, an alternative inside a sequence, an empty sequence, an automaton leaf."""
    ab = ir.text("ab")
    node = ir.seq(
        ir.repeat(ab, 0, None),
        ir.repeat(ab, 1, None),
        ir.repeat(ab, 0, 1),
        ir.repeat(ab, 3, None),
        ir.repeat(ab, 4, 4),
        ir.repeat(ab, 2, 7),
        ir.alt(ir.text("x"), ir.text("yz")),
        ir.Repeat(ir.EPSILON, 2, 3),
        ir.Repeat(LEAF, 1, 2),
        ir.byte_range(0x80, 0xFF),
    )
    native_text, pure_text = both_prints(monkeypatch, node, None)
    assert native_text == pure_text
    assert "(?:ab)*(?:ab)+(?:ab)?(?:ab){3,}(?:ab){4}(?:ab){2,7}(?:x|yz)(?:){2,3}" in native_text


@pytest.mark.parametrize(
    "schema",
    [
        "Kubernetes/kb_4_Normalized.json",
        "Github_ultra/o6363.json",
        "JsonSchemaStore/bukkit-plugin.json",
        "Github_medium/o7377.json",
    ],
)
def test_real_schemas_print_alike(monkeypatch: pytest.MonkeyPatch, schema: str) -> None:
    result = compile_schema_ir(json.loads(data_path("schemas", "jsonschemabench", schema).read_text()))
    names = {marker: "(?#string character)" for marker in result.markers}
    if result.nest_marker is not None:
        names[result.nest_marker] = "(?#any JSON value)"
    native_text, pure_text = both_prints(monkeypatch, result.node, names or None)
    assert native_text == pure_text and len(native_text) > 100


@pytest.mark.parametrize(
    "grammar", sorted(Path(data_path("gbnf")).glob("*.gbnf"))[:4], ids=lambda path: path.stem
)
def test_grammars_print_alike(monkeypatch: pytest.MonkeyPatch, grammar: Path) -> None:
    try:
        node = parse_gbnf(grammar.read_text(), max_depth=3).node
    except Exception:  # (a grammar that needs more than depth 3 is not this test's business)
        pytest.skip("not compiled at depth 3")
    native_text, pure_text = both_prints(monkeypatch, node, None)
    assert native_text == pure_text


def test_the_native_printer_keeps_the_texts_the_pure_one_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same subtrees' texts kept (a JSON string's body spelled out: in the kept sizes, no
    automaton), none of a subtree with an automaton."""
    from moonmaskc.frontends.schema import canonical

    node = ir.seq(canonical.STRING_BODY, ir.text(":"), ir.alt(canonical.STRING_BODY, LEAF), ir.star(LEAF))
    kept = on_both_cores(monkeypatch, lambda: (ir.to_regex(node), dict(ir._PRINTED))[1])
    assert kept[0] == kept[1] and kept[0]
    assert all("letters" not in text for text in kept[0].values())
