"""Zero-width assertions as markers: what the parse puts where ``^ $ \\b \\B (?=X) (?!X)`` stand.

Takes: the assertions of a pattern, one at a time as the builder meets them (a lookahead with the
IR of its body). Hands on: for each, its *marker*, the IR of two bytes, ``MARKER_PREFIX`` (a byte no
UTF-8 text holds, so a marker never reads as text) then the assertion's number; and ``Markers``, the
table of the numbered assertions that ``conditions`` resolves. Equal assertions share one number.

A pattern is first parsed without markers (``^`` and ``$`` at the ends of its alternatives are
anchors there); an assertion that this plain parse cannot place raises ``NeedsMarkers``, and the
pattern is parsed again with every assertion read as its marker (``parser``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from moonmaskc import ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.minimize import minimal_dense
from moonmaskc.errors import UnsupportedError

MARKER_PREFIX = 0xF8
"""The first byte of every marker: never part of UTF-8 text."""
MAX_ASSERTIONS = 256
"""Distinct assertions in one pattern: the second byte of a marker numbers them."""
TEXT_BYTES = ir.byte_set(ir.FULL_MASK & ~(1 << MARKER_PREFIX))
"""Any byte a text (not a marker) may hold."""


class Kind(Enum):
    START = "^"
    END = "$"
    BOUNDARY = "\\b"
    NOT_BOUNDARY = "\\B"
    LOOKAHEAD = "(?="
    NEGATIVE_LOOKAHEAD = "(?!"


@dataclass(frozen=True)
class Assertion:
    """One assertion; ``body`` is a lookahead's alternatives (IR, with markers of its own)."""

    kind: Kind
    body: ir.Node = ir.EPSILON


class NeedsMarkers(Exception):
    """Raised by the plain parse at an assertion that only the parse with markers compiles."""


class Markers:
    """The numbered assertions of one parse with markers, and the flavor's reading of ``$``."""

    def __init__(self, pattern: str, dollar_allows_final_newline: bool) -> None:
        self.pattern = pattern
        self.dollar_allows_final_newline = dollar_allows_final_newline
        self.assertions: list[Assertion] = []
        self._numbers: dict[Assertion, int] = {}

    def marker(self, assertion: Assertion, position: int) -> ir.Node:
        """The marker of ``assertion`` (met at ``position`` of the pattern), numbered on first use.

        A lookahead is numbered when its group closes, after every assertion inside it: a body
        only ever holds markers with smaller numbers (``conditions`` relies on it)."""
        number = self._numbers.get(assertion)
        if number is None:
            if len(self.assertions) == MAX_ASSERTIONS:
                raise UnsupportedError(
                    f"zero-width assertion '{assertion.kind.value}'",
                    f"a pattern may hold at most {MAX_ASSERTIONS} distinct assertions",
                    self.pattern,
                    position,
                )
            number = self._numbers[assertion] = len(self.assertions)
            self.assertions.append(assertion)
        return marker_node(number)

    def is_boundary(self, node: ir.Node) -> bool:
        """Whether ``node`` is the marker of ``\\b`` or ``\\B`` (which take no quantifier)."""
        return any(
            node == marker_node(number)
            for kind in (Kind.BOUNDARY, Kind.NOT_BOUNDARY)
            if (number := self._numbers.get(Assertion(kind))) is not None
        )


def marker_node(number: int) -> ir.Node:
    return ir.seq(ir.byte_set(1 << MARKER_PREFIX), ir.byte_set(1 << number))


def markers_in(dfa: DFA) -> list[int]:
    """The numbers of the markers that ``dfa`` reads somewhere (ascending)."""
    table = dfa.transitions
    after_prefix = table[:, dfa.byte_class[MARKER_PREFIX]]
    states = np.unique(after_prefix[after_prefix != 0])
    if not len(states):
        return []
    read = (table[states][:, dfa.byte_class] != 0).any(axis=0)
    return [int(number) for number in np.flatnonzero(read)]


def skipping_markers(dfa: DFA) -> DFA:
    """``dfa`` (over text bytes) with markers allowed anywhere: the marked words whose text
    ``dfa`` accepts. Each state gets a twin that ``MARKER_PREFIX`` leads to and any byte leads
    back from."""
    size = dfa.num_states
    prefix_class = dfa.num_classes
    byte_class = dfa.byte_class.copy()
    byte_class[MARKER_PREFIX] = prefix_class
    table = np.zeros((2 * size, prefix_class + 1), dtype=np.int32)
    table[:size, :prefix_class] = dfa.transitions
    table[1:size, prefix_class] = np.arange(size + 1, 2 * size, dtype=np.int32)
    table[size + 1 :, :] = np.arange(1, size, dtype=np.int32)[:, None]
    accepting = np.concatenate([dfa.accepting, np.zeros(size, dtype=bool)])
    return minimal_dense(table, byte_class, accepting, dfa.start)
