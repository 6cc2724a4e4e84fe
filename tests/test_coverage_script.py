"""benchmarks/coverage.py: refusals named by reason, warnings counted by kind, from real errors."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

import moonmaskc
from moonmaskc.errors import LimitError, MoonmaskError, UnsupportedError

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "coverage.py"
_SPEC = importlib.util.spec_from_file_location("coverage_script", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
coverage_script = importlib.util.module_from_spec(_SPEC)
sys.modules["coverage_script"] = coverage_script
_SPEC.loader.exec_module(coverage_script)


def _refusal(schema: Any) -> str:
    with pytest.raises(MoonmaskError) as caught:
        moonmaskc.compile_schema(schema, tokenizer=None)
    return coverage_script.refusal_reason(caught.value)


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (
            {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "uniqueItems: the items' language is infinite",
        ),
        ({"type": "string", "pattern": "(?:(?!a)b)*(a)\\1"}, "pattern: backreference"),
        ({"type": "string", "pattern": "x(?<=a)b"}, "pattern: lookbehind"),
        ({"type": "string", "format": "regex"}, "format 'regex'"),
        ({"$ref": "http://example.com/a.json"}, "$ref: remote references are not fetched"),
        # Long strings beside an enum of strings: no length counter (automata.counted), too big.
        (
            {"anyOf": [{"type": "string", "maxLength": 100_000}, {"enum": ["a"]}]},
            "limit max-states (maxLength)",
        ),
        (
            {"anyOf": [{"type": "string", "maxLength": 200_000}, {"enum": ["a"]}]},
            "limit max-states (maxLength)",
        ),
        (
            {
                "not": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "minProperties": 1,
                }
            },
            "not: its objects have a fixed key order",
        ),
        ("{not json", "malformed JSON schema"),
    ],
)
def test_refusal_reason_names_the_keyword_and_the_cause(schema: Any, reason: str) -> None:
    assert _refusal(schema) == reason


def test_refusal_reason_is_the_same_wherever_the_keyword_stands() -> None:
    one = _refusal({"properties": {"a": {"type": "string", "pattern": "(?<=x)"}}})
    other = _refusal({"items": {"anyOf": [{"type": "string", "pattern": "a(?<!y)"}, {"type": "null"}]}})
    assert one == other == "pattern: lookbehind"


def test_refusal_reason_of_a_refused_keyword_and_a_bound() -> None:
    error = UnsupportedError("keyword '$dynamicRef'", "dynamic references are not compiled", where="#/a/b")
    assert coverage_script.refusal_reason(error) == "$dynamicRef: dynamic references are not compiled"
    bound = LimitError("max_states", 9, "a product of 3 automata needs more than 9 states", "--max-states")
    assert coverage_script.refusal_reason(bound) == "limit max-states (product)"


def test_refusal_reason_of_errors_without_structure() -> None:
    assert coverage_script.refusal_reason(RecursionError()) == "recursion limit"
    assert coverage_script.refusal_reason(MoonmaskError("the grammar nests 12 levels deep: x")) == (
        "the grammar nests N levels deep"
    )


def test_warning_kinds_count_the_annotations_of_an_exact_compile() -> None:
    schema = {"type": "string", "foo": 1, "format": "bar", "_enum": [1], "discriminator": {}}
    artifact = moonmaskc.compile_schema(schema, tokenizer=None)
    assert coverage_script.warning_kinds(artifact.metadata["warnings"]) == {
        "unknown keyword": 1,
        "unknown format": 1,
        "disabled keyword": 1,
        "OpenAPI keyword": 1,
    }
    assert (
        coverage_script.warning_kinds(
            moonmaskc.compile_schema({"type": "string"}, tokenizer=None).metadata["warnings"]
        )
        == {}
    )


def test_the_paired_ratio_takes_only_schemas_both_engines_compiled() -> None:
    records = [
        {"strict": "ok", "seconds": 2.0, "xgrammar": "ok", "xgrammar_seconds": 1.0},  # 2.0
        {"strict": "ok", "seconds": 1.0, "xgrammar": "ok", "xgrammar_seconds": 4.0},  # 0.25
        {"strict": "ok", "seconds": 3.0, "xgrammar": "ok", "xgrammar_seconds": 6.0},  # 0.5
        {"strict": "refused", "seconds": 0.1, "xgrammar": "ok", "xgrammar_seconds": 9.0},
        {"strict": "ok", "seconds": 9.0, "xgrammar": "timeout"},
        {"strict": "ok", "seconds": 9.0},  # xgrammar not run
    ]
    assert coverage_script._paired_ratio(records) == 0.5
    assert coverage_script._paired_ratio(records[3:]) is None
