"""Hostile but realistic inputs to the front ends and the CLI (issue 18): deep nesting, nested
counted repetitions, lone surrogates and undecodable bytes, paths and signals, unclear messages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from moonmaskc import ir
from moonmaskc.automata.work import estimate
from moonmaskc.cli import main
from moonmaskc.errors import LimitError
from moonmaskc.frontends import gbnf, regex
from moonmaskc.frontends.schema.compiler import compile_schema_ir
from moonmaskc.limits import Limits
from moonmaskc.pipeline import compile_source, make_options
from moonmaskc.sampling import python_pattern, python_patterns

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def run(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(main, list(args))


def assert_clean_error(result: Result, *fragments: str) -> None:
    """Exit status 2, one message, no traceback, and every fragment in the message."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)


def compile_file(runner: CliRunner, path: Path, *extra: str) -> Result:
    return run(
        runner, "compile", str(path), "-o", str(path.with_suffix(".npz")), "--tokenizer", "none", *extra
    )


# -- no recursion on user-controlled depth ------------------------------------------------------


def deep_ir(levels: int) -> ir.Node:
    """``(?:b(?:b(?:...a)*)*)*``: one Repeat and one Seq per level, built without the smart
    constructors' normalisation getting in the way."""
    node: ir.Node = ir.ByteSet(1 << ord("a"))
    for _ in range(levels):
        node = ir.Repeat(ir.Seq((ir.ByteSet(1 << ord("b")), node)), 0, None)
    return node


def test_ir_printing_sizing_nullable_and_equality_are_iterative() -> None:
    first, second = deep_ir(20_000), deep_ir(20_000)
    printed = ir.to_regex(first)
    assert printed.startswith("(?:b" * 3) and printed.endswith(")*" * 3)
    assert ir.size(first) == 2 * 20_000 + 20_000 + 1
    assert ir.nullable(first)
    assert first == second and hash(first) == hash(second)
    assert first != deep_ir(19_999)
    assert ir.describe(first)["size"] == ir.size(first)


def test_flat_object_with_200_optional_properties_compiles_and_inspects(
    runner: CliRunner, tmp_path: Path
) -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(200)}}
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(schema))
    result = compile_file(runner, path)
    assert result.exit_code == 0, result.output
    inspected = run(runner, "inspect", str(path.with_suffix(".npz")), "--json")
    assert inspected.exit_code == 0, inspected.output


def nested_arrays(levels: int) -> dict[str, object]:
    schema: dict[str, object] = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def test_200_nested_arrays_compile() -> None:
    artifact = compile_source("schema", nested_arrays(200), make_options(tokenizer=None))
    assert artifact.match("[" * 200 + "1" + "]" * 200).accepted


def test_nesting_past_max_nesting_names_the_flag_and_raising_it_helps(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"type": "array", "items": ' * 1200 + '{"type": "integer"}' + "}" * 1200)
    assert_clean_error(compile_file(runner, path), "max_nesting = 1000", "--max-nesting")
    result = compile_file(runner, path, "--max-nesting", "1300")
    assert result.exit_code == 0, result.output


def test_chain_of_1000_refs_compiles() -> None:
    defs: dict[str, object] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(1000)}
    defs["d1000"] = {"type": "integer", "minimum": 3}
    result = compile_schema_ir({"$ref": "#/$defs/d0", "$defs": defs})
    assert ir.to_regex(result.node)
    artifact = compile_source("schema", {"$ref": "#/$defs/d0", "$defs": defs}, make_options(tokenizer=None))
    assert artifact.match("3").accepted and not artifact.match("2").accepted


def test_chain_of_refs_through_schemas_is_bounded_by_max_nesting() -> None:
    defs: dict[str, object] = {
        f"d{i}": {"type": "array", "items": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(1500)
    }
    defs["d1500"] = {"type": "null"}
    with pytest.raises(LimitError, match="--max-nesting"):
        compile_schema_ir({"$ref": "#/$defs/d0", "$defs": defs})


def test_300_rule_gbnf_chain_compiles() -> None:
    lines = ["root ::= r0", *(f'r{i} ::= "a" r{i + 1}' for i in range(300)), 'r300 ::= "b"']
    result = gbnf.parse("\n".join(lines) + "\n")
    artifact = compile_source("gbnf", "\n".join(lines) + "\n", make_options(tokenizer=None))
    assert artifact.match("a" * 300 + "b").accepted
    assert ir.size(result.node) > 300


def test_deeply_nested_regex_groups_compile_within_max_nesting() -> None:
    pattern = "(?:a" * 900 + "b" + ")*" * 900
    artifact = compile_source("regex", pattern, make_options(tokenizer=None))
    assert artifact.match("a").accepted and artifact.match("a" * 900 + "b").accepted
    assert not artifact.match("ab").accepted


def test_recursion_error_is_never_reported_as_max_depth(runner: CliRunner, tmp_path: Path) -> None:
    from moonmaskc.cli.console import errors_as_exit

    with pytest.raises(SystemExit), errors_as_exit():
        raise RecursionError("maximum recursion depth exceeded")
    # and through the pipeline: the deepest inputs hit --max-nesting, never Python's limit
    path = tmp_path / "deep.gbnf"
    path.write_text("root ::= " + "(" * 1500 + '"a"' + ")" * 1500 + "\n")
    result = compile_file(runner, path)
    assert "--max-depth" not in result.output
    assert result.exit_code == 0 or "--max-nesting" in result.output, result.output


# -- a real bound on work -------------------------------------------------------------------------


def test_nested_counted_repetition_regex_fails_fast_naming_max_work(
    runner: CliRunner, tmp_path: Path
) -> None:
    started = time.perf_counter()
    result = run(
        runner,
        "compile",
        "--regex",
        "(a{1,100}){1,100}",
        "-o",
        str(tmp_path / "o.npz"),
        "--tokenizer",
        "none",
    )
    elapsed = time.perf_counter() - started
    assert_clean_error(result, "max_work", "--max-work")
    assert elapsed < 1.0, elapsed
    assert not (tmp_path / "o.npz").exists()


def test_nested_counted_repetition_gbnf_fails_fast_naming_max_work(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "nested.gbnf"
    path.write_text('root ::= ("a"{1,100}){1,100}\n')
    started = time.perf_counter()
    result = compile_file(runner, path)
    assert_clean_error(result, "max_work", "--max-work")
    assert time.perf_counter() - started < 1.0


def test_nested_counted_repetition_in_a_schema_pattern_fails_fast() -> None:
    started = time.perf_counter()
    with pytest.raises(LimitError, match="max_work"):
        compile_schema_ir({"type": "string", "pattern": "^(a{1,100}){1,100}$"})
    assert time.perf_counter() - started < 1.0


def test_raising_max_work_lets_a_nested_repetition_through(runner: CliRunner, tmp_path: Path) -> None:
    out = str(tmp_path / "o.npz")
    assert_clean_error(
        run(runner, "compile", "--regex", "(a{1,70}){1,70}", "-o", out, "--tokenizer", "none"), "--max-work"
    )
    result = run(
        runner,
        "compile",
        "--regex",
        "(a{1,70}){1,70}",
        "-o",
        out,
        "--tokenizer",
        "none",
        "--max-work",
        "100000000",
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "pattern",
    [
        r"[a-z]{1,50000}",
        r".{0,20000}",
        r"(ab?){1,5000}",
        r"(a{5}){1000}",
        r"(\d{1,3}\.){3}\d{1,3}",
        r"(a*b){1,1000}",
    ],
)
def test_work_estimate_stays_linear_where_copies_have_clear_boundaries(pattern: str) -> None:
    assert estimate(regex.parse(pattern).node, Limits()).work <= 1_000_000


def test_array_of_bounded_strings_stays_under_the_work_bound() -> None:
    schema = {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 50}}
    artifact = compile_source("schema", schema, make_options(tokenizer=None))
    assert artifact.match('["ab","c"]').accepted


# -- front-end inputs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"const": "\ud800"},
        {"enum": ["ok", "x\udfff"]},
        {"type": "object", "properties": {"\ud800": {"type": "integer"}}, "required": ["\ud800"]},
    ],
    ids=["const", "enum", "property-name"],
)
def test_lone_surrogates_in_schema_values_are_a_clear_error(
    runner: CliRunner, tmp_path: Path, schema: dict[str, object]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema))  # ensure_ascii: the file holds a \\ud800 escape
    assert_clean_error(compile_file(runner, path), "lone surrogate")


def test_lone_surrogate_in_a_description_compiles_and_inspects(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"type": "integer", "description": "bad \ud800 text"}))
    result = compile_file(runner, path)
    assert result.exit_code == 0, result.output
    for extra in ((), ("--json",), ("--full",)):
        inspected = run(runner, "inspect", str(path.with_suffix(".npz")), *extra)
        assert inspected.exit_code == 0, inspected.output


def test_match_with_undecodable_argument_is_a_clear_error(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    assert run(runner, "compile", "--regex", "[a-z]+", "-o", str(out)).exit_code == 0
    assert_clean_error(run(runner, "match", str(out), "ab\udcffc"), "not UTF-8", "0xFF")
    assert_clean_error(run(runner, "match", str(out), "ab\ud800"), "lone surrogate")


def test_match_with_non_utf8_argv_in_a_real_process(tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    assert run(CliRunner(), "compile", "--regex", "[a-z]+", "-o", str(out)).exit_code == 0
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from moonmaskc.cli import main; main()",
            "match",
            os.fsencode(out),
            b"ab\xffc",
        ],
        capture_output=True,
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert done.returncode == 2, done.stderr
    assert b"Traceback" not in done.stderr and b"0xFF" in done.stderr


def test_raw_ff_byte_in_regex_is_not_called_a_surrogate(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "compile", "--regex", "a\udcffb", "-o", str(tmp_path / "o.npz"))
    assert_clean_error(result, "0xFF", "not UTF-8")
    assert "surrogate" not in result.output
    with pytest.raises(Exception, match="byte 0xFF in the pattern is not UTF-8") as caught:
        regex.parse("a\udcffb")
    assert "surrogate" not in str(caught.value)


def test_escaped_surrogate_in_regex_is_still_named_a_surrogate() -> None:
    with pytest.raises(Exception, match="surrogate code point U\\+D800"):
        regex.parse(r"\ud800")


@pytest.mark.parametrize(
    ("pattern", "translated"),
    [
        ("(?<year>\\d{4})-(?<m>\\d\\d)", "(?P<year>\\d{4})-(?P<m>\\d\\d)"),
        ("\\(?<a>x", "\\(?<a>x"),
        ("(?P<a>x)", "(?P<a>x)"),
    ],
)
def test_named_groups_are_translated_for_the_checker(pattern: str, translated: str) -> None:
    assert python_pattern(pattern) == translated


def test_python_patterns_leaves_data_alone() -> None:
    schema = {
        "properties": {"pattern": {"type": "string", "pattern": "(?<a>x)"}},
        "patternProperties": {"^(?<k>a)": {"const": {"pattern": "(?<keep>x)"}}},
    }
    assert python_patterns(schema) == {
        "properties": {"pattern": {"type": "string", "pattern": "(?P<a>x)"}},
        "patternProperties": {"^(?P<k>a)": {"const": {"pattern": "(?<keep>x)"}}},
    }


def test_sample_checks_a_schema_with_named_groups(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "named.json"
    path.write_text(json.dumps({"type": "string", "pattern": "^(?<year>[0-9]{4})$"}))
    assert run(runner, "compile", str(path), "-o", str(tmp_path / "named.npz")).exit_code == 0
    result = run(runner, "sample", str(tmp_path / "named.npz"), "-n", "5", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["masked"]["valid"] == 5


# -- paths and signals ----------------------------------------------------------------------------


def test_output_that_is_the_source_is_refused_before_any_work(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "u.json"
    text = json.dumps({"type": "integer"})
    source.write_text(text)
    (tmp_path / "link.json").symlink_to(source)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    for output in ("u.json", "./u.json", str(source), "link.json", "sub/../u.json"):
        result = run(runner, "compile", "u.json", "-o", output)
        assert_clean_error(result, "is the source file", "overwrite")
        assert source.read_text() == text
    result = run(runner, "compile", "link.json", "-o", "u.json")
    assert_clean_error(result, "is the source file")
    assert source.read_text() == text


SIGTERM_DURING_SAVE = """
import os, signal, sys
real_replace = os.replace
def replace_after_sigterm(source, target):
    # the save has written its temporary file and is about to rename it: SIGTERM now
    print("temporary:", sorted(os.listdir(os.path.dirname(os.fspath(source)))), file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    real_replace(source, target)
os.replace = replace_after_sigterm
from moonmaskc.cli import main
main(sys.argv[1:])
"""


def test_sigterm_during_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "o.npz"
    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_DURING_SAVE, "compile", "--regex", "[a-z]+", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert "Traceback" not in done.stderr
    assert ".o.npz." in done.stderr.split("temporary:")[1]  # the signal came while it existed
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_sigterm_handler_is_restored_after_a_command(runner: CliRunner, tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    assert run(runner, "compile", "--regex", "a", "-o", str(tmp_path / "o.npz")).exit_code == 0
    assert signal.getsignal(signal.SIGTERM) is before


# -- messages -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"), [('"hello"', "string"), ("[1, 2]", "array"), ("3", "number"), ("null", "null")]
)
def test_schema_file_that_is_json_but_not_a_schema(
    runner: CliRunner, tmp_path: Path, text: str, kind: str
) -> None:
    path = tmp_path / "hello.json"
    path.write_text(text)
    result = compile_file(runner, path)
    assert_clean_error(result, str(path), f"holds a JSON {kind}, not a JSON Schema")
    assert "Expecting value" not in result.output


@pytest.mark.parametrize(
    ("text", "says"),
    [('{"a": 1}', "without a 'model' section"), ("[1, 2]", "holds no JSON object"), ("xx", "not JSON text")],
)
def test_tokenizer_file_that_is_not_a_tokenizer(
    runner: CliRunner, tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "some.json"
    path.write_text(text)
    result = run(runner, "compile", "--regex", "a", "-o", str(tmp_path / "o.npz"), "--tokenizer", str(path))
    assert_clean_error(result, str(path), says, "not a tokenizer")
    assert "line 1 column" not in result.output


def test_relinking_an_artifact_in_place_is_allowed(tmp_path: Path) -> None:
    """An artifact is read whole before the new one is renamed over it, so ``compile a.npz -o
    a.npz --tokenizer ...`` (relinking in place) is safe and allowed."""
    from moonmaskc.artifact import Artifact

    runner = CliRunner()
    path = tmp_path / "a.npz"
    assert runner.invoke(main, ["compile", "--regex", "[a-c]+", "-o", str(path)]).exit_code == 0
    result = runner.invoke(main, ["compile", str(path), "--tokenizer", "bytes", "-o", str(path)])
    assert result.exit_code == 0, result.output
    assert Artifact.load(path).match("abc").accepted
