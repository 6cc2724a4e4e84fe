"""Regular languages of decimal digit strings compared with a bound, built digit by digit.

Takes: bounds as plain digit strings (no sign, no exponent). Hands on: IR nodes over ASCII bytes for

- canonical non-negative integers ``0|[1-9][0-9]*`` in a range (``integer_range``);
- fraction suffixes ``(\\.[0-9]+)?`` whose value (as ``0.<digits>``, padded with zeros) lies at
  least / at most / between given fraction bounds (``fraction_suffix``);
- non-negative plain decimals ``(0|[1-9][0-9]*)(\\.[0-9]+)?`` in an interval (``magnitude_interval``).

Comparisons are exact: a fraction ``d1 d2 ...`` is compared with a bound ``b1 b2 ...`` digit by digit
after padding the shorter one with zeros; all loops run over the digits from the right, so the IR
size grows linearly with the number of digits in the bounds, and nothing recurses per digit.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir

DIGIT = ir.byte_range(0x30, 0x39)
NONZERO_DIGIT = ir.byte_range(0x31, 0x39)
ANY_DIGITS = ir.star(DIGIT)
DOT = ir.literal(b".")
ANY_FRACTION = ir.optional(ir.seq(DOT, ir.plus(DIGIT)))
ANY_INTEGER_PART = ir.alt(ir.literal(b"0"), ir.seq(NONZERO_DIGIT, ANY_DIGITS))
# Digit strings with at least one non-zero digit (fraction value > 0).
SOME_NONZERO = ir.seq(ir.star(ir.literal(b"0")), NONZERO_DIGIT, ANY_DIGITS)


# Each digit of a bound nests the IR one level deeper; every FREEZE_DEPTH digits the language built
# so far is compiled into an ``ir.Automaton`` leaf, so bounds with hundreds of digits (1.8e308) keep
# the IR shallow for the recursive passes (hashing, printing, NFA construction).
FREEZE_DEPTH = 48


def _bounded_depth(node: ir.Node, depth: int) -> ir.Node:
    if depth % FREEZE_DEPTH or node == ir.NOTHING:
        return node
    return ir.Automaton(compile_ir(node), "digits")


def digits_between(lo: int, hi: int) -> ir.Node:
    """One digit character from ``lo`` to ``hi`` (empty language when lo > hi)."""
    if lo > hi:
        return ir.NOTHING
    return ir.byte_range(0x30 + lo, 0x30 + hi)


@dataclass(frozen=True)
class DigitLanguage:
    """A set of digit strings, split into whether it holds the empty string and its non-empty part."""

    has_empty: bool
    nonempty: ir.Node

    def whole(self) -> ir.Node:
        return ir.alt(ir.EPSILON, self.nonempty) if self.has_empty else self.nonempty


# ---------------------------------------------------------------------------------------------
# Fractions: digit strings D compared with a bound f by value 0.D vs 0.f
# ---------------------------------------------------------------------------------------------


def fraction_at_least(bound: str, inclusive: bool) -> DigitLanguage:
    """Digit strings D with 0.D >= 0.bound (or > when not inclusive); bound has no trailing zeros."""
    if bound.endswith("0"):
        raise ValueError("fraction bound must not end with 0")
    # tail: the language for bound[i:], built from the right.
    tail = DigitLanguage(True, ir.plus(DIGIT)) if inclusive else DigitLanguage(False, SOME_NONZERO)
    tail_whole = tail.whole()
    for depth, ch in enumerate(reversed(bound), start=1):
        c = int(ch)
        nonempty = _bounded_depth(
            ir.alt(
                ir.seq(digits_between(c + 1, 9), ANY_DIGITS),
                ir.seq(digits_between(c, c), tail_whole),
            ),
            depth,
        )
        tail = DigitLanguage(False, nonempty)
        tail_whole = nonempty
    return tail


def fraction_at_most(bound: str, inclusive: bool) -> DigitLanguage:
    """Digit strings D with 0.D <= 0.bound (or < when not inclusive); bound has no trailing zeros."""
    if bound.endswith("0"):
        raise ValueError("fraction bound must not end with 0")
    if inclusive:
        tail = DigitLanguage(True, ir.plus(ir.literal(b"0")))
    else:
        tail = DigitLanguage(False, ir.NOTHING)
    for depth, ch in enumerate(reversed(bound), start=1):
        c = int(ch)
        nonempty = _bounded_depth(
            ir.alt(
                ir.seq(digits_between(0, c - 1), ANY_DIGITS),
                ir.seq(digits_between(c, c), tail.whole()),
            ),
            depth,
        )
        tail = DigitLanguage(True, nonempty)
    return tail


def fraction_between(low: str, high: str, low_inclusive: bool, high_inclusive: bool) -> DigitLanguage:
    """Digit strings D with 0.low <= 0.D <= 0.high (strict where not inclusive); needs 0.low <= 0.high."""
    width = max(len(low), len(high))
    padded_low, padded_high = low.ljust(width, "0"), high.ljust(width, "0")
    if padded_low > padded_high:
        raise ValueError("fraction_between needs low <= high")
    split = next((i for i in range(width) if padded_low[i] != padded_high[i]), None)
    if split is None:
        # Equal bounds: only strings whose value equals them, i.e. bound followed by zeros.
        if not (low_inclusive and high_inclusive):
            return DigitLanguage(False, ir.NOTHING)
        zeros = ir.star(ir.literal(b"0"))
        if not low:
            return DigitLanguage(True, ir.plus(ir.literal(b"0")))
        return DigitLanguage(False, ir.seq(ir.text(low), zeros))
    lo_digit, hi_digit = int(padded_low[split]), int(padded_high[split])
    rest_low, rest_high = low[split + 1 :], high[split + 1 :]
    branching = ir.alt(
        ir.seq(digits_between(lo_digit, lo_digit), fraction_at_least(rest_low, low_inclusive).whole()),
        ir.seq(digits_between(lo_digit + 1, hi_digit - 1), ANY_DIGITS),
        ir.seq(digits_between(hi_digit, hi_digit), fraction_at_most(rest_high, high_inclusive).whole()),
    )
    prefix = padded_low[:split]
    # Strings that stop inside the common prefix are worth prefix[:j] padded with zeros: that is
    # below high, and reaches low only when low itself has ended (the rest of the prefix is zeros).
    parts = [ir.seq(ir.text(prefix), branching)]
    fewest_zeros = 0 if low else 1
    if low_inclusive and split - len(low) >= fewest_zeros:
        parts.append(ir.seq(ir.text(low), ir.repeat(ir.literal(b"0"), fewest_zeros, split - len(low))))
    nonempty = ir.alt(*parts)
    return DigitLanguage(not low and low_inclusive, nonempty)


def fraction_suffix(language: DigitLanguage) -> ir.Node:
    """``(\\.D)?`` for the digit strings D of ``language``; no suffix stands for the value 0."""
    with_dot = ir.seq(DOT, language.nonempty)
    return ir.alt(ir.EPSILON, with_dot) if language.has_empty else with_dot


# ---------------------------------------------------------------------------------------------
# Canonical non-negative integers
# ---------------------------------------------------------------------------------------------


def fixed_length_range(low: str, high: str) -> ir.Node:
    """Digit strings of one length n between low and high inclusive (both n digits, low <= high)."""
    n = len(low)
    split = next((i for i in range(n) if low[i] != high[i]), None)
    if split is None:
        return ir.text(low)
    rest = n - split - 1
    lo_digit, hi_digit = int(low[split]), int(high[split])
    branching = ir.alt(
        ir.seq(ir.text(low[split]), _fixed_tail_at_least(low[split + 1 :])),
        ir.seq(digits_between(lo_digit + 1, hi_digit - 1), ir.repeat(DIGIT, rest, rest)),
        ir.seq(ir.text(high[split]), _fixed_tail_at_most(high[split + 1 :])),
    )
    return ir.seq(ir.text(low[:split]), branching)


def _fixed_tail(digits: str, at_least: bool) -> ir.Node:
    """Strings of exactly len(digits) digits that are >= digits (at_least) or <= digits."""
    free = "0" if at_least else "9"  # trailing digits that constrain nothing
    bounded = digits.rstrip(free)
    node: ir.Node = ir.repeat(DIGIT, len(digits) - len(bounded), len(digits) - len(bounded))
    for index in range(len(bounded) - 1, -1, -1):
        c = int(bounded[index])
        rest = len(digits) - index - 1
        beyond = digits_between(c + 1, 9) if at_least else digits_between(0, c - 1)
        node = _bounded_depth(
            ir.alt(ir.seq(beyond, ir.repeat(DIGIT, rest, rest)), ir.seq(ir.text(bounded[index]), node)),
            len(bounded) - index,
        )
    return node


def _fixed_tail_at_least(digits: str) -> ir.Node:
    return _fixed_tail(digits, at_least=True)


def _fixed_tail_at_most(digits: str) -> ir.Node:
    return _fixed_tail(digits, at_least=False)


def integer_range(low: int, high: int | None) -> ir.Node:
    """Canonical decimal text (no sign, no leading zeros) of the integers low..high (None: no top)."""
    if low < 0 or (high is not None and high < low):
        return ir.NOTHING
    low_len = len(str(low))
    high_len = len(str(high)) if high is not None else low_len
    parts: list[ir.Node] = []

    def lengths_range(n: int) -> None:
        smallest = 10 ** (n - 1) if n > 1 else 0
        largest = 10**n - 1
        lo_n = max(low, smallest)
        hi_n = largest if high is None else min(high, largest)
        if lo_n <= hi_n:
            parts.append(fixed_length_range(str(lo_n), str(hi_n)))

    lengths_range(low_len)
    if high is None:
        parts.append(ir.seq(NONZERO_DIGIT, ir.repeat(DIGIT, low_len, None)))
    elif high_len > low_len:
        # Every number with a length strictly between the two bounds' lengths.
        if high_len - low_len >= 2:
            parts.append(ir.seq(NONZERO_DIGIT, ir.repeat(DIGIT, low_len, high_len - 2)))
        lengths_range(high_len)
    return ir.alt(*parts)


# ---------------------------------------------------------------------------------------------
# Non-negative plain decimals in an interval
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """One end of an interval: a finite Decimal value, inclusive or not."""

    value: Decimal
    inclusive: bool


def split_plain(value: Decimal) -> tuple[int, str]:
    """A non-negative Decimal as (integer part, fraction digits without trailing zeros), exactly."""
    plain = format(value, "f")
    whole, _, fraction = plain.partition(".")
    return int(whole), fraction.rstrip("0")


def interval_is_empty(low: Bound, high: Bound | None) -> bool:
    if high is None:
        return False
    if low.value > high.value:
        return True
    return low.value == high.value and not (low.inclusive and high.inclusive)


def magnitude_interval(low: Bound, high: Bound | None) -> ir.Node:
    """Non-negative plain decimals ``(0|[1-9][0-9]*)(\\.[0-9]+)?`` with value in [low, high].

    ``low.value`` must be >= 0; ``high`` None means no upper bound. Trailing fraction zeros are allowed,
    so every value in the interval keeps all its plain spellings.
    """
    if low.value < 0:
        raise ValueError("magnitude_interval needs a non-negative low bound")
    if interval_is_empty(low, high):
        return ir.NOTHING
    low_int, low_fraction = split_plain(low.value)
    low_side = fraction_suffix(fraction_at_least(low_fraction, low.inclusive))
    if high is None:
        return ir.alt(
            ir.seq(ir.text(str(low_int)), low_side),
            ir.seq(integer_range(low_int + 1, None), ANY_FRACTION),
        )
    high_int, high_fraction = split_plain(high.value)
    if low_int == high_int:
        inside = fraction_between(low_fraction, high_fraction, low.inclusive, high.inclusive)
        return ir.seq(ir.text(str(low_int)), fraction_suffix(inside))
    high_side = fraction_suffix(fraction_at_most(high_fraction, high.inclusive))
    return ir.alt(
        ir.seq(ir.text(str(low_int)), low_side),
        ir.seq(integer_range(low_int + 1, high_int - 1), ANY_FRACTION),
        ir.seq(ir.text(str(high_int)), high_side),
    )
