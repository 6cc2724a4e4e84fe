"""The syntax tree of a GBNF grammar, as parsed from llama.cpp's dialect.

Takes: nothing (plain data). Hands on: immutable nodes that ``parser`` builds and that
``expand`` (to the byte IR) and ``tests/oracles/gbnf_to_lark`` (to an independent Earley oracle) consume.
Every node carries ``position``, a character offset into the grammar source, for error carets.
Characters are Unicode code points; classes are lists of inclusive code point ranges.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Literal:
    """A string literal: the code points in order (empty for ``""``)."""

    codepoints: tuple[int, ...]
    position: int


@dataclass(frozen=True)
class CharClass:
    """``[...]``: one code point in ``ranges``, or, when ``negated``, one code point outside them."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool
    position: int


@dataclass(frozen=True)
class AnyChar:
    """``.``: any one code point."""

    position: int


@dataclass(frozen=True)
class RuleRef:
    name: str
    position: int


@dataclass(frozen=True)
class Sequence:
    items: tuple[Expr, ...]
    position: int


@dataclass(frozen=True)
class Alternatives:
    options: tuple[Sequence, ...]
    position: int


@dataclass(frozen=True)
class Repetition:
    """``item{min,max}``; ``max`` is None when unbounded (``*``, ``+``, ``{m,}``)."""

    item: Expr
    min: int
    max: int | None
    position: int


Expr = Literal | CharClass | AnyChar | RuleRef | Sequence | Alternatives | Repetition


@dataclass(frozen=True)
class Rule:
    name: str
    body: Alternatives
    position: int


@dataclass(frozen=True)
class Grammar:
    """Rules in source order, keyed by name; ``source`` is the text they came from."""

    rules: dict[str, Rule]
    source: str


def references(expr: Expr) -> Iterator[RuleRef]:
    """Every rule reference inside ``expr``, in source order."""
    if isinstance(expr, RuleRef):
        yield expr
    elif isinstance(expr, Sequence):
        for item in expr.items:
            yield from references(item)
    elif isinstance(expr, Alternatives):
        for option in expr.options:
            yield from references(option)
    elif isinstance(expr, Repetition):
        yield from references(expr.item)
