"""``uniqueItems: true`` over a finite element language: arrays whose elements are distinct values.

Takes: the minimal DFA of every element an array may hold (its ``prefixItems`` and ``items``
languages together), the array's ``maxItems`` and the limits. Hands on: the values that language
holds, each with all its serializations (``element_values``), and, from them, the content of an
array of pairwise distinct values (``distinct_sequences``), to be intersected with the array's own
language.

Exactness: a JSON array text splits into its elements in one way only, so the intersection of the
array's language with "a sequence of distinct values of the element language" keeps exactly the
arrays whose values are distinct. Two serializations of one value (``1`` and ``1.0``, whitespace
variants) are grouped under that value, compared as JSON Schema compares values (``1 == 1.0``,
``true != 1``, objects by their members). The automaton remembers which values it has seen: a
state per set of seen values, so ``n`` values need up to ``2 ** n`` sets (fewer with ``maxItems``);
past the bounds below the keyword is refused, naming why.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from itertools import combinations
from math import comb
from typing import Any

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.counted import check_product_operands
from moonmaskc.automata.dfa import DFA

# At most this many serializations of elements are listed (the element language must be finite).
MAX_ELEMENT_TEXTS = 512
# At most this many distinct values: the sets of seen values grow as 2 ** values.
MAX_DISTINCT_VALUES = 16


class NotSmall(Exception):
    """The element language is not finite and small: the reason, for the refusal."""


def _finite_count(dfa: DFA, cap: int) -> int:
    """How many strings ``dfa`` accepts, stopping past ``cap``; ``NotSmall`` when infinite."""
    members = [np.flatnonzero(dfa.byte_class == c).size for c in range(dfa.transitions.shape[1])]
    counts: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[int, bool]] = [(dfa.start, False)]
    while stack:
        state, done = stack.pop()
        if done:
            on_path.discard(state)
            total = int(dfa.accepting[state])
            for column, target in enumerate(dfa.transitions[state]):
                if target:
                    total += members[column] * counts[int(target)]
            counts[state] = min(total, cap + 1)
            continue
        if state in counts:
            continue
        if state in on_path:
            raise NotSmall("the items' language is infinite (a loop: unbounded strings, numbers or arrays)")
        on_path.add(state)
        stack.append((state, True))
        for target in dfa.transitions[state]:
            target = int(target)
            if target and target not in counts:
                if target in on_path:
                    raise NotSmall(
                        "the items' language is infinite (a loop: unbounded strings, numbers or arrays)"
                    )
                stack.append((target, False))
    return counts[dfa.start] if dfa.start else 0


def _texts(dfa: DFA) -> list[bytes]:
    """Every string of the finite ``dfa`` (counted first, so the list is small)."""
    byte_lists = [
        [int(b) for b in np.flatnonzero(dfa.byte_class == c)] for c in range(dfa.transitions.shape[1])
    ]
    out: list[bytes] = []
    stack: list[tuple[int, bytes]] = [(dfa.start, b"")]
    while stack:
        state, prefix = stack.pop()
        if dfa.accepting[state]:
            out.append(prefix)
        for column, target in enumerate(dfa.transitions[state]):
            if target:
                stack.extend((int(target), prefix + bytes([b])) for b in byte_lists[column])
    return out


def value_key(value: Any) -> Any:
    """A hashable key equal for values that JSON Schema calls equal (numbers by value, booleans
    apart from numbers, objects whatever their key order)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, Decimal):
        return ("number", value.normalize() if value else Decimal(0))
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(value_key(v) for v in value))
    return ("object", frozenset((k, value_key(v)) for k, v in value.items()))


def element_values(dfa: DFA) -> list[list[bytes]]:
    """The serializations of each value ``dfa`` (an element language) holds, grouped by value;
    ``NotSmall`` when the language is infinite or too large. A counted string's marker stands for
    many strings: ``CountedRegionError`` (the compile writes its bounds out instead)."""
    check_product_operands(dfa)
    count = _finite_count(dfa, MAX_ELEMENT_TEXTS)
    if count > MAX_ELEMENT_TEXTS:
        raise NotSmall(f"the items' language holds more than {MAX_ELEMENT_TEXTS} serializations")
    groups: dict[Any, list[bytes]] = {}
    for text in sorted(_texts(dfa)):
        value = json.loads(text, parse_float=Decimal, parse_int=Decimal)
        groups.setdefault(value_key(value), []).append(text)
    if len(groups) > MAX_DISTINCT_VALUES:
        raise NotSmall(
            f"the items' language holds {len(groups)} distinct values, more than {MAX_DISTINCT_VALUES} "
            "(the automaton remembers each set of values seen)"
        )
    return list(groups.values())


def seen_sets(values: int, most: int | None) -> int:
    """How many sets of seen values an array of at most ``most`` elements can reach."""
    longest = values if most is None else min(values, most)
    return sum(comb(values, k) for k in range(longest + 1))


def distinct_sequences(
    values: list[list[bytes]], comma: ir.Node, most: int | None, share: Callable[[ir.Node], ir.Node]
) -> ir.Node:
    """Non-empty sequences (``comma`` between) of pairwise distinct values of ``values``, at most
    ``most`` long: after the set ``seen``, any value not in it, then optionally more. One node per
    reachable set, built from the largest sets down (no recursion)."""
    elements = [ir.alt(*(ir.literal(text) for text in texts)) for texts in values]
    count = len(values)
    longest = count if most is None else min(count, most)
    rests: dict[int, ir.Node] = {}
    for size in range(longest, -1, -1):
        for seen in _sets_of_size(count, size):
            if size == longest:
                rests[seen] = ir.NOTHING
                continue
            choices = []
            for i in range(count):
                if seen >> i & 1:
                    continue
                after = rests[seen | 1 << i]
                tail = ir.optional(ir.seq(comma, after)) if after != ir.NOTHING else ir.EPSILON
                choices.append(ir.seq(elements[i], tail))
            rests[seen] = share(ir.alt(*choices))
    return rests[0]


def _sets_of_size(count: int, size: int) -> list[int]:
    """Bit sets over ``count`` values with ``size`` members."""
    return [sum(1 << i for i in chosen) for chosen in combinations(range(count), size)]
