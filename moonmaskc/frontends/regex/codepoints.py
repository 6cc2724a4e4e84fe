"""Code points of a pattern to byte IR that accepts only valid UTF-8.

Takes: code points and code point ranges read from the pattern (with their position, for errors),
literal text, a flavor. Hands on: ``checked_code_point`` (the code point, or the error for a
surrogate, an undecodable byte or a value above U+10FFFF), ``code_points_node`` (one character out
of a range set), ``text_node`` (literal text) and ``dot_node`` (``.`` in a flavor).
"""

from __future__ import annotations

from functools import cache

from moonmaskc import ir
from moonmaskc.frontends import utf8
from moonmaskc.frontends.regex.errors import source_error, unsupported
from moonmaskc.frontends.regex.flavors import Flavor

Ranges = list[tuple[int, int]]

_ALL_NON_ASCII = utf8.normalize([(0x80, utf8.MAX_CODE_POINT)])


def checked_code_point(code_point: int, text: str, position: int) -> int:
    if utf8.SURROGATES[0] <= code_point <= utf8.SURROGATES[1] and text == chr(code_point):
        # Not an escape but a character of the pattern itself: bytes that did not decode as UTF-8
        # (Python keeps byte 0xNN as U+DCNN), or a lone surrogate handed over through the API.
        if 0xDC80 <= code_point <= 0xDCFF:
            raise source_error(
                f"byte 0x{code_point - 0xDC00:02X} in the pattern is not UTF-8 text (it did not "
                "decode); write the character itself in UTF-8, or \\xNN for U+00NN",
                position,
            )
        raise source_error(
            f"the pattern holds a lone surrogate U+{code_point:04X}, which is not text UTF-8 can encode",
            position,
        )
    if utf8.SURROGATES[0] <= code_point <= utf8.SURROGATES[1]:
        raise unsupported(
            f"surrogate code point U+{code_point:04X} ({text!r})",
            "UTF-8 text never contains surrogates; write the character itself",
            position,
        )
    if code_point > utf8.MAX_CODE_POINT:
        raise source_error(f"escape {text} is above U+10FFFF", position)
    return code_point


def text_node(text: str, position: int) -> ir.Node:
    try:
        return ir.literal(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        char = text[error.start]
        checked_code_point(ord(char), char, position + error.start)
        raise


@cache
def dot_node(flavor: Flavor) -> ir.Node:
    return utf8.any_char(exclude=flavor.dot_excludes)


def code_points_node(ranges: Ranges) -> ir.Node:
    """``utf8.codepoints(ranges)``, with the two common shapes (ASCII only; ASCII plus every
    non-ASCII character, as in a negated ASCII class) built from one byte set and a constant."""
    if all(hi < 0x80 for _, hi in ranges):
        ascii_mask = 0
        for lo, hi in ranges:
            ascii_mask |= ir.range_mask(lo, hi)
        return ir.byte_set(ascii_mask)
    ranges = utf8.normalize(ranges)
    split = 0
    while split < len(ranges) and ranges[split][1] < 0x80:
        split += 1
    rest = ranges[split:]
    if rest and rest[0][0] < 0x80 <= rest[0][1]:
        ascii_mask = ir.range_mask(rest[0][0], 0x7F)
        rest = [(0x80, rest[0][1]), *rest[1:]]
    else:
        ascii_mask = 0
    if rest and rest != _ALL_NON_ASCII:
        return utf8.codepoints(ranges)
    for lo, hi in ranges[:split]:
        ascii_mask |= ir.range_mask(lo, hi)
    ascii_node = ir.byte_set(ascii_mask)
    return ir.alt(ascii_node, _non_ascii_node()) if rest else ascii_node


@cache
def _non_ascii_node() -> ir.Node:
    return utf8.codepoints([(0x80, utf8.MAX_CODE_POINT)])
