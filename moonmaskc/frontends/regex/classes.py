"""Bracket character classes: ``[abc]``, ``[a-z]``, ``[^...]``, with escapes inside.

Takes: the text of one whole class (the CHAR_CLASS syntax) and where it starts in the pattern.
Hands on: its IR, one valid UTF-8 character out of the class (a negated class: every character
outside it); a bad range raises an error at its position.
"""

from __future__ import annotations

import re

from moonmaskc import ir
from moonmaskc.frontends import utf8
from moonmaskc.frontends.regex.codepoints import Ranges, checked_code_point, code_points_node
from moonmaskc.frontends.regex.errors import source_error
from moonmaskc.frontends.regex.escapes import escape_ranges
from moonmaskc.frontends.regex.lexer import class_item_pattern, escape_pattern

# The first endpoint of a range item: one escape (the ESCAPE syntax) or one character.
_CLASS_ENDPOINT = re.compile(
    r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[pPNu]\{[^}]*\}|k<[^>]*>|[0-9]+|[\s\S])|[\s\S]"
)


def class_node(text: str, start: int) -> ir.Node:
    """A whole character class (the CHAR_CLASS syntax) starting at ``start`` in the pattern."""
    negated = text.startswith("[^")
    body_start = 2 if negated else 1
    base = start + body_start
    escape = escape_pattern()
    ranges: Ranges = []
    for match in class_item_pattern().finditer(text, body_start, len(text) - 1):
        item = match.group()
        position = base + match.start() - body_start
        if len(item) == 1:
            code_point = checked_code_point(ord(item), item, position)
            ranges.append((code_point, code_point))
        elif len(item) == 3 and item[0] != "\\" and item[2] != "\\" and item[0] < item[2] < "\ud800":
            ranges.append((ord(item[0]), ord(item[2])))  # a plain range like a-z: nothing to check
        elif escape.fullmatch(item):
            ranges.extend(escape_ranges(item, position, in_class=True))
        else:
            ranges.append(_class_range(item, position))
    if negated:
        ranges = utf8.complement(ranges)
    return code_points_node(ranges)


def _class_range(text: str, position: int) -> tuple[int, int]:
    first = _CLASS_ENDPOINT.match(text)
    assert first is not None
    second_start = first.end() + 1
    low = _range_endpoint(first.group(), position, text)
    high = _range_endpoint(text[second_start:], position + second_start, text)
    if low > high:
        raise source_error(f"bad character range {text}: its start is above its end", position)
    return low, high


def _range_endpoint(text: str, position: int, whole: str) -> int:
    if not text.startswith("\\"):
        return checked_code_point(ord(text), text, position)
    ranges = escape_ranges(text, position, in_class=True)
    if len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
        raise source_error(f"bad character range {whole}: {text} is a set, not one character", position)
    return ranges[0][0]
