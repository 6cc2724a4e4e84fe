"""The front ends' Lark parsers (``frontends.lark_parsers.lalr_parser``): the grammar analysis kept
in a file of a private cache folder and read back, the same parses as a parser built afresh, a
damaged file rebuilt, and no file in a folder that others may write."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from moonmaskc import ir
from moonmaskc.frontends import lark_parsers
from moonmaskc.frontends.gbnf.parser import _NewlinePostlexer, parse_grammar
from moonmaskc.frontends.regex import parse
from moonmaskc.frontends.regex.builder import IRBuilder
from moonmaskc.frontends.regex.context import PARSE_CONTEXT, ParseContext
from moonmaskc.frontends.regex.flavors import flavor_named
from moonmaskc.frontends.regex.lexer import RegexLexer
from moonmaskc.limits import Limits

PATTERNS = [
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}",
    r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
    r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)",
    r"(?P<year>\d{4})-\d\d|x{2,}?",
]


def regex_parser_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setenv("MOONMASKC_CACHE", str(folder))
    return lark_parsers.lalr_parser(
        "regex.lark",
        lexer=RegexLexer,
        transformer=IRBuilder(),
        keep_all_tokens=True,
        maybe_placeholders=False,
    )


def parsed_with(parser: object, pattern: str) -> str:
    context = ParseContext(pattern, Limits(), flavor_named("python"), [], None)
    reset = PARSE_CONTEXT.set(context)
    try:
        branches = parser.parse(pattern)  # type: ignore[attr-defined]
    finally:
        PARSE_CONTEXT.reset(reset)
    return ir.to_regex(ir.alt(*(branch.node for branch in branches)))


def test_the_analysis_is_kept_in_a_private_folder_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    started = time.perf_counter()
    fresh = regex_parser_in(folder, monkeypatch)
    built = time.perf_counter() - started
    kept = folder / f"{lark_parsers.CACHE_FILE_PREFIX}-regex.pickle"
    assert kept.is_file()
    assert not stat.S_IMODE(folder.stat().st_mode) & (stat.S_IWGRP | stat.S_IWOTH)
    started = time.perf_counter()
    loaded = regex_parser_in(folder, monkeypatch)
    assert time.perf_counter() - started < built  # read back, not analysed again
    for pattern in PATTERNS:
        assert parsed_with(loaded, pattern) == parsed_with(fresh, pattern) == ir.to_regex(parse(pattern).node)


def test_a_damaged_file_is_rebuilt_and_gbnf_parses_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    regex_parser_in(folder, monkeypatch)
    kept = folder / f"{lark_parsers.CACHE_FILE_PREFIX}-regex.pickle"
    kept.write_bytes(b"not a pickle\n\x80\x04garbage")
    rebuilt = regex_parser_in(folder, monkeypatch)
    assert parsed_with(rebuilt, PATTERNS[0]) == ir.to_regex(parse(PATTERNS[0]).node)
    assert kept.read_bytes() != b"not a pickle\n\x80\x04garbage"  # written again
    grammar = 'root ::= "a" [b-d]* item\nitem ::= ("x" |\n "y")+\n'

    def gbnf_parser() -> object:
        return lark_parsers.lalr_parser(
            "gbnf.lark",
            lexer="contextual",
            postlex=_NewlinePostlexer(),
            propagate_positions=True,
            maybe_placeholders=False,
        )

    first, second = gbnf_parser(), gbnf_parser()  # built, then read back
    assert (folder / f"{lark_parsers.CACHE_FILE_PREFIX}-gbnf.pickle").is_file()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("MOONMASKC_CACHE", str(shared))
    uncached = gbnf_parser()
    trees = [parser.parse(grammar) for parser in (first, second, uncached)]  # type: ignore[attr-defined]
    assert trees[0] == trees[1] == trees[2]
    assert sorted(parse_grammar(grammar).rules) == ["item", "root"]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="folder owners are POSIX")
def test_no_file_in_a_folder_that_others_may_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    parser = regex_parser_in(shared, monkeypatch)
    assert list(shared.iterdir()) == []
    assert parsed_with(parser, PATTERNS[1]) == ir.to_regex(parse(PATTERNS[1]).node)
    monkeypatch.setenv("MOONMASKC_CACHE", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("not a folder")
    assert lark_parsers.private_cache_folder() is None
