"""What the parser's callbacks need about the parse under way, besides its tokens.

Takes: the pattern, limits, flavor and markers (if any) of one parse (set by ``parser`` around the
Lark parse). Hands on: ``current_parse()``, that parse's ``ParseContext``. It sits in a context
variable, so the one Lark parser serves every thread.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from moonmaskc.frontends.regex.flavors import Flavor
from moonmaskc.frontends.regex.markers import Markers
from moonmaskc.limits import Limits


@dataclass
class ParseContext:
    """What the callbacks of one parse need besides the tokens."""

    pattern: str
    limits: Limits
    flavor: Flavor
    named_groups: list[str]
    # Every assertion read as its marker (the parse with markers, see ``markers``), or None.
    markers: Markers | None = None


PARSE_CONTEXT: ContextVar[ParseContext] = ContextVar("moonmaskc_regex_context")


def current_parse() -> ParseContext:
    return PARSE_CONTEXT.get()
