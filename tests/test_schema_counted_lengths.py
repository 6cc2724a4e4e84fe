"""Length counters in the schema front end: plain strings with long length bounds compile as
counted regions (``automata.counted``) in compiles without a token table. They accept exactly what
``jsonschema`` accepts, and what the written-out bounds accept where those fit. They survive a save
and a load as format 4, the loader refuses corrupted region arrays, the CLI shows them, and the
compile falls back to written-out bounds (saying why) where one counter cannot run them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.cli import main
from moonmaskc.errors import ArtifactError, LimitError, MoonmaskError
from moonmaskc.format import write_artifact
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.frontends.schema.canonical import serialize
from moonmaskc.pipeline import compile_source, link, make_options

SCHEMAS: dict[str, dict[str, Any]] = {
    "long bound": {"type": "string", "maxLength": 400},
    "both bounds": {"type": "string", "minLength": 20, "maxLength": 301},
    "a long minLength": {"type": "string", "minLength": 250, "maxLength": 400},
    "object of strings": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 32767},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 5000}},
            "code": {"type": "string", "minLength": 250, "maxLength": 400},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
}
BOUNDARY_LENGTHS = [0, 1, 2, 3, 19, 20, 21, 249, 250, 251, 300, 301, 302, 399, 400, 401]
CHARACTERS = st.sampled_from(["a", "é", "😀", "\n", '"', "\\", "\x01", "/", "\u2028"])


def long_strings() -> st.SearchStrategy[str]:
    return st.builds(
        lambda length, pieces: "".join(pieces[i % len(pieces)] for i in range(length)),
        st.sampled_from(BOUNDARY_LENGTHS),
        st.lists(CHARACTERS, min_size=1, max_size=5),
    )


VALUES = st.one_of(
    long_strings(),
    st.fixed_dictionaries(
        {"name": long_strings()},
        optional={"tags": st.lists(long_strings(), max_size=3), "code": long_strings(), "other": st.just(1)},
    ),
    st.integers(),
)
_counted: dict[str, Artifact] = {}


def _strings(schema: Any) -> list[dict[str, Any]]:
    """The string schemas inside ``schema``."""
    if not isinstance(schema, dict):
        return []
    found = [schema] if schema.get("type") == "string" else []
    for child in [*schema.get("properties", {}).values(), schema.get("items")]:
        found += _strings(child)
    return found


def counted_artifact(name: str) -> Artifact:
    if name not in _counted:
        _counted[name] = compile_source("schema", SCHEMAS[name], make_options(tokenizer=None))
    return _counted[name]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_long_bounds_compile_as_counted_regions(name: str) -> None:
    artifact = counted_artifact(name)
    assert artifact.dfa.regions is not None
    # One copy of the character automaton per region; only minLength is written out (14 a character).
    written_out = sum(max(0, s.get("minLength", 0)) for s in _strings(SCHEMAS[name]))
    assert artifact.dfa.num_states < 1000 + 14 * written_out
    assert "string lengths counted beside the automaton" in artifact.metadata["notes"]["length_counters"]
    assert "(?#string character){" in artifact.metadata["grammar"]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_counted_regions_accept_exactly_the_valid_values(name: str, value: Any) -> None:
    schema = SCHEMAS[name]
    valid = Draft202012Validator(schema).is_valid(value)
    text = serialize(value).encode("utf-8")
    if isinstance(value, dict):  # declared order
        order = list(schema.get("properties", {}))
        text = serialize(
            {
                key: value[key]
                for key in sorted(value, key=lambda k: (k not in order, order.index(k) if k in order else 0))
            }
        ).encode()
    assert counted_artifact(name).dfa.accepts(text) == valid


@pytest.mark.parametrize("name", ["long bound", "both bounds", "a long minLength"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=long_strings())
def test_counted_regions_agree_with_the_written_out_bounds(name: str, value: str) -> None:
    explicit = compile_ir(compile_schema_ir(SCHEMAS[name], length_counters=False).node)
    counted = counted_artifact(name).dfa
    text = serialize(value).encode("utf-8")
    assert counted.accepts(text) == explicit.accepts(text)
    for cut in (1, len(text) // 2, len(text) - 1):
        assert (counted.walk(text[:cut])[1] is None) == (explicit.walk(text[:cut])[1] is None)
    assert counted.cost(counted.start) == explicit.distance[explicit.start]


def test_counted_artifact_round_trip_is_format_4(tmp_path: Path) -> None:
    artifact = counted_artifact("object of strings")
    path = artifact.save(tmp_path / "counted.npz")
    with np.load(path) as stored:
        assert int(stored["format_version"]) == 4
        assert int(stored["dfa_region_high"].max()) == 32767
    loaded = Artifact.load(path)
    assert loaded.dfa.regions is not None
    for text in [
        '{"name":"ab","tags":["xy"]}',
        '{"name":"ab","tags":["x"]}',
        '{"name":"' + "a" * 32768 + '"}',
    ]:
        assert loaded.match(text).accepted == artifact.match(text).accepted
    plain = compile_source("schema", {"type": "string", "maxLength": 3}, make_options(tokenizer=None))
    with np.load(plain.save(tmp_path / "plain.npz")) as stored:
        assert int(stored["format_version"]) == 3 and "dfa_region" not in stored


def _corrupted(arrays: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    changed = dict(arrays)
    region, role = arrays["dfa_region"].copy(), arrays["dfa_role"].copy()
    boundary = int(arrays["dfa_region_boundary"][0])
    if name == "low above high":
        changed["dfa_region_low"] = arrays["dfa_region_high"] + 1
    elif name == "boundary elsewhere":
        changed["dfa_region_boundary"] = arrays["dfa_region_boundary"] + 1
    elif name == "accepting state in a region":
        accepting = int(np.nonzero(arrays["dfa_accepting"])[0][0])
        region[accepting], role[accepting] = 0, 3
        changed["dfa_region"], changed["dfa_role"] = region, role
    elif name == "role without region":
        role[1] = 2
        changed["dfa_role"] = role
    elif name == "distance without the deficit":
        distance = arrays["dfa_distance"].copy()
        distance[1] -= 2
        changed["dfa_distance"] = distance
    elif name == "a region array missing":
        del changed["dfa_role"]
    elif name == "version 3 with regions":
        changed["format_version"] = np.array(3, dtype=np.int32)
    elif name == "lower bound changed":  # the stored distances then disagree
        changed["dfa_region_low"] = arrays["dfa_region_low"] + 1
    elif name == "two boundaries":
        middle = int(np.nonzero((region == 0) & (role > 0))[0][0])
        role[middle] = 0
        changed["dfa_role"] = role
    assert boundary >= 1
    return changed


@pytest.mark.parametrize(
    "name",
    [
        "low above high",
        "boundary elsewhere",
        "accepting state in a region",
        "role without region",
        "distance without the deficit",
        "a region array missing",
        "version 3 with regions",
        "lower bound changed",
        "two boundaries",
    ],
)
def test_loader_refuses_corrupted_region_arrays(tmp_path: Path, name: str) -> None:
    path = counted_artifact("object of strings").save(tmp_path / "good.npz")
    with np.load(path) as stored:
        arrays = {key: stored[key] for key in stored.files}
    bad = write_artifact(tmp_path / "bad.npz", _corrupted(arrays, name))
    with pytest.raises(ArtifactError):
        Artifact.load(bad)


def test_counter_falls_back_to_written_out_bounds_and_says_why() -> None:
    shared_quote = {"anyOf": [{"type": "string", "maxLength": 400}, {"enum": ["a"]}]}
    artifact = compile_source("schema", shared_quote, make_options(tokenizer=None))
    assert artifact.dfa.regions is None
    assert artifact.metadata["notes"]["length_counters"].startswith("not used: a counted string shares")
    assert (
        artifact.match('"' + "b" * 400 + '"').accepted and not artifact.match('"' + "b" * 401 + '"').accepted
    )
    too_long = {"anyOf": [{"type": "string", "maxLength": 40000}, {"enum": ["a"]}]}
    with pytest.raises(LimitError, match="a length counter could not be used: a counted string shares"):
        compile_source("schema", too_long, make_options(tokenizer=None))
    in_a_product = {"type": "string", "maxLength": 400, "not": {"type": "string", "maxLength": 300}}
    negated = compile_source("schema", in_a_product, make_options(tokenizer=None))
    assert negated.dfa.regions is None and "product" in negated.metadata["notes"]["length_counters"]
    assert negated.match('"' + "b" * 301 + '"').accepted and not negated.match('"' + "b" * 300 + '"').accepted


def test_a_counted_artifact_links_to_a_vocabulary() -> None:
    from moonmaskc.runtime import Guide
    from moonmaskc.runtime_counted import CountedGuide

    artifact = compile_source("schema", SCHEMAS["long bound"], make_options(tokenizer=None))
    link(artifact, "bytes")
    guide = Guide.from_artifact(artifact)
    assert isinstance(guide, CountedGuide) and artifact.token_table is not None
    state = guide.start()
    for byte in b'"' + b"x" * 400:
        state = guide.advance(state, byte)
        assert state is not None
    assert guide.allowed(state).tolist() == [ord('"')]  # the bound reached: only the closing quote
    compiled = compile_source("schema", SCHEMAS["long bound"], make_options(tokenizer="bytes"))
    assert compiled.dfa.regions is not None and compiled.dfa.num_states == artifact.dfa.num_states


def test_cli_compiles_matches_and_inspects_counted_strings(tmp_path: Path) -> None:
    schema = tmp_path / "long.json"
    schema.write_text(json.dumps(SCHEMAS["object of strings"]))
    out = tmp_path / "long.npz"
    runner = CliRunner()
    compiled = runner.invoke(main, ["compile", str(schema), "--tokenizer", "none", "-o", str(out)])
    assert compiled.exit_code == 0, compiled.output
    assert runner.invoke(main, ["match", str(out), '{"name":"' + "x" * 32767 + '"}']).exit_code == 0
    rejected = runner.invoke(main, ["match", str(out), '{"name":"' + "x" * 32768 + '"}'])
    assert rejected.exit_code == 1 and "rejected at byte 32776" in rejected.output
    shown = runner.invoke(main, ["inspect", str(out), "--all", "--json"])
    states = json.loads(shown.output)["state_table"]
    assert sorted({row["region"] for row in states if (row.get("region") or "").endswith("boundary")}) == [
        "{0,150} boundary",
        "{0,32767} boundary",
        "{0,4998} boundary",
    ]
    code = next(row for row in states if row.get("region") == "{0,150} boundary")
    assert code["distance"] == len('"}') and code["shortest_completion"] == '"}'


def test_unique_items_of_counted_strings_writes_the_bounds_out() -> None:
    # The marker DFA of one long string holds one "value": uniqueItems must not enumerate it.
    schema = {"type": "array", "items": {"type": "string", "maxLength": 200}, "uniqueItems": True}
    with pytest.raises(MoonmaskError, match="uniqueItems"):
        compile_source("schema", schema, make_options(tokenizer=None))
    small = {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True}
    assert compile_source("schema", small, make_options(tokenizer=None)).match('["a","b"]').accepted


def test_the_key_order_search_runs_the_counter() -> None:
    from tests.key_orders import accepts_in_some_key_order

    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "maxLength": 200}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    dfa = compile_source("schema", schema, make_options(tokenizer=None)).dfa
    assert dfa.regions is not None

    def scalar(value: Any) -> str:
        return serialize(value)

    assert accepts_in_some_key_order(dfa, {"b": 1, "a": "x" * 200}, scalar)
    assert not accepts_in_some_key_order(dfa, {"b": 1, "a": "x" * 201}, scalar)


def test_a_string_no_counter_can_run_leaves_the_others_counted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "long": {"type": "string", "maxLength": 32767},
            "negated": {"type": "string", "maxLength": 400, "not": {"type": "string", "maxLength": 300}},
        },
    }
    artifact = compile_source("schema", schema, make_options(tokenizer=None))
    regions = artifact.dfa.regions
    assert regions is not None and regions.high.tolist() == [32767]  # the 400 is written out
    note = artifact.metadata["notes"]["length_counters"]
    assert "{0,32767}" in note and "some written out: a counted string reaches a product" in note
    assert artifact.match('{"negated":"' + "b" * 301 + '"}').accepted
    assert not artifact.match('{"negated":"' + "b" * 300 + '"}').accepted
    assert artifact.match('{"long":"' + "b" * 32767 + '"}').accepted


def test_a_vocabulary_that_closes_a_string_only_after_a_character_writes_the_bound_out() -> None:
    """Every fewest-token ending from a counted state must start with a token that starts no
    character (the budgets rest on it): with `a"` the only token that holds a closing quote, none
    does, so the compile writes the bound out and says which state; with `"` a token of its own
    the counter runs."""
    from moonmaskc.vocabulary import Vocabulary

    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 500}},
        "required": ["name"],
        "additionalProperties": False,
    }
    singles = [bytes([b]) for b in range(256) if b != ord('"')]
    late_quote = Vocabulary.from_tokens([b"", *singles, b'a"', b'{"', b'":'], eos_id=0)
    written = compile_source("schema", schema, make_options(tokenizer=late_quote))
    assert written.dfa.regions is None
    note = written.metadata["notes"]["length_counters"]
    assert note.startswith("not used: no fewest-token ending from counted state ")
    assert note.endswith(" starts without a character")
    document = '{"name":"' + "x" * 500 + '"}'
    assert written.match(document).accepted and not written.match(document[:-2] + 'x"}').accepted
    own_quote = Vocabulary.from_tokens([b"", *singles, b'"'], eos_id=0)
    counted = compile_source("schema", schema, make_options(tokenizer=own_quote))
    assert counted.dfa.regions is not None and counted.token_table is not None


def test_a_region_refused_before_the_table_costs_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token that starts more characters in a string than its counted bound refuses the region
    (the compile writes the bound out); that check needs no token table, so it runs before one is
    built: the compile builds one table, the written-out one, and says why."""
    import moonmaskc
    from moonmaskc import token_table
    from moonmaskc.vocabulary import Vocabulary

    letters = [bytes([byte]) for byte in range(0x20, 0x7F)]
    vocabulary = Vocabulary.from_tokens([*letters, b'"' + b"a" * 70, b""], eos_id=len(letters) + 1)
    built = []
    real = token_table.token_classes
    monkeypatch.setattr(token_table, "token_classes", lambda *a, **k: built.append(a[0]) or real(*a, **k))
    artifact = moonmaskc.compile_schema({"type": "string", "maxLength": 64}, tokenizer=vocabulary)
    assert len(built) == 1 and built[0].regions is None  # only the written-out DFA's table
    note = artifact.metadata["notes"]["length_counters"]
    assert "a token starts 70 characters in a string it opens" in note
    assert artifact.token_table.allowed(artifact.dfa.start).tolist() == [letters.index(b'"')]
