"""``not`` and ``if`` / ``then`` / ``else``: languages complemented against the bounded universe.

Takes: the operand schema (``not``'s, or ``if``'s with the branches and the rest of the schema) and
the walk (``compiler.SchemaWalk``).
Hands on: the DFA of the canonical values of bounded depth that the operand rejects
(``complement``; None where it was dropped under lenient), and the language of a conditional.
An operand whose objects have a fixed key order or whose recursion was cut cannot be complemented
exactly: it is refused (dropped under lenient) rather than complemented wrongly. But an operand of
fixed key order that only asks for keys and for the values of some keys (``required``,
``properties``, ``allOf`` of those, ``type: object``) needs no complement of objects:
``negated_presence`` writes its negation as a schema (by De Morgan: an object that lacks one of
the required keys, or holds one of the properties with a value its schema rejects; and the other
types where the operand asks for objects), whose only complements are those of the property
schemas (``negation``).
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


def negation(walk: SchemaWalk, rest: dict[str, Any], operand: Any, where: str) -> ir.Node:
    """``rest`` with ``not: operand`` (at ``where``, the schema holding ``not``)."""
    ctx = walk.ctx
    not_where = pointer_child(where, "not")
    positive = negated_presence(operand)
    ordered_before = ctx.flags.ordered
    if positive is not None:
        with ctx.probe(), ctx.bounded() as flags, ctx.signed(-1):
            walk.node(operand, not_where)
        if flags.ordered and not flags.ref_cut:
            # Its complement is of objects of a fixed key order: the negation written as a schema.
            ctx.flags.ordered = ordered_before
            return all_of(walk, [rest, positive], where, [where, not_where])
    with ctx.without_nests():  # an operand of the product below
        base = walk.typed(rest, where)
    if is_empty_node(base):
        return ir.NOTHING
    negated = complement(walk, operand, not_where, "not")
    if negated is None:
        return base
    base_dfa = walk.automata.dfa(base)
    return walk.automata.derived(
        "not", (base_dfa, negated), lambda: intersect(base_dfa, negated, walk.limits)
    )


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
    ctx.bounded_product(keyword, where, ctx.depth_left())
    operand_dfa = walk.automata.dfa(operand)
    return walk.automata.derived(
        "complement", (universe, operand_dfa), lambda: difference(universe, operand_dfa, walk.limits)
    ).dfa


_PRESENCE_KEYWORDS = {"required", "properties", "allOf", "type", "title", "description", "$comment"}
_NOT_OBJECTS = ["null", "boolean", "number", "string", "array"]


def negated_presence(operand: Any) -> Any:
    """A schema for the values that ``operand`` rejects, when ``operand`` only asks for keys and
    values of keys (see the module docstring); None otherwise."""
    found = _presence(operand)
    if found is None:
        return None
    required, properties, objects_only = found
    disjuncts: list[Any] = [{"properties": {key: False}} for key in required]
    disjuncts += [{"required": [key], "properties": {key: {"not": value}}} for key, value in properties]
    objects: Any = {"type": "object", "anyOf": disjuncts} if disjuncts else False
    if not objects_only:
        return objects
    others = {"type": _NOT_OBJECTS}
    return {"anyOf": [objects, others]} if disjuncts else others


def _presence(operand: Any) -> tuple[list[str], list[tuple[str, Any]], bool] | None:
    """The required keys, the property schemas and whether only objects are asked for, of an
    operand made of ``required`` / ``properties`` / ``allOf`` / ``type: object`` alone."""
    required: list[str] = []
    properties: list[tuple[str, Any]] = []
    objects_only = False
    work = [operand]
    while work:
        schema = work.pop()
        if schema is True or schema == {}:
            continue
        if not isinstance(schema, dict) or not set(schema) <= _PRESENCE_KEYWORDS:
            return None
        kind = schema.get("type")
        if kind is not None:
            if kind not in ("object", ["object"]):
                return None
            objects_only = True
        keys = schema.get("required", [])
        props = schema.get("properties", {})
        parts = schema.get("allOf", [])
        if not (isinstance(keys, list) and isinstance(props, dict) and isinstance(parts, list)):
            return None
        if not all(isinstance(key, str) for key in keys):
            return None
        required += [key for key in keys if key not in required]
        properties += [(key, value) for key, value in props.items() if value is not True and value != {}]
        work.extend(reversed(parts))
    return required, properties, objects_only


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
