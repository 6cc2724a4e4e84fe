"""The keyword policy: which keywords of a schema the walk compiles, and what it says of the others.

Takes: one schema object (a dict) with its JSON pointer, and the walk's ``Context``.
Hands on: the schema without annotations (``clean``), after recording in the context a warning for
each unknown, disabled or OpenAPI keyword and, for a keyword we refuse, an error (strict) or a
dropped-keyword warning (lenient). ``has_openapi_intent`` tells whether a document is OpenAPI's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc.frontends.schema.keywords import (
    COMPILED,
    OPENAPI,
    OPENAPI_READ_WRITE,
    REFUSED,
    is_annotation,
    is_disabled_keyword,
    is_known,
)
from moonmaskc.frontends.schema.refs import DATA_KEYWORDS, SCHEMA_MAPS

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.context import Context


def note_policy(ctx: Context, schema: dict[str, Any], where: str) -> None:
    """The policy's warnings for the keywords of a schema that jsonschema decides (an enum or a
    const filtered by the whole schema): unknown and OpenAPI keywords; the others are exact."""
    for key, value in schema.items():
        if is_disabled_keyword(key):
            continue
        if key in OPENAPI or key in OPENAPI_READ_WRITE:
            policy_keyword(ctx, key, value, where)
        elif not is_known(key):
            ctx.unknown_keyword(key, where)


def policy_keyword(ctx: Context, key: str, value: Any, where: str) -> None:
    """Warn of an OpenAPI keyword (``nullable: false`` and JSON Schema's readOnly / writeOnly,
    outside an OpenAPI document, are silent)."""
    if key == "nullable" and value is not True:
        return
    if key in OPENAPI_READ_WRITE:
        if ctx.openapi_document and value is True:
            ctx.openapi_keyword(key, where, OPENAPI_READ_WRITE[key])
        return
    ctx.openapi_keyword(key, where, OPENAPI[key])


def clean(ctx: Context, schema: dict[str, Any], where: str) -> dict[str, Any]:
    """The schema without annotations (unknown and OpenAPI keywords warned) and, under lenient,
    without refused keywords."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in OPENAPI or key in OPENAPI_READ_WRITE:
            policy_keyword(ctx, key, value, where)
            continue
        if is_annotation(key):
            continue
        if key in REFUSED:
            ctx.refuse(key, REFUSED[key], where)
            continue
        if key not in COMPILED and is_disabled_keyword(key):
            ctx.warnings[
                f"disabled keyword {key!r} at {where}: {key[1:]!r} switched off by its underscore, "
                "no effect (as in JSON Schema)"
            ] = None
            continue
        if key not in COMPILED:
            # JSON Schema: keywords an implementation does not know are annotations.
            ctx.unknown_keyword(key, where)
            continue
        if key in ("then", "else") and "if" not in schema:
            continue
        if key == "dependencies" and ctx.new_draft:  # (a draft we do not know: see ``dialects``)
            ctx.refuse(key, "not a keyword of the draft that $schema declares", where)
            continue
        out[key] = value
    return out


def has_openapi_intent(root: Any) -> bool:
    """Whether the document carries OpenAPI intent: an ``openapi`` / ``swagger`` key at its root, or
    an OpenAPI keyword (``nullable: true``, ``discriminator``, ``xml``, ``externalDocs``,
    ``example``) in one of its schemas. Property names are not keywords: the maps of named
    subschemas are entered by their values only. Iterative."""
    if isinstance(root, dict) and ("openapi" in root or "swagger" in root):
        return True
    stack = [root]
    while stack:
        schema = stack.pop()
        if isinstance(schema, list):
            stack.extend(schema)
            continue
        if not isinstance(schema, dict):
            continue
        for key, value in schema.items():
            if key in OPENAPI and (key != "nullable" or value is True):
                return True
            if key in SCHEMA_MAPS and isinstance(value, dict):
                stack.extend(value.values())
            elif key not in DATA_KEYWORDS and key != "required" and isinstance(value, dict | list):
                stack.append(value)
    return False
