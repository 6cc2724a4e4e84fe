"""Loading artifacts for serving: what a serving process imports, what a load reads, and what a
damaged or hostile file gets (an ``ArtifactError`` naming the file, never another exception, a
hang, or a wrong answer).

The mutation test takes real artifacts (bytes vocabulary and GPT-2), rewrites them with one array
changed at random (values flipped, dtype or shape changed, removed, added, metadata corrupted) or
the file truncated or bit-flipped, and loads each through ``moonmaskc.load`` and
``Artifact.load``: either the load raises ``ArtifactError`` (and, for the lazy serving load, the
first use of every part may raise it too). A plain serving load guarantees no other exception
(no crash, hang or out-of-bounds read); a verified load (``verify=True``: checksums and the deep
table check) guarantees that every mask and step it serves equals the original's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc.artifact import Artifact
from moonmaskc.errors import ArtifactError
from moonmaskc.format import DEFAULT_MAX_BYTES, FORMAT_VERSION, write_artifact
from moonmaskc.runtime import Guide


def test_serving_imports_no_compiler_module(gpt2_artifact: Path) -> None:
    """A process that loads an artifact, fills masks, steps and decodes imports the runtime, the
    format and the error classes: no front end, no automata, no lark, tokenizers, click or rich."""
    script = (
        "import sys, numpy as np, moonmaskc\n"
        f"g = moonmaskc.load({str(gpt2_artifact)!r})\n"
        "out = np.zeros((1, g.bitmask_words), np.int32); g.fill_bitmask(g.start(), out)\n"
        "t = int(g.allowed(g.start())[0]); g.advance(g.start(), t); g.decode([t])\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    modules = set(loaded.stdout.split())
    ours = {name for name in modules if name.startswith("moonmaskc")}
    assert ours <= {
        "moonmaskc",
        "moonmaskc.errors",
        "moonmaskc.version",
        "moonmaskc.format",
        "moonmaskc.runtime",
        "moonmaskc.runtime_table",
        "moonmaskc.runtime_sampling",
        "moonmaskc.runtime_budget",
        "moonmaskc.next_table",
        # the native fill, when built: the automata packages import nothing themselves
        "moonmaskc.automata",
        "moonmaskc.automata.native",
        "moonmaskc.automata._native",
        "moonmaskc.automata._native.fill",
    }, sorted(ours)
    assert not {"lark", "tokenizers", "click", "rich", "jsonschema"} & {m.split(".")[0] for m in modules}


def test_a_serving_load_maps_the_hot_arrays_and_inflates_nothing(gpt2_artifact: Path) -> None:
    """The first mask needs no deflated array: the next-state table, the DFA and the token bytes
    are inflated only when a step, a match or a decode asks for them."""
    guide = Guide.load(gpt2_artifact)
    out = np.zeros((1, guide.bitmask_words), np.int32)
    guide.fill_bitmask(guide.start(), out)
    read = set(guide.table.arrays._arrays)  # type: ignore[union-attr]
    assert not read & {"tokens_next", "dfa_transitions", "vocab_token_bytes", "vocab_token_lengths"}
    archive = zipfile.ZipFile(gpt2_artifact)
    stored = {info.filename[:-4] for info in archive.infolist() if info.compress_type == zipfile.ZIP_STORED}
    assert read <= stored
    assert int(np.load(gpt2_artifact)["format_version"]) == FORMAT_VERSION
    assert gpt2_artifact.stat().st_size < 1 << 20  # user.json with GPT-2 stays under 1 MB


def test_masks_and_steps_equal_the_in_memory_table(gpt2_artifact: Path) -> None:
    artifact = Artifact.load(gpt2_artifact)
    served = Guide.load(gpt2_artifact)
    built = Guide.from_artifact(artifact)
    for state in range(0, built.num_states, 7):
        assert np.array_equal(served.mask(state), built.mask(state))
        for token in served.allowed(state)[:5].tolist():
            assert served.advance(state, token) == built.advance(state, token)
    served.table.verify()  # type: ignore[union-attr]


def test_declared_sizes_are_bounded_before_anything_is_read(gpt2_artifact: Path) -> None:
    with pytest.raises(ArtifactError, match="--max-artifact-bytes"):
        guide = Guide.load(gpt2_artifact, max_bytes=1 << 16)
        guide.advance(guide.start(), int(guide.allowed(guide.start())[0]))


def test_an_array_declaring_a_huge_shape_is_refused_without_allocating(tmp_path: Path) -> None:
    """A small file whose deflated next states inflate to 256 MB (what a hostile artifact would do,
    at a smaller scale) is refused by the size bound before anything is inflated."""
    arrays = _arrays_of(moonmaskc.compile_regex("a+").save(tmp_path / "a.npz"))
    arrays["tokens_next"] = np.zeros(1 << 27, dtype=np.uint16)
    path = tmp_path / "huge.npz"
    write_artifact(path, arrays)
    assert path.stat().st_size < 2 << 20
    guide = Guide.load(path, max_bytes=64 << 20)
    with pytest.raises(ArtifactError, match="more than the bound"):
        guide.advance(guide.start(), int(guide.allowed(guide.start())[0]))
    assert DEFAULT_MAX_BYTES >= 64 << 20


def _arrays_of(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _serve_everything(guide: Guide, states: int) -> list[object]:
    """What a user of the guide would see: masks, allowed tokens and next states of the first
    states, and whether they accept; the first and the last tokens decoded; monkey samples (which
    step masks and next states together)."""
    seen: list[object] = []
    for state in range(min(states, guide.num_states)):
        seen.append(guide.mask(state).tobytes())
        allowed = guide.allowed(state)
        seen.append([guide.advance(state, int(token)) for token in allowed[:8]])
        seen.append(guide.is_accept(state))
    seen.append(guide.decode(list(range(min(40, guide.vocab_size)))))
    seen.append(guide.decode([guide.vocab_size - 1]))
    seen.extend(tuple(guide.monkey(seed, 12)) for seed in range(3))
    return seen


MUTATIONS = ("flip", "dtype", "shape", "drop", "add", "metadata", "truncate", "bitflip", "negate")


@settings(max_examples=600, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(MUTATIONS), st.integers(0, 10**9), st.data())
def test_mutated_artifacts_are_refused_or_served_exactly(
    bytes_artifact: Path, tmp_path: Path, mutation: str, seed: int, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    original = Guide.load(bytes_artifact)
    expected = _serve_everything(original, 12)
    arrays = _arrays_of(bytes_artifact)
    name = data.draw(st.sampled_from(sorted(arrays)))
    path = tmp_path / f"mutated-{seed}.npz"
    if mutation in ("truncate", "bitflip"):
        raw = bytearray(bytes_artifact.read_bytes())
        if mutation == "truncate":
            raw = raw[: int(rng.integers(0, len(raw)))]
        else:
            at = int(rng.integers(0, len(raw)))
            raw[at] ^= 1 << int(rng.integers(0, 8))
        path.write_bytes(bytes(raw))
    else:
        arrays = _mutated(arrays, name, mutation, rng)
        write_artifact(path, arrays)
    try:  # a plain load: refused, or served without any other exception
        _serve_everything(Guide.load(path), 12)
    except ArtifactError as error:
        assert str(path) in str(error) or "artifact" in str(error)
    try:  # a verified load: refused, or served exactly as the original
        served = _serve_everything(Guide.load(path, verify=True), 12)
    except ArtifactError as error:
        assert str(path) in str(error) or "artifact" in str(error)
        return
    assert served == expected, f"{mutation} of {name} was served differently"
    try:
        artifact = Artifact.load(path)
    except ArtifactError:
        return
    for text in ('{"id":12,"tags":["ab"]}', '{"id":0}', "A@b.com", ""):
        assert artifact.match(text).accepted == Artifact.load(bytes_artifact).match(text).accepted


def _mutated(
    arrays: dict[str, np.ndarray], name: str, mutation: str, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    arrays = dict(arrays)
    array = arrays[name]
    if mutation == "flip" and array.size and array.dtype.kind in "iub":
        changed = array.copy().reshape(-1)
        at = int(rng.integers(0, changed.size))
        changed[at] = (
            (not changed[at])
            if array.dtype.kind == "b"
            else (int(changed[at]) + int(rng.integers(1, 1000)))
            % min(1 << 15, int(np.iinfo(array.dtype).max))
        )
        arrays[name] = changed.reshape(array.shape)
    elif mutation == "negate" and array.size and array.dtype.kind == "i":
        changed = array.copy().reshape(-1)
        changed[int(rng.integers(0, changed.size))] = -int(rng.integers(1, 5))
        arrays[name] = changed.reshape(array.shape)
    elif mutation == "dtype":
        arrays[name] = (
            np.asarray(array).astype(rng.choice(["float64", "int8", "<U3", "uint64"]), copy=True)
            if array.dtype.kind != "U"
            else np.array(7)
        )
    elif mutation == "shape":
        arrays[name] = (
            np.resize(array, (int(rng.integers(0, 4)), *array.shape[1:]))
            if array.ndim
            else np.array([array, array])
        )
    elif mutation == "drop":
        del arrays[name]
    elif mutation == "add":
        arrays[f"extra_{name}"] = np.arange(5)
    elif mutation == "metadata":
        arrays["metadata"] = np.array(
            rng.choice(["[1, 2]", '{"vocabulary": {"size": 3}}', "{", '"hello"', '{"timings": {"a": "b"}}'])
        )
    return arrays


def test_offsets_in_a_narrower_integer_dtype_are_served_exactly(bytes_artifact: Path, tmp_path: Path) -> None:
    """The checked values of an offsets array fit any integer dtype; int8 offsets are served as
    the int64 ones (they used to overflow in the verified load's eos check: a randomized run of
    the mutation test found it)."""
    expected = _serve_everything(Guide.load(bytes_artifact), 12)
    for name in ("tokens_next_offsets", "tokens_row_class_offsets", "tokens_row_classes"):
        arrays = _arrays_of(bytes_artifact)
        narrow = np.int8 if int(arrays[name].max()) <= np.iinfo(np.int8).max else np.int16
        arrays[name] = arrays[name].astype(narrow)
        path = tmp_path / f"narrow-{name}.npz"
        write_artifact(path, arrays)
        assert _serve_everything(Guide.load(path, verify=True), 12) == expected, name
        assert _serve_everything(Guide.load(path), 12) == expected, name


def test_a_start_state_other_than_the_breadth_first_one_is_refused(
    bytes_artifact: Path, tmp_path: Path
) -> None:
    """A DFA numbered breadth first from its start starts at state 1: any other start in range (a
    flipped value that every other check would pass) is refused by both loaders. The empty
    language's one-state DFA starts at 0."""
    arrays = _arrays_of(bytes_artifact)
    states = len(arrays["dfa_transitions"])
    for start in (0, 2, states - 1):
        arrays["dfa_start"] = np.array(start, dtype=np.int32)
        path = tmp_path / f"start-{start}.npz"
        write_artifact(path, arrays)
        with pytest.raises(ArtifactError, match=r"dfa_start.*breadth first"):
            Guide.load(path)
        with pytest.raises(ArtifactError, match=r"dfa_start.*breadth first"):
            Artifact.load(path)
    empty = moonmaskc.compile_schema(False, tokenizer=None)  # no value at all
    assert empty.dfa.num_states == 1 and empty.dfa.start == 0
    assert Artifact.load(empty.save(tmp_path / "empty.npz")).dfa.start == 0


def test_a_verified_load_checks_the_stored_vocabulary_against_its_fingerprint(
    bytes_artifact: Path, tmp_path: Path
) -> None:
    """A changed token byte, token length or special id keeps every shape and range right, so only
    the fingerprint tells: a verified load refuses it (found by the mutation test with random
    draws: the flipped byte was decoded as it was)."""
    changes = {
        "vocab_token_bytes": lambda a: a.__setitem__(38, a[38] ^ 0x80),
        "vocab_token_lengths": lambda a: (a.__setitem__(3, a[3] + 1), a.__setitem__(4, a[4] - 1)),
        "vocab_special_ids": lambda a: a.__setitem__(slice(None), np.array([7] * len(a), dtype=a.dtype)),
    }
    for name, change in changes.items():
        arrays = _arrays_of(bytes_artifact)
        if not arrays[name].size:
            arrays[name] = np.array([7], dtype=np.int32)
        else:
            arrays[name] = arrays[name].copy()
            change(arrays[name])
        path = tmp_path / f"vocabulary-{name}.npz"
        write_artifact(path, arrays)
        Guide.load(path)  # a plain load does not read the vocabulary
        with pytest.raises(ArtifactError, match="vocab_fingerprint"):
            Guide.load(path, verify=True)


def test_eos_steps_that_give_the_dead_state_a_value_are_refused_naming_the_file(
    bytes_artifact: Path, tmp_path: Path
) -> None:
    """The dead state's fewest tokens to eos is 0 by definition: another value is refused at
    load, by an error that names the file and the array (it used to surface at the first budgeted
    step, naming neither)."""
    arrays = _arrays_of(bytes_artifact)
    arrays["tokens_eos_steps"] = arrays["tokens_eos_steps"].copy()
    arrays["tokens_eos_steps"][0] = 5
    path = tmp_path / "eos-steps.npz"
    write_artifact(path, arrays)
    with pytest.raises(ArtifactError, match="tokens_eos_steps") as caught:
        guide = Guide.load(path)
        guide.allowed(guide.start(), tokens_left=4)
    assert str(path) in str(caught.value)


def test_a_mask_bit_past_the_last_token_is_refused(bytes_artifact: Path, tmp_path: Path) -> None:
    """The last mask word's bits past the vocabulary stay 0: a delta that sets one would allow a
    token that does not exist (a monkey sample then stepped with it and failed with a
    ``RuntimeInputError``: found by the mutation test with random draws)."""
    arrays = _arrays_of(bytes_artifact)
    vocab_size = len(arrays["tokens_token_class"])
    words = (vocab_size + 31) // 32
    assert vocab_size % 32  # the bytes vocabulary (257 tokens) leaves 31 bits unused
    at = np.flatnonzero(arrays["tokens_mask_delta_index"] == words - 1)
    assert len(at)
    values = arrays["tokens_mask_delta_value"].copy()
    values[at[0]] |= np.uint32(1 << 31)
    arrays["tokens_mask_delta_value"] = values
    path = tmp_path / "past-the-vocabulary.npz"
    write_artifact(path, arrays)
    with pytest.raises(ArtifactError, match="past the last token"):
        Guide.load(path)
    with pytest.raises(ArtifactError):
        Artifact.load(path)


def test_the_cli_reports_a_damaged_artifact_without_a_traceback(tmp_path: Path, bytes_artifact: Path) -> None:
    from click.testing import CliRunner

    from moonmaskc.cli import main

    damaged = tmp_path / "damaged.npz"
    arrays = _arrays_of(bytes_artifact)
    arrays["dfa_byte_class"] = arrays["dfa_byte_class"].astype(np.int32) - 1  # a negative class
    write_artifact(damaged, arrays)
    for command in (
        ["inspect", str(damaged)],
        ["match", str(damaged), "A@b.com"],
        ["sample", str(damaged), "-n", "2"],
    ):
        result = CliRunner().invoke(main, command)
        assert result.exit_code != 0 and "dfa_byte_class" in result.output, (command, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
    assert os.path.exists(damaged)


def test_inspect_verify_finds_a_flipped_mask_bit_and_the_size_bound_has_a_flag(
    tmp_path: Path, bytes_artifact: Path
) -> None:
    from click.testing import CliRunner

    from moonmaskc.cli import main

    runner = CliRunner()
    assert runner.invoke(main, ["inspect", "--verify", str(bytes_artifact)]).exit_code == 0
    arrays = _arrays_of(bytes_artifact)
    values = arrays["tokens_mask_delta_value"].copy()
    values[len(values) // 2] ^= 1 << 5  # in range: only the deep check can see it
    arrays["tokens_mask_delta_value"] = values
    flipped = tmp_path / "flipped.npz"
    write_artifact(flipped, arrays)
    Guide.load(flipped)  # the serving load's cheap checks cannot see it
    with pytest.raises(ArtifactError, match="disagree"):
        Guide.load(flipped, verify=True)
    result = runner.invoke(main, ["inspect", "--verify", str(flipped)])
    assert result.exit_code != 0 and "disagree" in result.output
    result = runner.invoke(main, ["match", "--max-artifact-bytes", "100", str(bytes_artifact), "x"])
    assert result.exit_code != 0 and "--max-artifact-bytes" in result.output


def test_warm_builds_every_row_and_changes_nothing(gpt2_artifact: Path) -> None:
    cold = Guide.load(gpt2_artifact)
    warm = Guide.load(gpt2_artifact).warm()
    rows = warm.table.mask_rows
    assert all(row is not None for row in rows._rows)  # type: ignore[union-attr]
    for state in range(0, cold.num_states, 11):
        assert np.array_equal(cold.mask(state), warm.mask(state))


def test_vocabulary_lengths_of_the_wrong_size_are_refused(tmp_path: Path, gpt2_artifact: Path) -> None:
    """One length short: decoding the last token read past the array (an ``IndexError`` out of
    ``monkey``); now the lengths must match the token classes' vocabulary."""
    arrays = _arrays_of(gpt2_artifact)
    arrays["vocab_token_lengths"] = arrays["vocab_token_lengths"][:-1]
    path = tmp_path / "short.npz"
    write_artifact(path, arrays)
    guide = Guide.load(path)
    with pytest.raises(ArtifactError, match="vocab_token_lengths"):
        guide.monkey(1, 20)


def test_masks_that_disagree_with_the_next_states_stop_a_monkey_with_an_artifact_error(
    gpt2_artifact: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sample steps with the mask and then the next-state table: where a corrupted artifact's
    two disagree, an ``ArtifactError`` (it was a bare ``AssertionError``)."""
    guide = Guide.load(gpt2_artifact)
    monkeypatch.setattr(guide, "advance", lambda state, token: None)
    with pytest.raises(ArtifactError, match="corrupted"):
        guide.monkey(1, 20)
