"""The compiler pauses the cyclic garbage collector and always gives it back as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from moonmaskc import compile_regex
from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends.regex import parse
from moonmaskc.gc_pause import collector_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def test_paused_inside_and_restored_after_even_on_errors() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the inner block must not turn it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    compile_ir(parse("[a-z]{1,8}").node)
    assert not gc.isenabled()
    gc.enable()


def test_compiles_leave_the_collector_on() -> None:
    compile_regex("(ab|cd)*e")
    assert gc.isenabled()
    with pytest.raises(MoonmaskError):
        compile_regex("a(?<=b)")
    assert gc.isenabled()


def test_a_compile_leaves_no_reference_cycles() -> None:
    """Nothing a compile makes waits for the cyclic collector: ``ir.alt`` once built a recursive
    closure per call (about 1,800 IR objects a Github_medium schema held in cycles until the
    collector ran). The example schemas, a regex and a GBNF grammar, with their token tables."""
    import gc
    import json

    import moonmaskc
    from tests.conftest import PROJECT_ROOT

    schemas = [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted((PROJECT_ROOT / "examples" / "schemas").glob("*.json"))
    ]
    grammar = 'root ::= "[" (item ("," item)*)? "]"\nitem ::= [0-9]+ | "x"'
    moonmaskc.compile_regex("[a-z]+@[a-z]+\\.(com|org)")  # (first-use caches: formats, parsers)
    moonmaskc.compile_gbnf(grammar)
    for schema in schemas:
        moonmaskc.compile_schema(schema)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for schema in schemas:
            moonmaskc.compile_schema(schema)
        moonmaskc.compile_regex("[a-z]+@[a-z]+\\.(com|org)")
        moonmaskc.compile_gbnf(grammar)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
