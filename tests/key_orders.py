"""Whether a DFA accepts a JSON value with its object keys in some order, by a bounded search.

Takes: a DFA, a JSON value and a work budget. Hands on: ``True`` (accepted in some key order),
``False`` (in none) or ``None`` (the budget ran out first). The value is written as the suite
report writes it (compact, numbers in their one spelling); only the order of each object's keys
varies, never a value. A depth-first walk tries the given order first and finds an accepted order
near it at once; when it finds none within the budget, a breadth-first search decides: it carries
the set of DFA states reachable so far, per set of keys still to write (so orders that reach the
same states are followed once), and writes a value met again from the same set of states once (its
end states are kept). An object whose keys the DFA takes in any order has as many such sets as
subsets of its keys, hence the budget, spent anew by each search.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from moonmaskc.automata.dfa import DFA

State = tuple[int, int]


class _OutOfBudget(Exception):
    pass


def accepts_in_some_key_order(
    dfa: DFA, value: Any, write_scalar: Callable[[Any], str], budget: int = 20_000
) -> bool | None:
    transitions, byte_class = dfa.transitions, dfa.byte_class.tolist()
    regions = dfa.regions  # a walk state is (DFA state, counter of its counted region)
    left = [budget]

    def run(states: set[State], text: str) -> set[State]:
        out = set()
        data = text.encode("utf-8")
        if dfa.nests is not None:  # a walk state's register is the stack in a nest region
            for state, register in states:
                found, register, died = dfa.walk_counted(data, state, register)
                if died is None and found:
                    out.add((found, register))
            return out
        for state, count in states:
            for byte in data:
                target = transitions.item(state, byte_class[byte])
                if target and regions is not None:
                    stepped = regions.counter_step(state, target, count)
                    target, count = (target, stepped) if stepped is not None else (0, 0)
                state = target
                if state == 0:
                    break
            if state:
                out.add((state, count))
        return out

    def spend() -> None:
        left[0] -= 1
        if left[0] < 0:
            raise _OutOfBudget

    memo: dict[tuple[int, frozenset[State]], set[State]] = {}

    def written(item: Any, states: set[State]) -> set[State]:
        if not states:
            return states
        key = (id(item), frozenset(states))
        if key in memo:
            return memo[key]
        spend()
        memo[key] = result = _written(item, states)
        return result

    def _written(item: Any, states: set[State]) -> set[State]:
        if isinstance(item, dict):
            return run(members(item, run(states, "{")), "}")
        if isinstance(item, list):
            states = run(states, "[")
            for index, element in enumerate(item):
                states = written(element, run(states, ",") if index else states)
            return run(states, "]")
        return run(states, write_scalar(item))

    def members(item: dict[str, Any], states: set[State]) -> set[State]:
        frontier: dict[frozenset[str], set[State]] = {frozenset(item): states}
        for position in range(len(item)):
            following: dict[frozenset[str], set[State]] = {}
            for keys, reached in frontier.items():
                for key in keys:
                    spend()
                    prefix = ("," if position else "") + json.dumps(key, ensure_ascii=False) + ":"
                    after = written(item[key], run(reached, prefix))
                    if after:
                        following.setdefault(keys - {key}, set()).update(after)
            frontier = following
        return frontier.get(frozenset(), set())

    def first_writings(item: Any, state: State) -> Iterator[State]:
        """The end states of the writings of ``item`` from ``state``, lazily, keys in their given
        order first: a depth-first walk that finds an accepted order at once when one is near the
        given one, where the breadth of the frontier search may run out of budget first."""
        spend()
        if isinstance(item, dict):
            yield from first_members(item, list(item), run({state}, "{"), "}")
        elif isinstance(item, list):
            yield from first_elements(item, 0, run({state}, "["))
        else:
            yield from run({state}, write_scalar(item))

    def first_members(
        item: dict[str, Any], keys: list[str], states: set[State], close: str
    ) -> Iterator[State]:
        for state in states:
            if not keys:
                yield from run({state}, close)
                continue
            for key in keys:
                prefix = ("," if len(keys) < len(item) else "") + json.dumps(key, ensure_ascii=False) + ":"
                for after in run({state}, prefix):
                    rest = [other for other in keys if other != key]
                    for end in first_writings(item[key], after):
                        yield from first_members(item, rest, {end}, close)

    def first_elements(item: list[Any], index: int, states: set[State]) -> Iterator[State]:
        for state in states:
            if index == len(item):
                yield from run({state}, "]")
                continue
            for start in run({state}, ",") if index else {state}:
                for end in first_writings(item[index], start):
                    yield from first_elements(item, index + 1, {end})

    try:
        if any(dfa.accepting[state[0]] for state in first_writings(value, (dfa.start, 0))):
            return True
    except _OutOfBudget:
        pass
    left[0] = budget
    try:
        return any(dfa.accepting[state[0]] for state in written(value, {(dfa.start, 0)}))
    except _OutOfBudget:
        return None
