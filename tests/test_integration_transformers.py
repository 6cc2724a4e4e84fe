"""MoonmaskLogitsProcessor with transformers' generate on the tiny GPT-2 (random weights, real vocabulary).

Every generated row must parse, validate with ``jsonschema`` and end with eos, under sampling, greedy
search and beam search; the processor's own rules (eos only where accepting, finished rows stay
finished, padded score columns, one instance per call) are checked on hand-made score tensors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from moonmaskc import compile_schema
from moonmaskc.errors import RuntimeInputError
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary, read_tokenizer_file
from tests.conftest import PROJECT_ROOT, data_path
from tests.oracles.json_values import nesting_depth

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from moonmaskc.integrations.transformers import FINISHED, MoonmaskLogitsProcessor  # noqa: E402

PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "ok": {"type": "boolean"},
        "tag": {"enum": ["red", "green", None]},
        "n": {"type": "integer", "minimum": -5, "maximum": 120},
    },
    "required": ["name", "ok", "tag", "n"],
    "additionalProperties": False,
}
PAIR_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "enum": ["alpha", "beta", "gamma"]},
    "minItems": 1,
    "maxItems": 2,
}
# An open object with a free value: the guide runs a bracket stack (runtime_nested.NestGuide).
OPEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "extra": {}},
    "required": ["id"],
}
MAX_NEW_TOKENS = 96  # above the longest valid text of either schema (each token adds >= 1 byte)


@pytest.fixture(scope="module")
def gpt2_vocabulary() -> Any:
    return load_vocabulary(data_path("tokenizers", "gpt2.json"))


@pytest.fixture(scope="module")
def tiny_gpt2() -> Any:
    folder = data_path("models", "tiny-gpt2")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    model.eval()
    return model


@pytest.fixture(scope="module")
def guides(gpt2_vocabulary: Any) -> dict[str, Guide]:
    return {
        name: Guide.from_artifact(compile_schema(schema, tokenizer=gpt2_vocabulary))
        for name, schema in SCHEMAS.items()
    }


SCHEMAS = {"person": PERSON_SCHEMA, "pair": PAIR_SCHEMA, "open": OPEN_SCHEMA}


def random_prompts(seed: int, rows: int = 4, length: int = 5) -> Any:
    generator = np.random.default_rng(seed)
    return torch.from_numpy(generator.integers(0, 50_000, size=(rows, length)))


def check_rows(guide: Guide, output: Any, prompt_length: int, schema: dict[str, Any]) -> list[Any]:
    """Each row: the tokens before the first eos decode to schema-valid JSON; only eos follows it."""
    values = []
    for row in output[:, prompt_length:].tolist():
        assert guide.eos in row, f"row did not end with eos: {row}"
        end = row.index(guide.eos)
        assert all(token == guide.eos for token in row[end:])
        value = json.loads(guide.decode(row[:end]).decode("utf-8"))
        jsonschema.validate(value, schema)
        values.append(value)
    return values


def generate(
    model: Any, guide: Guide, prompts: Any, before: list[Any] | None = None, **options: Any
) -> tuple[Any, MoonmaskLogitsProcessor]:
    """``model.generate`` with the guide's processor (after the ``before`` processors)."""
    processor = MoonmaskLogitsProcessor(guide, pad_token_id=guide.eos, max_new_tokens=MAX_NEW_TOKENS)
    output = model.generate(
        prompts,
        attention_mask=torch.ones_like(prompts),
        logits_processor=transformers.LogitsProcessorList([*(before or []), processor]),
        max_new_tokens=MAX_NEW_TOKENS,
        pad_token_id=guide.eos,
        eos_token_id=guide.eos,
        **options,
    )
    return output, processor


@pytest.mark.parametrize("name", ["person", "pair", "open"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_sampling_gives_valid_json_ending_with_eos(
    tiny_gpt2: Any, guides: dict[str, Guide], name: str, seed: int
) -> None:
    guide = guides[name]
    torch.manual_seed(seed)
    prompts = random_prompts(seed)
    output, processor = generate(tiny_gpt2, guide, prompts, do_sample=True, top_k=0, temperature=1.0)
    values = check_rows(guide, output, prompts.shape[1], SCHEMAS[name])
    assert len(values) == 4
    assert processor.calls == output.shape[1] - prompts.shape[1]


@pytest.mark.parametrize("name", ["person", "pair", "open"])
def test_batched_greedy_and_beam_search_give_valid_json(
    tiny_gpt2: Any, guides: dict[str, Guide], name: str
) -> None:
    guide = guides[name]
    prompts = random_prompts(7)
    for options in ({"do_sample": False}, {"do_sample": False, "num_beams": 3}):
        output, _ = generate(tiny_gpt2, guide, prompts, **options)
        check_rows(guide, output, prompts.shape[1], SCHEMAS[name])


def test_free_values_nest_under_the_processor_and_finish_within_the_budget(
    tiny_gpt2: Any, guides: dict[str, Guide]
) -> None:
    """The open schema's guide carries a bracket stack; sampled rows nest containers inside the
    free value and still end, valid, within ``max_new_tokens``."""
    from moonmaskc.runtime_nested import NestGuide

    guide = guides["open"]
    assert isinstance(guide, NestGuide)
    # A model that likes opening brackets: the random model alone seldom nests.
    opening = [token for token in range(guide.vocab_size) if set(guide.decode([token])) & set(b"[{")]
    bonus = torch.zeros(guide.vocab_size)
    bonus[opening] = 6.0

    def bracket_loving(input_ids: Any, scores: Any) -> Any:
        return scores + bonus[: scores.shape[1]]

    deepest = 0
    for seed in range(4):
        torch.manual_seed(seed)
        prompts = random_prompts(seed + 10, rows=6)
        output, _ = generate(
            tiny_gpt2, guide, prompts, before=[bracket_loving], do_sample=True, top_k=0, temperature=1.0
        )
        for value in check_rows(guide, output, prompts.shape[1], OPEN_SCHEMA):
            deepest = max(deepest, nesting_depth(value))
    assert deepest >= 4  # the free values held containers in containers (5 on the seeds above)


def test_masked_greedy_follows_the_model_among_allowed_tokens(
    tiny_gpt2: Any, guides: dict[str, Guide]
) -> None:
    """Greedy generate with the processor equals a step-by-step loop of the runtime's own greedy."""
    guide = guides["person"]
    prompts = random_prompts(3, rows=1)
    output, _ = generate(tiny_gpt2, guide, prompts, do_sample=False)
    state, tokens, ids = guide.start(), [], prompts
    with torch.no_grad():
        for _ in range(MAX_NEW_TOKENS):
            logits = tiny_gpt2(ids).logits[0, -1]
            token = guide.greedy(state, logits)
            assert token is not None
            tokens.append(token)
            if token == guide.eos:
                break
            next_state = guide.advance(state, token)
            assert next_state is not None
            state = next_state
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    assert output[0, prompts.shape[1] :].tolist()[: len(tokens)] == tokens


def test_unmasked_tiny_gpt2_does_not_write_json(tiny_gpt2: Any, guides: dict[str, Guide]) -> None:
    """The random model alone produces no valid output: validity above comes from the mask."""
    guide = guides["person"]
    prompts = random_prompts(0)
    output = tiny_gpt2.generate(
        prompts,
        attention_mask=torch.ones_like(prompts),
        max_new_tokens=24,
        do_sample=False,
        pad_token_id=guide.eos,
    )
    for row in output[:, prompts.shape[1] :].tolist():
        with pytest.raises((ValueError, jsonschema.ValidationError)):
            jsonschema.validate(json.loads(guide.decode(row).decode("utf-8", "replace")), PERSON_SCHEMA)


# The processor's rules on hand-made scores -------------------------------------------------------


def flat_scores(rows: int, width: int) -> Any:
    return torch.zeros((rows, width), dtype=torch.float32)


def allowed_columns(scores: Any) -> list[list[int]]:
    return [torch.nonzero(torch.isfinite(row)).flatten().tolist() for row in scores]


def token_of(guide: Guide, text: bytes, vocabulary: Any) -> int:
    return vocabulary.token_bytes.index(text)


def test_first_call_allows_exactly_the_start_state_tokens(guides: dict[str, Guide]) -> None:
    guide = guides["pair"]
    processor = MoonmaskLogitsProcessor(guide)
    scores = processor(torch.zeros((2, 3), dtype=torch.long), flat_scores(2, guide.vocab_size))
    expected = guide.allowed(guide.start()).tolist()
    assert allowed_columns(scores) == [expected, expected]
    assert guide.eos not in expected


def test_eos_only_in_accepting_states_and_finished_rows_stay_finished(
    guides: dict[str, Guide], gpt2_vocabulary: Any
) -> None:
    guide = guides["pair"]
    pad = 7
    rows = [
        [b'["', b"alpha", b'"]', None, pad],
        [b'["', b"alpha", b'",', b'"', b"beta"],
    ]
    ids = [
        [
            guide.eos if p is None else p if isinstance(p, int) else token_of(guide, p, gpt2_vocabulary)
            for p in r
        ]
        for r in rows
    ]
    processor = MoonmaskLogitsProcessor(guide, pad_token_id=pad)
    history = torch.zeros((2, 2), dtype=torch.long)
    processor(history, flat_scores(2, guide.vocab_size))
    eos_allowed_after = []
    for step in range(len(rows[0])):
        history = torch.cat([history, torch.tensor([[ids[0][step]], [ids[1][step]]])], dim=1)
        scores = processor(history, flat_scores(2, guide.vocab_size))
        eos_allowed_after.append([bool(torch.isfinite(scores[r, guide.eos])) for r in range(2)])
        if step >= 3:
            assert processor.states[0] == FINISHED
            assert allowed_columns(scores)[0] == sorted([pad, guide.eos])
    assert eos_allowed_after == [[False, False], [False, False], [True, False], [True, False], [True, False]]


def test_padded_score_columns_are_never_allowed(guides: dict[str, Guide]) -> None:
    guide = guides["pair"]
    processor = MoonmaskLogitsProcessor(guide)
    scores = processor(torch.zeros((1, 1), dtype=torch.long), flat_scores(1, guide.vocab_size + 43))
    assert not torch.isfinite(scores[0, guide.vocab_size :]).any()


def test_too_narrow_scores_a_disallowed_token_and_reuse_are_errors(guides: dict[str, Guide]) -> None:
    guide = guides["pair"]
    with pytest.raises(RuntimeInputError, match="vocabulary has"):
        MoonmaskLogitsProcessor(guide)(torch.zeros((1, 1), dtype=torch.long), flat_scores(1, 100))
    processor = MoonmaskLogitsProcessor(guide)
    processor(torch.zeros((1, 2), dtype=torch.long), flat_scores(1, guide.vocab_size))
    bad = int(np.setdiff1d(np.arange(guide.vocab_size), guide.allowed(guide.start()))[0])
    with pytest.raises(RuntimeInputError, match="not allowed"):
        processor(torch.tensor([[0, 0, bad]]), flat_scores(1, guide.vocab_size))
    with pytest.raises(RuntimeInputError, match="one processor per generate call"):
        processor(torch.zeros((3, 4), dtype=torch.long), flat_scores(3, guide.vocab_size))


def test_processor_accepts_a_path_an_artifact_and_checks_the_tokenizer(
    tmp_path: Path, gpt2_vocabulary: Any
) -> None:
    artifact = compile_schema(PAIR_SCHEMA, tokenizer=gpt2_vocabulary)
    path = tmp_path / "pair.npz"
    artifact.save(path)
    from_path = MoonmaskLogitsProcessor(str(path), tokenizer=gpt2_vocabulary)
    from_artifact = MoonmaskLogitsProcessor(artifact)
    assert from_path.guide.fingerprint == from_artifact.guide.fingerprint == gpt2_vocabulary.fingerprint
    with pytest.raises(Exception, match="not the vocabulary"):
        MoonmaskLogitsProcessor(path, tokenizer="bytes")


def test_tiny_gpt2_tokenizer_files_have_the_gpt2_json_vocabulary(
    tmp_path: Path, gpt2_vocabulary: Any
) -> None:
    """The tiny model's own vocab.json + merges.txt, through transformers, give gpt2.json's vocabulary."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(data_path("models", "tiny-gpt2")))
    path = tmp_path / "tokenizer.json"
    path.write_text(tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    assert read_tokenizer_file(path, eos="<|endoftext|>").fingerprint == gpt2_vocabulary.fingerprint


def test_importing_moonmaskc_and_its_integrations_package_imports_no_torch() -> None:
    code = (
        "import sys, moonmaskc, moonmaskc.runtime, moonmaskc.integrations, "
        "moonmaskc.vocabulary.gguf, moonmaskc.integrations.hf_models\n"
        "heavy = [m for m in ('torch', 'transformers', 'gguf') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PROJECT_ROOT)
