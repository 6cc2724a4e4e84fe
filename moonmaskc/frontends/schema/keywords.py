"""Which JSON Schema keywords the walker compiles, ignores as annotations, or refuses.

Takes: nothing. Hands on: the keyword tables that ``compiler`` consults and ``docs/json-schema.md``
documents.
"""

from __future__ import annotations

# No effect on validation: skipped silently (unknown ``x-*`` extension keys are annotations too).
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
        "example",
        "default",
        "$comment",
        "$schema",
        "$id",
        "id",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "$defs",
        "definitions",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
        "markdownDescription",
    }
)

COMPILED = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "minProperties",
        "maxProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
    }
)

# Keywords we know but cannot compile exactly, with the reason shown to the user.
REFUSED = {
    "unevaluatedProperties": "needs annotation results of all subschemas",
    "unevaluatedItems": "needs annotation results of all subschemas",
    "$dynamicRef": "dynamic references are not compiled",
    "$recursiveRef": "dynamic references are not compiled",
    "$recursiveAnchor": "dynamic references are not compiled",
}


CONSTRAINTS = sorted({*COMPILED, *REFUSED})


def _one_edit_apart(a: str, b: str) -> bool:
    """One substitution, insertion, deletion or swap of neighbours turns ``a`` into ``b``."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def likely_typo(key: str) -> str | None:
    """The constraint keyword (4+ letters) that ``key`` misspells, if any. Keys that prefix a real
    keyword with ``_`` or ``$`` are taken as deliberately disabled, not as typos."""
    if key.lstrip("_$") in CONSTRAINTS:
        return None
    for keyword in CONSTRAINTS:
        if len(keyword) >= 4 and _one_edit_apart(key.lower(), keyword.lower()):
            return keyword
    return None


def is_disabled_keyword(key: str) -> bool:
    """A keyword switched off by a leading underscore (``_format``, ``_uniqueItems``): JSON Schema
    gives the key no effect, and unlike an unknown key nobody writes it expecting one."""
    name = key[1:]
    return key.startswith("_") and (name in CONSTRAINTS or name in ANNOTATIONS)


def is_annotation(keyword: str) -> bool:
    return keyword in ANNOTATIONS or keyword.startswith("x-")
