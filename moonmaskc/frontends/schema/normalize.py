"""The normalising pass: one schema object to the typed records of ``typed``, checked once.

Takes: a cleaned schema object as the walk has it where it calls the emitter of an instance type
(``$ref`` resolved, combinators split, ``SchemaWalk.typed``), its JSON pointer, and the walk's
``Context`` where a keyword may be dropped under lenient or warned about (``pattern``,
``format``, the number bounds).
Hands on: ``string_keywords``, ``number_keywords``, ``array_keywords``, ``object_keywords``, one
record each, and ``presence_dependencies`` (the ``Dependency`` records that ``dependencies``
splits a schema by). A malformed keyword value is an ``UnsupportedError`` naming the keyword, the
pointer and what was expected; under lenient the keywords that the walk has always dropped
(``pattern``, ``format``, the number bounds as one) are dropped here with a warning instead.

The keywords are read in the order the emitters used to read them, so that the first error and
the order of the warnings stay what they were; where a count range is empty (``maxLength <
minLength``, ``maxItems < minItems``) the keywords after it are not read, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema.arguments import as_list, count
from moonmaskc.frontends.schema.keywords import SPEC_FORMATS
from moonmaskc.frontends.schema.numbers import as_decimal, positive_step
from moonmaskc.frontends.schema.refs import pointer_child
from moonmaskc.frontends.schema.typed import (
    ArrayKeywords,
    Dependency,
    NumberKeywords,
    ObjectKeywords,
    StringKeywords,
    Subschema,
)

if TYPE_CHECKING:
    from moonmaskc.frontends.schema.context import Context

NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
DEPENDENCY_KEYWORDS = ("dependentRequired", "dependentSchemas", "dependencies")


def string_keywords(ctx: Context, schema: dict[str, Any], where: str) -> StringKeywords:
    """The string keywords of ``schema``: the length counts, then ``format``, then ``pattern``."""
    least = count(schema, "minLength", where) or 0
    most = count(schema, "maxLength", where)
    length_only = "pattern" not in schema and "format" not in schema
    if most is not None and most < least:
        return StringKeywords(least, most, length_only=length_only)
    known_format = _format(ctx, schema, where)
    return StringKeywords(least, most, _pattern(ctx, schema, where), known_format, length_only)


def _format(ctx: Context, schema: dict[str, Any], where: str) -> str | None:
    """The name of the format whose language applies: a format we compile. An unknown name is an
    annotation (warned; an error under ``refuse_unknown``), a format a draft defines and we do
    not compile is refused (dropped under lenient)."""
    if "format" not in schema:
        return None
    from moonmaskc.frontends.schema.formats import FORMATS, format_node

    name = str(schema["format"])
    format_where = pointer_child(where, "format")
    if name not in FORMATS and name not in SPEC_FORMATS:
        ctx.unknown_format(name, format_where)
        return None
    known = ctx.attempt("format", format_where, lambda: format_node(name, where))
    return None if known is None else name


def _pattern(ctx: Context, schema: dict[str, Any], where: str) -> str | None:
    """``pattern``, which must be a string (dropped under lenient); compiled by the emitter."""
    if "pattern" not in schema:
        return None
    value = schema["pattern"]
    return ctx.attempt("pattern", pointer_child(where, "pattern"), lambda: _string_pattern(value))


def _string_pattern(value: Any) -> str:
    if not isinstance(value, str):
        raise UnsupportedError("pattern", "must be a string")
    return value


def number_keywords(ctx: Context, schema: dict[str, Any], fractions: bool, where: str) -> NumberKeywords:
    """The numeric keywords of ``schema`` as exact decimals, for numbers (``fractions``) or
    integers. A malformed bound refuses the bounds as one ("number bounds"): under lenient the
    record has none and no cache key."""
    written = [schema.get(keyword) for keyword in NUMBER_KEYWORDS]
    checked = ctx.attempt("number bounds", where, lambda: _number_bounds(written, fractions, where))
    return NumberKeywords(fractions) if checked is None else checked


def _number_bounds(written: list[Any], fractions: bool, where: str) -> NumberKeywords:
    minimum, maximum, exclusive_minimum, exclusive_maximum, multiple_of = written
    low = as_decimal(minimum, "minimum", where)
    low_exclusive = as_decimal(exclusive_minimum, "exclusiveMinimum", where)
    high = as_decimal(maximum, "maximum", where)
    high_exclusive = as_decimal(exclusive_maximum, "exclusiveMaximum", where)
    return NumberKeywords(
        fractions,
        minimum=low,
        exclusive_minimum=low_exclusive,
        maximum=high,
        exclusive_maximum=high_exclusive,
        multiple_of=positive_step(multiple_of, where),
        key=(fractions, *((value, type(value)) for value in written)),
    )


def array_keywords(schema: dict[str, Any], where: str) -> ArrayKeywords:
    """The array keywords of ``schema``: a draft-07 ``items`` array with ``additionalItems``, or
    ``prefixItems`` with ``items``, whichever the schema writes; then the counts, ``contains``
    with its counts (read only beside ``contains``) and ``uniqueItems``."""
    items = schema.get("items")
    if isinstance(items, list):
        prefix = _positions(items, "items", where)
        rest = Subschema(schema.get("additionalItems", True), pointer_child(where, "additionalItems"))
    else:
        prefix = _positions(
            as_list(schema.get("prefixItems", []), "prefixItems", where), "prefixItems", where
        )
        rest = Subschema(True if items is None else items, pointer_child(where, "items"))
    least = count(schema, "minItems", where) or 0
    most = count(schema, "maxItems", where)
    if most is not None and most < least:
        return ArrayKeywords(prefix, rest, least, most)
    contains, least_contained, most_contained = None, 1, None
    if "contains" in schema:
        contains = Subschema(schema["contains"], pointer_child(where, "contains"))
        least_counted = count(schema, "minContains", where)
        least_contained = 1 if least_counted is None else least_counted
        most_contained = count(schema, "maxContains", where)
    unique = schema.get("uniqueItems") is True and not _at_most_one_item(schema)
    return ArrayKeywords(prefix, rest, least, most, contains, least_contained, most_contained, unique)


def _positions(schemas: list[Any], keyword: str, where: str) -> tuple[Subschema, ...]:
    return tuple(Subschema(s, pointer_child(where, keyword, i)) for i, s in enumerate(schemas))


def _at_most_one_item(schema: dict[str, Any]) -> bool:
    """Whether ``maxItems``, written as an integer, allows one element at most (``uniqueItems``
    then holds by itself; a float such as 1.0 counts as a bound but is not read here)."""
    most = schema.get("maxItems")
    return isinstance(most, int) and not isinstance(most, bool) and most <= 1


def object_keywords(schema: dict[str, Any], where: str) -> ObjectKeywords:
    """The object keywords of ``schema``: ``properties``, ``required``, ``additionalProperties``,
    the counts, ``patternProperties`` and ``propertyNames``."""
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise UnsupportedError("keyword 'properties'", "must be an object", where=where)
    required = tuple(dict.fromkeys(as_list(schema.get("required", []), "required", where)))
    additional = Subschema(
        schema.get("additionalProperties", True), pointer_child(where, "additionalProperties")
    )
    least = count(schema, "minProperties", where) or 0
    most = count(schema, "maxProperties", where)
    patterns = schema.get("patternProperties", {})
    if not isinstance(patterns, dict):
        raise UnsupportedError("keyword 'patternProperties'", "must be an object", where=where)
    names = None
    if "propertyNames" in schema:
        names = Subschema(schema["propertyNames"], pointer_child(where, "propertyNames"))
    return ObjectKeywords(
        properties=_named(properties, "properties", where),
        required=required,
        additional=additional,
        pattern_properties=_named(patterns, "patternProperties", where),
        min_properties=least,
        max_properties=most,
        property_names=names,
    )


def _named(declared: dict[str, Any], keyword: str, where: str) -> tuple[tuple[str, Subschema], ...]:
    return tuple(
        (key, Subschema(value, pointer_child(where, keyword, key))) for key, value in declared.items()
    )


def presence_dependencies(schema: dict[str, Any], where: str) -> tuple[Dependency, ...]:
    """The presence dependencies of ``schema``: ``dependentRequired`` (names), ``dependentSchemas``
    (schemas) and draft-07 ``dependencies`` (either), in that order, each in declared order."""
    found: list[Dependency] = []
    for keyword in DEPENDENCY_KEYWORDS:
        declared = schema.get(keyword, {})
        if not isinstance(declared, dict):
            raise UnsupportedError(f"keyword {keyword!r}", "must be an object", where=where)
        for key, value in declared.items():
            at = pointer_child(where, keyword, key)
            if isinstance(value, list) and keyword != "dependentSchemas":
                if not all(isinstance(name, str) for name in value):
                    raise UnsupportedError(f"keyword {keyword!r}", "names must be strings", where=at)
                found.append(Dependency(key, names=tuple(value)))
            elif isinstance(value, (dict, bool)) and keyword != "dependentRequired":
                found.append(Dependency(key, schema=Subschema(value, at)))
            else:
                raise UnsupportedError(f"keyword {keyword!r}", "not a list of names nor a schema", where=at)
    return tuple(found)
