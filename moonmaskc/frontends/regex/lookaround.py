"""Lookaheads: ``(?=X)`` and ``(?!X)`` outside every repetition, resolved into DFA products.

Takes: a top-level alternative whose items hold ``Lookahead`` / ``Choice`` markers (see
``builder``), the language of what follows the alternative up to the end of the text (its
*continuation*: nothing for a full match; any text, or the end, for a search) and ``Limits``.
Hands on: the IR of the alternative followed by its continuation, with every lookahead applied.

A lookahead at some point of a sequence constrains the rest of the text from that point: the rest
is what the sequence's remaining items and the continuation make, intersected with ``X`` followed
by any text (``(?=X)``) or with its complement (``(?!X)``); an ``X`` alternative that ends with
``$`` must reach the end of the text instead. So the items are folded from the right, the
language so far standing for "what follows", and each lookahead becomes one DFA product. A group
without a quantifier whose alternatives hold lookaheads is distributed over the sequence first
(``A (B|C) D`` is ``A B D | A C D``; a group under ``?`` is one with an empty alternative more),
at most ``MAX_SEQUENCES`` ways. A lookahead under another quantifier, a lookbehind, and ``^``
inside a lookahead are refused by the builder or here.
"""

from __future__ import annotations

import itertools

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.product import difference, intersect
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends import utf8
from moonmaskc.frontends.regex.builder import Branch, Choice, Lookahead, Marker
from moonmaskc.limits import Limits

MAX_SEQUENCES = 64
Item = ir.Node | Marker


def resolve(branch: Branch, continuation: ir.Node, end: ir.Node, limits: Limits, pattern: str) -> ir.Node:
    """``branch`` of ``pattern`` followed by ``continuation``, its lookaheads applied; ``end`` is
    what a ``$`` inside a lookahead may still be followed by (nothing, or one final newline)."""
    parts: list[ir.Node] = []
    for items in sequences(branch.items, pattern, branch_position(branch)):
        rest = continuation
        for item in reversed(items):
            if isinstance(item, Lookahead):
                rest = _constrained(item, rest, end, limits, pattern)
            else:
                assert not isinstance(item, Choice)  # distributed by ``sequences``
                rest = ir.seq(item, rest)
        parts.append(rest)
    return ir.alt(*parts)


def branch_position(branch: Branch) -> int:
    for item in branch.items:
        if type(item) is Lookahead or type(item) is Choice:
            return item.position
    return 0


def sequences(items: list[Item], pattern: str, position: int) -> list[list[Item]]:
    """The flat item sequences that ``items`` stand for once every ``Choice`` is distributed."""
    out: list[list[Item]] = [[]]
    for item in items:
        if type(item) is Choice:
            options = [seq for inner in item.branches for seq in sequences(inner.items, pattern, position)]
            out = [head + tail for head, tail in itertools.product(out, options)]
        else:
            out = [[*head, item] for head in out]
        if len(out) > MAX_SEQUENCES:
            raise UnsupportedError(
                "lookahead",
                f"its groups make more than {MAX_SEQUENCES} sequences to distribute over",
                pattern,
                position,
            )
    return out


def _constrained(look: Lookahead, rest: ir.Node, end: ir.Node, limits: Limits, pattern: str) -> ir.Node:
    """``rest`` restricted to the texts whose start matches (``(?=``) or does not match (``(?!``)
    the lookahead's body."""
    anything = ir.seq(ir.star(utf8.any_char()), end)  # any text to the end (its markers, if any)
    bodies: list[ir.Node] = []
    for branch in look.branches:
        if branch.anchored_start or branch.group is not None:
            raise UnsupportedError(
                "anchor inside a lookahead",
                "only '$' at the end of its alternatives is compiled",
                pattern,
                look.position,
            )
        after = end if branch.anchored_end else anything
        bodies.append(resolve(branch, after, end, limits, pattern))
    body = compile_ir(ir.alt(*bodies), limits)
    rest_dfa = compile_ir(rest, limits)
    if look.negative:
        return ir.Automaton(difference(rest_dfa, body, limits), "negative lookahead")
    return ir.Automaton(intersect(rest_dfa, body, limits), "lookahead")
