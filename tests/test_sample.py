"""The sampling experiment (``moonmaskc sample``): masked monkey output is always valid, unmasked
random tokens never are, on the example schemas with the real GPT-2 vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from moonmaskc import compile_regex, compile_schema
from moonmaskc.cli import main
from moonmaskc.sampling import run_experiment
from tests.conftest import PROJECT_ROOT, data_path


@pytest.mark.parametrize("name", ["user", "order", "tool_call"])
def test_masked_always_valid_unmasked_never_with_gpt2(name: str, tmp_path: Path) -> None:
    tokenizer = data_path("tokenizers", "gpt2.json")
    schema = json.loads((PROJECT_ROOT / "examples" / "schemas" / f"{name}.json").read_text(encoding="utf-8"))
    path = compile_schema(schema, tokenizer=str(tokenizer)).save(tmp_path / f"{name}.npz")
    result = CliRunner().invoke(main, ["sample", str(path), "-n", "100", "--seed", "42", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["masked"]["valid"] == 100 and report["masked"]["finished"] == 100
    assert report["unmasked"]["valid"] == 0
    for sample in report["masked"]["samples"]:
        assert sample["tokens"][-1] == 50256 and sample["valid"]
        json.loads(sample["text"])
    for sample in report["unmasked"]["samples"]:
        assert len(sample["tokens"]) <= 64


def test_regex_artifacts_are_checked_with_the_dfa() -> None:
    artifact = compile_regex(r"[0-9]{3}-[a-z]{2,5}")
    reports = run_experiment(artifact, count=30, seed=1, max_tokens=16)
    assert reports["masked"].valid == 30
    assert all(artifact.match(sample.text).accepted for sample in reports["masked"].samples)
    assert reports["unmasked"].valid < 30


def test_sample_table_and_error_without_table(tmp_path: Path) -> None:
    runner = CliRunner()
    path = compile_regex("ab+").save(tmp_path / "ab.npz")
    result = runner.invoke(main, ["sample", str(path), "-n", "5"])
    assert result.exit_code == 0 and "masked" in result.output and "5/5" in result.output
    bare = compile_regex("ab+", tokenizer=None).save(tmp_path / "bare.npz")
    result = runner.invoke(main, ["sample", str(bare)])
    assert result.exit_code == 2 and "no token table" in result.output
