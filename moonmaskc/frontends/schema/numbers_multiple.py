"""``multipleOf`` as a DFA over number text.

Takes: a positive step ``m`` (exact Decimal) and ``Limits``. Hands on: a pruned, minimal ``DFA`` over
bytes accepting the strings ``-?[0-9]+(\\.[0-9]+)?`` whose value is an integer multiple of ``m``; the
caller intersects it with a language of canonical numbers (``numbers.py``), so this automaton need
not check canonical form.

Write ``m = a * 10**-k`` with integers ``a >= 1``, ``k >= 0``. A plain decimal ``v`` is a multiple of
``m`` iff ``v * 10**k`` is an integer divisible by ``a``: every fraction digit after the k-th is
zero, and the integer N spelled by the digits up to the k-th fraction digit (padded with zeros) is
divisible by ``a``. The automaton reads digits keeping ``N mod a`` and how many fraction digits it
has read (up to k); it accepts when the remainder, shifted by the fraction digits still missing, is 0.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.distances import prune
from moonmaskc.automata.minimize import minimize
from moonmaskc.errors import LimitError
from moonmaskc.limits import Limits

_MINUS_CLASS = 10
_DOT_CLASS = 11
_OTHER_CLASS = 12


def step_parts(step: Decimal) -> tuple[int, int]:
    """``(a, k)`` with ``step == a * 10**-k``, ``a >= 1`` and k as small as possible; step > 0."""
    sign, digits, exponent = step.as_tuple()
    if sign or not isinstance(exponent, int):
        raise ValueError("step must be a positive finite Decimal")
    coefficient = int("".join(map(str, digits)) or "0")
    if coefficient == 0:
        raise ValueError("step must be positive")
    if exponent >= 0:
        return coefficient * 10**exponent, 0
    k = -exponent
    while k > 0 and coefficient % 10 == 0:
        coefficient //= 10
        k -= 1
    return coefficient, k


def _byte_classes() -> np.ndarray:
    byte_class = np.full(256, _OTHER_CLASS, dtype=np.int32)
    byte_class[0x30:0x3A] = np.arange(10, dtype=np.int32)
    byte_class[ord("-")] = _MINUS_CLASS
    byte_class[ord(".")] = _DOT_CLASS
    return byte_class


def multiple_of_dfa(step: Decimal, limits: Limits | None = None, allow_fraction: bool = True) -> DFA:
    """The minimal DFA of ``-?[0-9]+(\\.[0-9]+)?`` strings whose value is a multiple of ``step``.

    With ``allow_fraction=False`` only ``-?[0-9]+`` strings (integers) are considered, and the
    remainder only needs ``a / gcd(a, 10**k)`` states.
    """
    limits = limits or Limits()
    a, k = step_parts(step)
    if not allow_fraction:
        a //= math.gcd(a, 10**k)
        k = 0
    fraction_slots = 1 + max(k, 1) if allow_fraction else 0
    # States: 0 dead, 1 start, 2 after '-', then blocks of a states each:
    # integer part I(r); after the dot D(r) (no fraction digit yet); fraction F(j, r) for j = 1..k,
    # and F(k, r) loops on '0'. For k == 0, F(0, r) stands for "zeros after the dot".
    blocks = 1 + fraction_slots
    num_states = 3 + a * blocks
    if num_states > limits.max_states:
        raise LimitError(
            "max_states",
            limits.max_states,
            f"multipleOf {step} needs {num_states} automaton states (remainders mod {a})",
            flag="--max-states",
        )

    def integer_state(r: np.ndarray | int) -> np.ndarray | int:
        return 3 + r

    def dot_state(r: np.ndarray | int) -> np.ndarray | int:
        return 3 + a + r

    def fraction_state(j: int, r: np.ndarray | int) -> np.ndarray | int:
        # j in 1..k, or j == 0 when k == 0 (the zeros-only tail).
        slot = max(j, 1) + 1
        return 3 + a * slot + r

    transitions = np.zeros((num_states, 13), dtype=np.int32)
    accepting = np.zeros(num_states, dtype=bool)
    remainders = np.arange(a, dtype=np.int64)
    digits = np.arange(10, dtype=np.int64)
    for d in range(10):
        transitions[1, d] = integer_state(d % a)
        transitions[2, d] = integer_state(d % a)
    transitions[1, _MINUS_CLASS] = 2
    shifted = (remainders[:, None] * 10 + digits[None, :]) % a  # a x 10
    rows = 3 + remainders
    transitions[rows, :10] = integer_state(shifted)
    accepting[rows] = (remainders * pow(10, k, a)) % a == 0
    if allow_fraction:
        transitions[rows, _DOT_CLASS] = dot_state(remainders)
        dot_rows = np.asarray(dot_state(remainders))
        if k == 0:
            transitions[dot_rows, 0] = fraction_state(0, remainders)
            zero_rows = np.asarray(fraction_state(0, remainders))
            transitions[zero_rows, 0] = zero_rows
            accepting[zero_rows] = remainders == 0
        else:
            transitions[dot_rows, :10] = fraction_state(1, shifted)
            for j in range(1, k + 1):
                frac_rows = np.asarray(fraction_state(j, remainders))
                if j < k:
                    transitions[frac_rows, :10] = fraction_state(j + 1, shifted)
                else:
                    transitions[frac_rows, 0] = frac_rows
                accepting[frac_rows] = (remainders * pow(10, k - j, a)) % a == 0
    raw = DFA(transitions, _byte_classes(), accepting, 1)
    return minimize(prune(raw))
