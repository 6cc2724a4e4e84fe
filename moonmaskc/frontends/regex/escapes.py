"""Escape sequences (``\\n``, ``\\xNN``, ``\\uNNNN``, ``\\d``, ``\\w``, ``\\s`` and their negations, ...).

Takes: the text of one escape (backslash included), its position in the pattern, and whether it
stands inside a character class. Hands on: the code points it stands for (``escape_ranges``), or
its IR outside a class (``escape_node``; ``\\b`` and ``\\B`` there are markers, see ``markers``);
escapes that cannot be compiled exactly raise an error naming them.
"""

from __future__ import annotations

from functools import cache

from moonmaskc import ir
from moonmaskc.frontends import utf8
from moonmaskc.frontends.regex.codepoints import Ranges, checked_code_point, code_points_node
from moonmaskc.frontends.regex.context import current_parse
from moonmaskc.frontends.regex.errors import source_error, unsupported
from moonmaskc.frontends.regex.flavors import Flavor
from moonmaskc.frontends.regex.markers import Assertion, Kind, NeedsMarkers

_DIGIT: Ranges = [(0x30, 0x39)]
_WORD: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SHORTHAND_LETTERS = ("d", "w", "s")
_CONTROL_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}

# Letter escapes that are refused, with the construct they name and why.
_UNSUPPORTED_LETTER_ESCAPES = {
    "B": ("escape \\B inside a class", "Python rejects it, ECMAScript reads it as 'B'; write B"),
    "A": ("anchor \\A", "use '^' at the start of the pattern"),
    "Z": ("anchor \\Z", "use '$' at the end of the pattern"),
    "z": ("anchor \\z", "use '$' at the end of the pattern"),
    "G": ("anchor \\G", "assertions about context are not compiled"),
    "k": ("named backreference \\k", "a backreference is not a regular language"),
    "p": ("Unicode property escape \\p", "Unicode properties are not compiled"),
    "P": ("Unicode property escape \\P", "Unicode properties are not compiled"),
    "N": ("named character escape \\N", "write the character itself or \\uNNNN"),
    "c": ("control escape \\c", "write the character as \\xNN"),
    "a": ("escape \\a", "Python reads it as BEL, ECMAScript as 'a'; write \\x07 or a"),
}


def escape_node(text: str, position: int) -> ir.Node:
    """One escape outside a class (the ESCAPE syntax) at ``position`` in the pattern."""
    letter = text[1]
    if len(text) == 2 and letter in "dwsDWS":
        return _shorthand_node(current_parse().flavor, letter)
    if len(text) == 2 and letter in "bB":
        return _boundary_marker(letter, position)
    return code_points_node(escape_ranges(text, position, in_class=False))


def _boundary_marker(letter: str, position: int) -> ir.Node:
    """``\\b`` or ``\\B``: a marker in the parse with markers (the plain parse cannot place it)."""
    markers = current_parse().markers
    if markers is None:
        raise NeedsMarkers
    return markers.marker(Assertion(Kind.BOUNDARY if letter == "b" else Kind.NOT_BOUNDARY), position)


def escape_ranges(text: str, position: int, in_class: bool) -> Ranges:
    """The code points that escape ``text`` (backslash included) stands for."""
    body = text[1:]
    letter = body[0]
    if body.startswith("u{"):
        raise unsupported(
            f"code point escape {text}",
            "the \\u{...} form needs ECMAScript's u flag; write \\uNNNN or \\UNNNNNNNN",
            position,
        )
    if len(body) > 1 and letter in "xuU":
        code_point = checked_code_point(int(body[1:], 16), text, position)
        return [(code_point, code_point)]
    if letter.isdigit():
        return _digit_escape(body, text, position, in_class)
    if letter in _CONTROL_ESCAPES:
        code_point = _CONTROL_ESCAPES[letter]
        return [(code_point, code_point)]
    if letter.lower() in _SHORTHAND_LETTERS:
        return _shorthand_ranges(current_parse().flavor, letter)
    if letter == "b" and in_class:
        return [(0x08, 0x08)]
    _reject_letter_escape(letter, text, position)
    code_point = checked_code_point(ord(letter), text, position)
    return [(code_point, code_point)]


def _shorthand_ranges(flavor: Flavor, letter: str) -> Ranges:
    """``\\d \\w \\s`` (ASCII digits and word characters, the flavor's spaces) and their negations."""
    ranges = {"d": _DIGIT, "w": _WORD, "s": list(flavor.space)}[letter.lower()]
    return utf8.complement(ranges) if letter.isupper() else list(ranges)


@cache
def _shorthand_node(flavor: Flavor, letter: str) -> ir.Node:
    """``\\d \\w \\s \\D \\W \\S`` as IR (constant per flavor)."""
    return utf8.codepoints(_shorthand_ranges(flavor, letter))


def _digit_escape(body: str, text: str, position: int, in_class: bool) -> Ranges:
    if body == "0":
        return [(0, 0)]
    if body.startswith("0") or in_class:
        raise unsupported(
            f"octal escape {text}",
            "Python and ECMAScript read octal escapes differently; use \\xNN",
            position,
        )
    raise unsupported(f"backreference {text}", "a backreference is not a regular language", position)


def _reject_letter_escape(letter: str, text: str, position: int) -> None:
    if letter in _UNSUPPORTED_LETTER_ESCAPES:
        construct, reason = _UNSUPPORTED_LETTER_ESCAPES[letter]
        raise unsupported(construct, reason, position)
    if letter in "xuU":
        digits = {"x": 2, "u": 4, "U": 8}[letter]
        raise source_error(f"incomplete escape \\{letter}: it needs {digits} hex digits", position)
    if letter.isascii() and letter.isalpha():
        raise source_error(f"bad escape {text}", position)
