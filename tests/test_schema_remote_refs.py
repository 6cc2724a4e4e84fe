"""References to other documents, read offline: ``ref_roots`` maps URI prefixes to local folders
(``--ref-root PREFIX=DIR``), and the official meta-schemas come from ``jsonschema_specifications``.
The oracle is jsonschema with a ``referencing.Registry`` holding the same documents; the refusals
(no folder for the URI, a path that leaves the folder, a missing file, bad JSON) name the cause."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft7Validator, Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

import moonmaskc
from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.cli import main
from moonmaskc.errors import LimitError, MoonmaskError, SourceError, UnsupportedError
from moonmaskc.frontends.schema import compile_schema_ir, refs
from tests.test_schema_refs import assert_dfa_agrees

PREFIX = "http://example.com/schemas/"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def write(folder: Path, documents: dict[str, Any]) -> dict[str, Any]:
    """Write each document at its path under ``folder``; hands on URI -> document."""
    for name, document in documents.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document), encoding="utf-8")
    return {PREFIX + name: document for name, document in documents.items()}


def oracle(schema: Any, documents: dict[str, Any]) -> Any:
    registry: Registry[Any] = Registry().with_resources(
        (uri, Resource.from_contents(document, default_specification=DRAFT202012))
        for uri, document in documents.items()
    )
    return Draft202012Validator(schema, registry=registry)


def assert_agrees(schema: Any, folder: Path, documents: dict[str, Any], instances: list[Any]) -> None:
    """The compiled language accepts each instance (compact JSON) iff jsonschema says it is valid;
    the instances tell the two readings apart."""
    dfa = compile_ir(compile_schema_ir(schema, ref_roots={PREFIX: folder}).node)
    assert_dfa_agrees(dfa, oracle(schema, documents), instances)


def test_relative_references_inside_a_remote_document_and_to_another(tmp_path: Path) -> None:
    documents = write(
        tmp_path,
        {
            "person.json": {
                "$schema": DRAFT,
                "type": "object",
                "properties": {"name": {"$ref": "#/$defs/name"}, "age": {"$ref": "common/age.json"}},
                "required": ["name"],
                "additionalProperties": False,
                "$defs": {"name": {"type": "string", "maxLength": 3}},
            },
            "common/age.json": {"type": "integer", "minimum": 0, "maximum": 150},
        },
    )
    schema = {
        "$schema": DRAFT,
        "$id": "http://example.com/root.json",
        "$defs": {"name": {"type": "integer"}},  # not the remote document's #/$defs/name
        "type": "array",
        "items": {"$ref": "schemas/person.json"},
    }
    instances: list[Any] = [
        [],
        [{"name": "ann"}],
        [{"name": "ann", "age": 30}],
        [{"name": "ann", "age": -1}],
        [{"name": "anne"}],
        [{"name": 1}],
        [{"age": 3}],
        [{"name": "bo", "age": 151}],
        [{"name": "bo", "x": 1}],
        [{"name": "a"}, {"name": "b", "age": 2}],
    ]
    assert_agrees(schema, tmp_path, documents, instances)


def test_an_id_inside_a_remote_document_sets_its_base(tmp_path: Path) -> None:
    documents = write(
        tmp_path,
        {
            # Its own $id elsewhere: its references resolve against that, in the document itself.
            "alias.json": {
                "$schema": DRAFT,
                "$id": "http://example.com/elsewhere/real.json",
                "$defs": {"x": {"type": "string", "minLength": 2}},
                "$ref": "#/$defs/x",
            },
            # An embedded resource: "inner.json" is that resource, not a file.
            "outer.json": {
                "$schema": DRAFT,
                "$defs": {"inner": {"$id": "inner.json", "$anchor": "here", "type": "boolean"}},
                "$ref": "inner.json#here",
            },
        },
    )
    schema = {
        "$schema": DRAFT,
        "type": "object",
        "properties": {"a": {"$ref": PREFIX + "alias.json"}, "b": {"$ref": PREFIX + "outer.json"}},
        "additionalProperties": False,
    }
    instances: list[Any] = [
        {},
        {"a": "xy"},
        {"a": "x"},
        {"a": 1},
        {"b": True},
        {"b": "x"},
        {"a": "xyz", "b": False},
    ]
    assert_agrees(schema, tmp_path, documents, instances)


def test_fragments_point_into_a_remote_document(tmp_path: Path) -> None:
    documents = write(
        tmp_path,
        {
            "defs.json": {
                "$schema": DRAFT,
                "$defs": {
                    "small": {"type": "integer", "maximum": 9},
                    "named": {"$anchor": "word", "type": "string", "pattern": "^[a-z]+$"},
                    "list": {"type": "array", "items": {"$ref": "#/$defs/small"}, "maxItems": 2},
                },
            }
        },
    )
    schema = {
        "$schema": DRAFT,
        "anyOf": [
            {"$ref": PREFIX + "defs.json#/$defs/list"},
            {"$ref": PREFIX + "defs.json#word"},
        ],
    }
    instances: list[Any] = [[], [1, 9], [1, 10], [1, 2, 3], "abc", "Abc", 3, None]
    assert_agrees(schema, tmp_path, documents, instances)


def test_recursive_remote_documents(tmp_path: Path) -> None:
    documents = write(
        tmp_path,
        {
            "tree.json": {
                "$schema": DRAFT,
                "type": "object",
                "properties": {"value": {"type": "integer"}, "children": {"$ref": "forest.json"}},
                "required": ["value"],
                "additionalProperties": False,
            },
            "forest.json": {"$schema": DRAFT, "type": "array", "items": {"$ref": "tree.json"}},
        },
    )
    schema = {"$schema": DRAFT, "$ref": PREFIX + "tree.json"}
    instances: list[Any] = [
        {"value": 1},
        {"value": 1, "children": []},
        {"value": 1, "children": [{"value": 2}]},
        {"value": 1, "children": [{"value": "2"}]},
        {"value": 1, "children": [{"children": []}]},
        {"value": 1, "children": {}},
        {"children": []},
        [],
    ]
    assert_agrees(schema, tmp_path, documents, instances)
    result = compile_schema_ir(schema, ref_roots={PREFIX: tmp_path})
    assert any(pointer.startswith(PREFIX) for pointer in result.notes["refs_unrolled"])


def test_enum_candidates_are_checked_in_the_resource_they_stand_in(tmp_path: Path) -> None:
    """jsonschema checks the candidates of an enum beside a $ref with the $ref resolved in the
    remote document (or embedded resource), not in the root that has a $defs of the same name."""
    documents = write(
        tmp_path,
        {
            "e.json": {
                "$schema": DRAFT,
                "$defs": {"x": {"type": "integer"}},
                "enum": [1, "a"],
                "$ref": "#/$defs/x",
            }
        },
    )
    schema = {
        "$schema": DRAFT,
        "$defs": {"x": {"type": "string"}},
        "type": "object",
        "properties": {
            "remote": {"$ref": PREFIX + "e.json"},
            "embedded": {
                "$id": "http://example.com/embedded.json",
                "$defs": {"x": {"type": "integer"}},
                "enum": [2, "b"],
                "$ref": "#/$defs/x",
            },
        },
        "additionalProperties": False,
    }
    instances: list[Any] = [{"remote": 1}, {"remote": "a"}, {"embedded": 2}, {"embedded": "b"}]
    assert_agrees(schema, tmp_path, documents, instances)


def test_the_longest_prefix_wins(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.json").write_text('{"type": "string"}', encoding="utf-8")
    (tmp_path / "b" / "x.json").write_text('{"type": "integer"}', encoding="utf-8")
    roots = {"http://example.com/": tmp_path / "a", "http://example.com/deep/": tmp_path / "b"}
    dfa = compile_ir(compile_schema_ir({"$ref": "http://example.com/deep/x.json"}, ref_roots=roots).node)
    assert dfa.accepts(b"1") and not dfa.accepts(b'"s"')


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------


def test_a_reference_no_root_serves_is_refused_with_the_way_to_provide_it(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match="remote references are not fetched") as caught:
        compile_schema_ir({"$ref": "http://other.org/a.json"}, ref_roots={PREFIX: tmp_path})
    assert "--ref-root" in str(caught.value) and "http://other.org/a.json" in str(caught.value)
    with pytest.raises(UnsupportedError, match="remote references are not fetched"):
        compile_schema_ir({"$ref": PREFIX + "a.json"})  # no roots at all


@pytest.mark.parametrize(
    "ref",
    [
        PREFIX + "sub/../../secret.json",
        PREFIX + "%2e%2e/secret.json",
        PREFIX + "/etc/passwd",
    ],
)
def test_a_path_that_leaves_the_folder_is_refused(tmp_path: Path, ref: str) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    (tmp_path / "secret.json").write_text('{"type": "string"}', encoding="utf-8")
    with pytest.raises(SourceError, match="leaves the folder") as caught:
        compile_schema_ir({"$ref": ref}, ref_roots={PREFIX: folder})
    assert ref in str(caught.value)


def test_a_missing_file_and_bad_json_are_source_errors_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot be read") as caught:
        compile_schema_ir({"$ref": PREFIX + "absent.json#/x"}, ref_roots={PREFIX: tmp_path})
    assert str(tmp_path / "absent.json") in str(caught.value)
    (tmp_path / "bad.json").write_text('{"type":\n  "string",\n}', encoding="utf-8")
    with pytest.raises(SourceError, match="is not valid JSON") as caught:
        compile_schema_ir({"properties": {"a": {"$ref": PREFIX + "bad.json"}}}, ref_roots={PREFIX: tmp_path})
    error = caught.value
    assert str(tmp_path / "bad.json") in str(error) and "#/properties/a" in str(error)
    assert error.line == 3 and "^" in str(error)
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(SourceError, match="not a JSON Schema"):
        compile_schema_ir({"$ref": PREFIX + "list.json"}, ref_roots={PREFIX: tmp_path})


def test_the_documents_read_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path, {f"d{i}.json": {"$ref": f"d{i + 1}.json"} for i in range(4)} | {"d4.json": {"type": "null"}}
    )
    compile_ir(compile_schema_ir({"$ref": PREFIX + "d0.json"}, ref_roots={PREFIX: tmp_path}).node)
    monkeypatch.setattr(refs, "MAX_DOCUMENTS", 3)
    with pytest.raises(LimitError, match="more than 3 other documents"):
        compile_schema_ir({"$ref": PREFIX + "d0.json"}, ref_roots={PREFIX: tmp_path})


def test_a_root_that_is_not_a_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MoonmaskError, match="not a folder"):
        compile_schema_ir({"type": "null"}, ref_roots={PREFIX: tmp_path / "absent"})
    with pytest.raises(TypeError, match="ref_roots"):
        moonmaskc.compile_schema({"type": "null"}, ref_roots=[PREFIX], tokenizer=None)


def test_a_document_whose_declared_draft_reads_ref_siblings_otherwise_is_refused(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "new.json": {
                "$schema": DRAFT,
                "$defs": {"s": {"type": "string"}},
                "$ref": "#/$defs/s",
                "maxLength": 2,
            }
        },
    )
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": PREFIX + "new.json"}
    with pytest.raises(UnsupportedError, match="declare the same draft"):
        compile_schema_ir(draft7, ref_roots={PREFIX: tmp_path})
    same = {"$schema": DRAFT, "$ref": PREFIX + "new.json"}  # read by its own draft: exact
    dfa = compile_ir(compile_schema_ir(same, ref_roots={PREFIX: tmp_path}).node)
    assert dfa.accepts(b'"ab"') and not dfa.accepts(b'"abc"')


# ---------------------------------------------------------------------------------------------
# Meta-schemas, the public API and the CLI
# ---------------------------------------------------------------------------------------------


def test_a_meta_schema_reference_is_resolved_offline() -> None:
    pytest.importorskip("jsonschema_specifications")
    schema = {"$ref": "http://json-schema.org/draft-07/schema#/definitions/nonNegativeIntegerDefault0"}
    dfa = compile_ir(compile_schema_ir(schema).node)
    checker = Draft7Validator(schema)
    for instance in [0, 7, 120, -1, 1.5, "3", None]:
        text = json.dumps(instance).encode()
        assert dfa.accepts(text) == checker.is_valid(instance), instance
    types = {"$ref": "http://json-schema.org/draft-04/schema#/definitions/simpleTypes"}
    dfa = compile_ir(compile_schema_ir(types).node)
    assert dfa.accepts(b'"integer"') and not dfa.accepts(b'"float"')


def test_without_jsonschema_specifications_meta_schemas_stay_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema_specifications", None)  # import fails
    with pytest.raises(UnsupportedError, match="remote references are not fetched"):
        compile_schema_ir({"$ref": "http://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger"})


def test_compile_schema_records_the_roots_in_the_metadata(tmp_path: Path) -> None:
    write(tmp_path, {"n.json": {"type": "null"}})
    artifact = moonmaskc.compile_schema(
        {"$ref": PREFIX + "n.json"}, ref_roots={PREFIX: tmp_path}, tokenizer=None
    )
    assert artifact.match("null").accepted and not artifact.match("1").accepted
    assert artifact.metadata["options"]["ref_roots"] == {PREFIX: str(tmp_path)}
    plain = moonmaskc.compile_schema({"type": "null"}, tokenizer=None)
    assert "ref_roots" not in plain.metadata["options"]


def test_cli_ref_root_end_to_end(tmp_path: Path) -> None:
    folder = tmp_path / "defs"
    write(folder, {"point.json": {"type": "object", "properties": {"x": {"$ref": "int.json"}}}})
    write(folder, {"int.json": {"type": "integer", "minimum": 0}})
    source = tmp_path / "main.json"
    source.write_text(json.dumps({"$ref": PREFIX + "point.json"}), encoding="utf-8")
    out = tmp_path / "main.npz"
    runner = CliRunner()
    base = ["compile", str(source), "-o", str(out), "--tokenizer", "none"]
    result = runner.invoke(main, [*base, "--ref-root", f"{PREFIX}={folder}"])
    assert result.exit_code == 0, result.output
    artifact = Artifact.load(out)
    assert artifact.match('{"x":3}').accepted and not artifact.match('{"x":-3}').accepted
    assert artifact.metadata["options"]["ref_roots"] == {PREFIX: str(folder)}

    result = runner.invoke(main, base)  # no root: refused, saying how to provide the document
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "remote references are not fetched" in result.output and "--ref-root" in result.output

    (folder / "int.json").write_text("{oops", encoding="utf-8")
    result = runner.invoke(main, [*base, "--ref-root", f"{PREFIX}={folder}"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "int.json" in result.output and "not valid JSON" in result.output

    for bad in ["no-equals-sign", f"{PREFIX}={tmp_path / 'absent'}", f"={folder}"]:
        result = runner.invoke(main, [*base, "--ref-root", bad])
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert "--ref-root" in result.output
