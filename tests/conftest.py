"""Shared test fixtures: where the real data lives (``MOONMASKC_DATA``, default ``../shared/data``),
and two saved artifacts (bytes vocabulary, GPT-2) that the artifact and next-table tests read."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """The shared data folder: ``$MOONMASKC_DATA`` or ``<project>/../shared/data``."""
    return Path(os.environ.get("MOONMASKC_DATA", PROJECT_ROOT.parent / "shared" / "data")).resolve()


def data_path(*parts: str) -> Path:
    """A path inside the data folder; skips the calling test when it is absent."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: set MOONMASKC_DATA to the shared data folder (../shared/data)")
    return path


ARTIFACT_PATTERN = r"\{\"id\":[1-9]\d{0,3},\"tags\":\[(\"[a-z ]{1,8}\"(,\"[a-z ]{1,8}\")*)?\]\}"


@pytest.fixture(scope="module")
def bytes_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ARTIFACT_PATTERN`` compiled for the built-in bytes vocabulary and saved."""
    import moonmaskc

    return moonmaskc.compile_regex(ARTIFACT_PATTERN).save(tmp_path_factory.mktemp("a") / "bytes.npz")


@pytest.fixture(scope="module")
def gpt2_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``examples/schemas/user.json`` compiled with the GPT-2 table and saved."""
    import json

    import moonmaskc

    schema = json.loads((PROJECT_ROOT / "examples" / "schemas" / "user.json").read_text(encoding="utf-8"))
    tokenizer = str(data_path("tokenizers", "gpt2.json"))
    artifact = moonmaskc.compile_schema(schema, tokenizer=tokenizer)
    return artifact.save(tmp_path_factory.mktemp("g") / "user.npz")


# Property tests draw the same examples on every run, so CI never fails on a rare new draw; raise
# max_examples locally (HYPOTHESIS_PROFILE=explore) to search further.
settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_sessionstart(session: pytest.Session) -> None:
    """``MOONMASKC_EXPECT_PACKAGE_IN``: the run must test the package (and its native core) found in
    that folder, as CI's bounds-checked build of the native core does; fail at once otherwise."""
    expected = os.environ.get("MOONMASKC_EXPECT_PACKAGE_IN")
    if not expected:
        return
    import moonmaskc
    from moonmaskc.automata.native import native_built

    found = Path(moonmaskc.__file__).resolve()
    if not found.is_relative_to(Path(expected).resolve()):
        raise pytest.UsageError(f"moonmaskc was imported from {found}, not from {expected}")
    if not native_built():
        raise pytest.UsageError(f"the native core in {expected} is not built")


NOT_BUILT = (
    "native token_walk is not built (build it with "
    "`cythonize -i -3 moonmaskc/automata/_native/token_walk.pyx` or reinstall with a C compiler)"
)


def native_walk() -> ModuleType | None:
    """The native token walk whether or not ``MOONMASKC_PURE`` is set (``None`` when not built)."""
    from moonmaskc.automata.native import PURE_ENV, native

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(PURE_ENV, raising=False)
        return native("token_walk")


@pytest.fixture
def walk() -> ModuleType:
    """The native token walk; skips when it was not built."""
    module = native_walk()
    if module is None:
        pytest.skip(NOT_BUILT)
    return module
