"""The native core against the pure-Python reference, end to end, on real constraints.

Every public compile runs twice, once with ``MOONMASKC_PURE=1`` (the reference) and once with the
native core, and the results must be the same arrays: the minimal DFA (transitions, byte classes,
acceptance, distances, start; both are in the canonical breadth-first numbering, so equal
languages give equal arrays) and, for GPT-2 and Llama-3, the token table (mask rows, the row of
each state, token classes, next states). A refusal must be the same refusal.

Inputs: the example schemas, the shared llama.cpp GBNF grammars at depth 3 (with the GPT-2
table), and 120 JSONSchemaBench schemas, 12 from each subset (evenly spaced in name order), the
DFA of each (about 105 whose DFA has at most 20,000 states) and its GPT-2 and Llama-3 tables below
5,000 and 2,000 states.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from hypothesis import given, settings

import moonmaskc
from moonmaskc import ir
from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.native import PURE_ENV, native_built
from moonmaskc.errors import MoonmaskError
from moonmaskc.vocabulary import Vocabulary, load_vocabulary
from tests.conftest import PROJECT_ROOT, data_dir, data_path
from tests.test_automata import assert_same_dfa, ir_nodes

pytestmark = pytest.mark.skipif(
    not native_built(), reason="the native core is not built (no C compiler at install?)"
)

EXAMPLES = sorted((PROJECT_ROOT / "examples" / "schemas").glob("*.json"))
SCHEMAS_PER_SUBSET = 12
# Schemas whose pure compile takes seconds are left to the benchmarks: the pure path runs only
# while the native DFA is at most this big; token tables are compared below the smaller bounds.
MAX_STATES_FOR_PURE = 20_000
MAX_STATES_FOR_GPT2_TABLE = 5_000
MAX_STATES_FOR_LLAMA3_TABLE = 2_000

T = TypeVar("T")


def _both_ways(monkeypatch: pytest.MonkeyPatch, action: Callable[[], T]) -> tuple[T | str, T | str]:
    """(pure, native) results of ``action``; a ``MoonmaskError`` becomes its message."""
    results: list[T | str] = []
    for pure in (True, False):
        with monkeypatch.context() as patch:
            if pure:
                patch.setenv(PURE_ENV, "1")
            else:
                patch.delenv(PURE_ENV, raising=False)
            try:
                results.append(action())
            except MoonmaskError as error:
                results.append(f"{type(error).__name__}: {error}")
    return results[0], results[1]


def assert_same_artifact(pure: Artifact | str, native: Artifact | str) -> None:
    if isinstance(pure, str) or isinstance(native, str):
        assert pure == native
        return
    assert pure.metadata["core"] == "pure" and native.metadata["core"] == "native"
    left, right = pure.dfa, native.dfa
    assert left.start == right.start
    for name in ("transitions", "byte_class", "accepting", "distance"):
        assert np.array_equal(getattr(left, name), getattr(right, name)), name
    if pure.token_table is None or native.token_table is None:
        assert pure.token_table is native.token_table is None
        return
    for name in ("mask_rows", "state_row", "token_class"):
        assert np.array_equal(getattr(pure.token_table, name), getattr(native.token_table, name)), name
    assert pure.token_table.next_table.same_as(native.token_table.next_table)


_VOCABULARIES: dict[str, Vocabulary] = {}


def vocabulary(name: str) -> Vocabulary:
    if name not in _VOCABULARIES:
        _VOCABULARIES[name] = load_vocabulary(data_path("tokenizers", f"{name}.json"))
    return _VOCABULARIES[name]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
@pytest.mark.parametrize("tokenizer", ["gpt2", "llama3"])
def test_example_schemas_with_token_tables(
    path: Path, tokenizer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    vocab = vocabulary(tokenizer)
    pure, native = _both_ways(monkeypatch, lambda: moonmaskc.compile_schema(schema, tokenizer=vocab))
    assert not isinstance(native, str), native
    assert_same_artifact(pure, native)


def _gbnf_files() -> list[Path]:
    folder = data_dir() / "gbnf"
    return sorted(folder.glob("*.gbnf")) if folder.is_dir() else []


@pytest.mark.parametrize("path", _gbnf_files(), ids=lambda path: path.stem)
def test_shared_gbnf_grammars_at_depth_3(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    vocab = vocabulary("gpt2")
    pure, native = _both_ways(monkeypatch, lambda: moonmaskc.compile_gbnf(text, max_depth=3, tokenizer=vocab))
    assert_same_artifact(pure, native)


def test_gbnf_grammars_are_present() -> None:
    if not _gbnf_files():
        pytest.skip(f"{data_dir() / 'gbnf'} is absent: set MOONMASKC_DATA to the shared data folder")
    assert len(_gbnf_files()) >= 5


def _bench_schemas() -> Iterator[Path]:
    root = data_dir() / "schemas" / "jsonschemabench"
    if not root.is_dir():
        return
    for subset in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(subset.glob("*.json"))
        stride = max(1, len(files) // SCHEMAS_PER_SUBSET)
        yield from files[::stride][:SCHEMAS_PER_SUBSET]


BENCH_SCHEMAS = list(_bench_schemas())


def test_the_bench_sample_spans_every_subset() -> None:
    if not BENCH_SCHEMAS:
        pytest.skip("JSONSchemaBench is absent: set MOONMASKC_DATA to the shared data folder")
    assert len(BENCH_SCHEMAS) >= 120
    assert len({path.parent.name for path in BENCH_SCHEMAS}) == 10


@pytest.mark.parametrize("path", BENCH_SCHEMAS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_jsonschemabench_schemas(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")

    def compile_it() -> Artifact:
        return moonmaskc.compile_schema(text, lenient=True)

    with monkeypatch.context() as patch:
        patch.delenv(PURE_ENV, raising=False)
        try:
            first = compile_it()
        except MoonmaskError:
            first = None
    if first is not None and first.dfa.num_states > MAX_STATES_FOR_PURE:
        pytest.skip(f"{first.dfa.num_states} states: the pure compile is left to the benchmarks")
    pure, native = _both_ways(monkeypatch, compile_it)
    assert_same_artifact(pure, native)
    if isinstance(native, str):
        return
    for name, bound in (("gpt2", MAX_STATES_FOR_GPT2_TABLE), ("llama3", MAX_STATES_FOR_LLAMA3_TABLE)):
        if native.dfa.num_states <= bound:
            vocab = vocabulary(name)
            linked = _both_ways(
                monkeypatch, lambda vocab=vocab: moonmaskc.compile_schema(text, lenient=True, tokenizer=vocab)
            )
            assert_same_artifact(*linked)


def test_the_core_is_recorded_and_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The artifact's metadata, ``inspect`` and ``--version`` name the core that compiled it."""
    from click.testing import CliRunner

    from moonmaskc.cli import main

    pure, native = _both_ways(monkeypatch, lambda: moonmaskc.compile_regex(r"[a-z]+@[a-z]+\.com"))
    assert isinstance(pure, Artifact) and isinstance(native, Artifact)
    paths: dict[str, Any] = {}
    for name, artifact in (("pure", pure), ("native", native)):
        paths[name] = artifact.save(tmp_path / f"{name}.npz")
        result = CliRunner().invoke(main, ["inspect", str(paths[name])])
        assert result.exit_code == 0, result.output
        assert f"{name} core" in result.output.splitlines()[0]


def test_version_names_the_core() -> None:
    import os
    import subprocess
    import sys

    command = [sys.executable, "-c", "from moonmaskc.cli import main; main()", "--version"]
    forced = subprocess.run(command, env={**os.environ, PURE_ENV: "1"}, capture_output=True, text=True)
    assert forced.returncode == 0 and f"pure-Python core ({PURE_ENV}=1)" in forced.stdout
    environment = {key: value for key, value in os.environ.items() if key != PURE_ENV}
    default = subprocess.run(command, env=environment, capture_output=True, text=True)
    assert default.returncode == 0 and default.stdout.strip().endswith("native core")


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes())
def test_compile_ir_through_the_flat_nfa_equals_the_pure_path(first: ir.Node, second: ir.Node) -> None:
    """``compile_ir``'s native path (flat NFA with embedded automata kept whole, native subsets,
    native minimisation) against the pure path, on IRs that embed the same DFA several times, an
    empty DFA and a DFA with an accepting sink."""
    import os

    saved = os.environ.pop(PURE_ENV, None)
    try:
        embedded = ir.Automaton(compile_ir(ir.seq(first, ir.star(second))))
        nothing = ir.Automaton(compile_ir(ir.NOTHING))
        node = ir.seq(ir.alt(embedded, second, nothing), ir.repeat(embedded, 0, 2), ir.alt(first, embedded))
        for candidate in (first, node):
            native_dfa = compile_ir(candidate)
            os.environ[PURE_ENV] = "1"
            pure_dfa = compile_ir(candidate)
            del os.environ[PURE_ENV]
            assert_same_dfa(pure_dfa, native_dfa)
    finally:
        os.environ.pop(PURE_ENV, None)
        if saved is not None:
            os.environ[PURE_ENV] = saved
