"""What each assertion asks of the text around its marker, and the texts of a marked language.

Takes: the ``Markers`` of a pattern parsed with markers and ``Limits``. Hands on: a ``Resolver``,
whose ``erase`` takes the DFA of a language over text and markers and hands on the DFA of the
texts in which some placing of the markers makes every assertion hold (``erasure``), with these
obligations on the rest of the text at each marker:

- ``^``: none, but it fails in any context other than the start of the text;
- ``$``: the rest is empty (python flavor: empty or one ``\\n``);
- ``\\b``: after a word character (``[A-Za-z0-9_]``) the rest does not start with one; at the start
  or after another character it does. ``\\B`` the other way round;
- ``(?=X)`` / ``(?!X)``: the rest is / is not in the language of ``X`` followed by any text, which
  is itself resolved first, once per context when ``X`` holds assertions that look back (``^``,
  ``\\b``, ``\\B``, or lookaheads that hold them), since those see the text before the lookahead.

Lookahead bodies are resolved in the order of their numbers, which puts every lookahead after the
ones inside it (``markers``), so nothing recurses however deep lookaheads nest. ``product`` hands
on, for an assertion that looks only ahead, its language with markers skipped, for ``folding``.
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.frontends.regex.erasure import (
    OTHER,
    START,
    WORD,
    WORD_BYTES,
    Assertions,
    Effect,
    erase_markers,
)
from moonmaskc.frontends.regex.markers import TEXT_BYTES, Kind, Markers, markers_in, skipping_markers
from moonmaskc.limits import Limits

_CONTEXTS = (START, WORD, OTHER)


class Resolver:
    """The lookahead automata of one pattern's assertions, and erasure with them."""

    def __init__(self, markers: Markers, limits: Limits) -> None:
        self.markers = markers
        self.limits = limits
        end = ir.alt(ir.EPSILON, ir.text("\n")) if markers.dollar_allows_final_newline else ir.EPSILON
        self.end = compile_ir(end, limits)
        self.word_next = compile_ir(ir.seq(ir.byte_set(ir.mask_of(WORD_BYTES)), ir.star(TEXT_BYTES)), limits)
        self.looks_back: list[bool] = []
        self.lookaheads: dict[tuple[int, int], DFA] = {}  # (number, context): what the rest may be
        for number, assertion in enumerate(markers.assertions):
            if assertion.kind not in (Kind.LOOKAHEAD, Kind.NEGATIVE_LOOKAHEAD):
                self.looks_back.append(assertion.kind is not Kind.END)
                continue
            marked = compile_ir(ir.seq(assertion.body, ir.star(TEXT_BYTES)), limits)
            looks_back = self._looks_back(marked)
            self.looks_back.append(looks_back)
            for context in _CONTEXTS if looks_back else (START,):
                self.lookaheads[number, context] = self.erase(marked, context)

        self._products: dict[int, tuple[DFA, bool] | None] = {}

    def _looks_back(self, marked: DFA) -> bool:
        return any(self.looks_back[number] for number in markers_in(marked))

    def product(self, number: int) -> tuple[DFA, bool] | None:
        """For an assertion that looks only ahead (``$``, a lookahead that does not look back),
        the marked words whose text after the marker is what it asks for, and whether the rest
        must be in that language (else outside it); None for the others."""
        if number not in self._products:
            kind = self.markers.assertions[number].kind
            if kind is Kind.END:
                self._products[number] = skipping_markers(self.end), True
            elif kind in (Kind.LOOKAHEAD, Kind.NEGATIVE_LOOKAHEAD) and not self.looks_back[number]:
                rest = skipping_markers(self.lookaheads[number, START])
                self._products[number] = rest, kind is Kind.LOOKAHEAD
            else:
                self._products[number] = None
        return self._products[number]

    def erase(self, marked: DFA, context: int) -> DFA:
        """The texts of ``marked`` whose assertions hold, read after ``context``."""
        used = markers_in(marked)
        if not used:
            return marked
        assert all(number < len(self.looks_back) for number in used), used
        track = any(self.looks_back[number] for number in used)
        automata: list[DFA] = []
        effects = {
            (number, at): self._effect(number, at, automata)
            for number in used
            for at in (_CONTEXTS if track else (START,))
        }
        return erase_markers(marked, Assertions(effects, automata, track), context, self.limits)

    def _effect(self, number: int, context: int, automata: list[DFA]) -> Effect:
        """What the assertion ``number`` asks of the rest of the text after ``context``."""
        kind = self.markers.assertions[number].kind
        if kind is Kind.START:
            return () if context == START else None
        if kind is Kind.END:
            return ((_index(self.end, automata), True),)
        if kind is Kind.BOUNDARY:
            return ((_index(self.word_next, automata), context != WORD),)
        if kind is Kind.NOT_BOUNDARY:
            return ((_index(self.word_next, automata), context == WORD),)
        rest = self.lookaheads[number, context if self.looks_back[number] else START]
        return ((_index(rest, automata), kind is Kind.LOOKAHEAD),)


def _index(automaton: DFA, automata: list[DFA]) -> int:
    """Where ``automaton`` stands in ``automata`` (appended on first use)."""
    for index, known in enumerate(automata):
        if known is automaton:
            return index
    automata.append(automaton)
    return len(automata) - 1
