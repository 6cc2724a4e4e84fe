"""The regex front end: pattern text in, byte-level IR out.

Takes: a regex pattern, ``Limits`` and a flavor (``"python"`` or ``"ecma"``).
Hands on: ``parse``: the full-match language of the pattern (a ``FrontendResult``);
``parse_search``: the language of the strings that contain a match (JSON Schema ``pattern``).

Modules: ``parser`` (the Lark grammar's callbacks building the IR, flavors, escapes and classes,
syntax errors in regex terms) and ``nesting`` (the group nesting bound, checked before parsing).
"""

from moonmaskc.frontends.regex.parser import DEFAULT_LIMITS, FLAVORS, Flavor, parse, parse_search

__all__ = ["DEFAULT_LIMITS", "FLAVORS", "Flavor", "parse", "parse_search"]
