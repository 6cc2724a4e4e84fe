"""Walking ``$ref``: chains of plain references followed in a loop, targets walked once per context.

Takes: a ``$ref`` value and the walk (``compiler.SchemaWalk``); the resolution of a reference to a
JSON pointer and a schema is ``refs.RefResolver``'s.
Hands on: the IR node of the target, ``ir.NOTHING`` where the target is already on the ref stack
``ref_depth`` times (recorded as a cut). A target walked before in an equal context gives the
same node, and replays the flags, warnings, cuts and effects its first walk recorded.

A context counts the pointers on the ref stack that the target's walk can meet again: those its
``$ref``s lead to, transitively (``reachable_targets``, read off the documents at hand). The walk
looks at the stack only to count a target it resolves, so the others cannot change what it builds,
and a definition reached from many places is walked once instead of once per path (Kubernetes
schemas walk about half as many targets). Where a reference would read another document, the
whole stack counts, as before.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.context import Context, Flags, RefRecord
from moonmaskc.frontends.schema.policy import clean
from moonmaskc.frontends.schema.refs import DATA_KEYWORDS, pointer_child

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk


def plain_ref(walk: SchemaWalk, schema: Any, where: str) -> Any:
    """The ``$ref`` of a schema that is nothing but a reference (as ``node`` reads it: no
    enum or const, and no other keyword that counts), else None."""
    if not isinstance(schema, dict) or "$ref" not in schema or "enum" in schema or "const" in schema:
        return None
    cleaned = clean(walk.ctx, schema, where)
    if "$ref" in cleaned and (walk.ctx.old_draft or len(cleaned) == 1):
        return cleaned["$ref"]
    return None


def reference(walk: SchemaWalk, ref: Any, where: str) -> ir.Node:
    """The target of ``ref``. A chain of schemas that are nothing but references is followed
    in a loop (each link on the ref stack, as if walked one by one), not by recursion."""
    ctx = walk.ctx
    chain: list[str] = []
    try:
        while True:
            if not isinstance(ref, str):
                raise UnsupportedError(f"$ref {ref!r}", "must be a string", where=where)
            target_pointer, target = ctx.resolver.resolve(ref, where)
            if ctx.ref_stack.count(target_pointer) >= ctx.ref_depth:
                ctx.refs_cut[target_pointer] = None
                ctx.flags.ref_cut = True
                return ir.NOTHING
            next_ref = plain_ref(walk, target, target_pointer)
            if next_ref is None:
                return reference_target(walk, target_pointer, target)
            ctx.ref_stack.append(target_pointer)
            chain.append(target_pointer)
            ref, where = next_ref, target_pointer
    finally:
        if chain:
            del ctx.ref_stack[len(ctx.ref_stack) - len(chain) :]


def reference_target(walk: SchemaWalk, target_pointer: str, target: Any) -> ir.Node:
    """The walk of a $ref target that is more than a reference, cached by context."""
    ctx = walk.ctx
    # The walk below depends on the context only through how often each pointer is on the ref
    # stack (the recursion cut), the depth budget left (complements), the polarity and the key
    # order in force: equal contexts give the same node, and the same flags, warnings and cuts,
    # which a cache hit replays.
    budget = None if ctx.budget_end is None else ctx.budget_end - ctx.nesting
    order = None if ctx.key_order is None else ctx.key_order.serial
    reach = reachable_targets(ctx, target_pointer, target)
    stack = ctx.ref_stack if reach is None else [pointer for pointer in ctx.ref_stack if pointer in reach]
    key = (target_pointer, budget, ctx.polarity, order, tuple(sorted(Counter(stack).items())))
    record = ctx.ref_records.get(key)
    if record is None:
        record = ctx.ref_records[key] = _walk_target(walk, target_pointer, target)
    ctx.replay(record)
    return record.node


def reachable_targets(ctx: Context, pointer: str, schema: Any) -> frozenset[str] | None:
    """``pointer`` and every pointer that a ``$ref`` anywhere below ``schema`` leads to, and so on
    from there (a superset of what a walk of it resolves: keywords the walk skips are read too);
    None where a reference cannot be followed without reading another document. Kept per
    compile, and so are the references directly below each target (``direct_targets``): each
    subschema is read once per compile, however many targets reach it."""
    cache = ctx.ref_reach
    if pointer in cache:
        return cache[pointer]
    reach = {pointer}
    pending: list[tuple[str, Any]] = [(pointer, schema)]
    found: frozenset[str] | None = None
    while pending:
        where, value = pending.pop()
        targets = direct_targets(ctx, where, value)
        if targets is None:
            break
        for target in targets:
            if target[0] not in reach:
                reach.add(target[0])
                pending.append(target)
    else:
        found = frozenset(reach)
    cache[pointer] = found
    return found


def direct_targets(ctx: Context, pointer: str, schema: Any) -> tuple[tuple[str, Any], ...] | None:
    """The (pointer, schema) targets of the ``$ref``s below ``schema`` (at ``pointer``), itself
    included, in the order a depth-first read meets them, without going through them; None where
    one cannot be followed without reading another document. Kept per compile."""
    cache = ctx.ref_direct
    if pointer in cache:
        return cache[pointer]
    targets: list[tuple[str, Any]] = []
    pending: list[tuple[str, Any]] = [(pointer, schema)]
    found: tuple[tuple[str, Any], ...] | None = None
    while pending:
        where, value = pending.pop()
        if isinstance(value, list):
            pending.extend(
                (pointer_child(where, index), item)
                for index, item in enumerate(value)
                if isinstance(item, (dict, list))
            )
            continue
        if not isinstance(value, dict):
            continue
        if "$ref" in value:
            ref = value["$ref"]
            target = ctx.resolver.resolve_known(ref, where) if isinstance(ref, str) else None
            if target is None:
                break
            targets.append(target)
        pending.extend(
            (pointer_child(where, name), item)
            for name, item in value.items()
            if name not in DATA_KEYWORDS and isinstance(item, (dict, list))
        )
    else:
        found = tuple(targets)
    cache[pointer] = found
    return found


def _walk_target(walk: SchemaWalk, target_pointer: str, target: Any) -> RefRecord:
    """Walk a $ref target, recording the flags, warnings and cuts it causes."""
    ctx = walk.ctx
    saved_flags = ctx.flags
    warnings_before, cuts_before, bounded_before = len(ctx.warnings), len(ctx.refs_cut), len(ctx.bounded_cuts)
    saved_effects, ctx.effects = ctx.effects, {}
    ctx.flags = Flags()
    ctx.ref_stack.append(target_pointer)
    try:
        node = walk.node(target, target_pointer)
        flags = ctx.flags
    finally:
        ctx.ref_stack.pop()
        inner, ctx.flags = ctx.flags, saved_flags
        ctx.flags.absorb(inner)
        inner_effects, ctx.effects = ctx.effects, saved_effects
        ctx.effects.update(inner_effects)
    return RefRecord(
        node,
        flags,
        tuple(itertools.islice(ctx.warnings, warnings_before, None)),
        tuple(itertools.islice(ctx.refs_cut, cuts_before, None)),
        tuple(inner_effects),
        tuple(itertools.islice(ctx.bounded_cuts, bounded_before, None)),
    )
