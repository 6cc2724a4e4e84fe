"""Strings: a schema's string keywords to the language of its canonical quoted strings.

Takes: the schema's ``StringKeywords`` (``normalize.string_keywords``) and the walk
(``compiler.SchemaWalk``).
Hands on: canonical JSON strings within ``minLength`` / ``maxLength``, in the language of a known
``format`` (``schema.formats``; the normaliser has already set unknown names aside) and matching
``pattern`` (an ECMA regex searched anywhere in the decoded string), intersected as DFAs. A length
bound that cannot fit ``--max-states`` fails early (strict) or is dropped (lenient); the states
each length bound needs are recorded for the error a too-big DFA raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc import ir
from moonmaskc.automata.counted import COUNTED_MARKER_BYTES
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import intersect
from moonmaskc.errors import LimitError, UnsupportedError
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.automata import string_body_automaton, string_char_automaton
from moonmaskc.frontends.schema.refs import pointer_child
from moonmaskc.frontends.schema.typed import StringKeywords
from moonmaskc.limits import Limits

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.compiler import SchemaWalk


def string(walk: SchemaWalk, keywords: StringKeywords, where: str) -> ir.Node:
    """The quoted canonical strings that the string keywords of the schema at ``where`` accept."""
    automata = walk.automata
    if keywords.empty:
        return ir.NOTHING
    least, most = keywords.min_length, keywords.max_length
    if keywords.length_only:  # a pattern or a format may bound the length lower
        counted = counted_body(walk, least, most)
        if counted is not None:
            return canonical.quoted(counted)
        if most is not None and not length_fits(walk, "maxLength", most, where):
            most = None
        if least and not length_fits(walk, "minLength", least, where):
            least = 0
    any_body = string_body_automaton()
    body = any_body if least == 0 and most is None else ir.repeat(string_char_automaton(), least, most)
    constraints: list[DFA] = []
    within_body = False  # whether a constraint (so their intersection) lies inside STRING_BODY
    if keywords.format is not None:
        from moonmaskc.frontends.schema.formats import format_string_dfa

        constraints.append(format_string_dfa(keywords.format, walk.limits))
        within_body = True
    if keywords.pattern is not None:
        pattern = keywords.pattern
        node = walk.ctx.attempt(
            "pattern", pointer_child(where, "pattern"), lambda: walk_pattern_node(walk, pattern)
        )
        if node is not None:
            pattern_where = pointer_child(where, "pattern")
            found = walk.ctx.within_bounds("pattern", pattern_where, lambda: automata.dfa(node))
            if found is not None:
                constraints.append(found)
                # The pattern's strings are valid UTF-8, escaped canonically (``pattern_node``):
                # inside STRING_BODY already.
                within_body = True
    if not constraints:
        return canonical.quoted(body)
    if within_body and body is any_body:
        inputs = tuple(constraints)
    else:
        inputs = (automata.dfa(body), *constraints)

    def language() -> DFA:
        result = inputs[0]
        for constraint in inputs[1:]:
            result = intersect(result, constraint, walk.limits)
        return result

    return canonical.quoted(automata.derived("string", inputs, language))


COUNTED_MIN_ROOM = 64
"""A plain string whose ``maxLength - minLength`` is at least this is compiled as a counted region
when the compile uses length counters (written out, it needs 14 states per character), at least
``COUNTED_MIN_ROOM_AFTER_PREFIX`` when ``minLength`` characters come before it. The token table
needs every region's room past the characters a token can start in a region it enters
(``token_table._counted_regions_admitted``). A region right after the opening quote is entered by the
quote: GPT-2's and SmolLM2's tokens start at most 3 characters after a quote, Mistral's 6,
Llama-3's 32."""

COUNTED_MIN_ROOM_AFTER_PREFIX = 129
"""After written-out ``minLength`` characters, a region is entered by any character's last byte,
so a token may start as many characters in it as the longest token has: 128 bytes for GPT-2 and
Llama-3."""

COUNTED_MAX_PREFIX = 256
"""The most characters of a counted string's ``minLength`` written out before its region; a
longer ``minLength`` keeps the whole bound written out."""


def counted_body(walk: SchemaWalk, least: int, most: int | None) -> ir.Node | None:
    """The body of a plain string of ``least`` to ``most`` characters as a counted region
    (``automata.counted``): the first ``least`` characters written out, then the marker byte that
    stands for up to ``most - least`` more. None when the compile does not use length counters,
    there is no ``maxLength`` (the rest is then every string), the room ``most - least`` is below
    ``COUNTED_MIN_ROOM`` (``COUNTED_MIN_ROOM_AFTER_PREFIX`` after a prefix), ``least`` is past
    ``COUNTED_MAX_PREFIX`` or no marker is left.

    A region's lower bound is then always 0: no string can close before its ``minLength``, so no
    token, however many quotes it holds, can end a counted string too early (a token cannot hold
    a whole string that is too long either: the token table checks that the regions' upper bounds
    are past the longest token)."""
    markers = walk.ctx.markers
    if markers is None or most is None or least > COUNTED_MAX_PREFIX:
        return None
    if most - least < (COUNTED_MIN_ROOM_AFTER_PREFIX if least else COUNTED_MIN_ROOM):
        return None
    bounds = (0, most - least)
    if bounds in walk.ctx.uncounted:
        return None
    marker = next((byte for byte, known in markers.items() if known == bounds), None)
    if marker is None:
        if len(markers) == len(COUNTED_MARKER_BYTES):
            return None
        marker = COUNTED_MARKER_BYTES[len(markers)]
        markers[marker] = bounds
    return ir.seq(ir.repeat(string_char_automaton(), least, least), ir.byte_set(1 << marker))


def length_fits(walk: SchemaWalk, keyword: str, length: int, where: str) -> bool:
    """Whether a string length bound fits the state bound: ``length`` characters need one
    state per count for each state inside a character, all distinct in the minimal DFA of
    any schema that reaches the string (its closing quote ends it), so past the bound the
    compile would fail anyway, only after building most of the automaton. Strict: a
    ``LimitError`` naming the keyword. Lenient: a warning; the caller drops the keyword."""
    ctx, limits = walk.ctx, walk.limits
    per_character = string_char_automaton().dfa.num_states - 2  # not the dead state nor the end
    needed = per_character * length + 1
    if ctx.lenient and pointer_child(where, keyword) in ctx.dropped_lengths:
        ctx.drop(
            f"ignored keyword {keyword!r} at {where}: {keyword} {length} needs at least {needed} "
            f"automaton states, among the string bounds that cost the most in a schema whose "
            f"automaton is past max_states {limits.max_states} (raise it with --max-states)"
        )
        return False
    if needed <= limits.max_states:
        ctx.string_costs[f"{keyword} {length} at {pointer_child(where, keyword)}"] = needed
        return True
    need = f"{keyword} {length} needs at least {needed} automaton states ({per_character} per character)"
    if not ctx.lenient:
        raise LimitError(
            "max_states",
            limits.max_states,
            f"{need}, at {pointer_child(where, keyword)}",
            flag="--max-states",
        )
    ctx.drop(
        f"ignored keyword {keyword!r} at {where}: {need}, more than max_states "
        f"{limits.max_states} (raise it with --max-states)"
    )
    return False


def walk_pattern_node(walk: SchemaWalk, pattern: Any) -> ir.Node:
    """``pattern_node``, parsed once per walk for each pattern text (the walk's ``automata``)."""
    if not isinstance(pattern, str):
        return pattern_node(pattern, walk.limits)  # the error, at each place it stands
    found = walk.automata.patterns.get(pattern)
    if found is None:
        found = walk.automata.patterns[pattern] = pattern_node(pattern, walk.limits)
    return found


def pattern_node(pattern: Any, limits: Limits) -> ir.Node:
    """The decoded strings that the ECMA regex ``pattern`` matches somewhere, escaped canonically."""
    from moonmaskc.frontends.regex import parse_search

    if not isinstance(pattern, str):
        raise UnsupportedError("pattern", "must be a string")
    decoded = parse_search(pattern, limits, flavor="ecma")
    return canonical.escape_node(decoded)
