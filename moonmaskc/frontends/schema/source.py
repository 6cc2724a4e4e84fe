"""Schema text and files: JSON text to a Python value, with line and column on a syntax error.

Takes: JSON text or a file path. Hands on: the parsed schema (dict or bool); ``SourceError`` with the
text and the character offset of the problem (so the message shows line, column and a caret).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moonmaskc.errors import SourceError


def parse_schema_text(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise SourceError(f"malformed JSON schema: {error.msg}", text, error.pos) from None
    if not isinstance(value, (dict, bool)):
        raise SourceError("a JSON schema must be an object or a boolean", text, 0)
    return value


def load_schema_file(path: str | Path) -> tuple[dict[str, Any] | bool, str]:
    """The schema in ``path`` and its text."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SourceError(f"cannot read schema file {path}: {error}") from None
    return parse_schema_text(text), text
