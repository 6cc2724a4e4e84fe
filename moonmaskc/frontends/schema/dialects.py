"""Keywords that the draft a document declares does not have: annotations, as its validators read them.

Takes: a root schema. Hands on: the draft its ``$schema`` declares (``declared_draft``) and
(``without_other_drafts``) the schema without the keywords that draft does not define, with one
warning per keyword dropped, by JSON pointer. A validator of draft-04 ignores ``if`` / ``then`` /
``else``, ``const``, ``contains`` and ``propertyNames`` (later drafts brought them); one of
draft-07 ignores ``prefixItems``, ``dependentRequired`` and ``unevaluatedProperties``; one of
2020-12 ignores ``dependencies`` and ``additionalItems`` (earlier drafts had them). Compiling such a
keyword would make the language narrower than the schema's, so it goes before the walk sees the
schema; a document without ``$schema`` keeps every keyword.

Draft-04's boolean ``exclusiveMinimum`` / ``exclusiveMaximum`` (the ``minimum`` / ``maximum`` beside
it exclusive, or not) are rewritten in the numeric form of later drafts, which the walk compiles.

Only schema positions are looked into: the values of ``properties``, ``patternProperties``,
``$defs``, ``definitions``, ``dependentSchemas`` and ``dependencies`` are schemas under names (a
property named ``if`` stays), and instance values (``enum``, ``const``, ``default``,
``examples``) are data. The walk is iterative, and the schema is copied only along the paths to
the keywords dropped.
"""

from __future__ import annotations

from typing import Any

from moonmaskc.frontends.schema.refs import DATA_KEYWORDS, SCHEMA_MAPS, pointer_child

DRAFT_NAMES = {3: "draft-03", 4: "draft-04", 6: "draft-06", 7: "draft-07", 2019: "2019-09", 2020: "2020-12"}

KEYWORD_SINCE = {
    "const": 6,
    "contains": 6,
    "propertyNames": 6,
    "if": 7,
    "then": 7,
    "else": 7,
    "dependentRequired": 2019,
    "dependentSchemas": 2019,
    "minContains": 2019,
    "maxContains": 2019,
    "unevaluatedProperties": 2019,
    "unevaluatedItems": 2019,
    "prefixItems": 2020,
}
"""The draft that brought each keyword (drafts before it do not have it)."""

KEYWORD_UNTIL = {"dependencies": 7, "additionalItems": 2019}
"""The last draft that had each keyword (drafts after it do not have it)."""


def declared_draft(root: Any) -> int | None:
    """The draft the root's ``$schema`` declares, None when it declares none we know."""
    declared = root.get("$schema") if isinstance(root, dict) else None
    if not isinstance(declared, str):
        return None
    for draft, name in DRAFT_NAMES.items():
        if name in declared:
            return draft
    return None


def other_draft_warning(keyword: str, where: str, draft: int) -> str:
    """The warning for ``keyword`` at ``where``, which ``draft`` does not have."""
    if keyword in KEYWORD_SINCE:
        history = f"it came with {DRAFT_NAMES[KEYWORD_SINCE[keyword]]}"
    else:
        history = f"its last draft was {DRAFT_NAMES[KEYWORD_UNTIL[keyword]]}"
    return (
        f"other draft's keyword {keyword!r} at {where}: {DRAFT_NAMES[draft]}, which $schema declares, "
        f"does not have it ({history}); its validators ignore it, so it has no effect on the language"
    )


_BOOLEAN_BOUNDS = {"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}


def _numeric_bounds(schema: dict[str, Any]) -> None:
    """Draft-04's boolean ``exclusiveMinimum`` / ``exclusiveMaximum`` (``minimum`` exclusive or
    not; no effect without it) in the numeric form of later drafts, in place."""
    for exclusive, bound in _BOOLEAN_BOUNDS.items():
        flag = schema.get(exclusive)
        if not isinstance(flag, bool):
            continue
        del schema[exclusive]
        if flag and bound in schema:
            schema[exclusive] = schema.pop(bound)


def _not_in(keyword: str, draft: int) -> bool:
    return KEYWORD_SINCE.get(keyword, 0) > draft or KEYWORD_UNTIL.get(keyword, draft) < draft


def without_other_drafts(root: Any) -> tuple[Any, list[tuple[str, str]]]:
    """``root`` without the keywords its declared draft does not have, and each dropped keyword
    with its pointer; ``root`` itself when there is none."""
    draft = declared_draft(root)
    if draft is None:
        return root, []
    dropped: list[tuple[tuple[Any, ...], str, str]] = []  # (path to the schema, keyword, pointer)
    rewritten: list[tuple[Any, ...]] = []  # paths to schemas with draft-04's boolean bounds
    stack: list[tuple[Any, tuple[Any, ...], str]] = [(root, (), "#")]
    while stack:
        schema, path, where = stack.pop()
        if isinstance(schema, list):
            stack.extend((item, (*path, i), pointer_child(where, i)) for i, item in enumerate(schema))
            continue
        if not isinstance(schema, dict):
            continue
        for key, value in schema.items():
            if key in DATA_KEYWORDS and not _not_in(key, draft):
                continue
            if key in _BOOLEAN_BOUNDS and draft <= 4 and isinstance(value, bool):
                rewritten.append(path)
            elif _not_in(key, draft):
                dropped.append((path, key, pointer_child(where, key)))
            elif key in SCHEMA_MAPS and isinstance(value, dict):
                stack.extend(
                    (sub, (*path, key, name), pointer_child(where, key, name)) for name, sub in value.items()
                )
            elif isinstance(value, dict | list):
                stack.append((value, (*path, key), pointer_child(where, key)))
    if not dropped and not rewritten:
        return root, []
    copies: dict[tuple[Any, ...], Any] = {(): dict(root)}
    for path in [*(path for path, _, _ in dropped), *rewritten]:
        for depth in range(1, len(path) + 1):
            if path[:depth] not in copies:
                parent = copies[path[: depth - 1]]
                child = parent[path[depth - 1]]
                copies[path[:depth]] = dict(child) if isinstance(child, dict) else list(child)
                parent[path[depth - 1]] = copies[path[:depth]]
    for path, key, _ in dropped:
        copies[path].pop(key, None)
    for path in rewritten:
        _numeric_bounds(copies[path])
    return copies[()], [(key, where) for _, key, where in sorted(dropped, key=lambda d: d[2])]
