"""JSON Schema ``integer`` and ``number`` values as canonical JSON number text, exactly.

Takes: the numeric keywords of one schema (``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum`` as numbers, ``multipleOf``) and ``Limits``. Hands on: an IR node over ASCII
bytes whose strings are exactly the admitted serializations:

- ``integer_node``: ``-?(0|[1-9][0-9]*)``, never ``-0``: one spelling per valid integer.
- ``number_node``: plain decimal notation ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?``. No exponent is ever
  produced. Trailing fraction zeros are allowed (``1.50``). A minus sign is only accepted before a
  non-zero value: ``-0`` and ``-0.0`` are rejected (0 keeps its spellings ``0``, ``0.0``, ...).

Bounds are compared exactly (Decimal, digit-string languages in ``numbers_ranges``), whatever their
sign or number of fraction digits; an empty range gives ``ir.NOTHING``. ``multipleOf`` is an
automaton of remainders (``numbers_multiple``) intersected with the range, embedded as
``ir.Automaton``.
"""

from __future__ import annotations

import math
from decimal import Decimal

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.product import intersect
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.numbers_multiple import multiple_of_dfa
from moonmaskc.frontends.schema.numbers_ranges import Bound, integer_range, magnitude_interval
from moonmaskc.limits import Limits

NumberValue = Decimal | int | float
# Bounds whose plain notation has more digits than this are refused (the IR grows with the digits).
MAX_BOUND_DIGITS = 1000

MINUS = ir.literal(b"-")


def as_decimal(value: NumberValue | None, keyword: str, where: str | None) -> Decimal | None:
    """``value`` of ``keyword`` as an exact Decimal (a float by its repr, every zero as 0), None
    without it; ``UnsupportedError`` unless it is a finite number of at most ``MAX_BOUND_DIGITS``
    digits in plain decimal notation."""
    if value is None:
        return None
    if isinstance(value, bool) and keyword.startswith("exclusive"):
        raise UnsupportedError(
            f"{keyword} value {value!r}",
            "must be a number (a boolean is draft-04's form, which a document declaring "
            '"$schema": "http://json-schema.org/draft-04/schema#" compiles)',
            where=where,
        )
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, float)):
        raise UnsupportedError(f"{keyword} value {value!r}", "must be a number", where=where)
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite():
        raise UnsupportedError(f"{keyword} value {value!r}", "must be a finite number", where=where)
    if number.is_zero():
        return Decimal(0)
    adjusted = number.adjusted()
    _, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    plain_digits = max(adjusted + 1, 1) + max(-exponent, 0)
    if plain_digits > MAX_BOUND_DIGITS or len(digits) > MAX_BOUND_DIGITS:
        raise UnsupportedError(
            f"{keyword} value {value}",
            f"more than {MAX_BOUND_DIGITS} digits in plain decimal notation",
            where=where,
        )
    return number


def _negated(value: Decimal) -> Decimal:
    """``-value`` exactly (no context rounding), and never a negative zero."""
    return value.copy_negate() if not value.is_zero() else Decimal(0)


def tighter_lower(minimum: Decimal | None, exclusive_minimum: Decimal | None) -> Bound | None:
    """The tighter of the two lower bounds (equal values: the exclusive one)."""
    candidates = []
    if minimum is not None:
        candidates.append(Bound(minimum, True))
    if exclusive_minimum is not None:
        candidates.append(Bound(exclusive_minimum, False))
    if not candidates:
        return None
    return max(candidates, key=lambda b: (b.value, not b.inclusive))


def tighter_upper(maximum: Decimal | None, exclusive_maximum: Decimal | None) -> Bound | None:
    """The tighter of the two upper bounds (equal values: the exclusive one)."""
    candidates = []
    if maximum is not None:
        candidates.append(Bound(maximum, True))
    if exclusive_maximum is not None:
        candidates.append(Bound(exclusive_maximum, False))
    if not candidates:
        return None
    return min(candidates, key=lambda b: (b.value, b.inclusive))


def _bounds(
    minimum: NumberValue | None,
    maximum: NumberValue | None,
    exclusive_minimum: NumberValue | None,
    exclusive_maximum: NumberValue | None,
    where: str | None,
) -> tuple[Bound | None, Bound | None]:
    low = tighter_lower(
        as_decimal(minimum, "minimum", where), as_decimal(exclusive_minimum, "exclusiveMinimum", where)
    )
    high = tighter_upper(
        as_decimal(maximum, "maximum", where), as_decimal(exclusive_maximum, "exclusiveMaximum", where)
    )
    return low, high


def positive_step(multiple_of: NumberValue | None, where: str | None) -> Decimal | None:
    """``multipleOf`` as a Decimal (``as_decimal``), which must be greater than 0."""
    step = as_decimal(multiple_of, "multipleOf", where)
    if step is not None and step <= 0:
        raise UnsupportedError(f"multipleOf value {multiple_of}", "must be greater than 0", where=where)
    return step


def _with_step(node: ir.Node, step: Decimal | None, allow_fraction: bool, limits: Limits) -> ir.Node:
    if step is None or node == ir.NOTHING:
        return node
    steps = multiple_of_dfa(step, limits, allow_fraction=allow_fraction)
    product = intersect(compile_ir(node, limits), steps, limits)
    if product.is_empty:
        return ir.NOTHING
    return ir.Automaton(product, f"multipleOf {step}")


def integer_node(
    minimum: NumberValue | None = None,
    maximum: NumberValue | None = None,
    exclusive_minimum: NumberValue | None = None,
    exclusive_maximum: NumberValue | None = None,
    multiple_of: NumberValue | None = None,
    limits: Limits | None = None,
    where: str | None = None,
) -> ir.Node:
    """Canonical integers ``-?(0|[1-9][0-9]*)`` (no ``-0``) within the bounds, multiples of the step."""
    low, high = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum, where)
    return integers_between(low, high, positive_step(multiple_of, where), limits or Limits())


def integers_between(low: Bound | None, high: Bound | None, step: Decimal | None, limits: Limits) -> ir.Node:
    """``integer_node`` for bounds and a step already checked (``as_decimal``, ``positive_step``)."""
    lowest = None if low is None else (math.ceil(low.value) if low.inclusive else math.floor(low.value) + 1)
    highest = (
        None if high is None else (math.floor(high.value) if high.inclusive else math.ceil(high.value) - 1)
    )
    non_negative: ir.Node = ir.NOTHING
    if highest is None or highest >= 0:
        non_negative = integer_range(max(lowest or 0, 0), highest)
    negative: ir.Node = ir.NOTHING
    if lowest is None or lowest < 0:
        magnitude_low = 1 if highest is None or highest >= 0 else -highest
        magnitude_high = None if lowest is None else -lowest
        negative = ir.seq(MINUS, integer_range(magnitude_low, magnitude_high))
    return _with_step(ir.alt(non_negative, negative), step, False, limits)


def number_node(
    minimum: NumberValue | None = None,
    maximum: NumberValue | None = None,
    exclusive_minimum: NumberValue | None = None,
    exclusive_maximum: NumberValue | None = None,
    multiple_of: NumberValue | None = None,
    limits: Limits | None = None,
    where: str | None = None,
) -> ir.Node:
    """Plain decimals ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` (no ``-0``) within the bounds, exactly."""
    low, high = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum, where)
    return numbers_between(low, high, positive_step(multiple_of, where), limits or Limits())


def numbers_between(low: Bound | None, high: Bound | None, step: Decimal | None, limits: Limits) -> ir.Node:
    """``number_node`` for bounds and a step already checked (``as_decimal``, ``positive_step``)."""
    zero = Decimal(0)
    # Values >= 0, spelled without a sign.
    non_negative_low = low if low is not None and low.value >= 0 else Bound(zero, True)
    non_negative = magnitude_interval(non_negative_low, high)
    # Values < 0: "-" then a magnitude m > 0 with -m inside [low, high].
    if high is None or high.value >= 0:
        magnitude_low = Bound(zero, False)
    else:
        magnitude_low = Bound(_negated(high.value), high.inclusive)
    magnitude_high = None if low is None else Bound(_negated(low.value), low.inclusive)
    if magnitude_high is not None and magnitude_high.value < 0:
        negative: ir.Node = ir.NOTHING
    else:
        negative = ir.seq(MINUS, magnitude_interval(magnitude_low, magnitude_high))
    return _with_step(ir.alt(non_negative, negative), step, True, limits)
