"""Unicode code point sets compiled to UTF-8 byte-level IR.

Takes: sets of code points as sorted inclusive ranges. Hands on: IR nodes (alternations of byte-range
sequences) accepting exactly the valid UTF-8 encodings of those code points: never an overlong form,
never a surrogate (U+D800..U+DFFF), never anything above U+10FFFF.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from moonmaskc import ir

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
_LENGTH_LIMITS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))


def normalize(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort and merge ranges; clip to valid scalar values (surrogates removed)."""
    cleaned: list[tuple[int, int]] = []
    for lo, hi in ranges:
        lo, hi = max(lo, 0), min(hi, MAX_CODE_POINT)
        if lo > hi:
            continue
        if lo <= SURROGATES[1] and hi >= SURROGATES[0]:
            if lo < SURROGATES[0]:
                cleaned.append((lo, SURROGATES[0] - 1))
            if hi > SURROGATES[1]:
                cleaned.append((SURROGATES[1] + 1, hi))
        else:
            cleaned.append((lo, hi))
    cleaned.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in cleaned:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def complement(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """All scalar values not in ``ranges``."""
    result: list[tuple[int, int]] = []
    next_start = 0
    for lo, hi in normalize(ranges):
        if lo > next_start:
            result.append((next_start, lo - 1))
        next_start = hi + 1
    if next_start <= MAX_CODE_POINT:
        result.append((next_start, MAX_CODE_POINT))
    return normalize(result)


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def _same_length_ranges(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """Split lo..hi (same UTF-8 length) into sequences of byte ranges."""
    a, b = _encode(lo), _encode(hi)
    n = len(a)
    if n == 1:
        return [[(a[0], b[0])]]
    # Split so that within each piece every trailing byte spans its full range or the
    # leading bytes are equal.
    for i in range(1, n):
        shift = 6 * (n - i)
        mask = (1 << shift) - 1
        if lo & ~mask != hi & ~mask:
            if lo & mask != 0:
                return _same_length_ranges(lo, lo | mask) + _same_length_ranges((lo | mask) + 1, hi)
            if hi & mask != mask:
                return _same_length_ranges(lo, (hi & ~mask) - 1) + _same_length_ranges(hi & ~mask, hi)
    return [[(x, y) for x, y in zip(a, b, strict=True)]]


def byte_sequences(ranges: Iterable[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The code point ranges as a list of byte-range sequences (disjoint, valid UTF-8 only)."""
    sequences: list[list[tuple[int, int]]] = []
    for lo, hi in normalize(ranges):
        for limit_lo, limit_hi in _LENGTH_LIMITS:
            start, end = max(lo, limit_lo), min(hi, limit_hi)
            if start <= end:
                sequences.extend(_same_length_ranges(start, end))
    return sequences


def codepoints(ranges: Iterable[tuple[int, int]]) -> ir.Node:
    """IR for one code point out of ``ranges``.

    The byte sequences are factored by their common *suffixes* (continuation bytes), so that the
    NFA shares the tail of every multi-byte form and the subset construction does not keep one state
    per lead byte and position: ``.{0,50}`` stays close to minimal before minimisation.
    """
    return _codepoints(tuple((int(lo), int(hi)) for lo, hi in ranges))


@lru_cache(maxsize=4096)
def _codepoints(ranges: tuple[tuple[int, int], ...]) -> ir.Node:
    """``codepoints`` of one tuple of ranges, built once (IR nodes are immutable): character
    classes such as "any character but a quote" recur in every string of every schema."""
    return _factor_suffixes([tuple(sequence) for sequence in byte_sequences(ranges)])


def _factor_suffixes(sequences: list[tuple[tuple[int, int], ...]]) -> ir.Node:
    groups: dict[tuple[int, int], list[tuple[tuple[int, int], ...]]] = {}
    has_empty = False
    for sequence in sequences:
        if not sequence:
            has_empty = True
            continue
        groups.setdefault(sequence[-1], []).append(sequence[:-1])
    branches: list[ir.Node] = [ir.EPSILON] if has_empty else []
    for (lo, hi), prefixes in groups.items():
        branches.append(ir.seq(_factor_suffixes(prefixes), ir.byte_range(lo, hi)))
    return ir.alt(*branches)


def any_char(exclude: Iterable[tuple[int, int]] = ()) -> ir.Node:
    """One valid UTF-8 character, except the code points in ``exclude``."""
    return codepoints(complement(exclude))
