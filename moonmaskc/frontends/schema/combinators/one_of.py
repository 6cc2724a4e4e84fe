"""``oneOf``: the values valid for exactly one branch.

Takes: the branches, the rest of their parent schema (``base``) and the walk
(``compiler.SchemaWalk``).
Hands on: the union of the branches where they are proven disjoint, from the schemas alone
(``surely_disjoint``: enum candidates, types, a discriminating required property) or by the
emptiness of the intersections of their DFAs (``proven_disjoint``); objects told apart by a
discriminating property and the other types by a product; else an "exactly one" product against
the bounded universe. Both need branch languages that hold every serialization of their values
within the depth bound. Branches that declare their keys in different orders are walked again
with one key order for all their objects (``key_order``): the part is then written in that order,
keys known at each level by their first declaration across the branches, other keys after them.
Where that fails too (too many keys, past the bounds), the keyword is refused (dropped under
lenient).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.automata.counted import CountedRegionError
from moonmaskc.automata.product import intersect, product
from moonmaskc.errors import LimitError, MoonmaskError, UnsupportedError
from moonmaskc.frontends import deep
from moonmaskc.frontends.schema.automata import union_all
from moonmaskc.frontends.schema.combinators.all_of import flatten, parent_schema, with_base
from moonmaskc.frontends.schema.constants import ALL_TYPES, enum_values
from moonmaskc.frontends.schema.context import Flags
from moonmaskc.frontends.schema.key_order import MAX_KEYS, key_order
from moonmaskc.frontends.schema.merge import merge, type_set
from moonmaskc.frontends.schema.refs import pointer_child

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk


def one_of(walk: SchemaWalk, base: dict[str, Any], branches: list[Any], where: str) -> ir.Node:
    """Values valid for exactly one branch (see the module docstring)."""
    ctx = walk.ctx
    wheres = [pointer_child(where, "oneOf", i) for i in range(len(branches))]
    views = [branch_view(walk, base, b, w) for b, w in zip(branches, wheres, strict=True)]
    proven = {
        (i, j)
        for (i, x), (j, y) in itertools.combinations(enumerate(views), 2)
        if surely_disjoint(x, y, walk)
    }
    if len(proven) == len(branches) * (len(branches) - 1) // 2:
        return ir.alt(*(with_base(walk, base, b, w) for b, w in zip(branches, wheres, strict=True)))
    types = type_set(base)
    if types is None or ("object" in types and len(types) > 1):
        # Objects told apart by a discriminating property; the other types by a product.
        as_objects = [merge(v, {"type": ["object"]})[0] for v in views]
        if all(surely_disjoint(x, y, walk) for x, y in itertools.combinations(as_objects, 2)):
            object_base, _ = merge(base, {"type": ["object"]})
            others = sorted((types or {*ALL_TYPES, "integer"}) - {"object"})
            other_base, _ = merge(base, {"type": others})
            assert isinstance(object_base, dict) and isinstance(other_base, dict)
            objects = ir.alt(
                *(with_base(walk, object_base, b, w) for b, w in zip(branches, wheres, strict=True))
            )
            return ir.alt(objects, one_of(walk, other_base, branches, where))
    ordered_before = ctx.flags.ordered
    with ctx.bounded() as flags, ctx.signed(0):
        nodes = [with_base(walk, base, b, w) for b, w in zip(branches, wheres, strict=True)]
        assert ctx.budget_end is not None
        depth = ctx.budget_end - ctx.nesting
    declared_order = nodes
    in_one_order = False
    if flags.ordered and not flags.ref_cut:
        # Branches that write some value in different key orders: walk them again with one key
        # order for all their objects (see ``key_order``), which makes the product exact.
        order = key_order(ctx, [(base, where), *zip(branches, wheres, strict=True)], depth)
        if order is not None:
            ctx.flags.ordered = ordered_before
            try:
                with ctx.keys_ordered(order), ctx.bounded() as retried, ctx.signed(0):
                    nodes = [with_base(walk, base, b, w) for b, w in zip(branches, wheres, strict=True)]
                if not (retried.ordered or retried.ref_cut):
                    flags, in_one_order = retried, True
            except LimitError:
                pass
            # The result lists keys in this part's own order: a complement around it cannot use it.
            ctx.flags.ordered = True
    if flags.ordered or flags.ref_cut:
        ctx.refuse(
            "oneOf",
            "branches could not be proven disjoint, and 'exactly one' needs branches without fixed "
            f"key order (or one key order for all of them, at most {MAX_KEYS} keys per level, within "
            "the bounds) or recursion cut at max_depth",
            where,
        )
        return ir.alt(*declared_order)
    try:
        return exactly_one(walk, nodes, proven, flags, depth, where)
    except LimitError:
        if not in_one_order:
            raise
        ctx.refuse("oneOf", "the 'exactly one' product over one key order is past the state bound", where)
        return ir.alt(*declared_order)


def exactly_one(
    walk: SchemaWalk, nodes: list[ir.Node], proven: set[tuple[int, int]], flags: Flags, depth: int, where: str
) -> ir.Node:
    """The values of exactly one of ``nodes`` (branch languages that hold every serialization of
    their values within the depth bound, or all in one key order), within ``depth``."""
    ctx, automata = walk.ctx, walk.automata
    # Within the depth bound each branch's language holds every serialization of its values, so
    # branches whose DFAs do not intersect share no value there: their union is exact.
    branch_dfas = [automata.dfa(n) for n in nodes]
    if all(
        (i, j) in proven or automata.disjoint(branch_dfas[i], branch_dfas[j])
        for i, j in itertools.combinations(range(len(nodes)), 2)
    ):
        if not flags.depth_cut:
            return ir.alt(*nodes)
        # Constants are not cut at the bound: a deep one of one branch may be valid, deeper
        # than the bound, for another. Within the bound the union is exact.
        ctx.flags.depth_cut = True
        ctx.bounded_product("oneOf", where, depth)
        bounded = (automata.universe_leaf(depth).dfa, *branch_dfas)
        return automata.derived(
            "oneOf disjoint",
            bounded,
            lambda: intersect(bounded[0], union_all(bounded[1:], walk.limits), walk.limits),
        )
    ctx.flags.depth_cut = True
    ctx.bounded_product("oneOf", where, depth)
    dfas = (automata.universe_leaf(depth).dfa, *branch_dfas)
    return automata.derived(
        "oneOf", dfas, lambda: product(list(dfas), lambda f: bool(f[0]) and sum(f[1:]) == 1, walk.limits)
    )


def proven_disjoint(walk: SchemaWalk, a: Any, b: Any, where: str) -> bool:
    """Whether no value is valid for both schemas, by the emptiness of the intersection of their
    DFAs: only where both languages hold every serialization of their values at any depth (no
    fixed key order, nothing cut at a bound); False when that is not so or a walk fails."""
    ctx = walk.ctx
    if ctx.resolver.has_embedded_resources:
        return False  # the schemas come from views whose $ref base may not be ``where``'s
    try:
        with ctx.probe():
            languages = []
            for schema in (a, b):
                with ctx.bounded() as flags:
                    node = walk.node(schema, where)
                if flags.ordered or flags.ref_cut or flags.depth_cut:
                    return False
                languages.append(walk.automata.dfa(node))
            return walk.automata.disjoint(languages[0], languages[1])
    except CountedRegionError:
        raise  # the compile starts again without length counters
    except MoonmaskError:
        return False


def branch_view(walk: SchemaWalk, base: dict[str, Any], branch: Any, where: str) -> Any:
    """The merged schema of a branch, for disjointness proofs (refs resolved one level)."""
    try:
        flat = flatten(walk, [base, branch], where, [], [parent_schema(where), where])
    except UnsupportedError:
        return True
    if flat is None:
        return True
    view: Any = True
    for part, _ in flat:
        if isinstance(part, dict) and ("enum" in part or "const" in part):
            view = part if view is True else view
            continue
        view, _ = merge(view, part)
    return view


def surely_disjoint(a: Any, b: Any, walk: SchemaWalk, depth: int = 0) -> bool:
    """A proof from the schemas alone that no value is valid for both (False: no proof)."""
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict) or depth > 3:
        return False
    for x, y in ((a, b), (b, a)):
        values = enum_values(x)
        if values is not None:
            try:
                checker = walk.ctx.validator.evolve(schema=y)
                if not any(checker.is_valid(v) for v in values):
                    return True
            except Exception as error:
                deep.escalate_if_inline(error)
    types_a, types_b = type_set(a), type_set(b)
    if types_a is not None and types_b is not None:
        widen = lambda t: t | {"integer"} if "number" in t else t  # noqa: E731
        if not widen(types_a) & widen(types_b):
            return True
    # A discriminating property only separates objects: both sides must admit objects only.
    if types_a != {"object"} or types_b != {"object"}:
        return False
    if _no_object(a) or _no_object(b):
        return True
    props_a, props_b = a.get("properties", {}), b.get("properties", {})
    common = set(a.get("required", [])) & set(b.get("required", []))
    for key in common:
        pa = props_a.get(key) if isinstance(props_a, dict) else None
        pb = props_b.get(key) if isinstance(props_b, dict) else None
        if pa is None or pb is None:
            continue
        pa, pb = resolved(pa, walk), resolved(pb, walk)
        if surely_disjoint(pa, pb, walk, depth + 1):
            return True
        if pa is not True and pb is not True and proven_disjoint(walk, pa, pb, "#"):
            return True
    return False


def _no_object(view: dict[str, Any]) -> bool:
    """A view that no object satisfies: it requires a key whose schema is ``false`` (as merging
    leaves a key that one side requires and the other closes with ``additionalProperties``)."""
    properties, required = view.get("properties", {}), view.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        return False
    return any(isinstance(key, str) and properties.get(key) is False for key in required)


def resolved(schema: Any, walk: SchemaWalk) -> Any:
    """``schema`` with plain ``$ref`` chains followed from the root's base URI; ``True`` (no proof
    to draw) where that base may be the wrong one, in a document with embedded resources."""
    resolver = walk.ctx.resolver
    for _ in range(8):
        if (
            isinstance(schema, dict)
            and set(schema) - {"$ref"} <= {"description", "title"}
            and "$ref" in schema
        ):
            if resolver.has_embedded_resources:
                return True
            try:
                _, schema = resolver.resolve(schema["$ref"], "#")
            except UnsupportedError:
                return True
        else:
            break
    return schema
