"""Differential tests of the regex front end (through the minimal DFA) against Python's ``re``.

Hypothesis builds random pattern ASTs from the supported syntax and renders them as text; for each
pattern the DFA's verdict is compared with ``re.fullmatch(pattern, text, re.ASCII)`` (and, for the
python flavor of ``parse_search``, with ``re.search``) on strings drawn from the DFA, mutations of
those (characters inserted, deleted, replaced; bytes broken into invalid UTF-8) and random strings
over the pattern's alphabet. Byte strings that are not valid UTF-8 must always be rejected.
Runs derandomized, so the same examples are checked every time.
"""

from __future__ import annotations

import random
import re
import warnings
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.sample import sample
from moonmaskc.errors import SourceError
from moonmaskc.frontends.regex import parse, parse_search

# Pieces of pattern text, each paired with characters it can match (for random strings).
LITERALS = [
    ("a", "a"), ("b", "b"), ("c", "c"), ("0", "0"), ("7", "7"), (" ", " "), ("-", "-"), (",", ","),
    ("_", "_"), ("}", "}"), ("]", "]"), ("é", "é"), ("ß", "ß"), ("☃", "☃"), ("😀", "😀"), ("\n", "\n"),
    ("\\.", "."), ("\\*", "*"), ("\\\\", "\\"), ("\\n", "\n"), ("\\t", "\t"), ("\\x41", "A"),
    ("\\xe9", "é"), ("\\u00e9", "é"), ("\\u2603", "☃"), ("\\U0001F600", "😀"), ("\\0", "\0"),
    ("\\-", "-"), ("\\{", "{"), ("\\}", "}"), ("\\[", "["), ("\\]", "]"), ("\\(", "("), ("\\)", ")"),
    ("\\|", "|"), ("\\^", "^"), ("\\$", "$"), ("\\?", "?"), ("\\+", "+"), ("\\/", "/"), ("\\r", "\r"),
]  # fmt: skip
SETS = [
    (".", "a\nx\r"), ("\\d", "05"), ("\\D", "a5"), ("\\w", "aZ_9"), ("\\W", " !é"), ("\\s", " \t\n\x0b"),
    ("\\S", "a \xa0"),
]  # fmt: skip
CLASS_ITEMS = [
    ("a", "a"), ("b", "b"), ("z", "z"), ("0", "0"), (" ", " "), ("_", "_"), (".", "."), ("*", "*"),
    ("é", "é"), ("☃", "☃"), ("😀", "😀"), ("a-c", "abcd"), ("0-9", "09"), ("à-ÿ", "àéÿß"),
    ("α-ω", "αω"), ("\\x00-\\x1f", "\x00\x1f "), ("😀-😂", "😁😃"), ("\\d", "5"), ("\\w", "w"),
    ("\\s", "\t"), ("\\D", "x"), ("\\W", "!"), ("\\S", "s"), ("\\n", "\n"), ("\\t", "\t"), ("\\-", "-"),
    ("\\]", "]"), ("\\\\", "\\"), ("\\^", "^"), ("\\x41", "A"), ("\\u00e9", "é"), ("\\b", "\b"),
    ("--/", "-./"), ("$", "$"), ("(", "("), ("?", "?"),
]  # fmt: skip
QUANTIFIERS = ["*", "+", "?", "{0}", "{1}", "{2}", "{0,}", "{1,}", "{2,}", "{0,1}", "{0,2}", "{1,3}"]
EXTRA_CHARS = "ab\nZ é😀!"


@dataclass(frozen=True)
class Pattern:
    text: str
    alphabet: str


@st.composite
def atoms(draw: st.DrawFn) -> Pattern:
    kind = draw(st.sampled_from(["literal", "literal", "set", "class"]))
    if kind == "literal":
        text, chars = draw(st.sampled_from(LITERALS))
        return Pattern(text, chars)
    if kind == "set":
        text, chars = draw(st.sampled_from(SETS))
        return Pattern(text, chars)
    items = draw(st.lists(st.sampled_from(CLASS_ITEMS), min_size=1, max_size=4))
    negated = draw(st.booleans())
    body = "".join(text for text, _ in items)
    return Pattern(("[^" if negated else "[") + body + "]", "".join(chars for _, chars in items) + "!")


def combine(children: st.SearchStrategy[Pattern]) -> st.SearchStrategy[Pattern]:
    def concat(parts: list[Pattern]) -> Pattern:
        return Pattern("".join(p.text for p in parts), "".join(p.alphabet for p in parts))

    def alternation(parts: list[Pattern]) -> Pattern:
        return Pattern("|".join(p.text for p in parts), "".join(p.alphabet for p in parts))

    @st.composite
    def group(draw: st.DrawFn) -> Pattern:
        inner = draw(children)
        opener = draw(st.sampled_from(["(", "(?:", "(?P<g>"]))
        return Pattern(opener + inner.text + ")", inner.alphabet)

    @st.composite
    def quantified(draw: st.DrawFn) -> Pattern:
        inner = draw(st.one_of(atoms(), group()))
        quantifier = draw(st.sampled_from(QUANTIFIERS)) + draw(st.sampled_from(["", "", "?"]))
        return Pattern(inner.text + quantifier, inner.alphabet)

    return st.one_of(
        st.lists(children, min_size=0, max_size=3).map(concat),
        st.lists(children, min_size=2, max_size=3).map(alternation),
        group(),
        quantified(),
    )


def number_groups(text: str) -> str:
    """Give every named group a distinct name (g1, g2, ...)."""
    counter = iter(range(1, 1_000_000))
    return re.sub(r"\(\?P<g>", lambda _: f"(?P<g{next(counter)}>", text)


@st.composite
def patterns(draw: st.DrawFn) -> Pattern:
    body = draw(st.recursive(atoms(), combine, max_leaves=8))
    start = draw(st.sampled_from(["", "", "", "^"]))
    end = draw(st.sampled_from(["", "", "", "$"]))
    return Pattern(number_groups(start + body.text + end), body.alphabet + EXTRA_CHARS)


def mutate(text: str, alphabet: str, rng: random.Random) -> str:
    chars = list(text)
    action = rng.choice(["insert", "delete", "replace"]) if chars else "insert"
    position = rng.randrange(len(chars) + (1 if action == "insert" else 0))
    if action == "insert":
        chars.insert(position, rng.choice(alphabet))
    elif action == "delete":
        del chars[position]
    else:
        chars[position] = rng.choice(alphabet)
    return "".join(chars)


def break_utf8(data: bytes, rng: random.Random) -> bytes:
    """A byte string that is not valid UTF-8, near ``data``."""
    choice = rng.randrange(4)
    position = rng.randrange(len(data) + 1)
    if choice == 0:
        return data[:position] + b"\xff" + data[position:]
    if choice == 1:
        return data[:position] + b"\xed\xa0\x80" + data[position:]  # a surrogate
    if choice == 2:
        return data[:position] + b"\xc3" + data[position:]  # a lead byte without its tail
    return data[:position] + b"\x80" + data[position:]


def candidate_strings(dfa: DFA, alphabet: str, rng: random.Random, count: int) -> list[bytes]:
    samples: list[bytes] = []
    for _ in range(count // 3):
        drawn = sample(dfa, rng, max_len=10)
        if drawn is not None:
            samples.append(drawn)
    out = list(samples)
    for drawn in samples:
        out.append(mutate(drawn.decode("utf-8"), alphabet, rng).encode())
    while len(out) < count - 3:
        length = rng.randrange(8)
        out.append("".join(rng.choice(alphabet) for _ in range(length)).encode())
    base = samples[0] if samples else b"a"
    out.extend(break_utf8(base, rng) for _ in range(3))
    return out


def python_verdict(compiled: re.Pattern[str], data: bytes, search: bool) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    found = compiled.search(text) if search else compiled.fullmatch(text)
    return found is not None


class Counter:
    pairs = 0


def compile_python(pattern: str) -> re.Pattern[str] | None:
    """Python's compiled pattern, or None when Python rejects it (then ours must reject it too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(pattern, re.ASCII)
        except re.error:
            return None


@settings(
    max_examples=320,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(patterns(), st.integers(0, 2**32 - 1))
def check_fullmatch(pattern: Pattern, seed: int) -> None:
    compiled = compile_python(pattern.text)
    if compiled is None:
        with pytest.raises(SourceError):
            parse(pattern.text)
        return
    dfa = compile_ir(parse(pattern.text).node)
    rng = random.Random(seed)
    for data in candidate_strings(dfa, pattern.alphabet, rng, 36):
        assert dfa.accepts(data) == python_verdict(compiled, data, search=False), (pattern.text, data)
        Counter.pairs += 1


def test_fullmatch_agrees_with_python_re_on_random_patterns() -> None:
    Counter.pairs = 0
    check_fullmatch()
    assert Counter.pairs >= 10_000, Counter.pairs


@settings(
    max_examples=80,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(patterns(), st.integers(0, 2**32 - 1))
def check_search(pattern: Pattern, seed: int) -> None:
    search_agrees_with_python(pattern, seed)


def search_agrees_with_python(pattern: Pattern, seed: int) -> None:
    """``parse_search``'s DFA against ``re.search`` on strings near the pattern's language."""
    compiled = compile_python(pattern.text)
    if compiled is None:
        with pytest.raises(SourceError):
            parse_search(pattern.text, flavor="python")
        return
    dfa = compile_ir(parse_search(pattern.text, flavor="python"))
    rng = random.Random(seed)
    for data in candidate_strings(dfa, pattern.alphabet, rng, 24):
        assert dfa.accepts(data) == python_verdict(compiled, data, search=True), (pattern.text, data)
        Counter.pairs += 1


def test_search_agrees_with_python_re_search_on_random_patterns() -> None:
    Counter.pairs = 0
    check_search()
    assert Counter.pairs >= 1_500, Counter.pairs


@st.composite
def anchored_alternations(draw: st.DrawFn) -> Pattern:
    """Top-level alternatives, each with its own ``^`` and ``$`` or none."""
    branches = draw(st.lists(patterns(), min_size=2, max_size=4))
    return Pattern(
        number_groups("|".join(branch.text for branch in branches)),
        "".join(branch.alphabet for branch in branches),
    )


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(anchored_alternations(), st.integers(0, 2**32 - 1))
def check_search_alternations(pattern: Pattern, seed: int) -> None:
    search_agrees_with_python(pattern, seed)


def test_search_with_anchors_per_alternative_agrees_with_python_re_search() -> None:
    """Alternatives anchored alike are searched together (one ``.*`` around their alternation):
    mixed anchors over two to four alternatives still give re.search's verdicts."""
    Counter.pairs = 0
    check_search_alternations()
    assert Counter.pairs >= 1_000, Counter.pairs
