"""GBNF parsing: llama.cpp's dialect into the syntax tree, and every error with its position."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends import gbnf
from moonmaskc.frontends.gbnf.tree import Alternatives, CharClass, Literal, Repetition, RuleRef, Sequence
from moonmaskc.limits import Limits
from tests.conftest import data_path

GRAMMAR_FILES = [
    "arithmetic.gbnf",
    "c.gbnf",
    "chess.gbnf",
    "english.gbnf",
    "japanese.gbnf",
    "json.gbnf",
    "json_arr.gbnf",
    "list.gbnf",
]


def only_item(text: str, rule: str = "root") -> object:
    body = gbnf.parse_ast(text).rules[rule].body
    assert len(body.options) == 1 and len(body.options[0].items) == 1
    return body.options[0].items[0]


@pytest.mark.parametrize("name", GRAMMAR_FILES)
def test_every_shared_grammar_parses_with_all_its_rules(name: str) -> None:
    text = data_path("gbnf", name).read_text(encoding="utf-8")
    grammar = gbnf.parse_ast(text)
    defined = re.findall(r"^([A-Za-z0-9_-]+)\s*::=", text, flags=re.MULTILINE)
    assert list(grammar.rules) == defined


# --- literals and escapes ---------------------------------------------------------------------

ESCAPE_FORMS = {
    "\n": ["\\n", "\\x0A", "\\u000a"],
    "\r": ["\\r", "\\x0d"],
    "\t": ["\\t", "\\U00000009"],
    "\\": ["\\\\"],
    '"': ['\\"', "\\x22"],
    "[": ["\\[", "["],
    "]": ["\\]", "]"],
}


def write_char(char: str, choice: int) -> str:
    """One character of a GBNF string literal, escaped in one of the ways llama.cpp reads."""
    forms = ESCAPE_FORMS.get(char)
    if forms:
        return forms[choice % len(forms)]
    cp = ord(char)
    options = [char, f"\\U{cp:08X}"] + ([f"\\u{cp:04x}"] if cp <= 0xFFFF else [])
    options += [f"\\x{cp:02X}"] if cp <= 0xFF else []
    return options[choice % len(options)]


text_strategy = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x10FFFF), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(value=text_strategy, choices=st.lists(st.integers(0, 3), min_size=12, max_size=12))
def test_string_literals_decode_every_escape_form(value: str, choices: list[int]) -> None:
    literal = "".join(write_char(char, choice) for char, choice in zip(value, choices, strict=False))
    node = only_item(f'root ::= "{literal}"\n')
    assert isinstance(node, Literal)
    assert "".join(map(chr, node.codepoints)) == value


def test_character_classes_follow_llama_cpp() -> None:
    node = only_item("root ::= [a-c\\]x-]")
    assert node == CharClass(((0x61, 0x63), (0x5D, 0x5D), (0x78, 0x78), (0x2D, 0x2D)), False, 9)
    node = only_item("root ::= [^\\n\\x00-\\x1F\\u00e9-\\U0001F600]")
    assert isinstance(node, CharClass) and node.negated
    assert node.ranges == ((0x0A, 0x0A), (0x00, 0x1F), (0xE9, 0x1F600))
    node = only_item('root ::= [-+*/"#]')  # `#` and `"` inside a class are plain characters
    assert isinstance(node, CharClass)
    assert [lo for lo, _ in node.ranges] == [ord(c) for c in '-+*/"#']
    empty = only_item("root ::= []")
    assert empty == CharClass((), False, 9)


def test_postfix_operators_stack_and_braces_allow_spaces() -> None:
    node = only_item('root ::= "a"{ 2 , 5 }?')
    assert isinstance(node, Repetition) and (node.min, node.max) == (0, 1)
    assert isinstance(node.item, Repetition) and (node.item.min, node.item.max) == (2, 5)
    for text, bounds in [("x*", (0, None)), ("x+", (1, None)), ("x{3}", (3, 3)), ("x{3,}", (3, None))]:
        rep = only_item(f'root ::= {text}\nx ::= "x"')
        assert isinstance(rep, Repetition) and (rep.min, rep.max) == bounds
        assert rep.item == RuleRef("x", 9)


def test_newlines_end_rules_except_after_define_bar_and_inside_parentheses() -> None:
    text = 'root ::=\n  "a" |\n  ( "b"\n    "c"\n  )\n\n# comment\n  \nother ::= "d" # trailing\n'
    grammar = gbnf.parse_ast(text)
    assert list(grammar.rules) == ["root", "other"]
    body = grammar.rules["root"].body
    assert len(body.options) == 2
    group = body.options[1].items[0]
    assert isinstance(group, Alternatives) and len(group.options[0].items) == 2


def test_empty_alternatives_are_the_empty_string() -> None:
    body = gbnf.parse_ast('ws ::= | " " |\n "\\n"\nroot ::= ws').rules["ws"].body
    assert [len(option.items) for option in body.options] == [0, 1, 1]
    assert body.options[0] == Sequence((), body.options[0].position)


# --- errors, each with the position of the culprit -------------------------------------------

ERROR_CASES = [
    # (grammar, marker of the culprit in the grammar, words expected in the message)
    ('root ::= "abc\n', '"abc', "unterminated string"),
    ("root ::= [abc\n", "[abc", "unterminated character class"),
    ('root ::= "a\\qb"', "\\q", "unknown escape"),
    ('root ::= "\\x4"', "\\x4", "2 hex digits"),
    ('root ::= "\\u12G4"', "\\u12G4", "4 hex digits"),
    ('root ::= "\\U00110000"', "\\U00110000", "above U+10FFFF"),
    ('root ::= "\\uD800"', "\\uD800", "surrogate"),
    ("root ::= [z-a]", "z-a", "empty character range"),
    ("root ::= * [a]", "*", "no item before it"),
    ("root ::= ( + [a] )", "+", "no item before it"),
    ('root ::= "a"{3,2}', "{3,2}", "maximum below its minimum"),
    ('root ::= "a"{3', "", "unterminated repetition"),
    ('root ::= "a"{3\nx ::= "b"', "\nx", "unterminated repetition"),
    ('root ::= "a"{x}', "x}", "expected a number"),
    ('root "a"', '"a"', "expected `::=`"),
    ('root ::= "a"\n  "b"', '"b"', "rule continues on the next line only after"),
    ('root ::= "a" b ::= "c"', ':= "c"', "a rule must start on a new line"),
    ('root ::= ( "a"', "", "unexpected end of grammar"),
    ('root ::= "a" )', ")", "unexpected ')'"),
    ('root ::= "a" @', "@", "unexpected character '@'"),
    ('root ::= "a" missing', "missing", "undefined rule `missing`"),
    ('root ::= "a"\nroot ::= "b"', 'root ::= "b"', "duplicate rule `root` (first defined on line 1)"),
    ("# only a comment\n\n", "", "empty grammar"),
    ('other ::= "a"', 'other ::= "a"', "no start rule `root`"),
]


def culprit_position(text: str, marker: str) -> int:
    return text.rindex(marker) if marker else len(text)


@pytest.mark.parametrize(("text", "marker", "words"), ERROR_CASES)
def test_malformed_grammars_raise_source_errors_at_the_culprit(text: str, marker: str, words: str) -> None:
    with pytest.raises(SourceError) as caught:
        gbnf.parse(text)
    error = caught.value
    assert words in error.message
    expected = culprit_position(text, marker)
    if marker == ':= "c"':
        expected -= 1  # the caret sits on the first `:` of `::=`
    if words.startswith("no start rule"):
        expected = 0
    assert error.position == expected
    assert error.source == text
    assert "^" in str(error)


@pytest.mark.parametrize("reference", ["<[128000]>", "<think>", "!<[13]>", "!<|end|>"])
def test_token_references_are_unsupported_with_their_position(reference: str) -> None:
    text = f'root ::= "a" {reference} "b"'
    with pytest.raises(UnsupportedError) as caught:
        gbnf.parse(text)
    assert reference in caught.value.construct
    assert caught.value.position == text.index(reference)


RECURSIVE_CASES = [
    # (grammar, expected cycle, marker of the reference that closes it)
    ('root ::= "(" root ")" | "x"', "root -> root", 'root ")"'),
    ('root ::= root "+" "x" | "x"', "root -> root", 'root "+"'),
    (
        'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= "x" | "(" expr ")"',
        "expr -> term -> expr",
        'expr ")"',
    ),
    ('root ::= a\na ::= "a" b?\nb ::= "b" c\nc ::= a', "a -> b -> c -> a", "a"),
]


@pytest.mark.parametrize(("text", "cycle", "marker"), RECURSIVE_CASES)
def test_recursion_without_max_depth_names_the_cycle(text: str, cycle: str, marker: str) -> None:
    with pytest.raises(UnsupportedError) as caught:
        gbnf.parse(text)
    assert f"recursion {cycle}" in str(caught.value)
    assert "--max-depth" in str(caught.value)
    assert caught.value.position == text.rindex(marker)


def test_repetition_above_the_bound_is_a_limit_error_with_its_flag() -> None:
    text = 'root ::= "a"{2,500}'
    with pytest.raises(LimitError) as caught:
        gbnf.parse(text, limits=Limits(max_repeat=100))
    assert caught.value.flag == "--max-repeat" and caught.value.limit == 100
    assert "line 1, column 13" in str(caught.value)
    gbnf.parse(text, limits=Limits(max_repeat=500))


def test_negative_depth_is_rejected() -> None:
    with pytest.raises(ValueError):
        gbnf.parse('root ::= "(" root ")" | "x"', max_depth=-1)


def test_notes_and_warnings_describe_what_was_built() -> None:
    text = 'root ::= "(" inner ")" | "x"\ninner ::= root\nunused ::= "u"'
    result = gbnf.parse(text, max_depth=2)
    assert result.notes["start"] == "root"
    assert result.notes["rules"] == 3
    assert result.notes["recursive_rules"] == ["root", "inner"]
    assert result.notes["max_depth"] == 2
    assert result.notes["depth_exhausted"] is True
    assert any("`unused` (line 3)" in warning for warning in result.warnings)
    plain = gbnf.parse('root ::= "a"', max_depth=4)
    assert plain.notes["recursive_rules"] == [] and plain.notes["max_depth"] is None


def test_start_rule_can_be_chosen() -> None:
    text = 'root ::= "a"\nother ::= "b"+'
    assert gbnf.parse(text, start="other").notes["start"] == "other"
