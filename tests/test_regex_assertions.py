"""Zero-width assertions anywhere (``frontends/regex/markers.py``, ``conditions.py``,
``erasure.py``): ``\\b``, ``\\B``, ``^``, ``$``, ``(?=X)`` and ``(?!X)`` under repetitions, in
groups, nested, at the ends, against Python's ``re`` (with ``re.ASCII``: ``\\d \\w \\b`` are ASCII
in both flavors). Full match (``parse``) against ``re.fullmatch`` and search (``parse_search``)
against ``re.search``, on every short text over a small alphabet and on random ones; the ecma
flavor against a Python translation of the pattern (``$`` as ``\\Z``, ``.`` as ECMAScript's).
Also: the two JSONSchemaBench schemas that needed this, the bounds, and what stays refused."""

from __future__ import annotations

import itertools
import json
import random
import re
import sys
import warnings

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.sample import sample
from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends.regex import parse, parse_search
from moonmaskc.limits import Limits
from tests.conftest import data_path

ECMA_DOT = "[^\\n\\r\\u2028\\u2029]"


def ecma_in_python(pattern: str) -> str:
    """``pattern`` (ECMAScript flavor) as a Python pattern with the same meaning: ``$`` is the
    end of the text alone (``\\Z``) and ``.`` excludes every line terminator. Escapes and classes
    are copied as they stand."""
    out: list[str] = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("^", index + 1):
                out.append("[^")
                index += 2
                continue
        elif char == "$":
            char = "\\Z"
        elif char == ".":
            char = ECMA_DOT
        out.append(char)
        index += 1
    return "".join(out)


def python_oracle(pattern: str, flavor: str) -> re.Pattern[str] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(pattern if flavor == "python" else ecma_in_python(pattern), re.ASCII)
        except re.error:
            return None


def quirk(pattern: str, text: str) -> bool:
    """Before Python 3.14, ``\\B`` never matches in an empty text; in ECMAScript (and here, and in
    Python 3.14) it does: the start and the end of the text both count as non-word."""
    return text == "" and "\\B" in pattern and sys.version_info < (3, 14)


def assert_agrees(pattern: str, texts: list[str], flavor: str) -> None:
    oracle = python_oracle(pattern, flavor)
    assert oracle is not None, pattern
    searched = compile_ir(parse_search(pattern, flavor=flavor))
    matched = compile_ir(parse(pattern, flavor=flavor).node)
    for text in texts:
        if quirk(pattern, text):
            continue
        data = text.encode()
        assert searched.accepts(data) == (oracle.search(text) is not None), (pattern, flavor, text)
        assert matched.accepts(data) == (oracle.fullmatch(text) is not None), (pattern, flavor, text)


def every_text(alphabet: str, longest: int) -> list[str]:
    sizes = range(longest + 1)
    return ["".join(chars) for size in sizes for chars in itertools.product(alphabet, repeat=size)]


SHORT_TEXTS = every_text("ab -", 4)
WORD_TEXTS = [*SHORT_TEXTS, "word", "a word", "word!", "swordfish", "words", "mode", "amodeb", "Mode", "é a"]

HAND_WRITTEN = [
    # the tempered dot (JSONSchemaBench o5983)
    "^((?!mode).)*$",
    "^((?!mode)(?!Mode).)*$",
    "^((?!ab)[ab -])+$",
    # word boundaries (JSONSchemaBench dein.json has one inside a URL pattern)
    "\\bword\\b",
    "\\b",
    "\\B",
    "a\\b",
    "\\ba",
    "\\Ba\\B",
    "\\b\\w+\\b",
    "(?:\\b[ab]+\\b ?)+",
    "a\\B-",
    "(?:a|\\b)+b",
    "(?:\\b)*a",
    "-\\b-",
    # lookaheads under *, +, {2,3}, ?
    "(?:(?=a)[ab])*",
    "^(?:(?=a)[ab])*$",
    "(?:(?!ab)[ab])+$",
    "^(?:(?=ab?)..){2,3}$",
    "((?=a)|b)*a",
    "(?=a)*a",
    "(?:(?!a)(?=[ab]).){2}",
    "^(?:(?!b$).)*$",
    # nested groups and nested assertions
    "((?:(?!b)a|b(?=a))+)",
    "(?=a(?!b))",
    "(?=(?=a)\\w)..",
    "(?!(?!a)b)-",
    "(?:a(?=\\b)|-(?=\\B))+",
    "(?=\\ba)",
    ".(?!\\B)",
    "(?=^a)a",
    "b(?=^a)",
    "(?!a|b$)..",
    # at the start and at the end
    "(?=a)",
    "(?!a)$",
    "^\\b",
    "\\b$",
    "a(?=$)",
    "(?!$)",
    "^(?!$)",
    "$(?=)",
    # ^ and $ anywhere
    "(^a|b)*a",
    "a^b",
    "(?:^|-)a",
    "a(?:$|-)",
    "(?:a$)+",
    "(?:^a)+b",
    "(?:(?:^|b)a)+$",
]


@pytest.mark.parametrize("pattern", HAND_WRITTEN)
@pytest.mark.parametrize("flavor", ["python", "ecma"])
def test_hand_written_patterns_agree_with_re(pattern: str, flavor: str) -> None:
    assert_agrees(pattern, WORD_TEXTS, flavor)


@pytest.mark.parametrize("pattern", ["a$", "a$\\n", "(?:a$|b)+", "a(?=$)", "(?!a$).$", "^$", "a\\b$"])
def test_python_dollar_before_a_final_newline(pattern: str) -> None:
    """The python flavor's ``$`` also holds before one final ``\\n`` (the ecma one does not)."""
    texts = every_text("ab\n", 4)
    assert_agrees(pattern, texts, "python")
    assert_agrees(pattern, texts, "ecma")


def test_the_tempered_dot_and_the_word_boundary_by_hand() -> None:
    tempered = compile_ir(parse_search("^((?!mode)(?!Mode).)*$"))
    assert tempered.accepts(b"spot") and tempered.accepts(b"mod e") and tempered.accepts(b"")
    assert not tempered.accepts(b"mode") and not tempered.accepts(b"a Mode b")
    assert not tempered.accepts(b"line\nbreak")  # '.' does not match a newline
    word = compile_ir(parse_search("\\bcat\\b"))
    assert word.accepts(b"a cat!") and word.accepts(b"cat") and word.accepts("é cat".encode())
    assert not word.accepts(b"concat") and not word.accepts(b"cats") and not word.accepts(b"cat_")


# -- random patterns ---------------------------------------------------------------------------

ATOMS = st.sampled_from(["a", "b", "-", "[ab]", ".", "a*", "b?", "\\w", "\\W", "ab"])
ASSERTIONS = st.sampled_from(["\\b", "\\B", "^", "$"])
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "{2,3}", "{0,2}", "{2}", "*?"])


@st.composite
def sequence(draw: st.DrawFn, depth: int) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 4 if depth > 0 else 1))
        if kind == 0:
            parts.append(draw(ATOMS))
        elif kind == 1:
            parts.append(draw(ASSERTIONS))
        elif kind in (2, 3):  # a lookahead, maybe under a quantifier
            opener = draw(st.sampled_from(["(?=", "(?!"]))
            parts.append(f"{opener}{draw(sequence(depth - 1))}){draw(QUANTIFIERS)}")
        else:  # a group of alternatives, maybe under a quantifier
            alternatives = draw(st.lists(sequence(depth - 1), min_size=1, max_size=2))
            parts.append(f"(?:{'|'.join(alternatives)}){draw(QUANTIFIERS)}")
    return "".join(parts)


PATTERNS = st.lists(sequence(2), min_size=1, max_size=2).map("|".join)
ENUMERATED = every_text("ab-", 3)


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    PATTERNS,
    st.sampled_from(["python", "ecma"]),
    st.lists(st.text(alphabet="ab -\né", max_size=7), min_size=1, max_size=8),
)
def test_random_patterns_with_assertions_agree_with_re(pattern: str, flavor: str, texts: list[str]) -> None:
    """Assertions under repetitions, in lookaheads, in alternatives: search and full match on
    every text of up to three characters and on random texts (newlines and é included)."""
    assume(python_oracle(pattern, flavor) is not None)
    assert_agrees(pattern, ENUMERATED + texts, flavor)


# -- the JSONSchemaBench schemas that needed this ------------------------------------------------

SCHEMAS = [
    ("Github_hard/o5983.json", "^((?!mode)(?!Mode).)*$"),
    (
        "JsonSchemaStore/dein.json",
        "^https?:\\/\\/(www\\.)?[-a-zA-Z0-9@:%._\\+~#=]{1,256}\\.[a-zA-Z0-9()]{1,6}\\b"
        "([-a-zA-Z0-9()@:%_\\+.~#?&//=]*)$",
    ),
]


def _patterns(value: object) -> list[str]:
    if isinstance(value, dict):
        found = [value["pattern"]] if isinstance(value.get("pattern"), str) else []
        return found + [item for child in value.values() for item in _patterns(child)]
    if isinstance(value, list):
        return [item for child in value for item in _patterns(child)]
    return []


def _near(dfa: DFA, rng: random.Random, alphabet: str, count: int) -> list[str]:
    """Accepted texts of ``dfa`` and mutations of them (a character changed, inserted, removed)."""
    texts = []
    for _ in range(count):
        found = sample(dfa, rng, max_len=40)
        assert found is not None
        text = found.decode()
        texts.append(text)
        at = rng.randrange(len(text) + 1)
        char = rng.choice(alphabet)
        texts += [text[:at] + char + text[at + 1 :], text[:at] + char + text[at:], text[:at] + text[at + 1 :]]
    return texts


@pytest.mark.parametrize(("name", "pattern"), SCHEMAS)
def test_the_schemas_compile_and_their_patterns_agree_with_re(name: str, pattern: str) -> None:
    text = data_path("schemas", "jsonschemabench", *name.split("/")).read_text()
    assert pattern in _patterns(json.loads(text))
    moonmaskc.compile_schema(text, tokenizer=None)
    dfa = compile_ir(parse_search(pattern))
    oracle = python_oracle(pattern, "ecma")
    assert oracle is not None
    rng = random.Random(5983)
    texts = _near(dfa, rng, "aemoMd.:/-_ \n", 300)
    texts += ["".join(rng.choice("aemodM:/.w -_") for _ in range(rng.randrange(12))) for _ in range(300)]
    texts += ["http://a.bc", "https://www.example.com/path", "http://a.b_", "http://ab.c-d", "http://a.b.c"]
    for item in texts:
        assert dfa.accepts(item.encode()) == (oracle.search(item) is not None), (pattern, item)


# -- bounds and refusals -------------------------------------------------------------------------


def test_the_work_is_bounded_by_max_states() -> None:
    pattern = "^(?:(?=[ab]*c)[abc])*(?:(?![ab]{0,6}c)[abc]){0,12}$"
    assert compile_ir(parse_search(pattern)).num_states > 8
    with pytest.raises(LimitError) as caught:
        compile_ir(parse_search(pattern, Limits(max_states=8)))
    assert caught.value.bound == "max_states" and caught.value.flag == "--max-states"


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        ("(?<=a)b", "lookbehind '(?<='"),
        ("(?:(?<!a)b)*", "lookbehind '(?<!'"),
        ("(?=(?<=a)b)", "lookbehind"),
        ("\\b(a)\\1", "backreference \\1"),
        ("(?=a)\\Aa", "anchor \\A"),
        ("\\bZ\\Z", "anchor \\Z"),
        ("[\\B]", "escape \\B inside a class"),
        ("(?!x)(?>a)", "atomic group"),
    ],
)
def test_what_is_still_refused_is_named(pattern: str, construct: str) -> None:
    for flavor in ("python", "ecma"):
        with pytest.raises(UnsupportedError, match=re.escape(construct)):
            parse_search(pattern, flavor=flavor)


@pytest.mark.parametrize("pattern", ["\\b*", "a\\B+", "\\b{2}", "x\\b?"])
def test_a_quantified_word_boundary_is_a_syntax_error(pattern: str) -> None:
    """Python and ECMAScript both reject it ('nothing to repeat'); a group may take one."""
    with pytest.raises(re.error):
        re.compile(pattern)
    with pytest.raises(SourceError, match="nothing to repeat"):
        parse(pattern)


def test_too_many_distinct_assertions_are_refused_by_name() -> None:
    pattern = "".join(f"(?!{index:03d})" for index in range(257))
    with pytest.raises(UnsupportedError, match="at most 256 distinct assertions"):
        parse_search(pattern)


def test_assertions_outside_repetitions_are_products_not_erasure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookaheads and ``$`` in the top-level sequence (and a ``^`` at the start) are applied by DFA
    products (``folding``), as before markers: a password rule of counted lookaheads makes 35,265
    states, which the erasure would follow one configuration at a time."""
    import moonmaskc.frontends.regex.conditions as conditions

    def refuse(*args: object) -> DFA:
        raise AssertionError("erased")

    monkeypatch.setattr(conditions, "erase_markers", refuse)
    pattern = "^(?=(?:.*\\d){3})(?=(?:.*[a-z]){3})(?=(?:.*[A-Z]){3}).{12,64}$"
    dfa = compile_ir(parse_search(pattern))
    assert dfa.num_states == 35_265
    assert dfa.accepts(b"abcABC123xyz") and not dfa.accepts(b"abcABC12xyzw")
    compile_ir(parse("(?!a)[ab](?=b)$|^c", flavor="ecma").node)
    with pytest.raises(AssertionError, match="erased"):
        parse_search("(?:(?!a).)*")


def test_the_erasure_itself_stops_at_max_states() -> None:
    """The subset construction over configurations counts its states before minimising: here
    pending lookaheads at five distances make many subsets of a language that minimises to
    ``[ab]*`` (the other alternative reads every ``a`` too)."""
    pattern = "(?:a(?=[ab]{5}b)|[ab])*"
    assert compile_ir(parse(pattern, flavor="ecma").node).num_states == 2
    with pytest.raises(LimitError, match="the DFA needs more than 16 states") as caught:
        parse(pattern, Limits(max_states=16), flavor="ecma")
    assert caught.value.bound == "max_states"
    assert caught.traceback[-1].path.name == "erasure.py"
