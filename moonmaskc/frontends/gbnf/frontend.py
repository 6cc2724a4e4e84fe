"""The GBNF front end: llama.cpp grammars into the shared byte IR.

Takes: GBNF text (llama.cpp's dialect, see docs/gbnf.md), the start rule name, ``Limits`` and
``max_depth`` (None refuses recursion; N unrolls recursive rules to depth N).
Hands on: a ``FrontendResult`` whose node accepts exactly the UTF-8 encodings of the strings the
start rule derives (for recursive grammars: those derivable within depth N), and whose notes tell
``inspect`` the start rule, rule counts, recursive rules and the depth applied.

Stages: ``parser`` (text to checked syntax tree, ``tree``) then ``expand`` (tree to IR).
"""

from __future__ import annotations

from moonmaskc import ir
from moonmaskc.errors import SourceError
from moonmaskc.frontends import FrontendResult
from moonmaskc.frontends.deep import run_deep
from moonmaskc.frontends.gbnf.expand import expand
from moonmaskc.frontends.gbnf.parser import parse_grammar
from moonmaskc.frontends.gbnf.tree import Grammar
from moonmaskc.limits import Limits

DEFAULT_START = "root"
DEFAULT_LIMITS = Limits()


def parse_ast(text: str) -> Grammar:
    """Only the syntax tree (checked: no duplicate or undefined rules)."""
    return parse_grammar(text)


def parse(
    text: str, start: str = DEFAULT_START, limits: Limits = DEFAULT_LIMITS, max_depth: int | None = None
) -> FrontendResult:
    """Compile GBNF ``text`` from rule ``start`` into the byte IR (see the module docstring)."""
    grammar = parse_grammar(text)
    if start not in grammar.rules:
        defined = ", ".join(f"`{name}`" for name in list(grammar.rules)[:10])
        raise SourceError(f"no start rule `{start}` in the grammar (rules defined: {defined})", text, 0)
    expansion = run_deep(lambda: expand(grammar, start, limits, max_depth), limits)
    notes = {
        "start": start,
        "rules": len(grammar.rules),
        "reachable_rules": len(expansion.reachable_rules),
        "recursive_rules": expansion.recursive_rules,
        "max_depth": max_depth if expansion.recursive_rules else None,
        "depth_exhausted": expansion.depth_exhausted,
        "embedded_rules": expansion.embedded_rules,
    }
    warnings = [
        f"rule `{name}` (line {text.count(chr(10), 0, grammar.rules[name].position) + 1}) "
        f"is not reachable from `{start}` and is not compiled"
        for name in expansion.unreachable_rules
    ]
    if expansion.node == ir.NOTHING:
        warnings.append(
            f"rule `{start}` matches no string"
            + (f" within max_depth={max_depth}" if expansion.depth_exhausted else "")
        )
    return FrontendResult(expansion.node, notes, warnings)
