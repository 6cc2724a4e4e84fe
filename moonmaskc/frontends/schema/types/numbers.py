"""Numbers and integers: a schema's numeric keywords to the language of its numbers.

Takes: a cleaned schema, whether fractions are allowed (``number``) or not (``integer``), and the
walk (``compiler.SchemaWalk``).
Hands on: the canonical numbers within ``minimum`` / ``maximum`` / ``exclusiveMinimum`` /
``exclusiveMaximum`` / ``multipleOf`` (built by ``schema.numbers``), once per equal keywords; a
bound that cannot be compiled is refused (dropped under lenient).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.frontends.schema.numbers import integer_node, number_node

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def numeric(walk: SchemaWalk, schema: dict[str, Any], fractions: bool, where: str) -> ir.Node:
    """The numbers (``fractions``) or integers that ``schema`` accepts."""
    build = number_node if fractions else integer_node
    args = {k: schema.get(k) for k in KEYWORDS}
    # Equal keywords give the same automaton (a $ref'd number used in two places, say): built once.
    # 1 and 1.0 and True are equal keys but may be told apart by the builder, so types are kept.
    key = (fractions, *((value, type(value)) for value in args.values()))
    cache = walk.automata.numbers
    found = cache.get(key)
    if found is not None:
        return found
    node = walk.ctx.attempt(
        "number bounds",
        where,
        lambda: build(
            minimum=args["minimum"],
            maximum=args["maximum"],
            exclusive_minimum=args["exclusiveMinimum"],
            exclusive_maximum=args["exclusiveMaximum"],
            multiple_of=args["multipleOf"],
            limits=walk.limits,
            where=where,
        ),
    )
    if node is None:  # refused under lenient: not kept, so that every place warns
        return build(limits=walk.limits)
    cache[key] = node
    return node
