"""The regex front end, feature by feature, against Python's ``re`` (with ``re.ASCII``) as oracle.

Every language check compiles the IR to a minimal DFA (``moonmaskc.automata.build.compile_ir``) and compares
its verdict with ``re.fullmatch`` / ``re.search`` on candidate strings; errors are checked for
their class, the construct they name and the position of the caret.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections import deque
from pathlib import Path

import pytest

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.sample import sample
from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends.regex import parse, parse_search
from moonmaskc.limits import Limits

INVALID_UTF8 = [
    b"\xff",
    b"\x80",
    b"\xc3",  # truncated two-byte character
    b"\xc0\x80",  # overlong NUL
    b"\xe0\x80\xaf",  # overlong '/'
    b"\xed\xa0\x80",  # surrogate U+D800
    b"\xed\xbf\xbf",  # surrogate U+DFFF
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\xf8\x88\x80\x80\x80",
]

# One character of each interesting kind: all of ASCII, Latin-1, other planes, Unicode spaces.
CANDIDATE_CHARS = (
    [chr(c) for c in range(0x80)]
    + [chr(c) for c in range(0x80, 0x180)]
    + ["\u0391", "\u03c9", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u3000", "\ufeff"]
    + ["\u2603", "\ud7ff", "\ue000", "\uffff", "\U0001f600", "\U0001f602", "\U0010ffff"]
)


def full_dfa(pattern: str, flavor: str = "python") -> DFA:
    return compile_ir(parse(pattern, flavor=flavor).node)


def search_dfa(pattern: str, flavor: str = "ecma") -> DFA:
    return compile_ir(parse_search(pattern, flavor=flavor))


def assert_fullmatch_agrees(pattern: str, texts: list[str]) -> None:
    dfa = full_dfa(pattern)
    for text in texts:
        expected = re.fullmatch(pattern, text, re.ASCII) is not None
        assert dfa.accepts(text.encode("utf-8")) == expected, (pattern, text)


def equivalent(a: DFA, b: DFA) -> bool:
    """Whether two DFAs accept the same byte language (breadth-first walk of the product)."""
    seen = {(a.start, b.start)}
    queue = deque(seen)
    while queue:
        left, right = queue.popleft()
        if bool(a.accepting[left]) != bool(b.accepting[right]):
            return False
        for byte in range(256):
            pair = (a.step(left, byte), b.step(right, byte))
            if pair not in seen:
                seen.add(pair)
                queue.append(pair)
    return True


# ---------------------------------------------------------------------------------------------
# Escapes, shorthands, dot
# ---------------------------------------------------------------------------------------------

ESCAPES = [
    "\\n", "\\r", "\\t", "\\f", "\\v", "\\0", "\\x41", "\\x7f", "\\xe9", "\\u00e9", "\\u2603",
    "\\U0001F600", "\\\\", "\\.", "\\*", "\\+", "\\?", "\\(", "\\)", "\\[", "\\]", "\\{", "\\}",
    "\\|", "\\^", "\\$", "\\-", "\\/", "\\ ", "\\#", "\\é",
]  # fmt: skip


@pytest.mark.parametrize("escape", ESCAPES)
def test_each_escape_means_exactly_one_character(escape: str) -> None:
    (expected,) = {c for c in CANDIDATE_CHARS if re.fullmatch(escape, c)}
    dfa = full_dfa(escape)
    assert dfa.accepts(expected.encode())
    assert_fullmatch_agrees(escape, [*CANDIDATE_CHARS, "", expected * 2])


@pytest.mark.parametrize("pattern", ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", ".", "[\\d\\s]", "[^\\W]"])
def test_shorthands_and_dot_have_ascii_meaning(pattern: str) -> None:
    assert_fullmatch_agrees(pattern, [*CANDIDATE_CHARS, "", "ab", "\n\n"])


@pytest.mark.parametrize("pattern", [".", "\\D", "\\W", "\\S", "[^a]", "[^\\x00-\\x7f]", ".*", "[^é]+"])
@pytest.mark.parametrize("flavor", ["python", "ecma"])
def test_negated_sets_never_accept_invalid_utf8(pattern: str, flavor: str) -> None:
    dfa = full_dfa(pattern, flavor)
    for data in INVALID_UTF8:
        assert not dfa.accepts(data), (pattern, data)
        assert not dfa.accepts(b"x" + data), (pattern, data)
    for valid in ("€", "😀", "\U0010ffff", "\ud7ff"):
        assert dfa.accepts(valid.encode()), (pattern, valid)


def test_unicode_escape_above_bmp_and_out_of_range() -> None:
    assert full_dfa("\\U0010FFFF").accepts("\U0010ffff".encode())
    with pytest.raises(SourceError, match="above U\\+10FFFF"):
        parse("\\U00110000")


# ---------------------------------------------------------------------------------------------
# Classes
# ---------------------------------------------------------------------------------------------

CLASSES = [
    "[abc]", "[a-c]", "[^a-c]", "[a-]", "[-a]", "[--/]", "[a-c-e]", "[a\\-z]", "[\\d\\s]", "[^\\d\\s]",
    "[\\w.]", "[\\b]", "[é-ü]", "[^é]", "[α-ω0-9]", "[😀-😂]", "[\\x00-\\x1f]", "[\\u0100-\\uffff]",
    "[^\\u0000-\\u007f]", "[\\]\\\\]", "[.*+?(){}|$^]", "[a^]", "[\\^a]", "[\\n\\t\\r\\f\\v\\0]",
    "[\\D]", "[^\\D]", "[\\S\\s]", "[^\\S\\s]", "[\\x41-\\x5a]", "[\\u00e0-\\u00ff]",
]  # fmt: skip


@pytest.mark.parametrize("pattern", CLASSES)
def test_class_features_agree_with_python(pattern: str) -> None:
    assert_fullmatch_agrees(pattern, [*CANDIDATE_CHARS, "", "-", "ab", "^", "]", "\\"])


def test_class_of_non_ascii_range_is_exact_utf8() -> None:
    dfa = full_dfa("[é-ü]")
    assert dfa.accepts("é".encode()) and dfa.accepts("ü".encode()) and dfa.accepts("ñ".encode())
    assert not dfa.accepts("è".encode()) and not dfa.accepts("ý".encode())
    assert not dfa.accepts(b"\xc3") and not dfa.accepts(b"\xe9")  # latin-1 é is not UTF-8


# ---------------------------------------------------------------------------------------------
# Quantifiers, alternation, groups, anchors
# ---------------------------------------------------------------------------------------------

QUANTIFIERS = ["*", "+", "?", "{3}", "{2,}", "{2,4}", "{0}", "{0,0}", "{0,1}", "{1,}", "{0,}"]


@pytest.mark.parametrize("quantifier", QUANTIFIERS)
def test_quantifiers_and_their_lazy_forms(quantifier: str) -> None:
    texts = ["a" * n for n in range(7)] + ["b", "ab", "ba", "abab", "abb"]
    for template in ("a{}", "(?:ab){}", "x[ab]{}y"):
        pattern, lazy = template.format(quantifier), template.format(quantifier + "?")
        assert_fullmatch_agrees(pattern, texts + ["x" + t + "y" for t in texts])
        assert_fullmatch_agrees(lazy, texts + ["x" + t + "y" for t in texts])
        assert equivalent(full_dfa(pattern), full_dfa(lazy))


@pytest.mark.parametrize(
    "pattern", ["a|", "|a", "(|b)c", "a||b", "()", "(?:)", "", "(a|)+", "(?:|x|y)*z", "a(|b|)c"]
)
def test_empty_alternation_branches(pattern: str) -> None:
    assert_fullmatch_agrees(pattern, ["", "a", "b", "c", "bc", "ac", "abc", "z", "xz", "yxz", "aa", "abb"])


def test_named_groups_are_plain_groups_and_recorded() -> None:
    pattern = "(?P<year>\\d{4})-(?P<month>\\d\\d)"
    result = parse(pattern)
    assert result.notes["named_groups"] == ["year", "month"]
    assert_fullmatch_agrees(pattern, ["2024-05", "2024-5", "24-05", "2024-055", "abcd-ef"])
    ecma_style = parse("(?<year>\\d{4})")
    assert ecma_style.notes["named_groups"] == ["year"]
    assert equivalent(compile_ir(ecma_style.node), full_dfa("\\d{4}"))


@pytest.mark.parametrize("pattern", ["héllo", "日本語+", "😀{2}", "(ça|ö)*", "Ω?x"])
def test_non_ascii_literals(pattern: str) -> None:
    texts = ["héllo", "hello", "日本語", "日本語語語", "日本", "😀", "😀😀", "çaöça", "ö", "x", "Ωx", ""]
    assert_fullmatch_agrees(pattern, texts)


@pytest.mark.parametrize("pattern", ["^abc$", "^a|b$", "^", "$", "^$", "^(?:a|b)+$", "a$|^b|^c$"])
def test_anchors_at_the_ends_are_no_ops_for_full_match(pattern: str) -> None:
    assert_fullmatch_agrees(pattern, ["", "a", "b", "c", "abc", "ab", "ba", "a\n", "abc\n"])


def test_limits_bound_counted_repetition() -> None:
    limits = Limits(max_repeat=10)
    assert full_dfa("a{10}").accepts(b"a" * 10)
    parse("a{0,10}", limits)
    with pytest.raises(LimitError) as caught:
        parse("a{0,11}", limits)
    assert caught.value.bound == "max_repeat" and caught.value.flag == "--max-repeat"
    assert "--max-repeat" in str(caught.value) and "{0,11}" in str(caught.value)
    with pytest.raises(LimitError):
        parse("(?:ab){12,}", limits)


@pytest.mark.parametrize(
    "pattern", ["\\x41*b", "a\\x41{2}", "[ab]c+d", "x\\d?\\.y", "\\12*", "\\u0041{2}\\x42", ".[a]*."]
)
def test_quantifier_binds_to_the_last_atom_of_a_run(pattern: str) -> None:
    """Runs of unquantified atoms are one token; the atom a quantifier follows stays out of it,
    and an escape is never cut short to let a run end earlier (``\\x41*`` is ``A*``)."""
    if pattern == "\\12*":
        with pytest.raises(UnsupportedError, match="backreference \\\\12"):
            parse(pattern)
        return
    alphabet = "ABabcdxy1."
    texts = [""]
    for _ in range(4):
        texts += [text + char for text in texts if len(text) == len(texts[-1]) for char in alphabet]
    assert_fullmatch_agrees(pattern, texts)


@pytest.mark.parametrize("pattern", ["[a-z]{1,2000}", "(ab|cd){0,500}"])
def test_large_counted_repetitions_compile_fast(pattern: str) -> None:
    began = time.perf_counter()
    dfa = full_dfa(pattern)
    elapsed = time.perf_counter() - began
    assert elapsed < 0.75, elapsed
    unit = "q" if pattern.startswith("[") else "cd"
    count = 2000 if pattern.startswith("[") else 500
    assert dfa.accepts(unit.encode() * count) and not dfa.accepts(unit.encode() * (count + 1))


def test_unknown_flavor_is_rejected() -> None:
    with pytest.raises(ValueError, match="flavor"):
        parse("a", flavor="perl")


# ---------------------------------------------------------------------------------------------
# Errors: class, construct named, caret position
# ---------------------------------------------------------------------------------------------

UNSUPPORTED = [
    ("a\\1", "backreference \\1", 1),
    ("(a)(?P=x)", "backreference", 3),
    ("x\\k<n>", "named backreference", 1),
    ("(?<=a)b", "lookbehind '(?<='", 0),
    ("(?<!a)b", "lookbehind '(?<!'", 0),
    ("a(?=b(?<=c))", "lookbehind '(?<='", 5),
    ("\\bx[\\B]", "escape \\B inside a class", 4),
    ("(?i)abc", "inline flags", 0),
    ("a(?i:b)", "inline flags", 1),
    ("\\Aabc", "anchor \\A", 0),
    ("abc\\Z", "anchor \\Z", 3),
    ("a*+", "possessive quantifier", 2),
    ("a{2}+", "possessive quantifier", 4),
    ("(?>ab)", "atomic group", 0),
    ("(?#note)a", "comment group", 0),
    ("(a)(?(1)b|c)", "conditional group", 3),
    ("\\012", "octal escape", 0),
    ("[\\1]", "octal escape", 1),
    ("\\p{L}", "Unicode property escape", 0),
    ("a[\\P{Lu}]", "Unicode property escape", 2),
    ("\\N{DASH}", "named character escape", 0),
    ("ab\\ud800", "surrogate code point", 2),
    ("\\a", "escape \\a", 0),
    # inside a run of unquantified atoms (one ATOMS token): positions still point at the atom
    ("x.[ab]\\1", "backreference \\1", 6),
    ("0[1-9]\\p{L}z", "Unicode property escape", 6),
    ("ab[^\\N{DASH}]c", "named character escape", 4),
]


@pytest.mark.parametrize(("pattern", "construct", "position"), UNSUPPORTED)
def test_unsupported_constructs_are_named_with_their_position(
    pattern: str, construct: str, position: int
) -> None:
    with pytest.raises(UnsupportedError) as caught:
        parse(pattern)
    error = caught.value
    assert construct in str(error)
    assert error.position == position
    caret_line = str(error).splitlines()[-1]
    assert caret_line.index("^") - 2 == position


SYNTAX = [
    ("(ab", "missing ')'", 3),
    ("ab)", "unbalanced ')'", 2),
    ("[ab", "unterminated character class", 3),
    ("*a", "nothing to repeat", 0),
    ("a|?", "nothing to repeat", 2),
    ("a**", "follows another quantifier", 2),
    ("a\\b*", "nothing to repeat", 3),
    ("a{2}{3}", "follows another quantifier", 4),
    ("a{,3}", "'{' does not start a repetition", 1),
    ("a{x}", "'{' does not start a repetition", 1),
    ("a{3,2}", "minimum is larger than the maximum", 1),
    ("[]a]", "empty character class", 1),
    ("[^]", "empty character class", 2),
    ("[z-a]", "bad character range z-a", 1),
    ("x[\\d-z]", "bad character range", 2),
    ("ab\\", "lone backslash", 2),
    ("\\x4g", "incomplete escape \\x", 0),
    ("\\u12", "incomplete escape \\u", 0),
    ("\\q", "bad escape \\q", 0),
    ("(?P<n>a)(?P<n>b)", "group name 'n' is defined twice", 8),
    ("ab[cd][z-a]", "bad character range z-a", 7),
    ("0[1-9]\\x4g", "incomplete escape \\x", 6),
]


@pytest.mark.parametrize(("pattern", "message", "position"), SYNTAX)
def test_syntax_errors_show_a_caret(pattern: str, message: str, position: int) -> None:
    with pytest.raises(SourceError) as caught:
        parse(pattern)
    error = caught.value
    assert not isinstance(error, UnsupportedError)
    assert message in str(error)
    assert error.position == position
    assert str(error).splitlines()[-2] == "  " + pattern


# ---------------------------------------------------------------------------------------------
# parse_search: JSON Schema "pattern" semantics
# ---------------------------------------------------------------------------------------------

SEARCH_PATTERNS = [
    "abc", "^abc", "abc$", "^abc$", "^a|b$", "a|^b$", "", "^", "$", "^$", "\\d+", "^\\d{2,3}$",
    "[^a]", "a.c", "(?:ab)*", "é+$", "^\\s*$", "x?",
]  # fmt: skip
SEARCH_TEXTS = [
    "", "a", "b", "abc", "xabc", "abcx", "xabcx", "abc\n", "abc\n\n", "\nabc", "ab", "12", "123", "1234",
    "x12y", "é", "éé\n", "xé", "  ", " \n", "a\nc", "aXc", "ababab", "x", "ba", "b\n", "bb",
]  # fmt: skip


@pytest.mark.parametrize("pattern", SEARCH_PATTERNS)
def test_search_python_flavor_agrees_with_re_search(pattern: str) -> None:
    dfa = search_dfa(pattern, flavor="python")
    for text in SEARCH_TEXTS:
        expected = re.search(pattern, text, re.ASCII) is not None
        assert dfa.accepts(text.encode()) == expected, (pattern, text)
    for data in INVALID_UTF8:
        assert not dfa.accepts(data + b"abc")


def test_search_ecma_dollar_is_end_only() -> None:
    dfa = search_dfa("abc$", flavor="ecma")
    assert dfa.accepts(b"xxabc") and not dfa.accepts(b"abc\n")
    assert search_dfa("abc$", flavor="python").accepts(b"abc\n")


ECMA_SPACES = "\t\n\v\f\r \u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def test_search_ecma_whitespace_and_dot() -> None:
    space = search_dfa("^\\s$", flavor="ecma")
    for char in ECMA_SPACES:
        assert space.accepts(char.encode()), hex(ord(char))
    for char in "a\x1c\x85\u200b\u180e":
        assert not space.accepts(char.encode()), hex(ord(char))
    non_space = search_dfa("^\\S$", flavor="ecma")
    assert all(not non_space.accepts(char.encode()) for char in ECMA_SPACES)
    assert non_space.accepts("\x85".encode()) and non_space.accepts(b"a")
    dot = search_dfa("^.$", flavor="ecma")
    for char in "\n\r\u2028\u2029":
        assert not dot.accepts(char.encode())
    for char in "a\t\x85\u00a0😀":
        assert dot.accepts(char.encode())
    python_dot = search_dfa("^.$", flavor="python")
    assert python_dot.accepts(b"\r") and python_dot.accepts("\u2028".encode())
    assert not python_dot.accepts(b"\n")


def test_search_python_whitespace_is_ascii() -> None:
    space = search_dfa("^\\s$", flavor="python")
    assert all(space.accepts(c.encode()) for c in " \t\n\r\f\v")
    assert not space.accepts("\u00a0".encode()) and not space.accepts("\u3000".encode())


def test_search_unanchored_contains_match_anywhere() -> None:
    dfa = search_dfa("ab")
    assert dfa.accepts("😀ab😀".encode()) and dfa.accepts(b"\nab\n") and not dfa.accepts(b"a b")
    assert not dfa.accepts(b"ab\xff")


def test_search_ir_of_anchored_pattern_is_the_full_match_ir() -> None:
    assert parse_search("^a+b$", flavor="ecma") == parse("a+b").node
    assert ir.nullable(parse_search("a*"))


def test_search_of_many_alternatives_shares_one_prefix() -> None:
    """An unanchored alternation of words (a real schema's ``pattern``) is searched as one
    ``.*(w1|w2|...).*``: the subset construction stays near the minimal DFA. With a ``.*`` per
    word it tracked every word's copy of ``.*`` apart: 5,313 subset states for 8 words."""
    from moonmaskc.automata.determinize import determinize
    from moonmaskc.automata.thompson import build_nfa

    words = [f"INTERVAL_{suffix}" for suffix in ("TICK", "M1", "M2", "M3", "M4", "M5", "M10", "H1")]
    node = parse_search("|".join(words))
    subset_states = determinize(build_nfa(node), Limits()).num_states  # pruned, not minimised
    assert subset_states < 2 * compile_ir(node).num_states
    assert parse_search("a|^b|c$|d|^e") == ir.alt(
        ir.seq(ir.star(_any_char()), ir.alt(ir.text("a"), ir.text("d")), ir.star(_any_char())),
        ir.seq(ir.alt(ir.text("b"), ir.text("e")), ir.star(_any_char())),
        ir.seq(ir.star(_any_char()), ir.text("c")),
    )


def _any_char() -> ir.Node:
    from moonmaskc.frontends import utf8

    return utf8.any_char()


# ---------------------------------------------------------------------------------------------
# Golden IR printing (tests/golden/ir_print/regex.txt)
# ---------------------------------------------------------------------------------------------

GOLDEN = Path(__file__).parent / "golden" / "ir_print" / "regex.txt"
SEPARATOR = " ; "
REGENERATE = os.environ.get("MOONMASKC_REGEN_GOLDEN") == "1"


def golden_entries() -> list[tuple[str, str]]:
    entries = []
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or SEPARATOR not in line:
            continue
        pattern, _, printed = line.partition(SEPARATOR)
        entries.append((pattern, printed))
    return entries


def test_golden_ir_printing() -> None:
    entries = golden_entries()
    assert len(entries) >= 40
    actual = [(pattern, ir.to_regex(parse(pattern).node)) for pattern, _ in entries]
    if REGENERATE:
        header = [line for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
        body = [f"{pattern}{SEPARATOR}{printed}" for pattern, printed in actual]
        GOLDEN.write_text("\n".join(header + body) + "\n", encoding="utf-8")
        pytest.skip("golden file regenerated")
    mismatches = [(p, want, got) for (p, want), (_, got) in zip(entries, actual, strict=True) if want != got]
    assert not mismatches


def ascii_only(node: ir.Node) -> bool:
    if isinstance(node, ir.ByteSet):
        return node.mask >> 0x80 == 0 and node.mask != 0
    if isinstance(node, (ir.Seq, ir.Alt)):
        return all(ascii_only(item) for item in node.items)
    if isinstance(node, ir.Repeat):
        return ascii_only(node.item)
    return False


@pytest.mark.parametrize(("pattern", "printed"), golden_entries())
def test_printed_ir_means_the_same_language(pattern: str, printed: str) -> None:
    """The printed IR is a regex over bytes: Python's bytes ``re`` agrees with the DFA on it, and
    for IR over ASCII bytes, parsing the printed text gives back the same language."""
    node = parse(pattern).node
    dfa = compile_ir(node)
    as_bytes = re.compile(printed.encode("ascii"))
    rng = random.Random(pattern)
    probes = [sample(dfa, rng, max_len=12) or b"" for _ in range(30)]
    probes += [p[:-1] for p in probes] + [p + b"a" for p in probes] + INVALID_UTF8
    for data in probes:
        assert dfa.accepts(data) == (as_bytes.fullmatch(data) is not None), (pattern, data)
    if ascii_only(node):
        assert equivalent(dfa, full_dfa(printed))


def test_absurdly_deep_nesting_is_a_clear_error() -> None:
    assert full_dfa("(" * 150 + "a" + ")" * 150).accepts(b"a")
    deep = "(?:a|" * 3000 + "b" + ")*" * 3000
    with pytest.raises(LimitError, match=r"max_nesting = 1000.*--max-nesting"):
        parse(deep)
