"""Lark's LALR(1) table for one start symbol, run by a tight loop over plain lists and dicts.

Takes: a ``Lark`` parser built with ``parser="lalr"`` and a transformer whose callbacks run
inline (``lark_parsers.lalr_parser(..., transformer=...)``), and the tokens of a text (a
``lark.Token`` stream, as a Lark lexer makes it). Hands on: ``LalrDriver.parse(tokens)``, the value
the callbacks build for the start symbol: what ``Lark.parse`` returns for the same tokens. A token
the table does not expect raises the ``UnexpectedToken`` (token and expected terminals) that
Lark's own loop raises; the lexer's errors pass through as they are.

Lark keeps the grammar, its analysis and the callbacks; only the loop is ours. Lark's loop looks
a reduction's callback up by its rule object (a Python-level ``__hash__`` and ``__eq__`` per
reduction), reads the rule's length and origin through attributes, and sets up a parser state,
a lexer thread and a configuration per parse: on a 100-character regex about a third of the
parse. Here every action is an int in a per-state dict (a target state to shift to, or the
complement of a reduction's index) and each reduction a tuple (length, callback, origin).

``driver_for(lark)`` gives ``None`` when the parser is not laid out as this module reads it
(another Lark version): the caller then parses with ``lark.parse``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedToken

END = "$END"


class LalrDriver:
    """The table of ``lark``'s LALR parser for ``start``, flattened (see the module docstring)."""

    def __init__(
        self,
        states: dict[int, dict[str, tuple[Any, Any]]],
        start_state: int,
        end_state: int,
        callbacks: dict[Any, Callable[[Any], Any]],
        shift: object,
    ) -> None:
        rule_index: dict[int, int] = {}  # id(rule) -> index in self._reductions
        reductions: list[tuple[int, Callable[[list[Any]], Any], str]] = []
        actions: list[dict[str, int]] = [{} for _ in range(max(states) + 1)]
        gotos: list[dict[str, int]] = [{} for _ in range(max(states) + 1)]
        for state, row in states.items():
            for symbol, (action, argument) in row.items():
                if action is shift:
                    (actions if symbol.isupper() else gotos)[state][symbol] = int(argument)  # ($END too)
                    continue
                index = rule_index.get(id(argument))
                if index is None:
                    index = rule_index[id(argument)] = len(reductions)
                    reductions.append((len(argument.expansion), callbacks[argument], argument.origin.name))
                actions[state][symbol] = ~index
        self._actions = actions
        self._gotos = gotos
        self._reductions = reductions
        self._start_state = start_state
        self._end_state = end_state
        self._token_callbacks = {name: call for name, call in callbacks.items() if isinstance(name, str)}

    def parse(self, tokens: Iterable[Token]) -> Any:
        """The start symbol's value for ``tokens`` (see the module docstring)."""
        actions, gotos, reductions = self._actions, self._gotos, self._reductions
        token_callbacks, end_state = self._token_callbacks, self._end_state
        states = [self._start_state]
        values: list[Any] = []
        for token in _ended(tokens):
            kind = token.type
            while True:
                entry = actions[states[-1]].get(kind)
                if entry is None or (entry >= 0 and kind == END):  # (the end is never shifted)
                    raise self._unexpected(token, states[-1])
                if entry >= 0:
                    states.append(entry)
                    call = token_callbacks.get(kind)
                    values.append(token if call is None else call(token))
                    break
                size, call, origin = reductions[~entry]
                if size:
                    children = values[-size:]
                    del values[-size:]
                    del states[-size:]
                else:
                    children = []
                values.append(call(children))
                states.append(gotos[states[-1]][origin])
                if states[-1] == end_state and kind == END:
                    return values[-1]
        raise AssertionError("unreachable: the end token is accepted or unexpected")

    def _unexpected(self, token: Token, state: int) -> UnexpectedToken:
        expected = {symbol for symbol in self._actions[state] if symbol.isupper()}
        return UnexpectedToken(token, expected)


def _ended(tokens: Iterable[Token]) -> Iterator[Token]:
    """``tokens``, then the end token (at the last token's position, as Lark places it)."""
    token = None
    for token in tokens:
        yield token
    yield Token.new_borrow_pos(END, "", token) if token is not None else Token(END, "", 0, 1, 1)


def driver_for(lark: Lark, start: str | None = None) -> LalrDriver | None:
    """The driver of ``lark``'s LALR table for ``start`` (its first start symbol by default), or
    ``None`` when this Lark lays its parser out otherwise."""
    try:
        from lark.parsers.lalr_analysis import Shift

        inner = lark.parser.parser.parser  # ParsingFrontend -> LALR_Parser -> _Parser
        table = inner.parse_table
        name = start if start is not None else lark.options.start[0]
        states = table.states
        if not states or not all(isinstance(state, int) for state in states):
            return None
        return LalrDriver(states, table.start_states[name], table.end_states[name], inner.callbacks, Shift)
    except (AttributeError, ImportError, KeyError, IndexError, TypeError):
        return None
