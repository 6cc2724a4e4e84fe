"""The front ends' layout: each kind imports only its own front end, and the two meanings of
``--max-depth`` (GBNF unrolling, the schema's ``$ref`` depth) keep their option name."""

from __future__ import annotations

import subprocess
import sys

from moonmaskc.pipeline import FRONTENDS, KINDS, make_options


def test_every_kind_has_a_front_end() -> None:
    assert set(FRONTENDS) == set(KINDS)


def test_regex_and_gbnf_do_not_import_the_schema_compiler() -> None:
    script = (
        "import sys, moonmaskc\n"
        "moonmaskc.compile_regex('a+b', tokenizer=None)\n"
        'moonmaskc.compile_gbnf(\'root ::= "x" root | "y"\', max_depth=2, tokenizer=None)\n'
        "print(sorted(m for m in sys.modules if m.startswith('moonmaskc.frontends.schema')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_max_depth_sets_both_depths_under_their_own_names() -> None:
    options = make_options(max_depth=5)
    assert options.unroll_depth == 5 and options.ref_depth == 5 and options.max_depth == 5
    assert options.describe("gbnf")["max_depth"] == 5 and options.describe("schema")["max_depth"] == 5
    default = make_options()
    assert default.unroll_depth is None and default.ref_depth == 3
    assert default.describe("gbnf")["max_depth"] is None and default.describe("schema")["max_depth"] == 3
