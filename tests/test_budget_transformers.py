"""The budget proof: with ``MoonmaskLogitsProcessor(..., max_new_tokens=N)`` every row of every batch
ends valid and with eos within N new tokens, on the tiny GPT-2 (random weights, real vocabulary).

Without a budget this model keeps writing until ``max_new_tokens`` runs out (issue 15: 0 of 4
user.json outputs ended at 200 tokens). Torch runs on one thread here: on a shared 2-core machine
more threads make each step slower, not faster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import numpy as np
import pytest

from moonmaskc import compile_schema
from moonmaskc.errors import RuntimeInputError
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary
from tests.conftest import PROJECT_ROOT, data_path

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from moonmaskc.integrations.transformers import MoonmaskLogitsProcessor  # noqa: E402

SCHEMAS = ("user", "order", "tool_call")
SEEDS = 20
BATCH = 4
BUDGET = 64


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_gpt2() -> Any:
    folder = data_path("models", "tiny-gpt2")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    model.eval()
    return model


@pytest.fixture(scope="module")
def examples() -> dict[str, tuple[dict[str, Any], Guide]]:
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    found = {}
    for name in SCHEMAS:
        schema = json.loads((PROJECT_ROOT / "examples" / "schemas" / f"{name}.json").read_text())
        found[name] = (schema, Guide.from_artifact(compile_schema(schema, tokenizer=vocabulary)))
    return found


def prompts_for(seed: int, rows: int = BATCH, length: int = 5) -> Any:
    return torch.from_numpy(np.random.default_rng(seed).integers(0, 50_000, size=(rows, length)))


def run(model: Any, guide: Guide, prompts: Any, processor: Any, budget: int, **options: Any) -> Any:
    with torch.no_grad():
        return model.generate(
            prompts,
            attention_mask=torch.ones_like(prompts),
            logits_processor=transformers.LogitsProcessorList([processor]),
            max_new_tokens=budget,
            pad_token_id=guide.eos,
            eos_token_id=guide.eos,
            **options,
        )


def outcomes(guide: Guide, schema: dict[str, Any], output: Any, prompt_length: int) -> list[str]:
    """Per row: "ok" (valid JSON for the schema, then eos, then only eos) or what went wrong."""
    found = []
    for row in output[:, prompt_length:].tolist():
        if guide.eos not in row:
            found.append(f"no eos: {guide.decode(row)[:60]!r}")
            continue
        end = row.index(guide.eos)
        try:
            jsonschema.validate(json.loads(guide.decode(row[:end]).decode("utf-8")), schema)
        except (ValueError, jsonschema.ValidationError) as error:
            found.append(f"invalid: {error}")
            continue
        found.append("ok" if all(t == guide.eos for t in row[end:]) else "tokens after eos")
    return found


@pytest.mark.parametrize("name", SCHEMAS)
def test_sampling_every_row_ends_valid_with_eos_within_the_budget(
    tiny_gpt2: Any, examples: dict[str, tuple[dict[str, Any], Guide]], name: str
) -> None:
    """20 seeds x a batch of 4, do_sample=True, max_new_tokens=64: 80/80 valid and ended."""
    schema, guide = examples[name]
    results: list[str] = []
    lengths: list[int] = []
    for seed in range(SEEDS):
        torch.manual_seed(seed)
        prompts = prompts_for(seed)
        processor = MoonmaskLogitsProcessor(guide, pad_token_id=guide.eos, max_new_tokens=BUDGET)
        output = run(tiny_gpt2, guide, prompts, processor, BUDGET, do_sample=True, top_k=0, temperature=1.0)
        assert output.shape[1] - prompts.shape[1] <= BUDGET
        results += outcomes(guide, schema, output, prompts.shape[1])
        lengths += [
            row.index(guide.eos) + 1 for row in output[:, prompts.shape[1] :].tolist() if guide.eos in row
        ]
    assert results.count("ok") == SEEDS * BATCH, [r for r in results if r != "ok"][:5]
    assert max(lengths) <= BUDGET


@pytest.mark.parametrize("name", SCHEMAS)
def test_greedy_and_beam_search_end_valid_at_64_and_at_the_tightest_budget(
    tiny_gpt2: Any, examples: dict[str, tuple[dict[str, Any], Guide]], name: str
) -> None:
    schema, guide = examples[name]
    tightest = guide.fewest_tokens(guide.start())
    prompts = prompts_for(11, rows=2)
    for budget in (BUDGET, tightest):
        for options in ({"do_sample": False}, {"do_sample": False, "num_beams": 3}):
            processor = MoonmaskLogitsProcessor(guide, pad_token_id=guide.eos, max_new_tokens=budget)
            output = run(tiny_gpt2, guide, prompts, processor, budget, **options)
            assert outcomes(guide, schema, output, prompts.shape[1]) == ["ok", "ok"], (budget, options)
            assert output.shape[1] - prompts.shape[1] <= budget


def test_sampling_at_the_tightest_budget_writes_a_shortest_output(
    tiny_gpt2: Any, examples: dict[str, tuple[dict[str, Any], Guide]]
) -> None:
    schema, guide = examples["user"]
    tightest = guide.fewest_tokens(guide.start())
    torch.manual_seed(0)
    prompts = prompts_for(0)
    processor = MoonmaskLogitsProcessor(guide, pad_token_id=guide.eos, max_new_tokens=tightest)
    output = run(tiny_gpt2, guide, prompts, processor, tightest, do_sample=True, top_k=0)
    assert outcomes(guide, schema, output, prompts.shape[1]) == ["ok"] * BATCH
    assert all(row[-1] == guide.eos for row in output.tolist())


def test_the_budget_comes_from_the_generation_config(
    tiny_gpt2: Any, examples: dict[str, tuple[dict[str, Any], Guide]]
) -> None:
    schema, guide = examples["tool_call"]
    prompts = prompts_for(3)
    config = transformers.GenerationConfig(
        max_new_tokens=40, do_sample=True, top_k=0, pad_token_id=guide.eos, eos_token_id=guide.eos
    )
    processor = MoonmaskLogitsProcessor(guide, pad_token_id=guide.eos, generation_config=config)
    torch.manual_seed(3)
    output = tiny_gpt2.generate(
        prompts,
        attention_mask=torch.ones_like(prompts),
        generation_config=config,
        logits_processor=transformers.LogitsProcessorList([processor]),
    )
    assert processor.max_new_tokens == 40
    assert outcomes(guide, schema, output, prompts.shape[1]) == ["ok"] * BATCH
    by_length = transformers.GenerationConfig(max_length=prompts.shape[1] + 30)
    processor = MoonmaskLogitsProcessor(guide, generation_config=by_length)
    processor(prompts, torch.zeros((BATCH, guide.vocab_size)))
    assert processor.max_new_tokens == 30


def test_a_budget_that_cannot_fit_is_an_error_before_the_first_token(
    tiny_gpt2: Any, examples: dict[str, tuple[dict[str, Any], Guide]]
) -> None:
    _, guide = examples["order"]
    tightest = guide.fewest_tokens(guide.start())
    with pytest.raises(
        RuntimeInputError, match=f"takes {tightest} tokens .* max_new_tokens = {tightest - 1}"
    ):
        MoonmaskLogitsProcessor(guide, max_new_tokens=tightest - 1)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(RuntimeInputError):
            MoonmaskLogitsProcessor(guide, max_new_tokens=bad)
    processor = MoonmaskLogitsProcessor(
        guide, generation_config=transformers.GenerationConfig(max_new_tokens=tightest - 1)
    )
    calls_before = processor.calls
    with pytest.raises(RuntimeInputError, match="generation config's max_new_tokens"):
        run(tiny_gpt2, guide, prompts_for(0, rows=1), processor, tightest - 1)
    assert processor.calls == calls_before == 0


def test_loose_budget_masks_equal_the_unbudgeted_ones_and_a_spent_budget_is_an_error(
    examples: dict[str, tuple[dict[str, Any], Guide]],
) -> None:
    _, guide = examples["user"]
    prompts = torch.zeros((2, 3), dtype=torch.long)
    budgeted = MoonmaskLogitsProcessor(guide, max_new_tokens=BUDGET)
    plain = MoonmaskLogitsProcessor(guide)
    scores = torch.randn((2, guide.vocab_size))
    assert torch.equal(budgeted(prompts, scores.clone()), plain(prompts, scores.clone()))
    # A row that took a token the budget did not allow (another processor changed the scores) is
    # an error at the next step, naming the row and the budget.
    tightest = guide.fewest_tokens(guide.start())
    short = MoonmaskLogitsProcessor(guide, max_new_tokens=tightest)
    short(prompts, scores.clone())
    fits = guide.allowed(guide.start(), tokens_left=tightest)
    too_long = np.setdiff1d(guide.allowed(guide.start()), fits)
    assert too_long.size
    history = torch.cat([prompts, torch.tensor([[int(fits[0])], [int(too_long[0])]])], dim=1)
    with pytest.raises(RuntimeInputError, match=f"row 1, {tightest} new tokens allowed, {tightest - 1} left"):
        short(history, scores.clone())
