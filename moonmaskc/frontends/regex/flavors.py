"""The regex flavors: what ``.`` excludes and what ``\\s`` means in each.

Takes: a flavor name (``"python"`` or ``"ecma"``). Hands on: its ``Flavor`` (``flavor_named``, a
``ValueError`` for an unknown name); ``FLAVORS`` maps every name to its flavor.
"""

from __future__ import annotations

from dataclasses import dataclass

_ASCII_SPACE = [(0x09, 0x0D), (0x20, 0x20)]
_ECMA_LINE_TERMINATORS = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_ECMA_SPACE = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
]


@dataclass(frozen=True)
class Flavor:
    """What ``.`` excludes and what ``\\s`` means; ``dollar_allows_final_newline`` for search."""

    name: str
    dot_excludes: tuple[tuple[int, int], ...]
    space: tuple[tuple[int, int], ...]
    dollar_allows_final_newline: bool


FLAVORS = {
    "python": Flavor("python", ((0x0A, 0x0A),), tuple(_ASCII_SPACE), True),
    "ecma": Flavor("ecma", tuple(_ECMA_LINE_TERMINATORS), tuple(_ECMA_SPACE), False),
}


def flavor_named(name: str) -> Flavor:
    try:
        return FLAVORS[name]
    except KeyError:
        raise ValueError(f"unknown regex flavor {name!r}: choose one of {', '.join(FLAVORS)}") from None
