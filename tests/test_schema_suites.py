"""JSON-Schema-Test-Suite and MaskBench: no invalid instance is ever accepted by a compiled schema.

Every schema that compiles within a per-case time limit is run against its labelled instances
(serialized compactly, keys in declared order). The full tables (with the valid instances accepted)
come from ``PYTHONPATH=. python -m tests.schema_suite_report``; here the MaskBench run is bounded to
the first few small schemas of each group so that the whole file stays within about a minute.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import schema_suite_report as report
from tests.conftest import data_path

SUPPORTED_FILES = [
    "additionalProperties", "allOf", "anchor", "anyOf", "boolean_schema", "const", "default", "enum",
    "exclusiveMaximum", "exclusiveMinimum", "if-then-else", "infinite-loop-detection", "items",
    "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties",
    "minimum", "multipleOf", "not", "oneOf", "pattern", "prefixItems", "properties", "ref", "required",
    "type", "uniqueItems", "additionalItems", "definitions", "refRemote", "unevaluatedProperties",
    "unevaluatedItems",
    "format:date", "format:date-time", "format:time", "format:duration", "format:email",
    "format:hostname", "format:ipv4", "format:ipv6", "format:uuid", "format:uri",
    "format:json-pointer", "format:relative-json-pointer", "format:uri-template", "format:iri",
    "format:iri-reference",
]  # fmt: skip
MASKBENCH_TEST_MAX_BYTES = 3_000
MASKBENCH_TEST_FILES_PER_GROUP = 8


def _suite_params() -> list[tuple[str, str]]:
    return [(draft, kw) for draft in report.SUITE_DRAFTS for kw in SUPPORTED_FILES]


@pytest.mark.parametrize(("draft", "keyword"), _suite_params(), ids=lambda x: x)
def test_suite_never_accepts_invalid(draft: str, keyword: str, monkeypatch: pytest.MonkeyPatch) -> None:
    base = data_path("schemas", "json-schema-test-suite", draft)
    name = keyword.split(":", 1)[-1] + ".json"
    path = base / "optional" / "format" / name if keyword.startswith("format:") else base / name
    if not path.exists():
        pytest.skip(f"{draft} has no {name}")
    monkeypatch.setattr(report, "CASE_SECONDS", 3.0)
    tally = report.run_suite_file(draft, keyword, path)
    assert tally.invalid_accepted == 0, tally.failures
    print(
        f"{draft}/{keyword}: compiled {tally.compiled}/{tally.cases}, "
        f"valid accepted {tally.valid_accepted}/{tally.valid}"
    )


def _maskbench_groups() -> list[str]:
    root = report.data_dir() / "schemas" / "maskbench"
    return sorted(p.name for p in root.iterdir()) if root.exists() else ["absent"]


@pytest.mark.parametrize("group", _maskbench_groups())
def test_maskbench_never_accepts_invalid(group: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder: Path = data_path("schemas", "maskbench", group)
    monkeypatch.setattr(report, "CASE_SECONDS", 2.0)
    tally = report.Tally()
    small = [p for p in sorted(folder.glob("*.json")) if p.stat().st_size <= MASKBENCH_TEST_MAX_BYTES]
    for path in small[:MASKBENCH_TEST_FILES_PER_GROUP]:
        tally.add(report.run_maskbench_file(path))
    assert tally.invalid_accepted == 0, tally.failures
    print(
        f"maskbench/{group}: compiled {tally.compiled}/{tally.cases}, invalid accepted "
        f"{tally.invalid_accepted}/{tally.invalid}, valid accepted {tally.valid_accepted}/{tally.valid}"
    )


def test_suite_data_is_what_we_expect() -> None:
    path = data_path("schemas", "json-schema-test-suite", "draft2020-12", "type.json")
    assert any(group["schema"].get("type") == "integer" for group in json.loads(path.read_text()))
