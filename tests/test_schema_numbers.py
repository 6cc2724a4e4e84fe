"""Exact numeric ranges and multipleOf for JSON Schema integer / number, against independent oracles.

Oracles: Python ``Decimal`` comparisons on the string's value plus a canonical-syntax regex, and
``jsonschema`` (Draft 2020-12) validating ``json.loads(s, parse_float=Decimal)``.
"""

from __future__ import annotations

import json
import random
import re
from decimal import Decimal, localcontext
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.sample import sample
from moonmaskc.errors import LimitError, UnsupportedError
from moonmaskc.frontends.schema.numbers import integer_node, number_node
from moonmaskc.frontends.schema.numbers_multiple import step_parts
from moonmaskc.limits import Limits

CANONICAL_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
CANONICAL_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def is_multiple(value: Decimal, step: Decimal) -> bool:
    with localcontext() as context:
        context.prec = 200
        return value % step == 0


def oracle(text: str, kind: str, bounds: dict[str, Decimal]) -> bool:
    syntax = CANONICAL_INTEGER if kind == "integer" else CANONICAL_NUMBER
    if not syntax.fullmatch(text):
        return False
    value = Decimal(text)
    if text.startswith("-") and value == 0:
        return False  # documented: no negative zero
    checks = {
        "minimum": lambda b: value >= b,
        "maximum": lambda b: value <= b,
        "exclusiveMinimum": lambda b: value > b,
        "exclusiveMaximum": lambda b: value < b,
        "multipleOf": lambda b: is_multiple(value, b),
    }
    return all(checks[key](bound) for key, bound in bounds.items())


def jsonschema_accepts(text: str, kind: str, bounds: dict[str, Decimal]) -> bool:
    try:
        instance = json.loads(text, parse_float=Decimal)
    except ValueError:
        return False
    schema: dict[str, Any] = {"type": kind, **bounds}
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def build(kind: str, bounds: dict[str, Decimal], limits: Limits | None = None) -> ir.Node:
    make = integer_node if kind == "integer" else number_node
    return make(
        minimum=bounds.get("minimum"),
        maximum=bounds.get("maximum"),
        exclusive_minimum=bounds.get("exclusiveMinimum"),
        exclusive_maximum=bounds.get("exclusiveMaximum"),
        multiple_of=bounds.get("multipleOf"),
        limits=limits,
    )


def spell(value: Decimal, extra_zeros: int) -> str:
    """Plain-notation text of value, with extra trailing fraction zeros."""
    text = format(value, "f")
    if extra_zeros:
        text += ("" if "." in text else ".") + "0" * extra_zeros
    return text


small_decimals = st.builds(
    lambda n, k: Decimal(n).scaleb(-k), st.integers(min_value=-3000, max_value=3000), st.integers(0, 3)
)
bound_sets = st.dictionaries(st.sampled_from(KEYWORDS[:4]), small_decimals, min_size=0, max_size=4)
random_texts = st.text(alphabet="-0123456789.", min_size=0, max_size=8)


def candidates(bounds: dict[str, Decimal], rng: random.Random, extra: list[str]) -> list[str]:
    """Numbers near each bound (both sides, several spellings) plus given strings."""
    anchors = [Decimal(0), *bounds.values()]
    texts = set(extra)
    for anchor in anchors:
        for _ in range(25):
            delta = Decimal(rng.randint(-300, 300)).scaleb(-rng.randint(0, 4))
            value = anchor + delta
            texts.add(spell(value, rng.choice([0, 0, 1, 2])))
            texts.add(spell(value.copy_negate(), 0))
        texts.add(spell(anchor, 0))
        texts.add(spell(anchor, 1))
    return sorted(texts)


def check_language(dfa: DFA, kind: str, bounds: dict[str, Decimal], texts: list[str]) -> None:
    for text in texts:
        expected = oracle(text, kind, bounds)
        assert dfa.accepts(text.encode()) == expected, (text, bounds)
        if CANONICAL_NUMBER.fullmatch(text) and not (text.startswith("-") and Decimal(text) == 0):
            assert jsonschema_accepts(text, kind, bounds) == expected, (text, bounds)
    rng = random.Random(7)
    for _ in range(40):
        drawn = sample(dfa, rng, max_len=24)
        if drawn is None:
            break
        assert oracle(drawn.decode(), kind, bounds), (drawn, bounds)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bound_sets, st.lists(random_texts, max_size=20), st.randoms(use_true_random=False))
def test_number_ranges_match_oracles(
    bounds: dict[str, Decimal], texts: list[str], rng: random.Random
) -> None:
    dfa = compile_ir(build("number", bounds))
    check_language(dfa, "number", bounds, candidates(bounds, rng, texts))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bound_sets, st.lists(random_texts, max_size=20), st.randoms(use_true_random=False))
def test_integer_ranges_match_oracles(
    bounds: dict[str, Decimal], texts: list[str], rng: random.Random
) -> None:
    dfa = compile_ir(build("integer", bounds))
    check_language(dfa, "integer", bounds, candidates(bounds, rng, texts))


STEPS = [Decimal("0.01"), Decimal("0.25"), Decimal("3"), Decimal("7"), Decimal("1.5"), Decimal("20")]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(STEPS),
    st.sampled_from(["integer", "number"]),
    st.dictionaries(st.sampled_from(KEYWORDS[:4]), small_decimals, max_size=2),
    st.randoms(use_true_random=False),
)
def test_multiple_of_matches_oracles(
    step: Decimal, kind: str, bounds: dict[str, Decimal], rng: random.Random
) -> None:
    bounds = {**bounds, "multipleOf": step}
    multiples = []
    for _ in range(40):
        value = step * rng.randint(-400, 400)
        multiples.append(spell(value, rng.choice([0, 0, 1, 3])))
        multiples.append(spell(value + Decimal(rng.randint(1, 9)).scaleb(-rng.randint(0, 3)), 0))
    dfa = compile_ir(build(kind, bounds))
    check_language(dfa, kind, bounds, candidates(bounds, rng, multiples))


def test_valid_values_keep_a_spelling() -> None:
    """Every value of a dense grid inside mixed-sign decimal bounds is accepted in canonical form."""
    bounds = {"exclusiveMinimum": Decimal("-2.375"), "maximum": Decimal("1.2")}
    dfa = compile_ir(build("number", bounds))
    grid = [Decimal(n).scaleb(-3) for n in range(-3000, 3001)]
    for value in grid:
        inside = Decimal("-2.375") < value <= Decimal("1.2")
        text = format(value.normalize(), "f") if value else "0"
        assert dfa.accepts(text.encode()) == inside, text


def test_empty_ranges_are_nothing() -> None:
    assert number_node(minimum=Decimal("1.5"), maximum=Decimal("1.4")) == ir.NOTHING
    assert number_node(minimum=Decimal(2), exclusive_maximum=Decimal(2)) == ir.NOTHING
    assert integer_node(minimum=Decimal("2.1"), maximum=Decimal("2.9")) == ir.NOTHING
    assert integer_node(exclusive_minimum=Decimal(-1), exclusive_maximum=Decimal(0)) == ir.NOTHING


def test_equal_bounds_accept_only_that_value() -> None:
    dfa = compile_ir(number_node(minimum=Decimal("-0.5"), maximum=Decimal("-0.50")))
    assert dfa.accepts(b"-0.5") and dfa.accepts(b"-0.500")
    assert not dfa.accepts(b"-0.51") and not dfa.accepts(b"-0.4") and not dfa.accepts(b"0.5")


def test_negative_zero_is_rejected() -> None:
    dfa = compile_ir(number_node())
    assert dfa.accepts(b"0") and dfa.accepts(b"0.0") and dfa.accepts(b"-0.01")
    assert not dfa.accepts(b"-0") and not dfa.accepts(b"-0.0")
    assert not compile_ir(integer_node()).accepts(b"-0")


def test_long_bounds_are_exact() -> None:
    """A bound with more digits than the default Decimal context keeps all of them."""
    bound = Decimal("-12345678901234567890123456789012345.000000000000000000000000000001")
    dfa = compile_ir(number_node(exclusive_minimum=bound, maximum=Decimal(0)))
    assert dfa.accepts(b"-12345678901234567890123456789012345")
    assert not dfa.accepts(b"-12345678901234567890123456789012345.000000000000000000000000000001")
    assert dfa.accepts(b"-12345678901234567890123456789012345.0000000000000000000000000000009")
    assert not dfa.accepts(b"-12345678901234567890123456789012346")


def test_float_bounds_are_read_as_their_shortest_text() -> None:
    dfa = compile_ir(number_node(minimum=0.1))
    assert dfa.accepts(b"0.1") and not dfa.accepts(b"0.0999")


def test_step_parts() -> None:
    assert step_parts(Decimal("0.25")) == (25, 2)
    assert step_parts(Decimal("1.50")) == (15, 1)
    assert step_parts(Decimal("1E+2")) == (100, 0)


def test_bad_keywords_are_errors() -> None:
    with pytest.raises(UnsupportedError, match="multipleOf"):
        number_node(multiple_of=Decimal(0), where="#/properties/x")
    with pytest.raises(UnsupportedError, match="#/properties/x"):
        number_node(minimum=Decimal("NaN"), where="#/properties/x")
    with pytest.raises(UnsupportedError, match="digits"):
        number_node(maximum=Decimal("1E+5000"))
    with pytest.raises(LimitError, match="--max-states"):
        integer_node(multiple_of=Decimal(1000003), limits=Limits(max_states=1000))


def test_double_range_bounds_compile_exactly() -> None:
    """The bounds of IEEE doubles (309 digits) stay exact and compile quickly."""
    largest = Decimal(repr(1.7976931348623157e308))
    dfa = compile_ir(number_node(minimum=-largest, maximum=largest))
    top = format(largest, "f")
    assert dfa.accepts(top.encode()) and dfa.accepts(("-" + top + ".000").encode())
    assert not dfa.accepts((top + ".0001").encode())
    assert not dfa.accepts(("1" + "0" * len(top)).encode())
    assert dfa.accepts(("9" * (len(top) - 1) + ".5").encode())
    tiny = compile_ir(number_node(exclusive_minimum=0, maximum=Decimal("1E-300")))
    assert tiny.accepts(("0." + "0" * 299 + "1").encode())
    assert not tiny.accepts(("0." + "0" * 299 + "11").encode())
    assert tiny.accepts(("0." + "0" * 300 + "9").encode())
    assert not tiny.accepts(b"0.0")
