"""Assertions in the top-level sequence of an alternative, applied by DFA products.

Takes: the items of one alternative of a pattern parsed with markers, with what stands around it
(``ir.seq`` items, flattened: a marker is two ``ByteSet`` items), the ``Resolver`` of the pattern's
assertions, the IR of any text (when the alternative is searched for) and ``Limits``. Hands on:
the same language with every marker that a product can apply taken out. From the right: a ``$``
or a lookahead that does not look back restricts what follows it (the rest of the items, markers
kept) to the words whose text its automaton accepts (or rejects): one intersection (or
difference) of DFAs; a ``^`` with nothing but any text before it drops that text. The other
markers stay, for ``erasure``.

The language is the one that erasing every marker gives. Folding is how assertions outside every
repetition stay a few products in native code, as they were before markers: the erasure follows
configurations one at a time in Python (a password rule of three counted lookaheads before
``.{12,64}`` took two seconds there, and takes a tenth of one as products).
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.product import difference, intersect
from moonmaskc.frontends.regex.conditions import Resolver
from moonmaskc.frontends.regex.markers import MARKER_PREFIX, Kind
from moonmaskc.limits import Limits

LABEL = "zero-width assertions"
_PREFIX = ir.byte_set(1 << MARKER_PREFIX)


def fold(items: list[ir.Node], resolver: Resolver, anything: ir.Node | None, limits: Limits) -> ir.Node:
    """``ir.seq(*items)`` with the markers of its top level that products apply taken out."""
    after: list[ir.Node] = []  # what follows, last item first
    end = len(items)
    while end > 0:
        number = _marker_before(items, end)
        if number is None:
            end -= 1
            after.append(items[end])
            continue
        applied = resolver.product(number)
        if applied is not None:
            automaton, positive = applied
            rest = compile_ir(ir.seq(*reversed(after)), limits)
            kept = intersect(rest, automaton, limits) if positive else difference(rest, automaton, limits)
            after = [ir.Automaton(kept, LABEL)]
            end -= 2
            continue
        before = items[: end - 2]
        if resolver.markers.assertions[number].kind is Kind.START and (
            not before or (anything is not None and before == [anything])
        ):
            return ir.seq(*reversed(after))  # the text before is empty
        after += [items[end - 1], items[end - 2]]
        end -= 2
    return ir.seq(*reversed(after))


def _marker_before(items: list[ir.Node], end: int) -> int | None:
    """The number of the marker that ends at ``items[end - 1]``, if one does."""
    if end < 2 or items[end - 2] != _PREFIX:
        return None
    number = items[end - 1]
    assert isinstance(number, ir.ByteSet) and number.mask & (number.mask - 1) == 0, number
    return number.mask.bit_length() - 1


def has_markers(node: ir.Node) -> bool:
    """Whether some word of ``node`` holds a marker."""

    def step(part: ir.Node, children: list[bool]) -> bool:
        if isinstance(part, ir.ByteSet):
            return bool(part.mask >> MARKER_PREFIX & 1)
        if isinstance(part, ir.Automaton):
            dfa = part.dfa
            return bool((dfa.transitions[:, dfa.byte_class[MARKER_PREFIX]] != 0).any())
        return any(children)

    return bool(ir.fold(node, step))
