"""The regex front end: pattern text in, byte-level IR out.

Takes: a regex pattern (``str``), ``Limits`` and a flavor. Hands on: ``parse`` gives the full-match
language of the pattern (a ``FrontendResult``); ``parse_search`` gives the language of the strings
that *contain* a match (JSON Schema ``pattern`` semantics). Both are built from the smart
constructors of ``moonmaskc.ir``; code points are compiled to UTF-8 byte sequences through
``moonmaskc.utf8``, so no IR built here ever accepts invalid UTF-8.

This module is the package's parser (``moonmaskc.frontends.regex`` re-exports its entry points);
``nesting`` refuses groups nested past ``--max-nesting`` before it runs. The syntax lives in
``moonmaskc/grammars/regex.lark`` (loaded once with Lark LALR); the ``_IRBuilder``
callbacks run inline while Lark parses (no parse tree is built) and give each rule and token its
meaning; what one parse needs besides the tokens (pattern, limits, flavor) sits in a context
variable, so the one parser serves every thread. ``docs/regex.md`` is the user-facing reference. Decisions
worth knowing:

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
  alternative. For ``parse`` they change nothing; for ``parse_search`` they anchor that
  alternative. In the python flavor a final ``$`` also matches before one trailing ``\\n``.
- Lazy quantifiers accept the same language as greedy ones. Everything that cannot be compiled
  exactly (lookaround, backreferences, inline flags, atomic groups, possessive quantifiers, ``\\b``,
  octal escapes, lone surrogates, ...) raises ``UnsupportedError`` naming it and its position.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer

from moonmaskc import ir, utf8
from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends import FrontendResult
from moonmaskc.frontends.regex.nesting import check_nesting, too_deep
from moonmaskc.grammar_files import grammar_text
from moonmaskc.limits import Limits

Ranges = list[tuple[int, int]]
DEFAULT_LIMITS = Limits()

_DIGIT: Ranges = [(0x30, 0x39)]
_WORD: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_ASCII_SPACE: Ranges = [(0x09, 0x0D), (0x20, 0x20)]
_ECMA_LINE_TERMINATORS: Ranges = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_ECMA_SPACE: Ranges = [
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
_CONTROL_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}
_CLASS_ENDPOINT = re.compile(
    r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[pPNu]\{[^}]*\}|k<[^>]*>|[0-9]+|[\s\S])|[\s\S]"
)


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


def _flavor(name: str) -> Flavor:
    try:
        return FLAVORS[name]
    except KeyError:
        raise ValueError(f"unknown regex flavor {name!r}: choose one of {', '.join(FLAVORS)}") from None


class _Lexer(Lexer):
    """Lark's basic lexer, lean: one master regex over the grammar's terminals, tried in Lark's
    own order (priority, then longest possible match, then pattern length, then name), and tokens
    that carry only their type, text and start position (the pattern is one line).

    A contextual lexer is not needed: no two terminals can start the same text in different parser
    states, so the token stream is the one Lark's lexers produce, and a token that the parser does
    not expect becomes the same ``UnexpectedToken``.
    """

    def __init__(self, lexer_conf: Any) -> None:
        terminals = sorted(
            lexer_conf.terminals,
            key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name),
        )
        self._names = [t.name for t in terminals]
        self._master = re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals))

    def lex(self, text: str) -> Iterator[Token]:  # type: ignore[override]
        match = self._master.match
        position = 0
        end = len(text)
        while position < end:
            found = match(text, position)
            if found is None:
                raise UnexpectedCharacters(text, position, 1, position + 1, allowed=set(self._names))
            value = found.group()
            yield Token(found.lastgroup, value, position)  # type: ignore[arg-type]
            position += len(value)


@cache
def _parser() -> Lark:
    return Lark(
        grammar_text("regex.lark"),
        parser="lalr",
        lexer=_Lexer,
        transformer=_IRBuilder(),
        keep_all_tokens=True,
        maybe_placeholders=False,
    )


@cache
def _class_item_pattern() -> re.Pattern[str]:
    """One character class item, cut out of the grammar's CHAR_CLASS terminal."""
    whole = _parser().get_terminal("CHAR_CLASS").pattern.value
    prefix, suffix = "\\[(?>\\^?)(?>", ")+\\]"
    assert whole.startswith(prefix) and whole.endswith(suffix), whole
    return re.compile(whole[len(prefix) : -len(suffix)])


@cache
def _escape_pattern() -> re.Pattern[str]:
    return re.compile(_parser().get_terminal("ESCAPE").pattern.value)


@cache
def _atom_pattern() -> re.Pattern[str]:
    """One item of an ATOMS run: a run of literals, '.', an escape or a character class (the
    grammar's own LITERAL, ESCAPE and CHAR_CLASS patterns; ATOMS is checked to be made of exactly
    these)."""
    parser = _parser()
    literal = parser.get_terminal("LITERAL").pattern.value
    escape = parser.get_terminal("ESCAPE").pattern.value
    char_class = parser.get_terminal("CHAR_CLASS").pattern.value
    escape_items = escape.replace("\\(", "\\(?:", 1)
    expected = f"(?:(?>{literal}|\\.|{escape_items}|{char_class})(?![*+?{{]))+"
    atoms = parser.get_terminal("ATOMS").pattern.value
    assert atoms == expected, (atoms, expected)
    return re.compile(
        f"(?P<literals>{literal}+)|(?P<dot>\\.)|(?P<escape>{escape})|(?P<char_class>{char_class})"
    )


@cache
def _dot_node(flavor: Flavor) -> ir.Node:
    return utf8.any_char(exclude=flavor.dot_excludes)


@cache
def _shorthand_node(flavor: Flavor, letter: str) -> ir.Node:
    """``\\d \\w \\s \\D \\W \\S`` as IR (constant per flavor)."""
    ranges = {"d": _DIGIT, "w": _WORD, "s": list(flavor.space)}[letter.lower()]
    return utf8.codepoints(utf8.complement(ranges) if letter.isupper() else ranges)


@cache
def _non_ascii_node() -> ir.Node:
    return utf8.codepoints([(0x80, utf8.MAX_CODE_POINT)])


_ALL_NON_ASCII = utf8.normalize([(0x80, utf8.MAX_CODE_POINT)])


def _code_points_node(ranges: Ranges) -> ir.Node:
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


@dataclass
class _Context:
    """What the callbacks of one parse need besides the tokens."""

    pattern: str
    limits: Limits
    flavor: Flavor
    named_groups: list[str]


_CONTEXT: ContextVar[_Context] = ContextVar("moonmaskc_regex_context")


class _Branch:
    """One alternative being read: its items and where ``^`` / ``$`` stand.

    ``^`` is allowed only before everything else and ``$`` only after everything else, so the
    first item or anchor that follows a ``$`` makes that ``$`` an error.
    """

    __slots__ = ("anchor_position", "anchored_start", "dollar_position", "items")

    def __init__(self) -> None:
        self.items: list[ir.Node] = []
        self.anchored_start = False
        self.dollar_position: int | None = None
        self.anchor_position: int | None = None

    @property
    def anchored_end(self) -> bool:
        return self.dollar_position is not None

    @property
    def node(self) -> ir.Node:
        return ir.seq(*self.items)


@dataclass(frozen=True)
class _Parsed:
    branches: list[_Branch]
    named_groups: list[str]


def parse(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "python") -> FrontendResult:
    """The language of the strings that ``pattern`` matches whole (full match), as byte IR."""
    parsed = _parse(pattern, limits, _flavor(flavor))
    node = _alternation(parsed.branches)
    notes = {"flavor": flavor, "named_groups": parsed.named_groups}
    return FrontendResult(node=node, notes=notes)


def parse_search(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "ecma") -> ir.Node:
    """The language of the strings that contain a match of ``pattern`` (unanchored search).

    A top-level alternative that starts with ``^`` must match at the start, one that ends with
    ``$`` at the end (python flavor: at the end or before one final ``\\n``). Alternatives with
    the same anchors are searched together: ``.*(a|b).*``, not ``.*a.*|.*b.*``.
    """
    chosen = _flavor(flavor)
    parsed = _parse(pattern, limits, chosen)
    anything = ir.star(utf8.any_char())
    final_newline = ir.optional(ir.text("\n")) if chosen.dollar_allows_final_newline else ir.EPSILON
    # Alternatives anchored alike share one prefix and suffix: a string contains a match of a or
    # of b exactly when it contains a match of a|b, and one copy of ``.*`` keeps the subset
    # construction from tracking a copy per alternative (17 unanchored words took minutes).
    by_anchors: dict[tuple[bool, bool], list[ir.Node]] = {}
    for branch in parsed.branches:
        by_anchors.setdefault((branch.anchored_start, branch.anchored_end), []).append(branch.node)
    branches = []
    for (anchored_start, anchored_end), nodes in by_anchors.items():
        before = ir.EPSILON if anchored_start else anything
        after = final_newline if anchored_end else anything
        branches.append(ir.seq(before, ir.alt(*nodes), after))
    return ir.alt(*branches)


def _parse(pattern: str, limits: Limits, flavor: Flavor) -> _Parsed:
    check_nesting(pattern, limits.max_nesting)
    parser = _parser()
    context = _Context(pattern, limits, flavor, [])
    reset = _CONTEXT.set(context)
    try:
        branches: list[_Branch] = parser.parse(pattern)  # type: ignore[assignment]
    except UnexpectedInput as error:
        raise _syntax_error(error, pattern) from None
    except RecursionError:
        raise too_deep(pattern) from None
    finally:
        _CONTEXT.reset(reset)
    return _Parsed(branches=branches, named_groups=context.named_groups)


def _source_error(message: str, position: int | None) -> SourceError:
    return SourceError(message, _CONTEXT.get().pattern, position)


def _unsupported(construct: str, reason: str, position: int) -> UnsupportedError:
    return UnsupportedError(construct, reason, _CONTEXT.get().pattern, position)


def _misplaced_anchor(kind: str, position: int) -> UnsupportedError:
    return _unsupported(
        f"anchor '{kind}' in the middle of the pattern",
        "'^' and '$' may stand only at the very start and end of the pattern or of a top-level alternative",
        position,
    )


class _IRBuilder(Transformer[Token, Any]):
    """The callbacks Lark runs while it parses (one per rule, and one per token type that has a
    meaning of its own). Atoms become IR nodes as soon as they are lexed; a concatenation is a
    ``_Branch`` that grows item by item; an alternation is a list of branches."""

    # -- structure ---------------------------------------------------------------------------

    def start(self, children: list[list[_Branch]]) -> list[_Branch]:
        return children[0]

    def first_branch(self, children: list[_Branch]) -> list[_Branch]:
        return children

    def next_branch(self, children: list[Any]) -> list[_Branch]:
        branches: list[_Branch] = children[0]
        branches.append(children[2])
        return branches

    def empty_concat(self, children: list[Any]) -> _Branch:
        return _Branch()

    def concat_atom(self, children: list[Any]) -> _Branch:
        branch: _Branch = children[0]
        if branch.dollar_position is not None:
            raise _misplaced_anchor("$", branch.dollar_position)
        item = children[1]
        if type(item) is list:  # the atoms of an ATOMS run
            branch.items += item
        else:
            branch.items.append(item)
        return branch

    def concat_repeat(self, children: list[Any]) -> _Branch:
        branch: _Branch = children[0]
        if branch.dollar_position is not None:
            raise _misplaced_anchor("$", branch.dollar_position)
        low, high = _bounds(children[2])
        branch.items.append(ir.repeat(children[1], low, high))
        return branch

    def concat(self, children: list[_Branch]) -> _Branch:
        return children[0]

    def double_quantifier(self, children: list[Any]) -> _Branch:
        token: Token = children[1]
        raise _source_error(
            f"quantifier '{token}' follows another quantifier; wrap the first in (?:...)", _start(token)
        )

    def concat_anchor(self, children: list[Any]) -> _Branch:
        branch: _Branch = children[0]
        token: Token = children[1]
        position = _start(token)
        if branch.dollar_position is not None:
            raise _misplaced_anchor("$", branch.dollar_position)
        if token == "^":
            if branch.items or branch.anchored_start:
                raise _misplaced_anchor("^", position)
            branch.anchored_start = True
        else:
            branch.dollar_position = position
        if branch.anchor_position is None:
            branch.anchor_position = position
        return branch

    def group(self, children: list[Any]) -> ir.Node:
        branches: list[_Branch] = children[1]
        for branch in branches:
            if branch.anchor_position is not None:
                raise _unsupported(
                    "anchor inside a group",
                    "'^' and '$' may stand only at the very start and end of the pattern "
                    "or of a top-level alternative",
                    branch.anchor_position,
                )
        return _alternation(branches)

    def group_open(self, children: list[Token]) -> Token:
        return children[0]

    # -- tokens with a meaning of their own (run when the parser shifts them) ----------------

    def ATOMS(self, token: Token) -> list[ir.Node]:
        text = str(token)
        base = _start(token)
        nodes: list[ir.Node] = []
        for match in _atom_pattern().finditer(text):
            kind, item, position = match.lastgroup, match.group(), base + match.start()
            if kind == "literals":
                nodes.append(_text_node(item, position))
            elif kind == "dot":
                nodes.append(_dot_node(_CONTEXT.get().flavor))
            elif kind == "escape":
                nodes.append(_escape_node(item, position))
            else:
                nodes.append(_class_node(item, position))
        return nodes

    def LITERAL(self, token: Token) -> ir.Node:
        return _text_node(str(token), _start(token))

    def ESCAPE(self, token: Token) -> ir.Node:
        return _escape_node(str(token), _start(token))

    def DOT(self, token: Token) -> ir.Node:
        return _dot_node(_CONTEXT.get().flavor)

    def CHAR_CLASS(self, token: Token) -> ir.Node:
        return _class_node(str(token), _start(token))

    def NAMED_GROUP_OPEN(self, token: Token) -> Token:
        text = str(token)
        name = text[text.index("<") + 1 : -1]
        named_groups = _CONTEXT.get().named_groups
        if name in named_groups:
            raise _source_error(f"group name {name!r} is defined twice", _start(token))
        named_groups.append(name)
        return token

    def LOOKAROUND_OPEN(self, token: Token) -> Token:
        raise _unsupported(
            f"lookaround '{token}'", "it constrains context without consuming it", _start(token)
        )

    def ATOMIC_OPEN(self, token: Token) -> Token:
        raise _unsupported(
            f"atomic group '{token}'", "it changes matching, not just the language", _start(token)
        )

    def SCOPED_FLAGS_OPEN(self, token: Token) -> Token:
        raise _unsupported(f"inline flags '{token}'", "only the default flags are compiled", _start(token))

    def CONDITIONAL_OPEN(self, token: Token) -> Token:
        raise _unsupported(f"conditional group '{token}'", "it depends on a backreference", _start(token))

    def OTHER_EXTENSION_OPEN(self, token: Token) -> Token:
        raise _unsupported(f"group extension '{token}'", "not a known group kind", _start(token))

    def INLINE_FLAGS(self, token: Token) -> ir.Node:
        raise _unsupported(f"inline flags '{token}'", "only the default flags are compiled", _start(token))

    def COMMENT(self, token: Token) -> ir.Node:
        raise _unsupported(f"comment group '{token}'", "comments are not compiled; remove it", _start(token))

    def NAMED_BACKREF(self, token: Token) -> ir.Node:
        raise _unsupported(
            f"backreference '{token}'", "a backreference is not a regular language", _start(token)
        )


def _escape_node(text: str, position: int) -> ir.Node:
    """One escape outside a class (the ESCAPE syntax) at ``position`` in the pattern."""
    letter = text[1]
    if len(text) == 2 and letter in "dwsDWS":
        return _shorthand_node(_CONTEXT.get().flavor, letter)
    return _code_points_node(_escape_ranges(text, position, in_class=False))


def _class_node(text: str, start: int) -> ir.Node:
    """A whole character class (the CHAR_CLASS syntax) starting at ``start`` in the pattern."""
    negated = text.startswith("[^")
    body_start = 2 if negated else 1
    base = start + body_start
    escape = _escape_pattern()
    ranges: Ranges = []
    for match in _class_item_pattern().finditer(text, body_start, len(text) - 1):
        item = match.group()
        position = base + match.start() - body_start
        if len(item) == 1:
            code_point = _checked_code_point(ord(item), item, position)
            ranges.append((code_point, code_point))
        elif len(item) == 3 and item[0] != "\\" and item[2] != "\\" and item[0] < item[2] < "\ud800":
            ranges.append((ord(item[0]), ord(item[2])))  # a plain range like a-z: nothing to check
        elif escape.fullmatch(item):
            ranges.extend(_escape_ranges(item, position, in_class=True))
        else:
            ranges.append(_class_range(item, position))
    if negated:
        ranges = utf8.complement(ranges)
    return _code_points_node(ranges)


def _alternation(branches: list[_Branch]) -> ir.Node:
    """``ir.alt`` of the branches; a lone branch that is a non-empty sequence is its own
    alternation, which saves ``ir.alt`` hashing the whole subtree."""
    if len(branches) == 1:
        node = branches[0].node
        if isinstance(node, ir.Seq) and node.items:
            return node
        return ir.alt(node)
    return ir.alt(*(branch.node for branch in branches))


def _text_node(text: str, position: int) -> ir.Node:
    try:
        return ir.literal(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        char = text[error.start]
        _checked_code_point(ord(char), char, position + error.start)
        raise


def _bounds(token: Token) -> tuple[int, int | None]:
    """The bounds of a quantifier token; its mode ``?`` (lazy) changes nothing, ``+`` is rejected."""
    text = str(token)
    position = _start(token)
    base_end = text.index("}") + 1 if text[0] == "{" else 1
    base = text[:base_end]
    if text[base_end:] == "+":
        raise _unsupported(
            f"possessive quantifier '{base}+'",
            "possessive repetition changes matching, not just the language",
            position + base_end,
        )
    if base == "*":
        return 0, None
    if base == "+":
        return 1, None
    if base == "?":
        return 0, 1
    low_text, comma, high_text = base[1:-1].partition(",")
    low = int(low_text)
    high = None if comma and not high_text else int(high_text or low_text)
    if high is not None and high < low:
        raise _source_error(f"repetition {base}: the minimum is larger than the maximum", position)
    limits = _CONTEXT.get().limits
    if max(low, high or 0) > limits.max_repeat:
        raise LimitError(
            "max_repeat",
            limits.max_repeat,
            f"repetition {base} at position {position} of the pattern exceeds the repetition bound",
            flag="--max-repeat",
        )
    return low, high


def _class_range(text: str, position: int) -> tuple[int, int]:
    first = _CLASS_ENDPOINT.match(text)
    assert first is not None
    second_start = first.end() + 1
    low = _range_endpoint(first.group(), position, text)
    high = _range_endpoint(text[second_start:], position + second_start, text)
    if low > high:
        raise _source_error(f"bad character range {text}: its start is above its end", position)
    return low, high


def _range_endpoint(text: str, position: int, whole: str) -> int:
    if not text.startswith("\\"):
        return _checked_code_point(ord(text), text, position)
    ranges = _escape_ranges(text, position, in_class=True)
    if len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
        raise _source_error(f"bad character range {whole}: {text} is a set, not one character", position)
    return ranges[0][0]


def _checked_code_point(code_point: int, text: str, position: int) -> int:
    if utf8.SURROGATES[0] <= code_point <= utf8.SURROGATES[1] and text == chr(code_point):
        # Not an escape but a character of the pattern itself: bytes that did not decode as UTF-8
        # (Python keeps byte 0xNN as U+DCNN), or a lone surrogate handed over through the API.
        if 0xDC80 <= code_point <= 0xDCFF:
            raise _source_error(
                f"byte 0x{code_point - 0xDC00:02X} in the pattern is not UTF-8 text (it did not "
                "decode); write the character itself in UTF-8, or \\xNN for U+00NN",
                position,
            )
        raise _source_error(
            f"the pattern holds a lone surrogate U+{code_point:04X}, which is not text UTF-8 can encode",
            position,
        )
    if utf8.SURROGATES[0] <= code_point <= utf8.SURROGATES[1]:
        raise _unsupported(
            f"surrogate code point U+{code_point:04X} ({text!r})",
            "UTF-8 text never contains surrogates; write the character itself",
            position,
        )
    if code_point > utf8.MAX_CODE_POINT:
        raise _source_error(f"escape {text} is above U+10FFFF", position)
    return code_point


def _escape_ranges(text: str, position: int, in_class: bool) -> Ranges:
    """The code points that escape ``text`` (backslash included) stands for."""
    body = text[1:]
    letter = body[0]
    if body.startswith("u{"):
        raise _unsupported(
            f"code point escape {text}",
            "the \\u{...} form needs ECMAScript's u flag; write \\uNNNN or \\UNNNNNNNN",
            position,
        )
    if len(body) > 1 and letter in "xuU":
        code_point = _checked_code_point(int(body[1:], 16), text, position)
        return [(code_point, code_point)]
    if letter.isdigit():
        return _digit_escape(body, text, position, in_class)
    if letter in _CONTROL_ESCAPES:
        code_point = _CONTROL_ESCAPES[letter]
        return [(code_point, code_point)]
    shorthand = {
        "d": _DIGIT,
        "w": _WORD,
        "s": list(_CONTEXT.get().flavor.space),
    }
    if letter.lower() in shorthand:
        ranges = shorthand[letter.lower()]
        return utf8.complement(ranges) if letter.isupper() else list(ranges)
    if letter == "b" and in_class:
        return [(0x08, 0x08)]
    _reject_letter_escape(letter, text, position)
    code_point = _checked_code_point(ord(letter), text, position)
    return [(code_point, code_point)]


def _digit_escape(body: str, text: str, position: int, in_class: bool) -> Ranges:
    if body == "0":
        return [(0, 0)]
    if body.startswith("0") or in_class:
        raise _unsupported(
            f"octal escape {text}",
            "Python and ECMAScript read octal escapes differently; use \\xNN",
            position,
        )
    raise _unsupported(f"backreference {text}", "a backreference is not a regular language", position)


# Letter escapes that are refused, with the construct they name and why.
_UNSUPPORTED_LETTER_ESCAPES = {
    "b": ("word boundary \\b", "assertions about context are not compiled"),
    "B": ("word boundary \\B", "assertions about context are not compiled"),
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


def _reject_letter_escape(letter: str, text: str, position: int) -> None:
    if letter in _UNSUPPORTED_LETTER_ESCAPES:
        construct, reason = _UNSUPPORTED_LETTER_ESCAPES[letter]
        raise _unsupported(construct, reason, position)
    if letter in "xuU":
        digits = {"x": 2, "u": 4, "U": 8}[letter]
        raise _source_error(f"incomplete escape \\{letter}: it needs {digits} hex digits", position)
    if letter.isascii() and letter.isalpha():
        raise _source_error(f"bad escape {text}", position)


def _start(token: Token) -> int:
    return int(token.start_pos or 0)


def _syntax_error(error: UnexpectedInput, pattern: str) -> SourceError:
    """A ``SourceError`` with a message that says what went wrong in regex terms."""
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream or 0
        found = pattern[position] if position < len(pattern) else ""
        if found == "[":
            return _bad_class_error(pattern, position)
        return SourceError(_unexpected_text_message(found), pattern, position)
    if isinstance(error, UnexpectedToken):
        token = error.token
        expected = set(error.expected)
        if token.type == "$END":
            message = "missing ')' to close a group" if "RPAR" in expected else "the pattern ends too early"
            return SourceError(message, pattern, len(pattern))
        position = _start(token)
        if token.type == "QUANTIFIER":
            message = f"quantifier '{token}' has nothing to repeat; write \\{str(token)[0]} for a literal"
            return SourceError(message, pattern, position)
        if token.type == "RPAR":
            return SourceError("unbalanced ')': no group is open", pattern, position)
        return SourceError(_unexpected_text_message(str(token)), pattern, position)
    return SourceError(f"syntax error: {error}", pattern, getattr(error, "pos_in_stream", None))


def _bad_class_error(pattern: str, opening: int) -> SourceError:
    """Why the character class opened at ``opening`` did not lex: it is empty, or it never ends."""
    position = opening + (2 if pattern.startswith("[^", opening) else 1)
    if pattern.startswith("]", position):
        return SourceError(
            "empty character class: ']' right after '[' or '[^' is read differently by Python and "
            "ECMAScript; write \\] for a literal ']'",
            pattern,
            position,
        )
    item = _class_item_pattern()
    while (match := item.match(pattern, position)) is not None:
        position = match.end()
    if position < len(pattern):  # only a final lone backslash stops the items before the end
        return SourceError(_unexpected_text_message(pattern[position]), pattern, position)
    return SourceError("unterminated character class: missing ']'", pattern, len(pattern))


def _unexpected_text_message(found: str) -> str:
    if found.startswith("{"):
        return "'{' does not start a repetition {m}, {m,} or {m,n}; write \\{ for a literal brace"
    if found == "\\":
        return "the pattern ends with a lone backslash"
    return f"unexpected {found!r}"


__all__ = ["FLAVORS", "Flavor", "parse", "parse_search"]
