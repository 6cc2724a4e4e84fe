"""One key order for every object of an "exactly one" product (``oneOf`` over overlapping branches).

Takes: the schemas of the part (the branches of a ``oneOf`` and the rest of their parent, with
their JSON pointers) and the walk's ``Context``. Hands on: a ``KeyOrder`` that ranks, for each
level of nesting below the part, every property name that the part's objects at that level may
declare (``properties``, ``required``, presence dependencies, the keys of object constants), in
the order a walk through the schemas, following ``$ref``, first meets them; ``None`` when a level
names more than ``MAX_KEYS`` keys, the part holds more than ``MAX_SCHEMAS`` subschemas, or a
reference cannot be resolved.

Why: an object is written with its declared keys in declared order, then the other keys. Branches
that declare different orders write one value differently, so the strings of one branch say
nothing about the values of another, and an "exactly one" product over them would accept a value
valid for two branches in the form that only one of them writes. Under one order for every object
of the part (the keys known at its level by rank, wherever the object admits them; unknown keys
after them, in any order, alike in every branch) each value has the same strings in every branch,
and the product is exact. A value at a given path is checked only by subschemas at that path's
level, so objects need members only for the keys known at their own level. Where a walk meets a
declared key that has no rank, it records a fixed key order as before (and the part is refused).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends.schema.context import Context, KeyOrder
from moonmaskc.frontends.schema.refs import pointer_child

MAX_KEYS = 48
"""Every object of the part that admits other keys gets a member for each key known at its level:
beyond this many, the automata of the part grow past what a product can take."""
MAX_SCHEMAS = 5_000
_NOT_SCHEMAS = {"default", "examples", "description", "title", "$comment", "$id", "$schema", "$anchor"}
# Keywords whose schemas check the values one level down (each item, for the maps and lists).
_VALUE_MAPS = {"properties", "patternProperties"}
_VALUE_LISTS = {"prefixItems", "items"}
_VALUE_SCHEMAS = {
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
}
_serials = itertools.count(1)


def key_order(ctx: Context, schemas: list[tuple[Any, str]], deepest: int) -> KeyOrder | None:
    """The order of the keys that ``schemas`` may declare for objects at most ``deepest`` levels
    below them (deeper values are cut by the part's depth budget; see the module docstring)."""
    levels: dict[int, dict[str, int]] = {}
    visited: set[tuple[str, int]] = set()
    work: list[tuple[Any, str, int]] = [(schema, where, 0) for schema, where in reversed(schemas)]
    walked = 0

    def adder(level: int) -> Callable[[Any], None]:
        ranks = levels.setdefault(level, {})

        def add(name: Any) -> None:
            if isinstance(name, str) and name not in ranks:
                ranks[name] = len(ranks)

        return add

    while work:
        value, where, level = work.pop()
        walked += 1
        if walked > MAX_SCHEMAS or any(len(ranks) > MAX_KEYS for ranks in levels.values()):
            return None
        if level > deepest or not isinstance(value, dict):
            continue
        add = adder(level)
        children: list[tuple[Any, str, int]] = []
        # ``properties`` first: an object writes its declared properties before other required keys.
        for keyword, item in sorted(value.items(), key=lambda pair: pair[0] != "properties"):
            here = pointer_child(where, keyword)
            if keyword in _NOT_SCHEMAS:
                continue
            if keyword == "properties" and isinstance(item, dict):
                for name in item:
                    add(name)
            if keyword in _VALUE_MAPS and isinstance(item, dict):
                children.extend((sub, pointer_child(here, name), level + 1) for name, sub in item.items())
            elif keyword in _VALUE_LISTS and isinstance(item, list):
                children.extend((sub, pointer_child(here, i), level + 1) for i, sub in enumerate(item))
            elif keyword in _VALUE_SCHEMAS:
                children.append((item, here, level + 1))
            elif keyword == "required" and isinstance(item, list):
                for name in item:
                    add(name)
            elif keyword in ("dependentRequired", "dependencies") and isinstance(item, dict):
                for name, needs in item.items():
                    add(name)
                    if isinstance(needs, list):
                        for needed in needs:
                            add(needed)
                    else:
                        children.append((needs, pointer_child(here, name), level))
            elif keyword in ("const", "enum"):
                _constant_keys(item, level, adder, keyword == "enum")
            elif keyword == "$ref" and isinstance(item, str):
                try:
                    pointer, target = ctx.resolver.resolve(item, where)
                except MoonmaskError:
                    return None
                if (pointer, level) not in visited:
                    visited.add((pointer, level))
                    children.append((target, pointer, level))
            elif isinstance(item, list):  # allOf, anyOf, oneOf, ...: schemas at this level
                children.extend((sub, pointer_child(here, i), level) for i, sub in enumerate(item))
            elif isinstance(item, dict):
                if keyword in ("$defs", "definitions", "dependentSchemas"):
                    children.extend((sub, pointer_child(here, name), level) for name, sub in item.items())
                else:  # not, if, then, else, ...
                    children.append((item, here, level))
        work.extend(reversed(children))
    if any(len(ranks) > MAX_KEYS for ranks in levels.values()):
        return None
    return KeyOrder(levels, ctx.nesting, next(_serials))


def _constant_keys(value: Any, level: int, adder: Callable[[int], Callable[[Any], None]], many: bool) -> None:
    """The keys of every object inside a constant (``many``: an enum's list of them), each at its
    level."""
    work = (
        [(item, level) for item in reversed(value)] if many and isinstance(value, list) else [(value, level)]
    )
    while work:
        current, at = work.pop()
        if isinstance(current, dict):
            add = adder(at)
            for name in current:
                add(name)
            work.extend((item, at + 1) for item in reversed(list(current.values())))
        elif isinstance(current, list):
            work.extend((item, at + 1) for item in reversed(current))
