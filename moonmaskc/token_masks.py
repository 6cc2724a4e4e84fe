"""Packed token masks from the classes each row allows.

Takes: ``allowed_classes`` (bool[rows, classes]: which token classes a row allows), or the rows as
lists of classes (a compact next-state table's ``row_class_offsets`` and ``row_classes``), and
``token_class`` (the class of every token). Hands on: ``packed_masks`` (``packed_row_masks`` for
the lists, what the token table uses: natively no rows x classes array is made), uint32[rows,
words] where token ``t`` is bit ``t % 32`` of word ``t // 32`` (little-endian bit order); bits past
the last token are 0.

The direct way looks up every token's class in every row (rows x vocabulary cells). Real
vocabularies put most tokens in a few big classes (on JSON automata: letters, digits, spaces), and
rows agree on those far more often than on the rest, so the masks are built in two parts:
- the big classes: each distinct pattern the rows take over them is the or of those classes'
  packed masks; classes hold disjoint tokens, so the or is a sum, and all patterns come out of one
  float64 matrix product (pattern x class times class x word; every sum is an integer below
  2**32, exact in float64), and every row starts from its pattern's mask;
- the other tokens (the small classes): each row's bits for them, weighted by their place in their
  word and or-ed into that word, in layers so that no word is written twice at once.
How many classes count as big is chosen per table, by the work each choice would take.

When the native core is built, ``moonmaskc.automata._native.token_walk.pack_masks`` packs instead
(timed on GPT-2 and Llama-3 tables of the example schemas: 4 to 15 times faster): each row starts
from no token, every token or one of the rows just before it, whichever differs in the fewest
tokens, and the tokens of every class on which they differ are flipped. Same masks, bit for bit.

Only numpy is imported here: the runtime checks loaded tables with it (the native module is found
through ``moonmaskc.automata.native``, which imports only the standard library).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from moonmaskc.automata.native import native
from moonmaskc.errors import MalformedArraysError
from moonmaskc.next_table import rows_allowed

CELLS_PER_CHUNK = 1 << 19
BIG_CLASS_CHOICES = (8, 16, 32, 64, 128, 256, 512)
SMALL_TOKEN_COST = 64  # a small-token cell in multiply-adds of the product (timed: 16 to 256 all close)
NATIVE_WINDOW = 8  # earlier rows tried as a native row's start (examples, GPT-2, Llama-3: 4-16 close)


def packed_masks(allowed_classes: np.ndarray, token_class: np.ndarray) -> np.ndarray:
    """uint32[rows, words]: bit ``t`` of row ``r`` set when ``allowed_classes[r, token_class[t]]``.

    ``MalformedArraysError`` unless ``allowed_classes`` is 2-D and ``token_class`` 1-D with every class a
    column of it."""
    allowed_classes = np.asarray(allowed_classes, dtype=bool)
    token_class = np.asarray(token_class)
    if allowed_classes.ndim != 2 or token_class.ndim != 1:
        raise MalformedArraysError(
            "mask packing needs allowed classes [rows, classes] and one class per token"
        )
    rows, classes = allowed_classes.shape
    vocab_size = len(token_class)
    words = (vocab_size + 31) // 32
    if rows == 0 or vocab_size == 0:
        return np.zeros((rows, words), dtype=np.uint32)
    if (
        not np.issubdtype(token_class.dtype, np.integer)
        or token_class.min() < 0
        or token_class.max() >= classes
    ):
        raise MalformedArraysError("token classes outside the classes the rows allow")
    module = native("token_walk")
    if module is not None:
        return _native_masks(module, allowed_classes, token_class)
    token_class = token_class.astype(np.intp, copy=False)
    sizes = np.bincount(token_class, minlength=classes)
    by_size = np.argsort(-sizes, kind="stable")
    big = _big_classes(allowed_classes, sizes, by_size, words)
    is_big = np.zeros(classes, dtype=bool)
    is_big[big] = True
    if len(big):
        first_row, pattern_of_row = distinct_rows(allowed_classes[:, big])
        class_masks = _class_masks(token_class, classes, big, words)
        masks = _summed_masks(allowed_classes[np.ix_(first_row, big)], class_masks)[pattern_of_row]
    else:
        masks = np.zeros((rows, words), dtype=np.uint32)
    small_tokens = np.flatnonzero(~is_big[token_class])
    if len(small_tokens):
        _or_small_tokens(masks, allowed_classes, token_class, small_tokens)
    return masks


def packed_row_masks(
    row_class_offsets: np.ndarray, row_classes: np.ndarray, num_classes: int, token_class: np.ndarray
) -> np.ndarray:
    """``packed_masks`` of rows given as lists of classes (a compact next-state table's
    ``row_class_offsets`` and ``row_classes``: row ``r`` allows
    ``row_classes[row_class_offsets[r]:row_class_offsets[r + 1]]``), without the rows x classes
    array on the native path. ``MalformedArraysError`` for an offset or a class out of range."""
    offsets = np.ascontiguousarray(row_class_offsets, dtype=np.int64)
    listed = np.ascontiguousarray(row_classes, dtype=np.int32)
    token_class = np.asarray(token_class)
    module = native("token_walk")
    if module is None or token_class.ndim != 1 or not np.issubdtype(token_class.dtype, np.integer):
        return packed_masks(_checked_rows_allowed(offsets, listed, num_classes), token_class)
    status, masks = module.pack_row_masks(
        offsets, listed, int(num_classes), _native_classes(token_class), NATIVE_WINDOW
    )
    if status != module.OK:
        raise MalformedArraysError(
            "a row's classes or a token's class outside the classes (rejected by the native core)"
        )
    return masks


def _checked_rows_allowed(offsets: np.ndarray, listed: np.ndarray, num_classes: int) -> np.ndarray:
    """``next_table.rows_allowed``, once the offsets and classes are checked."""
    if (
        offsets.ndim != 1
        or len(offsets) < 1
        or offsets[0] != 0
        or np.any(np.diff(offsets) < 0)
        or offsets[-1] > len(listed)
        or (len(listed) and (listed.min() < 0 or listed.max() >= num_classes))
    ):
        raise MalformedArraysError("a row's classes outside the classes, or offsets out of order")
    return rows_allowed(offsets, listed, num_classes)


def _native_classes(token_class: np.ndarray) -> np.ndarray:
    """``token_class`` as the native packing takes it: uint16 or int32, contiguous."""
    if token_class.dtype not in (np.uint16, np.int32):
        token_class = token_class.astype(np.int32)
    return np.ascontiguousarray(token_class)


def _native_masks(module: ModuleType, allowed_classes: np.ndarray, token_class: np.ndarray) -> np.ndarray:
    """``packed_masks`` in C (inputs already checked)."""
    allowed = np.ascontiguousarray(allowed_classes).view(np.uint8)
    status, masks = module.pack_masks(allowed, _native_classes(token_class), NATIVE_WINDOW)
    if status != module.OK:
        raise MalformedArraysError(
            "token classes outside the classes the rows allow (rejected by the native core)"
        )
    return masks


def _big_classes(
    allowed_classes: np.ndarray, sizes: np.ndarray, by_size: np.ndarray, words: int
) -> np.ndarray:
    """The biggest classes, as many as make the least work: distinct patterns x big classes x
    words for the big part (multiply-adds), rows x tokens left for the rest (each such cell costs
    far more)."""
    rows = len(allowed_classes)
    vocab_size = int(sizes.sum())
    covered = np.concatenate([[0], np.cumsum(sizes[by_size])])
    best, best_cost = 0, SMALL_TOKEN_COST * rows * vocab_size
    for count in BIG_CLASS_CHOICES:
        if count > len(by_size):
            count = len(by_size)
        patterns = len(distinct_rows(allowed_classes[:, by_size[:count]])[0])
        cost = patterns * count * words + SMALL_TOKEN_COST * rows * (vocab_size - int(covered[count]))
        if cost < best_cost:
            best, best_cost = count, cost
        if count == len(by_size):
            break
    return by_size[:best]


def _class_masks(token_class: np.ndarray, classes: int, chosen: np.ndarray, words: int) -> np.ndarray:
    """float64[len(chosen), words]: the packed mask of each chosen class (the bits of its tokens),
    each word as an exact float (a word is a sum of distinct powers of two below 2**32)."""
    position = np.full(classes, -1, dtype=np.intp)
    position[chosen] = np.arange(len(chosen))
    member = position[token_class]
    tokens = np.flatnonzero(member >= 0)
    keys = member[tokens] * words + (tokens >> 5)
    bits = np.ldexp(1.0, (tokens & 31).astype(np.int32))
    return np.bincount(keys, weights=bits, minlength=len(chosen) * words).reshape(len(chosen), words)


def _summed_masks(allowed: np.ndarray, class_masks: np.ndarray) -> np.ndarray:
    """uint32[patterns, words]: the or of the masks of the classes each pattern allows. Classes
    hold disjoint tokens, so the or is a sum, computed as one float matrix product: every partial
    sum is an integer below 2**32, exact in float64 whatever the order of the additions."""
    patterns, words = len(allowed), class_masks.shape[1]
    out = np.empty((patterns, words), dtype=np.uint32)
    step = max(1, CELLS_PER_CHUNK // max(words, 1))
    for first in range(0, patterns, step):
        chunk = allowed[first : first + step].astype(np.float64)
        out[first : first + step] = chunk @ class_masks
    return out


def distinct_rows(allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct row of a bool matrix (at least one column), and each row's
    distinct row (distinct rows numbered in the order of their bit patterns)."""
    packed = np.ascontiguousarray(np.packbits(allowed, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first_row, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first_row, inverse.ravel()


def _or_small_tokens(
    masks: np.ndarray, allowed_classes: np.ndarray, token_class: np.ndarray, small_tokens: np.ndarray
) -> None:
    """Or into ``masks`` the bits of ``small_tokens`` (ascending ids) that each row allows.

    Works on the words that hold small tokens, transposed (a word's bits for every row in one
    contiguous line), in layers: layer k takes the k-th small token of every word, so no word is
    written twice in one vectorised step."""
    word = small_tokens >> 5
    weight = np.left_shift(np.uint32(1), (small_tokens & 31).astype(np.uint32))
    starts = np.flatnonzero(np.concatenate([[True], word[1:] != word[:-1]]))
    counts = np.diff(np.append(starts, len(small_tokens)))
    local_word = np.repeat(np.arange(len(starts)), counts)
    layer_of = np.arange(len(small_tokens)) - np.repeat(starts, counts)
    layers = [np.flatnonzero(layer_of == layer) for layer in range(int(counts.max()))]
    by_class = np.ascontiguousarray(allowed_classes.T)  # classes x rows
    classes = token_class[small_tokens]
    rows = len(masks)
    step = max(1, CELLS_PER_CHUNK // len(starts))
    for first in range(0, rows, step):
        chunk = by_class[:, first : first + step]
        words = np.zeros((len(starts), chunk.shape[1]), dtype=np.uint32)
        for members in layers:
            words[local_word[members]] |= chunk[classes[members]] * weight[members][:, None]
        masks[first : first + step, word[starts]] |= words.T
