"""Free values as nest regions (``nest_values`` / ``free_value_stacks``), on real and small schemas,
against ``jsonschema`` and against the free values written out to the depth bound."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import moonmaskc
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.counted import CountedRegionError, expand_markers
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import NEST_CALL, NEST_OPEN_BYTES, NestRegionError, accepts, expand_nests, walk
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends.schema import compile_schema_ir
from moonmaskc.limits import Limits
from moonmaskc.pipeline import CompileOptions, compile_source
from moonmaskc.runtime import Guide
from tests.oracles.json_values import nesting_depth
from tests.schema_suite_report import CaseTimeout, _written, data_dir, serialize_instance, time_limit

LIMITS = Limits(max_states=50_000)


def nested_dfa(schema: Any) -> DFA:
    """The schema's DFA with its free values as nest regions (and long strings counted)."""
    result = compile_schema_ir(schema, limits=LIMITS, length_counters=True, nest_values=True)
    dfa = compile_ir(result.node, LIMITS)
    if result.markers and result.counted_char is not None:
        dfa = expand_markers(dfa, result.markers, result.counted_char)
    if result.nest_marker is not None and result.nest_level is not None:
        dfa = expand_nests(dfa, result.nest_marker, result.nest_level, NEST_CALL, NEST_OPEN_BYTES)
    return dfa


def written_dfa(schema: Any) -> DFA:
    result = compile_schema_ir(schema, limits=LIMITS)
    return compile_ir(result.node, LIMITS)


def maskbench_cases() -> list[Path]:
    return sorted((data_dir() / "schemas" / "maskbench").glob("*/*.json"))


def test_maskbench_with_free_value_stacks_accepts_no_invalid_instance_and_every_valid_one_it_did() -> None:
    cases = maskbench_cases()
    if not cases:
        pytest.skip(f"MaskBench is not in {data_dir()} (set MOONMASKC_DATA)")
    stacked = checked = deep = 0
    for path in cases[::3]:  # a third of them, every subset
        case = json.loads(path.read_text(encoding="utf-8"))
        try:
            with time_limit(10):
                nested = nested_dfa(case["schema"])
                written = written_dfa(case["schema"])
        except (MoonmaskError, CountedRegionError, NestRegionError, CaseTimeout, RecursionError):
            continue
        if nested.nests is None:
            continue
        stacked += 1
        for test in case.get("tests", []):
            try:
                data = serialize_instance(test["data"], case["schema"])
            except (TypeError, ValueError):
                continue
            checked += 1
            if not test["valid"]:
                assert not accepts(nested, data), (path.name, data[:200])
            elif written.accepts(data):
                assert accepts(nested, data), (path.name, data[:200])
            elif accepts(nested, data):
                deep += 1
    assert stacked >= 50 and checked >= 150
    assert deep >= 1  # a valid instance nested past --max-depth, accepted with the stack


OPEN = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}, "extra": {}},
    "required": ["id"],
}


@pytest.mark.parametrize(
    ("schema", "product"),
    [
        (OPEN, False),
        ({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}, False),
        ({"type": "object", "properties": {"s": {"type": "string", "maxLength": 300}}}, False),
        (True, False),
        # Operands of products keep their free values written out to the depth bound (as without
        # stacks): deeper values there are refused, never accepted wrongly.
        ({"allOf": [OPEN, {"not": {"required": ["tags"]}}]}, True),
        (
            {
                "type": "object",
                "properties": {"n": {"type": "number"}},
                "not": {"properties": {"n": {"const": 1}}},
            },
            True,
        ),
        ({"type": "array", "contains": {"type": "object"}, "minContains": 2}, True),
    ],
)
def test_small_schemas_with_free_value_stacks_agree_with_jsonschema(schema: Any, product: bool) -> None:
    nested = nested_dfa(schema)
    deep = {"x": [[{"y": [1, {"z": [[[]]]}]}]]}
    values: list[Any] = [
        {"id": 1},
        {"id": 1, "tags": [deep, "a"], "extra": deep, "other": {"k": [deep]}},
        {"id": "1"},
        {"id": 1, "tags": {}},
        {"tags": []},
        [{"a": "x", "b": deep}],
        [{"a": 1}],
        [{}, {}, {}],
        {"n": 1},
        {"n": 2, "m": deep},
        {"s": "x" * 300},
        {"s": "x" * 301, "t": deep},
        deep,
        [1, "2", None, True, -0.5, {"": {}}],
    ]
    validator = jsonschema.validators.validator_for(schema if isinstance(schema, dict) else {})(schema)
    for value in values:
        data = _written(value).encode()
        expected = validator.is_valid(value)
        if isinstance(schema, dict) and "properties" in schema and isinstance(value, dict):
            data = serialize_instance(value, schema)
        if product and nesting_depth(value) > 3:
            assert expected or not accepts(nested, data), (schema, value)
        else:
            assert accepts(nested, data) == expected, (schema, value)


def test_the_pipeline_runs_the_stacks_and_writes_them_out_for_a_vocabulary_without_every_byte() -> None:
    from moonmaskc.vocabulary import Vocabulary

    options = CompileOptions(free_value_stacks=True, tokenizer=None)
    artifact = compile_source("schema", OPEN, options)
    assert artifact.dfa.nests is not None
    assert "nest at least 31 levels deep" in artifact.metadata["notes"]["free_value_stacks"]
    assert "(?#any JSON value)" in artifact.metadata["grammar"]
    deep = b'{"id":1,"extra":' + b"[" * 20 + b"]" * 20 + b"}"
    assert accepts(artifact.dfa, deep)
    linked = compile_source("schema", OPEN, CompileOptions(free_value_stacks=True, tokenizer="bytes"))
    assert linked.dfa.nests is not None and linked.token_table is not None
    assert linked.token_table.nest_dynamic is not None
    # Without a token for a byte that some fewest ending needs (`]` closes an array), budgets
    # could not rest on the bytes: written out.
    tokens = [b"", *[bytes([b]) for b in range(256) if b != ord("]")]]
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=0)
    written = compile_source("schema", OPEN, CompileOptions(free_value_stacks=True, tokenizer=vocabulary))
    assert written.dfa.nests is None
    note = written.metadata["notes"]["free_value_stacks"]
    assert note.startswith("not used: the vocabulary spells no fewest-bytes ending of ")
    assert "(bytes without a token of their own: 0x5d...)" in note
    assert not written.dfa.accepts(deep)
    # A byte no fewest ending needs (`~`) may lack a token of its own: the stacks run, and the
    # monkey still ends every text within its budget.
    tokens = [b"", *[bytes([b]) for b in range(256) if b != ord("~")]]
    without_tilde = Vocabulary.from_tokens(tokens, eos_id=0)
    stacked = compile_source("schema", OPEN, CompileOptions(tokenizer=without_tilde))
    assert stacked.dfa.nests is not None
    guide = Guide.from_artifact(stacked)
    rng = random.Random(4)
    for budget in (12, 30, 60):
        for _ in range(10):
            tokens_out, text, finished = guide.monkey(rng, budget)
            assert finished and len(tokens_out) <= budget
            jsonschema.validate(json.loads(text), OPEN)


def test_free_values_run_with_a_stack_by_default_and_are_written_out_when_asked() -> None:
    default = moonmaskc.compile_schema(OPEN, tokenizer=None)
    assert default.dfa.nests is not None and "free_value_stacks" not in default.metadata["options"]
    written = moonmaskc.compile_schema(OPEN, tokenizer=None, free_value_stacks=False)
    assert written.dfa.nests is None and "free_value_stacks" not in written.metadata["notes"]
    assert written.metadata["options"]["free_value_stacks"] is False


def test_cli_compiles_matches_samples_and_inspects_free_value_stacks(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from moonmaskc.cli import main

    schema = tmp_path / "open.json"
    schema.write_text(json.dumps(OPEN))
    out = tmp_path / "open.npz"
    runner = CliRunner()
    compiled = runner.invoke(main, ["compile", str(schema), "-o", str(out)])  # stacks by default
    assert compiled.exit_code == 0, compiled.output
    deep = '{"id":1,"extra":' + "[" * 25 + '{"a":1}' + "]" * 25 + "}"
    assert runner.invoke(main, ["match", str(out), deep]).exit_code == 0
    rejected = runner.invoke(main, ["match", str(out), deep.replace("}]", "]}", 1)])
    assert rejected.exit_code == 1 and "rejected at byte" in rejected.output
    sampled = runner.invoke(main, ["sample", str(out), "-n", "5"])
    assert sampled.exit_code == 0 and "5/5" in sampled.output, sampled.output
    shown = runner.invoke(main, ["inspect", str(out), "--all", "--json"])
    states = json.loads(shown.output)["state_table"]
    nested = [row for row in states if (row.get("region") or "").endswith("(copy 1)")]
    assert nested and all(row["shortest_completion"] is not None for row in nested)
    readable = [row for row in nested if "\\" not in row["shortest_completion"]]  # no byte escapes
    assert readable and all(row["distance"] == len(row["shortest_completion"]) for row in readable)
    plain = tmp_path / "plain.npz"
    written = runner.invoke(main, ["compile", str(schema), "--no-free-value-stacks", "-o", str(plain)])
    assert written.exit_code == 0
    assert runner.invoke(main, ["match", str(plain), deep]).exit_code == 1  # written out to the depth bound


def test_the_dfa_sampler_and_shortest_completions_run_the_stack() -> None:
    import random

    from moonmaskc.automata.sample import sample

    artifact = compile_source("schema", OPEN, CompileOptions(free_value_stacks=True, tokenizer=None))
    rng = random.Random(5)
    for _ in range(100):
        text = sample(artifact.dfa, rng, max_len=150, stop_probability=0.05)
        assert text is not None
        jsonschema.validate(json.loads(text), OPEN)
    state, stack = walk(artifact.dfa, b'{"id":1,"extra":[[{"a":[[')
    assert artifact.dfa.shortest_completion(state, stack) == b"]]}]]}"
    assert artifact.dfa.cost(state, stack) == 6


def _unspelled_reference(dfa: DFA, singles: Any) -> int:
    """How many states ``nest_tokens.unspelled_endings`` should name: every state and every edge
    checked, as its docstring says (the function itself skips the states a distance vouches for)."""
    import numpy as np

    nests = dfa.nests
    assert nests is not None
    table = dfa.transitions
    spelled = np.zeros(table.shape[1], dtype=bool)
    np.logical_or.at(spelled, dfa.byte_class, singles)
    distance = dfa.distance.astype(np.int64)
    nearer = (table != 0) & (distance[table] == distance[:, None] - 1)
    calls = np.unique(dfa.byte_class[list(NEST_OPEN_BYTES)])
    nearer[np.ix_(nests.region >= 0, calls)] = False
    fine = (nearer & spelled[None, :]).any(axis=1) | (distance <= 0)
    closing = (nests.pops & singles[None, :]).any(axis=1)
    roles = np.maximum(nests.role, 0)
    fine |= (nests.copy >= 1) & (nests.level_distance[roles] == 1) & closing[roles]
    return int((~fine).sum())


def test_unspelled_endings_match_the_edge_by_edge_check_on_maskbench() -> None:
    """The states whose fewest endings a vocabulary cannot spell one byte per token, on MaskBench
    schemas with every byte a token, and with random bytes (or the closing brackets) missing."""
    import numpy as np

    from moonmaskc.nest_tokens import unspelled_endings

    cases = maskbench_cases()
    if not cases:
        pytest.skip(f"MaskBench is not in {data_dir()} (set MOONMASKC_DATA)")
    rng = np.random.default_rng(11)
    compared = named = 0
    for path in cases[::9]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            with time_limit(10):
                dfa = nested_dfa(schema)
        except (MoonmaskError, CaseTimeout, RecursionError):
            continue
        if dfa.nests is None:
            continue
        every = np.ones(256, dtype=bool)
        no_closers = every.copy()
        no_closers[[ord("]"), ord("}")]] = False
        for singles in (every, no_closers, rng.random(256) < 0.9, rng.random(256) < 0.99):
            expected = _unspelled_reference(dfa, singles)
            found = unspelled_endings(dfa, singles)
            assert (found is None) == (expected == 0), path.name
            if found is not None:
                assert found.startswith(f"the vocabulary spells no fewest-bytes ending of {expected} states")
                named += 1
            compared += 1
    assert compared >= 40 and named >= 10, (compared, named)


def test_stacks_refused_by_the_vocabulary_cost_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the vocabulary spells every fewest ending needs no token table, so it is asked
    before one is built: a vocabulary without `]` makes one table, the written-out DFA's."""
    from moonmaskc import token_table
    from moonmaskc.vocabulary import Vocabulary

    tokens = [b"", *[bytes([b]) for b in range(256) if b != ord("]")]]
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=0)
    built = []
    real = token_table.token_classes
    monkeypatch.setattr(token_table, "token_classes", lambda *a, **k: built.append(a[0]) or real(*a, **k))
    written = compile_source("schema", OPEN, CompileOptions(free_value_stacks=True, tokenizer=vocabulary))
    assert written.dfa.nests is None and written.metadata["notes"]["free_value_stacks"].startswith("not used")
    assert len(built) == 1 and built[0] is written.dfa
