"""docs/artifact-format.md is true: a program that follows it with plain numpy (no moonmaskc)
gets the same masks, next states and verdicts as moonmaskc's own runtime."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from moonmaskc import compile_regex
from moonmaskc.runtime import Guide
from tests.conftest import data_path

PATTERN = r"(\{\"id\":[1-9]\d{0,3},\"tags\":\[(\"[a-z ]{1,12}\"(,\"[a-z ]{1,12}\")*)?\]\})"


class PlainNumpyReader:
    """Follows docs/artifact-format.md to the letter."""

    def __init__(self, path: Path) -> None:
        with np.load(path, allow_pickle=False) as archive:
            self.a = {name: archive[name] for name in archive.files}
        a = self.a
        assert str(a["format"]) == "moonmaskc-artifact" and int(a["format_version"]) == 3
        self.row_of = a["tokens_state_row"]
        self.token_class = a["tokens_token_class"]
        self.row_offsets, self.row_classes = a["tokens_row_class_offsets"], a["tokens_row_classes"]
        self.next_offsets, self.next_states = a["tokens_next_offsets"], a["tokens_next"]
        lengths = a["vocab_token_lengths"].astype(np.int64)
        self.starts = np.cumsum(lengths) - lengths
        self.lengths = lengths

    def token_bytes(self, token: int) -> bytes:
        start = int(self.starts[token])
        return self.a["vocab_token_bytes"][start : start + int(self.lengths[token])].tobytes()

    def mask_row(self, row: int) -> np.ndarray:
        a = self.a
        base = int(a["tokens_mask_base"][row])
        words = (len(a["vocab_token_lengths"]) + 31) // 32
        out = self.mask_row(base) if base >= 0 else np.zeros(words, dtype=np.uint32)
        low, high = a["tokens_mask_delta_offsets"][row : row + 2]
        out[a["tokens_mask_delta_index"][low:high]] = a["tokens_mask_delta_value"][low:high]
        return out

    def mask(self, state: int) -> np.ndarray:
        return self.mask_row(int(self.row_of[state]))

    def allowed(self, state: int) -> np.ndarray:
        return np.flatnonzero(np.unpackbits(self.mask(state).view(np.uint8), bitorder="little"))

    def advance(self, state: int, token: int) -> int | None:
        row = self.row_of[state]
        classes = self.row_classes[self.row_offsets[row] : self.row_offsets[row + 1]]
        cls = self.token_class[token]
        rank = int(np.searchsorted(classes, cls))
        if rank == len(classes) or classes[rank] != cls:
            return None
        return int(self.next_states[self.next_offsets[state] + rank])

    def walk_bytes(self, state: int, data: bytes) -> int:
        a = self.a
        for byte in data:
            state = int(a["dfa_transitions"][state, a["dfa_byte_class"][byte]])
            if state == 0:
                break
        return state

    def run_bytes(self, data: bytes) -> tuple[int, bool]:
        state = self.walk_bytes(int(self.a["dfa_start"]), data)
        return state, bool(self.a["dfa_accepting"][state])


def check_against_runtime(path: Path, samples: int) -> None:
    reader = PlainNumpyReader(path)
    guide = Guide.load(path)
    rng = random.Random(3)
    for _ in range(samples):
        state = guide.start()
        text = b""
        for _step in range(40):
            assert np.array_equal(reader.mask(state), guide.mask(state))
            allowed = guide.allowed(state)
            assert np.array_equal(reader.allowed(state), allowed)
            token = int(rng.choice(allowed.tolist()))
            if token == guide.eos:
                assert reader.run_bytes(text)[1]
                break
            assert reader.advance(state, token) == guide.advance(state, token)
            text += reader.token_bytes(token)
            following = guide.advance(state, token)
            assert following is not None
            state = following
            assert reader.run_bytes(text)[0] == state
            other = int(rng.randrange(guide.vocab_size))
            assert reader.advance(state, other) == guide.advance(state, other)
            if other != guide.eos and reader.token_bytes(other):
                walked = reader.walk_bytes(state, reader.token_bytes(other))
                assert reader.advance(state, other) == (walked or None)


def test_documented_layout_with_bytes_vocabulary(tmp_path: Path) -> None:
    path = compile_regex(PATTERN).save(tmp_path / "bytes.npz")
    check_against_runtime(path, samples=50)


def test_documented_layout_with_gpt2(tmp_path: Path) -> None:
    tokenizer = data_path("tokenizers", "gpt2.json")
    path = compile_regex(PATTERN, tokenizer=str(tokenizer)).save(tmp_path / "gpt2.npz")
    check_against_runtime(path, samples=30)
