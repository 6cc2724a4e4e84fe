"""The GBNF front end: llama.cpp grammars into the shared byte IR.

Takes: GBNF text, the start rule name, ``Limits`` and the unrolling depth of recursive rules
(``max_depth``: None refuses recursion, N unrolls to depth N).
Hands on: a ``FrontendResult`` (``parse``) or only the checked syntax tree (``parse_ast``).

Modules: ``parser`` (text to syntax tree), ``tree`` (the syntax tree), ``expand`` (tree to IR,
recursion policy), ``frontend`` (the two entry points and their notes).
"""

from moonmaskc.frontends.gbnf.frontend import DEFAULT_LIMITS, DEFAULT_START, parse, parse_ast

__all__ = ["DEFAULT_LIMITS", "DEFAULT_START", "parse", "parse_ast"]
