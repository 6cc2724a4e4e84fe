"""Walking ``$ref``: chains of plain references followed in a loop, targets walked once per context.

Takes: a ``$ref`` value and the walk (``compiler.SchemaWalk``); the resolution of a reference to a
JSON pointer and a schema is ``refs.RefResolver``'s.
Hands on: the IR node of the target, ``ir.NOTHING`` where the target is already on the ref stack
``ref_depth`` times (recorded as a cut). A target walked before in an equal context gives the
same node, and replays the flags, warnings, cuts and effects its first walk recorded.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.context import Flags, RefRecord
from moonmaskc.frontends.schema.policy import clean

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
    key = (target_pointer, budget, ctx.polarity, order, tuple(sorted(Counter(ctx.ref_stack).items())))
    record = ctx.ref_records.get(key)
    if record is None:
        record = ctx.ref_records[key] = _walk_target(walk, target_pointer, target)
    ctx.replay(record)
    return record.node


def _walk_target(walk: SchemaWalk, target_pointer: str, target: Any) -> RefRecord:
    """Walk a $ref target, recording the flags, warnings and cuts it causes."""
    ctx = walk.ctx
    saved_flags = ctx.flags
    warnings_before, cuts_before = len(ctx.warnings), len(ctx.refs_cut)
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
    )
