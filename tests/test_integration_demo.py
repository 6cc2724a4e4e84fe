"""The step-by-step demo (examples/logits/demo.py) on the tiny GPT-2: its records tell the truth.

Unmasked steps are the model's argmax; masked steps chain states through the artifact; the
greedy+finish run shares the greedy run's first steps, then only takes tokens that bring the text
closer to acceptance, and ends with eos on a schema-valid text.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from moonmaskc import compile_schema
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary
from tests.conftest import PROJECT_ROOT, data_path

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

FINISH_AFTER = 6


def demo_module() -> ModuleType:
    path = PROJECT_ROOT / "examples" / "logits" / "demo.py"
    spec = importlib.util.spec_from_file_location("logits_demo", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs() -> tuple[Guide, dict[str, Any], dict[str, Any]]:
    demo = demo_module()
    schema = json.loads((PROJECT_ROOT / "examples" / "logits" / "review.schema.json").read_text())
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    guide = Guide.from_artifact(compile_schema(schema, tokenizer=vocabulary))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(data_path("models", "tiny-gpt2")))
    model.eval()
    prompt = np.random.default_rng(5).integers(0, 50_000, size=6).tolist()
    steps = {run: demo.decode_steps(model, prompt, guide, run, 200, FINISH_AFTER) for run in demo.RUNS}
    outcomes = {run: demo.outcome(guide, steps[run], schema) for run in demo.RUNS}
    return guide, steps, outcomes


def test_unmasked_steps_are_the_model_argmax(runs: tuple[Guide, dict[str, Any], dict[str, Any]]) -> None:
    guide, steps, _ = runs
    assert steps["unmasked"]
    for step in steps["unmasked"]:
        assert step["rank"] == 0 and step["token"] == step["model_best_token"]
        assert step["allowed"] == guide.vocab_size


@pytest.mark.parametrize("run", ["greedy", "greedy+finish"])
def test_masked_steps_chain_states_and_end_valid(
    runs: tuple[Guide, dict[str, Any], dict[str, Any]], run: str
) -> None:
    guide, steps, outcomes = runs
    state = guide.start()
    for step in steps[run]:
        assert step["state"] == state
        assert step["logit"] <= step["model_best_logit"]
        if step["token"] == guide.eos:
            assert guide.is_accept(state)
            break
        state = guide.advance(state, step["token"])
        assert state is not None and step["next_state"] == state
    assert outcomes[run]["schema_valid"] and outcomes[run]["ended_with_eos"]


def test_finish_mode_shares_the_greedy_prefix_then_only_moves_closer(
    runs: tuple[Guide, dict[str, Any], dict[str, Any]],
) -> None:
    guide, steps, _ = runs
    plain, finishing = steps["greedy"], steps["greedy+finish"]
    assert [s["token"] for s in finishing[:FINISH_AFTER]] == [s["token"] for s in plain[:FINISH_AFTER]]
    for step in finishing[FINISH_AFTER:]:
        assert step["finish_mode"]
        if step["token"] != guide.eos:
            assert guide.distance(step["next_state"]) < guide.distance(step["state"])
    assert len(finishing) <= FINISH_AFTER + guide.distance(finishing[FINISH_AFTER]["state"]) + 1
