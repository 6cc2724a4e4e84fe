"""Build of the native core (Cython, optional): everything else is in pyproject.toml.

The extensions in ``moonmaskc/automata/_native/*.pyx`` are compiled with the machine's C compiler.
When that fails (no compiler, no Python headers), the install goes on without them and says so:
the pure-Python core is the fallback. ``MOONMASKC_NATIVE_CHECKED=1`` builds them with Cython's
bounds and wraparound checks on (CI runs the differential tests against that build too);
``MOONMASKC_REQUIRE_NATIVE=1`` turns a failed build into an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NATIVE_DIR = Path("moonmaskc") / "automata" / "_native"
CHECKED = os.environ.get("MOONMASKC_NATIVE_CHECKED") == "1"
REQUIRED = os.environ.get("MOONMASKC_REQUIRE_NATIVE") == "1"


def native_extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("moonmaskc: Cython is not available; installing the pure-Python core only", file=sys.stderr)
        return []
    modules = [
        Extension(
            f"moonmaskc.automata._native.{path.stem}",
            [str(path)],
            extra_compile_args=["-O2"] if os.name != "nt" else [],
        )
        for path in sorted(NATIVE_DIR.glob("*.pyx"))
    ]
    return cythonize(
        modules,
        language_level=3,
        compiler_directives={
            "boundscheck": CHECKED,
            "wraparound": CHECKED,
            "initializedcheck": CHECKED,
            "cdivision": not CHECKED,
        },
        build_dir=str(Path("build") / ("cython-checked" if CHECKED else "cython")),
    )


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing: the package works without its native core."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:
            self._give_up(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        if REQUIRED:
            raise error
        print(
            f"moonmaskc: the native core could not be built ({error}); the pure-Python core will be "
            "used (slower, same results). Install a C compiler and the Python headers, then reinstall.",
            file=sys.stderr,
        )


setup(ext_modules=native_extensions(), cmdclass={"build_ext": OptionalBuildExt})
