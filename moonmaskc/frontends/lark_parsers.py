"""Lark LALR parsers over the package's grammar files, their analysis kept on disk between runs.

Takes: a grammar file name (``moonmaskc/grammars``, through ``grammar_files``) and Lark's options.
Hands on: ``lalr_parser``, a ``Lark`` object. Building an LALR parser analyses the grammar (the
regex grammar: 130 ms, the GBNF one: 170 ms, paid by the first compile of a process); Lark's own
cache keeps that analysis in a file and reads it back in about 2 ms. The file lives in moonmaskc's
cache folder (``moonmaskc.cache.cache_dir``, ``$MOONMASKC_CACHE``), one per grammar. Lark names a
digest of the grammar text, the options, its own version and Python's inside the file and rebuilds
(then rewrites the file) when they differ, so an edited grammar is never parsed with an old table.

The file is a pickle, which loading would run: it is used only in a folder that belongs to the
user and that no one else may write (not group- or world-writable); elsewhere, and when the folder
cannot be made, the parser is built without a file. A file that cannot be written or read costs
only the time Lark's analysis takes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from lark import Lark

from moonmaskc.cache import cache_dir
from moonmaskc.frontends.grammar_files import grammar_text

CACHE_FILE_PREFIX = "lark-lalr"


def lalr_parser(grammar_name: str, **options: Any) -> Lark:
    """``Lark(grammar_text(grammar_name), parser="lalr", **options)``, its analysis cached on disk
    where that is safe (see the module docstring)."""
    folder = private_cache_folder()
    if folder is not None:
        options["cache"] = str(folder / f"{CACHE_FILE_PREFIX}-{Path(grammar_name).stem}.pickle")
    return Lark(grammar_text(grammar_name), parser="lalr", **options)


def private_cache_folder() -> Path | None:
    """The cache folder, made if needed, when only its owner (this user) may write to it; else None."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        status = folder.stat()
    except OSError:
        return None
    if not stat.S_ISDIR(status.st_mode):
        return None
    if hasattr(os, "getuid") and status.st_uid != os.getuid():
        return None
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return folder
