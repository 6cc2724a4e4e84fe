"""Unsupported keywords are errors naming the keyword and its JSON pointer; ``lenient`` turns them
into warnings; malformed JSON reports line and column; remote refs and typos are refused."""

from __future__ import annotations

import pytest

from moonmaskc.errors import SourceError, UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir, load_schema_file
from moonmaskc.frontends.schema.keywords import REFUSED

REFUSED_EXAMPLES = {
    "patternProperties": {"^a": {"type": "integer"}},
    "propertyNames": {"maxLength": 3},
    "dependentRequired": {"a": ["b"]},
    "dependentSchemas": {"a": {"required": ["b"]}},
    "dependencies": {"a": ["b"]},
    "contains": {"type": "integer"},
    "minContains": 2,
    "maxContains": 2,
    "unevaluatedProperties": False,
    "unevaluatedItems": False,
    "$dynamicRef": "#meta",
    "$recursiveRef": "#",
    "$recursiveAnchor": True,
}


def test_every_refused_keyword_has_an_example() -> None:
    assert set(REFUSED_EXAMPLES) == set(REFUSED)


@pytest.mark.parametrize("keyword", sorted(REFUSED_EXAMPLES))
def test_refused_keyword_names_keyword_and_pointer(keyword: str) -> None:
    schema = {"type": "object", "properties": {"inner": {keyword: REFUSED_EXAMPLES[keyword]}}}
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert keyword in str(caught.value)
    assert "#/properties/inner" in str(caught.value)
    result = compile_schema_ir(schema, lenient=True)
    assert any(keyword in w and "#/properties/inner" in w for w in result.warnings)
    assert result.notes["ignored_keywords"]


def test_lenient_lists_every_ignored_keyword() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"x": {}},
        "properties": {"a": {"type": "array", "contains": {"type": "string"}, "uniqueItems": True}},
    }
    result = compile_schema_ir(schema, lenient=True)
    ignored = result.notes["ignored_keywords"]
    assert len(ignored) == 3
    assert any("'patternProperties' at #:" in w for w in ignored)
    assert any("'contains' at #/properties/a" in w for w in ignored)
    assert any("'uniqueItems' at #/properties/a" in w for w in ignored)


def test_unique_items_trivial_case_compiles() -> None:
    compile_schema_ir({"type": "array", "uniqueItems": True, "maxItems": 1})
    compile_schema_ir({"type": "array", "uniqueItems": False})


def test_typo_and_unknown_keywords_are_refused_and_lenient_warns() -> None:
    with pytest.raises(UnsupportedError, match="maxLength"):
        compile_schema_ir({"type": "string", "maxLenght": 3})
    with pytest.raises(UnsupportedError, match="'self' at #/properties/a"):
        compile_schema_ir(
            {"type": "object", "properties": {"a": {"type": "string", "self": {"vendor": "x"}}}}
        )
    result = compile_schema_ir({"type": "string", "self": {"vendor": "x"}}, lenient=True)
    assert len(result.warnings) == 1
    assert "'self'" in result.warnings[0] and "#" in result.warnings[0]


def test_unknown_format_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="format"):
        compile_schema_ir({"type": "string", "format": "no-such-format"})


def test_remote_ref_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="remote"):
        compile_schema_ir({"$ref": "https://example.com/other.json#/x"})


def test_missing_pointer_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="#/\\$defs/missing"):
        compile_schema_ir({"$ref": "#/$defs/missing"})


def test_complement_of_ordered_objects_is_refused() -> None:
    schema = {"not": {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}
    with pytest.raises(UnsupportedError, match="not"):
        compile_schema_ir(schema)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"type": "object",\n "properties": {\n   "a": {"type": "string",}\n }}', 3, 27),
        ('{"type": "string"', 1, 18),
        ('{\n  "type" "string"}', 2, 10),
    ],
)
def test_malformed_json_reports_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(SourceError) as caught:
        compile_schema_ir(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert f"line {line}, column {column}" in str(caught.value)


def test_load_schema_file_reports_position(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "bad.json"  # type: ignore[operator]
    path.write_text('{"type": [1,,2]}', encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        load_schema_file(path)
    assert caught.value.line == 1 and caught.value.column == 13
