"""The suite report's key order search (``tests/key_orders.py``) on compiled schemas."""

from __future__ import annotations

import json
from typing import Any

from moonmaskc import compile_schema
from tests.key_orders import accepts_in_some_key_order
from tests.schema_suite_report import _written

ORDERED = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "object", "properties": {"c": {}, "d": {}}}},
    "additionalProperties": False,
}


def search(schema: Any, value: Any, budget: int = 20_000) -> bool | None:
    dfa = compile_schema(schema, tokenizer=None).dfa
    return accepts_in_some_key_order(dfa, value, _written, budget)


def test_keys_out_of_the_declared_order_are_found() -> None:
    dfa = compile_schema(ORDERED, tokenizer=None).dfa
    value = {"b": {"d": [1], "c": None}, "a": 1}
    assert not dfa.accepts(json.dumps(value, separators=(",", ":")).encode())
    assert accepts_in_some_key_order(dfa, value, _written) is True


def test_no_key_order_makes_an_invalid_value_valid() -> None:
    assert search(ORDERED, {"b": {"d": 1}, "a": "x"}) is False
    assert search(ORDERED, {"a": 1, "e": 2}) is False
    assert search(ORDERED, [1]) is False


def test_the_search_stops_at_its_budget() -> None:
    integers = {"type": "object", "additionalProperties": {"type": "integer"}}
    value: dict[str, Any] = {f"k{i}": i for i in range(12)}  # taken in any order
    assert search(integers, value, budget=500) is True  # (the given order, at once)
    value["last"] = "x"  # in no order: 2**13 sets of keys left to write
    assert search(integers, value, budget=500) is None
    assert search(integers, value, budget=10**6) is False


def test_a_value_met_again_from_the_same_states_is_written_once() -> None:
    # Eight objects of eight integers, each taken in any order; the last integer is a string, so
    # no order is accepted. Every order of the outer keys writes each inner object from the same
    # DFA states: written once per set of states, the search decides within the budget.
    objects = {
        "type": "object",
        "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}},
    }
    value: dict[str, Any] = {f"o{j}": {f"k{i}": i for i in range(8)} for j in range(8)}
    assert search(objects, value, budget=50_000) is True
    value["o7"]["k7"] = "x"
    assert search(objects, value, budget=50_000) is False
