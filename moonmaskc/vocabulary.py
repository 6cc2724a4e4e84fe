"""Vocabularies: token id -> the raw bytes the token adds to the text.

Takes: a ``tokenizer.json`` path (or a folder holding one), a Hugging Face model name found in the
local hub cache, the built-in name ``"bytes"``, or an already loaded ``Vocabulary``.
Hands on: a ``Vocabulary`` with one ``bytes`` value per token id, the eos id, the special ids and a
SHA-256 fingerprint. The trie (``moonmaskc.trie``) and the token table are built from it.

Invariants:
- ``token_bytes[i]`` is what token ``i`` contributes in the middle of a text; tokens that can never
  be masked in (special tokens, eos itself, ids with no token) hold ``b""``. The text-start effects of
  some decoders (SentencePiece's stripped leading space) are not part of a token's bytes.
- The fingerprint hashes the size, the eos id, the special ids and every token's bytes, so any
  change that could alter a mask changes it.

This module imports ``tokenizers`` only inside the function that parses a tokenizer file, so that
the numpy-only runtime may import ``Vocabulary``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from moonmaskc.cache import cache_path, read_cached_arrays, write_cached_arrays
from moonmaskc.errors import VocabularyError

BYTES_VOCABULARY_NAME = "bytes"
BYTES_EOS_TOKEN = "<eos>"
USUAL_EOS_NAMES = ("</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<eos>")
FINGERPRINT_LABEL = b"moonmaskc-vocabulary-v1\x00"
MAX_TOKEN_LENGTH = 65535

_BYTE_FALLBACK_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Token id -> bytes, with eos and special ids. Build with ``load_vocabulary`` or ``from_tokens``."""

    name: str
    token_bytes: tuple[bytes, ...]
    eos_id: int
    special_ids: tuple[int, ...]
    eos_token: str = "<eos>"
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        if not 0 <= self.eos_id < len(self.token_bytes):
            raise VocabularyError(f"eos id {self.eos_id} is outside the vocabulary of {self.size} tokens")
        if self.token_bytes[self.eos_id] != b"":
            raise VocabularyError("internal: the eos token must hold no text bytes")
        for i in self.special_ids:
            if self.token_bytes[i] != b"":
                raise VocabularyError(f"internal: special token {i} must hold no text bytes")
        object.__setattr__(self, "fingerprint", _fingerprint(self.token_bytes, self.eos_id, self.special_ids))

    @property
    def size(self) -> int:
        return len(self.token_bytes)

    @classmethod
    def from_tokens(
        cls,
        token_bytes: Sequence[bytes],
        eos_id: int,
        special_ids: Sequence[int] = (),
        name: str = "custom",
        eos_token: str = BYTES_EOS_TOKEN,
    ) -> Vocabulary:
        """A vocabulary from raw token bytes; eos and special ids are blanked to ``b""``."""
        blank = {eos_id, *special_ids}
        data = tuple(b"" if i in blank else bytes(t) for i, t in enumerate(token_bytes))
        too_long = [i for i, t in enumerate(data) if len(t) > MAX_TOKEN_LENGTH]
        if too_long:
            raise VocabularyError(f"token {too_long[0]} is longer than {MAX_TOKEN_LENGTH} bytes")
        specials = tuple(sorted(set(special_ids) - {eos_id}))
        return cls(name=name, token_bytes=data, eos_id=eos_id, special_ids=specials, eos_token=eos_token)

    def maskable_ids(self) -> np.ndarray:
        """Ids of the tokens that may appear in a mask for their bytes (not eos, specials, empties)."""
        lengths = self.token_lengths()
        return np.flatnonzero(lengths > 0).astype(np.int32)

    def token_lengths(self) -> np.ndarray:
        return np.fromiter((len(t) for t in self.token_bytes), dtype=np.int64, count=self.size)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain numeric / unicode arrays (names ``vocab_*``), loadable with ``allow_pickle=False``."""
        return {
            "vocab_name": np.array(self.name),
            "vocab_fingerprint": np.array(self.fingerprint),
            "vocab_eos_id": np.array(self.eos_id, dtype=np.int64),
            "vocab_eos_token": np.array(self.eos_token),
            "vocab_special_ids": np.array(self.special_ids, dtype=np.int32),
            "vocab_token_lengths": self.token_lengths().astype(np.uint16),
            "vocab_token_bytes": np.frombuffer(b"".join(self.token_bytes), dtype=np.uint8).copy(),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Vocabulary:
        """The inverse of ``to_arrays``; checks the stored fingerprint."""
        try:
            lengths = np.asarray(arrays["vocab_token_lengths"]).astype(np.int64)
            data = np.asarray(arrays["vocab_token_bytes"], dtype=np.uint8).tobytes()
            eos_id = int(arrays["vocab_eos_id"])
            special_ids = tuple(int(i) for i in np.asarray(arrays["vocab_special_ids"]).ravel())
            name = str(arrays["vocab_name"])
            eos_token = str(arrays["vocab_eos_token"])
            stored = str(arrays["vocab_fingerprint"])
        except (KeyError, TypeError, ValueError) as error:
            raise VocabularyError(f"stored vocabulary arrays are incomplete or malformed: {error}") from None
        if lengths.ndim != 1 or (lengths < 0).any() or int(lengths.sum()) != len(data):
            raise VocabularyError("stored vocabulary arrays are inconsistent (token lengths vs bytes)")
        ends = np.cumsum(lengths)
        starts = ends - lengths
        tokens = tuple(data[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True))
        if not 0 <= eos_id < len(tokens) or any(not 0 <= i < len(tokens) for i in special_ids):
            raise VocabularyError("stored vocabulary arrays hold an eos or special id out of range")
        vocabulary = cls(
            name=name, token_bytes=tokens, eos_id=eos_id, special_ids=special_ids, eos_token=eos_token
        )
        if vocabulary.fingerprint != stored:
            raise VocabularyError("stored vocabulary does not match its fingerprint (corrupted data)")
        return vocabulary


def _fingerprint(token_bytes: Sequence[bytes], eos_id: int, special_ids: Sequence[int]) -> str:
    digest = hashlib.sha256(FINGERPRINT_LABEL)
    digest.update(np.array([len(token_bytes), eos_id, len(special_ids)], dtype="<i8").tobytes())
    digest.update(np.array(special_ids, dtype="<i8").tobytes())
    lengths = np.fromiter((len(t) for t in token_bytes), dtype="<u4", count=len(token_bytes))
    digest.update(lengths.tobytes())
    digest.update(b"".join(token_bytes))
    return digest.hexdigest()


def bytes_vocabulary() -> Vocabulary:
    """The built-in vocabulary: ids 0..255 are the single bytes, 256 is eos."""
    tokens = [bytes([b]) for b in range(256)] + [b""]
    return Vocabulary.from_tokens(tokens, eos_id=256, name=BYTES_VOCABULARY_NAME, eos_token=BYTES_EOS_TOKEN)


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
    text = os.fspath(spec)
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
        path = _hub_cache_tokenizer(text)
    elif path.suffix.lower() == ".gguf":
        from moonmaskc.integrations.gguf_vocabulary import read_gguf_vocabulary

        return read_gguf_vocabulary(path, eos)
    return _cached_vocabulary(path, eos)


def _cached_vocabulary(path: Path, eos: str | None) -> Vocabulary:
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


def hub_cache_dirs() -> list[Path]:
    """Where Hugging Face hub caches may live, most specific first."""
    dirs: list[Path] = []
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            dirs.append(Path(os.environ[variable]).expanduser())
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    dirs.append(Path("~/.cache/huggingface/hub").expanduser())
    return dirs


def _hub_cache_tokenizer(model: str) -> Path:
    folder_name = "models--" + model.replace("/", "--")
    for hub in hub_cache_dirs():
        snapshots = hub / folder_name / "snapshots"
        if not snapshots.is_dir():
            continue
        ref = hub / folder_name / "refs" / "main"
        if ref.is_file():
            candidate = snapshots / ref.read_text().strip() / "tokenizer.json"
            if candidate.is_file():
                return candidate
        found = sorted(snapshots.glob("*/tokenizer.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        if found:
            return found[0]
    raise VocabularyError(
        f"{model!r} is neither a tokenizer.json file, a folder holding one, nor a model in the local "
        f"Hugging Face cache ({', '.join(str(d) for d in hub_cache_dirs())}); moonmaskc never downloads: "
        "pass a path to a tokenizer.json, or 'bytes'"
    )


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


def gpt2_unicode_to_byte() -> dict[str, int]:
    """The inverse of GPT-2's byte -> printable character table used by byte-level BPE."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    table = {chr(b): b for b in printable}
    others = [b for b in range(256) if b not in set(printable)]
    table.update({chr(256 + n): b for n, b in enumerate(others)})
    return table


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
