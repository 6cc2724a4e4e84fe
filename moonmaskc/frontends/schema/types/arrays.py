"""Arrays: a schema's array keywords to the language of its arrays.

Takes: the schema's ``ArrayKeywords`` (``normalize.array_keywords``: draft-07's ``items`` array and
``additionalItems`` already read as positions and the rest) and the walk (``compiler.SchemaWalk``).
Hands on: arrays whose elements follow the positional schemas and then the rest's, within
``minItems`` / ``maxItems``; with ``contains`` (and ``minContains`` / ``maxContains``) the
elements are counted (``schema.contains``); with
``uniqueItems`` the arrays of distinct values are kept where the element language is finite and
small (``schema.unique_items``), else the keyword is refused (dropped under lenient). Under
lenient, item counts whose copies of the elements' automaton would pass the work bound are dropped
with a warning (the language wider).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moonmaskc import ir
from moonmaskc.automata.product import difference, intersect
from moonmaskc.automata.work import check_work
from moonmaskc.errors import LimitError
from moonmaskc.frontends.schema.automata import is_empty_node
from moonmaskc.frontends.schema.contains import counted_elements
from moonmaskc.frontends.schema.sequences import positional_elements
from moonmaskc.frontends.schema.typed import ArrayKeywords, Subschema
from moonmaskc.limits import Limits

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

# What ``contains`` asks of the elements: the matching ones (None: every element), at least, at most.
ContainsRule = tuple[ir.Node | None, int, int | None]


def array(walk: SchemaWalk, keywords: ArrayKeywords, where: str) -> ir.Node:
    """The arrays that the array keywords of the schema at ``where`` accept."""
    if keywords.contains is not None or keywords.unique_items:
        with walk.ctx.without_nests():  # its elements go through products
            return _array(walk, keywords, where)
    return _array(walk, keywords, where)


def _array(walk: SchemaWalk, keywords: ArrayKeywords, where: str) -> ir.Node:
    ctx, automata = walk.ctx, walk.automata
    if keywords.empty:
        return ir.NOTHING
    least, most = keywords.min_items, keywords.max_items
    with ctx.deeper():
        if ctx.past_budget():
            return ir.NOTHING
        prefix = []
        for i, position in enumerate(keywords.prefix):
            if most is not None and i >= most:
                break
            prefix.append(automata.share(walk.node(position.schema, position.where)))
        rest = None
        items = keywords.items
        if items.schema is not False and (most is None or most > len(keywords.prefix)):
            rest = automata.share(walk.node(items.schema, items.where))
            if is_empty_node(rest):
                rest = None
        rule = None if keywords.contains is None else contains_rule(walk, keywords, keywords.contains, where)
    content, may_be_empty = positional_elements(prefix, rest, walk.layout.comma, least, most)
    counted = least > 1 or most is not None
    if ctx.lenient and rest is not None and counted and not fits(content, walk.limits):
        for keyword, value in (("minItems", least if least > 1 else None), ("maxItems", most)):
            if value is not None:
                ctx.drop(
                    f"ignored keyword {keyword!r} at {where}: {keyword} {value} copies the items' "
                    f"automaton past --max-states / --max-work (raise them to keep it)"
                )
        least, most = 0, None
        content, may_be_empty = positional_elements(prefix, rest, walk.layout.comma, 0, None)
    plain = walk.layout.wrap(b"[", content, b"]", may_be_empty)
    elements = [node for node in (*prefix, rest) if node is not None]
    if rule is not None:
        plain = containing(walk, plain, elements, rule)
    if keywords.unique_items and elements:
        return unique(walk, plain, elements, most, where)
    return plain


def fits(node: ir.Node, limits: Limits) -> bool:
    """Whether ``node`` passes the work bound's estimate (``automata.work``): its NFA within
    ``--max-states`` x 8 and its subset construction within ``--max-work``."""
    try:
        check_work(node, limits)
    except LimitError:
        return False
    return True


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


def contains_rule(walk: SchemaWalk, keywords: ArrayKeywords, target: Subschema, where: str) -> ContainsRule:
    """What ``contains`` (``target``) asks of the elements: the language of the matching ones
    (None: every element matches), minContains and maxContains. An upper bound counts the
    elements that do not match, a complement within the array's elements, so like ``not`` it
    is refused (dropped under lenient) where the contains schema has objects of fixed key order
    or was cut by max_depth: a matching element outside the compiled language would go
    uncounted."""
    ctx, automata = walk.ctx, walk.automata
    least, most = keywords.min_contains, keywords.max_contains
    target_where = target.where
    if target.schema is True or target.schema == {}:
        return None, least, most
    if most is None:
        return automata.share(walk.node(target.schema, target_where)), least, None
    with ctx.bounded() as flags, ctx.signed(0):
        wanted = automata.share(walk.node(target.schema, target_where))
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
