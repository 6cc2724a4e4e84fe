"""The native walk of the free values' closing tokens (``nests.pyx`` ``popping_tokens``).

``nest_tokens.dynamic_tokens_of`` lists, for every state of a DFA with nest regions, the tokens
whose walk reaches a pop. The native path walks the closing tokens' trie from every state (a role
of the nested copies once, pruned by the distance to a pop on large tries); the pure path reads the
token table of a probe DFA. They must agree on the example schemas and on JSONSchemaBench schemas
with GPT-2 and Llama-3 (the one example schema with free values, ``note.json``, and six
JSONSchemaBench ones), pruned and whole; on hand-made vocabularies they must agree with a walk
of each token's bytes; and a malformed array must be ``BAD_INPUT`` before any walk.

The regions' rows of ``automata.nested.expand_nests`` (``nests.pyx`` ``expand_table``) must equal
numpy's (``_expanded_rows``) on the same schemas, and so must the whole expansion; both paths
refuse the same regions, and a malformed input is ``BAD_INPUT``. The count of states whose
fewest-bytes ending no single-byte tokens spell (``unspelled_count``) must equal numpy's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from moonmaskc import compile_schema, ir
from moonmaskc.automata import nested
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.counted import expand_markers
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import PURE_ENV, native
from moonmaskc.automata.nested import NEST_CALL, NEST_OPEN_BYTES, NestRegionError, expand_nests
from moonmaskc.errors import MalformedArraysError
from moonmaskc.frontends.schema.automata import Automata
from moonmaskc.frontends.schema.compiler import compile_schema_ir
from moonmaskc.frontends.schema.layout import Layout
from moonmaskc.limits import Limits
from moonmaskc.nest_tokens import (
    _closing_tokens,
    _native_popping_tokens,
    _native_unspelled,
    _probed_tokens,
    _unspelled_states,
    dynamic_tokens_of,
)
from moonmaskc.trie import ByteTrie, trie_for
from moonmaskc.vocabulary import Vocabulary, load_vocabulary
from tests.conftest import PROJECT_ROOT, data_path
from tests.test_nest_regions import FREE, MARKER, NESTED, TOKENS, reaches_pop

NOTE = PROJECT_ROOT / "examples" / "schemas" / "note.json"  # the example with free values
BENCH_SCHEMAS = (
    "Kubernetes/kb_10_Normalized.json",
    "Kubernetes/kb_101_Normalized.json",
    "Github_trivial/o7441.json",
    "Github_hard/o2069.json",
    "JsonSchemaStore/crowdin.json",
    "Glaiveai2K/calculate_area_4a532765.json",
)
WHOLE, PRUNED = 1 << 40, 0  # prune_from_nodes: never prune, always prune


@pytest.fixture
def nests_module() -> ModuleType:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(PURE_ENV, raising=False)
        module = native("nests")
    if module is None:
        pytest.skip("the native nests module is not built")
    return module


def vocabulary_named(name: str) -> Vocabulary:
    return load_vocabulary(data_path("tokenizers", f"{name}.json"))


def nested_dfa(path: Path) -> DFA:
    dfa = compile_schema(path.read_text(), tokenizer=None).dfa
    assert dfa.nests is not None, f"{path.name} has no free value"
    return dfa


def closing_trie(dfa: DFA, vocabulary: Vocabulary) -> tuple[ByteTrie, np.ndarray]:
    assert dfa.nests is not None
    closers = dfa.nests.closing_bytes
    closing, members = _closing_tokens(vocabulary, closers)
    return trie_for(closing), members


def native_tokens(
    module: ModuleType, dfa: DFA, vocabulary: Vocabulary, prune_from_nodes: int
) -> tuple[np.ndarray, ...]:
    trie, members = closing_trie(dfa, vocabulary)
    with pytest.MonkeyPatch.context() as patch:
        original: Callable[..., object] = module.popping_tokens
        patch.setattr(module, "popping_tokens", lambda *a: original(*a, prune_from_nodes=prune_from_nodes))
        assert dfa.nests is not None
        return _native_popping_tokens(module, dfa, dfa.nests, trie, members)


def assert_same(got: tuple[np.ndarray, ...], expected: tuple[np.ndarray, ...]) -> None:
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.dtype == theirs.dtype == np.int32
        assert np.array_equal(mine, theirs)


@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
@pytest.mark.parametrize("prune_from_nodes", [WHOLE, PRUNED], ids=["whole", "pruned"])
@pytest.mark.parametrize(
    "path",
    [NOTE, *(data_path("schemas", "jsonschemabench", name) for name in BENCH_SCHEMAS)],
    ids=lambda path: path.stem,
)
def test_popping_tokens_match_the_probe_on_real_schemas(
    nests_module: ModuleType, tokenizer: str, prune_from_nodes: int, path: Path
) -> None:
    dfa = nested_dfa(path)
    vocabulary = vocabulary_named(tokenizer)
    expected = _probed_tokens(dfa, vocabulary)
    assert expected[1].size > 0
    assert_same(native_tokens(nests_module, dfa, vocabulary, prune_from_nodes), expected)


def test_dynamic_tokens_of_takes_the_native_walk(
    nests_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The public call runs the native walk when the core is built, the probe when it is not."""
    dfa = nested_dfa(NOTE)
    vocabulary = vocabulary_named("gpt2")
    calls: list[int] = []
    original = nests_module.popping_tokens
    monkeypatch.setattr(nests_module, "popping_tokens", lambda *a, **k: calls.append(1) or original(*a, **k))
    monkeypatch.delenv(PURE_ENV, raising=False)
    native_result = dynamic_tokens_of(dfa, vocabulary)
    monkeypatch.setenv(PURE_ENV, "1")
    pure_result = dynamic_tokens_of(dfa, vocabulary)
    assert calls == [1]
    assert_same(native_result, pure_result)


@pytest.mark.parametrize("prune_from_nodes", [WHOLE, PRUNED], ids=["whole", "pruned"])
@pytest.mark.parametrize("host", sorted(NESTED))
def test_popping_tokens_match_a_walk_of_each_token(
    nests_module: ModuleType, prune_from_nodes: int, host: str
) -> None:
    """Every state of the hand-made hosts, and tokens that enter a region, open and close."""
    tokens = [*TOKENS, b'{"a":[[]', b":[[1]", b'"a":[{}]', b"]]]", b"[]]"]
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=0)
    nested, _ = NESTED[host]
    offsets, ids = native_tokens(nests_module, nested, vocabulary, prune_from_nodes)
    assert offsets.shape == (nested.num_states + 1,) and offsets[0] == 0 and offsets[-1] == ids.size
    assert ids.size > 0
    for state in range(nested.num_states):
        expected = [
            token for token, data in enumerate(tokens) if state and data and reaches_pop(nested, state, data)
        ]
        assert ids[offsets[state] : offsets[state + 1]].tolist() == expected, state


def good_arguments(dfa: DFA) -> list[np.ndarray]:
    nests = dfa.nests
    assert nests is not None
    trie, members = closing_trie(dfa, vocabulary_named("gpt2"))
    return [
        np.ascontiguousarray(dfa.transitions, dtype=np.int32),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        np.where((nests.region >= 0) & (nests.copy >= 1), nests.role, -1).astype(np.int32),
        np.ascontiguousarray(nests.pops, dtype=np.bool_).view(np.uint8),
        np.ascontiguousarray(trie.node_parent, dtype=np.int32),
        np.ascontiguousarray(trie.node_byte, dtype=np.uint8),
        np.ascontiguousarray(trie.node_token_offsets, dtype=np.int64),
        np.ascontiguousarray(trie.node_token_ids, dtype=np.int32),
        np.ascontiguousarray(members, dtype=np.int32),
    ]


def _set(index: int, position: tuple[int, ...] | int, value: int) -> Callable[[list[np.ndarray]], None]:
    def spoil(arguments: list[np.ndarray]) -> None:
        arguments[index] = arguments[index].copy()
        arguments[index][position] = value

    return spoil


def _cut(index: int) -> Callable[[list[np.ndarray]], None]:
    def spoil(arguments: list[np.ndarray]) -> None:
        arguments[index] = np.ascontiguousarray(arguments[index][:-1])

    return spoil


SPOILERS = {
    "a target past the states": _set(0, (1, 0), 1 << 20),
    "a negative target": _set(0, (1, 0), -1),
    "a byte class past the columns": _set(1, 7, 1 << 20),
    "a role past the pops": _set(2, 1, 1 << 20),
    "a role below -1": _set(2, 1, -2),
    "the root with a parent": _set(4, 0, 0),
    "a parent after its child": _set(4, 3, 5),
    "parents out of breadth-first order": lambda arguments: _set(4, len(arguments[4]) - 1, 0)(arguments),
    "token offsets that go down": lambda arguments: _set(6, 2, int(arguments[6][-1]) + 1)(arguments),
    "a token past the ids": _set(7, 0, 1 << 20),
    "pop roles one short": _cut(2),
    "node bytes one short": _cut(5),
    "token offsets one short": _cut(6),
}


@pytest.mark.parametrize("spoil", SPOILERS.values(), ids=list(SPOILERS))
def test_malformed_arrays_are_refused_before_any_walk(
    nests_module: ModuleType, spoil: Callable[..., None]
) -> None:
    dfa = nested_dfa(NOTE)
    arguments = good_arguments(dfa)
    assert nests_module.popping_tokens(*arguments)[0] == nests_module.OK
    spoil(arguments)
    assert nests_module.popping_tokens(*arguments) == (nests_module.BAD_INPUT, None, None)


def test_a_malformed_table_is_a_moonmask_error(nests_module: ModuleType) -> None:
    dfa = nested_dfa(NOTE)
    assert dfa.nests is not None
    broken = DFA(dfa.transitions.copy(), dfa.byte_class, dfa.accepting, dfa.start)
    broken.nests = dfa.nests
    broken.transitions[1, 0] = dfa.num_states + 5
    trie, members = closing_trie(dfa, vocabulary_named("gpt2"))
    with pytest.raises(MalformedArraysError, match="malformed"):
        _native_popping_tokens(nests_module, broken, dfa.nests, trie, members)


# -- the regions' rows (``expand_table``) --------------------------------------------------------


def unexpanded(path: Path) -> tuple[DFA, int, DFA]:
    """The schema's DFA before its free values become nest regions, its marker and level."""
    result = compile_schema_ir(path.read_text(), nest_values=True)
    assert result.nest_marker is not None and result.nest_level is not None
    dfa = compile_ir(result.node)
    if result.markers and result.counted_char is not None:
        dfa = expand_markers(dfa, result.markers, result.counted_char)
    return dfa, result.nest_marker, result.nest_level


def rows_of(rows: Callable[..., tuple[np.ndarray, ...]], *arguments: object) -> tuple[np.ndarray, ...]:
    expanded, joint, sources, exits, returns = rows(*arguments)
    return expanded, joint.astype(np.int64), sources, exits, returns


@pytest.mark.parametrize(
    "path",
    [NOTE, *(data_path("schemas", "jsonschemabench", name) for name in BENCH_SCHEMAS)],
    ids=lambda path: path.stem,
)
def test_expanded_rows_match_the_pure_path(
    nests_module: ModuleType, monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    """The native rows against numpy's, then the whole expansion (regions, columns, distances)."""
    dfa, marker, level = unexpanded(path)
    template = nested._template(level, NEST_CALL, NEST_OPEN_BYTES)
    got = rows_of(nested._native_rows, nests_module, dfa, marker, level, template)
    expected = rows_of(nested._expanded_rows, dfa, marker, level, template)
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
    assert got[2].size > 0
    native_dfa = expand_nests(dfa, marker, level, NEST_CALL, NEST_OPEN_BYTES)
    monkeypatch.setattr(nested, "native", lambda name: None)
    pure_dfa = expand_nests(dfa, marker, level, NEST_CALL, NEST_OPEN_BYTES)
    for name in ("transitions", "byte_class", "accepting", "distance"):
        assert np.array_equal(getattr(native_dfa, name), getattr(pure_dfa, name)), name
    assert native_dfa.nests is not None and pure_dfa.nests is not None
    for field in dataclasses.fields(native_dfa.nests):
        assert np.array_equal(getattr(native_dfa.nests, field.name), getattr(pure_dfa.nests, field.name))


REFUSED_HOSTS = {
    "shares its first byte": ir.seq(ir.literal(b"["), ir.alt(FREE, ir.literal(b'"x"')), ir.literal(b"]")),
    "a number goes on with": ir.seq(ir.literal(b"["), FREE, ir.literal(b"1]")),
}


@pytest.mark.parametrize("reason", sorted(REFUSED_HOSTS))
def test_a_region_one_stack_cannot_run_is_refused_on_both_paths(
    nests_module: ModuleType, monkeypatch: pytest.MonkeyPatch, reason: str
) -> None:
    level = Automata(Layout.of("compact"), Limits()).nest_level()
    host = compile_ir(REFUSED_HOSTS[reason])
    with pytest.raises(NestRegionError, match=reason):
        expand_nests(host, MARKER, level, NEST_CALL, NEST_OPEN_BYTES)
    monkeypatch.setattr(nested, "native", lambda name: None)
    with pytest.raises(NestRegionError, match=reason):
        expand_nests(host, MARKER, level, NEST_CALL, NEST_OPEN_BYTES)


def table_arguments(path: Path) -> list[Any]:
    dfa, marker, level = unexpanded(path)
    template = nested._template(level, NEST_CALL, NEST_OPEN_BYTES)
    return [
        np.ascontiguousarray(dfa.transitions, dtype=np.int32),
        np.ascontiguousarray(dfa.byte_class, dtype=np.int32),
        dfa.accepting.view(np.uint8).copy(),
        np.ascontiguousarray(level.byte_class, dtype=np.int32),
        level.num_classes,
        marker,
        template.block.astype(np.int64),
        template.start_codes.astype(np.int64),
        template.starts.view(np.uint8).copy(),
        template.goes_on.view(np.uint8).copy(),
        template.goes_on_local.astype(np.int64),
        template.return_codes.astype(np.int64),
    ]


TABLE_SPOILERS = {
    "a target past the states": _set(0, (1, 0), 1 << 20),
    "a byte class past the columns": _set(1, 3, 1 << 20),
    "a level class past its classes": _set(3, 3, 1 << 20),
    "a block code past the block": lambda arguments: arguments.__setitem__(
        6, np.full_like(arguments[6], 1 << 20)
    ),
    "a block code below the codes": lambda arguments: arguments.__setitem__(
        6, np.full_like(arguments[6], -4)
    ),
    "a start code past the block": _set(7, 5, 1 << 20),
    "a return code past the block": _set(11, (0, 0), 1 << 20),
    "a continuing state past the block": lambda arguments: arguments.__setitem__(
        10, np.asarray([1 << 20], dtype=np.int64)
    ),
    "acceptance one short": _cut(2),
    "a marker past the bytes": lambda arguments: arguments.__setitem__(5, 256),
    "no level classes": lambda arguments: arguments.__setitem__(4, 0),
}


@pytest.mark.parametrize("spoil", TABLE_SPOILERS.values(), ids=list(TABLE_SPOILERS))
def test_malformed_expansion_inputs_are_refused(nests_module: ModuleType, spoil: Callable[..., None]) -> None:
    arguments = table_arguments(NOTE)
    assert nests_module.expand_table(*arguments)[0] == nests_module.OK
    spoil(arguments)
    assert nests_module.expand_table(*arguments)[0] == nests_module.BAD_INPUT


# -- the budgets' fact (``unspelled_count``) ------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [NOTE, *(data_path("schemas", "jsonschemabench", name) for name in BENCH_SCHEMAS)],
    ids=lambda path: path.stem,
)
def test_unspelled_counts_match_the_pure_path(nests_module: ModuleType, path: Path) -> None:
    """Every byte a token (GPT-2's case: only the nested copies are checked), and vocabularies
    that lack some bytes, among them the closing ones and the ones a number or a string needs."""
    dfa = nested_dfa(path)
    assert dfa.nests is not None
    rng = np.random.default_rng(7)
    no_digits = ~np.isin(np.arange(256), list(b"0123456789"))  # an opening byte looks nearer
    cases = [np.ones(256, dtype=bool), np.arange(256) != ord("}"), np.arange(256) != ord('"'), no_digits]
    cases += [rng.random(256) < share for share in (0.5, 0.9, 0.98)]
    counts = []
    for singles in cases:
        got = _native_unspelled(nests_module, dfa, dfa.nests, singles)
        assert got == _unspelled_states(dfa, dfa.nests, singles).size
        counts.append(got)
    assert counts[0] == 0 and max(counts) > 0


def test_a_malformed_nest_table_is_refused_by_the_count(nests_module: ModuleType) -> None:
    dfa = nested_dfa(NOTE)
    assert dfa.nests is not None
    broken = DFA(dfa.transitions.copy(), dfa.byte_class, dfa.accepting, dfa.start, dfa.distance)
    broken.transitions[2, 1] = -7
    with pytest.raises(MalformedArraysError, match="malformed"):
        _native_unspelled(nests_module, broken, dfa.nests, np.ones(256, dtype=bool))
    role = dfa.nests.role.copy()
    role[1] = 1 << 20
    spoiled = dataclasses.replace(dfa.nests, role=role)
    with pytest.raises(MalformedArraysError, match="malformed"):
        _native_unspelled(nests_module, dfa, spoiled, np.ones(256, dtype=bool))
