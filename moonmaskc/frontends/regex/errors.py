"""Errors in a regex pattern, with messages in regex terms.

Takes: what went wrong and where (a position in the pattern of the parse under way), or a Lark
``UnexpectedInput``. Hands on: the ``SourceError`` or ``UnsupportedError`` to raise.
"""

from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from moonmaskc.errors import SourceError, UnsupportedError
from moonmaskc.frontends.regex.context import current_parse
from moonmaskc.frontends.regex.lexer import class_item_pattern, token_start


def source_error(message: str, position: int | None) -> SourceError:
    return SourceError(message, current_parse().pattern, position)


def unsupported(construct: str, reason: str, position: int) -> UnsupportedError:
    return UnsupportedError(construct, reason, current_parse().pattern, position)


def syntax_error(error: UnexpectedInput, pattern: str) -> SourceError:
    """A ``SourceError`` with a message that says what went wrong in regex terms."""
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream or 0
        found = pattern[position] if position < len(pattern) else ""
        if found == "[":
            return _bad_class_error(pattern, position)
        return SourceError(_unexpected_text_message(found), pattern, position)
    if isinstance(error, UnexpectedToken):
        token = error.token
        expected = set(error.expected)
        if token.type == "$END":
            message = "missing ')' to close a group" if "RPAR" in expected else "the pattern ends too early"
            return SourceError(message, pattern, len(pattern))
        position = token_start(token)
        if token.type == "QUANTIFIER":
            message = f"quantifier '{token}' has nothing to repeat; write \\{str(token)[0]} for a literal"
            return SourceError(message, pattern, position)
        if token.type == "RPAR":
            return SourceError("unbalanced ')': no group is open", pattern, position)
        return SourceError(_unexpected_text_message(str(token)), pattern, position)
    return SourceError(f"syntax error: {error}", pattern, getattr(error, "pos_in_stream", None))


def _bad_class_error(pattern: str, opening: int) -> SourceError:
    """Why the character class opened at ``opening`` did not lex: it is empty, or it never ends."""
    position = opening + (2 if pattern.startswith("[^", opening) else 1)
    if pattern.startswith("]", position):
        return SourceError(
            "empty character class: ']' right after '[' or '[^' is read differently by Python and "
            "ECMAScript; write \\] for a literal ']'",
            pattern,
            position,
        )
    item = class_item_pattern()
    while (match := item.match(pattern, position)) is not None:
        position = match.end()
    if position < len(pattern):  # only a final lone backslash stops the items before the end
        return SourceError(_unexpected_text_message(pattern[position]), pattern, position)
    return SourceError("unterminated character class: missing ']'", pattern, len(pattern))


def _unexpected_text_message(found: str) -> str:
    if found.startswith("{"):
        return "'{' does not start a repetition {m}, {m,} or {m,n}; write \\{ for a literal brace"
    if found == "\\":
        return "the pattern ends with a lone backslash"
    return f"unexpected {found!r}"
