"""Arrays: a schema's array keywords to the language of its arrays.

Takes: a cleaned schema and the walk (``compiler.SchemaWalk``).
Hands on: arrays whose elements follow ``prefixItems`` / ``items`` (or draft-07's ``items`` array
and ``additionalItems``), within ``minItems`` / ``maxItems``; with ``contains`` (and
``minContains`` / ``maxContains``) the elements are counted (``schema.contains``); with
``uniqueItems`` the arrays of distinct values are kept where the element language is finite and
small (``schema.unique_items``), else the keyword is refused (dropped under lenient).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.automata.product import difference, intersect
from moonmaskc.frontends.schema.arguments import as_list, count
from moonmaskc.frontends.schema.automata import is_empty_node
from moonmaskc.frontends.schema.contains import counted_elements
from moonmaskc.frontends.schema.refs import pointer_child
from moonmaskc.frontends.schema.sequences import positional_elements

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

# What ``contains`` asks of the elements: the matching ones (None: every element), at least, at most.
ContainsRule = tuple[ir.Node | None, int, int | None]


def array(walk: SchemaWalk, schema: dict[str, Any], where: str) -> ir.Node:
    """The arrays that ``schema`` accepts."""
    ctx, automata = walk.ctx, walk.automata
    items = schema.get("items")
    if isinstance(items, list):
        prefix_schemas, rest_schema, prefix_key = items, schema.get("additionalItems", True), "items"
        rest_where = pointer_child(where, "additionalItems")
    else:
        prefix_schemas = as_list(schema.get("prefixItems", []), "prefixItems", where)
        rest_schema, prefix_key = (True if items is None else items), "prefixItems"
        rest_where = pointer_child(where, "items")
    least = count(schema, "minItems", where) or 0
    most = count(schema, "maxItems", where)
    if most is not None and most < least:
        return ir.NOTHING
    with ctx.deeper():
        if ctx.past_budget():
            return ir.NOTHING
        prefix = []
        for i, p in enumerate(prefix_schemas):
            if most is not None and i >= most:
                break
            prefix.append(automata.share(walk.node(p, pointer_child(where, prefix_key, i))))
        rest = None
        if rest_schema is not False and (most is None or most > len(prefix_schemas)):
            rest = automata.share(walk.node(rest_schema, rest_where))
            if is_empty_node(rest):
                rest = None
        rule = contains_rule(walk, schema, where) if "contains" in schema else None
    content, may_be_empty = positional_elements(prefix, rest, walk.layout.comma, least, most)
    plain = walk.layout.wrap(b"[", content, b"]", may_be_empty)
    elements = [node for node in (*prefix, rest) if node is not None]
    if rule is not None:
        plain = containing(walk, plain, elements, rule)
    if schema.get("uniqueItems") is True and not _at_most_one_item(schema) and elements:
        return unique(walk, plain, elements, most, where)
    return plain


def unique(
    walk: SchemaWalk, plain: ir.Node, elements: list[ir.Node], most: int | None, where: str
) -> ir.Node:
    """``plain``'s arrays whose elements are distinct values (``unique_items.py``): exact where
    the elements' language is finite and small, else refused naming why (dropped under
    lenient)."""
    from moonmaskc.frontends.schema.unique_items import (
        NotSmall,
        distinct_sequences,
        element_values,
        seen_sets,
    )

    ctx, automata, limits = walk.ctx, walk.automata, walk.limits
    try:
        values = element_values(automata.dfa(ir.alt(*elements)))
    except NotSmall as why:
        ctx.refuse("uniqueItems", f"compiled only over a finite, small set of item values: {why}", where)
        return plain
    sets = seen_sets(len(values), most)
    if sets > limits.max_states:
        message = (
            f"{len(values)} distinct item values make {sets} sets of values seen, more than "
            f"max_states {limits.max_states} (raise it with --max-states, or bound maxItems)"
        )
        ctx.refuse("uniqueItems", message, where)
        return plain
    if len(values) < 2:
        return plain
    content = distinct_sequences(values, walk.layout.comma, most, automata.share)
    distinct = walk.layout.wrap(b"[", content, b"]", True)
    pair = (automata.dfa(plain), automata.dfa(distinct))
    return automata.derived("uniqueItems", pair, lambda: intersect(*pair, limits))


def contains_rule(walk: SchemaWalk, schema: dict[str, Any], where: str) -> ContainsRule:
    """What ``contains`` asks of the elements: the language of the matching ones (None: every
    element matches), minContains (default 1) and maxContains. An upper bound counts the
    elements that do not match, a complement within the array's elements, so like ``not`` it
    is refused (dropped under lenient) where the contains schema has objects of fixed key order
    or was cut by max_depth: a matching element outside the compiled language would go
    uncounted."""
    ctx, automata = walk.ctx, walk.automata
    target, target_where = schema["contains"], pointer_child(where, "contains")
    least = count(schema, "minContains", where)
    least = 1 if least is None else least
    most = count(schema, "maxContains", where)
    if target is True or target == {}:
        return None, least, most
    if most is None:
        return automata.share(walk.node(target, target_where)), least, None
    with ctx.bounded() as flags, ctx.signed(0):
        wanted = automata.share(walk.node(target, target_where))
    if flags.ordered or flags.ref_cut or flags.depth_cut:
        why = "objects of a fixed key order" if flags.ordered else "parts cut by max_depth"
        ctx.refuse("maxContains", f"cannot count the other elements exactly: contains has {why}", where)
        most = None
    return wanted, least, most


def containing(walk: SchemaWalk, plain: ir.Node, elements: list[ir.Node], rule: ContainsRule) -> ir.Node:
    """The arrays of ``plain`` (whose elements are among ``elements``) in which the number of
    elements valid for ``contains`` is within the bounds of ``rule`` (``contains_rule``):
    ``plain`` intersected with element sequences that count them (``contains.py``)."""
    automata, limits, layout = walk.automata, walk.limits, walk.layout
    wanted, least, most = rule
    if least == 0 and most is None:
        return plain
    if not elements:  # only the empty array: no element matches
        return plain if least == 0 else ir.NOTHING
    any_element = ir.alt(*elements)
    matching: ir.Node = any_element
    other: ir.Node = ir.NOTHING
    if wanted is not None:
        pair = (automata.dfa(any_element), automata.dfa(wanted))
        matching = automata.derived("contained", pair, lambda: intersect(*pair, limits))
        other = any_element  # enough for a lower bound: the matches among any elements
        if most is not None:
            other = automata.derived("not contained", pair, lambda: difference(*pair, limits))
    content, may_be_empty = counted_elements(matching, other, layout.comma, least, most)
    counted = (automata.dfa(plain), automata.dfa(layout.wrap(b"[", content, b"]", may_be_empty)))
    return automata.derived("contains", counted, lambda: intersect(*counted, limits))


def _at_most_one_item(schema: dict[str, Any]) -> bool:
    most = schema.get("maxItems")
    return isinstance(most, int) and not isinstance(most, bool) and most <= 1
