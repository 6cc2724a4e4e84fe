"""The LALR driver (``moonmaskc.frontends.lalr_driver``) against Lark's own parse loop: the same
values and the same errors, on a toy grammar building Lark trees and on the regex front end
(random pattern texts of regex syntax, the benchmark's patterns)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark
from lark.exceptions import UnexpectedInput, UnexpectedToken

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends import regex
from moonmaskc.frontends.lalr_driver import driver_for
from moonmaskc.frontends.regex import lexer as regex_lexer
from moonmaskc.frontends.regex import parser as regex_parser_module
from tests.test_regex_frontend import equivalent

TOY = r"""
start: sum
?sum: product | sum "+" product -> add | sum "-" product -> sub
?product: atom | product "*" atom -> mul
?atom: NUMBER -> number | "(" sum ")" | "-" atom -> neg | call
call: NAME "(" [args] ")"
args: sum ("," sum)*
%import common.NUMBER
%import common.CNAME -> NAME
%ignore " "
"""


def _toy(**options: object) -> Lark:
    return Lark(TOY, parser="lalr", lexer="basic", **options)  # type: ignore[arg-type]


def _outcome(run: object) -> object:
    try:
        return ("value", run())  # type: ignore[operator]
    except UnexpectedToken as error:
        token = error.token
        return ("unexpected", token.type, str(token), token.start_pos, sorted(error.expected))
    except UnexpectedInput as error:
        return ("lexer", type(error).__name__, getattr(error, "pos_in_stream", None))


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("12 +-*(),fx")), max_size=16))
def test_the_driver_builds_larks_trees_and_raises_its_errors(text: str) -> None:
    """No transformer: Lark's tree-building callbacks, run by the driver, give equal trees; a
    token out of place gives the same token and expected terminals."""
    lark = _toy()
    driver = driver_for(lark)
    assert driver is not None
    assert _outcome(lambda: driver.parse(lark.lex(text))) == _outcome(lambda: lark.parse(text))


def test_the_driver_runs_inline_callbacks_and_reads_other_start_symbols() -> None:
    from lark import Transformer

    class Evaluate(Transformer[object, int]):
        def number(self, children: list[str]) -> int:
            return int(children[0])

        def add(self, children: list[int]) -> int:
            return children[0] + children[1]

        def mul(self, children: list[int]) -> int:
            return children[0] * children[1]

        def start(self, children: list[int]) -> int:
            return children[0]

    lark = _toy(transformer=Evaluate())
    driver = driver_for(lark)
    assert driver is not None
    assert driver.parse(lark.lex("2 + 3 * (4 + 1)")) == lark.parse("2 + 3 * (4 + 1)") == 17
    assert driver_for(lark, start="no such rule") is None
    assert driver_for(Lark(TOY, parser="earley")) is None


# -- the regex front end ---------------------------------------------------------------------------


def _regex_outcome(pattern: str) -> object:
    """The printed IR, the notes and the minimal DFA of ``pattern``, or its error's kind and text."""
    try:
        result = regex.parse(pattern)
    except MoonmaskError as error:
        return (type(error).__name__, str(error))
    return (ir.to_regex(result.node), result.notes, compile_ir(result.node))


def _same(ours: object, larks: object) -> bool:
    """Equal outcomes; DFAs compared by their language (automaton leaves compare by identity)."""
    if isinstance(ours, tuple) and len(ours) == 3 and isinstance(larks, tuple) and len(larks) == 3:
        return ours[:2] == larks[:2] and equivalent(ours[2], larks[2])
    return ours == larks


def _with_larks_loop(pattern: str) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(regex_parser_module, "parse_tokens", lambda: regex_lexer.regex_parser().parse)
        return _regex_outcome(pattern)


REGEX_SYNTAX = [*"ab09-.,:|*+?^$\\()[]{}<>=!PdswbDSWux", "(?:", "(?P<n>", "(?=", "{2,3}", "\\u00e9"]


@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(st.sampled_from(REGEX_SYNTAX), max_size=14))
def test_the_regex_parse_equals_larks_on_any_text(pieces: list[str]) -> None:
    """Random texts of regex syntax, most of them malformed: the same IR and notes, or the same
    error message (which names the position), with the driver as with Lark's own loop."""
    assert regex_lexer.parse_tokens() is not regex_lexer.regex_parser().parse  # the driver is used
    pattern = "".join(pieces)
    assert _same(_regex_outcome(pattern), _with_larks_loop(pattern))


@pytest.mark.parametrize(
    "pattern",
    [
        r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}",
        r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?Z",
        r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
        r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)",
        r"^(?:a|b)$|(?P<x>c)\b(?=d)",
        "|".join(f"w{n}" for n in range(300)),
        "(a",
        "a)",
        "*a",
        "",
    ],
)
def test_the_regex_parse_equals_larks_on_real_patterns(pattern: str) -> None:
    assert _same(_regex_outcome(pattern), _with_larks_loop(pattern))


def test_the_regex_lexers_tokens_are_larks() -> None:
    """``new_token`` sets every slot that Lark's ``Token`` constructor sets, to the same values."""
    from lark import Token

    ours, larks = regex_lexer.new_token("ATOMS", "abc", 7), Token("ATOMS", "abc", 7)
    assert type(ours) is Token and ours == larks
    assert all(getattr(ours, slot) == getattr(larks, slot) for slot in Token.__slots__)
