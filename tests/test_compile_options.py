"""Compile options of the wrong type or out of range, through the public calls: a ``TypeError`` or
``ValueError`` that names the option (bounds), a ``VocabularyError`` (tokenizers), never an error
from deep inside, and nothing left behind: a bad ``max_nesting`` once left a float among the
recursion limits in force, and every later compile in the process failed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import moonmaskc
from moonmaskc.errors import VocabularyError
from moonmaskc.limits import LARGEST_BOUND, LARGEST_MAX_NESTING, Limits

BOUNDS = ("max_states", "max_repeat", "max_depth", "max_table_cells", "max_work", "max_nesting")
COMPILES = {
    "regex": lambda **options: moonmaskc.compile_regex("a{1,3}b", **options),
    "gbnf": lambda **options: moonmaskc.compile_gbnf('root ::= "a" root | "b"', **options),
    "schema": lambda **options: moonmaskc.compile_schema(
        {"type": "object", "properties": {"a": {"$ref": "#"}}}, **options
    ),
}


def _all_compile() -> None:
    for compile_one in COMPILES.values():
        compile_one(max_depth=2)


@pytest.mark.parametrize("kind", sorted(COMPILES))
@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("value", [1.5, float("nan"), "3", True, [], {}, b"x"])
def test_a_bound_that_is_not_an_integer_names_itself(kind: str, bound: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"{bound} must be an integer"):
        COMPILES[kind](**{bound: value})
    _all_compile()


@pytest.mark.parametrize("kind", sorted(COMPILES))
@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("value", [-1, -(1 << 70), 1 << 70])
def test_a_bound_out_of_range_names_its_range(kind: str, bound: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"{bound} must be in "):
        COMPILES[kind](**{bound: value})
    _all_compile()


def test_the_ranges_and_numpy_integers() -> None:
    limits = Limits(max_states=np.int64(500), max_depth=0, max_repeat=0, max_nesting=LARGEST_MAX_NESTING)
    assert type(limits.max_states) is int and limits.max_states == 500
    assert Limits(max_work=LARGEST_BOUND).max_work == LARGEST_BOUND
    assert Limits(max_states=0, max_work=0, max_table_cells=0).max_states == 0  # every automaton past
    with pytest.raises(ValueError):
        Limits(max_nesting=0)
    with pytest.raises(ValueError):
        Limits(max_nesting=LARGEST_MAX_NESTING + 1)


@pytest.mark.parametrize("tokenizer", [1, 1.5, True, [], {}, b"gpt2"])
def test_a_tokenizer_of_the_wrong_kind_is_a_vocabulary_error(tokenizer: Any) -> None:
    with pytest.raises(VocabularyError, match="tokenizer"):
        moonmaskc.compile_regex("ab", tokenizer=tokenizer)
    _all_compile()


@pytest.mark.parametrize(
    "flag", ["--max-states", "--max-repeat", "--max-depth", "--max-table-cells", "--max-work"]
)
def test_the_cli_refuses_a_bound_past_the_largest_without_a_traceback(flag: str, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from moonmaskc.cli import main

    result = CliRunner().invoke(
        main, ["compile", "--regex", "ab", "-o", str(tmp_path / "a.npz"), flag, str(LARGEST_BOUND + 1)]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "not in the range" in result.output and not (tmp_path / "a.npz").exists()
    result = CliRunner().invoke(
        main, ["compile", "--regex", "ab", "-o", str(tmp_path / "b.npz"), flag, str(LARGEST_BOUND)]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("source", [None, 1, b"ab", ["ab"]])
def test_a_regex_or_grammar_that_is_not_text_is_a_source_error(source: Any) -> None:
    """Not compiled from its ``str()``: ``compile_regex(None)`` once matched the text ``None``."""
    from moonmaskc.errors import SourceError

    with pytest.raises(SourceError, match="must be text"):
        moonmaskc.compile_regex(source, tokenizer=None)
    with pytest.raises(SourceError, match="must be text"):
        moonmaskc.compile_gbnf(source, tokenizer=None)


@pytest.mark.parametrize("option", ["start", "whitespace", "eos"])
@pytest.mark.parametrize("value", [1, ["root"], b"root"])
def test_a_text_option_of_another_type_names_itself(option: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"{option} must be a string"):
        moonmaskc.compile_gbnf('root ::= "a"', tokenizer=None, **{option: value})


@pytest.mark.parametrize("text", [None, 1, ["ab"], "\ud800b", "a\udcffb"])
def test_matching_a_text_that_is_not_text_is_a_runtime_input_error(text: Any) -> None:
    from moonmaskc.errors import RuntimeInputError

    artifact = moonmaskc.compile_regex("ab", tokenizer=None)
    with pytest.raises(RuntimeInputError):
        artifact.match(text)
    assert artifact.match(b"ab").accepted and artifact.match(bytearray(b"ab")).accepted
    assert artifact.match("ab").accepted and not artifact.match("a").accepted
