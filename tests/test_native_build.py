"""The native core is optional: a build without a C compiler installs the pure core and says so,
``MOONMASKC_PURE=1`` forces the pure core, and the core in use is named."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import moonmaskc
from moonmaskc.automata import native
from tests.conftest import PROJECT_ROOT


def test_pure_is_forced_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.PURE_ENV, "1")
    assert native.native("minimize") is None
    assert native.core_name() == "pure"
    assert "MOONMASKC_PURE=1" in native.core_description()
    assert moonmaskc.compile_regex("a+b").metadata["core"] == "pure"


def test_a_compile_reads_the_core_once_at_its_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within ``CoreFixed`` (a compile, a link) the core is the one named at the block's start,
    whatever the environment says later in it; outside, every call reads the environment."""
    if native.native("minimize") is None:
        pytest.skip("the native core is not built (or MOONMASKC_PURE is set)")
    seen: list[bool] = []
    original = moonmaskc.pipeline.run_frontend

    def switching_frontend(*args: object, **kwargs: object) -> object:
        monkeypatch.setenv(native.PURE_ENV, "1")  # mid-compile: not this compile's core
        seen.append(native.pure_forced())
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(moonmaskc.pipeline, "run_frontend", switching_frontend)
    artifact = moonmaskc.compile_regex("a+b", tokenizer=None)
    assert seen == [False] and artifact.metadata["core"] == "native"
    assert native.pure_forced() and native.native("minimize") is None  # after it: the environment
    with native.CoreFixed():
        monkeypatch.delenv(native.PURE_ENV)
        assert native.pure_forced()
        with native.CoreFixed():  # a nested block reads the environment again, and gives it back
            assert not native.pure_forced()
        assert native.pure_forced()
    assert not native.pure_forced()


def test_a_missing_native_module_falls_back_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    monkeypatch.setattr(native, "_import", lambda name: None)
    assert native.native("determinize") is None
    assert native.core_name() == "pure"
    assert "not built" in native.core_description()
    artifact = moonmaskc.compile_regex(r"\d{4}-\d{2}")
    assert artifact.match("2024-01").accepted and artifact.metadata["core"] == "pure"


@pytest.mark.slow
def test_a_build_without_a_compiler_installs_the_pure_core(tmp_path: Path) -> None:
    """``setup.py build_ext`` with a C compiler that always fails: the build succeeds, warns, and
    leaves no extension behind; the package in that copy imports and runs on the pure core."""
    pytest.importorskip("Cython")
    copy = tmp_path / "checkout"
    copy.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(PROJECT_ROOT / name, copy / name)
    shutil.copytree(
        PROJECT_ROOT / "moonmaskc",
        copy / "moonmaskc",
        ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"),
    )
    environment = {**os.environ, "CC": "false", "LDSHARED": "false"}
    environment.pop("MOONMASKC_REQUIRE_NATIVE", None)
    build = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=copy,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    assert "the pure-Python core will be used" in build.stderr
    assert not list((copy / "moonmaskc").rglob("*.so"))
    run = subprocess.run(
        [sys.executable, "-c", "from moonmaskc.cli import main; main()", "--version"],
        cwd=copy,
        env={**environment, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "native core was not built" in run.stdout
