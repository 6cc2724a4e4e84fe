"""Canonical JSON text: the one spelling of strings, numbers and constant values that we emit.

Takes: Python JSON values (``json.loads`` output) and byte-level IR over *decoded* string content.
Hands on:

- ``escape_text``: a string body in canonical form: only ``"``, ``\\`` and control characters are
  escaped (short escapes ``\\b \\f \\n \\r \\t`` where JSON has them, ``\\u00xx`` otherwise, lowercase
  hex as ``json.dumps`` writes it); everything else stays raw UTF-8.
- ``serialize``: compact canonical JSON for any value (objects keep their given key order; numbers
  in plain decimal, no exponent, no trailing fraction zeros, never ``-0``).
- ``escape_node``: the image of a decoded-content language under escaping. Every escaped character
  is one ASCII byte, so escaping is a byte-level homomorphism: each byte set splits into the bytes
  kept raw and the escape sequences of the others. It is injective, so
  ``escape(A ∩ B) = escape(A) ∩ escape(B)``: constraints may be intersected after escaping.
- ``STRING_CHAR``: one canonical character inside a JSON string (a raw non-escaped code point or
  one escape sequence); ``CANONICAL_NUMBER``: one spelling per number value.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends import utf8

_SHORT_ESCAPES = {0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\"}
ESCAPED_BYTES = [*range(0x20), 0x22, 0x5C]
ESCAPED_MASK = ir.mask_of(ESCAPED_BYTES)


def escape_char(code: int) -> str:
    """The canonical escape of one escaped character (a control character, quote or backslash)."""
    return _SHORT_ESCAPES.get(code) or f"\\u{code:04x}"


def escape_text(value: str) -> str:
    return "".join(escape_char(ord(ch)) if ord(ch) in _ESCAPED_SET else ch for ch in value)


_ESCAPED_SET = frozenset(ESCAPED_BYTES)


def serialize_number(value: int | float) -> str:
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise UnsupportedError(f"number {value!r}", "not a finite JSON number")
    number = Decimal(repr(value))
    if number == number.to_integral_value():
        return str(int(number))
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def serialize(value: Any) -> str:
    """Compact canonical JSON text of ``value`` (objects in their given key order)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return serialize_number(value)
    if isinstance(value, str):
        return '"' + escape_text(value) + '"'
    if isinstance(value, list):
        return "[" + ",".join(serialize(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{serialize(str(k))}:{serialize(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


def canonical_dumps(value: Any) -> str:
    """What tests compare with: ``json.dumps`` compact, non-ASCII raw."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _escape_byteset(mask: int) -> ir.Node:
    kept = ir.byte_set(mask & ~ESCAPED_MASK)
    escaped = [ir.text(escape_char(b)) for b in ESCAPED_BYTES if mask >> b & 1]
    return ir.alt(kept, *escaped)


def escape_node(node: ir.Node) -> ir.Node:
    """The language of ``node`` (decoded string content, UTF-8) with every character escaped."""
    if isinstance(node, ir.ByteSet):
        return node if not node.mask & ESCAPED_MASK else _escape_byteset(node.mask)
    if isinstance(node, ir.Seq):
        return ir.seq(*(escape_node(item) for item in node.items))
    if isinstance(node, ir.Alt):
        return ir.alt(*(escape_node(item) for item in node.items))
    if isinstance(node, ir.Repeat):
        return ir.repeat(escape_node(node.item), node.min, node.max)
    raise UnsupportedError("embedded automaton in a string pattern", "cannot be escaped byte by byte")


STRING_CHAR = escape_node(utf8.any_char())
STRING_BODY = ir.star(STRING_CHAR)
QUOTE = ir.literal(b'"')

_DIGIT = ir.byte_range(0x30, 0x39)
_NONZERO = ir.byte_range(0x31, 0x39)
_FRACTION = ir.seq(ir.literal(b"."), ir.star(_DIGIT), _NONZERO)
_POSITIVE = ir.alt(
    ir.seq(_NONZERO, ir.star(_DIGIT), ir.optional(_FRACTION)), ir.seq(ir.literal(b"0"), _FRACTION)
)
CANONICAL_NUMBER = ir.alt(ir.literal(b"0"), _POSITIVE, ir.seq(ir.literal(b"-"), _POSITIVE))


def quoted(body: ir.Node) -> ir.Node:
    return ir.seq(QUOTE, body, QUOTE)
