"""``format``: json-pointer, relative-json-pointer, uri-template, iri, iri-reference (and uri,
uri-reference, built from the same RFC 3986 pieces) against independent oracles.

Oracles: Python ``re`` patterns written here from the ABNF of RFC 6901,
draft-handrews-relative-json-pointer-01, RFC 6570 (with its verified erratum 6937: the apostrophe
is a literal), RFC 3987 and RFC 3986, sharing nothing with the IR. jsonschema's own checkers are no
oracle for these: its relative-json-pointer checker rejects ``100`` (valid, in the suite), the
``uri_template`` package rejects prefixes of 1000 or more (``{v:1000}``, valid, in the suite) and
``rfc3987_syntax`` rejects valid ``ucschar`` such as U+52CD1 or U+0335.

Every language is checked on canonical JSON string bodies (``format_string_dfa``): the value's
content escaped as canonical JSON writes it, so ``"``, ``\\`` and control characters inside a JSON
pointer are checked through their escapes.
"""

from __future__ import annotations

import json
import random
import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import difference
from moonmaskc.automata.sample import sample
from moonmaskc.frontends.schema.canonical import STRING_BODY, escape_text
from moonmaskc.frontends.schema.formats import format_string_dfa
from moonmaskc.limits import Limits
from tests.conftest import data_path

NEW_FORMATS = ("json-pointer", "relative-json-pointer", "uri-template", "iri", "iri-reference")

# ---------------------------------------------------------------------------------------------
# Oracles: the ABNF transcribed into Python regular expressions
# ---------------------------------------------------------------------------------------------

# RFC 6901 section 3: unescaped = %x00-2E / %x30-7D / %x7F-10FFFF; escaped = "~" ( "0" / "1" )
_POINTER = r"(?:/(?:[^/~]|~[01])*)*"
# draft-handrews-relative-json-pointer-01 section 3
_RELATIVE = rf"(?:0|[1-9][0-9]*)(?:#|{_POINTER})"

# RFC 3987 section 2.2
_UCSCHAR = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    "\U00010000-\U0001fffd\U00020000-\U0002fffd\U00030000-\U0003fffd\U00040000-\U0004fffd"
    "\U00050000-\U0005fffd\U00060000-\U0006fffd\U00070000-\U0007fffd\U00080000-\U0008fffd"
    "\U00090000-\U0009fffd\U000a0000-\U000afffd\U000b0000-\U000bfffd\U000c0000-\U000cfffd"
    "\U000d0000-\U000dfffd\U000e1000-\U000efffd"
)
_IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_PCT = "%[0-9A-Fa-f]{2}"

# RFC 6570 section 2: literals (%x21 / %x23-24 / %x26-3B [erratum 6937] / %x3D / %x3F-5B / %x5D /
# %x5F / %x61-7A / %x7E / ucschar / iprivate / pct-encoded) and expressions.
_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = rf"\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}}"


def _template_pattern(ucschar: str, iprivate: str) -> str:
    return rf"(?:[!#$&-;=?-\[\]_a-z~{ucschar}{iprivate}]|{_PCT}|{_EXPRESSION})*"


def _uri_patterns(ucschar: str, iprivate: str) -> tuple[str, str]:
    """RFC 3986 ``URI`` and ``URI-reference`` (empty extras) or RFC 3987 ``IRI`` and
    ``IRI-reference`` (``ucschar`` added to unreserved, ``iprivate`` to the query)."""
    dec_octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
    ipv4 = rf"{dec_octet}(?:\.{dec_octet}){{3}}"
    h16 = "[0-9A-Fa-f]{1,4}"
    ls32 = f"(?:{h16}:{h16}|{ipv4})"
    ipv6 = "|".join(
        [
            f"(?:{h16}:){{6}}{ls32}",
            f"::(?:{h16}:){{5}}{ls32}",
            f"(?:{h16})?::(?:{h16}:){{4}}{ls32}",
            f"(?:(?:{h16}:){{0,1}}{h16})?::(?:{h16}:){{3}}{ls32}",
            f"(?:(?:{h16}:){{0,2}}{h16})?::(?:{h16}:){{2}}{ls32}",
            f"(?:(?:{h16}:){{0,3}}{h16})?::{h16}:{ls32}",
            f"(?:(?:{h16}:){{0,4}}{h16})?::{ls32}",
            f"(?:(?:{h16}:){{0,5}}{h16})?::{h16}",
            f"(?:(?:{h16}:){{0,6}}{h16})?::",
        ]
    )
    sub_delims = "!$&'()*+,;="
    ip_future = rf"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~{sub_delims}:]+"
    ip_literal = rf"\[(?:{ipv6}|{ip_future})\]"
    unreserved = rf"[A-Za-z0-9\-._~{ucschar}]"
    pchar = rf"(?:{unreserved}|{_PCT}|[{sub_delims}:@])"
    userinfo = rf"(?:{unreserved}|{_PCT}|[{sub_delims}:])*"
    reg_name = rf"(?:{unreserved}|{_PCT}|[{sub_delims}])*"
    authority = rf"(?:{userinfo}@)?(?:{ip_literal}|{ipv4}|{reg_name})(?::[0-9]*)?"
    path_abempty = rf"(?:/{pchar}*)*"
    path_absolute = rf"/(?:{pchar}+{path_abempty})?"
    path_rootless = rf"{pchar}+{path_abempty}"
    path_noscheme = rf"(?:{unreserved}|{_PCT}|[{sub_delims}@])+{path_abempty}"
    query_extra = f"|[{iprivate}]" if iprivate else ""
    tail = rf"(?:\?(?:{pchar}|[/?]{query_extra})*)?(?:#(?:{pchar}|[/?])*)?"
    absolute = (
        rf"[A-Za-z][A-Za-z0-9+\-.]*:(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|){tail}"
    )
    relative = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){tail}"
    return absolute, f"(?:{absolute})|(?:{relative})"


_URI, _URI_REFERENCE = _uri_patterns("", "")
_IRI, _IRI_REFERENCE = _uri_patterns(_UCSCHAR, _IPRIVATE)
_TEMPLATE = _template_pattern(_UCSCHAR, _IPRIVATE)

ORACLE_PATTERNS = {
    "json-pointer": re.compile(_POINTER),
    "relative-json-pointer": re.compile(_RELATIVE),
    "uri-template": re.compile(_TEMPLATE),
    "iri": re.compile(_IRI),
    "iri-reference": re.compile(_IRI_REFERENCE),
    "uri": re.compile(_URI),
    "uri-reference": re.compile(_URI_REFERENCE),
}


# For generating valid strings only: hypothesis draws slowly from classes of ~900,000 code points,
# so the generators use the edges of each range and a few inner code points (the oracles and the
# arbitrary strings below cover the full ranges).
_SOME_UCSCHAR = (
    "\u00a0\u00e9\u0300\u4e2d\ud7ff\uf900\ufdcf\ufdf0\uffef"
    "\U00010000\U0001f600\U0001fffd\U0002a6d6\U000e1000\U000efffd"
)
_SOME_IPRIVATE = "\ue000\uf8ff\U000f0000\U000ffffd\U00100000\U0010fffd"
_SOME_IRI, _SOME_IRI_REFERENCE = _uri_patterns(_SOME_UCSCHAR, _SOME_IPRIVATE)
GENERATOR_PATTERNS = {
    **ORACLE_PATTERNS,
    "uri-template": re.compile(_template_pattern(_SOME_UCSCHAR, _SOME_IPRIVATE)),
    "iri": re.compile(_SOME_IRI),
    "iri-reference": re.compile(_SOME_IRI_REFERENCE),
}


def oracle(name: str, value: str) -> bool:
    return ORACLE_PATTERNS[name].fullmatch(value) is not None


ORACLES = {name: (lambda value, name=name: oracle(name, value)) for name in NEW_FORMATS}


@cache
def body_dfa(name: str) -> DFA:
    return format_string_dfa(name, Limits())


def accepts(name: str, value: str) -> bool:
    """Whether the compiled format accepts ``value`` as canonical JSON writes its content."""
    return body_dfa(name).accepts(escape_text(value).encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# The official suite, both drafts
# ---------------------------------------------------------------------------------------------


def _suite_cases() -> list[tuple[str, str, str, bool]]:
    cases = []
    for draft in ("draft2020-12", "draft7"):
        for name in NEW_FORMATS:
            path = data_path("schemas", "json-schema-test-suite", draft, "optional", "format", f"{name}.json")
            for group in json.loads(path.read_text(encoding="utf-8")):
                for case in group["tests"]:
                    if isinstance(case["data"], str):
                        cases.append((draft, name, case["data"], case["valid"]))
    return cases


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_json_schema_test_suite_cases_are_exact(name: str) -> None:
    """Every valid string of both drafts is accepted and every invalid one rejected, by the DFA and
    by the oracle (no approximation: these formats are exact)."""
    cases = [case for case in _suite_cases() if case[1] == name]
    assert len(cases) > 10
    for draft, _, value, valid in cases:
        assert accepts(name, value) == valid, (draft, value)
        assert oracle(name, value) == valid, (draft, value)


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_schemas_with_the_format_compile_and_decide_the_suite(name: str) -> None:
    """End to end: ``{"format": name}`` compiles, and its artifact's language (quotes and escapes
    included) decides the suite's strings."""
    from moonmaskc.frontends.schema import compile_schema_ir

    dfa = compile_ir(compile_schema_ir({"type": "string", "format": name}).node)
    for draft, case_name, value, valid in _suite_cases():
        if case_name == name:
            serialized = json.dumps(value, ensure_ascii=False).encode("utf-8")
            assert dfa.accepts(serialized) == valid, (draft, value)
    assert moonmaskc.compile_schema({"type": "string", "format": name}) is not None


# ---------------------------------------------------------------------------------------------
# Hand-picked edges
# ---------------------------------------------------------------------------------------------

EDGES: dict[str, list[tuple[str, bool]]] = {
    "json-pointer": [
        ("", True),
        ("/", True),
        ("//", True),
        ("/~0~1", True),
        ('/a\\b"c\u0000\u001f\u007f\u0080', True),
        ("/\U0010ffff\ufffe", True),
        ("/~", False),
        ("/~2", False),
        ("~0", False),
        ("a", False),
        ("#/a", False),
    ],
    "relative-json-pointer": [
        ("0", True),
        ("0#", True),
        ("10/", True),
        ("7/a~1b", True),
        ("0/\n", True),
        ("00", False),
        ("0#/", False),
        ("#", False),
        ("/a", False),
        ("0+1/a", False),  # index manipulation: draft-bhutton-00 only, not the -01 we follow
        ("1-1#", False),
    ],
    "uri-template": [
        ("", True),
        ("{a}", True),
        ("{a,b.c:9999,%2F*}", True),
        ("{&a_1}", True),
        ("x{a}{b}y", True),
        ("'{var}'", True),  # RFC 6570 section 3.2.1's own example (erratum 6937)
        ("\ue000\U000f0000\U0010fffd", True),  # iprivate
        ("{a:9}", True),
        ("{a:}", False),
        ("{a*:1}", False),
        ("{a.}", False),
        ("{.a}", True),  # "." is the label operator
        ("{..a}", False),
        ("{=a}", False),
        ("{!a}", False),
        ("{@a}", False),
        ("{|a}", False),
        ("{,a}", False),
        ("{a b}", False),
        ("{{a}}", False),
        ("a%4", False),
        ("a%zz", False),
        ("\u0080", False),  # C1 control: not ucschar
        ("\ufdd0", False),  # noncharacter
        ("\ufffe", False),
        ("\U0001fffe", False),
        ("\U000e0001", False),  # tag characters, outside ucschar
        ("\U000e0fff", False),
        ("\U000e1000\U000efffd\U0001fffd", True),
        ('"', False),
        ("\\", False),
        ("a\tb", False),
        ("<", False),
        ("^", False),
        ("`", False),
        ("|", False),
    ],
    "iri": [
        ("a:", True),
        ("http://é/é?é#é", True),
        ("x://ü@[v7.a:b]:80/ß", True),
        ("x:?\ue000", True),  # iprivate in the query
        ("x:#\ue000", False),  # not in the fragment
        ("x:/\ue000", False),  # nor in the path
        ("x://\ue000", False),
        ("x://[é]/", False),  # no ucschar inside an IP literal
        ("x://[V1.a]", True),  # ABNF strings ignore case: "v" or "V"
        ("x://[v.a]", False),
        ("x://[vg.a]", False),
        ("x:/\ufffe", False),
        ("x:/\u0085", False),
        ("é:x", False),  # the scheme is ASCII
        ("x: ", False),
        ("x:/%e9", True),
        ("x:/%e", False),
    ],
    "iri-reference": [
        ("", True),
        ("é", True),
        ("é/a:b", True),
        ("é:b", False),  # a colon in the first segment of a relative reference
        ("./é:b", True),
        ("?\U000f0000", True),
        ("#\U000f0000", False),
        ("//[::1]/é", True),
        ("//[::1:]/", False),
    ],
}


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_edges(name: str) -> None:
    for value, valid in EDGES[name]:
        assert oracle(name, value) == valid, value
        assert accepts(name, value) == valid, value


def test_ip_future_version_letter_in_either_case() -> None:
    """ABNF strings ignore case, so RFC 3986's IPvFuture starts with "v" or "V" in URIs too (the
    suite's iri case ``http://[V1.fe]``; Python's urlsplit accepts only "v")."""
    for name in ("uri", "uri-reference", "iri", "iri-reference"):
        for value, valid in (("x://[V1.fe]", True), ("x://[v1.fe]/a", True), ("x://[w1.fe]", False)):
            assert accepts(name, value) == valid == oracle(name, value), (name, value)


# ---------------------------------------------------------------------------------------------
# Hypothesis: arbitrary strings and strings of each grammar, DFA against oracle
# ---------------------------------------------------------------------------------------------

# Characters that matter to the grammars (delimiters, escapes, the edges of the Unicode ranges),
# mixed with arbitrary ones.
_SPECIAL = [
    *"/~01#{}:,.*+;?&=!@|%'\"\\<>^` []$()-_vVaAfFzZ9",
    *("\x00", "\n", "\x1f", "\x7f", "\x80", "\x9f", "\xa0", "é", "\ud7ff", "\ue000", "\uf8ff", "\uf900"),
    *("\ufdcf", "\ufdd0", "\ufdef", "\ufdf0", "\uffef", "\ufff0", "\ufffd", "\ufffe", "\uffff"),
    *("\U00010000", "\U0001fffd", "\U0001fffe", "\U000e0fff", "\U000e1000", "\U000efffd"),
    *("\U000f0000", "\U000ffffd", "\U000ffffe", "\U00100000", "\U0010fffd", "\U0010ffff"),
]
_PIECES = ["%41", "%e9", "%4", "~0", "~1", "::", "//", "{a}", "{a:10}", "[::1]", "[v1.x]", "http:", "0/"]
_STRINGS = st.lists(
    st.one_of(st.sampled_from(_SPECIAL), st.sampled_from(_PIECES), st.characters(exclude_categories=["Cs"])),
    max_size=24,
).map("".join)
_ALL_ORACLE_FORMATS = sorted(ORACLE_PATTERNS)


@settings(max_examples=300)
@given(st.sampled_from(_ALL_ORACLE_FORMATS), _STRINGS)
def test_arbitrary_strings_agree_with_the_oracle(name: str, value: str) -> None:
    assert accepts(name, value) == oracle(name, value), (name, value)


def _from_oracle(name: str) -> st.SearchStrategy[str]:
    return st.from_regex(GENERATOR_PATTERNS[name], fullmatch=True).filter(lambda v: len(v) <= 200)


@pytest.mark.parametrize("name", _ALL_ORACLE_FORMATS)
def test_strings_of_the_grammar_are_accepted(name: str) -> None:
    @settings(max_examples=150)
    @given(_from_oracle(name))
    def check(value: str) -> None:
        assert accepts(name, value), value

    check()


@pytest.mark.parametrize("name", _ALL_ORACLE_FORMATS)
def test_mutated_strings_of_the_grammar_agree_with_the_oracle(name: str) -> None:
    """Valid strings with one character inserted, deleted or replaced: near misses."""

    @settings(max_examples=150)
    @given(_from_oracle(name), st.integers(0, 200), st.sampled_from(_SPECIAL), st.integers(0, 2))
    def check(value: str, position: int, char: str, edit: int) -> None:
        at = position % (len(value) + 1)
        if edit == 0:
            value = value[:at] + char + value[at:]
        elif edit == 1:
            value = value[:at] + value[at + 1 :]
        else:
            value = value[:at] + char + value[at + 1 :]
        assert accepts(name, value) == oracle(name, value), value

    check()


@pytest.mark.parametrize("name", _ALL_ORACLE_FORMATS)
def test_sampled_strings_satisfy_the_oracle(name: str) -> None:
    """Strings drawn from the DFA (canonical bodies) decode to values of the format."""
    dfa = body_dfa(name)
    rng = random.Random(name)
    for _ in range(300):
        drawn = sample(dfa, rng, max_len=80, stop_probability=0.1)
        assert drawn is not None
        value = json.loads(b'"' + drawn + b'"')
        assert escape_text(value).encode("utf-8") == drawn  # canonical bodies only
        assert oracle(name, value), value


def test_pointer_bodies_are_canonical_strings() -> None:
    """The escaped pointer languages lie inside the canonical string body; the other new formats
    need no escaping (their content language is its own body)."""
    from moonmaskc.frontends.schema.formats import ESCAPED_CONTENT, format_node

    body = compile_ir(STRING_BODY)
    assert {"json-pointer", "relative-json-pointer"} <= ESCAPED_CONTENT
    for name in ("uri-template", "iri", "iri-reference"):
        assert name not in ESCAPED_CONTENT
        assert difference(compile_ir(format_node(name)), body).start == 0, name
    # Raw quote, backslash or control characters never appear in a body: only their escapes.
    for raw in (b'"', b"\\", b"\n", b"\x00", b"\x7f\n"):
        assert not body_dfa("json-pointer").accepts(b"/" + raw), raw
        assert not body_dfa("relative-json-pointer").accepts(b"0/" + raw), raw
    assert body_dfa("json-pointer").accepts(b'/\\"\\\\\\n\\u0000\x7f')
    assert body_dfa("relative-json-pointer").accepts(b"12/a\\t")
