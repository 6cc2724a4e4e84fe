"""The combinators: allOf, anyOf, oneOf, not, if / then / else and the presence dependencies.

Takes: a cleaned schema with no ``$ref`` / ``allOf`` at its top, and the walk
(``compiler.SchemaWalk``).
Hands on: its language: one branch per presence dependency, then per ``anyOf`` / ``oneOf`` item,
then ``if`` or ``not`` by DFA products against the universe, and what is left per instance type
(``SchemaWalk.typed``). ``all_of`` merges conjunctions, ``one_of`` proves branches disjoint or
builds an "exactly one" product, ``negation`` complements ``not`` and ``if``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.frontends.schema.arguments import as_list
from moonmaskc.frontends.schema.combinators.all_of import all_of, with_base
from moonmaskc.frontends.schema.combinators.negation import conditional, negation
from moonmaskc.frontends.schema.combinators.one_of import one_of
from moonmaskc.frontends.schema.dependencies import KEYWORDS as DEPENDENCY_KEYWORDS
from moonmaskc.frontends.schema.dependencies import dependency_branches
from moonmaskc.frontends.schema.refs import pointer_child

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

__all__ = ["combined"]


def combined(walk: SchemaWalk, schema: dict[str, Any], where: str) -> ir.Node:
    """A cleaned schema with no $ref / allOf at its top: presence dependencies, anyOf, oneOf,
    not, if, then the types."""
    if any(keyword in schema for keyword in DEPENDENCY_KEYWORDS):
        return ir.alt(
            *(
                all_of(walk, [branch, *(s for s, _ in extras)], where, [where, *(w for _, w in extras)])
                if extras
                else combined(walk, branch, where)
                for branch, extras in dependency_branches(schema, where)
            )
        )
    if "anyOf" in schema:
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        branches = as_list(schema["anyOf"], "anyOf", where)
        return ir.alt(
            *(with_base(walk, rest, b, pointer_child(where, "anyOf", i)) for i, b in enumerate(branches))
        )
    if "oneOf" in schema:
        rest = {k: v for k, v in schema.items() if k != "oneOf"}
        return one_of(walk, rest, as_list(schema["oneOf"], "oneOf", where), where)
    if "if" in schema:
        rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else")}
        return conditional(
            walk, rest, schema["if"], schema.get("then", True), schema.get("else", True), where
        )
    if "not" in schema:
        rest = {k: v for k, v in schema.items() if k != "not"}
        return negation(walk, rest, schema["not"], where)
    return walk.typed(schema, where)
