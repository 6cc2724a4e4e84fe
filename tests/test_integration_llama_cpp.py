"""llama.cpp as a runtime: ``MoonmaskLlamaProcessor`` on SmolLM2-135M-Instruct's GGUF file.

- The vocabulary read from the GGUF file agrees with llama.cpp's own tokenizer: every id renders
  to the same bytes (``Llama.detokenize``), and llama.cpp's tokenization of a set of texts spells
  them back and has the same ids as the ``tokenizers`` library on SmolLM2's tokenizer.json.
- Masked generation (sampling, several seeds; greedy; chat completion) on the example schemas:
  every output is valid (jsonschema), ended with eos (``finish_reason == "stop"``) and within
  its ``max_tokens`` budget, down to the shortest valid output's length.
- Bad input: another vocabulary, logits of the wrong length, NaN logits, budgets of 0 or too
  small, a call after eos: each a clear error (these run without llama.cpp).

Without llama-cpp-python or the GGUF file the model tests skip and say why;
``MOONMASKC_REQUIRE_LLAMA_CPP=1`` (as in CI) makes them fail instead.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

import moonmaskc
from moonmaskc.errors import RuntimeInputError, VocabularyError
from moonmaskc.integrations.hf_models import SMOLLM2_INSTALL, smollm2_gguf_path
from moonmaskc.integrations.llama_cpp import MoonmaskLlamaProcessor, token_piece, vocabulary_mismatches
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import Vocabulary, read_gguf_vocabulary
from tests.conftest import PROJECT_ROOT, data_path

REQUIRED = os.environ.get("MOONMASKC_REQUIRE_LLAMA_CPP") == "1"
SCHEMAS = ("user.json", "order.json", "tool_call.json", "note.json")  # note.json: free values
SEEDS = (0, 1, 2, 3)
MAX_TOKENS = 96
TEXTS = (
    "Hello, world!",
    '{"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"]}',
    "  leading spaces, trailing tabs\t\t\nand\r\nnewlines\n\n\n",
    "Ünïcödé: naïve café, Straße, Ελληνικά, русский, 日本語のテキスト, 한국어",
    "emoji 🦙🚀👩‍💻 and symbols ∀x∈ℝ: x² ≥ 0 — “quotes” ‘single’ …",
    "def f(x):\n    return x ** 2  # square\n",
    "numbers 3.14159 -42 1e10 0x1F 1,234,567.89",
    "<|im_start|> is written as plain text here, not as a control token",
    "",
)


def unavailable(reason: str) -> None:
    """Skip, or fail when ``MOONMASKC_REQUIRE_LLAMA_CPP=1``."""
    if REQUIRED:
        pytest.fail(f"{reason} (MOONMASKC_REQUIRE_LLAMA_CPP=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def gguf() -> Path:
    path = smollm2_gguf_path()
    if path is None:
        unavailable(f"SmolLM2 is not installed: {SMOLLM2_INSTALL}")
    assert path is not None
    return path


@pytest.fixture(scope="module")
def llm(gguf: Path) -> Any:
    try:
        import llama_cpp
    except ImportError:
        unavailable("llama-cpp-python is not installed: pip install -e '.[llama-cpp]'")
    return llama_cpp.Llama(model_path=str(gguf), n_ctx=2048, n_threads=2, seed=0, verbose=False)


@pytest.fixture(scope="module")
def vocabulary(gguf: Path) -> Any:
    return read_gguf_vocabulary(gguf)


@pytest.fixture(scope="module")
def guides(vocabulary: Any) -> dict[str, Guide]:
    found = {}
    for name in SCHEMAS:
        schema = json.loads((PROJECT_ROOT / "examples" / "schemas" / name).read_text(encoding="utf-8"))
        found[name] = Guide.from_artifact(moonmaskc.compile_schema(schema, tokenizer=vocabulary))
    return found


def schema_of(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(
        (PROJECT_ROOT / "examples" / "schemas" / name).read_text(encoding="utf-8")
    )
    return value


def exact_schema_of(name: str) -> dict[str, Any]:
    """The schema with its numbers as ``Decimal``, so that jsonschema checks ``multipleOf`` exactly
    (``1252.58`` is a multiple of ``0.01``; in binary floating point it is not)."""
    value: dict[str, Any] = json.loads(
        (PROJECT_ROOT / "examples" / "schemas" / name).read_text(encoding="utf-8"), parse_float=Decimal
    )
    return value


def prompt_for(name: str) -> str:
    return (
        "<|im_start|>system\nReply with one JSON value that conforms to this JSON Schema, and nothing "
        f"else.\nSchema: {json.dumps(schema_of(name))}<|im_end|>\n<|im_start|>user\nGive an example."
        "<|im_end|>\n<|im_start|>assistant\n"
    )


def assert_valid_within(
    processor: MoonmaskLlamaProcessor, result: dict[str, Any], name: str, budget: int
) -> None:
    """Ended with eos within ``budget``, and valid. llama.cpp stops at the eos it samples without
    calling the processor again: the processor saw the ids before eos, and its last call (the one
    more call than tokens seen) allowed the eos, the only end-of-generation token it ever allows.
    The text checked is the one the vocabulary spells, which is llama-cpp-python's text unless a
    token is longer than the 32 bytes its ``detokenize`` renders (see ``token_piece``)."""
    choice = result["choices"][0]
    text = choice["text"] if "text" in choice else choice["message"]["content"]
    assert choice["finish_reason"] == "stop", (name, text)
    assert processor.complete and not processor.finished, (name, text)
    assert processor.calls == len(processor.generated) + 1
    assert len(processor.generated) + 1 <= budget, (name, len(processor.generated), budget)
    ours = processor.guide.decode(processor.generated).decode("utf-8")
    jsonschema.validate(json.loads(ours, parse_float=Decimal), exact_schema_of(name))
    if all(len(processor.guide.decode([t])) <= 32 for t in processor.generated):
        assert text == ours


# tokenizer agreement --------------------------------------------------------------------------


def test_every_token_renders_as_llama_cpp_renders_it(llm: Any, vocabulary: Any) -> None:
    assert llm.n_vocab() == vocabulary.size
    assert llm.token_eos() == vocabulary.eos_id
    assert vocabulary_mismatches(llm, vocabulary) == []
    longest = max(range(vocabulary.size), key=lambda i: len(vocabulary.token_bytes[i]))
    assert (
        token_piece(llm, longest) == vocabulary.token_bytes[longest]
        and len(vocabulary.token_bytes[longest]) > 32
    )


def test_llama_cpp_tokenization_spells_the_texts_with_the_tokenizers_ids(llm: Any, vocabulary: Any) -> None:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(data_path("tokenizers", "smollm2.json")))
    reference.encode_special_tokens = True  # control-token names in a text are plain text, as in llama.cpp
    for text in TEXTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        assert b"".join(vocabulary.token_bytes[i] for i in ids) == text.encode("utf-8"), text
        assert ids == reference.encode(text, add_special_tokens=False).ids, text


# masked generation ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMAS)
def test_sampled_outputs_are_valid_and_end_with_eos_within_the_budget(
    llm: Any, guides: dict[str, Guide], name: str
) -> None:
    from llama_cpp import LogitsProcessorList

    for seed in SEEDS:
        processor = MoonmaskLlamaProcessor(guides[name], llama=llm, max_tokens=MAX_TOKENS)
        result = llm(
            prompt_for(name),
            max_tokens=MAX_TOKENS,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            seed=seed,
            logits_processor=LogitsProcessorList([processor]),
        )
        assert_valid_within(processor, result, name, MAX_TOKENS)


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_tightest_budget_still_ends_valid(llm: Any, guides: dict[str, Guide], name: str) -> None:
    from llama_cpp import LogitsProcessorList

    guide = guides[name]
    for slack in (0, 3):
        budget = guide.fewest_tokens(guide.start()) + slack
        processor = MoonmaskLlamaProcessor(guide, llama=llm, max_tokens=budget)
        result = llm(
            prompt_for(name),
            max_tokens=budget,
            temperature=0.8,
            seed=slack,
            logits_processor=LogitsProcessorList([processor]),
        )
        assert_valid_within(processor, result, name, budget)


def test_greedy_chat_completion_is_valid(llm: Any, guides: dict[str, Guide]) -> None:
    from llama_cpp import LogitsProcessorList

    name = "user.json"
    processor = MoonmaskLlamaProcessor(guides[name], llama=llm, max_tokens=MAX_TOKENS)
    result = llm.create_chat_completion(
        messages=[
            {"role": "system", "content": f"Reply with JSON for this schema: {json.dumps(schema_of(name))}"},
            {"role": "user", "content": "Ada Lovelace, 36, ada@example.org"},
        ],
        max_tokens=MAX_TOKENS,
        temperature=0.0,
        logits_processor=LogitsProcessorList([processor]),
    )
    assert_valid_within(processor, result, name, MAX_TOKENS)


def test_an_artifact_for_another_vocabulary_is_refused(llm: Any) -> None:
    other = moonmaskc.compile_regex("[a-z]+")  # the built-in bytes vocabulary
    with pytest.raises(VocabularyError, match="tokens but the artifact's vocabulary has 257"):
        MoonmaskLlamaProcessor(other, llama=llm)


def test_an_artifact_for_a_changed_vocabulary_of_the_same_size_is_refused(llm: Any, gguf: Path) -> None:
    """One token's bytes changed: same size, another fingerprint than the model's GGUF file."""
    vocabulary = read_gguf_vocabulary(gguf)
    tokens = list(vocabulary.token_bytes)
    tokens[300] = b"zzzz"
    changed = Vocabulary.from_tokens(
        tokens, vocabulary.eos_id, vocabulary.special_ids, eos_token="<|im_end|>"
    )
    artifact = moonmaskc.compile_regex("[a-z]+", tokenizer=changed)
    with pytest.raises(VocabularyError, match="is not the one this artifact was compiled for"):
        MoonmaskLlamaProcessor(artifact, llama=llm)


def test_an_artifact_whose_eos_does_not_end_llama_cpp_generation_is_refused(llm: Any, gguf: Path) -> None:
    artifact = moonmaskc.compile_regex("[a-z]+", tokenizer=read_gguf_vocabulary(gguf, eos="<|im_start|>"))
    with pytest.raises(VocabularyError, match="not an end-of-generation token"):
        MoonmaskLlamaProcessor(artifact, llama=llm)
    with pytest.raises(VocabularyError, match="fingerprint"):
        MoonmaskLlamaProcessor(artifact, tokenizer=read_gguf_vocabulary(gguf))


# bad input, without llama.cpp -----------------------------------------------------------------


@pytest.fixture(scope="module")
def small_guide() -> Guide:
    """``[a-z]{2,4}`` over the built-in bytes vocabulary (257 tokens, eos 256)."""
    return Guide.from_artifact(moonmaskc.compile_regex("[a-z]{2,4}"))


def fresh_scores(size: int = 257) -> np.ndarray:
    return np.zeros(size, dtype=np.float32)


def test_masks_eos_until_accepting_and_keeps_the_budget(small_guide: Guide) -> None:
    processor = MoonmaskLlamaProcessor(small_guide, max_tokens=3)
    prompt = [7, 7, 7]
    first = processor(np.array(prompt, dtype=np.intc), fresh_scores())
    assert np.isneginf(first[small_guide.eos]) and np.isfinite(first[ord("a")])
    assert np.isneginf(first[ord("A")])
    second = processor(np.array([*prompt, ord("a")], dtype=np.intc), fresh_scores())
    assert np.isneginf(second[small_guide.eos])  # one letter is not accepting
    third = processor(np.array([*prompt, ord("a"), ord("b")], dtype=np.intc), fresh_scores())
    assert np.flatnonzero(np.isfinite(third)).tolist() == [small_guide.eos]  # 1 token left: eos only
    with pytest.raises(RuntimeInputError, match="already ended with eos"):
        processor(np.array([*prompt, ord("a"), ord("b"), small_guide.eos], dtype=np.intc), fresh_scores())
    assert processor.finished and processor.complete
    assert processor.generated == [ord("a"), ord("b"), small_guide.eos]


def test_bad_inputs_are_clear_errors(small_guide: Guide) -> None:
    with pytest.raises(RuntimeInputError, match="at least one new token"):
        MoonmaskLlamaProcessor(small_guide, max_tokens=0)
    with pytest.raises(RuntimeInputError, match="shortest valid output of this artifact takes 3 tokens"):
        MoonmaskLlamaProcessor(small_guide, max_tokens=2)
    with pytest.raises(RuntimeInputError, match="disagree"):
        MoonmaskLlamaProcessor(small_guide, max_tokens=5, max_new_tokens=6)
    with pytest.raises(RuntimeInputError, match=r"scores \(300,\) but the artifact's vocabulary has 257"):
        MoonmaskLlamaProcessor(small_guide)(np.array([1], dtype=np.intc), fresh_scores(300))
    scores = fresh_scores()
    scores[5] = np.nan
    with pytest.raises(RuntimeInputError, match="1 NaN values"):
        MoonmaskLlamaProcessor(small_guide)(np.array([1], dtype=np.intc), scores)
    processor = MoonmaskLlamaProcessor(small_guide)
    processor(np.array([1], dtype=np.intc), fresh_scores())
    with pytest.raises(RuntimeInputError, match="not allowed in state"):
        processor(np.array([1, ord("A")], dtype=np.intc), fresh_scores())
    processor = MoonmaskLlamaProcessor(small_guide)
    processor(np.array([1, 2, 3], dtype=np.intc), fresh_scores())
    with pytest.raises(RuntimeInputError, match="one processor per completion"):
        processor(np.array([1], dtype=np.intc), fresh_scores())
    with pytest.raises(VocabularyError, match="fingerprint"):
        MoonmaskLlamaProcessor(small_guide, tokenizer=read_gguf_vocabulary_or_skip())


def read_gguf_vocabulary_or_skip() -> Any:
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"SmolLM2 is not installed: {SMOLLM2_INSTALL}")
    return read_gguf_vocabulary(path)
