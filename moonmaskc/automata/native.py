"""Which core runs the hot loops: the compiled native core or the pure-Python reference.

Takes: the environment (``MOONMASKC_PURE=1`` forces the pure path) and whether the Cython
extensions in ``moonmaskc/automata/_native`` were built at install. Hands on: ``native(name)``,
the compiled module ``name`` or ``None`` when the pure path is to run, and ``core_name()`` for
``--version``, ``inspect`` and the artifact's metadata.

The environment is read at every call, so a test or a user can switch cores within one process.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from types import ModuleType

NATIVE_MODULES = ("determinize", "minimize", "product", "token_walk")
PURE_ENV = "MOONMASKC_PURE"


def pure_forced() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


@cache
def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"moonmaskc.automata._native.{name}")
    except ImportError:
        return None


def native(name: str) -> ModuleType | None:
    """The compiled module ``name`` of the native core, or ``None`` (pure path forced or not built)."""
    if pure_forced():
        return None
    return _import(name)


def native_built() -> bool:
    """Whether every native module was built at install."""
    return all(_import(name) is not None for name in NATIVE_MODULES)


def core_name() -> str:
    """``native`` or ``pure``, with the reason for ``pure``."""
    if pure_forced():
        return f"pure ({PURE_ENV}=1)"
    if not native_built():
        missing = [name for name in NATIVE_MODULES if _import(name) is None]
        return f"pure (native core not built: {', '.join(missing)} missing)"
    return "native"
