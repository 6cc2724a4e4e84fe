"""The vocabulary type: token id -> the raw bytes the token adds to the text.

Hands on: ``Vocabulary`` (one ``bytes`` value per token id, the eos id, the special ids and a
SHA-256 fingerprint), the built-in ``bytes_vocabulary()`` and GPT-2's byte <-> character table
(shared by the tokenizer.json and GGUF readers).

Invariants:
- ``token_bytes[i]`` is what token ``i`` contributes in the middle of a text; tokens that can never
  be masked in (special tokens, eos itself, ids with no token) hold ``b""``. The text-start effects of
  some decoders (SentencePiece's stripped leading space) are not part of a token's bytes.
- The fingerprint hashes the size, the eos id, the special ids and every token's bytes, so any
  change that could alter a mask changes it.

Imports numpy and moonmaskc's errors only, so that the numpy-only runtime may import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from moonmaskc.errors import VocabularyError
from moonmaskc.format import FINGERPRINT_LABEL, vocabulary_fingerprint

__all__ = [
    "BYTES_EOS_TOKEN",
    "BYTES_VOCABULARY_NAME",
    "FINGERPRINT_LABEL",
    "MAX_TOKEN_LENGTH",
    "USUAL_EOS_NAMES",
    "Vocabulary",
    "bytes_vocabulary",
    "gpt2_unicode_to_byte",
]

BYTES_VOCABULARY_NAME = "bytes"
BYTES_EOS_TOKEN = "<eos>"
USUAL_EOS_NAMES = ("</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<eos>")
MAX_TOKEN_LENGTH = 65535


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
    lengths = np.fromiter((len(t) for t in token_bytes), dtype="<u4", count=len(token_bytes))
    return vocabulary_fingerprint(lengths, b"".join(token_bytes), eos_id, special_ids)


@cache
def bytes_vocabulary() -> Vocabulary:
    """The built-in vocabulary: ids 0..255 are the single bytes, 256 is eos. One object per
    process (vocabularies are immutable), so that its trie stays in memory between compiles."""
    tokens = [bytes([b]) for b in range(256)] + [b""]
    return Vocabulary.from_tokens(tokens, eos_id=256, name=BYTES_VOCABULARY_NAME, eos_token=BYTES_EOS_TOKEN)


def gpt2_unicode_to_byte() -> dict[str, int]:
    """The inverse of GPT-2's byte -> printable character table used by byte-level BPE."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    table = {chr(b): b for b in printable}
    others = [b for b in range(256) if b not in set(printable)]
    table.update({chr(256 + n): b for n, b in enumerate(others)})
    return table
