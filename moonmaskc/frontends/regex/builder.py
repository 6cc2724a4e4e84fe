"""The callbacks that Lark runs while it parses a regex: tokens and rules to byte IR.

Takes: the tokens and reduced rules of ``regex.lark``, one at a time, as the parser shifts and
reduces them (no parse tree is built). Hands on: the pattern's top-level alternatives, a list of
``Branch`` (each with its IR and its ``^`` / ``$`` anchors); ``alternation`` joins branches into one
IR node.
"""

from __future__ import annotations

from typing import Any

from lark import Token, Transformer

from moonmaskc import ir
from moonmaskc.frontends.regex.classes import class_node
from moonmaskc.frontends.regex.codepoints import dot_node, text_node
from moonmaskc.frontends.regex.context import current_parse
from moonmaskc.frontends.regex.errors import misplaced_anchor, source_error, unsupported
from moonmaskc.frontends.regex.escapes import escape_node
from moonmaskc.frontends.regex.lexer import atom_pattern, token_start
from moonmaskc.frontends.regex.quantifiers import bounds


class Branch:
    """One alternative being read: its items and where ``^`` / ``$`` stand.

    ``^`` is allowed only before everything else and ``$`` only after everything else, so the
    first item or anchor that follows a ``$`` makes that ``$`` an error. A group whose own
    alternatives are anchored (``(^a$|b)``) may stand as the whole of an alternative, between an
    optional ``^`` and ``$``: it is kept in ``group`` and its alternatives become alternatives of
    the enclosing alternation (``spread``), with those anchors added to each.
    """

    __slots__ = ("anchor_position", "anchored_start", "dollar_position", "group", "items")

    def __init__(self) -> None:
        self.items: list[ir.Node | Marker] = []
        self.anchored_start = False
        self.dollar_position: int | None = None
        self.anchor_position: int | None = None
        self.group: AnchoredGroup | None = None

    @property
    def anchored_end(self) -> bool:
        return self.dollar_position is not None

    @property
    def node(self) -> ir.Node:
        """The items' language (a branch with a lookahead has none of its own: ``lookaround``)."""
        assert not has_lookahead(self)
        return ir.seq(*self.items)  # type: ignore[arg-type]


END_MARKER = 0xFF
"""A byte that no UTF-8 text holds: ``$`` read as one or more of it (``end_marker``)."""
END_MARKERS = ir.repeat(ir.byte_set(1 << END_MARKER), 1, None)


class Lookahead:
    """``(?=...)`` or ``(?!...)``: its alternatives, resolved once what follows it is known
    (``lookaround.resolve``)."""

    __slots__ = ("branches", "negative", "position")

    def __init__(self, branches: list[Branch], negative: bool, position: int) -> None:
        self.branches = branches
        self.negative = negative
        self.position = position


class Choice:
    """A group without a quantifier whose alternatives hold a lookahead: what follows the group is
    what follows each alternative, so the alternatives are distributed over the enclosing
    sequence (``lookaround.sequences``)."""

    __slots__ = ("branches", "position")

    def __init__(self, branches: list[Branch], position: int) -> None:
        self.branches = branches
        self.position = position


Marker = Lookahead | Choice


def has_lookahead(branch: Branch) -> bool:
    return any(type(item) is Lookahead or type(item) is Choice for item in branch.items)


class AnchoredGroup:
    """A group with an anchor inside: its alternatives, for the enclosing alternation to take in."""

    __slots__ = ("branches", "position")

    def __init__(self, branches: list[Branch], position: int) -> None:
        self.branches = branches
        self.position = position


def spread(branches: list[Branch]) -> list[Branch]:
    """``branches`` with every alternative that is an anchored group replaced by the group's own
    alternatives, each also anchored where the alternative anchored the group."""
    out: list[Branch] = []
    for branch in branches:
        if branch.group is None:
            out.append(branch)
            continue
        for inner in spread(branch.group.branches):
            inner.anchored_start = inner.anchored_start or branch.anchored_start
            if inner.dollar_position is None:
                inner.dollar_position = branch.dollar_position
            out.append(inner)
    return out


def _lone(look: Lookahead) -> Branch:
    """An alternative holding nothing but ``look``."""
    branch = Branch()
    branch.items.append(look)
    return branch


def _anchor_inside_group(position: int) -> Exception:
    return unsupported(
        "anchor inside a group",
        "'^' and '$' may stand only at the start and end of an alternative, or inside a group that "
        "is a whole alternative of its own (as in '(^a|b$)')",
        position,
    )


def alternation(branches: list[Branch]) -> ir.Node:
    """``ir.alt`` of the branches; a lone branch that is a non-empty sequence is its own
    alternation, which saves ``ir.alt`` hashing the whole subtree."""
    if len(branches) == 1:
        node = branches[0].node
        if isinstance(node, ir.Seq) and node.items:
            return node
        return ir.alt(node)
    return ir.alt(*(branch.node for branch in branches))


class IRBuilder(Transformer[Token, Any]):
    """The callbacks Lark runs while it parses (one per rule, and one per token type that has a
    meaning of its own). Atoms become IR nodes as soon as they are lexed; a concatenation is a
    ``Branch`` that grows item by item; an alternation is a list of branches."""

    # -- structure ---------------------------------------------------------------------------

    def start(self, children: list[list[Branch]]) -> list[Branch]:
        return spread(children[0])

    def first_branch(self, children: list[Branch]) -> list[Branch]:
        return children

    def next_branch(self, children: list[Any]) -> list[Branch]:
        branches: list[Branch] = children[0]
        branches.append(children[2])
        return branches

    def empty_concat(self, children: list[Any]) -> Branch:
        return Branch()

    def concat_atom(self, children: list[Any]) -> Branch:
        branch: Branch = children[0]
        if branch.dollar_position is not None:
            raise misplaced_anchor("$", branch.dollar_position)
        item = children[1]
        if branch.group is not None:  # something after an anchored group
            raise _anchor_inside_group(branch.group.position)
        if type(item) is AnchoredGroup:
            if branch.items:
                raise _anchor_inside_group(item.position)
            branch.group = item
            return branch
        if type(item) is list:  # the atoms of an ATOMS run
            branch.items += item
        else:
            branch.items.append(item)
        return branch

    def concat_repeat(self, children: list[Any]) -> Branch:
        branch: Branch = children[0]
        if branch.dollar_position is not None:
            raise misplaced_anchor("$", branch.dollar_position)
        if type(children[1]) is AnchoredGroup:
            raise _anchor_inside_group(children[1].position)
        if branch.group is not None:
            raise _anchor_inside_group(branch.group.position)
        item = children[1]
        low, high = bounds(children[2])
        if type(item) is Lookahead or type(item) is Choice:
            if (low, high) != (0, 1):
                raise unsupported(
                    "lookahead under a quantifier",
                    "only a lookahead outside every repetition (or under '?') is compiled",
                    item.position,
                )
            # X? is (|X): one more alternative to distribute over the sequence.
            inner = item.branches if isinstance(item, Choice) else [_lone(item)]
            branch.items.append(Choice([Branch(), *inner], item.position))
            return branch
        branch.items.append(ir.repeat(item, low, high))
        return branch

    def concat(self, children: list[Branch]) -> Branch:
        return children[0]

    def double_quantifier(self, children: list[Any]) -> Branch:
        token: Token = children[1]
        raise source_error(
            f"quantifier '{token}' follows another quantifier; wrap the first in (?:...)", token_start(token)
        )

    def concat_anchor(self, children: list[Any]) -> Branch:
        branch: Branch = children[0]
        token: Token = children[1]
        position = token_start(token)
        if token == "$" and current_parse().end_markers:
            branch.items.append(END_MARKERS)
            return branch
        if branch.dollar_position is not None:
            raise misplaced_anchor("$", branch.dollar_position)
        if token == "^":
            if branch.items or branch.anchored_start or branch.group is not None:
                raise misplaced_anchor("^", position)
            branch.anchored_start = True
        else:
            branch.dollar_position = position
        if branch.anchor_position is None:
            branch.anchor_position = position
        return branch

    def group(self, children: list[Any]) -> ir.Node | AnchoredGroup | Marker:
        opener: Token = children[0]
        branches: list[Branch] = children[1]
        if opener.type == "LOOKAROUND_OPEN":
            return Lookahead(branches, str(opener).endswith("!"), token_start(opener))
        if any(has_lookahead(branch) for branch in branches):
            if any(branch.anchor_position is not None or branch.group is not None for branch in branches):
                raise unsupported(
                    "lookahead beside an anchor inside a group",
                    "anchors inside a group with a lookahead are not compiled",
                    token_start(opener),
                )
            return Choice(branches, token_start(opener))
        for branch in branches:
            position = branch.anchor_position if branch.group is None else branch.group.position
            if position is not None:
                return AnchoredGroup(branches, position)
        return alternation(branches)

    def group_open(self, children: list[Token]) -> Token:
        return children[0]

    # -- tokens with a meaning of their own (run when the parser shifts them) ----------------

    def ATOMS(self, token: Token) -> list[ir.Node]:
        text = str(token)
        base = token_start(token)
        nodes: list[ir.Node] = []
        for match in atom_pattern().finditer(text):
            kind, item, position = match.lastgroup, match.group(), base + match.start()
            if kind == "literals":
                nodes.append(text_node(item, position))
            elif kind == "dot":
                nodes.append(dot_node(current_parse().flavor))
            elif kind == "escape":
                nodes.append(escape_node(item, position))
            else:
                nodes.append(class_node(item, position))
        return nodes

    def LITERAL(self, token: Token) -> ir.Node:
        return text_node(str(token), token_start(token))

    def ESCAPE(self, token: Token) -> ir.Node:
        return escape_node(str(token), token_start(token))

    def DOT(self, token: Token) -> ir.Node:
        return dot_node(current_parse().flavor)

    def CHAR_CLASS(self, token: Token) -> ir.Node:
        return class_node(str(token), token_start(token))

    def NAMED_GROUP_OPEN(self, token: Token) -> Token:
        text = str(token)
        name = text[text.index("<") + 1 : -1]
        named_groups = current_parse().named_groups
        if name in named_groups:
            raise source_error(f"group name {name!r} is defined twice", token_start(token))
        named_groups.append(name)
        return token

    def LOOKAROUND_OPEN(self, token: Token) -> Token:
        if str(token).startswith("(?<"):
            raise unsupported(
                f"lookbehind '{token}'", "it constrains context before the match", token_start(token)
            )
        return token

    def ATOMIC_OPEN(self, token: Token) -> Token:
        raise unsupported(
            f"atomic group '{token}'", "it changes matching, not just the language", token_start(token)
        )

    def SCOPED_FLAGS_OPEN(self, token: Token) -> Token:
        raise unsupported(
            f"inline flags '{token}'", "only the default flags are compiled", token_start(token)
        )

    def CONDITIONAL_OPEN(self, token: Token) -> Token:
        raise unsupported(f"conditional group '{token}'", "it depends on a backreference", token_start(token))

    def OTHER_EXTENSION_OPEN(self, token: Token) -> Token:
        raise unsupported(f"group extension '{token}'", "not a known group kind", token_start(token))

    def INLINE_FLAGS(self, token: Token) -> ir.Node:
        raise unsupported(
            f"inline flags '{token}'", "only the default flags are compiled", token_start(token)
        )

    def COMMENT(self, token: Token) -> ir.Node:
        raise unsupported(
            f"comment group '{token}'", "comments are not compiled; remove it", token_start(token)
        )

    def NAMED_BACKREF(self, token: Token) -> ir.Node:
        raise unsupported(
            f"backreference '{token}'", "a backreference is not a regular language", token_start(token)
        )
