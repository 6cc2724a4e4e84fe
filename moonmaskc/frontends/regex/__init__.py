"""The regex front end: pattern text in, byte-level IR out.

Takes: a regex pattern, ``Limits`` and a flavor (``"python"`` or ``"ecma"``).
Hands on: ``parse``: the full-match language of the pattern (a ``FrontendResult``);
``parse_search``: the language of the strings that contain a match (JSON Schema ``pattern``).

Modules: ``parser`` (the entry points), ``nesting`` (the group nesting bound, checked before
parsing), ``lexer`` (the Lark lexer and parser over ``regex.lark``, the grammar's terminals),
``builder`` (the callbacks that turn rules and tokens into IR), ``escapes`` (escape sequences),
``classes`` (bracket classes), ``quantifiers`` (repetition bounds), ``codepoints`` (code points to
UTF-8 IR), ``flavors`` (python and ecma), ``context`` (what one parse carries), ``errors`` (syntax
errors in regex terms). Zero-width assertions: ``markers`` (what the parse puts where one stands),
``assertions`` (a marked pattern to its texts), ``folding`` (assertions outside repetitions, by
products), ``conditions`` (what each assertion asks of the text around it), ``erasure`` (the
construction that takes the markers out).
"""

from moonmaskc.frontends.regex.flavors import FLAVORS, Flavor
from moonmaskc.frontends.regex.parser import DEFAULT_LIMITS, parse, parse_search

__all__ = ["DEFAULT_LIMITS", "FLAVORS", "Flavor", "parse", "parse_search"]
