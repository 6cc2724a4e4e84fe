"""The normalising pass (``schema.normalize``): each record from the draft-07 and the 2020-12
forms of its keywords, and each malformed keyword value refused naming the keyword, the pointer
and what was expected."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import moonmaskc.frontends.schema.types as types_package
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.context import Context
from moonmaskc.frontends.schema.layout import Layout
from moonmaskc.frontends.schema.normalize import (
    array_keywords,
    number_keywords,
    object_keywords,
    presence_dependencies,
    string_keywords,
)
from moonmaskc.frontends.schema.numbers_ranges import Bound
from moonmaskc.frontends.schema.typed import (
    ArrayKeywords,
    Dependency,
    NumberKeywords,
    ObjectKeywords,
    StringKeywords,
    Subschema,
)
from moonmaskc.limits import Limits

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
WHERE = "#/$defs/x"


def context(lenient: bool = False, draft: str = DRAFT_2020_12) -> Context:
    return Context({"$schema": draft}, Layout.of("compact"), lenient, Limits())


def refused(build: Any, schema: dict[str, Any]) -> str:
    with pytest.raises(UnsupportedError) as caught:
        build(schema)
    return str(caught.value)


# ---------------------------------------------------------------------------------------- strings


@pytest.mark.parametrize("draft", [DRAFT_07, DRAFT_2020_12])
def test_string_record_holds_lengths_pattern_and_known_format(draft: str) -> None:
    schema = {"minLength": 2, "maxLength": 8.0, "pattern": "^a", "format": "date"}
    assert string_keywords(context(draft=draft), schema, WHERE) == StringKeywords(
        min_length=2, max_length=8, pattern="^a", format="date", length_only=False
    )


def test_string_record_without_keywords_is_any_length_and_length_only() -> None:
    assert string_keywords(context(), {}, WHERE) == StringKeywords(0, None, None, None, True)


def test_string_record_sets_an_unknown_format_aside_with_a_warning() -> None:
    ctx = context()
    record = string_keywords(ctx, {"format": "colour"}, WHERE)
    assert record.format is None and not record.length_only
    assert list(ctx.warnings) == [
        "unknown format 'colour' at #/$defs/x/format: an annotation (validators ignore formats "
        "they do not know), compiled as any string"
    ]


def test_string_record_of_an_empty_length_range_reads_no_further() -> None:
    record = string_keywords(context(), {"minLength": 3, "maxLength": 2, "pattern": 7}, WHERE)
    assert record.empty and record.pattern is None and not record.length_only


@pytest.mark.parametrize("keyword", ["minLength", "maxLength"])
@pytest.mark.parametrize("value", [-1, 1.5, "3", True, [2]])
def test_string_length_malformed_names_keyword_and_pointer(keyword: str, value: Any) -> None:
    message = refused(lambda s: string_keywords(context(), s, WHERE), {keyword: value})
    assert message == f"unsupported keyword {keyword!r} at {WHERE}: must be a non-negative integer"


def test_string_pattern_not_a_string_is_refused_or_dropped_under_lenient() -> None:
    message = refused(lambda s: string_keywords(context(), s, WHERE), {"pattern": 3})
    assert (
        message == f"unsupported keyword 'pattern' at {WHERE}/pattern: unsupported pattern: must be a string"
    )
    ctx = context(lenient=True)
    record = string_keywords(ctx, {"pattern": 3, "maxLength": 4}, WHERE)
    assert record == StringKeywords(0, 4, None, None, length_only=False)
    assert list(ctx.warnings) == [
        f"ignored keyword 'pattern' at {WHERE}/pattern: unsupported pattern: must be a string"
    ]


def test_string_format_a_draft_defines_and_we_do_not_compile_is_refused() -> None:
    message = refused(lambda s: string_keywords(context(), s, WHERE), {"format": "idn-email"})
    assert message.startswith(
        f"unsupported keyword 'format' at {WHERE}/format: unsupported format 'idn-email'"
    )
    ctx = context(lenient=True)
    assert string_keywords(ctx, {"format": "idn-email"}, WHERE).format is None
    assert len(ctx.warnings) == 1


# ---------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("draft", [DRAFT_07, DRAFT_2020_12])
def test_number_record_holds_exact_bounds_and_the_tighter_of_each_pair(draft: str) -> None:
    schema = {
        "minimum": 0.1,
        "exclusiveMinimum": 0.1,
        "maximum": 10,
        "exclusiveMaximum": 12,
        "multipleOf": 0.05,
    }
    record = number_keywords(context(draft=draft), schema, True, WHERE)
    assert record == NumberKeywords(
        True,
        minimum=Decimal("0.1"),
        exclusive_minimum=Decimal("0.1"),
        maximum=Decimal(10),
        exclusive_maximum=Decimal(12),
        multiple_of=Decimal("0.05"),
    )
    assert record.lower == Bound(Decimal("0.1"), False)  # equal values: the exclusive one
    assert record.upper == Bound(Decimal(10), True)


def test_integer_record_without_keywords_is_unbounded() -> None:
    record = number_keywords(context(), {}, False, WHERE)
    assert not record.fractions and record.lower is None and record.upper is None
    assert record.multiple_of is None and record.key is not None


def test_number_record_key_tells_written_forms_apart() -> None:
    ctx = context()
    one, one_float = (number_keywords(ctx, {"minimum": v}, True, WHERE) for v in (1, 1.0))
    assert one.key != one_float.key
    assert one.key == number_keywords(ctx, {"minimum": 1}, True, WHERE).key


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"minimum": "1"}, "unsupported minimum value '1' at #/$defs/x: must be a number"),
        (
            {"exclusiveMaximum": True},
            "unsupported exclusiveMaximum value True at #/$defs/x: must be a number (a boolean is "
            'draft-04\'s form, which a document declaring "$schema": '
            '"http://json-schema.org/draft-04/schema#" compiles)',
        ),
        ({"maximum": float("inf")}, "unsupported maximum value inf at #/$defs/x: must be a finite number"),
        ({"multipleOf": 0}, "unsupported multipleOf value 0 at #/$defs/x: must be greater than 0"),
        ({"multipleOf": -0.5}, "unsupported multipleOf value -0.5 at #/$defs/x: must be greater than 0"),
    ],
)
def test_number_malformed_names_keyword_and_pointer(schema: dict[str, Any], reason: str) -> None:
    message = refused(lambda s: number_keywords(context(), s, True, WHERE), schema)
    assert message == f"unsupported keyword 'number bounds' at {WHERE}: {reason}"


def test_number_malformed_drops_every_bound_under_lenient() -> None:
    ctx = context(lenient=True)
    record = number_keywords(ctx, {"minimum": 3, "maximum": "9"}, False, WHERE)
    assert record == NumberKeywords(False) and record.key is None
    assert list(ctx.warnings) == [
        f"ignored keyword 'number bounds' at {WHERE}: "
        f"unsupported maximum value '9' at {WHERE}: must be a number"
    ]


# ----------------------------------------------------------------------------------------- arrays


def test_array_record_from_2020_12_prefix_items_and_items() -> None:
    schema = {"prefixItems": [{"type": "string"}, True], "items": False, "minItems": 1, "maxItems": 2}
    assert array_keywords(schema, WHERE) == ArrayKeywords(
        prefix=(
            Subschema({"type": "string"}, f"{WHERE}/prefixItems/0"),
            Subschema(True, f"{WHERE}/prefixItems/1"),
        ),
        items=Subschema(False, f"{WHERE}/items"),
        min_items=1,
        max_items=2,
    )


def test_array_record_from_draft_07_items_array_and_additional_items() -> None:
    schema = {"items": [{"type": "string"}, True], "additionalItems": False, "minItems": 1, "maxItems": 2}
    assert array_keywords(schema, WHERE) == ArrayKeywords(
        prefix=(Subschema({"type": "string"}, f"{WHERE}/items/0"), Subschema(True, f"{WHERE}/items/1")),
        items=Subschema(False, f"{WHERE}/additionalItems"),
        min_items=1,
        max_items=2,
    )


def test_array_record_items_default_to_true_with_their_pointer() -> None:
    assert array_keywords({}, WHERE) == ArrayKeywords((), Subschema(True, f"{WHERE}/items"))
    draft_07 = array_keywords({"items": [{}]}, WHERE)
    assert draft_07.items == Subschema(True, f"{WHERE}/additionalItems")


def test_array_record_holds_contains_with_its_counts() -> None:
    record = array_keywords({"contains": {"type": "null"}, "maxContains": 3}, WHERE)
    assert record.contains == Subschema({"type": "null"}, f"{WHERE}/contains")
    assert (record.min_contains, record.max_contains) == (1, 3)
    zero = array_keywords({"contains": True, "minContains": 0}, WHERE)
    assert (zero.min_contains, zero.max_contains) == (0, None)


def test_array_record_reads_contains_counts_only_beside_contains() -> None:
    record = array_keywords({"minContains": "x"}, WHERE)
    assert record.contains is None and record.min_contains == 1


def test_array_record_unique_items_unless_max_items_allows_one() -> None:
    assert array_keywords({"uniqueItems": True}, WHERE).unique_items
    assert not array_keywords({"uniqueItems": True, "maxItems": 1}, WHERE).unique_items
    assert not array_keywords({"uniqueItems": "yes"}, WHERE).unique_items


def test_array_record_of_an_empty_count_range_reads_no_further() -> None:
    record = array_keywords({"minItems": 3, "maxItems": 1, "contains": {}, "minContains": -1}, WHERE)
    assert record.empty and record.contains is None


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"prefixItems": {}}, f"unsupported keyword 'prefixItems' at {WHERE}: must be an array"),
        ({"minItems": -1}, f"unsupported keyword 'minItems' at {WHERE}: must be a non-negative integer"),
        ({"maxItems": "2"}, f"unsupported keyword 'maxItems' at {WHERE}: must be a non-negative integer"),
        (
            {"contains": {}, "minContains": 0.5},
            f"unsupported keyword 'minContains' at {WHERE}: must be a non-negative integer",
        ),
        (
            {"contains": {}, "maxContains": False},
            f"unsupported keyword 'maxContains' at {WHERE}: must be a non-negative integer",
        ),
    ],
)
def test_array_malformed_names_keyword_and_pointer(schema: dict[str, Any], message: str) -> None:
    assert refused(lambda s: array_keywords(s, WHERE), schema) == message


# ---------------------------------------------------------------------------------------- objects


@pytest.mark.parametrize("draft", [DRAFT_07, DRAFT_2020_12])
def test_object_record_keeps_declared_order_and_pointers(draft: str) -> None:
    schema = {
        "$schema": draft,
        "properties": {"z": {"type": "string"}, "a/b": False},
        "required": ["a/b", "q", "a/b"],
        "additionalProperties": {"type": "integer"},
        "patternProperties": {"^x-": True},
        "minProperties": 1,
        "maxProperties": 5,
        "propertyNames": {"maxLength": 3},
    }
    assert object_keywords(schema, WHERE) == ObjectKeywords(
        properties=(
            ("z", Subschema({"type": "string"}, f"{WHERE}/properties/z")),
            ("a/b", Subschema(False, f"{WHERE}/properties/a~1b")),
        ),
        required=("a/b", "q"),
        additional=Subschema({"type": "integer"}, f"{WHERE}/additionalProperties"),
        pattern_properties=(("^x-", Subschema(True, f"{WHERE}/patternProperties/^x-")),),
        min_properties=1,
        max_properties=5,
        property_names=Subschema({"maxLength": 3}, f"{WHERE}/propertyNames"),
    )


def test_object_record_without_keywords_allows_any_key() -> None:
    assert object_keywords({}, WHERE) == ObjectKeywords(
        (), (), Subschema(True, f"{WHERE}/additionalProperties")
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"properties": []}, f"unsupported keyword 'properties' at {WHERE}: must be an object"),
        ({"required": "a"}, f"unsupported keyword 'required' at {WHERE}: must be an array"),
        (
            {"minProperties": 1.5},
            f"unsupported keyword 'minProperties' at {WHERE}: must be a non-negative integer",
        ),
        (
            {"maxProperties": -2},
            f"unsupported keyword 'maxProperties' at {WHERE}: must be a non-negative integer",
        ),
        (
            {"patternProperties": ["^a"]},
            f"unsupported keyword 'patternProperties' at {WHERE}: must be an object",
        ),
    ],
)
def test_object_malformed_names_keyword_and_pointer(schema: dict[str, Any], message: str) -> None:
    assert refused(lambda s: object_keywords(s, WHERE), schema) == message


# ----------------------------------------------------------------------------------- dependencies


def test_dependencies_of_draft_07_and_2020_12_give_the_same_records() -> None:
    draft_07 = {"dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}}
    draft_2020_12 = {"dependentRequired": {"a": ["b", "c"]}, "dependentSchemas": {"d": {"required": ["e"]}}}
    old, new = presence_dependencies(draft_07, WHERE), presence_dependencies(draft_2020_12, WHERE)
    assert [(d.key, d.names, d.schema and d.schema.schema) for d in old] == [
        (d.key, d.names, d.schema and d.schema.schema) for d in new
    ]
    assert new == (
        Dependency("a", names=("b", "c")),
        Dependency("d", schema=Subschema({"required": ["e"]}, f"{WHERE}/dependentSchemas/d")),
    )
    assert old[1].schema == Subschema({"required": ["e"]}, f"{WHERE}/dependencies/d")


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"dependentRequired": []}, f"unsupported keyword 'dependentRequired' at {WHERE}: must be an object"),
        (
            {"dependentRequired": {"a": [1]}},
            f"unsupported keyword 'dependentRequired' at {WHERE}/dependentRequired/a: names must be strings",
        ),
        (
            {"dependentRequired": {"a": {}}},
            f"unsupported keyword 'dependentRequired' at {WHERE}/dependentRequired/a: "
            "not a list of names nor a schema",
        ),
        (
            {"dependentSchemas": {"a": ["b"]}},
            f"unsupported keyword 'dependentSchemas' at {WHERE}/dependentSchemas/a: "
            "not a list of names nor a schema",
        ),
        (
            {"dependencies": {"a": 3}},
            f"unsupported keyword 'dependencies' at {WHERE}/dependencies/a: not a list of names nor a schema",
        ),
    ],
)
def test_dependencies_malformed_names_keyword_and_pointer(schema: dict[str, Any], message: str) -> None:
    assert refused(lambda s: presence_dependencies(s, WHERE), schema) == message


# --------------------------------------------------------------------------------- through the walk


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"properties": {"a": {"type": "string", "maxLength": -1}}},
            "unsupported keyword 'maxLength' at #/properties/a: must be a non-negative integer",
        ),
        (
            {"type": "array", "items": [{"type": "array", "minItems": "1"}]},
            "unsupported keyword 'minItems' at #/items/0: must be a non-negative integer",
        ),
        (
            {"type": "array", "prefixItems": [{"type": "object", "required": {}}]},
            "unsupported keyword 'required' at #/prefixItems/0: must be an array of strings (property "
            "names), not {}",
        ),
    ],
)
def test_walk_reports_the_pointer_of_the_schema_whose_keyword_is_malformed(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(UnsupportedError) as caught:
        compile_schema_ir(schema)
    assert str(caught.value) == message


def test_emitters_read_records_not_schema_dicts_nor_the_draft() -> None:
    """The emitters of ``types`` take typed records: no keyword lookup in a dict, no draft."""
    for path in sorted(Path(types_package.__file__).parent.glob("*.py")):
        text = path.read_text()
        for raw in ("schema.get(", "schema[", "old_draft", "new_draft", "arguments import"):
            assert raw not in text, f"{path.name} reads {raw!r}"
