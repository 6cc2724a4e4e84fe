"""Every Playground failure as one JSON shape, with a position in the source where there is one.

Takes: a ``MoonmaskError`` raised while compiling (and the source text the page sent), or a request
problem found by the server. Hands on: ``PlaygroundError`` (an exception with an HTTP status) and
its ``as_dict()``::

    {"error": {"type": "source" | "unsupported" | "limit" | "timeout" | "request" | ...,
               "message": "one paragraph", "status": 422,
               "line": 1, "column": 4, "start": 3, "end": 4, "bound": "max_states"}}

``start`` / ``end`` are offsets in UTF-16 code units (what a browser's string and ``textarea``
selection use), so the page can highlight the error without re-reading the message. A schema error
that names a JSON pointer (``at #/properties/a``) is located in the schema's text. The message never
holds a stack trace.
"""

from __future__ import annotations

import json
import re
from typing import Any

from moonmaskc.errors import LimitError, MoonmaskError, SourceError, UnsupportedError


class PlaygroundError(Exception):
    """An error answered to the page as JSON with HTTP ``status``."""

    def __init__(self, status: int, kind: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.details = {key: value for key, value in details.items() if value is not None}

    def as_dict(self) -> dict[str, Any]:
        return {"error": {"type": self.kind, "message": self.message, "status": self.status, **self.details}}

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> PlaygroundError:
        body = dict(value["error"])
        return cls(int(body.pop("status")), str(body.pop("type")), str(body.pop("message")), **body)


def utf16_offset(text: str, position: int) -> int:
    """The offset of character ``position`` of ``text`` in UTF-16 code units."""
    position = max(0, min(position, len(text)))
    return len(text[:position].encode("utf-16-le")) // 2


def _line_column(text: str, position: int) -> tuple[int, int]:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return line, column


def _span(text: str, start: int, end: int) -> dict[str, int]:
    line, column = _line_column(text, start)
    return {
        "line": line,
        "column": column,
        "start": utf16_offset(text, start),
        "end": utf16_offset(text, end),
    }


def compile_error(error: MoonmaskError, kind: str, source: str) -> PlaygroundError:
    """The JSON error of a failed compile of ``source`` (of ``kind``)."""
    if isinstance(error, LimitError):
        return PlaygroundError(422, "limit", str(error), bound=error.bound, limit=error.limit)
    error_type = "unsupported" if isinstance(error, UnsupportedError) else "source"
    if isinstance(error, SourceError):
        span: dict[str, int] | None = None
        if error.position is not None and error.source == source:
            start = max(0, min(error.position, len(source)))
            span = _span(source, start, min(len(source), start + 1))
        elif kind == "schema" and isinstance(error, UnsupportedError) and error.where:
            located = locate_pointer(source, error.where, _keyword_of(error.construct))
            if located is not None:
                span = _span(source, *located)
        message = error.message if span is not None else str(error)
        return PlaygroundError(422, error_type, message, **(span or {}))
    return PlaygroundError(422, "source", str(error))


def _keyword_of(construct: str) -> str | None:
    found = re.fullmatch(r"keyword '([^']*)'", construct)
    return found.group(1) if found else None


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def locate_pointer(text: str, pointer: str, key: str | None = None) -> tuple[int, int] | None:
    """Character span of the value at JSON ``pointer`` (``#/a/0/b``) in the JSON ``text``; with
    ``key``, of that member's name inside the object found there. ``None`` when not found."""
    tokens = [
        part.replace("~1", "/").replace("~0", "~") for part in pointer.lstrip("#").split("/") if part != ""
    ]
    decoder = json.JSONDecoder()
    try:
        position = _skip(text, 0)
        for token in tokens:
            found = _member(text, position, token, decoder)
            if found is None:
                return None
            position = found[1]
        if key is not None:
            found = _member(text, position, key, decoder)
            if found is not None:
                return found[0], found[0] + len(json.dumps(key))
        _, end = decoder.raw_decode(text, position)
        return position, end
    except (ValueError, IndexError):
        return None


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position


def _member(text: str, position: int, token: str, decoder: json.JSONDecoder) -> tuple[int, int] | None:
    """(start of the member's name or element, start of its value) of ``token`` in the object or
    array that begins at ``position``."""
    opening = text[position]
    if opening not in "{[":
        return None
    position = _skip(text, position + 1)
    index = 0
    while position < len(text) and text[position] not in "}]":
        name_start = position
        if opening == "{":
            name, position = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]
            position = _skip(text, position)
            if text[position] != ":":
                return None
            position = _skip(text, position + 1)
            if name == token:
                return name_start, position
        elif str(index) == token:
            return name_start, position
        _, position = decoder.raw_decode(text, position)
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
        index += 1
    return None
