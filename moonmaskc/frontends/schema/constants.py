"""``enum`` and ``const``: a finite set of candidate values, each kept if the whole schema accepts it.

Takes: a schema holding ``enum`` or ``const`` and the walk (``compiler.SchemaWalk``).
Hands on: the union of the canonical serializations of the kept candidates. When the schema says
nothing else than ``type`` about them, the candidates are filtered by type alone; otherwise the
root's jsonschema validator decides. An object constant of two or more keys has a fixed key order
(recorded in the flags).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends import deep
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.keywords import is_annotation

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk

ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")
JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
}


def enumerated(walk: SchemaWalk, schema: dict[str, Any], where: str) -> ir.Node:
    """Candidates from enum/const, each kept only if the whole schema accepts it (jsonschema)."""
    if "const" in schema:
        candidates = [schema["const"]]
    elif isinstance(schema["enum"], list):
        candidates = schema["enum"]
    else:
        raise UnsupportedError("keyword 'enum'", "must be an array", where=where)
    by_type = filter_by_type_alone(schema, candidates)
    if by_type is not None:
        return ir.alt(*(constant(walk, value, where) for value in by_type))
    checker = walk.ctx.validator.evolve(schema=schema)
    kept: list[ir.Node] = []
    for value in candidates:
        try:
            valid = checker.is_valid(value)
        except Exception as error:  # a remote or broken $ref inside the schema
            deep.escalate_if_inline(error)
            raise UnsupportedError(
                "keyword 'enum'", f"cannot check candidates: {error}", where=where
            ) from error
        if valid:
            kept.append(constant(walk, value, where))
    return ir.alt(*kept)


def constant(walk: SchemaWalk, value: Any, where: str, below: int = 0) -> ir.Node:
    """The canonical serialization of ``value``, laid out per the whitespace policy (``below``:
    how many levels the value lies below the one the walk is at)."""
    layout = walk.layout
    if isinstance(value, dict):
        pairs = list(value.items())
        order = walk.ctx.key_order
        ranks = {} if order is None else order.ranks(walk.ctx.nesting + below)
        if order is not None and all(k in ranks for k in value):
            pairs.sort(key=lambda pair: ranks[pair[0]])  # the one order of the part
        elif len(value) >= 2:
            walk.ctx.flags.ordered = True
        members = [
            layout.member(ir.text(canonical.serialize(str(k))), constant(walk, v, where, below + 1))
            for k, v in pairs
        ]
        if not members:
            return (
                ir.literal(b"{}") if layout.policy == "compact" else layout.wrap(b"{", ir.NOTHING, b"}", True)
            )
        return layout.wrap(b"{", ir.seq(*_joined(members, layout.comma)), b"}", False)
    if isinstance(value, list):
        items = [constant(walk, v, where, below + 1) for v in value]
        if not items:
            return layout.wrap(b"[", ir.NOTHING, b"]", True)
        return layout.wrap(b"[", ir.seq(*_joined(items, layout.comma)), b"]", False)
    return ir.text(canonical.serialize(value))


def filter_by_type_alone(schema: dict[str, Any], candidates: list[Any]) -> list[Any] | None:
    """The candidates of an enum or const that the schema accepts, when the schema says nothing else
    about them than ``type`` (and annotations); None when it does, or for a float under "integer"
    (whose meaning depends on the draft): then jsonschema decides."""
    if "enum" in schema and "const" in schema:
        return None
    if any(k not in ("enum", "const", "type") and not is_annotation(k) for k in schema):
        return None
    if "type" not in schema:
        return list(candidates)
    declared = schema["type"]
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not all(isinstance(n, str) and n in JSON_TYPES for n in names):
        return None
    if "integer" in names and "number" not in names and any(isinstance(v, float) for v in candidates):
        return None
    return [v for v in candidates if any(JSON_TYPES[n](v) for n in names)]


def enum_values(schema: Any) -> list[Any] | None:
    """The candidates of a schema's ``const`` or ``enum`` array, None without them."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def _joined(items: list[ir.Node], sep: ir.Node) -> list[ir.Node]:
    out: list[ir.Node] = []
    for i, item in enumerate(items):
        if i:
            out.append(sep)
        out.append(item)
    return out
