"""Quantifiers: ``*``, ``+``, ``?`` and ``{m}``, ``{m,}``, ``{m,n}``, each maybe lazy or possessive.

Takes: one QUANTIFIER token. Hands on: its bounds ``(low, high)`` (``high`` None when unbounded);
a lazy mode changes nothing, a possessive one, bounds in the wrong order and a bound above
``--max-repeat`` raise an error.
"""

from __future__ import annotations

from lark import Token

from moonmaskc.errors import LimitError
from moonmaskc.frontends.regex.context import current_parse
from moonmaskc.frontends.regex.errors import source_error, unsupported
from moonmaskc.frontends.regex.lexer import token_start


def bounds(token: Token) -> tuple[int, int | None]:
    """The bounds of a quantifier token; its mode ``?`` (lazy) changes nothing, ``+`` is rejected."""
    text = str(token)
    position = token_start(token)
    base_end = text.index("}") + 1 if text[0] == "{" else 1
    base = text[:base_end]
    if text[base_end:] == "+":
        raise unsupported(
            f"possessive quantifier '{base}+'",
            "possessive repetition changes matching, not just the language",
            position + base_end,
        )
    if base == "*":
        return 0, None
    if base == "+":
        return 1, None
    if base == "?":
        return 0, 1
    low_text, comma, high_text = base[1:-1].partition(",")
    low = int(low_text)
    high = None if comma and not high_text else int(high_text or low_text)
    if high is not None and high < low:
        raise source_error(f"repetition {base}: the minimum is larger than the maximum", position)
    limits = current_parse().limits
    if max(low, high or 0) > limits.max_repeat:
        raise LimitError(
            "max_repeat",
            limits.max_repeat,
            f"repetition {base} at position {position} of the pattern exceeds the repetition bound",
            flag="--max-repeat",
        )
    return low, high
