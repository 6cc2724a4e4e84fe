"""The callbacks that Lark runs while it parses a regex: tokens and rules to byte IR.

Takes: the tokens and reduced rules of ``regex.lark``, one at a time, as the parser shifts and
reduces them (no parse tree is built). Hands on: the pattern's top-level alternatives, a list of
``Branch`` (each with its IR and its ``^`` / ``$`` anchors); ``alternation`` joins branches into one
IR node. In the plain parse, an assertion that is not an anchor at an end of an alternative raises
``NeedsMarkers``; in the parse with markers, every assertion is its marker (``markers``).
"""

from __future__ import annotations

from typing import Any

from lark import Token, Transformer

from moonmaskc import ir
from moonmaskc.frontends.regex.classes import class_node
from moonmaskc.frontends.regex.codepoints import dot_node, text_node
from moonmaskc.frontends.regex.context import current_parse
from moonmaskc.frontends.regex.errors import source_error, unsupported
from moonmaskc.frontends.regex.escapes import escape_node
from moonmaskc.frontends.regex.lexer import atom_pattern, token_start
from moonmaskc.frontends.regex.markers import Assertion, Kind, NeedsMarkers
from moonmaskc.frontends.regex.quantifiers import bounds


class Branch:
    """One alternative being read: its items and where ``^`` / ``$`` stand.

    In the plain parse, ``^`` is an anchor only before everything else and ``$`` only after
    everything else: the first item or anchor that follows a ``$`` raises ``NeedsMarkers``, as
    does an anchor anywhere else. A group whose own alternatives are anchored (``(^a$|b)``) may
    stand as the whole of an alternative, between an optional ``^`` and ``$``: it is kept in
    ``group`` and its alternatives become alternatives of the enclosing alternation (``spread``),
    with those anchors added to each. In the parse with markers a branch holds IR alone: its
    anchors are markers among its items.
    """

    __slots__ = ("anchor_position", "anchored_start", "dollar_position", "group", "items")

    def __init__(self) -> None:
        self.items: list[ir.Node] = []
        self.anchored_start = False
        self.dollar_position: int | None = None
        self.anchor_position: int | None = None
        self.group: AnchoredGroup | None = None

    @property
    def anchored_end(self) -> bool:
        return self.dollar_position is not None

    @property
    def node(self) -> ir.Node:
        return ir.seq(*self.items)


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
        item = children[1]
        if branch.dollar_position is not None or branch.group is not None:
            raise NeedsMarkers  # something after a '$' or after an anchored group
        if type(item) is AnchoredGroup:
            if branch.items:
                raise NeedsMarkers
            branch.group = item
            return branch
        if type(item) is list:  # the atoms of an ATOMS run
            branch.items += item
        else:
            branch.items.append(item)
        return branch

    def concat_repeat(self, children: list[Any]) -> Branch:
        branch: Branch = children[0]
        item = children[1]
        if branch.dollar_position is not None or branch.group is not None or type(item) is AnchoredGroup:
            raise NeedsMarkers
        token: Token = children[2]
        low, high = bounds(token)
        markers = current_parse().markers
        position = token_start(token)
        if markers is not None and markers.is_boundary(item) and current_parse().pattern[position - 1] != ")":
            raise source_error(
                f"quantifier '{token}' has nothing to repeat: a word boundary takes none", position
            )
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
        markers = current_parse().markers
        if markers is not None:
            branch.items.append(markers.marker(Assertion(Kind.START if token == "^" else Kind.END), position))
            return branch
        if branch.dollar_position is not None:
            raise NeedsMarkers
        if token == "^":
            if branch.items or branch.anchored_start or branch.group is not None:
                raise NeedsMarkers
            branch.anchored_start = True
        else:
            branch.dollar_position = position
        if branch.anchor_position is None:
            branch.anchor_position = position
        return branch

    def group(self, children: list[Any]) -> ir.Node | AnchoredGroup:
        opener: Token = children[0]
        branches: list[Branch] = children[1]
        if opener.type == "LOOKAROUND_OPEN":  # a lookahead: only the parse with markers gets here
            markers = current_parse().markers
            assert markers is not None
            kind = Kind.NEGATIVE_LOOKAHEAD if str(opener).endswith("!") else Kind.LOOKAHEAD
            return markers.marker(Assertion(kind, alternation(branches)), token_start(opener))
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
        if current_parse().markers is None:
            raise NeedsMarkers
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
