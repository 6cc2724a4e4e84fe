"""The vocabulary stored in a GGUF model file (llama.cpp's format), as a moonmaskc ``Vocabulary``.

Takes: a path to a ``.gguf`` file and, optionally, the eos token's text. Hands on: the same
``Vocabulary`` type that ``moonmaskc.vocabulary.load_vocabulary`` builds from a ``tokenizer.json``,
so an artifact compiled against the GGUF file serves exactly the model inside it.

Read from the metadata keys ``tokenizer.ggml.model``, ``tokenizer.ggml.tokens``,
``tokenizer.ggml.token_type`` and ``tokenizer.ggml.eos_token_id`` (the tensors are never read):

- ``gpt2`` (byte-level BPE): a normal token's characters map back to bytes through GPT-2's
  byte <-> character table (the ByteLevel decoder of ``tokenizer.json``).
- ``llama`` (SentencePiece): ``<0xNN>`` byte tokens are that byte; ``▁`` is a space.
- Token types: control, unknown and unused tokens are special (never in a mask); user-defined
  tokens stand for their UTF-8 text, as llama.cpp renders them.

The metadata is read by ``moonmaskc.vocabulary.gguf_metadata`` (standard library only); the
``gguf`` package is not needed here (transformers needs it to load a GGUF model's weights).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moonmaskc.errors import VocabularyError
from moonmaskc.vocabulary.core import Vocabulary, gpt2_unicode_to_byte
from moonmaskc.vocabulary.gguf_metadata import read_gguf_metadata

__all__ = ["GGUF_TOKEN_TYPES", "read_gguf_vocabulary", "vocabulary_from_gguf_fields"]

GGUF_TOKEN_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}
SPECIAL_TOKEN_TYPES = frozenset({2, 3, 5})
SUPPORTED_MODELS = ("gpt2", "llama")
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def read_gguf_vocabulary(path: str | os.PathLike[str], eos: str | None = None) -> Vocabulary:
    """The vocabulary in the metadata of the GGUF file at ``path``.

    ``eos`` names the eos token; without it, ``tokenizer.ggml.eos_token_id`` decides."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise VocabularyError(f"GGUF file {file} does not exist")
    fields = read_gguf_metadata(file, _FIELD_NAMES)
    return vocabulary_from_gguf_fields(fields, eos=eos, name=file.stem, where=str(file))


_FIELD_NAMES = (
    "tokenizer.ggml.model",
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.eos_token_id",
)


def vocabulary_from_gguf_fields(
    fields: dict[str, Any], eos: str | None = None, name: str = "gguf", where: str = "<gguf>"
) -> Vocabulary:
    """A ``Vocabulary`` from already read GGUF metadata values (keys as in ``_FIELD_NAMES``)."""
    model = fields.get("tokenizer.ggml.model")
    tokens = fields.get("tokenizer.ggml.tokens")
    if model is None or tokens is None:
        raise VocabularyError(f"{where} holds no tokenizer (tokenizer.ggml.model / tokenizer.ggml.tokens)")
    if model not in SUPPORTED_MODELS:
        raise VocabularyError(
            f"{where}: tokenizer model {model!r} is not supported (its tokens do not map to bytes by "
            f"concatenation the way moonmaskc needs); supported: {', '.join(SUPPORTED_MODELS)}"
        )
    types: Sequence[int] = fields.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    if len(types) != len(tokens):
        raise VocabularyError(f"{where}: {len(tokens)} tokens but {len(types)} token types")
    eos_id = _eos_id(tokens, fields.get("tokenizer.ggml.eos_token_id"), eos, where)
    to_bytes = _byte_level_bytes if model == "gpt2" else _sentencepiece_bytes
    token_bytes: list[bytes] = []
    special_ids: list[int] = []
    for token_id, (text, kind) in enumerate(zip(tokens, types, strict=True)):
        kind = int(kind)
        if kind in SPECIAL_TOKEN_TYPES:
            special_ids.append(token_id)
            token_bytes.append(b"")
        elif kind == 4:
            token_bytes.append(text.encode("utf-8"))
        elif kind == 6:
            token_bytes.append(_byte_token(text, token_id, where))
        else:
            token_bytes.append(to_bytes(text))
    return Vocabulary.from_tokens(
        token_bytes, eos_id=eos_id, special_ids=special_ids, name=name, eos_token=tokens[eos_id]
    )


def _eos_id(tokens: Sequence[str], stored: Any, eos: str | None, where: str) -> int:
    if eos is not None:
        try:
            return list(tokens).index(eos)
        except ValueError:
            raise VocabularyError(f"eos token {eos!r} is not in the vocabulary of {where}") from None
    if stored is None:
        raise VocabularyError(f"{where} names no eos token (tokenizer.ggml.eos_token_id); pass --eos TOKEN")
    eos_id = int(stored)
    if not 0 <= eos_id < len(tokens):
        raise VocabularyError(f"{where}: eos id {eos_id} is outside the vocabulary of {len(tokens)} tokens")
    return eos_id


_GPT2_TABLE = gpt2_unicode_to_byte()


def _byte_level_bytes(text: str) -> bytes:
    try:
        return bytes(_GPT2_TABLE[c] for c in text)
    except KeyError:
        raise VocabularyError(
            f"byte-level token {text!r} holds a character outside GPT-2's byte table"
        ) from None


def _sentencepiece_bytes(text: str) -> bytes:
    return text.replace("▁", " ").encode("utf-8")


def _byte_token(text: str, token_id: int, where: str) -> bytes:
    match = _BYTE_TOKEN.fullmatch(text)
    if match is None:
        raise VocabularyError(f"{where}: byte token {token_id} is {text!r}, not of the form <0xNN>")
    return bytes([int(match.group(1), 16)])
