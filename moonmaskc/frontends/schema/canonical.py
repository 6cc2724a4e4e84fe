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
import re
from decimal import Decimal
from typing import Any

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.minimize import minimal_dense
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends import utf8

_SHORT_ESCAPES = {0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\"}
ESCAPED_BYTES = [*range(0x20), 0x22, 0x5C]
ESCAPED_MASK = ir.mask_of(ESCAPED_BYTES)


def escape_char(code: int) -> str:
    """The canonical escape of one escaped character (a control character, quote or backslash)."""
    return _SHORT_ESCAPES.get(code) or f"\\u{code:04x}"


def escape_text(value: str) -> str:
    """``value`` with every character that canonical JSON escapes escaped (most keys have none)."""
    if _NEEDS_ESCAPE.search(value) is None:
        return value
    return "".join(escape_char(ord(ch)) if ord(ch) in _ESCAPED_SET else ch for ch in value)


_NEEDS_ESCAPE = re.compile("[" + "".join(re.escape(chr(code)) for code in ESCAPED_BYTES) + "]")
"""Any character of ``ESCAPED_BYTES``: the same set as ``_ESCAPED_SET``, searched in C."""


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


ESCAPED_MEMO_SIZE = 16
"""Subtrees of at least this many nodes keep their escaped form per process (``escape_node``): a
pattern searched anywhere holds ``.*`` on both sides, the same any-character subtree every time."""
ESCAPED_MEMO_ENTRIES = 256
_ESCAPED: dict[ir.Node, ir.Node] = {}


def escape_node(node: ir.Node) -> ir.Node:
    """The language of ``node`` (decoded string content, UTF-8) with every character escaped.
    Shared subtrees are escaped once a call; big ones without an automaton once a process."""
    return _escaped(node, {})


def _escaped(node: ir.Node, seen: dict[int, ir.Node]) -> ir.Node:
    if isinstance(node, ir.ByteSet):
        return node if not node.mask & ESCAPED_MASK else _escape_byteset(node.mask)
    if isinstance(node, ir.Automaton):
        return ir.Automaton(escaped_dfa(node.dfa), f"{node.label}, escaped")
    found = seen.get(id(node))
    if found is not None:
        return found
    # The escape of a subtree holds an automaton when the subtree does: such a one is never kept.
    kept = node._size >= ESCAPED_MEMO_SIZE and not ir.holds_automaton(node)
    if kept:
        found = _ESCAPED.get(node)
        if found is not None:
            seen[id(node)] = found
            return found
    if isinstance(node, ir.Seq):
        result = ir.seq(*(_escaped(item, seen) for item in node.items))
    elif isinstance(node, ir.Alt):
        result = ir.alt(*(_escaped(item, seen) for item in node.items))
    else:
        result = ir.repeat(_escaped(node.item, seen), node.min, node.max)
    seen[id(node)] = result
    if kept:
        if len(_ESCAPED) >= ESCAPED_MEMO_ENTRIES:
            _ESCAPED.clear()
        _ESCAPED[node] = result
    return result


ESCAPED_DFA_MAX_STATES = 50_000
_HEX = "0123456789abcdef"


def escaped_dfa(dfa: DFA) -> DFA:
    r"""The DFA of the escaped forms of ``dfa``'s strings (a pattern's automaton, built over the
    decoded content, as a lookahead makes it): every state keeps its other bytes and gets six
    states for the canonical escapes (after ``\``, ``\u``, ``\u0``, ``\u00``, ``\u000``,
    ``\u001``), whose last byte leads where the escaped byte led. Raw escaped bytes lead nowhere.
    The escapes share no prefix with a raw byte (a raw ``\`` is itself escaped), so the result is
    deterministic as built, then minimised."""
    n = dfa.num_states
    if n > ESCAPED_DFA_MAX_STATES:
        raise UnsupportedError(
            "embedded automaton in a string pattern",
            f"its {n} states are more than the {ESCAPED_DFA_MAX_STATES} that are escaped",
        )
    raw = dfa.transitions[:, dfa.byte_class]  # [n, 256]
    table = np.zeros((7 * n, 256), dtype=np.int32)
    table[:n] = raw
    table[:n, ESCAPED_BYTES] = 0
    states = np.arange(n)
    node = n + 6 * states  # node + k: after "\", "\u", "\u0", "\u00", "\u000", "\u001"
    table[1:n, 0x5C] = node[1:]
    for byte, text in _SHORT_ESCAPES.items():
        table[node, ord(text[1])] = raw[:, byte]
    table[node, ord("u")] = node + 1
    table[node + 1, ord("0")] = node + 2
    table[node + 2, ord("0")] = node + 3
    table[node + 3, ord("0")] = node + 4
    table[node + 3, ord("1")] = node + 5
    for digit, char in enumerate(_HEX):
        if digit not in _SHORT_ESCAPES:
            table[node + 4, ord(char)] = raw[:, digit]
        table[node + 5, ord(char)] = raw[:, 0x10 + digit]
    table[0] = 0
    accepting = np.zeros(7 * n, dtype=bool)
    accepting[:n] = dfa.accepting
    return minimal_dense(table, np.arange(256, dtype=np.int32), accepting, dfa.start)


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
