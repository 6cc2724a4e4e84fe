"""Which JSON Schema keywords the walker compiles, ignores as annotations, warns about, or refuses.

Takes: nothing. Hands on: the keyword tables that ``compiler`` consults and ``docs/json-schema.md``
documents, and the policy's warning texts.

The policy (JSON Schema 2020-12, section 6.5: "implementations SHOULD treat keywords they do not
support as annotations"):

- ``ANNOTATIONS``: annotation-only keywords, skipped silently (``x-*`` extension keys too).
- ``OPENAPI``: keywords that carry OpenAPI intent; no effect on the language (as for a JSON Schema
  validator), each warned with what an OpenAPI tool does with it and what we compiled.
- ``COMPILED``: validation keywords compiled exactly.
- ``REFUSED``: validation keywords we cannot compile: errors (dropped with a warning under lenient).
- anything else: an unknown keyword, an annotation (no effect) warned once per place, or an error
  under ``refuse_unknown``.
"""

from __future__ import annotations

from functools import lru_cache

# No effect on validation: skipped silently (unknown ``x-*`` extension keys are annotations too).
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
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
        "unevaluatedProperties",
        "unevaluatedItems",
    }
)

# OpenAPI (3.0 / 3.1) keywords: what an OpenAPI tool does with each. A JSON Schema validator ignores
# them all, and so does the compiled language; ``nullable: false`` is silent (no intent to warn of).
OPENAPI = {
    "nullable": "OpenAPI 3.0 'nullable: true' also allows null; a JSON Schema validator ignores it, and "
    "so did we: null is accepted only where 'type' allows it (write type: [..., \"null\"])",
    "discriminator": "OpenAPI 'discriminator' names the property that picks a oneOf/anyOf branch; it does "
    "not change which values are valid, and we compiled the branches as written",
    "xml": "OpenAPI 'xml' shapes XML serialization only; no effect on JSON values",
    "externalDocs": "OpenAPI 'externalDocs' is documentation; no effect on validation",
    "example": "OpenAPI 'example' is a sample value, not checked and no effect on validation",
}

# readOnly / writeOnly are JSON Schema annotations; in a document with OpenAPI intent (it uses one of
# ``OPENAPI``) a required property marked so is not required in a response / request.
OPENAPI_READ_WRITE = {
    "readOnly": "OpenAPI 'readOnly: true' drops the property from requests (and from 'required' there); "
    "compiled as a JSON Schema annotation: the property is allowed and 'required' applies",
    "writeOnly": "OpenAPI 'writeOnly: true' drops the property from responses (and from 'required' "
    "there); compiled as a JSON Schema annotation: the property is allowed and 'required' applies",
}

# Formats that a JSON Schema draft (04 to 2020-12) defines: one we do not compile is a validation
# keyword we cannot compile (refused); any other name is an annotation, as validators treat it.
SPEC_FORMATS = frozenset(
    {
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    }
)

# Keywords we know but cannot compile exactly, with the reason shown to the user.
REFUSED = {
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


_TYPO_TARGETS = tuple((keyword, keyword.lower()) for keyword in CONSTRAINTS if len(keyword) >= 4)


@lru_cache(maxsize=4096)
def likely_typo(key: str) -> str | None:
    """The constraint keyword (4+ letters) that ``key`` misspells, if any. Keys that prefix a real
    keyword with ``_`` or ``$`` are taken as deliberately disabled, not as typos. (Kept per
    process: a schema repeats its unknown keys, ``options`` 300 times in one Github_ultra schema.)"""
    if key.lstrip("_$") in CONSTRAINTS:
        return None
    lowered = key.lower()
    for keyword, lowered_keyword in _TYPO_TARGETS:
        if abs(len(lowered_keyword) - len(lowered)) <= 1 and _one_edit_apart(lowered, lowered_keyword):
            return keyword
    return None


def is_disabled_keyword(key: str) -> bool:
    """A keyword switched off by a leading underscore (``_format``, ``_uniqueItems``): JSON Schema
    gives the key no effect, and unlike an unknown key nobody writes it expecting one."""
    name = key[1:]
    return key.startswith("_") and (name in CONSTRAINTS or name in ANNOTATIONS)


def is_annotation(keyword: str) -> bool:
    """Annotation-only keywords and ``x-*`` extensions: no effect, no warning."""
    return keyword in ANNOTATIONS or keyword.startswith("x-")


def is_known(keyword: str) -> bool:
    """A keyword of a vocabulary we know: compiled, refused, OpenAPI or an annotation."""
    return keyword in COMPILED or keyword in REFUSED or keyword in OPENAPI or is_annotation(keyword)


def unknown_keyword_warning(keyword: str, where: str) -> str:
    """The warning for a keyword of no vocabulary we know at ``where`` (with a typo hint)."""
    typo = likely_typo(keyword)
    hint = f"; did you mean {typo!r}?" if typo else ""
    return (
        f"unknown keyword {keyword!r} at {where}: an annotation (no vocabulary we know defines it), "
        f"no effect on the language{hint}"
    )


def unknown_format_warning(name: str, where: str) -> str:
    """The warning for a ``format`` that no JSON Schema draft defines."""
    return (
        f"unknown format {name!r} at {where}: an annotation (validators ignore formats they do not "
        "know), compiled as any string"
    )
