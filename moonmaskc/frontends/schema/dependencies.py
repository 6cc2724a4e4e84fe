"""Presence dependencies (``dependentRequired``, ``dependentSchemas``, draft-07 ``dependencies``)
as a union of plain object schemas.

Takes: a cleaned schema holding some of those keywords, and its JSON pointer; the keywords are read
(and checked, the draft forms told apart) by ``normalize.presence_dependencies``. Hands on:
``dependency_branches``: schemas without them, each with the extra schemas (and their pointers)
that it must also satisfy, whose union is exactly the original schema's language.

A dependency "when key ``k`` is present, so are ``names`` / so does the object satisfy ``S``" holds
exactly in two disjoint cases, each a schema the walker compiles as it is: ``k`` absent
(``properties[k]: false``), or ``k`` present (``k`` and ``names`` required, ``S`` conjoined).
Each dependency doubles the branches, so their number is bounded (``MAX_DEPENDENCIES``). For
values other than objects every branch accepts what the schema without the dependencies accepts
(the absent branch does so with no extra schema), so the union is exact for them too.

A key that a dependency requires and ``properties`` does not declare becomes a declared member
in the branch that requires it: it is written after the declared properties, in the order of
``required``, as any required key that ``properties`` leaves out.
"""

from __future__ import annotations

from typing import Any

from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.normalize import DEPENDENCY_KEYWORDS, presence_dependencies

KEYWORDS = DEPENDENCY_KEYWORDS
MAX_DEPENDENCIES = 6

Branch = tuple[dict[str, Any], list[tuple[Any, str]]]


def dependency_branches(schema: dict[str, Any], where: str) -> list[Branch]:
    """The branches of ``schema`` (see the module docstring); ``UnsupportedError`` for malformed
    dependencies and past ``MAX_DEPENDENCIES`` that can go either way."""
    base = {k: v for k, v in schema.items() if k not in KEYWORDS}
    branches: list[Branch] = [(base, [])]
    splitting = 0
    for dependency in presence_dependencies(schema, where):
        key, names = dependency.key, dependency.names
        extra = None if dependency.schema is None else (dependency.schema.schema, dependency.schema.where)
        next_branches: list[Branch] = []
        for branch, extras in branches:
            required = branch.get("required", [])
            properties = branch.get("properties", {})
            present = {**branch, "required": list(dict.fromkeys([*required, key, *names]))}
            with_extra = [*extras, extra] if extra is not None else extras
            if key in required:
                next_branches.append((present, with_extra))
                continue
            if properties.get(key, True) is False:
                next_branches.append((branch, extras))
                continue
            absent = {**branch, "properties": {**properties, key: False}}
            next_branches += [(absent, extras), (present, with_extra)]
        if len(next_branches) > len(branches):
            splitting += 1
            if splitting > MAX_DEPENDENCIES:
                raise UnsupportedError(
                    "presence dependencies",
                    f"more than {MAX_DEPENDENCIES} keys that may or may not be present carry a dependency "
                    f"({2**MAX_DEPENDENCIES} cases at most are compiled)",
                    where=where,
                )
        branches = next_branches
    return branches
