"""Format 5 (``moonmaskc.nest_format``): artifacts with nest regions saved, loaded back (as an
``Artifact``, a serving ``Guide``, a verified one) and served as before; corrupted arrays refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc.artifact import Artifact
from moonmaskc.errors import ArtifactError
from moonmaskc.format import write_artifact
from moonmaskc.nest_format import NEST_ARRAYS, NEST_TOKEN_ARRAYS
from moonmaskc.pipeline import CompileOptions, compile_source
from moonmaskc.runtime import Guide
from moonmaskc.runtime_nested import NestGuide
from tests.test_artifact_loading import _mutated, _serve_everything

SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "s": {"type": "string", "maxLength": 300}, "extra": {}},
    "required": ["id"],
}
WALK = b'{"id":1,"s":"abc","extra":[{"k":[[1,{"z":[]}]]},"q"],"more":{"a":[[[]]]}}'


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Guide, Path]:
    artifact = compile_source("schema", SCHEMA, CompileOptions(free_value_stacks=True, tokenizer="bytes"))
    assert artifact.dfa.nests is not None and artifact.dfa.regions is not None  # both kinds of region
    path = artifact.save(tmp_path_factory.mktemp("nest") / "nest.npz")
    return Guide.from_artifact(artifact), path


def walked(guide: Guide) -> list[Any]:
    seen: list[Any] = []
    state = guide.start()
    for byte in WALK:
        seen.append(guide.allowed(state).tolist())
        seen.append(guide.allowed(state, tokens_left=40).tolist())
        following = guide.advance(state, byte)
        assert following is not None
        state = following
    seen.append(guide.is_accept(state))
    return seen


def test_a_saved_artifact_with_nest_regions_is_served_as_before(saved: tuple[Guide, Path]) -> None:
    memory, path = saved
    with np.load(path) as stored:
        assert int(stored["format_version"]) == 5
    expected = walked(memory)
    for guide in (Guide.load(path), Guide.load(path, verify=True), moonmaskc.load(path)):
        assert isinstance(guide, NestGuide)
        assert walked(guide) == expected
    artifact = Artifact.load(path)
    assert artifact.dfa.nests is not None
    assert artifact.match(WALK.decode()).accepted
    assert not artifact.match(WALK.decode().replace("]]}", "}]]")).accepted


def arrays_of(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("dfa_nest_region", "drop"),
        ("tokens_nest_ids", "drop"),
        ("dfa_nest_returns", "dead"),
        ("dfa_nest_role", "past"),
        ("dfa_nest_level_distance", "plus one"),
        ("tokens_nest_offsets", "falling"),
        ("tokens_nest_ids", "past"),
        ("format_version", "four"),
    ],
)
def test_corrupted_nest_arrays_are_refused(
    saved: tuple[Guide, Path], tmp_path: Path, name: str, damage: str
) -> None:
    _, path = saved
    arrays = arrays_of(path)
    if damage == "drop":
        del arrays[name]
    elif damage == "four":
        arrays[name] = np.array(4, dtype=np.int32)
    else:
        changed = arrays[name].copy()
        flat = changed.reshape(-1)
        if damage == "dead":
            flat[np.flatnonzero(flat)[0]] = 0
        elif damage == "past":
            flat[np.flatnonzero(flat >= 0)[-1]] = 10**6
        elif damage == "plus one":  # of a role that a state in a nested container plays
            flat[arrays["dfa_nest_role"][arrays["dfa_nest_copy"] >= 1][0]] += 1
        else:
            flat[1] = flat[-1] + 1
        arrays[name] = changed
    bad = write_artifact(tmp_path / "bad.npz", arrays)
    with pytest.raises(ArtifactError):
        Artifact.load(bad)
    with pytest.raises(ArtifactError):
        Guide.load(bad)


NEST_ARRAY_NAMES = (*NEST_ARRAYS, *NEST_TOKEN_ARRAYS, "dfa_transitions", "dfa_distance")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mutation=st.sampled_from(["flip", "dtype", "shape", "drop", "negate"]),
    name=st.sampled_from(NEST_ARRAY_NAMES),
    seed=st.integers(0, 10**9),
)
def test_mutated_nest_artifacts_are_refused_or_served_without_a_crash(
    saved: tuple[Guide, Path], tmp_path: Path, mutation: str, name: str, seed: int
) -> None:
    _, path = saved
    bad = write_artifact(
        tmp_path / f"mutated-{seed}.npz",
        _mutated(arrays_of(path), name, mutation, np.random.default_rng(seed)),
    )
    try:
        guide = moonmaskc.load(bad)
        _serve_everything(guide, 12)
        state = guide.start()
        for byte in WALK:
            following = guide.advance(state, byte)
            if following is None:
                break
            guide.allowed(following)
            state = following
    except ArtifactError:
        pass
    try:
        artifact = Artifact.load(bad)
    except ArtifactError:
        return
    artifact.match(WALK.decode())


def test_a_verified_load_recomputes_the_dynamic_tokens(saved: tuple[Guide, Path], tmp_path: Path) -> None:
    """Dynamic tokens with one left out keep every check of a plain load (which then serves a
    narrower language); a verified load finds them again and refuses the file."""
    _, path = saved
    arrays = arrays_of(path)
    offsets, ids = arrays["tokens_nest_offsets"].copy(), arrays["tokens_nest_ids"]
    state = int(np.flatnonzero(np.diff(offsets))[0])
    arrays["tokens_nest_ids"] = np.delete(ids, offsets[state])
    offsets[state + 1 :] -= 1
    arrays["tokens_nest_offsets"] = offsets
    bad = write_artifact(tmp_path / "fewer.npz", arrays)
    assert isinstance(Guide.load(bad), NestGuide)
    with pytest.raises(ArtifactError, match="tokens_nest_ids disagrees"):
        Guide.load(bad, verify=True)
    Guide.load(path, verify=True).verify_dynamic()  # type: ignore[attr-defined]
    from click.testing import CliRunner

    from moonmaskc.cli import main

    refused = CliRunner().invoke(main, ["inspect", str(bad), "--verify"])
    assert refused.exit_code != 0 and "tokens_nest_ids disagrees" in refused.output
    assert CliRunner().invoke(main, ["inspect", str(path), "--verify"]).exit_code == 0
