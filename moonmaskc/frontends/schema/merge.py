"""``allOf`` by merging: several schemas (top-level refs already resolved) into one, plus a residue.

Takes: two schemas (dicts or booleans) with no top-level ``$ref`` or ``allOf``. Hands on:
``merge(a, b) -> (merged, residue)``: ``merged`` accepts exactly the values valid for both *as far
as its keywords go*, and ``residue`` is a list of schemas holding the keywords of ``b`` that could not
be combined (two different patterns, formats, ``not``, ...); the caller intersects their languages.

Exactness rules: bounds take the tighter value, ``type`` the intersection, ``required`` the union;
``properties`` / ``additionalProperties`` are merged per key (a key absent from one side meets that
side's ``additionalProperties``), so property order stays the first schema's declared order; with
``patternProperties`` on either side they are merged too (the union of the patterns, conjoined
per pattern) where that is exact (``_patterns_merge``: a side with a non-trivial
``additionalProperties`` declares every property and pattern of the other), else the second
side's member keywords go to the residue (unless the first side has none); ``propertyNames`` are
conjoined; ``contains`` with its bounds moves as one
group (to the residue when both sides have one);
``prefixItems`` / ``items`` (or draft-07 ``items`` / ``additionalItems``) are merged per position.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any] | bool

_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_OBJECT_GROUP = ("properties", "additionalProperties", "patternProperties")
_ARRAY_GROUP = ("items", "prefixItems", "additionalItems")
_CONDITIONAL_GROUP = ("if", "then", "else")
_CONTAINS_GROUP = ("contains", "minContains", "maxContains")
_NUMERIC_TYPES = {"integer", "number"}


def conjoin(a: Any, b: Any) -> Any:
    """A schema for "both a and b", without merging them yet."""
    if a is True or a == {}:
        return b
    if b is True or b == {}:
        return a
    if a is False or b is False:
        return False
    if a == b:
        return a
    return {"allOf": [a, b]}


def type_set(schema: dict[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if declared is None:
        return None
    return {declared} if isinstance(declared, str) else set(declared)


def _intersect_types(a: set[str], b: set[str]) -> set[str]:
    both = a & b
    if ("integer" in a and "number" in b) or ("integer" in b and "number" in a):
        both.add("integer")
    if "integer" in both and "number" in both and not ("number" in a and "number" in b):
        both.discard("number")
    return both


def _array_form(schema: dict[str, Any]) -> tuple[list[Any], Any]:
    items = schema.get("items")
    if isinstance(items, list):
        return list(items), schema.get("additionalItems", True)
    return list(schema.get("prefixItems", [])), True if items is None else items


def merge(a: Schema, b: Schema) -> tuple[Schema, list[Schema]]:
    if a is False or b is False:
        return False, []
    if a is True:
        return b, []
    if b is True:
        return a, []
    out = dict(a)
    residue: dict[str, Any] = {}
    if any(k in b for k in _OBJECT_GROUP):
        if not any(k in a for k in _OBJECT_GROUP):
            out.update({k: b[k] for k in _OBJECT_GROUP if k in b})
        elif ("patternProperties" in a or "patternProperties" in b) and not _patterns_merge(a, b):
            residue.update({k: b[k] for k in _OBJECT_GROUP if k in b})
        else:
            props_a = a.get("properties", {})
            props_b = b.get("properties", {})
            extra_a = a.get("additionalProperties", True)
            extra_b = b.get("additionalProperties", True)
            merged_props = {}
            for key in [*props_a, *(k for k in props_b if k not in props_a)]:
                merged_props[key] = conjoin(props_a.get(key, extra_a), props_b.get(key, extra_b))
            if merged_props:
                out["properties"] = merged_props
            patterns_a, patterns_b = a.get("patternProperties", {}), b.get("patternProperties", {})
            if patterns_a or patterns_b:
                out["patternProperties"] = {
                    p: conjoin(patterns_a.get(p, True), patterns_b.get(p, True))
                    for p in [*patterns_a, *(p for p in patterns_b if p not in patterns_a)]
                }
            extra = conjoin(extra_a, extra_b)
            if extra is not True:
                out["additionalProperties"] = extra
    if "propertyNames" in b:
        out["propertyNames"] = conjoin(a.get("propertyNames", True), b["propertyNames"])
    if "required" in b:
        out["required"] = list(dict.fromkeys([*a.get("required", []), *b["required"]]))
    if any(k in b for k in _ARRAY_GROUP):
        prefix_a, rest_a = _array_form(a)
        prefix_b, rest_b = _array_form(b)
        length = max(len(prefix_a), len(prefix_b))
        prefix = [
            conjoin(
                prefix_a[i] if i < len(prefix_a) else rest_a,
                prefix_b[i] if i < len(prefix_b) else rest_b,
            )
            for i in range(length)
        ]
        for key in _ARRAY_GROUP:
            out.pop(key, None)
        if prefix:
            out["prefixItems"] = prefix
        rest = conjoin(rest_a, rest_b)
        if rest is not True:
            out["items"] = rest
    if "type" in b:
        types_b = type_set(b) or set()
        types_a = type_set(a)
        out["type"] = sorted(types_b if types_a is None else _intersect_types(types_a, types_b))
    if any(k in b for k in _CONTAINS_GROUP):  # the bounds count the matches of their own contains
        if any(k in a for k in _CONTAINS_GROUP):
            residue.update({k: b[k] for k in _CONTAINS_GROUP if k in b})
        else:
            out.update({k: b[k] for k in _CONTAINS_GROUP if k in b})
    if "if" in b:
        if "if" in a:
            residue.update({k: b[k] for k in _CONDITIONAL_GROUP if k in b})
        else:
            out.update({k: b[k] for k in _CONDITIONAL_GROUP if k in b})
    handled = {
        *_OBJECT_GROUP,
        *_ARRAY_GROUP,
        *_CONDITIONAL_GROUP,
        *_CONTAINS_GROUP,
        "propertyNames",
        "required",
        "type",
    }
    for key, value in b.items():
        if key in handled:
            continue
        if key not in out or out[key] == value:
            out[key] = value
        elif key in _LOWER and _comparable(out[key], value):
            out[key] = max(out[key], value)
        elif key in _UPPER and _comparable(out[key], value):
            out[key] = min(out[key], value)
        else:
            residue[key] = value
    return out, [residue] if residue else []


def _patterns_merge(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two object groups, one with ``patternProperties`` at least, merge exactly into
    one: the value of a key is then checked against the patterns of both sides that match it,
    and ``additionalProperties`` of both where none does. That is each side's own rule unless a
    side with a non-trivial ``additionalProperties`` meets a key that it leaves to it and the
    other side declares or matches: so such a side must declare every key and pattern of the
    other."""
    groups = [(x.get("properties", {}), x.get("patternProperties", {})) for x in (a, b)]
    if not all(isinstance(m, dict) for group in groups for m in group):
        return False
    for (props, patterns), (other_props, other_patterns), side in zip(
        groups, groups[::-1], (a, b), strict=True
    ):
        extra = side.get("additionalProperties", True)
        if not (extra is True or extra == {}) and not (
            set(other_props) <= set(props) and set(other_patterns) <= set(patterns)
        ):
            return False
    return True


def _comparable(x: Any, y: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
