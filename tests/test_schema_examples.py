"""Strings sampled from the compiled example schemas are valid JSON, valid for the schema
(jsonschema, Draft 2020-12, FormatChecker on), compact, and keep declared property order.

Schema and samples are parsed with ``parse_float=Decimal`` so that jsonschema checks ``multipleOf``
exactly (with floats, 34.27 is "not a multiple of 0.01")."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.sample import sample
from moonmaskc.frontends.schema import compile_schema_ir, load_schema_file

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples" / "schemas").glob("*.json"))
SAMPLES_PER_SCHEMA = 600


def _declared_orders(schema: Any) -> list[list[str]]:
    """Every ``properties`` key list in the schema."""
    found: list[list[str]] = []
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            found.append(list(schema["properties"]))
        for value in schema.values():
            found.extend(_declared_orders(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_declared_orders(value))
    return found


def _outside_strings(text: str) -> str:
    out, in_string, escaped = [], False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            out.append(ch)
    return "".join(out)


def _keys_in_order(keys: list[str], orders: list[list[str]]) -> bool:
    for order in orders:
        position = {k: i for i, k in enumerate(order)}
        declared = [position[k] for k in keys if k in position]
        if len(declared) >= 2 and declared != sorted(declared):
            return False
        # Declared keys come before the others.
        flags = [k in position for k in keys]
        if len(declared) == len(keys) or not any(flags):
            continue
        if flags.index(False) < len(flags) - flags[::-1].index(True) - 1 and set(keys) & set(order):
            return False
    return True


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_samples_validate(path: Path) -> None:
    schema, _ = load_schema_file(path)
    result = compile_schema_ir(schema)
    assert not [w for w in result.warnings if "ignored" in w]
    dfa = compile_ir(result.node)
    exact_schema = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    validator = Draft202012Validator(exact_schema, format_checker=FormatChecker())
    orders = _declared_orders(schema)
    rng = random.Random(path.stem)
    distinct = set()
    for _ in range(SAMPLES_PER_SCHEMA):
        data = sample(dfa, rng, max_len=300)
        assert data is not None
        distinct.add(data)
        text = data.decode("utf-8")
        key_lists: list[list[str]] = []

        def hook(
            pairs: list[tuple[str, Any]], key_lists: list[list[str]] = key_lists, text: str = text
        ) -> dict[str, Any]:
            keys = [k for k, _ in pairs]
            assert len(keys) == len(set(keys)), f"duplicate keys in {text}"
            key_lists.append(keys)
            return dict(pairs)

        value = json.loads(text, object_pairs_hook=hook, parse_float=Decimal)
        errors = [e.message for e in validator.iter_errors(value)]
        assert not errors, f"{text}: {errors}"
        assert not any(ch in " \t\n\r" for ch in _outside_strings(text)), text
        for keys in key_lists:
            assert _keys_in_order(keys, orders), (keys, text)
    assert len(distinct) > SAMPLES_PER_SCHEMA // 3
