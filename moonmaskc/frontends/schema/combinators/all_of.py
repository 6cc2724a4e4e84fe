"""``allOf``: the values valid for every one of several schemas.

Takes: the schemas (each with its JSON pointer when they are not one allOf's items) and the walk
(``compiler.SchemaWalk``).
Hands on: their language. Top-level ``$ref`` chains are followed and nested ``allOf`` spread out
(``flatten``), the branches merged keyword by keyword (``merge``); an enum or const among them is
filtered by all the others at once; what cannot be merged is intersected by DFA products. A schema
with an unevaluated keyword is never merged: it goes with the others to ``unevaluated``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.automata.product import intersect
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.automata import is_empty_node
from moonmaskc.frontends.schema.constants import enumerated
from moonmaskc.frontends.schema.evaluated import has_unevaluated, without_trivial
from moonmaskc.frontends.schema.merge import merge
from moonmaskc.frontends.schema.policy import clean
from moonmaskc.frontends.schema.refs import pointer_child

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

Located = tuple[Any, str]


def flatten(
    walk: SchemaWalk, schemas: list[Any], where: str, pushed: list[str], wheres: list[str] | None = None
) -> list[Located] | None:
    """allOf branches with top-level refs resolved and nested allOf spread out, each with where it
    stands (None: a ref cut). ``wheres``: where each schema stands in the document, when they are
    not ``where``'s allOf (a schema split into its own keywords and its allOf, say): $ref
    resolution needs the base URI in scope there, and errors name the place. ``pushed`` receives
    the $ref targets entered. A schema with an unevaluated keyword stays whole (its $ref and allOf
    feed what it evaluates), and keeps any enum or const."""
    ctx = walk.ctx
    out: list[Located] = []
    for i, schema in enumerate(schemas):
        branch_where = wheres[i] if wheres is not None else pointer_child(where, "allOf", i)
        while isinstance(schema, dict) and "$ref" in schema and not ("enum" in schema or "const" in schema):
            cleaned = without_trivial(clean(ctx, schema, branch_where))
            if has_unevaluated(cleaned):
                break
            if "$ref" not in cleaned:
                schema = cleaned
                break
            siblings = {} if ctx.old_draft else {k: v for k, v in cleaned.items() if k != "$ref"}
            if siblings:
                out.extend(
                    flatten(walk, [siblings], branch_where, pushed, [branch_where]) or [(False, branch_where)]
                )
            target_pointer, schema = ctx.resolver.resolve(cleaned["$ref"], branch_where)
            if (ctx.ref_stack + pushed).count(target_pointer) >= ctx.ref_depth:
                ctx.refs_cut[target_pointer] = None
                ctx.flags.ref_cut = True
                return None
            pushed.append(target_pointer)
            branch_where = target_pointer
        if not isinstance(schema, (dict, bool)):
            raise UnsupportedError(
                f"schema {schema!r}", "a schema must be an object or a boolean", where=branch_where
            )
        if isinstance(schema, dict) and not ("enum" in schema or "const" in schema):
            cleaned = without_trivial(clean(ctx, schema, branch_where))
            if has_unevaluated(cleaned):  # kept as written: what it evaluates goes by all of it
                out.append((schema, branch_where))
                continue
            schema = cleaned
            if "allOf" in schema:
                inner = flatten(walk, schema["allOf"], branch_where, pushed)
                if inner is None:
                    return None
                out.extend(inner)
                schema = {k: v for k, v in schema.items() if k != "allOf"}
        out.append((schema, branch_where))
    return out


def all_of(walk: SchemaWalk, schemas: list[Any], where: str, wheres: list[str] | None = None) -> ir.Node:
    """The values valid for every one of ``schemas`` (see the module docstring)."""
    ctx = walk.ctx
    pushed: list[str] = []
    located = flatten(walk, schemas, where, pushed, wheres)
    if located is None:
        return ir.NOTHING
    sealed = next((part for part in located if has_unevaluated(part[0])), None)
    if sealed is not None:  # what it evaluates is its own: conjoined, never merged
        ctx.ref_stack.extend(pushed)
        try:
            return walk.unevaluated(sealed, [part for part in located if part is not sealed], where)
        finally:
            del ctx.ref_stack[len(ctx.ref_stack) - len(pushed) :]
    branches = [schema for schema, _ in located]
    merged: Any = True
    residue: list[Any] = []
    for branch in branches:
        if isinstance(branch, dict) and ("enum" in branch or "const" in branch):
            residue.append(branch)
            continue
        merged, rest = merge(merged, branch)
        residue.extend(rest)
    ctx.ref_stack.extend(pushed)
    try:
        if merged is False:
            return ir.NOTHING
        if (
            residue
            and merged is not True
            and any(isinstance(r, dict) and ("enum" in r or "const" in r) for r in residue)
        ):
            # A finite candidate set: filter it by every branch at once (exact).
            candidates = next(r for r in residue if isinstance(r, dict) and ("enum" in r or "const" in r))
            others = [r for r in residue if r is not candidates]
            return enumerated(walk, {"allOf": [merged, *others], **candidates}, where)
        if not residue:
            return walk.combined(merged, where) if isinstance(merged, dict) else walk.universe()
        with ctx.without_nests():  # operands of the products below
            node = walk.combined(merged, where) if isinstance(merged, dict) else walk.universe()
            for extra in residue:
                if is_empty_node(node):
                    return ir.NOTHING
                node = ir.Automaton(
                    intersect(
                        walk.automata.dfa(node), walk.automata.dfa(walk.node(extra, where)), walk.limits
                    ),
                    "allOf",
                )
        return node
    finally:
        del ctx.ref_stack[len(ctx.ref_stack) - len(pushed) :]


def with_base(walk: SchemaWalk, base: dict[str, Any], branch: Any, where: str) -> ir.Node:
    """``branch`` (at ``where``, an anyOf / oneOf item) with the rest of its parent schema."""
    if not base:
        return walk.node(branch, where)
    return all_of(walk, [base, branch], where, [parent_schema(where), where])


def every_schema(walk: SchemaWalk, schemas: list[tuple[Any, str]]) -> ir.Node:
    """The values valid for all of ``schemas`` (each with its pointer)."""
    if len(schemas) == 1:
        return walk.node(*schemas[0])
    return all_of(walk, [s for s, _ in schemas], schemas[0][1], [w for _, w in schemas])


def parent_schema(where: str) -> str:
    """The schema holding the anyOf / oneOf item at ``where`` (``#/a/anyOf/2`` -> ``#/a``)."""
    return where.rsplit("/", 2)[0]
