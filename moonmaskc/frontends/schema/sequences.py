"""Comma-separated sequences: object members in declared order, array elements by position.

Takes: member / element languages (IR, each never empty-string), whether each member is required,
the language of extra members, count bounds, and the separator. Hands on: the language of the
*content* between the brackets, as ``(nonempty, empty_allowed)``.

Object members are built right to left as "the nonempty sequences from member i on":
``R_i = ((m_i ,)? R_{i+1}) | m_i`` for an optional member when the rest may be empty, so every
member language occurs at most twice and n optional properties cost O(n), not O(2^n) or O(n^2).
Count bounds (``minProperties`` / ``maxProperties``) need the number of members so far; those
languages are built per count and shared through ``share`` (compiled once, embedded as a DFA).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from moonmaskc import ir


@dataclass(frozen=True)
class Member:
    node: ir.Node
    required: bool


Share = Callable[[ir.Node], ir.Node]


def _repeat_tail(item: ir.Node, sep: ir.Node, least: int, most: int | None) -> ir.Node:
    """``item (sep item){least-1, most-1}`` with least >= 1 (nothing when most < least)."""
    if most is not None and most < least:
        return ir.NOTHING
    return ir.seq(item, ir.repeat(ir.seq(sep, item), least - 1, None if most is None else most - 1))


def ordered_members(
    members: list[Member],
    extra: ir.Node | None,
    sep: ir.Node,
    least: int,
    most: int | None,
    share: Share,
) -> tuple[ir.Node, bool]:
    """Members in the given order (optional ones may be left out), then any number of extras."""
    n = len(members)
    required_after = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        required_after[i] = required_after[i + 1] + members[i].required
    total_possible = None if extra is not None else n
    counting = least > required_after[0] or (
        most is not None and (total_possible is None or most < total_possible)
    )
    if not counting:
        return _free(members, extra, sep, required_after)
    return _counted(members, extra, sep, least, most, required_after, share)


def _free(
    members: list[Member], extra: ir.Node | None, sep: ir.Node, required_after: list[int]
) -> tuple[ir.Node, bool]:
    """Built from the end: ``rest`` is the content from member i on (non-empty), and while it may
    also be empty, ``optional_follow`` is ``(sep rest)?``; right before the extras it is written
    ``(sep extra)*`` rather than ``(sep extra (sep extra)*)?``, so that the extras appear once after
    a required member (every copy of a subexpression is a copy of its automaton in the NFA). Each
    part is used once, so the expression stays linear in the number of members."""
    rest = ir.NOTHING if extra is None else _repeat_tail(extra, sep, 1, None)
    optional_follow = ir.EPSILON if extra is None else ir.star(ir.seq(sep, extra))
    rest_may_be_empty = True
    for i in range(len(members) - 1, -1, -1):
        m = members[i].node
        if members[i].required:
            rest = ir.seq(m, optional_follow) if rest_may_be_empty else ir.seq(m, sep, rest)
            rest_may_be_empty = False
        elif rest_may_be_empty:
            rest = ir.alt(ir.seq(ir.optional(ir.seq(m, sep)), rest), m)
            optional_follow = ir.optional(ir.seq(sep, rest))
        else:
            rest = ir.seq(ir.optional(ir.seq(m, sep)), rest)
    return rest, rest_may_be_empty


def _counted(
    members: list[Member],
    extra: ir.Node | None,
    sep: ir.Node,
    least: int,
    most: int | None,
    required_after: list[int],
    share: Share,
) -> tuple[ir.Node, bool]:
    n = len(members)
    cap = most + 1 if most is not None else least
    memo: dict[tuple[int, int], ir.Node] = {}
    recurse: list[Callable[[int, int], ir.Node]] = []  # nonempty, reached through a list

    def empty_ok(i: int, count: int) -> bool:
        return required_after[i] == 0 and count >= least and (most is None or count <= most)

    def nonempty(i: int, count: int) -> ir.Node:
        count = min(count, cap)
        key = (i, count)
        if key in memo:
            return memo[key]
        if most is not None and count > most:
            result: ir.Node = ir.NOTHING
        elif i == n:
            if extra is None:
                result = ir.NOTHING
            else:
                result = _repeat_tail(
                    extra, sep, max(1, least - count), None if most is None else most - count
                )
        else:
            m = members[i].node
            after = recurse[0](i + 1, count + 1)
            with_member = ir.seq(
                m, ir.alt(ir.seq(sep, after), ir.EPSILON if empty_ok(i + 1, count + 1) else ir.NOTHING)
            )
            without = ir.NOTHING if members[i].required else recurse[0](i + 1, count)
            result = share(ir.alt(with_member, without))
        memo[key] = result
        return result

    recurse.append(nonempty)
    counted = nonempty(0, 0), empty_ok(0, 0)
    recurse.clear()  # (else the function and its list would be a cycle holding every node made here)
    return counted


def positional_elements(
    prefix: list[ir.Node],
    rest: ir.Node | None,
    sep: ir.Node,
    least: int,
    most: int | None,
) -> tuple[ir.Node, bool]:
    """Array elements: element j follows ``prefix[j]``, later ones ``rest`` (None: not allowed)."""
    k = len(prefix)
    if rest is None:
        tail: ir.Node = ir.NOTHING
    else:
        tail = _repeat_tail(rest, sep, max(1, least - k), None if most is None else most - k)
    following: ir.Node = tail
    for j in range(k - 1, -1, -1):
        if most is not None and j + 1 > most:
            following = ir.NOTHING
            continue
        end_ok = j + 1 >= least
        following = ir.seq(prefix[j], ir.alt(ir.seq(sep, following), ir.EPSILON if end_ok else ir.NOTHING))
    return following, least == 0
