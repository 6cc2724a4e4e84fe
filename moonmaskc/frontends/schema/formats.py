"""JSON Schema ``format`` values as regular languages over the decoded string content.

Takes: a format name (and, for errors, ``where``: the JSON pointer of the schema). Hands on: an IR
node for the string *content* (no quotes). Every format language is ASCII and never contains ``"``,
``\\`` or a control character, so the walker can put it between quotes as it is.

Supported: date, time, date-time (RFC 3339), duration (RFC 3339 appendix A), email (a conservative
subset of RFC 5321), hostname (RFC 1123), ipv4, ipv6 (RFC 4291 text forms), uuid, uri and
uri-reference (RFC 3986).
Each language is exact or smaller than the format (an approximation only ever rejects valid values);
``docs/json-schema-formats.md`` lists what each accepts and what it leaves out:

- date: year 0000 rejected (Python's ``date`` and so jsonschema refuse it); leap days exact.
- time / date-time: no leap second (``:60``), as jsonschema's checker refuses them.
- hostname: at most ``HOSTNAME_MAX_LENGTH`` (63) characters in all, no trailing dot, no label with
  ``--`` in positions 3-4 (so no ``xn--`` Punycode labels: their validity is not regular).
- email: dot-atom local part of at most 64 characters; no quoted local parts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import difference, intersect
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.canonical import STRING_BODY
from moonmaskc.frontends.schema.numbers_ranges import fixed_length_range
from moonmaskc.limits import Limits

HOSTNAME_MAX_LENGTH = 63
EMAIL_LOCAL_MAX_LENGTH = 64


def _chars(characters: str) -> ir.Node:
    return ir.byte_set(ir.mask_of(characters.encode("ascii")))


def _opt(node: ir.Node) -> ir.Node:
    return ir.optional(node)


def _times(node: ir.Node, count: int) -> ir.Node:
    return ir.repeat(node, count, count)


DIGIT_MASK = ir.range_mask(0x30, 0x39)
ALPHA_MASK = ir.range_mask(0x41, 0x5A) | ir.range_mask(0x61, 0x7A)
ALNUM_MASK = ALPHA_MASK | DIGIT_MASK
DIGIT = ir.byte_set(DIGIT_MASK)
ALPHA = ir.byte_set(ALPHA_MASK)
ALNUM = ir.byte_set(ALNUM_MASK)
HEXDIG = ir.byte_set(DIGIT_MASK | ir.range_mask(0x41, 0x46) | ir.range_mask(0x61, 0x66))


def _alnum_and(extra: str) -> ir.Node:
    """Letters, digits and the characters of ``extra``."""
    return ir.byte_set(ALNUM_MASK | ir.mask_of(extra.encode("ascii")))


def _two_digits(low: int, high: int) -> ir.Node:
    return fixed_length_range(f"{low:02d}", f"{high:02d}")


# ---------------------------------------------------------------------------------------------
# Dates and times (RFC 3339 section 5.6)
# ---------------------------------------------------------------------------------------------


def _full_date() -> ir.Node:
    year = fixed_length_range("0001", "9999")
    # Leap years: divisible by 4 and not by 100, or divisible by 400 (last two digits of a year
    # decide divisibility by 4 and 100; the first two decide divisibility by 400 for years xx00).
    multiple_of_four_not_zero = ir.alt(
        ir.seq(ir.text("0"), _chars("48")), ir.seq(_chars("2468"), _chars("048"))
    )
    multiple_of_four_not_zero = ir.alt(multiple_of_four_not_zero, ir.seq(_chars("13579"), _chars("26")))
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
    numeric_offset = ir.seq(_chars("+-"), _two_digits(0, 23), ir.text(":"), _two_digits(0, 59))
    return ir.seq(partial_time, ir.alt(_chars("Zz"), numeric_offset))


def _date_time() -> ir.Node:
    return ir.seq(_full_date(), _chars("Tt"), _full_time())


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


def _ipv4() -> ir.Node:
    octet = ir.alt(
        ir.seq(ir.text("25"), ir.byte_range(0x30, 0x35)),
        ir.seq(ir.text("2"), ir.byte_range(0x30, 0x34), DIGIT),
        ir.seq(ir.text("1"), DIGIT, DIGIT),
        ir.seq(ir.byte_range(0x31, 0x39), DIGIT),
        DIGIT,
    )
    return ir.seq(octet, _times(ir.seq(ir.text("."), octet), 3))


def _ipv6() -> ir.Node:
    h16 = ir.repeat(HEXDIG, 1, 4)
    group = ir.seq(h16, ir.text(":"))
    ls32 = ir.alt(ir.seq(h16, ir.text(":"), h16), _ipv4())
    full = ir.seq(_times(group, 6), ls32)
    # After "::": k groups' worth of text; before it, at most 7 - k groups.
    tails: dict[int, ir.Node] = {k + 2: ir.seq(_times(group, k), ls32) for k in range(6)}
    tails[1] = h16
    tails[0] = ir.EPSILON
    forms = [full]
    for width, tail in tails.items():
        before_groups = 7 - width
        head: ir.Node = ir.EPSILON
        if before_groups >= 1:
            head = _opt(ir.seq(ir.repeat(group, 0, before_groups - 1), h16))
        forms.append(ir.seq(head, ir.text("::"), tail))
    return ir.alt(*forms)


def _limit_length(node: ir.Node, alphabet: ir.Node, low: int, high: int, label: str) -> ir.Node:
    lengths = compile_ir(ir.repeat(alphabet, low, high))
    return ir.Automaton(intersect(compile_ir(node), lengths), label)


def _hostname() -> ir.Node:
    letter_digit_hyphen = _alnum_and("-")
    label = ir.seq(ALNUM, _opt(ir.seq(ir.repeat(letter_digit_hyphen, 0, 61), ALNUM)))
    name = ir.seq(label, ir.star(ir.seq(ir.text("."), label)))
    alphabet = _alnum_and("-.")
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
ATEXT = _alnum_and(ATEXT_EXTRA)


def _email() -> ir.Node:
    atom = ir.plus(ATEXT)
    dot_atom = ir.seq(atom, ir.star(ir.seq(ir.text("."), atom)))
    local_alphabet = _alnum_and(ATEXT_EXTRA + ".")
    local = _limit_length(dot_atom, local_alphabet, 1, EMAIL_LOCAL_MAX_LENGTH, "email local part")
    domain = ir.alt(
        _hostname(),
        ir.seq(ir.text("["), _ipv4(), ir.text("]")),
        ir.seq(ir.text("[IPv6:"), _ipv6(), ir.text("]")),
    )
    return ir.seq(local, ir.text("@"), domain)


def _uuid() -> ir.Node:
    blocks = [_times(HEXDIG, n) for n in (8, 4, 4, 4, 12)]
    return ir.seq(blocks[0], *(ir.seq(ir.text("-"), block) for block in blocks[1:]))


@dataclass(frozen=True)
class _UriParts:
    """The pieces of RFC 3986 that ``uri`` and ``uri-reference`` share."""

    authority: ir.Node
    segment_nonempty: ir.Node
    path_abempty: ir.Node
    path_absolute: ir.Node
    tail: ir.Node  # [ "?" query ] [ "#" fragment ]
    segment_nonempty_no_colon: ir.Node

    def hierarchy(self, first_segment: ir.Node) -> ir.Node:
        """``"//" authority path-abempty / path-absolute / first-segment path-abempty / empty``:
        a URI's hier-part (first segment: any ``segment-nz``) or a relative reference's relative
        part (``segment-nz-nc``, no colon)."""
        return ir.alt(
            ir.seq(ir.text("//"), self.authority, self.path_abempty),
            self.path_absolute,
            ir.seq(first_segment, self.path_abempty),
            ir.EPSILON,
        )


@cache
def _uri_parts() -> _UriParts:
    unreserved = _alnum_and("-._~")
    sub_delims = _chars("!$&'()*+,;=")
    percent_encoded = ir.seq(ir.text("%"), HEXDIG, HEXDIG)
    plain = ir.alt(unreserved, sub_delims)
    pchar = ir.alt(plain, percent_encoded, _chars(":@"))
    userinfo = ir.star(ir.alt(plain, percent_encoded, ir.text(":")))
    ip_future = ir.seq(ir.text("v"), ir.plus(HEXDIG), ir.text("."), ir.plus(ir.alt(plain, ir.text(":"))))
    ip_literal = ir.seq(ir.text("["), ir.alt(_ipv6(), ip_future), ir.text("]"))
    reg_name = ir.star(ir.alt(plain, percent_encoded))
    host = ir.alt(ip_literal, _ipv4(), reg_name)
    authority = ir.seq(_opt(ir.seq(userinfo, ir.text("@"))), host, _opt(ir.seq(ir.text(":"), ir.star(DIGIT))))
    segment = ir.star(pchar)
    segment_nonempty = ir.plus(pchar)
    path_abempty = ir.star(ir.seq(ir.text("/"), segment))
    query = ir.star(ir.alt(pchar, _chars("/?")))
    return _UriParts(
        authority=authority,
        segment_nonempty=segment_nonempty,
        path_abempty=path_abempty,
        path_absolute=ir.seq(ir.text("/"), _opt(ir.seq(segment_nonempty, path_abempty))),
        tail=ir.seq(_opt(ir.seq(ir.text("?"), query)), _opt(ir.seq(ir.text("#"), query))),
        segment_nonempty_no_colon=ir.plus(ir.alt(plain, percent_encoded, ir.text("@"))),
    )


def _uri() -> ir.Node:
    parts = _uri_parts()
    scheme = ir.seq(ALPHA, ir.star(_alnum_and("+-.")))
    return ir.seq(scheme, ir.text(":"), parts.hierarchy(parts.segment_nonempty), parts.tail)


def _uri_reference() -> ir.Node:
    """RFC 3986 URI-reference: a URI or a relative reference (whose first segment has no colon,
    so that it cannot be read as a scheme)."""
    parts = _uri_parts()
    return ir.alt(_uri(), ir.seq(parts.hierarchy(parts.segment_nonempty_no_colon), parts.tail))


FORMATS: dict[str, Callable[[], ir.Node]] = {
    "date": _full_date,
    "time": _full_time,
    "date-time": _date_time,
    "duration": _duration,
    "email": _email,
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "uuid": _uuid,
    "uri": _uri,
    "uri-reference": _uri_reference,
}


@cache
def _format_node_cached(name: str) -> ir.Node:
    return FORMATS[name]()


@cache
def format_string_dfa(name: str, limits: Limits) -> DFA:
    """The minimal DFA of the canonical JSON string body (``canonical.STRING_BODY``, no quotes)
    restricted to format ``name`` (a known one). A constant of the compiler for given limits, so it
    is built once per process and per ``Limits``: memoising a pure function changes no result."""
    return intersect(compile_ir(STRING_BODY, limits), compile_ir(format_node(name), limits), limits)


def format_node(name: str, where: str | None = None) -> ir.Node:
    """The language of the decoded string content of ``format: name``; unknown names are an error."""
    if name not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise UnsupportedError(f"format '{name}'", f"supported formats are {known}", where=where)
    return _format_node_cached(name)
