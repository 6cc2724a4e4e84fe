"""Erasing markers: the language of a pattern over text and markers in, its texts out.

Takes: the DFA of a language over bytes in which some words hold markers (``markers``: the byte
``MARKER_PREFIX`` then an assertion's number); what each marker's assertion asks of the text
around it (``Assertions``: obligations on the rest of the text, per context: what the text read
so far ends with); the context before the text, and ``Limits``. Hands on: the minimal DFA over
text bytes of the texts ``t`` such that some word of the language is ``t`` with markers put in,
and every marker's assertion holds at its place in ``t``.

An *obligation* is a state of a lookahead automaton (a DFA over text bytes) that the rest of the
text must be accepted from (positive) or rejected from (negative). A *configuration* is a state of
the marked DFA, the context (the start of the text, after a word character, after another: only
tracked when some assertion looks back) and a set of obligations. Reading a text byte steps every
part of a configuration; reading a marker adds the assertion's obligations, or kills the
configuration when the assertion fails in its context. An obligation is dropped once it is
settled (a positive one in a state that accepts every continuation, a negative one in the dead
state), and a configuration dies once one of its obligations has failed. At the end of the text a
configuration accepts when its DFA state accepts and the empty rest meets every obligation. The
result is the subset construction over configurations, markers read as empty moves, built lazily
from the start: at most ``limits.max_states`` states, and ``limits.max_nfa_states``
configurations, or ``LimitError`` naming ``max_states``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.minimize import minimal_dense
from moonmaskc.errors import LimitError
from moonmaskc.frontends.regex.markers import MARKER_PREFIX
from moonmaskc.limits import Limits

START, WORD, OTHER = 0, 1, 2
"""Contexts: what the text read so far ends with."""
WORD_BYTES = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")

Obligation = tuple[int, int, bool]  # (lookahead automaton, its state, positive)
Effect = tuple[tuple[int, bool], ...] | None  # obligations to add (automaton, positive); None: fails
Configuration = tuple[int, int, frozenset[Obligation]]


@dataclass(frozen=True)
class Assertions:
    """What the markers of one marked DFA ask: ``effects[number, context]``, over the lookahead
    automata ``automata``; ``track_context`` when some effect depends on the context (else every
    context is ``START``)."""

    effects: dict[tuple[int, int], Effect]
    automata: list[DFA]
    track_context: bool


def erase_markers(dfa: DFA, assertions: Assertions, context: int, limits: Limits) -> DFA:
    """The texts of ``dfa`` (a language over text and markers) whose markers' assertions hold."""
    if dfa.start == 0:
        return dfa
    return _Eraser(dfa, assertions, context if assertions.track_context else START, limits).run()


def _joint_classes(dfa: DFA, automata: list[DFA], track_context: bool) -> tuple[np.ndarray, np.ndarray]:
    """Text bytes that every automaton (and the context) treats alike share a class, numbered by
    their smallest byte; the last class is ``MARKER_PREFIX`` alone, which leads nowhere in the
    result. Hands on the class of each byte and the smallest byte of each text class."""
    columns = [dfa.byte_class, *(automaton.byte_class for automaton in automata)]
    if track_context:
        columns.append(np.array([byte in WORD_BYTES for byte in range(256)], dtype=np.int32))
    keys = np.stack(columns, axis=1)
    class_of = np.empty(256, dtype=np.int32)
    classes: dict[bytes, int] = {}
    representatives: list[int] = []
    for byte in range(256):
        if byte == MARKER_PREFIX:
            continue
        key = keys[byte].tobytes()
        found = classes.get(key)
        if found is None:
            found = classes[key] = len(representatives)
            representatives.append(byte)
        class_of[byte] = found
    class_of[MARKER_PREFIX] = len(representatives)
    return class_of, np.array(representatives, dtype=np.intp)


class _Eraser:
    """One run of the construction (see the module docstring)."""

    def __init__(self, dfa: DFA, assertions: Assertions, context: int, limits: Limits) -> None:
        self.limits = limits
        self.effects = assertions.effects
        self.track = assertions.track_context
        self.start_context = context
        self.class_of, representatives = _joint_classes(dfa, assertions.automata, self.track)
        self.num_classes = len(representatives)
        self.next = dfa.transitions[:, dfa.byte_class[representatives]].tolist()
        self.accepting = dfa.accepting.tolist()
        self.start = dfa.start
        # the context after each text class
        self.contexts = [
            (WORD if int(byte) in WORD_BYTES else OTHER) if self.track else START for byte in representatives
        ]
        self.marker_moves = self._marker_moves(dfa)
        self.lookahead_next: list[list[list[int]]] = []
        self.lookahead_accepting: list[list[bool]] = []
        self.settled: list[list[bool]] = []  # accepting, and every text byte loops back
        self.lookahead_start: list[int] = []
        for automaton in assertions.automata:
            rows = automaton.transitions[:, automaton.byte_class[representatives]]
            loops = (rows == np.arange(len(rows))[:, None]).all(axis=1)
            self.lookahead_next.append(rows.tolist())
            self.lookahead_accepting.append(automaton.accepting.tolist())
            self.settled.append((loops & automaton.accepting).tolist())
            self.lookahead_start.append(automaton.start)
        self.configurations: list[Configuration] = []
        self.ids: dict[Configuration, int] = {}
        self.steps: list[list[int] | None] = []
        self.closures: list[frozenset[int] | None] = []

    def _marker_moves(self, dfa: DFA) -> list[list[tuple[int, int]]]:
        """For each state of ``dfa``: (marker number, state after the marker) for each marker it reads."""
        table = dfa.transitions
        after_prefix = table[:, dfa.byte_class[MARKER_PREFIX]]
        moves: list[list[tuple[int, int]]] = [[] for _ in range(len(table))]
        numbers = sorted({number for number, _ in self.effects})
        for state in np.flatnonzero(after_prefix).tolist():
            middle = int(after_prefix[state])
            for number in numbers:
                target = int(table[middle, dfa.byte_class[number]])
                if target:
                    moves[state].append((number, target))
        return moves

    # -- configurations --------------------------------------------------------------------

    def _intern(self, configuration: Configuration) -> int:
        found = self.ids.get(configuration)
        if found is not None:
            return found
        found = self.ids[configuration] = len(self.configurations)
        if found >= self.limits.max_nfa_states:
            raise LimitError(
                "max_states",
                self.limits.max_states,
                f"the pattern's zero-width assertions need more than {self.limits.max_nfa_states} "
                "configurations (8 x the DFA state bound)",
                flag="--max-states",
            )
        self.configurations.append(configuration)
        self.steps.append(None)
        self.closures.append(None)
        return found

    def _with_effect(self, configuration: Configuration, number: int, target: int) -> Configuration | None:
        """``configuration`` once the marker ``number`` has led its DFA state to ``target``."""
        _, context, obligations = configuration
        effect = self.effects[number, context]
        if effect is None:
            return None
        added = set(obligations)
        for automaton, positive in effect:
            state = self.lookahead_start[automaton]
            settled = self.settled[automaton][state]
            if state == 0 or settled:
                if (state == 0) == positive:  # a positive one that cannot hold, a negative one that must
                    return None
                continue
            added.add((automaton, state, positive))
        return target, context, frozenset(added)

    def _closure(self, index: int) -> frozenset[int]:
        """``index`` and the configurations its markers lead to."""
        found = self.closures[index]
        if found is not None:
            return found
        reached = {index}
        stack = [index]
        while stack:
            configuration = self.configurations[stack.pop()]
            for number, target in self.marker_moves[configuration[0]]:
                moved = self._with_effect(configuration, number, target)
                if moved is not None:
                    moved_index = self._intern(moved)
                    if moved_index not in reached:
                        reached.add(moved_index)
                        stack.append(moved_index)
        found = self.closures[index] = frozenset(reached)
        return found

    def _step(self, index: int) -> list[int]:
        """The configuration after each text class (-1 where it dies), computed once."""
        found = self.steps[index]
        if found is not None:
            return found
        state, _, obligations = self.configurations[index]
        row = self.next[state]
        intern = self._intern
        if not obligations:
            found = [
                intern((target, context, obligations)) if target else -1
                for target, context in zip(row, self.contexts, strict=True)
            ]
        else:
            found = []
            for cls, (target, context) in enumerate(zip(row, self.contexts, strict=True)):
                kept = self._stepped(obligations, cls) if target else None
                found.append(-1 if kept is None else intern((target, context, kept)))
        self.steps[index] = found
        return found

    def _stepped(self, obligations: frozenset[Obligation], cls: int) -> frozenset[Obligation] | None:
        kept: list[Obligation] = []
        for automaton, state, positive in obligations:
            target = self.lookahead_next[automaton][state][cls]
            if target == 0 or self.settled[automaton][target]:
                if (target == 0) == positive:
                    return None
                continue
            kept.append((automaton, target, positive))
        return frozenset(kept)

    def _accepts(self, index: int) -> bool:
        state, _, obligations = self.configurations[index]
        return self.accepting[state] and all(
            self.lookahead_accepting[automaton][at] == positive for automaton, at, positive in obligations
        )

    # -- the subset construction -------------------------------------------------------------

    def run(self) -> DFA:
        empty: frozenset[int] = frozenset()
        start = self._closure(self._intern((self.start, self.start_context, frozenset())))
        ids: dict[frozenset[int], int] = {empty: 0, start: 1}
        sets = [empty, start]
        rows: list[list[int]] = [[0] * (self.num_classes + 1)]
        closure = self._closure
        index = 1
        while index < len(sets):
            members = sets[index]
            index += 1
            if len(members) == 1:
                (member,) = members
                targets = [closure(step) if step >= 0 else empty for step in self._step(member)]
            else:
                steps = [self._step(member) for member in members]
                targets = []
                for cls in range(self.num_classes):
                    reached: set[int] = set()
                    for step in steps:
                        if step[cls] >= 0:
                            reached.update(closure(step[cls]))
                    targets.append(frozenset(reached))
            row = []
            for target in targets:
                found = ids.get(target)
                if found is None:
                    found = ids[target] = len(sets)
                    if found > self.limits.max_states:
                        raise LimitError(
                            "max_states",
                            self.limits.max_states,
                            f"the DFA needs more than {self.limits.max_states} states",
                            flag="--max-states",
                        )
                    sets.append(target)
                row.append(found)
            row.append(0)  # MARKER_PREFIX
            rows.append(row)
        accepting = np.array([any(map(self._accepts, members)) for members in sets], dtype=bool)
        table = np.array(rows, dtype=np.int32).reshape(len(sets), self.num_classes + 1)
        return minimal_dense(table, self.class_of, accepting, 1)
