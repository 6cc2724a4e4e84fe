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
- ``^`` and ``$`` may stand only at the very start and end of the pattern or of a top-level
  alternative, or of an alternative of a group that is itself a whole such alternative
  (``(^a|b$)``; its alternatives become top-level ones). For ``parse`` they change nothing; for
  ``parse_search`` they anchor that alternative. In the python flavor a final ``$`` also
  matches before one trailing ``\\n``.
- Lazy quantifiers accept the same language as greedy ones. Everything that cannot be compiled
  exactly (lookaround, backreferences, inline flags, atomic groups, possessive quantifiers, ``\\b``,
  octal escapes, lone surrogates, ...) raises ``UnsupportedError`` naming it and its position.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark.exceptions import UnexpectedInput

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends import FrontendResult, utf8
from moonmaskc.frontends.regex.builder import Branch, alternation, has_lookahead
from moonmaskc.frontends.regex.context import PARSE_CONTEXT, ParseContext
from moonmaskc.frontends.regex.end_marker import MARKERS_AFTER, without_end_markers
from moonmaskc.frontends.regex.errors import syntax_error
from moonmaskc.frontends.regex.flavors import FLAVORS, Flavor, flavor_named
from moonmaskc.frontends.regex.lexer import regex_parser
from moonmaskc.frontends.regex.lookaround import resolve
from moonmaskc.frontends.regex.nesting import check_nesting, too_deep
from moonmaskc.limits import Limits

DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class _Parsed:
    branches: list[Branch]
    named_groups: list[str]
    end_markers: bool = False


def parse(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "python") -> FrontendResult:
    """The language of the strings that ``pattern`` matches whole (full match), as byte IR."""
    parsed = _parse_with_markers(pattern, limits, flavor_named(flavor))
    if parsed.end_markers or any(has_lookahead(branch) for branch in parsed.branches):
        node = ir.alt(
            *(
                resolve(branch, ir.EPSILON, ir.EPSILON, limits, pattern)
                if has_lookahead(branch)
                else branch.node
                for branch in parsed.branches
            )
        )
    else:
        node = alternation(parsed.branches)
    if parsed.end_markers:
        node = without_end_markers(node, limits)
    notes = {"flavor": flavor, "named_groups": parsed.named_groups}
    return FrontendResult(node=node, notes=notes)


def parse_search(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "ecma") -> ir.Node:
    """The language of the strings that contain a match of ``pattern`` (unanchored search).

    A top-level alternative that starts with ``^`` must match at the start, one that ends with
    ``$`` at the end (python flavor: at the end or before one final ``\\n``). Alternatives with
    the same anchors are searched together: ``.*(a|b).*``, not ``.*a.*|.*b.*``.
    """
    chosen = flavor_named(flavor)
    parsed = _parse_with_markers(pattern, limits, chosen)
    anything = ir.star(utf8.any_char())
    final_newline = ir.optional(ir.text("\n")) if chosen.dollar_allows_final_newline else ir.EPSILON
    if parsed.end_markers:  # every ``$`` is markers: the text ends with some, after anything else
        end: ir.Node = MARKERS_AFTER
        unanchored_end = ir.seq(anything, MARKERS_AFTER)
    else:
        end, unanchored_end = final_newline, anything
    # Alternatives anchored alike share one prefix and suffix: a string contains a match of a or
    # of b exactly when it contains a match of a|b, and one copy of ``.*`` keeps the subset
    # construction from tracking a copy per alternative (17 unanchored words took minutes).
    by_anchors: dict[tuple[bool, bool], list[ir.Node]] = {}
    branches = []
    for branch in parsed.branches:
        if has_lookahead(branch):  # the lookaheads see the text after the match too
            before = ir.EPSILON if branch.anchored_start else anything
            after = end if branch.anchored_end else unanchored_end
            branches.append(ir.seq(before, resolve(branch, after, end, limits, pattern)))
            continue
        by_anchors.setdefault((branch.anchored_start, branch.anchored_end), []).append(branch.node)
    for (anchored_start, anchored_end), nodes in by_anchors.items():
        before = ir.EPSILON if anchored_start else anything
        after = end if anchored_end else unanchored_end
        branches.append(ir.seq(before, ir.alt(*nodes), after))
    searched = ir.alt(*branches)
    return without_end_markers(searched, limits) if parsed.end_markers else searched


def _parse_with_markers(pattern: str, limits: Limits, flavor: Flavor) -> _Parsed:
    """The parse; where ``$`` cannot be read as an anchor of an alternative and the flavor's
    ``$`` means the end of the text alone, the parse with every ``$`` read as end markers
    (``end_marker``)."""
    try:
        return _parse(pattern, limits, flavor)
    except UnsupportedError as error:
        if flavor.dollar_allows_final_newline or "anchor" not in error.construct or "$" not in pattern:
            raise
        try:
            return _parse(pattern, limits, flavor, end_markers=True)
        except UnsupportedError:
            raise error from None


def _parse(pattern: str, limits: Limits, flavor: Flavor, end_markers: bool = False) -> _Parsed:
    check_nesting(pattern, limits.max_nesting)
    parser = regex_parser()
    context = ParseContext(pattern, limits, flavor, [], end_markers)
    reset = PARSE_CONTEXT.set(context)
    try:
        branches: list[Branch] = parser.parse(pattern)  # type: ignore[assignment]
    except UnexpectedInput as error:
        raise syntax_error(error, pattern) from None
    except RecursionError:
        raise too_deep(pattern) from None
    finally:
        PARSE_CONTEXT.reset(reset)
    return _Parsed(branches=branches, named_groups=context.named_groups, end_markers=end_markers)


__all__ = ["DEFAULT_LIMITS", "FLAVORS", "Flavor", "parse", "parse_search"]
