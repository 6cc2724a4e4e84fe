"""The Lark side of the regex front end: the lexer, the parser over ``regex.lark``, and the
grammar's terminals as Python regexes.

Takes: ``moonmaskc/grammars/regex.lark``. Hands on: ``regex_parser()``, the one LALR parser (built
once) that runs the ``builder`` callbacks inline while it parses; ``parse_tokens()``, the parse
that the front end runs (the lexer below feeding that parser's table, see ``lalr_driver``);
``class_item_pattern``,
``escape_pattern`` and ``atom_pattern``, which cut a CHAR_CLASS, ESCAPE or ATOMS token into its
items; ``token_start``, where a token starts in the pattern.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters
from lark.lexer import Lexer

from moonmaskc.frontends.lalr_driver import driver_for
from moonmaskc.frontends.lark_parsers import lalr_parser


class RegexLexer(Lexer):
    """Lark's basic lexer, lean: one master regex over the grammar's terminals, tried in Lark's
    own order (priority, then longest possible match, then pattern length, then name), and tokens
    that carry only their type, text and start position (the pattern is one line).

    A contextual lexer is not needed: no two terminals can start the same text in different parser
    states, so the token stream is the one Lark's lexers produce, and a token that the parser does
    not expect becomes the same ``UnexpectedToken``.
    """

    def __init__(self, lexer_conf: Any) -> None:
        terminals = sorted(
            lexer_conf.terminals,
            key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name),
        )
        self._names = [t.name for t in terminals]
        self._master = re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals))

    def lex(self, text: str) -> Iterator[Token]:  # type: ignore[override]
        match = self._master.match
        position = 0
        end = len(text)
        while position < end:
            found = match(text, position)
            if found is None:
                raise UnexpectedCharacters(text, position, 1, position + 1, allowed=set(self._names))
            value = found.group()
            yield new_token(found.lastgroup, value, position)  # type: ignore[arg-type]
            position += len(value)


_new_text = str.__new__


def new_token(kind: str, value: str, position: int) -> Token:
    """``Token(kind, value, position)``, made directly: Lark's constructor goes through two more
    Python calls (its keyword handling) for every token."""
    token = _new_text(Token, value)
    token.type = kind
    token.start_pos = position
    token.value = value
    token.line = token.column = token.end_line = token.end_column = token.end_pos = None
    return token


@cache
def regex_parser() -> Lark:
    # Imported here, not at the top: the builder's callbacks use this module's terminal patterns.
    from moonmaskc.frontends.regex.builder import IRBuilder

    return lalr_parser(
        "regex.lark",
        lexer=RegexLexer,
        transformer=IRBuilder(),
        keep_all_tokens=True,
        maybe_placeholders=False,
    )


@cache
def parse_tokens() -> Callable[[str], Any]:
    """The regex parse, pattern to the builder's value: this module's lexer feeding Lark's LALR
    table through ``lalr_driver`` (Lark's own ``parse`` where the driver cannot read the table).
    The same values and the same errors as ``regex_parser().parse``."""
    parser = regex_parser()
    driver = driver_for(parser)
    if driver is None:
        return parser.parse
    lexer = RegexLexer(parser.lexer_conf)
    parse, lex = driver.parse, lexer.lex
    return lambda pattern: parse(lex(pattern))


@cache
def class_item_pattern() -> re.Pattern[str]:
    """One character class item, cut out of the grammar's CHAR_CLASS terminal."""
    whole = regex_parser().get_terminal("CHAR_CLASS").pattern.value
    prefix, suffix = "\\[(?>\\^?)(?>", ")+\\]"
    assert whole.startswith(prefix) and whole.endswith(suffix), whole
    return re.compile(whole[len(prefix) : -len(suffix)])


@cache
def escape_pattern() -> re.Pattern[str]:
    return re.compile(regex_parser().get_terminal("ESCAPE").pattern.value)


@cache
def atom_pattern() -> re.Pattern[str]:
    """One item of an ATOMS run: a run of literals, '.', an escape or a character class (the
    grammar's own LITERAL, ESCAPE and CHAR_CLASS patterns; ATOMS is checked to be made of exactly
    these)."""
    parser = regex_parser()
    literal = parser.get_terminal("LITERAL").pattern.value
    escape = parser.get_terminal("ESCAPE").pattern.value
    char_class = parser.get_terminal("CHAR_CLASS").pattern.value
    escape_items = escape.replace("\\(", "\\(?:", 1)
    expected = f"(?:(?>{literal}|\\.|{escape_items}|{char_class})(?![*+?{{]))+"
    atoms = parser.get_terminal("ATOMS").pattern.value
    assert atoms == expected, (atoms, expected)
    return re.compile(
        f"(?P<literals>{literal}+)|(?P<dot>\\.)|(?P<escape>{escape})|(?P<char_class>{char_class})"
    )


def token_start(token: Token) -> int:
    return int(token.start_pos or 0)
