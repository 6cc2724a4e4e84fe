"""GBNF syntax tree to the shared byte IR, with recursion refused or unrolled to a bounded depth.

Takes: a checked ``tree.Grammar``, the start rule, ``Limits`` and ``max_depth`` (None or N >= 0).
Hands on: an ``Expansion``: the IR node of the start rule plus facts for ``inspect``.

Rules reachable from the start rule are expanded in place (each expansion is memoised, so a rule
used many times is built once). A rule is *recursive* when it lies on a cycle of rule references
(direct, mutual or left recursion).

- ``max_depth=None``: a reachable recursive rule is an ``UnsupportedError`` naming one cycle
  (``expr -> term -> expr``) with a caret under the reference that closes it.
- ``max_depth=N``: a recursive rule may be *re-entered* at most N times while it is being expanded,
  i.e. at most N+1 copies of it are open on the expansion stack at once. A reference that would
  open copy N+2 becomes ``ir.NOTHING`` (it matches no string), so the result is a subset of the
  grammar's language: every accepted string is in the grammar, deeper nesting is rejected.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import LimitError, UnsupportedError
from moonmaskc.frontends import deep, utf8
from moonmaskc.frontends.gbnf.tree import (
    Alternatives,
    AnyChar,
    CharClass,
    Expr,
    Grammar,
    Literal,
    Repetition,
    RuleRef,
    Sequence,
    references,
)
from moonmaskc.limits import Limits

EMBED_ABOVE_SIZE = 1500


def _tree_size(node: ir.Node, cache: dict[int, tuple[ir.Node, int]], cap: int) -> int:
    """Node count of ``node`` as a tree (shared subtrees counted each time), saturating at cap + 1.

    The IR builds a shared DAG; the NFA builder expands it as a tree, so this is what it will pay.
    """
    cached = cache.get(id(node))
    if cached is not None:
        return cached[1]
    if isinstance(node, (ir.Seq, ir.Alt)):
        total = 1
        for item in node.items:
            total += _tree_size(item, cache, cap)
            if total > cap:
                break
    elif isinstance(node, ir.Repeat):
        copies = max(node.min, node.max or 0, 1)
        total = 1 + copies * _tree_size(node.item, cache, cap)
    else:
        total = 1
    total = min(total, cap + 1)
    cache[id(node)] = (node, total)  # holding the node keeps its id from being reused
    return total


@dataclass
class Expansion:
    node: ir.Node
    reachable_rules: list[str]
    recursive_rules: list[str]
    depth_exhausted: bool = False
    embedded_rules: int = 0
    unreachable_rules: list[str] = field(default_factory=list)


def strongly_connected(graph: dict[str, list[str]], roots: Iterable[str]) -> dict[str, int]:
    """Tarjan's algorithm (iterative): rule name -> component id, for rules reachable from ``roots``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    component: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for root in roots:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_index = work.pop()
            if child_index == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = graph[node]
            if child_index < len(children):
                work.append((node, child_index + 1))
                child = children[child_index]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component_id = len(set(component.values()))
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = component_id
                    if member == node:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return component


class _Expander:
    def __init__(self, grammar: Grammar, limits: Limits, max_depth: int | None) -> None:
        self.grammar = grammar
        self.limits = limits
        self.max_depth = max_depth
        self.graph = {
            name: list(dict.fromkeys(ref.name for ref in references(rule.body)))
            for name, rule in grammar.rules.items()
        }
        self.memo: dict[tuple[str, tuple[int, ...]], ir.Node] = {}
        self.open_copies: dict[str, int] = {}
        self.cycle_members: dict[str, tuple[str, ...]] = {}
        self.depth_exhausted = False
        self.size_cache: dict[int, tuple[ir.Node, int]] = {}
        self.embedded = 0
        self.nesting = 0
        self.inline_levels = deep.inline_walk_levels() or sys.maxsize  # in an inline attempt
        self.components: dict[str, int] = {}

    def analyse(self, start: str) -> tuple[list[str], list[str]]:
        component = strongly_connected(self.graph, [start])
        self.components = component
        members: dict[int, list[str]] = {}
        for name in self.grammar.rules:
            if name in component:
                members.setdefault(component[name], []).append(name)
        recursive: list[str] = []
        for name in self.grammar.rules:
            if name not in component:
                continue
            group = members[component[name]]
            if len(group) > 1 or name in self.graph[name]:
                recursive.append(name)
                self.cycle_members[name] = tuple(group)
        reachable = [name for name in self.grammar.rules if name in component]
        return reachable, recursive

    def refuse_recursion(self, recursive: list[str]) -> None:
        first = recursive[0]
        cycle, closing = self.find_cycle(first)
        rule = self.grammar.rules[first]
        line = self.grammar.source.count("\n", 0, rule.position) + 1
        raise UnsupportedError(
            f"recursion {' -> '.join(cycle)}",
            f"rule `{first}` (line {line}) refers back to itself, and a recursive grammar is not a "
            "regular language; pass max_depth=N (--max-depth N) to unroll it to depth N, a subset "
            "that rejects deeper nesting",
            self.grammar.source,
            closing.position,
        )

    def find_cycle(self, start: str) -> tuple[list[str], RuleRef]:
        """A shortest cycle start -> ... -> start and the reference that closes it."""
        parents: dict[str, tuple[str, RuleRef]] = {}
        frontier = [start]
        while frontier:
            next_frontier: list[str] = []
            for name in frontier:
                for ref in references(self.grammar.rules[name].body):
                    if ref.name == start:
                        path = [name]
                        while path[-1] != start:
                            path.append(parents[path[-1]][0])
                        return [*reversed(path), start], ref
                    if ref.name not in parents and ref.name != start:
                        parents[ref.name] = (name, ref)
                        next_frontier.append(ref.name)
            frontier = next_frontier
        raise AssertionError(f"rule {start} is not on a cycle")

    def rule(self, name: str) -> ir.Node:
        group = self.cycle_members.get(name, ())
        key = (name, tuple(self.open_copies.get(member, 0) for member in group))
        cached = self.memo.get(key)
        if cached is not None:
            return cached
        if group:
            self.open_copies[name] = self.open_copies.get(name, 0) + 1
        try:
            node = self.expr(self.grammar.rules[name].body)
        finally:
            if group:
                self.open_copies[name] -= 1
        if _tree_size(node, self.size_cache, EMBED_ABOVE_SIZE) > EMBED_ABOVE_SIZE:
            node = ir.Automaton(compile_ir(node, self.limits, check_work=True), label=f"rule {name}")
            self.embedded += 1
        self.memo[key] = node
        return node

    def reference(self, ref: RuleRef) -> ir.Node:
        if ref.name in self.cycle_members:
            assert self.max_depth is not None
            if self.open_copies.get(ref.name, 0) > self.max_depth:
                self.depth_exhausted = True
                return ir.NOTHING
        return self.rule(ref.name)

    def expand_leaves_first(self) -> None:
        """Expand the reachable rules that are on no cycle in an order that puts every rule after
        the rules it refers to (Tarjan numbers components leaves first), so that expanding a
        rule finds its references memoised: a chain of rules costs no recursion."""
        for name in sorted(self.components, key=self.components.__getitem__):
            if name not in self.cycle_members:
                self.rule(name)

    def expr(self, node: Expr) -> ir.Node:
        """``node`` as IR; nested expressions and rule expansions count against ``max_nesting``."""
        self.nesting += 1
        try:
            if self.nesting > self.limits.max_nesting:
                source = self.grammar.source
                position = getattr(node, "position", None)
                where = f" at line {source.count(chr(10), 0, position) + 1}" if position is not None else ""
                raise LimitError(
                    "max_nesting",
                    self.limits.max_nesting,
                    f"the grammar nests groups and rule expansions more than {self.limits.max_nesting} "
                    f"levels deep{where}",
                    "--max-nesting",
                )
            if self.nesting > self.inline_levels:
                raise deep.NeedsDeepStack
            return self.expr_node(node)
        finally:
            self.nesting -= 1

    def expr_node(self, node: Expr) -> ir.Node:
        if isinstance(node, Literal):
            return ir.text("".join(map(chr, node.codepoints)))
        if isinstance(node, CharClass):
            if node.negated:
                return utf8.any_char(node.ranges)
            return utf8.codepoints(node.ranges)
        if isinstance(node, AnyChar):
            return utf8.any_char()
        if isinstance(node, RuleRef):
            return self.reference(node)
        if isinstance(node, Sequence):
            return ir.seq(*(self.expr(item) for item in node.items))
        if isinstance(node, Alternatives):
            return ir.alt(*(self.expr(option) for option in node.options))
        assert isinstance(node, Repetition)
        return self.repetition(node)

    def repetition(self, node: Repetition) -> ir.Node:
        bound = max(node.min, node.max or 0)
        if bound > self.limits.max_repeat:
            source = self.grammar.source
            line = source.count("\n", 0, node.position) + 1
            column = node.position - (source.rfind("\n", 0, node.position) + 1) + 1
            shown = f"{{{node.min},{'' if node.max is None else node.max}}}"
            raise LimitError(
                "max_repeat",
                self.limits.max_repeat,
                f"repetition {shown} at line {line}, column {column} is above the repetition bound",
                "--max-repeat",
            )
        return ir.repeat(self.expr(node.item), node.min, node.max)


def expand(grammar: Grammar, start: str, limits: Limits, max_depth: int | None) -> Expansion:
    """Expand ``start`` into the byte IR (see the module docstring)."""
    if max_depth is not None and max_depth < 0:
        raise ValueError(f"max_depth must be at least 0, not {max_depth}")
    expander = _Expander(grammar, limits, max_depth)
    reachable, recursive = expander.analyse(start)
    if recursive and max_depth is None:
        expander.refuse_recursion(recursive)
    expander.expand_leaves_first()
    node = expander.rule(start)
    unreachable = [name for name in grammar.rules if name not in set(reachable)]
    return Expansion(node, reachable, recursive, expander.depth_exhausted, expander.embedded, unreachable)
