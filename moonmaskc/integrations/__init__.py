"""Bridges from moonmaskc artifacts to model runtimes. Each submodule imports its own optional
dependency; importing this package imports none of them.

- ``moonmaskc.integrations.transformers``: ``MoonmaskLogitsProcessor`` for ``model.generate``
  (needs ``torch`` and ``transformers``: the ``transformers`` extra).
- ``moonmaskc.integrations.llama_cpp``: ``MoonmaskLlamaProcessor``, a logits processor for
  llama-cpp-python's ``Llama(...)`` and ``create_chat_completion`` (needs ``llama_cpp``: the
  ``llama-cpp`` extra).
- ``moonmaskc.integrations.hf_models``: ``load_causal_lm(spec)``, a model and its tokenizer from a
  folder, a GGUF file or a Hugging Face model id (for the examples, benchmarks and tests).

A GGUF model file's vocabulary is read by ``moonmaskc.vocabulary.gguf`` (``load_vocabulary`` on a
``.gguf`` path).
"""
