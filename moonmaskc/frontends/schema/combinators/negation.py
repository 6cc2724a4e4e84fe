"""``not`` and ``if`` / ``then`` / ``else``: languages complemented against the bounded universe.

Takes: the operand schema (``not``'s, or ``if``'s with the branches and the rest of the schema) and
the walk (``compiler.SchemaWalk``).
Hands on: the DFA of the canonical values of bounded depth that the operand rejects
(``complement``; None where it was dropped under lenient), and the language of a conditional.
An operand whose objects have a fixed key order or whose recursion was cut cannot be complemented
exactly: it is refused (dropped under lenient) rather than complemented wrongly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import difference, intersect
from moonmaskc.frontends.schema.automata import is_empty_node
from moonmaskc.frontends.schema.combinators.all_of import all_of
from moonmaskc.frontends.schema.refs import pointer_child

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk


def complement(walk: SchemaWalk, schema: Any, where: str, keyword: str) -> DFA | None:
    """Canonical values (depth-bounded) that ``schema`` rejects; None if dropped under lenient."""
    ctx = walk.ctx
    with ctx.bounded() as flags, ctx.signed(-1):
        operand = walk.node(schema, where)
    if flags.ordered or flags.ref_cut:
        why = (
            "its objects have a fixed key order (more than one property), so the complement would "
            "accept reordered valid values"
            if flags.ordered
            else "it recurses deeper than max_depth"
        )
        ctx.refuse(keyword, f"cannot be complemented exactly: {why}", where)
        return None
    universe = walk.automata.universe_leaf(ctx.depth_left()).dfa
    ctx.flags.depth_cut = True
    operand_dfa = walk.automata.dfa(operand)
    return walk.automata.derived(
        "complement", (universe, operand_dfa), lambda: difference(universe, operand_dfa, walk.limits)
    ).dfa


def conditional(
    walk: SchemaWalk, base: dict[str, Any], condition: Any, then: Any, otherwise: Any, where: str
) -> ir.Node:
    """``base`` with ``if: condition``: the values valid for both and ``then``, and the values
    valid for ``otherwise`` that ``condition`` rejects."""
    negated = complement(walk, condition, pointer_child(where, "if"), "if")
    if negated is None:
        return walk.typed(base, where)
    taken = all_of(
        walk,
        [base, condition, then],
        where,
        [where, pointer_child(where, "if"), pointer_child(where, "then")],
    )
    not_taken = all_of(walk, [base, otherwise], where, [where, pointer_child(where, "else")])
    if not is_empty_node(not_taken):
        not_taken_dfa = walk.automata.dfa(not_taken)
        not_taken = walk.automata.derived(
            "else", (not_taken_dfa, negated), lambda: intersect(not_taken_dfa, negated, walk.limits)
        )
    return ir.alt(taken, not_taken)
