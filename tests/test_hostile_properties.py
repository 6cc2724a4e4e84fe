"""Property tests through the CLI runner (issue 18): random JSON documents as schemas, random bytes
as regexes, random GBNF texts and random ``match`` texts never end in a traceback: the command
exits 0 (or 1 for a ``match`` that rejects) or with a clean error (status 2 and a message)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moonmaskc.cli import main

PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# Text with the characters that matter to the front ends: JSON and regex syntax, GBNF syntax,
# non-ASCII, lone surrogates and undecodable bytes (as Python keeps them: U+DC80..U+DCFF).
hostile_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("abc019 \\n\"'{}[]()|*+?.^$-,:=<>#!/~")),
        st.sampled_from(["é", "\u2028", "😀", "\ud800", "\udfff", "\udcff", "\x00"]),
        st.characters(),
    ),
    max_size=40,
)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)
keywords = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "prefixItems",
        "required",
        "enum",
        "const",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "$ref",
        "$defs",
        "additionalProperties",
        "minItems",
        "maxItems",
        "format",
        "description",
        "patternProperties",
        "if",
        "then",
        "else",
        "multipleOf",
        "propertyNames",
        "contains",
        "uniqueItems",
    ]
)
json_documents = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(keywords, hostile_text), children, max_size=4),
    ),
    max_leaves=12,
)


def check_clean(result: Result, allowed: tuple[int, ...] = (0, 2)) -> None:
    """Never a traceback: the exit status is allowed, any exception is SystemExit, and an error
    exit comes with a message."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in allowed, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert "error:" in result.output


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


@PROPERTY_SETTINGS
@given(document=json_documents)
def test_random_json_documents_as_schemas(document: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schema.json"
        path.write_text(json.dumps(document))
        check_clean(invoke("compile", str(path), "-o", str(Path(folder) / "o.npz"), "--tokenizer", "none"))


@PROPERTY_SETTINGS
@given(data=st.binary(max_size=40))
def test_random_bytes_as_regexes(data: bytes) -> None:
    pattern = data.decode("utf-8", "surrogateescape")  # what click hands over for argv bytes
    with tempfile.TemporaryDirectory() as folder:
        check_clean(
            invoke("compile", "--regex", pattern, "-o", str(Path(folder) / "o.npz"), "--tokenizer", "none")
        )


@PROPERTY_SETTINGS
@given(pattern=hostile_text)
def test_random_texts_as_regexes(pattern: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check_clean(
            invoke("compile", "--regex", pattern, "-o", str(Path(folder) / "o.npz"), "--tokenizer", "none")
        )


gbnf_pieces = st.sampled_from(
    [
        "root",
        " ::= ",
        "\n",
        '"a"',
        '"\\x41"',
        "[a-z]",
        "[^\\n]",
        "(",
        ")",
        "|",
        "*",
        "+",
        "?",
        "{1,3}",
        "{2,}",
        "x",
        " x ::= ",
        " root ",
        ".",
        "#c\n",
        "\\",
        '"',
        "{",
        "}",
        "[",
        "]",
        "😀",
        "\ud800",
    ]
)


@PROPERTY_SETTINGS
@given(pieces=st.lists(st.one_of(gbnf_pieces, hostile_text), max_size=14))
def test_random_gbnf_texts(pieces: list[str]) -> None:
    text = "".join(pieces)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "g.gbnf"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))  # bytes that are not UTF-8 too
        check_clean(invoke("compile", str(path), "-o", str(Path(folder) / "o.npz"), "--tokenizer", "none"))
        check_clean(
            invoke(
                "compile",
                str(path),
                "-o",
                str(Path(folder) / "o.npz"),
                "--tokenizer",
                "none",
                "--max-depth",
                "2",
            )
        )


@pytest.fixture(scope="module")
def artifact_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("match") / "o.npz"
    result = invoke("compile", "--regex", "[a-zé]+( [0-9]{1,3})?", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out


@PROPERTY_SETTINGS
@given(texts=st.lists(hostile_text, min_size=1, max_size=4))
def test_random_match_texts(artifact_path: Path, texts: list[str]) -> None:
    check_clean(invoke("match", str(artifact_path), "--", *texts), allowed=(0, 1, 2))
    check_clean(invoke("match", str(artifact_path), "--json", "--", *texts), allowed=(0, 1, 2))


# Schema-shaped documents: the keywords the walk reads structurally, each given a schema, a list of
# them, a map of them or a stray scalar (the shapes that crashed it: ``{"type": 1}``, ``{"$ref": 1}``,
# ``{"required": 0}``, ``{"$id": true}``, ``{"dependencies": {"a": "("}}``, ``properties: ""``).
_STRAYS = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        2.5,
        10**20,
        "",
        "a",
        "object",
        "#",
        "#/$defs/a",
        "(",
        [],
        {},
        [1],
        ["a"],
        {"a": 1},
    ]
)
_SCHEMA_KEYS = [
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "enum",
    "const", "minimum", "multipleOf", "maxLength", "pattern", "format", "allOf", "anyOf", "oneOf", "not",
    "if", "then", "else", "$ref", "$defs", "definitions", "patternProperties", "propertyNames",
    "minProperties", "dependentRequired", "dependentSchemas", "dependencies", "contains", "maxContains",
    "unevaluatedProperties", "unevaluatedItems", "uniqueItems", "$id", "$anchor", "nullable",
]  # fmt: skip


def _schema_shaped(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    value = st.one_of(
        _STRAYS,
        children,
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "^x"]), children, max_size=3),
        st.sampled_from(["object", "array", "string", "integer", ["object", "array"]]),
        st.sampled_from(["#", "#/$defs/a", "#/definitions/a", "#/properties/a", "b.json"]),
    )
    return st.dictionaries(st.sampled_from(_SCHEMA_KEYS), value, max_size=4)


schema_shaped = st.recursive(st.one_of(st.booleans(), st.just({})), _schema_shaped, max_leaves=10)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schema_shaped, lenient=st.booleans())
def test_schema_shaped_garbage_gets_a_moonmask_error_or_compiles(schema: object, lenient: bool) -> None:
    """Through the public call, strict and lenient: compiled, or a ``MoonmaskError``; nothing else."""
    import moonmaskc
    from moonmaskc.errors import MoonmaskError

    try:
        moonmaskc.compile_schema(schema, tokenizer=None, lenient=lenient, max_states=3000, max_work=200_000)
    except MoonmaskError as error:
        assert str(error)
