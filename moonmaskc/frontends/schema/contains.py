"""``contains`` with ``minContains`` / ``maxContains``: element sequences that count their matches.

Takes: the language of the elements that match the ``contains`` schema, the language of the
other elements (for a lower bound alone, any element will do), the separator between elements,
and the bounds. Hands on: ``counted_elements``,
the array content (without brackets) in which between ``least`` and ``most`` elements match, and
whether the empty content qualifies.

The walker intersects this language with the array's own (positions, ``items``, counts). Every
element of an array is one whole JSON value, so the text splits into elements in one way only:
the number of matching elements is well defined, and the intersection is exact. The element
languages are the array's possible elements with the ``contains`` schema (a DFA intersection) and,
for an upper bound, without it (a difference), so no universe of values is involved.
"""

from __future__ import annotations

from moonmaskc import ir


def counted_elements(
    matching: ir.Node, other: ir.Node, sep: ir.Node, least: int, most: int | None
) -> tuple[ir.Node, bool]:
    """Non-empty element sequences with between ``least`` and ``most`` (None: no bound) matching
    elements, and whether no element at all qualifies (``least == 0``)."""
    others_then_sep = ir.star(ir.seq(other, sep))
    only_others = ir.seq(other, ir.star(ir.seq(sep, other)))
    if most is not None and most < max(least, 1):
        return (only_others if least == 0 else ir.NOTHING), least == 0
    more = None if most is None else most - 1
    tail = ir.star(ir.seq(sep, ir.alt(other, matching))) if most is None else ir.star(ir.seq(sep, other))
    at_least_one = ir.seq(
        others_then_sep,
        matching,
        ir.repeat(ir.seq(sep, others_then_sep, matching), max(least, 1) - 1, more),
        tail,
    )
    if least == 0:
        return ir.alt(only_others, at_least_one), True
    return at_least_one, False
