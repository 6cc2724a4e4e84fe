"""JSON Schema ``format`` values as regular languages over the decoded string content.

Takes: a format name (and, for errors, ``where``: the JSON pointer of the schema). Hands on: an IR
node for the string *content* (no quotes, UTF-8), and ``format_string_dfa``: the canonical JSON
string body (escapes included) restricted to the format. Content that canonical JSON escapes
(``"``, ``\\``, control characters) occurs only in the formats of ``ESCAPED_CONTENT`` (JSON
pointers, whose reference tokens may hold any character): their language goes through
``canonical.escape_node``. Every other format language is its own canonical body: ASCII without
those characters, plus, for iri, iri-reference and uri-template, raw non-ASCII code points.

Supported: date, time, date-time (RFC 3339), duration (RFC 3339 appendix A), email (a conservative
subset of RFC 5321), hostname (RFC 1123), ipv4, ipv6 (RFC 4291 text forms), uuid, uri and
uri-reference (RFC 3986), iri and iri-reference (RFC 3987), uri-template (RFC 6570), json-pointer
(RFC 6901) and relative-json-pointer (draft-handrews-relative-json-pointer-01). The RFC 3986
family is built in ``formats_uri``.
Each language is exact or smaller than the format (an approximation only ever rejects valid values);
``docs/json-schema-formats.md`` lists what each accepts and what it leaves out:

- date: year 0000 rejected (Python's ``date`` and so jsonschema refuse it); leap days exact.
- time / date-time: no leap second (``:60``), as jsonschema's checker refuses them.
- hostname: at most ``HOSTNAME_MAX_LENGTH`` (63) characters in all, no trailing dot, no label with
  ``--`` in positions 3-4 (so no ``xn--`` Punycode labels: their validity is not regular).
- email: dot-atom local part of at most 64 characters; no quoted local parts.
- relative-json-pointer: no index manipulation (``0+1/a``, added by the draft that 2020-12 cites,
  draft-bhutton-relative-json-pointer-00; draft-07 cites -01, which has none).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import difference, intersect
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends import utf8
from moonmaskc.frontends.schema.canonical import STRING_BODY, escape_node
from moonmaskc.frontends.schema.formats_uri import (
    ALNUM,
    DIGIT,
    HEXDIG,
    alnum_and,
    chars,
    ipv4,
    ipv6,
    iri,
    iri_reference,
    uri,
    uri_reference,
    uri_template,
)
from moonmaskc.frontends.schema.numbers_ranges import fixed_length_range
from moonmaskc.limits import Limits

HOSTNAME_MAX_LENGTH = 63
EMAIL_LOCAL_MAX_LENGTH = 64


def _opt(node: ir.Node) -> ir.Node:
    return ir.optional(node)


def _times(node: ir.Node, count: int) -> ir.Node:
    return ir.repeat(node, count, count)


def _two_digits(low: int, high: int) -> ir.Node:
    return fixed_length_range(f"{low:02d}", f"{high:02d}")


# ---------------------------------------------------------------------------------------------
# Dates and times (RFC 3339 section 5.6)
# ---------------------------------------------------------------------------------------------


def _full_date() -> ir.Node:
    year = fixed_length_range("0001", "9999")
    # Leap years: divisible by 4 and not by 100, or divisible by 400 (last two digits of a year
    # decide divisibility by 4 and 100; the first two decide divisibility by 400 for years xx00).
    multiple_of_four_not_zero = ir.alt(ir.seq(ir.text("0"), chars("48")), ir.seq(chars("2468"), chars("048")))
    multiple_of_four_not_zero = ir.alt(multiple_of_four_not_zero, ir.seq(chars("13579"), chars("26")))
    leap_year = ir.alt(
        ir.seq(DIGIT, DIGIT, multiple_of_four_not_zero),
        ir.seq(multiple_of_four_not_zero, ir.text("00")),
    )
    long_months = ir.alt(*(ir.text(m) for m in ("01", "03", "05", "07", "08", "10", "12")))
    short_months = ir.alt(*(ir.text(m) for m in ("04", "06", "09", "11")))
    month_day = ir.alt(
        ir.seq(long_months, ir.text("-"), _two_digits(1, 31)),
        ir.seq(short_months, ir.text("-"), _two_digits(1, 30)),
        ir.seq(ir.text("02-"), _two_digits(1, 28)),
    )
    return ir.alt(ir.seq(year, ir.text("-"), month_day), ir.seq(leap_year, ir.text("-02-29")))


def _full_time() -> ir.Node:
    hour, minute, second = _two_digits(0, 23), _two_digits(0, 59), _two_digits(0, 59)
    fraction = _opt(ir.seq(ir.text("."), ir.plus(DIGIT)))
    partial_time = ir.seq(hour, ir.text(":"), minute, ir.text(":"), second, fraction)
    numeric_offset = ir.seq(chars("+-"), _two_digits(0, 23), ir.text(":"), _two_digits(0, 59))
    return ir.seq(partial_time, ir.alt(chars("Zz"), numeric_offset))


def _date_time() -> ir.Node:
    return ir.seq(_full_date(), chars("Tt"), _full_time())


def _duration() -> ir.Node:
    number = ir.plus(DIGIT)

    def unit(letter: str) -> ir.Node:
        return ir.seq(number, ir.text(letter))

    second = unit("S")
    minute = ir.seq(unit("M"), _opt(second))
    hour = ir.seq(unit("H"), _opt(minute))
    time = ir.seq(ir.text("T"), ir.alt(hour, minute, second))
    day = unit("D")
    week = unit("W")
    month = ir.seq(unit("M"), _opt(day))
    year = ir.seq(unit("Y"), _opt(month))
    date = ir.seq(ir.alt(day, month, year), _opt(time))
    return ir.seq(ir.text("P"), ir.alt(date, time, week))


# ---------------------------------------------------------------------------------------------
# Internet addresses and names
# ---------------------------------------------------------------------------------------------


def _limit_length(node: ir.Node, alphabet: ir.Node, low: int, high: int, label: str) -> ir.Node:
    lengths = compile_ir(ir.repeat(alphabet, low, high))
    return ir.Automaton(intersect(compile_ir(node), lengths), label)


def _hostname() -> ir.Node:
    letter_digit_hyphen = alnum_and("-")
    label = ir.seq(ALNUM, _opt(ir.seq(ir.repeat(letter_digit_hyphen, 0, 61), ALNUM)))
    name = ir.seq(label, ir.star(ir.seq(ir.text("."), label)))
    alphabet = alnum_and("-.")
    lengths = compile_ir(ir.repeat(alphabet, 1, HOSTNAME_MAX_LENGTH))
    # Labels with "--" in positions 3 and 4 are reserved (RFC 5891 4.2.3.1); "xn--" A-labels are
    # left out with them, since checking Punycode is not regular.
    reserved = ir.seq(
        _opt(ir.seq(ir.star(alphabet), ir.text("."))),
        letter_digit_hyphen,
        letter_digit_hyphen,
        ir.text("--"),
        ir.star(alphabet),
    )
    allowed = difference(intersect(compile_ir(name), lengths), compile_ir(reserved))
    return ir.Automaton(allowed, f"hostname (<= {HOSTNAME_MAX_LENGTH} chars)")


ATEXT_EXTRA = "!#$%&'*+-/=?^_`{|}~"
ATEXT = alnum_and(ATEXT_EXTRA)


def _email() -> ir.Node:
    atom = ir.plus(ATEXT)
    dot_atom = ir.seq(atom, ir.star(ir.seq(ir.text("."), atom)))
    local_alphabet = alnum_and(ATEXT_EXTRA + ".")
    local = _limit_length(dot_atom, local_alphabet, 1, EMAIL_LOCAL_MAX_LENGTH, "email local part")
    domain = ir.alt(
        _hostname(),
        ir.seq(ir.text("["), ipv4(), ir.text("]")),
        ir.seq(ir.text("[IPv6:"), ipv6(), ir.text("]")),
    )
    return ir.seq(local, ir.text("@"), domain)


def _uuid() -> ir.Node:
    blocks = [_times(HEXDIG, n) for n in (8, 4, 4, 4, 12)]
    return ir.seq(blocks[0], *(ir.seq(ir.text("-"), block) for block in blocks[1:]))


# ---------------------------------------------------------------------------------------------
# JSON pointers (RFC 6901, draft-handrews-relative-json-pointer-01)
# ---------------------------------------------------------------------------------------------


def _json_pointer() -> ir.Node:
    """``*( "/" reference-token )``; a token is any characters but ``/`` and ``~``, and the escapes
    ``~0`` and ``~1``."""
    unescaped = utf8.codepoints(utf8.complement([(0x2F, 0x2F), (0x7E, 0x7E)]))
    token = ir.star(ir.alt(unescaped, ir.seq(ir.text("~"), chars("01"))))
    return ir.star(ir.seq(ir.text("/"), token))


def _relative_json_pointer() -> ir.Node:
    """A non-negative integer without leading zeros, then ``#`` or a JSON pointer."""
    non_negative = ir.alt(ir.text("0"), ir.seq(ir.byte_range(0x31, 0x39), ir.star(DIGIT)))
    return ir.seq(non_negative, ir.alt(ir.text("#"), _json_pointer()))


FORMATS: dict[str, Callable[[], ir.Node]] = {
    "date": _full_date,
    "time": _full_time,
    "date-time": _date_time,
    "duration": _duration,
    "email": _email,
    "hostname": _hostname,
    "ipv4": ipv4,
    "ipv6": ipv6,
    "uuid": _uuid,
    "uri": uri,
    "uri-reference": uri_reference,
    "iri": iri,
    "iri-reference": iri_reference,
    "uri-template": uri_template,
    "json-pointer": _json_pointer,
    "relative-json-pointer": _relative_json_pointer,
}

# Formats whose content may hold characters that canonical JSON escapes: their language is escaped
# before it meets the string body. (The others' languages lie inside ``STRING_BODY`` as they are.)
ESCAPED_CONTENT = frozenset({"json-pointer", "relative-json-pointer"})


@cache
def _format_node_cached(name: str) -> ir.Node:
    return FORMATS[name]()


@cache
def format_string_dfa(name: str, limits: Limits) -> DFA:
    """The minimal DFA of the canonical JSON string body (``canonical.STRING_BODY``, no quotes)
    restricted to format ``name`` (a known one), escapes included. A constant of the compiler for
    given limits, so it is built once per process and per ``Limits``: memoising a pure function
    changes no result."""
    return intersect(compile_ir(STRING_BODY, limits), compile_ir(format_body_node(name), limits), limits)


def format_body_node(name: str) -> ir.Node:
    """The language of ``format: name`` (a known one) as canonical JSON string body bytes: the
    content language, escaped where it may hold characters that JSON escapes."""
    node = format_node(name)
    return escape_node(node) if name in ESCAPED_CONTENT else node


def format_node(name: str, where: str | None = None) -> ir.Node:
    """The language of the decoded string content of ``format: name``; unknown names are an error."""
    if name not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise UnsupportedError(f"format '{name}'", f"supported formats are {known}", where=where)
    return _format_node_cached(name)
