"""Vocabularies: token id -> the raw bytes the token adds to the text.

Takes: a ``tokenizer.json`` path (or a folder holding one), a ``.gguf`` model file, a Hugging Face
model name found in the local hub cache, the built-in name ``"bytes"``, or an already loaded
``Vocabulary``. Hands on: a ``Vocabulary`` (see ``moonmaskc.vocabulary.core``). The trie
(``moonmaskc.trie``) and the token table are built from it.

Modules:

- ``core``: the ``Vocabulary`` type, its fingerprint and arrays, ``bytes_vocabulary()``.
- ``tokenizer_json``: ``tokenizer.json`` files (through the ``tokenizers`` library, imported only
  when a file is parsed), behind the disk cache.
- ``gguf``: the vocabulary in a GGUF model file's metadata; ``gguf_metadata`` reads that metadata
  with the standard library.
- ``hub_cache``: a model's ``tokenizer.json`` in the local Hugging Face cache.

Every module imports ``core`` and nothing above it, so there is no import cycle; importing this
package imports neither ``tokenizers`` nor ``gguf``.
"""

from __future__ import annotations

import os
from pathlib import Path

from moonmaskc.errors import VocabularyError
from moonmaskc.vocabulary.core import (
    BYTES_EOS_TOKEN,
    BYTES_VOCABULARY_NAME,
    FINGERPRINT_LABEL,
    MAX_TOKEN_LENGTH,
    USUAL_EOS_NAMES,
    Vocabulary,
    bytes_vocabulary,
    gpt2_unicode_to_byte,
)
from moonmaskc.vocabulary.gguf import read_gguf_vocabulary
from moonmaskc.vocabulary.gguf_metadata import read_gguf_metadata
from moonmaskc.vocabulary.hub_cache import hub_cache_dirs, hub_cache_tokenizer
from moonmaskc.vocabulary.tokenizer_json import (
    cached_tokenizer_vocabulary,
    read_tokenizer_file,
    token_decoder,
    tokenizer_config_path,
)

__all__ = [
    "BYTES_EOS_TOKEN",
    "BYTES_VOCABULARY_NAME",
    "FINGERPRINT_LABEL",
    "MAX_TOKEN_LENGTH",
    "USUAL_EOS_NAMES",
    "Vocabulary",
    "bytes_vocabulary",
    "gpt2_unicode_to_byte",
    "hub_cache_dirs",
    "load_vocabulary",
    "read_gguf_metadata",
    "read_gguf_vocabulary",
    "read_tokenizer_file",
    "token_decoder",
    "tokenizer_config_path",
]


def load_vocabulary(spec: str | os.PathLike[str] | Vocabulary, eos: str | None = None) -> Vocabulary:
    """A vocabulary from a path (``tokenizer.json``, its folder, or a ``.gguf`` model file), a cached
    model name, ``"bytes"``, or a ``Vocabulary`` (returned as is).

    ``eos`` names the eos token; without it the ``tokenizer_config.json`` beside the file decides,
    else the first of the usual names (``</s>``, ``<|endoftext|>``, ...) present in the vocabulary.
    """
    if isinstance(spec, Vocabulary):
        if eos is not None and spec.eos_token != eos:
            raise VocabularyError(f"eos {eos!r} was given for an already loaded vocabulary with another eos")
        return spec
    if not isinstance(spec, str | os.PathLike):
        raise VocabularyError(
            f"a tokenizer is a path to a tokenizer.json (or its folder, or a .gguf file), a cached "
            f"model name, 'bytes' or a loaded Vocabulary, not {type(spec).__name__} {spec!r}"
        )
    text = os.fspath(spec)
    if not isinstance(text, str):
        raise VocabularyError(f"a tokenizer path must be text, not {text!r}")
    if text == BYTES_VOCABULARY_NAME:
        if eos not in (None, BYTES_EOS_TOKEN):
            raise VocabularyError(f"the built-in bytes vocabulary has only eos {BYTES_EOS_TOKEN!r}")
        return bytes_vocabulary()
    path = Path(text).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
        if not path.is_file():
            raise VocabularyError(f"folder {spec} holds no tokenizer.json")
    elif not path.is_file():
        path = hub_cache_tokenizer(text)
    elif path.suffix.lower() == ".gguf":
        return read_gguf_vocabulary(path, eos)
    return cached_tokenizer_vocabulary(path, eos)
