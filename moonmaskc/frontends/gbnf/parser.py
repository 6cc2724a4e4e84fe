"""GBNF source text to a checked syntax tree.

Takes: grammar text in llama.cpp's dialect. Hands on: a ``tree.Grammar`` whose rules are all
defined exactly once and whose every reference names a defined rule. Raises ``SourceError`` (with
a caret) for syntax errors, bad escapes, duplicate or undefined rules and an empty grammar, and
``UnsupportedError`` for token references (``<[id]>``, ``<token>``, ``!<...>``).

Newlines follow llama.cpp: a newline ends the current rule, except inside parentheses, right after
``::=`` and right after ``|``. The postlexer drops the newlines that do not end a rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from moonmaskc.errors import SourceError, UnsupportedError
from moonmaskc.frontends.gbnf.tree import (
    Alternatives,
    AnyChar,
    CharClass,
    Expr,
    Grammar,
    Literal,
    Repetition,
    Rule,
    RuleRef,
    Sequence,
    references,
)
from moonmaskc.frontends.lark_parsers import lalr_parser

MAX_CODE_POINT = 0x10FFFF
_SIMPLE_ESCAPES = {"t": 0x09, "r": 0x0D, "n": 0x0A, "\\": 0x5C, '"': 0x22, "[": 0x5B, "]": 0x5D}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_POSTFIX_TOKENS = {"STAR": "*", "PLUS": "+", "QUESTION": "?", "LBRACE": "{"}


class _NewlinePostlexer:
    """Keeps only the newlines that end a rule (see the module docstring)."""

    always_accept = ("_NL",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        depth = 0
        previous: str | None = None
        for token in stream:
            kind = token.type
            if kind == "_NL":
                if depth > 0 or previous in (None, "_NL", "DEFINE", "BAR"):
                    continue
            elif kind == "LPAR":
                depth += 1
            elif kind == "RPAR":
                depth = max(0, depth - 1)
            previous = kind
            yield token


@cache
def _parser() -> Lark:
    return lalr_parser(
        "gbnf.lark",
        lexer="contextual",
        postlex=_NewlinePostlexer(),
        propagate_positions=True,
        maybe_placeholders=False,
    )


def parse_grammar(source: str) -> Grammar:
    """Parse and check ``source``; see the module docstring for what is raised."""
    try:
        tree = _parser().parse(source)
    except UnexpectedInput as error:
        raise _syntax_error(source, error) from None
    rules: dict[str, Rule] = {}
    for rule_tree in tree.children:
        assert isinstance(rule_tree, Tree)
        rule = _Builder(source).rule(rule_tree)
        if rule.name in rules:
            first = rules[rule.name]
            line = source.count("\n", 0, first.position) + 1
            raise SourceError(
                f"duplicate rule `{rule.name}` (first defined on line {line})", source, rule.position
            )
        rules[rule.name] = rule
    if not rules:
        raise SourceError("empty grammar: no rule `name ::= ...` found", source, len(source))
    for rule in rules.values():
        for ref in references(rule.body):
            if ref.name not in rules:
                raise SourceError(f"undefined rule `{ref.name}`", source, ref.position)
    return Grammar(rules, source)


def _syntax_error(source: str, error: UnexpectedInput) -> SourceError:
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream or 0
        char = source[position] if position < len(source) else ""
        if char == '"':
            return SourceError("unterminated string literal", source, position)
        if char == "[":
            return SourceError("unterminated character class", source, position)
        if source.startswith("::=", position) or char == ":":
            return SourceError("unexpected `::=`: a rule must start on a new line", source, position)
        return SourceError(f"unexpected character {char!r}", source, position)
    if isinstance(error, UnexpectedEOF):
        return SourceError("unexpected end of grammar", source, len(source))
    if isinstance(error, UnexpectedToken):
        token = error.token
        position = token.start_pos if token.start_pos is not None else len(source)
        if token.type == "$END":
            if error.expected & {"INT", "RBRACE", "COMMA"}:
                return SourceError("unterminated repetition `{...}`", source, len(source))
            return SourceError("unexpected end of grammar", source, len(source))
        if token.type in _POSTFIX_TOKENS and "LBRACE" not in error.expected:
            return SourceError(
                f"`{_POSTFIX_TOKENS[token.type]}` has no item before it to repeat", source, position
            )
        if token.type == "_NL":
            return SourceError(_newline_message(error.expected), source, position)
        if token.type == "DEFINE":
            return SourceError("unexpected `::=`: a rule must start on a new line", source, position)
        if token.type == "RPAR":
            return SourceError("unexpected ')' without a matching '('", source, position)
        if error.expected <= {"_NL", "$END"}:
            return SourceError(f"unexpected {token.value!r}; expected the end of the line", source, position)
        if "NAME" in error.expected and error.expected <= {"NAME", "_NL", "$END"}:
            return SourceError(
                f"expected a rule `name ::= ...`, found {token.value!r} (a rule continues on the next "
                "line only after `::=`, after `|` or inside parentheses)",
                source,
                position,
            )
        return SourceError(
            f"unexpected {token.value!r}; expected {_describe_expected(error.expected)}", source, position
        )
    return SourceError(str(error), source, getattr(error, "pos_in_stream", None))


def _newline_message(expected: set[str]) -> str:
    if "DEFINE" in expected:
        return "expected `::=` after the rule name"
    if "INT" in expected or "RBRACE" in expected or "COMMA" in expected:
        return "unterminated repetition `{...}`"
    return f"unexpected end of line; expected {_describe_expected(expected)}"


_EXPECTED_NAMES = {
    "DEFINE": "`::=`",
    "BAR": "`|`",
    "RPAR": "`)`",
    "LPAR": "`(`",
    "RBRACE": "`}`",
    "COMMA": "`,`",
    "INT": "a number",
    "NAME": "a rule name",
    "STRING": "a string",
    "CHAR_CLASS": "a character class",
    "DOT": "`.`",
    "_NL": "a new line",
    "$END": "the end of the grammar",
}


def _describe_expected(expected: set[str]) -> str:
    shown = {name for name in expected if name not in _POSTFIX_TOKENS}
    if len(shown) > 1:
        shown.discard("_NL")
    names = sorted({_EXPECTED_NAMES.get(name, name) for name in shown})
    return ", ".join(names) if names else "something else"


class _Builder:
    """Turns the Lark tree of one rule into ``tree`` nodes, decoding literals and classes."""

    def __init__(self, source: str) -> None:
        self.source = source

    def rule(self, tree: Tree) -> Rule:
        name, _define, body = tree.children
        assert isinstance(name, Token) and isinstance(body, Tree)
        return Rule(str(name), self.alternatives(body, name.start_pos or 0), name.start_pos or 0)

    def alternatives(self, tree: Tree, fallback_position: int) -> Alternatives:
        options = tuple(
            self.sequence(child, fallback_position) for child in tree.children if isinstance(child, Tree)
        )
        position = options[0].position if options else fallback_position
        return Alternatives(options, position)

    def sequence(self, tree: Tree, fallback_position: int) -> Sequence:
        items = tuple(self.item(child) for child in tree.children if isinstance(child, Tree))
        position = items[0].position if items else fallback_position
        return Sequence(items, position)

    def item(self, tree: Tree) -> Expr:
        atom, *postfixes = tree.children
        assert isinstance(atom, Tree)
        node = self.atom(atom)
        for postfix in postfixes:
            assert isinstance(postfix, Tree)
            node = self.postfix(node, postfix)
        return node

    def atom(self, tree: Tree) -> Expr:
        first = tree.children[0]
        assert isinstance(first, Token)
        position = first.start_pos or 0
        kind = tree.data
        if kind == "literal":
            return Literal(tuple(self.decode(str(first)[1:-1], position + 1)), position)
        if kind == "char_class":
            return self.char_class(str(first), position)
        if kind == "any_char":
            return AnyChar(position)
        if kind == "reference":
            return RuleRef(str(first), position)
        if kind == "token_ref":
            raise UnsupportedError(
                f"token reference {first}",
                "token references match tokenizer tokens, not text, so they have no byte-level DFA",
                self.source,
                position,
            )
        assert kind == "group"
        body = tree.children[1]
        assert isinstance(body, Tree)
        return self.alternatives(body, position)

    def postfix(self, node: Expr, tree: Tree) -> Repetition:
        first = tree.children[0]
        assert isinstance(first, Token)
        position = first.start_pos or 0
        numbers = [
            int(str(token)) for token in tree.children if isinstance(token, Token) and token.type == "INT"
        ]
        kind = tree.data
        low: int
        high: int | None
        if kind == "star":
            low, high = 0, None
        elif kind == "plus":
            low, high = 1, None
        elif kind == "optional":
            low, high = 0, 1
        elif kind == "exactly":
            low = high = numbers[0]
        elif kind == "at_least":
            low, high = numbers[0], None
        else:
            low, high = numbers
            if high < low:
                raise SourceError(
                    f"repetition {{{low},{high}}} has its maximum below its minimum", self.source, position
                )
        return Repetition(node, low, high, position)

    def char_class(self, text: str, position: int) -> CharClass:
        body = text[1:-1]
        offset = position + 1
        negated = body.startswith("^")
        if negated:
            body, offset = body[1:], offset + 1
        chars = self.decode_with_positions(body, offset)
        ranges: list[tuple[int, int]] = []
        index = 0
        while index < len(chars):
            low, low_pos, _low_raw = chars[index]
            # llama.cpp: `-` makes a range unless it is the last character before `]`.
            if index + 2 < len(chars) and chars[index + 1][2] == "-":
                high, _high_pos, _ = chars[index + 2]
                if high < low:
                    raise SourceError(
                        f"empty character range U+{low:04X}-U+{high:04X} (its end is below its start)",
                        self.source,
                        low_pos,
                    )
                ranges.append((low, high))
                index += 3
            else:
                ranges.append((low, low))
                index += 1
        return CharClass(tuple(ranges), negated, position)

    def decode(self, body: str, offset: int) -> list[int]:
        codepoints = []
        for value, position, _raw in self.decode_with_positions(body, offset):
            if 0xD800 <= value <= 0xDFFF:
                raise SourceError(
                    f"code point U+{value:04X} is a surrogate and has no UTF-8 encoding",
                    self.source,
                    position,
                )
            codepoints.append(value)
        return codepoints

    def decode_with_positions(self, body: str, offset: int) -> list[tuple[int, int, str]]:
        """Code points of a literal or class body: (value, source position, raw text if unescaped)."""
        result: list[tuple[int, int, str]] = []
        index = 0
        while index < len(body):
            char = body[index]
            position = offset + index
            if char != "\\":
                result.append((ord(char), position, char))
                index += 1
                continue
            escape = body[index + 1] if index + 1 < len(body) else ""
            if escape in _SIMPLE_ESCAPES:
                result.append((_SIMPLE_ESCAPES[escape], position, ""))
                index += 2
            elif escape in _HEX_ESCAPES:
                width = _HEX_ESCAPES[escape]
                digits = body[index + 2 : index + 2 + width]
                if len(digits) != width or not set(digits) <= _HEX_DIGITS:
                    raise SourceError(
                        f"escape \\{escape} needs exactly {width} hex digits", self.source, position
                    )
                value = int(digits, 16)
                if value > MAX_CODE_POINT:
                    raise SourceError(
                        f"\\{escape}{digits} is above U+10FFFF, the largest code point", self.source, position
                    )
                result.append((value, position, ""))
                index += 2 + width
            else:
                shown = "\\" + escape if escape else "\\ at the end"
                raise SourceError(f"unknown escape {shown!r}", self.source, position)
        return result
