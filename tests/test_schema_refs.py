"""``$ref`` resolution against the base URI in scope: embedded resources with their own ``$id``
resolve their references in their own document, as jsonschema (the oracle here) does; a reference
to another document is refused unless a local root serves it (``tests/test_schema_remote_refs.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator

from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir
from tests.conftest import data_path

INSTANCES: list[Any] = [
    {"a": 1, "b": 1},
    {"a": "x", "b": 1},
    {"a": 1, "b": "x"},
    {"a": "x", "b": "x"},
    {"a": True},
    {"b": [1]},
    {},
]


def assert_agrees_with_jsonschema(
    schema: dict[str, Any], validator: Any = Draft202012Validator, instances: list[Any] = INSTANCES
) -> None:
    assert_dfa_agrees(compile_ir(compile_schema_ir(schema).node), validator(schema), instances)


def assert_dfa_agrees(dfa: Any, checker: Any, instances: list[Any]) -> None:
    """``dfa`` accepts each instance (compact JSON) iff ``checker`` says it is valid, and the
    instances tell the two readings apart (some valid, some not)."""
    verdicts = []
    for instance in instances:
        expected = checker.is_valid(instance)
        verdicts.append(expected)
        text = json.dumps(instance, separators=(",", ":")).encode()
        assert dfa.accepts(text) == expected, (instance, expected)
    assert any(verdicts) and not all(verdicts)


def test_a_reference_inside_an_embedded_resource_resolves_in_that_resource() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "http://example.com/root.json",
        "$defs": {"x": {"type": "integer"}},
        "properties": {
            "a": {
                "$id": "http://example.com/a.json",
                "$defs": {"x": {"type": "string"}},
                "$ref": "#/$defs/x",
            },
            "b": {"$ref": "#/$defs/x"},
        },
        "additionalProperties": False,
    }
    assert_agrees_with_jsonschema(schema)  # a: string (its own $defs), b: integer (the root's)


def test_relative_ids_join_the_enclosing_base() -> None:
    schema = {
        "$id": "http://example.com/schemas/root.json",
        "$defs": {
            "strings": {"$id": "strings.json", "$defs": {"x": {"type": "string"}}},
            "x": {"type": "integer"},
        },
        "properties": {
            "a": {"$ref": "http://example.com/schemas/strings.json#/$defs/x"},
            "b": {"$ref": "strings.json#/$defs/x"},
        },
    }
    assert_agrees_with_jsonschema(schema)


def test_definitions_with_their_own_id_under_a_root_without_one() -> None:
    """JSONSchemaBench's Github_easy/o2232 shape: ``$id`` on definitions, references from the root."""
    schema = {
        "definitions": {
            "number": {"$id": "number", "type": "integer"},
            "text": {"$id": "text", "type": "string"},
        },
        "properties": {"a": {"$ref": "#/definitions/text"}, "b": {"$ref": "#/definitions/number"}},
    }
    assert_agrees_with_jsonschema(schema)
    assert_agrees_with_jsonschema({**schema, "properties": {"a": {"$ref": "text"}, "b": {"$ref": "number"}}})


def test_fragment_references_under_a_urn_base() -> None:
    schema = {
        "$id": "urn:example:root",
        "$defs": {"x": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/x"}, "b": {"$ref": "urn:example:root#/$defs/x"}},
    }
    assert_agrees_with_jsonschema(schema)


def test_draft4_id_scopes_references() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "id": "http://example.com/root.json",
        "definitions": {"x": {"type": "integer"}},
        "properties": {
            "a": {
                "id": "http://example.com/inner.json",
                "definitions": {"x": {"type": "string"}},
                "allOf": [{"$ref": "#/definitions/x"}],
            },
            "b": {"$ref": "#/definitions/x"},
        },
    }
    assert_agrees_with_jsonschema(schema, Draft4Validator)


def test_references_to_other_documents_are_refused() -> None:
    schema = {"$id": "http://example.com/root.json", "properties": {"a": {"$ref": "other.json#/x"}}}
    with pytest.raises(UnsupportedError, match="remote references are not fetched"):
        compile_schema_ir(schema)


def _id_beside_ref(draft: str | None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "$id": "http://example.com/root.json",
        "definitions": {"x": {"type": "integer"}},
        "properties": {
            "a": {
                "$id": "http://example.com/a.json",
                "definitions": {"x": {"type": "string"}},
                "$ref": "#/definitions/x",
            },
            "b": {"$ref": "#/definitions/x"},
        },
    }
    return schema if draft is None else {"$schema": draft, **schema}


def test_an_id_beside_a_ref_follows_the_declared_draft() -> None:
    """Draft-07 ignores an ``$id`` next to ``$ref`` (a resolves in the root: integer); 2020-12
    resolves the ``$ref`` against it (a is a string)."""
    assert_agrees_with_jsonschema(_id_beside_ref("http://json-schema.org/draft-07/schema#"), Draft7Validator)
    assert_agrees_with_jsonschema(_id_beside_ref("https://json-schema.org/draft/2020-12/schema"))


def test_an_id_beside_a_ref_without_a_declared_draft_is_refused() -> None:
    with pytest.raises(UnsupportedError, match=r"\$id beside \$ref.*declare the draft") as caught:
        compile_schema_ir(_id_beside_ref(None))
    assert "#/properties/a" in str(caught.value)


def test_draft4_reads_id_and_not_dollar_id() -> None:
    """JSONSchemaStore's cryproj.json shape: a draft-04 document whose subschemas carry ``$id``,
    which draft-04 does not know; its references resolve in the root document."""
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "id": "https://example.com/root",
        "definitions": {"x": {"type": "string"}},
        "properties": {
            "a": {"$id": "/properties/a", "properties": {"inner": {"$ref": "#/definitions/x"}}},
            "b": {"$ref": "#/definitions/x"},
        },
    }
    instances = [{"a": {"inner": "x"}, "b": "y"}, {"a": {"inner": 1}}, {"b": 2}, {"a": {}}]
    assert_agrees_with_jsonschema(schema, Draft4Validator, instances)


def _target_walks(schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    from moonmaskc.frontends.schema import references

    walks: dict[str, int] = {}
    walk_target = references._walk_target

    def counting(walk: Any, pointer: str, target: Any) -> Any:
        walks[pointer] = walks.get(pointer, 0) + 1
        return walk_target(walk, pointer, target)

    monkeypatch.setattr(references, "_walk_target", counting)
    compile_schema_ir(schema)
    return walks


MONEY_AND_TREE: dict[str, Any] = {
    "$defs": {
        "money": {"type": "integer", "minimum": 0, "maximum": 999},
        "item": {"type": "object", "properties": {"price": {"$ref": "#/$defs/money"}}, "required": ["price"]},
        "node": {
            "type": "object",
            "properties": {
                "cost": {"$ref": "#/$defs/money"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2},
            },
            "additionalProperties": False,
        },
    },
    "type": "object",
    "properties": {
        "total": {"$ref": "#/$defs/money"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 2},
        "tree": {"$ref": "#/$defs/node"},
    },
    "additionalProperties": False,
}


def test_a_target_is_walked_once_per_context_it_can_tell_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """``money`` holds no reference, so whatever is on the ref stack (``item``, ``node`` at any
    depth) it is walked once; ``node`` reaches itself, so each depth of the recursion is a context
    of its own, up to the cut."""
    walks = _target_walks(MONEY_AND_TREE, monkeypatch)
    assert walks["#/$defs/money"] == 1 and walks["#/$defs/item"] == 1
    assert walks["#/$defs/node"] > 1


def test_the_narrower_contexts_build_the_language_jsonschema_validates() -> None:
    instances: list[Any] = [
        {"total": 5, "items": [{"price": 1}], "tree": {"cost": 2, "children": [{"cost": 3}]}},
        {"total": 5, "tree": {"children": [{"children": [{"cost": 1}]}]}},
        {"total": 1000},
        {"items": [{"price": -1}]},
        {"tree": {"children": [{"cost": 1000}]}},
        {"tree": {"children": [{}, {}, {}]}},
        {"tree": {"other": 1}},
        {},
    ]
    assert_agrees_with_jsonschema(MONEY_AND_TREE, instances=instances)


def test_a_reference_to_an_unread_document_keys_by_the_whole_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a reference would read another document, ``reachable_targets`` gives up (None) without
    reading it, and the whole stack keys the walk, as before."""
    from moonmaskc.frontends.schema import references
    from moonmaskc.frontends.schema.context import Context

    schema = {"$defs": {"a": {"properties": {"x": {"$ref": "other.json#/b"}}}}, "$ref": "#/$defs/a"}
    found: list[Any] = []
    reachable = references.reachable_targets

    def recording(ctx: Context, pointer: str, target: Any) -> Any:
        found.append(reachable(ctx, pointer, target))
        return found[-1]

    monkeypatch.setattr(references, "reachable_targets", recording)
    with pytest.raises(UnsupportedError):
        compile_schema_ir(schema)
    assert found == [None]


def _reach_by_one_walk(ctx: Any, pointer: str, schema: Any) -> frozenset[str] | None:
    """``reachable_targets`` by its definition: one depth-first read of everything below the
    target and below every target a reference there leads to."""
    from moonmaskc.frontends.schema.refs import DATA_KEYWORDS, pointer_child

    reach = {pointer}
    pending: list[tuple[str, Any]] = [(pointer, schema)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, list):
            pending.extend((pointer_child(where, index), item) for index, item in enumerate(value))
            continue
        if not isinstance(value, dict):
            continue
        if "$ref" in value:
            ref = value["$ref"]
            target = ctx.resolver.resolve_known(ref, where) if isinstance(ref, str) else None
            if target is None:
                return None
            if target[0] not in reach:
                reach.add(target[0])
                pending.append(target)
        pending.extend(
            (pointer_child(where, name), item) for name, item in value.items() if name not in DATA_KEYWORDS
        )
    return frozenset(reach)


@pytest.mark.parametrize(
    "schema",
    ["Github_ultra/o6363.json", "Github_ultra/o2312.json", "Github_ultra/o18637.json"],
)
def test_reachable_targets_match_one_walk_of_everything_below(
    monkeypatch: pytest.MonkeyPatch, schema: str
) -> None:
    """On real schemas full of references, every set the walk asks for (built from each target's
    direct references, kept per compile) is what one read of everything below gives."""
    from moonmaskc.frontends.schema import references
    from moonmaskc.frontends.schema.context import Context

    asked: list[tuple[frozenset[str] | None, frozenset[str] | None]] = []
    reachable = references.reachable_targets

    def recording(ctx: Context, pointer: str, target: Any) -> Any:
        asked.append((reachable(ctx, pointer, target), _reach_by_one_walk(ctx, pointer, target)))
        return asked[-1][0]

    monkeypatch.setattr(references, "reachable_targets", recording)
    compile_schema_ir(json.loads(data_path("schemas", "jsonschemabench", schema).read_text()))
    assert len(asked) >= 10
    assert all(got == expected for got, expected in asked)
    assert any(got is not None and len(got) > 1 for got, _ in asked)  # (references below)
