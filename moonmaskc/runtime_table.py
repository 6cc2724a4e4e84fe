"""The token table as the runtime serves it from an artifact file: each part read on first use.

Takes: an ``ArtifactFile`` (``moonmaskc.format``). Hands on: a ``ServingTable`` with the read
interface of ``TokenTable`` that ``Guide`` uses (``mask_rows[row]``, ``state_row``,
``token_class``, ``class_next``, ``allowed``, the vocabulary facts), where
- the row of each state, the token classes and the delta-coded mask rows are memory-mapped, and a
  mask row is built the first time a state uses it;
- the next-state table and the token bytes are inflated the first time a step or a decode needs
  them, and checked then.

``check`` at construction is cheap and vectorised over what a first mask needs; ``verify`` is the
deep check (every row against the next-state table), for ``moonmaskc inspect --verify``.

Only numpy and the standard library are imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np

from moonmaskc.errors import ArtifactError
from moonmaskc.format import (
    MASK_ARRAYS,
    TABLE_ARRAYS,
    VOCAB_ARRAYS,
    ArrayChecker,
    ArtifactFile,
    MaskRows,
    check_mask_arrays,
)
from moonmaskc.runtime_budget import verify_eos_steps

ALLOWED_ROWS_CACHED = 256


class ServingTable:
    """A token table served from an artifact file (see the module docstring)."""

    def __init__(self, arrays: ArtifactFile) -> None:
        self.arrays = arrays
        where = str(arrays.path)
        missing = [name for name in (*TABLE_ARRAYS, *VOCAB_ARRAYS) if name not in arrays]
        if missing:
            raise ArtifactError(f"{where} lacks the token-table arrays {', '.join(missing)}")
        check = ArrayChecker(where)
        self._check = check
        self.num_states = len(check.array("tokens_state_row", arrays["tokens_state_row"], "i", (None,)))
        self.vocab_size = len(check.array("tokens_token_class", arrays["tokens_token_class"], "iu", (None,)))
        if self.num_states < 1 or self.vocab_size < 1:
            raise check.fail("tokens_state_row", "is empty, or the vocabulary is")
        words = (self.vocab_size + 31) // 32
        rows = len(arrays["tokens_mask_base"])
        self.state_row = check.array(
            "tokens_state_row", arrays["tokens_state_row"], "i", (self.num_states,), 0, rows
        )
        if self.num_states and int(self.state_row[0]) != 0:
            raise check.fail("tokens_state_row", "gives the dead state a row other than 0")
        check_mask_arrays(arrays, rows, words, where)
        self.mask_rows = MaskRows(arrays, words)
        self.eos_id = check.scalar("vocab_eos_id", arrays["vocab_eos_id"], 0, self.vocab_size)
        self.fingerprint = _text(arrays, "vocab_fingerprint", check)
        self.vocab_arrays: Mapping[str, np.ndarray] = _VocabularyArrays(arrays, check)
        self._allowed_cache: dict[int, np.ndarray] = {}

    @property
    def num_rows(self) -> int:
        return len(self.mask_rows)

    @cached_property
    def num_classes(self) -> int:
        shape = self.arrays.declared_shape("tokens_class_next")
        if shape[:1] != (self.num_states,) or len(shape) != 2 or shape[1] < 1:
            raise self._check.fail("tokens_class_next", f"has shape {shape}, expected [states, classes]")
        return shape[1]

    @cached_property
    def token_class(self) -> np.ndarray:
        return self._check.array(
            "tokens_token_class",
            self.arrays["tokens_token_class"],
            "iu",
            (self.vocab_size,),
            0,
            self.num_classes,
        )

    @cached_property
    def class_next(self) -> np.ndarray:
        table = self._check.array(
            "tokens_class_next",
            self.arrays["tokens_class_next"],
            "iu",
            (self.num_states, self.num_classes),
            0,
            max(self.num_states, 1),
        )
        if table.size and (table[0].any() or table[:, 0].any()):
            raise self._check.fail("tokens_class_next", "lets the dead state or class 0 lead somewhere")
        return table

    @cached_property
    def eos_steps(self) -> np.ndarray | None:
        if "tokens_eos_steps" not in self.arrays:
            return None
        return self._check.array(
            "tokens_eos_steps", self.arrays["tokens_eos_steps"], "i", (self.num_states,), -1, None
        )

    def warm(self) -> None:
        """Read and build everything a step may need (mask rows, token classes, next states)."""
        self.mask_rows.warm()
        _ = self.token_class, self.class_next

    def allowed(self, state: int) -> np.ndarray:
        """Sorted int32 ids of the tokens allowed in ``state`` (read-only, cached per row)."""
        row = int(self.state_row[state])
        ids = self._allowed_cache.get(row)
        if ids is None:
            bits = np.unpackbits(self.mask_rows[row].view(np.uint8), bitorder="little")
            ids = np.flatnonzero(bits).astype(np.int32)
            ids.flags.writeable = False
            if len(self._allowed_cache) >= ALLOWED_ROWS_CACHED:
                self._allowed_cache.clear()
            self._allowed_cache[row] = ids
        return ids

    def verify(self) -> None:
        """The deep check: every mask row holds exactly the tokens whose class leads its states
        somewhere, and the states sharing a row allow the same classes (``ArtifactError``)."""
        allowed_classes = self.class_next != 0
        masks = self.mask_rows.full()
        rows = len(masks)
        _, first_state = np.unique(self.state_row, return_index=True)
        if len(first_state) != rows:
            raise self._check.fail("tokens_state_row", "leaves some mask rows to no state")
        row_classes = allowed_classes[first_state]
        if not np.array_equal(
            np.packbits(allowed_classes, axis=1), np.packbits(row_classes, axis=1)[self.state_row]
        ):
            raise self._check.fail("tokens_state_row", "joins states that allow different tokens")
        words = masks.shape[1]
        padded = np.zeros((rows, words * 32), dtype=bool)
        padded[:, : self.vocab_size] = row_classes[:, self.token_class]
        expected = np.packbits(padded, axis=1, bitorder="little").view("<u4").reshape(rows, words)
        if self.eos_steps is not None:
            eos_class = int(self.token_class[self.eos_id])
            accepting = self.class_next[:, eos_class] != 0
            try:
                verify_eos_steps(self.eos_steps, self.class_next, self.token_class, accepting, self.eos_id)
            except ValueError as error:
                raise self._check.fail("tokens_eos_steps", f"is wrong ({error})") from None
        if not np.array_equal(expected, masks):
            raise self._check.fail(
                "tokens_mask_delta_value", "gives masks that disagree with the next states"
            )


class _VocabularyArrays(Mapping[str, np.ndarray]):
    """The ``vocab_*`` arrays, each read and checked on first use."""

    def __init__(self, arrays: ArtifactFile, check: ArrayChecker) -> None:
        self._arrays = arrays
        self._check = check
        self._cache: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        found = self._cache.get(name)
        if found is None:
            if name not in VOCAB_ARRAYS:
                raise KeyError(name)
            found = self._arrays[name]
            if name == "vocab_token_lengths":
                self._check.array(name, found, "iu", (None,), 0, None)
            elif name == "vocab_token_bytes":
                total = int(np.asarray(self["vocab_token_lengths"], dtype=np.int64).sum())
                self._check.array(name, found, "u", (total,))
            self._cache[name] = found
        return found

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(VOCAB_ARRAYS)

    def __len__(self) -> int:
        return len(VOCAB_ARRAYS)


def _text(arrays: ArtifactFile, name: str, check: ArrayChecker) -> str:
    array = arrays[name]
    if array.shape != () or array.dtype.kind != "U":
        raise check.fail(name, "must be a text scalar")
    return str(array)


__all__ = ["MASK_ARRAYS", "ServingTable"]
