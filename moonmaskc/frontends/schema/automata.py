"""The automata a schema walk builds, each once: DFAs of IR nodes, big nodes shared as DFA leaves,
DFAs derived by products, the key regions of ``patternProperties`` and the any-value universes.

Takes: the whitespace ``Layout`` and ``Limits`` of the walk, and IR nodes or DFAs.
Hands on: DFAs and ``ir.Automaton`` leaves. Equal inputs give the same leaf object (automata
compare by identity), so the expressions around equal nodes stay equal and their DFAs are found
again in the caches instead of being compiled once more.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.excluded import without_words
from moonmaskc.automata.nested import NEST_CALL
from moonmaskc.automata.product import disjoint, is_empty, union
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.layout import Layout
from moonmaskc.frontends.schema.property_keys import key_regions
from moonmaskc.limits import Limits

SHARE_SIZE = 4000
# Universe automata depend only on (whitespace policy, depth, limits): built once per process.
_UNIVERSE_CACHE: dict[tuple[Any, ...], ir.Automaton] = {}
SCALARS = ir.alt(
    ir.literal(b"null"),
    ir.literal(b"true"),
    ir.literal(b"false"),
    canonical.CANONICAL_NUMBER,
    canonical.quoted(canonical.STRING_BODY),
)


KeyRegions = list[tuple[tuple[int, ...], ir.Automaton]]


class Automata:
    """The caches of one walk (see the module docstring)."""

    def __init__(self, layout: Layout, limits: Limits) -> None:
        self.layout = layout
        self.limits = limits
        self._universes: dict[int, ir.Node] = {}
        self._dfas: dict[ir.Node, DFA] = {}
        self._shared: dict[ir.Node, ir.Automaton] = {}
        self._derived: dict[tuple[str, tuple[int, ...]], tuple[ir.Automaton, tuple[DFA, ...]]] = {}
        self._other_keys: dict[frozenset[str], ir.Automaton] = {}
        self._regions: dict[tuple[int, ...], tuple[KeyRegions, tuple[DFA, ...]]] = {}
        # Number nodes by their keywords (values and their types): see ``types.numbers``.
        self.numbers: dict[tuple[Any, ...], ir.Node] = {}
        # A ``pattern`` (or ``patternProperties`` key) parsed once per walk: a definition reached
        # through many references repeats its patterns (69 parses of 23 patterns in one schema).
        self.patterns: dict[str, ir.Node] = {}
        self._disjoint: dict[tuple[int, int], tuple[bool, DFA, DFA]] = {}

    def dfa(self, node: ir.Node) -> DFA:
        """The minimal DFA of ``node``, compiled once per walk (nodes cache their hash)."""
        if isinstance(node, ir.Automaton):
            return node.dfa
        found = self._dfas.get(node)
        if found is None:
            found = self._dfas[node] = compile_ir(node, self.limits, check_work=True)
        return found

    def share(self, node: ir.Node) -> ir.Node:
        """``node``, or when it is big, its DFA as a leaf: one leaf object per node, so that the
        expressions around equal nodes stay equal (automata compare by identity) and their DFAs
        are found again in the walk's cache instead of being compiled once more."""
        if isinstance(node, ir.Automaton) or not ir.size_exceeds(node, SHARE_SIZE):
            return node
        found = self._shared.get(node)
        if found is None:
            found = self._shared[node] = ir.Automaton(self.dfa(node), "shared")
        return found

    def derived(self, label: str, inputs: tuple[DFA, ...], build: Callable[[], DFA]) -> ir.Automaton:
        """The DFA ``build`` makes from ``inputs`` as a leaf, one per label and inputs: the inputs
        come from the walk's caches, so equal ones are the same objects (see ``share``)."""
        key = (label, tuple(map(id, inputs)))
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = (ir.Automaton(build(), label), inputs)  # inputs kept alive
        return found[0]

    def disjoint(self, first: DFA, second: DFA) -> bool:
        """``product.disjoint``, once per pair of automata a walk meets (the pair kept alive with
        the answer): a ``oneOf`` reached through many references asks again of the same DFAs."""
        key = (id(first), id(second)) if id(first) <= id(second) else (id(second), id(first))
        found = self._disjoint.get(key)
        if found is None:
            found = self._disjoint[key] = (disjoint(first, second, self.limits), first, second)
        return found[0]

    def other_keys(self, keys: list[str]) -> ir.Automaton:
        """Canonical quoted strings other than ``keys``, as a leaf: every canonical string minus the
        keys' (a string has one canonical form, so the difference of the forms is the form of the
        difference)."""
        any_key = quoted_string_dfa(self.limits)
        if not keys:
            return self.derived("other keys", (any_key,), lambda: any_key)
        names = frozenset(keys)
        found = self._other_keys.get(names)
        if found is None:
            quoted = [canonical.serialize(key).encode("utf-8") for key in names]
            found = ir.Automaton(without_words(any_key, quoted, self.limits), "other keys")
            self._other_keys[names] = found
        return found

    def key_regions(self, undeclared: ir.Automaton, patterns: list[DFA], where: str) -> KeyRegions:
        """``property_keys.key_regions`` as leaves, once per inputs (see ``derived``): an object
        schema reached from several places gives the same automata, so its IR is shared. Without
        patterns the one region is ``undeclared`` itself."""
        if not patterns:
            return [((), undeclared)]
        inputs = (undeclared.dfa, *patterns)
        key = tuple(map(id, inputs))
        found = self._regions.get(key)
        if found is None:
            regions = [
                (indexes, ir.Automaton(region, f"keys of patternProperties {list(indexes)}"))
                for indexes, region in key_regions(undeclared.dfa, patterns, self.limits, where)
            ]
            found = self._regions[key] = (regions, inputs)  # inputs kept alive
        return found[0]

    def universe_leaf(self, depth: int) -> ir.Automaton:
        """The any-JSON-value automaton of ``depth`` as a leaf, the same object every time (see
        ``share``)."""
        key = (self.layout.policy, depth, self.limits)
        if key not in _UNIVERSE_CACHE:
            dfa = self.dfa(self.universe_node(depth))
            _UNIVERSE_CACHE[key] = ir.Automaton(dfa, f"any JSON value, depth <= {depth}")
        return _UNIVERSE_CACHE[key]

    def universe_node(self, depth: int) -> ir.Node:
        """Every canonical JSON value nesting at most ``depth`` deep, as an expression."""
        if depth in self._universes:
            return self._universes[depth]
        if depth < 0:
            return ir.NOTHING
        node = SCALARS if depth == 0 else self.value_level(self.universe_leaf(depth - 1))
        self._universes[depth] = node
        return node

    def value_level(self, inner: ir.Node) -> ir.Node:
        """A scalar, or an array or object whose elements and member values are ``inner``."""
        layout = self.layout
        elements = ir.seq(inner, ir.star(ir.seq(layout.comma, inner)))
        member = layout.member(canonical.quoted(canonical.STRING_BODY), inner)
        members = ir.seq(member, ir.star(ir.seq(layout.comma, member)))
        return ir.alt(
            SCALARS, layout.wrap(b"[", elements, b"]", True), layout.wrap(b"{", members, b"}", True)
        )

    def nest_level(self) -> DFA:
        """One level of any JSON value for a nest region (``automata.nested``): ``value_level``
        whose elements and member values are a scalar or the call byte ``NEST_CALL``."""
        key = (self.layout.policy, "nest level", self.limits)
        if key not in _UNIVERSE_CACHE:
            node = self.value_level(ir.alt(SCALARS, ir.literal(bytes([NEST_CALL]))))
            _UNIVERSE_CACHE[key] = ir.Automaton(self.dfa(node), "one level of any JSON value")
        return _UNIVERSE_CACHE[key].dfa


def is_empty_node(node: ir.Node) -> bool:
    if isinstance(node, ir.Automaton):
        return is_empty(node.dfa)
    return node == ir.NOTHING


def union_all(dfas: tuple[DFA, ...], limits: Limits) -> DFA:
    result = dfas[0]
    for dfa in dfas[1:]:
        result = union(result, dfa, limits)
    return result


@cache
def string_char_automaton() -> ir.Automaton:
    """One canonical string character as its minimal DFA (16 states, against about 200 NFA states
    for the expression, whose escapes are spelled out): ``maxLength: n`` copies it n times."""
    return ir.Automaton(compile_ir(canonical.STRING_CHAR), "string character")


@cache
def string_body_automaton() -> ir.Automaton:
    """Every canonical string body (no quotes) as its minimal DFA, a leaf: the body of every
    string without length bounds. The expression spells out each escape (about 240 nodes); as a
    leaf, each string of a schema costs the NFA builder and the subset construction a copy of a
    15-state DFA instead of a walk of that expression (the same DFAs; 0.95x on Kubernetes
    schemas, 0.91x on Github_ultra's: docs/performance.md, sixteenth pass)."""
    return ir.Automaton(compile_ir(canonical.STRING_BODY), "string body")


@cache
def quoted_string_dfa(limits: Limits) -> DFA:
    """Every canonical JSON string, quotes included: a constant, built once per process and limits."""
    return compile_ir(canonical.quoted(canonical.STRING_BODY), limits)


def key_literal(key: str) -> ir.Node:
    """A property name as its canonical quoted string."""
    return ir.text(canonical.serialize(key))
