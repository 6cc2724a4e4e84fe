"""Locates the Lark grammar files that the front ends load.

Takes: a grammar file name such as ``regex.lark``. Hands on: its text, from ``moonmaskc/grammars/``
(package data, in a checkout and in an installed wheel alike).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_SEARCH = (_PACKAGE_DIR / "grammars",)


@cache
def grammar_text(name: str) -> str:
    for folder in _SEARCH:
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"grammar file {name} not found in {', '.join(map(str, _SEARCH))}")
