"""RFC 3986 and the formats built on it, as regular languages over the decoded string content.

Takes: nothing (``formats.FORMATS`` calls the builders once). Hands on: IR nodes over the UTF-8 of
the string content for the formats ``ipv4`` / ``ipv6`` (RFC 3986 ``IPv4address`` / ``IPv6address``,
the RFC 4291 text forms), ``uri`` / ``uri-reference`` (RFC 3986), ``iri`` / ``iri-reference``
(RFC 3987) and ``uri-template`` (RFC 6570, level 4), with the ABNF core rules (RFC 5234) that
``formats`` shares. None of these languages contains ``"``, ``\\`` or a control character, so each
is its own canonical JSON string body; the non-ASCII code points of IRIs and URI templates
(``ucschar``, ``iprivate``) stay raw UTF-8, as canonical JSON writes them.

One set of RFC 3986 pieces (``_uri_parts``) builds both URIs and IRIs: RFC 3987 only adds
``ucschar`` wherever RFC 3986 allows ``unreserved`` (userinfo, host names, path segments, query,
fragment; not in IP literals) and ``iprivate`` in the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from moonmaskc import ir
from moonmaskc.frontends import utf8

CodePoints = tuple[tuple[int, int], ...]

DIGIT_MASK = ir.range_mask(0x30, 0x39)
ALPHA_MASK = ir.range_mask(0x41, 0x5A) | ir.range_mask(0x61, 0x7A)
ALNUM_MASK = ALPHA_MASK | DIGIT_MASK
DIGIT = ir.byte_set(DIGIT_MASK)
ALPHA = ir.byte_set(ALPHA_MASK)
ALNUM = ir.byte_set(ALNUM_MASK)
HEXDIG = ir.byte_set(DIGIT_MASK | ir.range_mask(0x41, 0x46) | ir.range_mask(0x61, 0x66))
PERCENT_ENCODED = ir.seq(ir.text("%"), HEXDIG, HEXDIG)

# RFC 3987 section 2.2: the characters an IRI adds to a URI's unreserved ones, and (in the query
# only) the private-use ones. RFC 6570 allows both in a URI template's literals.
UCSCHAR: CodePoints = (
    (0xA0, 0xD7FF),
    (0xF900, 0xFDCF),
    (0xFDF0, 0xFFEF),
    *(((plane << 16), (plane << 16) + 0xFFFD) for plane in range(0x1, 0xE)),
    (0xE1000, 0xEFFFD),
)
IPRIVATE: CodePoints = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def chars(characters: str) -> ir.Node:
    """One of the ASCII ``characters``."""
    return ir.byte_set(ir.mask_of(characters.encode("ascii")))


def alnum_and(extra: str) -> ir.Node:
    """Letters, digits and the characters of ``extra``."""
    return ir.byte_set(ALNUM_MASK | ir.mask_of(extra.encode("ascii")))


def code_points(ranges: CodePoints) -> ir.Node:
    """One code point out of ``ranges`` (UTF-8); nothing for no ranges."""
    return utf8.codepoints(ranges) if ranges else ir.NOTHING


def ipv4() -> ir.Node:
    octet = ir.alt(
        ir.seq(ir.text("25"), ir.byte_range(0x30, 0x35)),
        ir.seq(ir.text("2"), ir.byte_range(0x30, 0x34), DIGIT),
        ir.seq(ir.text("1"), DIGIT, DIGIT),
        ir.seq(ir.byte_range(0x31, 0x39), DIGIT),
        DIGIT,
    )
    return ir.seq(octet, ir.repeat(ir.seq(ir.text("."), octet), 3, 3))


def ipv6() -> ir.Node:
    h16 = ir.repeat(HEXDIG, 1, 4)
    group = ir.seq(h16, ir.text(":"))
    ls32 = ir.alt(ir.seq(h16, ir.text(":"), h16), ipv4())
    full = ir.seq(ir.repeat(group, 6, 6), ls32)
    # After "::": k groups' worth of text; before it, at most 7 - k groups.
    tails: dict[int, ir.Node] = {k + 2: ir.seq(ir.repeat(group, k, k), ls32) for k in range(6)}
    tails[1] = h16
    tails[0] = ir.EPSILON
    forms = [full]
    for width, tail in tails.items():
        before_groups = 7 - width
        head: ir.Node = ir.EPSILON
        if before_groups >= 1:
            head = ir.optional(ir.seq(ir.repeat(group, 0, before_groups - 1), h16))
        forms.append(ir.seq(head, ir.text("::"), tail))
    return ir.alt(*forms)


# ---------------------------------------------------------------------------------------------
# URIs (RFC 3986) and IRIs (RFC 3987)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _UriParts:
    """The pieces of RFC 3986 (or, with the extra characters, RFC 3987) that the absolute form and
    the reference share."""

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
def _uri_parts(unreserved_extra: CodePoints = (), query_extra: CodePoints = ()) -> _UriParts:
    """RFC 3986's pieces with ``unreserved_extra`` added wherever ``unreserved`` is allowed outside
    IP literals, and ``query_extra`` in the query only: RFC 3987 is ``(UCSCHAR, IPRIVATE)``."""
    unreserved = ir.alt(alnum_and("-._~"), code_points(unreserved_extra))
    sub_delims = chars("!$&'()*+,;=")
    plain = ir.alt(unreserved, sub_delims)
    pchar = ir.alt(plain, PERCENT_ENCODED, chars(":@"))
    userinfo = ir.star(ir.alt(plain, PERCENT_ENCODED, ir.text(":")))
    # IPvFuture is RFC 3986's (ASCII) in both; ABNF strings ignore case, so "v" or "V".
    ascii_plain = ir.alt(alnum_and("-._~"), sub_delims)
    ip_future = ir.seq(chars("vV"), ir.plus(HEXDIG), ir.text("."), ir.plus(ir.alt(ascii_plain, ir.text(":"))))
    ip_literal = ir.seq(ir.text("["), ir.alt(ipv6(), ip_future), ir.text("]"))
    reg_name = ir.star(ir.alt(plain, PERCENT_ENCODED))
    host = ir.alt(ip_literal, ipv4(), reg_name)
    authority = ir.seq(
        ir.optional(ir.seq(userinfo, ir.text("@"))), host, ir.optional(ir.seq(ir.text(":"), ir.star(DIGIT)))
    )
    segment = ir.star(pchar)
    segment_nonempty = ir.plus(pchar)
    path_abempty = ir.star(ir.seq(ir.text("/"), segment))
    fragment = ir.star(ir.alt(pchar, chars("/?")))
    query = ir.star(ir.alt(pchar, chars("/?"), code_points(query_extra)))
    return _UriParts(
        authority=authority,
        segment_nonempty=segment_nonempty,
        path_abempty=path_abempty,
        path_absolute=ir.seq(ir.text("/"), ir.optional(ir.seq(segment_nonempty, path_abempty))),
        tail=ir.seq(ir.optional(ir.seq(ir.text("?"), query)), ir.optional(ir.seq(ir.text("#"), fragment))),
        segment_nonempty_no_colon=ir.plus(ir.alt(plain, PERCENT_ENCODED, ir.text("@"))),
    )


def _absolute(parts: _UriParts) -> ir.Node:
    """``scheme ":" hier-part [ "?" query ] [ "#" fragment ]`` (the scheme is ASCII in both RFCs)."""
    scheme = ir.seq(ALPHA, ir.star(alnum_and("+-.")))
    return ir.seq(scheme, ir.text(":"), parts.hierarchy(parts.segment_nonempty), parts.tail)


def _reference(parts: _UriParts) -> ir.Node:
    """An absolute form or a relative reference (whose first segment has no colon, so that it
    cannot be read as a scheme)."""
    return ir.alt(_absolute(parts), ir.seq(parts.hierarchy(parts.segment_nonempty_no_colon), parts.tail))


def uri() -> ir.Node:
    return _absolute(_uri_parts())


def uri_reference() -> ir.Node:
    """RFC 3986 URI-reference."""
    return _reference(_uri_parts())


def iri() -> ir.Node:
    """RFC 3987 IRI."""
    return _absolute(_uri_parts(UCSCHAR, IPRIVATE))


def iri_reference() -> ir.Node:
    """RFC 3987 IRI-reference."""
    return _reference(_uri_parts(UCSCHAR, IPRIVATE))


# ---------------------------------------------------------------------------------------------
# URI Templates (RFC 6570 section 2, all levels)
# ---------------------------------------------------------------------------------------------

# RFC 6570 literals, ASCII part: %x21 / %x26-3B (verified erratum 6937: the published
# "%x26 / %x28-3B" left out the apostrophe of the RFC's own examples) / %x23-24 / %x3D / %x3F-5B /
# %x5D / %x5F / %x61-7A / %x7E: no CTL, SP, DQUOTE, "%" (but in pct-encoded), "<", ">", "\", "^",
# "`", "{", "|", "}".
_TEMPLATE_LITERAL_MASK = (
    ir.mask_of(b"!#$=]_~") | ir.range_mask(0x26, 0x3B) | ir.range_mask(0x3F, 0x5B) | ir.range_mask(0x61, 0x7A)
)


def uri_template() -> ir.Node:
    """``*( literals / expression )``: an expression is ``"{" [operator] varspec *("," varspec) "}"``
    with the operators ``+ # . / ; ? &`` (never the reserved ``= , ! @ |``), a varname of
    ``ALPHA / DIGIT / "_" / pct-encoded`` characters with single dots between them, and an
    optional ``:max-length`` (1-9999, no leading zero) or ``*``."""
    literal = ir.alt(ir.byte_set(_TEMPLATE_LITERAL_MASK), PERCENT_ENCODED, code_points(UCSCHAR + IPRIVATE))
    varchar = ir.alt(alnum_and("_"), PERCENT_ENCODED)
    varname = ir.seq(varchar, ir.star(ir.seq(ir.optional(ir.text(".")), varchar)))
    max_length = ir.seq(ir.byte_range(0x31, 0x39), ir.repeat(DIGIT, 0, 3))
    modifier = ir.optional(ir.alt(ir.seq(ir.text(":"), max_length), ir.text("*")))
    varspec = ir.seq(varname, modifier)
    variable_list = ir.seq(varspec, ir.star(ir.seq(ir.text(","), varspec)))
    expression = ir.seq(ir.text("{"), ir.optional(chars("+#./;?&")), variable_list, ir.text("}"))
    return ir.star(ir.alt(literal, expression))
