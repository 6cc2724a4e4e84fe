"""A GBNF syntax tree as an equivalent Lark grammar, for an independent Earley check.

Takes: a ``tree.Grammar`` and a start rule. Hands on: Lark grammar text over single code points
(every terminal matches exactly one character) that derives the same strings as the GBNF grammar,
recursion included, and ``earley_recognizer`` which parses it with Lark's Earley parser.

This path never touches the byte IR, the UTF-8 tables or the automata, so the tests use it as an
oracle for them: text accepted by the DFA must be accepted here.
"""

from __future__ import annotations

from collections.abc import Callable

from lark import Lark
from lark.exceptions import LarkError

from moonmaskc.frontends.gbnf.tree import (
    Alternatives,
    AnyChar,
    CharClass,
    Expr,
    Grammar,
    Literal,
    Repetition,
    RuleRef,
    Sequence,
)

_EMPTY = "_empty"
_NAMED_CONTROLS = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _class_char(cp: int) -> str:
    """One code point written so that Lark's escape handling hands ``re`` a literal class member."""
    char = chr(cp)
    if char.isascii() and char.isalnum():
        return char
    if cp in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[cp]
    if char == "\\":
        return "\\\\"
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02x}"
    if cp < 0x80:
        return "\\" + char
    return char


def _class_regex(ranges: tuple[tuple[int, int], ...], negated: bool) -> str:
    if not ranges:
        return "/[\\s\\S]/" if negated else "/[^\\s\\S]/"
    body = "".join(
        _class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}" for lo, hi in ranges
    )
    return f"/[{'^' if negated else ''}{body}]/"


class _Writer:
    def __init__(self, grammar: Grammar) -> None:
        self.names = {name: f"r{index}" for index, name in enumerate(grammar.rules)}

    def expr(self, node: Expr) -> str:
        if isinstance(node, Literal):
            if not node.codepoints:
                return _EMPTY
            return "(" + " ".join(_class_regex(((cp, cp),), False) for cp in node.codepoints) + ")"
        if isinstance(node, CharClass):
            return _class_regex(node.ranges, node.negated)
        if isinstance(node, AnyChar):
            return "/[\\s\\S]/"
        if isinstance(node, RuleRef):
            return self.names[node.name]
        if isinstance(node, Sequence):
            if not node.items:
                return _EMPTY
            return "(" + " ".join(self.expr(item) for item in node.items) + ")"
        if isinstance(node, Alternatives):
            return "(" + " | ".join(self.expr(option) for option in node.options) + ")"
        assert isinstance(node, Repetition)
        item = f"({self.expr(node.item)})"
        if node.max == 0:
            return _EMPTY
        counted = f"({item} ~ {node.min}..{node.max})" if node.max is not None else None
        if node.max is None:
            if node.min == 0:
                return f"{item}*"
            return f"(({item} ~ {node.min}) {item}*)"
        return counted or _EMPTY


def to_lark(grammar: Grammar, start: str) -> str:
    """Lark grammar text equivalent to ``grammar`` from rule ``start``."""
    writer = _Writer(grammar)
    lines = [f"start: {writer.names[start]}", f"{_EMPTY}:"]
    for name, rule in grammar.rules.items():
        lines.append(f"{writer.names[name]}: {writer.expr(rule.body)}")
    return "\n".join(lines) + "\n"


def earley_recognizer(grammar: Grammar, start: str) -> Callable[[str], bool]:
    """A function telling whether a text is derived by ``start`` (Lark Earley, dynamic lexer)."""
    parser = Lark(to_lark(grammar, start), parser="earley", lexer="dynamic", ambiguity="resolve")

    def accepts(text: str) -> bool:
        try:
            parser.parse(text)
        except LarkError:
            return False
        return True

    return accepts
