"""Bridges from moonmaskc artifacts to model runtimes. Each submodule imports its own optional
dependency; importing this package imports none of them.

- ``moonmaskc.integrations.transformers``: ``MoonmaskLogitsProcessor`` for ``model.generate``
  (needs ``torch`` and ``transformers``: the ``transformers`` extra).
- ``moonmaskc.integrations.gguf_vocabulary``: ``read_gguf_vocabulary(path)``, the vocabulary stored in
  a GGUF model file's metadata (needs ``gguf``: the ``gguf`` extra).
- ``moonmaskc.integrations.hf_models``: ``load_causal_lm(spec)``, a model and its tokenizer from a
  folder, a GGUF file or a Hugging Face model id (for the examples, benchmarks and tests).
"""
