"""The regex front end: pattern text in, byte-level IR out.

Takes: a regex pattern (``str``), ``Limits`` and a flavor. Hands on: ``parse`` gives the full-match
language of the pattern (a ``FrontendResult``); ``parse_search`` gives the language of the strings
that *contain* a match (JSON Schema ``pattern`` semantics). Both are built from the smart
constructors of ``moonmaskc.ir``; code points are compiled to UTF-8 byte sequences through
``moonmaskc.utf8``, so no IR built here ever accepts invalid UTF-8.

The syntax lives in ``grammars/regex.lark`` (parsed once with Lark LALR); the ``_IRBuilder``
transformer gives each rule its meaning. ``docs/regex.md`` is the user-facing reference. Decisions
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
from dataclasses import dataclass
from functools import cache

from lark import Lark, Token, Transformer_NonRecursive
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from moonmaskc import ir, utf8
from moonmaskc.errors import LimitError, SourceError, UnsupportedError
from moonmaskc.frontends import FrontendResult
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
_QUANTIFIER_TOKENS = {"STAR", "PLUS", "QMARK", "REPEAT"}
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


@cache
def _parser() -> Lark:
    return Lark(grammar_text("regex.lark"), parser="lalr", propagate_positions=True, maybe_placeholders=False)


@dataclass(frozen=True)
class _Anchor:
    kind: str
    position: int


@dataclass(frozen=True)
class _Branch:
    """One top-level alternative: its IR and whether ``^`` / ``$`` anchor it."""

    node: ir.Node
    anchored_start: bool
    anchored_end: bool
    anchor_position: int | None


@dataclass(frozen=True)
class _Parsed:
    branches: list[_Branch]
    named_groups: list[str]


def parse(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "python") -> FrontendResult:
    """The language of the strings that ``pattern`` matches whole (full match), as byte IR."""
    parsed = _parse(pattern, limits, _flavor(flavor))
    node = ir.alt(*(branch.node for branch in parsed.branches))
    notes = {"flavor": flavor, "named_groups": parsed.named_groups}
    return FrontendResult(node=node, notes=notes)


def parse_search(pattern: str, limits: Limits = DEFAULT_LIMITS, flavor: str = "ecma") -> ir.Node:
    """The language of the strings that contain a match of ``pattern`` (unanchored search).

    A top-level alternative that starts with ``^`` must match at the start, one that ends with
    ``$`` at the end (python flavor: at the end or before one final ``\\n``).
    """
    chosen = _flavor(flavor)
    parsed = _parse(pattern, limits, chosen)
    anything = ir.star(utf8.any_char())
    final_newline = ir.optional(ir.text("\n")) if chosen.dollar_allows_final_newline else ir.EPSILON
    branches = []
    for branch in parsed.branches:
        before = ir.EPSILON if branch.anchored_start else anything
        after = final_newline if branch.anchored_end else anything
        branches.append(ir.seq(before, branch.node, after))
    return ir.alt(*branches)


def _parse(pattern: str, limits: Limits, flavor: Flavor) -> _Parsed:
    try:
        tree = _parser().parse(pattern)
    except UnexpectedInput as error:
        raise _syntax_error(error, pattern) from None
    builder = _IRBuilder(pattern, limits, flavor)
    try:
        branches = builder.transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, SourceError | LimitError):
            raise error.orig_exc from None
        if isinstance(error.orig_exc, RecursionError):
            raise _too_deep(pattern) from None
        raise
    except RecursionError:
        raise _too_deep(pattern) from None
    return _Parsed(branches=branches, named_groups=builder.named_groups)


class _IRBuilder(Transformer_NonRecursive):
    """One method per grammar rule; atoms and pieces become IR nodes, concatenations become
    ``_Branch`` values (so that anchors can be checked), the start rule a list of branches."""

    def __init__(self, pattern: str, limits: Limits, flavor: Flavor) -> None:
        super().__init__()
        self.pattern = pattern
        self.limits = limits
        self.flavor = flavor
        self.named_groups: list[str] = []

    # -- structure ---------------------------------------------------------------------------

    def start(self, children: list[list[_Branch]]) -> list[_Branch]:
        return children[0]

    def alternation(self, branches: list[_Branch]) -> list[_Branch]:
        return branches

    def concat(self, items: list[ir.Node | _Anchor]) -> _Branch:
        nodes: list[ir.Node] = []
        anchored_start = anchored_end = False
        anchor_position: int | None = None
        for index, item in enumerate(items):
            if isinstance(item, _Anchor):
                anchor_position = item.position if anchor_position is None else anchor_position
                if item.kind == "^" and index == 0:
                    anchored_start = True
                elif item.kind == "$" and index == len(items) - 1:
                    anchored_end = True
                else:
                    raise UnsupportedError(
                        f"anchor '{item.kind}' in the middle of the pattern",
                        "'^' and '$' may stand only at the very start and end of the pattern "
                        "or of a top-level alternative",
                        self.pattern,
                        item.position,
                    )
            else:
                nodes.append(item)
        return _Branch(ir.seq(*nodes), anchored_start, anchored_end, anchor_position)

    def anchor(self, children: list[Token]) -> _Anchor:
        token = children[0]
        return _Anchor(str(token), _start(token))

    def piece(self, children: list[ir.Node | tuple[int, int | None]]) -> ir.Node:
        atom = children[0]
        assert not isinstance(atom, tuple)
        if len(children) == 1:
            return atom
        bounds = children[1]
        assert isinstance(bounds, tuple)
        return ir.repeat(atom, bounds[0], bounds[1])

    def quantifier(self, children: list[Token]) -> tuple[int, int | None]:
        base = children[0]
        if len(children) == 2 and children[1] == "+":
            raise UnsupportedError(
                f"possessive quantifier '{base}+'",
                "possessive repetition changes matching, not just the language",
                self.pattern,
                _start(children[1]),
            )
        if base == "*":
            return 0, None
        if base == "+":
            return 1, None
        if base == "?":
            return 0, 1
        return self._counted_bounds(base)

    def quant_base(self, children: list[Token]) -> Token:
        return children[0]

    def quant_mode(self, children: list[Token]) -> Token:
        return children[0]

    def _counted_bounds(self, token: Token) -> tuple[int, int | None]:
        body = str(token)[1:-1]
        low_text, comma, high_text = body.partition(",")
        low = int(low_text)
        high = None if comma and not high_text else int(high_text or low_text)
        if high is not None and high < low:
            raise SourceError(
                f"repetition {token}: the minimum is larger than the maximum", self.pattern, _start(token)
            )
        largest = max(low, high or 0)
        if largest > self.limits.max_repeat:
            raise LimitError(
                "max_repeat",
                self.limits.max_repeat,
                f"repetition {token} at position {_start(token)} of the pattern exceeds the repetition bound",
                flag="--max-repeat",
            )
        return low, high

    def group(self, children: list[Token | list[_Branch]]) -> ir.Node:
        opener, branches = children[0], children[1]
        assert isinstance(opener, Token) and isinstance(branches, list)
        self._check_group_opener(opener)
        for branch in branches:
            if branch.anchor_position is not None:
                raise UnsupportedError(
                    "anchor inside a group",
                    "'^' and '$' may stand only at the very start and end of the pattern "
                    "or of a top-level alternative",
                    self.pattern,
                    branch.anchor_position,
                )
        return ir.alt(*(branch.node for branch in branches))

    def group_open(self, children: list[Token]) -> Token:
        return children[0]

    def _check_group_opener(self, opener: Token) -> None:
        text = str(opener)
        position = _start(opener)
        if opener.type == "NAMED_GROUP_OPEN":
            name = text[text.index("<") + 1 : -1]
            if name in self.named_groups:
                raise SourceError(f"group name {name!r} is defined twice", self.pattern, position)
            self.named_groups.append(name)
            return
        if text in ("(", "(?:"):
            return
        constructs = {
            "LOOKAROUND_OPEN": ("lookaround", "it constrains context without consuming it"),
            "ATOMIC_OPEN": ("atomic group '(?>'", "it changes matching, not just the language"),
            "SCOPED_FLAGS_OPEN": ("inline flags", "only the default flags are compiled"),
            "CONDITIONAL_OPEN": ("conditional group", "it depends on a backreference"),
        }
        construct, reason = constructs.get(opener.type, ("group extension", "not a known group kind"))
        raise UnsupportedError(f"{construct} '{text}'", reason, self.pattern, position)

    def unsupported_atom(self, children: list[Token]) -> ir.Node:
        token = children[0]
        constructs = {
            "INLINE_FLAGS": ("inline flags", "only the default flags are compiled"),
            "COMMENT": ("comment group", "comments are not compiled; remove it"),
            "NAMED_BACKREF": ("backreference", "a backreference is not a regular language"),
        }
        construct, reason = constructs[token.type]
        raise UnsupportedError(f"{construct} '{token}'", reason, self.pattern, _start(token))

    # -- atoms ---------------------------------------------------------------------------------

    def literal(self, children: list[Token]) -> ir.Node:
        token = children[0]
        return _code_point_node(self._checked_code_point(ord(str(token)), token, _start(token)))

    def escape(self, children: list[Token]) -> ir.Node:
        token = children[0]
        return utf8.codepoints(self._escape_ranges(str(token), _start(token), in_class=False))

    def dot(self, children: list[Token]) -> ir.Node:
        return utf8.any_char(exclude=self.flavor.dot_excludes)

    def char_class(self, children: list[Token | Ranges]) -> ir.Node:
        opener = children[0]
        ranges: Ranges = []
        for item in children[1:]:
            assert isinstance(item, list)
            ranges.extend(item)
        if str(opener) == "[^":
            ranges = utf8.complement(ranges)
        return utf8.codepoints(ranges)

    def class_item(self, children: list[Token]) -> Ranges:
        token = children[0]
        position = _start(token)
        if token.type == "CLASS_LITERAL":
            code_point = self._checked_code_point(ord(str(token)), token, position)
            return [(code_point, code_point)]
        if token.type == "ESCAPE":
            return self._escape_ranges(str(token), position, in_class=True)
        return [self._class_range(str(token), position)]

    def _class_range(self, text: str, position: int) -> tuple[int, int]:
        first = _CLASS_ENDPOINT.match(text)
        assert first is not None
        second_start = first.end() + 1
        low = self._range_endpoint(first.group(), position, text)
        high = self._range_endpoint(text[second_start:], position + second_start, text)
        if low > high:
            raise SourceError(
                f"bad character range {text}: its start is above its end", self.pattern, position
            )
        return low, high

    def _range_endpoint(self, text: str, position: int, whole: str) -> int:
        if not text.startswith("\\"):
            return self._checked_code_point(ord(text), text, position)
        ranges = self._escape_ranges(text, position, in_class=True)
        if len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
            raise SourceError(
                f"bad character range {whole}: {text} is a set, not one character", self.pattern, position
            )
        return ranges[0][0]

    def _checked_code_point(self, code_point: int, text: str, position: int) -> int:
        if utf8.SURROGATES[0] <= code_point <= utf8.SURROGATES[1]:
            raise UnsupportedError(
                f"surrogate code point U+{code_point:04X} ({text!r})",
                "UTF-8 text never contains surrogates; write the character itself",
                self.pattern,
                position,
            )
        if code_point > utf8.MAX_CODE_POINT:
            raise SourceError(f"escape {text} is above U+10FFFF", self.pattern, position)
        return code_point

    def _escape_ranges(self, text: str, position: int, in_class: bool) -> Ranges:
        """The code points that escape ``text`` (backslash included) stands for."""
        body = text[1:]
        letter = body[0]
        if body.startswith("u{"):
            raise UnsupportedError(
                f"code point escape {text}",
                "the \\u{...} form needs ECMAScript's u flag; write \\uNNNN or \\UNNNNNNNN",
                self.pattern,
                position,
            )
        if len(body) > 1 and letter in "xuU":
            code_point = self._checked_code_point(int(body[1:], 16), text, position)
            return [(code_point, code_point)]
        if letter.isdigit():
            return self._digit_escape(body, text, position, in_class)
        if letter in _CONTROL_ESCAPES:
            code_point = _CONTROL_ESCAPES[letter]
            return [(code_point, code_point)]
        shorthand = {
            "d": _DIGIT,
            "w": _WORD,
            "s": list(self.flavor.space),
        }
        if letter.lower() in shorthand:
            ranges = shorthand[letter.lower()]
            return utf8.complement(ranges) if letter.isupper() else list(ranges)
        if letter == "b" and in_class:
            return [(0x08, 0x08)]
        self._reject_letter_escape(letter, text, position)
        code_point = self._checked_code_point(ord(letter), text, position)
        return [(code_point, code_point)]

    def _digit_escape(self, body: str, text: str, position: int, in_class: bool) -> Ranges:
        if body == "0":
            return [(0, 0)]
        if body.startswith("0") or in_class:
            raise UnsupportedError(
                f"octal escape {text}",
                "Python and ECMAScript read octal escapes differently; use \\xNN",
                self.pattern,
                position,
            )
        raise UnsupportedError(
            f"backreference {text}", "a backreference is not a regular language", self.pattern, position
        )

    def _reject_letter_escape(self, letter: str, text: str, position: int) -> None:
        unsupported = {
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
        if letter in unsupported:
            construct, reason = unsupported[letter]
            raise UnsupportedError(construct, reason, self.pattern, position)
        if letter in "xuU":
            digits = {"x": 2, "u": 4, "U": 8}[letter]
            raise SourceError(
                f"incomplete escape \\{letter}: it needs {digits} hex digits", self.pattern, position
            )
        if letter.isascii() and letter.isalpha():
            raise SourceError(f"bad escape {text}", self.pattern, position)


def _too_deep(pattern: str) -> SourceError:
    depth = max_depth = 0
    for char in pattern:
        depth += char == "("
        depth -= char == ")"
        max_depth = max(max_depth, depth)
    return SourceError(f"groups nest too deeply to compile (about {max_depth} levels)", pattern, 0)


def _start(token: Token) -> int:
    return int(token.start_pos or 0)


def _code_point_node(code_point: int) -> ir.Node:
    return ir.text(chr(code_point))


def _syntax_error(error: UnexpectedInput, pattern: str) -> SourceError:
    """A ``SourceError`` with a message that says what went wrong in regex terms."""
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream or 0
        found = pattern[position] if position < len(pattern) else ""
        return SourceError(_unexpected_text_message(found, set(error.allowed or ())), pattern, position)
    if isinstance(error, UnexpectedToken):
        token = error.token
        expected = set(error.expected)
        if token.type == "$END":
            if "RSQB" in expected:
                message = "unterminated character class: missing ']'"
            elif "RPAR" in expected:
                message = "missing ')' to close a group"
            else:
                message = "the pattern ends too early"
            return SourceError(message, pattern, len(pattern))
        position = _start(token)
        if token.type in _QUANTIFIER_TOKENS:
            if "QMARK" in expected and token.type != "QMARK":
                message = f"quantifier '{token}' follows another quantifier; wrap the first in (?:...)"
            else:
                message = f"quantifier '{token}' has nothing to repeat; write \\{str(token)[0]} for a literal"
            return SourceError(message, pattern, position)
        if token.type == "RPAR":
            return SourceError("unbalanced ')': no group is open", pattern, position)
        if token.type == "RSQB":
            return SourceError(
                "empty character class: ']' right after '[' or '[^' is read differently by Python and "
                "ECMAScript; write \\] for a literal ']'",
                pattern,
                position,
            )
        return SourceError(_unexpected_text_message(str(token), expected), pattern, position)
    return SourceError(f"syntax error: {error}", pattern, getattr(error, "pos_in_stream", None))


def _unexpected_text_message(found: str, expected: set[str]) -> str:
    if found.startswith("{"):
        return "'{' does not start a repetition {m}, {m,} or {m,n}; write \\{ for a literal brace"
    if found == "\\":
        return "the pattern ends with a lone backslash"
    return f"unexpected {found!r}"


__all__ = ["FLAVORS", "Flavor", "parse", "parse_search"]
