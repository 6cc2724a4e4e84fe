"""Whitespace policy: where JSON whitespace may appear in the output, and how much.

Takes: a policy name (``compact``, ``flexible``, ``any``). Hands on: ``Layout``, whose ``ws`` node
goes at every structural position (after ``{`` ``[`` ``,`` ``:``, before ``}`` ``]`` ``,`` ``:``),
and builders for objects and arrays from member / element languages.

- ``compact``: no whitespace at all.
- ``flexible``: at each structural position, nothing, or one newline followed by at most
  ``FLEXIBLE_INDENT`` spaces, or up to ``FLEXIBLE_INDENT`` spaces: runaway whitespace is impossible
  (a document of n structural positions has at most n newlines and n * 40 spaces).
- ``any``: ``[ \\t\\n\\r]*`` at each structural position.
No whitespace is ever allowed before or after the top-level value.
"""

from __future__ import annotations

from dataclasses import dataclass

from moonmaskc import ir
from moonmaskc.errors import UnsupportedError

FLEXIBLE_INDENT = 40
POLICIES = ("compact", "flexible", "any")


def whitespace_node(policy: str) -> ir.Node:
    if policy == "compact":
        return ir.EPSILON
    if policy == "flexible":
        return ir.seq(ir.optional(ir.literal(b"\n")), ir.repeat(ir.literal(b" "), 0, FLEXIBLE_INDENT))
    if policy == "any":
        return ir.star(ir.byte_set(ir.mask_of(b" \t\n\r")))
    raise UnsupportedError(f"whitespace policy {policy!r}", f"choose one of {', '.join(POLICIES)}")


def describe_policy(policy: str) -> str:
    return {
        "compact": "compact: no whitespace",
        "flexible": f"flexible: at each structural position an optional newline then at most "
        f"{FLEXIBLE_INDENT} spaces",
        "any": "any: [ \\t\\n\\r]* at each structural position (unbounded)",
    }[policy]


@dataclass(frozen=True)
class Layout:
    policy: str
    ws: ir.Node

    @classmethod
    def of(cls, policy: str) -> Layout:
        return cls(policy, whitespace_node(policy))

    @property
    def comma(self) -> ir.Node:
        return ir.seq(self.ws, ir.literal(b","), self.ws)

    @property
    def colon(self) -> ir.Node:
        return ir.seq(self.ws, ir.literal(b":"), self.ws)

    def wrap(self, open_: bytes, content: ir.Node, close: bytes, may_be_empty: bool) -> ir.Node:
        """``open content close`` with whitespace inside; ``content`` must not hold the empty string."""
        filled = ir.seq(ir.literal(open_), self.ws, content, self.ws, ir.literal(close))
        if not may_be_empty:
            return filled
        return ir.alt(ir.seq(ir.literal(open_), self.ws, ir.literal(close)), filled)

    def member(self, key: ir.Node, value: ir.Node) -> ir.Node:
        return ir.seq(key, self.colon, value)
