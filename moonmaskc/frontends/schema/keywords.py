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
        "minProperties",
        "maxProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
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
    "patternProperties": "property-name patterns are not compiled",
    "propertyNames": "property-name schemas are not compiled",
    "dependentRequired": "presence dependencies between properties are not compiled",
    "dependentSchemas": "presence dependencies between properties are not compiled",
    "dependencies": "presence dependencies between properties are not compiled",
    "contains": "contains / minContains / maxContains are not compiled",
    "minContains": "contains / minContains / maxContains are not compiled",
    "maxContains": "contains / minContains / maxContains are not compiled",
    "unevaluatedProperties": "needs annotation results of all subschemas",
    "unevaluatedItems": "needs annotation results of all subschemas",
    "$dynamicRef": "dynamic references are not compiled",
    "$recursiveRef": "dynamic references are not compiled",
    "$recursiveAnchor": "dynamic references are not compiled",
}


KNOWN_KEYWORDS = sorted({*COMPILED, *REFUSED, *ANNOTATIONS} - {"id", "example", "markdownDescription"})


def is_annotation(keyword: str) -> bool:
    return keyword in ANNOTATIONS or keyword.startswith("x-")
