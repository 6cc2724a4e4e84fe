"""The regex front end: pattern text in, byte-level IR out.

Takes: a regex pattern (``str``), ``Limits`` and a flavor. Hands on: ``parse`` gives the full-match
language of the pattern (a ``FrontendResult``); ``parse_search`` gives the language of the strings
that *contain* a match (JSON Schema ``pattern`` semantics). Both are built from the smart
constructors of ``moonmaskc.ir``; code points are compiled to UTF-8 byte sequences through
``moonmaskc.frontends.utf8``, so no IR built here ever accepts invalid UTF-8.

This module holds the package's entry points (``moonmaskc.frontends.regex`` re-exports them).
``nesting`` refuses groups nested past ``--max-nesting`` before the parse. The syntax lives in
``moonmaskc/grammars/regex.lark``, parsed by the one Lark LALR parser of ``lexer``; the ``builder``
callbacks run inline while Lark parses (no parse tree is built) and give each rule and token its
meaning; what one parse needs besides the tokens (pattern, limits, flavor) sits in a context
variable (``context``), so the one parser serves every thread. ``docs/regex.md`` is the user-facing
reference. Decisions worth knowing:

- ``\\d \\w`` are ASCII in every flavor; ``\\s`` and ``.`` depend on the flavor: ``"python"`` (the
  default of ``parse``) is Python's ``re`` with ``re.ASCII``: ``.`` is any character but ``\\n``,
  ``\\s`` is ``[ \\t\\n\\r\\f\\v]``. ``"ecma"`` is ECMA-262: ``.`` excludes ``\\n \\r U+2028 U+2029`` and
  ``\\s`` is WhiteSpace plus LineTerminator. Negations (``\\D``, ``[^a]``, ...) are every valid UTF-8
  character outside the set.
- ``\\xNN`` in a pattern means the code point U+00NN, as in Python and ECMAScript, so ``\\xe9`` is
  the two bytes of "é". ``moonmaskc.ir.to_regex`` prints IR over *bytes* with ``\\xNN`` for bytes
  above 0x7F, so printed IR parses back to the same language only when it uses ASCII bytes alone.
- A ``{`` that does not start a repetition ``{m}``, ``{m,}``, ``{m,n}`` is a syntax error (Python
  would read it as a literal); ``]`` and ``}`` on their own are literals. ``[]`` and ``[^]`` are
  errors, because Python and ECMAScript read them differently.
- ``^`` and ``$`` at the very start and end of the pattern or of a top-level alternative, or of an
  alternative of a group that is itself a whole such alternative (``(^a|b$)``; its alternatives
  become top-level ones), are anchors of the plain parse: for ``parse`` they change nothing; for
  ``parse_search`` they anchor that alternative. In the python flavor ``$`` also matches before one
  trailing ``\\n``.
- Any other zero-width assertion (``^`` or ``$`` elsewhere, ``\\b``, ``\\B``, ``(?=...)``,
  ``(?!...)``) makes the plain parse raise ``NeedsMarkers``; the pattern is then parsed again with
  every assertion read as a marker (``markers``), and ``assertions`` turns that language over text
  and markers into the texts where the assertions hold (``folding``: products for those outside
  repetitions; ``conditions`` and ``erasure``: the rest).
- Lazy quantifiers accept the same language as greedy ones. Everything that cannot be compiled
  exactly (lookbehind, backreferences, inline flags, atomic groups, possessive quantifiers,
  ``\\A \\Z``, octal escapes, lone surrogates, ...) raises ``UnsupportedError`` naming it and its
  position.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark.exceptions import UnexpectedInput

from moonmaskc import ir
from moonmaskc.frontends import FrontendResult, utf8
from moonmaskc.frontends.deep import escalate_if_inline
from moonmaskc.frontends.regex.assertions import resolve_assertions
from moonmaskc.frontends.regex.builder import Branch, alternation
from moonmaskc.frontends.regex.context import PARSE_CONTEXT, ParseContext
from moonmaskc.frontends.regex.errors import syntax_error
from moonmaskc.frontends.regex.flavors import FLAVORS, Flavor, flavor_named
from moonmaskc.frontends.regex.lexer import parse_tokens
from moonmaskc.frontends.regex.markers import Markers, NeedsMarkers
from moonmaskc.frontends.regex.nesting import check_nesting, too_deep
from moonmaskc.limits import Limits

DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class _Parsed:
    branches: list[Branch]
    named_groups: list[str]
    markers: Markers | None = None


def parse(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "python") -> FrontendResult:
    """The language of the strings that ``pattern`` matches whole (full match), as byte IR."""
    parsed = _parse_either(pattern, limits, flavor_named(flavor))
    if parsed.markers is None:
        node = alternation(parsed.branches)
    else:
        node = resolve_assertions([branch.node for branch in parsed.branches], False, parsed.markers, limits)
    notes = {"flavor": flavor, "named_groups": parsed.named_groups}
    return FrontendResult(node=node, notes=notes)


def parse_search(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "ecma") -> ir.Node:
    """The language of the strings that contain a match of ``pattern`` (unanchored search).

    A top-level alternative that starts with ``^`` must match at the start, one that ends with
    ``$`` at the end (python flavor: at the end or before one final ``\\n``). Alternatives with
    the same anchors are searched together: ``.*(a|b).*``, not ``.*a.*|.*b.*``. A pattern with
    assertions elsewhere is searched as ``.*(pattern).*`` with its assertions as markers.
    """
    chosen = flavor_named(flavor)
    parsed = _parse_either(pattern, limits, chosen)
    anything = ir.star(utf8.any_char())
    if parsed.markers is not None:
        return resolve_assertions([branch.node for branch in parsed.branches], True, parsed.markers, limits)
    end = ir.optional(ir.text("\n")) if chosen.dollar_allows_final_newline else ir.EPSILON
    # Alternatives anchored alike share one prefix and suffix: a string contains a match of a or
    # of b exactly when it contains a match of a|b, and one copy of ``.*`` keeps the subset
    # construction from tracking a copy per alternative (17 unanchored words took minutes).
    by_anchors: dict[tuple[bool, bool], list[ir.Node]] = {}
    for branch in parsed.branches:
        by_anchors.setdefault((branch.anchored_start, branch.anchored_end), []).append(branch.node)
    branches = []
    for (anchored_start, anchored_end), nodes in by_anchors.items():
        before = ir.EPSILON if anchored_start else anything
        after = end if anchored_end else anything
        branches.append(ir.seq(before, ir.alt(*nodes), after))
    return ir.alt(*branches)


def _parse_either(pattern: str, limits: Limits, flavor: Flavor) -> _Parsed:
    """The plain parse; where it meets an assertion that it cannot read as an anchor of an
    alternative, the parse with every assertion read as its marker (``markers``)."""
    try:
        return _parse(pattern, limits, flavor, None)
    except NeedsMarkers:
        return _parse(pattern, limits, flavor, Markers(pattern, flavor.dollar_allows_final_newline))


def _parse(pattern: str, limits: Limits, flavor: Flavor, markers: Markers | None) -> _Parsed:
    check_nesting(pattern, limits.max_nesting)
    parse = parse_tokens()
    context = ParseContext(pattern, limits, flavor, [], markers)
    reset = PARSE_CONTEXT.set(context)
    try:
        branches: list[Branch] = parse(pattern)
    except UnexpectedInput as error:
        raise syntax_error(error, pattern) from None
    except RecursionError as error:
        escalate_if_inline(error)
        raise too_deep(pattern) from None
    finally:
        PARSE_CONTEXT.reset(reset)
    return _Parsed(branches=branches, named_groups=context.named_groups, markers=markers)


__all__ = ["DEFAULT_LIMITS", "FLAVORS", "Flavor", "parse", "parse_search"]
