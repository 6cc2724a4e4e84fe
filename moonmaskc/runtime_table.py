"""The token table as the runtime serves it from an artifact file: each part read on first use.

Takes: an ``ArtifactFile`` (``moonmaskc.format``). Hands on: a ``ServingTable`` with the read
interface of ``TokenTable`` that ``Guide`` uses (``mask_rows[row]``, ``state_row``,
``token_class``, ``next_table``, ``allowed``, the vocabulary facts), where
- the row of each state, the token classes, the delta-coded mask rows and the classes of each
  row are memory-mapped, and a mask row is built the first time a state uses it;
- the next states (``moonmaskc.next_table.NextTable``) and the token bytes are inflated the first
  time a step or a decode needs them, and checked then (``check_next_arrays``). A version 1 or 2
  file's dense ``tokens_class_next`` is checked and converted to the compact form then.

The checks at construction are cheap and vectorised over what a first mask needs; ``verify`` is
the deep check (every mask row against the classes its row allows), for ``moonmaskc inspect --verify``.

Only numpy and the standard library are imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np

from moonmaskc.errors import ArtifactError
from moonmaskc.format import (
    DENSE_NEXT_ARRAY,
    MASK_ARRAYS,
    REGION_COUNTS_ARRAY,
    TABLE_ARRAYS,
    V2_TABLE_ARRAYS,
    VOCAB_ARRAYS,
    ArrayChecker,
    ArtifactFile,
    MaskRows,
    check_mask_arrays,
    check_next_arrays,
    check_region_counts,
    vocabulary_fingerprint,
)
from moonmaskc.next_table import NextTable
from moonmaskc.runtime_budget import verify_eos_steps

ALLOWED_ROWS_CACHED = 256


class ServingTable:
    """A token table served from an artifact file (see the module docstring)."""

    def __init__(self, arrays: ArtifactFile) -> None:
        self.arrays = arrays
        where = str(arrays.path)
        if ("dfa_region" in arrays) != (REGION_COUNTS_ARRAY in arrays):
            raise ArtifactError(
                f"{where} is corrupted: counted regions and '{REGION_COUNTS_ARRAY}' come together"
            )
        self.dense = arrays.version < 3  # versions 1 and 2: a dense next-state table
        needed = V2_TABLE_ARRAYS if self.dense else TABLE_ARRAYS
        missing = [name for name in (*needed, *VOCAB_ARRAYS) if name not in arrays]
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
        check_mask_arrays(arrays, rows, self.vocab_size, where)
        self.mask_rows = MaskRows(arrays, words)
        self.eos_id = check.scalar("vocab_eos_id", arrays["vocab_eos_id"], 0, self.vocab_size)
        self.fingerprint = _text(arrays, "vocab_fingerprint", check)
        self.vocab_arrays: Mapping[str, np.ndarray] = _VocabularyArrays(arrays, check, self.vocab_size)
        self._allowed_cache: dict[int, np.ndarray] = {}

    @property
    def num_rows(self) -> int:
        return len(self.mask_rows)

    @cached_property
    def num_classes(self) -> int:
        """The dense table's width (versions 1 and 2); else one more than the largest token class
        (every class but 0 holds a token), at most ``vocab_size + 1``."""
        if self.dense:
            shape = self.arrays.declared_shape(DENSE_NEXT_ARRAY)
            if shape[:1] != (self.num_states,) or len(shape) != 2 or shape[1] < 1:
                raise self._check.fail(DENSE_NEXT_ARRAY, f"has shape {shape}, expected [states, classes]")
            return shape[1]
        return int(self.token_class.max()) + 1

    @cached_property
    def token_class(self) -> np.ndarray:
        high = self.num_classes if self.dense else self.vocab_size + 1
        return self._check.array(
            "tokens_token_class", self.arrays["tokens_token_class"], "iu", (self.vocab_size,), 0, high
        )

    @cached_property
    def next_table(self) -> NextTable:
        """The next states, read, checked and (from a dense table) converted on first use."""
        rows, classes = self.num_rows, self.num_classes
        if self.dense:
            table = self._check.array(
                DENSE_NEXT_ARRAY,
                self.arrays[DENSE_NEXT_ARRAY],
                "iu",
                (self.num_states, classes),
                0,
                max(self.num_states, 1),
            )
            if table.size and (table[0].any() or table[:, 0].any()):
                raise self._check.fail(DENSE_NEXT_ARRAY, "lets the dead state or class 0 lead somewhere")
            try:
                return NextTable.from_dense(table, self.state_row, rows)
            except ValueError as error:
                raise self._check.fail(
                    "tokens_state_row", f"disagrees with {DENSE_NEXT_ARRAY} ({error})"
                ) from None
        check_next_arrays(self.arrays, self.state_row, rows, classes, str(self.arrays.path))
        return NextTable.from_checked_arrays(self.arrays, self.state_row, classes)

    def _verify_vocabulary(self) -> None:
        """The stored tokens, eos id and special ids hash to ``vocab_fingerprint`` (what decoding
        and a tokenizer check rely on): ``ArtifactError`` otherwise."""
        specials = self._check.array(
            "vocab_special_ids", self.arrays["vocab_special_ids"], "iu", (None,), 0, self.vocab_size
        )
        lengths = self.vocab_arrays["vocab_token_lengths"]
        data = np.asarray(self.vocab_arrays["vocab_token_bytes"], dtype=np.uint8).tobytes()
        if vocabulary_fingerprint(lengths, data, self.eos_id, specials) != self.fingerprint:
            raise self._check.fail(
                "vocab_fingerprint",
                "does not match the stored tokens (vocab_token_lengths, vocab_token_bytes, "
                "vocab_eos_id, vocab_special_ids): the vocabulary arrays are corrupted",
            )

    @cached_property
    def region_counts(self) -> np.ndarray | None:
        """The character counts of the counted regions (format 4), checked; None without them."""
        if REGION_COUNTS_ARRAY not in self.arrays:
            return None
        return check_region_counts(self.arrays, self.vocab_size, str(self.arrays.path))

    @cached_property
    def eos_steps(self) -> np.ndarray | None:
        if "tokens_eos_steps" not in self.arrays:
            return None
        steps = self._check.array(
            "tokens_eos_steps", self.arrays["tokens_eos_steps"], "i", (self.num_states,), -1, None
        )
        if self.num_states and int(steps[0]) != 0:
            raise self._check.fail("tokens_eos_steps", "gives the dead state 0 a value other than 0")
        return steps

    def warm(self) -> None:
        """Read and build everything a step may need (mask rows, token classes, next states and
        their rank arrays)."""
        self.mask_rows.warm()
        _ = self.token_class
        self.next_table.warm()

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
        """The deep check: every mask row holds exactly the tokens of the classes its row allows,
        every row belongs to some state and allows only classes that hold a token, and the stored
        eos steps are exact (``ArtifactError``)."""
        table = self.next_table
        masks = self.mask_rows.full()
        rows = len(masks)
        if np.any(np.bincount(self.state_row, minlength=rows) == 0):
            raise self._check.fail("tokens_state_row", "leaves some mask rows to no state")
        holds_token = np.bincount(np.asarray(self.token_class, dtype=np.intp), minlength=self.num_classes) > 0
        if not holds_token[table.row_classes].all():
            name = DENSE_NEXT_ARRAY if self.dense else "tokens_row_classes"
            raise self._check.fail(name, "lets a row allow a class that holds no token")
        row_classes = table.row_allowed()
        words = masks.shape[1]
        padded = np.zeros((rows, words * 32), dtype=bool)
        padded[:, : self.vocab_size] = row_classes[:, self.token_class]
        expected = np.packbits(padded, axis=1, bitorder="little").view("<u4").reshape(rows, words)
        if self.eos_steps is not None:
            accepting = table.allows_class(int(self.token_class[self.eos_id]))
            try:
                verify_eos_steps(self.eos_steps, table, self.token_class, accepting, self.eos_id)
            except ValueError as error:
                raise self._check.fail("tokens_eos_steps", f"is wrong ({error})") from None
        self._verify_vocabulary()
        if not np.array_equal(expected, masks):
            raise self._check.fail(
                "tokens_mask_delta_value", "gives masks that disagree with the classes of the rows"
            )


class _VocabularyArrays(Mapping[str, np.ndarray]):
    """The ``vocab_*`` arrays, each read and checked on first use."""

    def __init__(self, arrays: ArtifactFile, check: ArrayChecker, vocab_size: int) -> None:
        self._arrays = arrays
        self._check = check
        self._vocab_size = vocab_size
        self._cache: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        found = self._cache.get(name)
        if found is None:
            if name not in VOCAB_ARRAYS:
                raise KeyError(name)
            found = self._arrays[name]
            if name == "vocab_token_lengths":
                self._check.array(name, found, "iu", (self._vocab_size,), 0, None)
            elif name == "vocab_token_bytes":
                total = int(np.asarray(self["vocab_token_lengths"], dtype=np.int64).sum())
                self._check.array(name, found, "u", (total,), 0, 256)
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
