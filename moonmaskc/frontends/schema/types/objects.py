"""Objects: a schema's object keywords to the language of its objects.

Takes: the schema's ``ObjectKeywords`` (``normalize.object_keywords``) and the walk
(``compiler.SchemaWalk``).
Hands on: objects whose declared properties (``properties``, then the ``required`` keys not
declared) come first in schema order, each once, then any other keys allowed by
``additionalProperties`` / ``patternProperties`` / ``propertyNames``, within ``minProperties`` /
``maxProperties``. A value of a key that several patterns (or a property and patterns) match is
valid for all their schemas; the undeclared keys are split into regions by the patterns they
match (``property_keys``). A fixed order of two or more keys is recorded in the flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import intersect
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.automata import is_empty_node, key_literal, quoted_string_dfa
from moonmaskc.frontends.schema.combinators.all_of import all_of, every_schema
from moonmaskc.frontends.schema.property_keys import matching_patterns
from moonmaskc.frontends.schema.sequences import Member, ordered_members
from moonmaskc.frontends.schema.typed import ObjectKeywords, Subschema
from moonmaskc.frontends.schema.types.strings import walk_pattern_node

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk


@dataclass(frozen=True, eq=False)
class PropertyPattern:
    """One pattern of ``patternProperties``: its value schema with its pointer, and the quoted
    canonical keys it matches."""

    value: tuple[Any, str]
    keys: DFA


def object_node(walk: SchemaWalk, keywords: ObjectKeywords, where: str) -> ir.Node:
    """The objects that the object keywords of the schema at ``where`` accept."""
    ctx, automata, layout = walk.ctx, walk.automata, walk.layout
    properties = keywords.declared
    required = keywords.required
    extra = keywords.additional
    least, most = keywords.min_properties, keywords.max_properties
    keys = [*properties, *(k for k in required if k not in properties)]
    order = ctx.key_order
    ranks = {} if order is None else order.ranks(ctx.nesting)
    if order is not None and all(key in ranks for key in keys):
        # One order for every object of the part: each key known at this level, by rank.
        keys = sorted({*keys, *ranks}, key=ranks.__getitem__)
    else:
        order = None
    members: list[Member] = []
    with ctx.deeper():
        if ctx.past_budget():
            return ir.NOTHING
        patterns = property_patterns(walk, keywords)
        names = property_names(walk, keywords)
        for key in keys:
            quoted_key = canonical.serialize(key).encode("utf-8")
            is_required = key in required
            if names is not None and not names.accepts(quoted_key):
                if is_required:
                    return ir.NOTHING
                continue
            matched = matching_patterns(quoted_key, [pattern.keys for pattern in patterns])
            schemas = [patterns[i].value for i in matched]
            if key in properties:
                schemas.insert(0, (properties[key].schema, properties[key].where))
            if not schemas:
                schemas = [(extra.schema, extra.where)]
            value = automata.share(every_schema(walk, schemas))
            if is_empty_node(value):
                if is_required:
                    return ir.NOTHING
                continue
            members.append(Member(layout.member(key_literal(key), value), is_required))
        others = extra_members(walk, keys, patterns, names, extra, where)
    if (
        order is None
        and ctx.budget_end is not None
        and len(members) == 1
        and others is not None
        and least == 0
        and most is None
    ):
        # Inside a complement: one declared key may stand anywhere among the extra keys, so the
        # language holds every key order and the complement stays exact.
        comma = layout.comma
        extras = ir.seq(others, ir.star(ir.seq(comma, others)))
        only = members[0]
        around = ir.seq(ir.optional(ir.seq(extras, comma)), only.node, ir.optional(ir.seq(comma, extras)))
        content = around if only.required else ir.alt(around, extras)
        return layout.wrap(b"{", content, b"}", not only.required)
    possible = None if others is not None else len(members)
    if order is None and members and (possible is None or possible >= 2) and (most is None or most >= 2):
        ctx.flags.ordered = True
    content, may_be_empty = ordered_members(members, others, layout.comma, least, most, automata.share)
    return layout.wrap(b"{", content, b"}", may_be_empty)


def property_patterns(walk: SchemaWalk, keywords: ObjectKeywords) -> list[PropertyPattern]:
    """The patterns of ``patternProperties`` with the quoted canonical keys each matches (a
    pattern that cannot be compiled is refused; under lenient it is dropped with a warning)."""
    found: list[PropertyPattern] = []
    for pattern, value in keywords.pattern_properties:
        keys = pattern_keys(walk, pattern, value.where)
        if keys is not None:
            found.append(PropertyPattern((value.schema, value.where), keys))
    return found


def pattern_keys(walk: SchemaWalk, pattern: Any, where: str) -> DFA | None:
    """The quoted canonical keys that ``pattern`` matches (None: refused under lenient)."""
    automata, limits = walk.automata, walk.limits
    node = walk.ctx.attempt("patternProperties", where, lambda: walk_pattern_node(walk, pattern))
    if node is None:
        return None
    any_key, matches = quoted_string_dfa(limits), automata.dfa(canonical.quoted(node))
    return automata.derived("keys", (any_key, matches), lambda: intersect(any_key, matches, limits)).dfa


def property_names(walk: SchemaWalk, keywords: ObjectKeywords) -> DFA | None:
    """The quoted canonical keys that ``propertyNames`` allows (None without the keyword)."""
    names = keywords.property_names
    if names is None:
        return None
    node = all_of(walk, [{"type": "string"}, names.schema], names.where, [names.where] * 2)
    return walk.automata.dfa(node)


def extra_members(
    walk: SchemaWalk,
    keys: list[str],
    patterns: list[PropertyPattern],
    names: DFA | None,
    extra: Subschema,
    where: str,
) -> ir.Node | None:
    """The language of one member whose key is not declared: its key is any canonical string
    but the declared keys (and allowed by ``propertyNames``), its value valid for the schema
    of every pattern that matches the key, or for ``additionalProperties`` (``extra``) where
    none does."""
    automata = walk.automata
    if extra.schema is False and not patterns:
        return None  # no undeclared key may appear
    undeclared = automata.other_keys(keys)
    if names is not None:
        named = (undeclared.dfa, names)
        undeclared = automata.derived("named keys", named, lambda: intersect(*named, walk.limits))
    parts: list[ir.Node] = []
    for indexes, region in automata.key_regions(undeclared, [p.keys for p in patterns], where):
        if not indexes and extra.schema is False:
            continue
        schemas = [patterns[i].value for i in indexes] or [(extra.schema, extra.where)]
        value = automata.share(every_schema(walk, schemas))
        if not is_empty_node(value):
            parts.append(walk.layout.member(region, value))
    return ir.alt(*parts) if parts else None
