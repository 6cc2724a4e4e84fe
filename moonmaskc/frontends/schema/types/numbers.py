"""Numbers and integers: a schema's numeric keywords to the language of its numbers.

Takes: the schema's ``NumberKeywords`` (``normalize.number_keywords``: exact bounds, whether
fractions are allowed) and the walk (``compiler.SchemaWalk``).
Hands on: the canonical numbers within the tighter lower and upper bounds, multiples of
``multipleOf`` (built by ``schema.numbers``), once per equal keywords; a range that cannot be
compiled is refused (dropped under lenient).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moonmaskc import ir
from moonmaskc.frontends.schema.numbers import integers_between, numbers_between
from moonmaskc.frontends.schema.typed import NumberKeywords

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk


def numeric(walk: SchemaWalk, keywords: NumberKeywords, where: str) -> ir.Node:
    """The numbers (``keywords.fractions``) or integers that the keywords accept."""
    build = numbers_between if keywords.fractions else integers_between
    # Equal keywords give the same automaton (a $ref'd number used in two places, say): built once.
    # 1 and 1.0 and True are equal keys but may be told apart by the builder, so the key holds the
    # keywords as written with their types (``NumberKeywords.key``; None: not kept).
    key, cache = keywords.key, walk.automata.numbers
    if key is not None:
        found = cache.get(key)
        if found is not None:
            return found
    node = walk.ctx.attempt(
        "number bounds",
        where,
        lambda: build(keywords.lower, keywords.upper, keywords.multiple_of, walk.limits),
    )
    if node is None:  # refused under lenient: not kept, so that every place warns
        return build(None, None, None, walk.limits)
    if key is not None:
        cache[key] = node
    return node
