"""``tokenizer.json`` files (Hugging Face tokenizers) as moonmaskc vocabularies.

Takes: a path to a ``tokenizer.json`` and, optionally, the eos token's text. Hands on: a
``Vocabulary`` (``read_tokenizer_file``; ``cached_tokenizer_vocabulary`` puts it behind the disk
cache), the per-token bytes function of a decoder (``token_decoder``) and the
``tokenizer_config.json`` that names the eos (``tokenizer_config_path``).

``tokenizers`` is imported only inside ``read_tokenizer_file``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from moonmaskc.cache import cache_path, read_cached_arrays, write_cached_arrays
from moonmaskc.errors import VocabularyError
from moonmaskc.vocabulary.core import FINGERPRINT_LABEL, USUAL_EOS_NAMES, Vocabulary, gpt2_unicode_to_byte

__all__ = ["cached_tokenizer_vocabulary", "read_tokenizer_file", "token_decoder", "tokenizer_config_path"]

_BYTE_FALLBACK_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def cached_tokenizer_vocabulary(path: Path, eos: str | None) -> Vocabulary:
    """``read_tokenizer_file`` behind the disk cache, keyed by the files' contents and ``eos``."""
    config = tokenizer_config_path(path)
    try:
        key = hashlib.sha256(FINGERPRINT_LABEL + path.read_bytes())
        key.update(b"\x00config\x00" + (config.read_bytes() if config is not None else b""))
    except OSError as error:
        raise VocabularyError(f"cannot read tokenizer {path}: {error}") from None
    key.update(b"\x00eos\x00" + (eos.encode("utf-8") if eos is not None else b"\xff"))
    cache_file = cache_path("vocabulary", key.hexdigest())
    arrays = read_cached_arrays(cache_file)
    if arrays is not None:
        try:
            return Vocabulary.from_arrays(arrays)
        except VocabularyError:
            pass
    vocabulary = read_tokenizer_file(path, eos)
    write_cached_arrays(cache_file, vocabulary.to_arrays())
    return vocabulary


def read_tokenizer_file(path: Path, eos: str | None) -> Vocabulary:
    """Parse ``path`` with the ``tokenizers`` library and map every token to its bytes."""
    try:
        from tokenizers import Tokenizer
    except ImportError as error:  # pragma: no cover - tokenizers is a dependency
        raise VocabularyError("reading a tokenizer.json needs the 'tokenizers' package") from error
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as error:
        raise VocabularyError(_unreadable_tokenizer_message(path, error)) from None
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    strings: list[str | None] = [None] * size
    for token, token_id in tokenizer.get_vocab(with_added_tokens=True).items():
        if 0 <= token_id < size:
            strings[token_id] = token
    added: dict[int, Any] = tokenizer.get_added_tokens_decoder()
    special_ids = sorted(i for i, token in added.items() if token.special and 0 <= i < size)
    for i, token in added.items():
        if 0 <= i < size:
            strings[i] = token.content
    decoder_state = tokenizer.decoder.__getstate__() if tokenizer.decoder is not None else None
    decoder_spec = json.loads(decoder_state) if decoder_state else None
    to_bytes = token_decoder(decoder_spec, path)
    eos_id = _find_eos(strings, eos, path)
    token_bytes = [b"" if s is None else to_bytes(s) for s in strings]
    return Vocabulary.from_tokens(
        token_bytes,
        eos_id=eos_id,
        special_ids=special_ids,
        name=path.stem if path.name != "tokenizer.json" else path.parent.name,
        eos_token=strings[eos_id] or "",
    )


def _unreadable_tokenizer_message(path: Path, error: Exception) -> str:
    """Why ``path`` is not a tokenizer, in the user's terms: not JSON, JSON of another kind, or a
    tokenizer.json that the tokenizers library cannot read (its own message then follows)."""
    expected = (
        "a tokenizer is a tokenizer.json file as Hugging Face tokenizers saves it (a JSON object "
        "with a 'model' section), its folder, a model name in the local cache, or 'bytes'"
    )
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"cannot read tokenizer {path}: the file is not JSON text, so not a tokenizer; {expected}"
    if not isinstance(value, dict) or "model" not in value:
        held = "an object without a 'model' section" if isinstance(value, dict) else "no JSON object"
        return f"cannot read tokenizer {path}: its JSON holds {held}, so it is not a tokenizer; {expected}"
    return f"cannot read tokenizer {path}: the tokenizers library refused it ({error})"


def token_decoder(spec: dict[str, Any] | None, path: Path) -> Callable[[str], bytes]:
    """The per-token bytes function for a tokenizer's decoder (its JSON spec).

    Supported: ByteLevel; sequences of Replace, ByteFallback, Fuse, Strip and Metaspace (the
    SentencePiece family); no decoder (tokens are their UTF-8 text). Strip and the first-token
    rule of Metaspace only act at the very start of a decoded text, never inside it, so they do
    not change a token's bytes here.
    """
    if spec is None:
        return lambda token: token.encode("utf-8")
    steps = spec["decoders"] if spec.get("type") == "Sequence" else [spec]
    string_steps: list[Callable[[str], str]] = []
    byte_level = False
    byte_fallback = False
    for step in steps:
        kind = step.get("type")
        if kind == "ByteLevel":
            byte_level = True
        elif kind == "ByteFallback":
            byte_fallback = True
        elif kind == "Replace" and "String" in step.get("pattern", {}):
            string_steps.append(_replacer(step["pattern"]["String"], step["content"]))
        elif kind == "Metaspace":
            string_steps.append(_replacer(step.get("replacement", "▁"), " "))
        elif kind in ("Fuse", "Strip"):
            continue
        else:
            raise VocabularyError(
                f"tokenizer {path}: decoder {kind!r} is not supported (its tokens do not map to "
                "bytes by concatenation); supported: ByteLevel, ByteFallback, Replace, Metaspace, Fuse, Strip"
            )
    if byte_level:
        table = gpt2_unicode_to_byte()

        def byte_level_bytes(token: str) -> bytes:
            # Like the tokenizers ByteLevel decoder: a token with a character outside the table
            # (an added token written as plain text) stands for its UTF-8 bytes.
            try:
                return bytes(table[c] for c in token)
            except KeyError:
                return token.encode("utf-8")

        return byte_level_bytes

    def sentencepiece_bytes(token: str) -> bytes:
        if byte_fallback:
            match = _BYTE_FALLBACK_TOKEN.fullmatch(token)
            if match:
                return bytes([int(match.group(1), 16)])
        for replace in string_steps:
            token = replace(token)
        return token.encode("utf-8")

    return sentencepiece_bytes


def _replacer(old: str, new: str) -> Callable[[str], str]:
    return lambda token: token.replace(old, new)


def _find_eos(strings: Sequence[str | None], eos: str | None, path: Path) -> int:
    ids = {s: i for i, s in enumerate(strings) if s is not None}
    if eos is not None:
        if eos not in ids:
            raise VocabularyError(f"eos token {eos!r} is not in the vocabulary of {path}")
        return ids[eos]
    configured = _configured_eos(path)
    if configured is not None:
        if configured not in ids:
            raise VocabularyError(
                f"the tokenizer_config.json beside {path} names eos {configured!r}, which is not in "
                "the vocabulary; pass the eos token explicitly (--eos)"
            )
        return ids[configured]
    for name in USUAL_EOS_NAMES:
        if name in ids:
            return ids[name]
    raise VocabularyError(f"no eos token found in {path}; pass it explicitly (--eos TOKEN)")


def tokenizer_config_path(path: Path) -> Path | None:
    """``<stem>.tokenizer_config.json`` beside the file, else ``tokenizer_config.json`` in its folder."""
    for candidate in (
        path.with_name(f"{path.stem}.tokenizer_config.json"),
        path.with_name("tokenizer_config.json"),
    ):
        if candidate.is_file():
            return candidate
    return None


def _configured_eos(path: Path) -> str | None:
    config_path = tokenizer_config_path(path)
    if config_path is None:
        return None
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise VocabularyError(f"cannot read {config_path}: {error}") from None
    eos = config.get("eos_token") if isinstance(config, dict) else None
    if isinstance(eos, dict):
        eos = eos.get("content")
    return eos if isinstance(eos, str) else None
