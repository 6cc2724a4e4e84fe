"""The values of keywords that the walk reads as arguments: arrays and counts.

Takes: a keyword's value (or a schema and a keyword name) and the JSON pointer of the schema.
Hands on: the value checked (a list, a non-negative integer or None), or ``UnsupportedError``.
"""

from __future__ import annotations

from typing import Any

from moonmaskc.errors import UnsupportedError


def as_list(value: Any, keyword: str, where: str) -> list[Any]:
    """``value`` of ``keyword``, which must be an array."""
    if not isinstance(value, list):
        raise UnsupportedError(f"keyword {keyword!r}", "must be an array", where=where)
    return value


def count(schema: dict[str, Any], keyword: str, where: str) -> int | None:
    """The count that ``keyword`` of ``schema`` gives (an integral float counts), None without it."""
    value = schema.get(keyword)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnsupportedError(f"keyword {keyword!r}", "must be a non-negative integer", where=where)
    return value
