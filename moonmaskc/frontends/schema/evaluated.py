"""What one schema evaluates at its own instance location, for ``unevaluatedProperties`` and
``unevaluatedItems``, and those two keywords written as ordinary keywords once that is known.

Takes: a schema's own keywords (a dict; its in-place applicators are ``unevaluated``'s business),
its JSON pointer and whether the document declares draft 2019-09.
Hands on:
- ``Evaluated``: a language of evaluated keys (``properties`` names, ``patternProperties``
  patterns, or every key) and of evaluated indices (a prefix length, the items that match some
  ``contains`` schema, or every index), closed under ``union``;
- ``own_evaluated``: what a schema's own keywords evaluate when the schema holds: ``properties``,
  ``patternProperties``, ``additionalProperties`` (with the other two: every key) and a nested
  ``unevaluatedProperties`` (every key); ``prefixItems`` (2020-12) or an ``items`` array
  (2019-09), ``items`` as a schema, ``additionalItems`` beside an ``items`` array and a nested
  ``unevaluatedItems`` (every index); ``contains`` (2020-12 only: draft 2019-09 does not count it);
- ``with_filter``: the schema's own keywords plus "every key (index) outside ``Evaluated``
  satisfies U", as ``properties`` / ``patternProperties`` (value ``true``) beside
  ``additionalProperties: U``, and ``prefixItems`` (``true``) beside ``items: U`` (U or a
  ``contains`` schema, where ``contains`` evaluates);
- ``has_unevaluated`` / ``without_trivial``: whether a schema carries one of the keywords with an
  effect (``true`` and ``{}`` have none), and the schema without the ones that have none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.keywords import is_annotation
from moonmaskc.frontends.schema.refs import pointer_child

PROPERTIES = "unevaluatedProperties"
ITEMS = "unevaluatedItems"
UNEVALUATED = (PROPERTIES, ITEMS)


@dataclass(frozen=True)
class Evaluated:
    """Evaluated keys and indices. ``contains``: (pointer, schema) of the ``contains`` keywords
    whose matching items count as evaluated."""

    names: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    all_keys: bool = False
    prefix: int = 0
    all_items: bool = False
    contains: tuple[tuple[str, Any], ...] = ()

    def union(self, other: Evaluated) -> Evaluated:
        return Evaluated(
            names=_merged(self.names, other.names),
            patterns=_merged(self.patterns, other.patterns),
            all_keys=self.all_keys or other.all_keys,
            prefix=max(self.prefix, other.prefix),
            all_items=self.all_items or other.all_items,
            contains=tuple({**dict(self.contains), **dict(other.contains)}.items()),
        )

    def everything(self, keywords: set[str]) -> Evaluated:
        """Every key (index) evaluated where ``keywords`` holds the matching unevaluated keyword."""
        return Evaluated(
            self.names,
            self.patterns,
            self.all_keys or PROPERTIES in keywords,
            self.prefix,
            self.all_items or ITEMS in keywords,
            self.contains,
        )


NOTHING_EVALUATED = Evaluated()


def _merged(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return (*a, *(x for x in b if x not in a))


def is_trivial(value: Any) -> bool:
    """An unevaluated keyword's value that accepts everything (``true``, ``{}``, annotations)."""
    return value is True or (isinstance(value, dict) and all(is_annotation(k) for k in value))


def has_unevaluated(schema: Any) -> bool:
    """Whether ``schema`` holds an unevaluated keyword that may reject something."""
    return isinstance(schema, dict) and any(k in schema and not is_trivial(schema[k]) for k in UNEVALUATED)


def without_trivial(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the unevaluated keywords that accept everything (no effect)."""
    if not any(k in schema and is_trivial(schema[k]) for k in UNEVALUATED):
        return schema
    return {k: v for k, v in schema.items() if not (k in UNEVALUATED and is_trivial(v))}


def own_evaluated(schema: dict[str, Any], where: str, draft2019: bool) -> Evaluated:
    """What the keywords of ``schema`` itself evaluate when it holds (see the module docstring)."""
    properties = schema.get("properties")
    names = tuple(properties) if isinstance(properties, dict) else ()
    patterns_map = schema.get("patternProperties")
    patterns = tuple(patterns_map) if isinstance(patterns_map, dict) else ()
    all_keys = "additionalProperties" in schema or PROPERTIES in schema
    items = schema.get("items")
    prefix, all_items = 0, ITEMS in schema
    if isinstance(items, list):
        prefix, all_items = len(items), all_items or "additionalItems" in schema
    elif "items" in schema:
        all_items = True
    contains: tuple[tuple[str, Any], ...] = ()
    if not draft2019:
        prefix_items = schema.get("prefixItems")
        if isinstance(prefix_items, list):
            prefix = max(prefix, len(prefix_items))
        if "contains" in schema:
            target = schema["contains"]
            if target is True or target == {}:
                all_items = True
            elif target is not False:
                contains = ((pointer_child(where, "contains"), target),)
    return Evaluated(names, patterns, all_keys, prefix, all_items, contains)


def with_filter(
    own: dict[str, Any], evaluated: Evaluated, keywords: dict[str, Any], where: str, draft2019: bool
) -> dict[str, Any]:
    """``own`` and "what ``evaluated`` leaves out satisfies the unevaluated keyword" for each of
    ``keywords`` (unevaluated keyword -> its schema), as ordinary keywords that ``merge`` conjoins
    with the other parts of the case without reordering their properties."""
    out = dict(own)
    if PROPERTIES in keywords and not evaluated.all_keys:
        out.update(_property_filter(own, evaluated, keywords[PROPERTIES], where))
    if ITEMS in keywords and not evaluated.all_items:
        out.update(_item_filter(own, evaluated, keywords[ITEMS], where, draft2019))
    return out


def _property_filter(own: dict[str, Any], evaluated: Evaluated, rest: Any, where: str) -> dict[str, Any]:
    properties, patterns = own.get("properties", {}), own.get("patternProperties", {})
    if not isinstance(properties, dict) or not isinstance(patterns, dict):
        raise UnsupportedError("keyword 'properties'", "must be an object", where=where)
    out: dict[str, Any] = {"additionalProperties": rest}
    names = {**properties, **{name: True for name in evaluated.names if name not in properties}}
    if names:
        out["properties"] = names
    matched = {**patterns, **{p: True for p in evaluated.patterns if p not in patterns}}
    if matched:
        out["patternProperties"] = matched
    return out


def _item_filter(
    own: dict[str, Any], evaluated: Evaluated, rest: Any, where: str, draft2019: bool
) -> dict[str, Any]:
    if evaluated.contains:
        rest = {"anyOf": [*(schema for _, schema in evaluated.contains), rest]}
    items = own.get("items")
    if isinstance(items, list) or draft2019:  # 2019-09 has no prefixItems: an items array
        tuple_items = items if isinstance(items, list) else []
        return {
            "items": [*tuple_items, *[True] * (evaluated.prefix - len(tuple_items))],
            "additionalItems": rest,
        }
    prefix = own.get("prefixItems", [])
    if not isinstance(prefix, list):
        raise UnsupportedError("keyword 'prefixItems'", "must be an array", where=where)
    out: dict[str, Any] = {"items": rest}
    if evaluated.prefix or prefix:
        out["prefixItems"] = [*prefix, *[True] * (evaluated.prefix - len(prefix))]
    return out
