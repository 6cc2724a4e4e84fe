"""Which core runs the hot loops: the compiled native core or the pure-Python reference.

Takes: the environment (``MOONMASKC_PURE=1`` forces the pure path) and whether the Cython
extensions in ``moonmaskc/automata/_native`` were built at install. Hands on: ``native(name)``,
the compiled module ``name`` or ``None`` when the pure path is to run, and ``core_name()`` for
the artifact's metadata and ``inspect``, ``core_description()`` for ``--version``.

The environment is read at every call outside a compile, so a test or a user can switch cores
within one process; a compile (``CoreFixed``) reads it once, at its start.
"""

from __future__ import annotations

import importlib
import os
from contextvars import ContextVar
from functools import cache
from types import ModuleType

NATIVE_MODULES = (
    "flatten",
    "thompson",
    "estimate",
    "determinize",
    "minimize",
    "product",
    "token_walk",
    "fill",
    "nests",
    "excluded",
    "printer",
)
PURE_ENV = "MOONMASKC_PURE"


_PURE_IN_BLOCK: ContextVar[bool | None] = ContextVar("moonmaskc_pure_in_block", default=None)


def pure_forced() -> bool:
    """Whether ``MOONMASKC_PURE`` forces the pure core: as read at the start of the enclosing
    ``CoreFixed`` block on this thread, else as the environment says now."""
    fixed = _PURE_IN_BLOCK.get()
    if fixed is not None:
        return fixed
    return _environment_pure()


def _environment_pure() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


class CoreFixed:
    """A block (a compile, a link) within which the core is the one the environment names at its
    start: one compile runs on one core, and reads the environment once instead of at each of
    its stages (a read costs about a microsecond; a small regex's compile has a dozen)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _PURE_IN_BLOCK.set(_environment_pure())

    def __exit__(self, *exception: object) -> None:
        _PURE_IN_BLOCK.reset(self._token)


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
    """``native`` when every native module runs, else ``pure``."""
    return "pure" if pure_forced() or not native_built() else "native"


def core_description() -> str:
    """The core that runs, with the reason when it is the pure one (for ``--version``)."""
    if pure_forced():
        return f"pure-Python core ({PURE_ENV}=1)"
    missing = [name for name in NATIVE_MODULES if _import(name) is None]
    if missing:
        return (
            f"pure-Python core: the native core was not built ({', '.join(missing)} missing); "
            "reinstall with a C compiler for the faster one"
        )
    return "native core"
