"""Tokens in counted regions: how many characters each token starts, and the masks that keep a
region's counter within its bound.

Takes: a DFA with counted regions (``moonmaskc.automata.counted``: every region a copy of one
character automaton, its lower bound 0) and a vocabulary's token bytes (``vocab_token_lengths``,
``vocab_token_bytes``). Hands on:
- ``character_counts``: int16[roles, vocab_size], the characters token ``t`` starts when read from
  a state of role ``r``, up to where it leaves the region (or ends, or dies). It depends on the
  role and the bytes only, never on the region: every region copies the same automaton;
- ``over_mask``: the packed mask of the tokens that start more than ``room`` characters from a
  role, which a state with ``room`` characters left must not allow.

A region state ``q`` with counter ``c`` (characters started so far, at most ``high``) allows the
tokens of its mask row that start at most ``high - c`` characters: the row AND NOT one of these
masks, a fixed number of word operations. A token that leaves the region and enters another (or
the same) one starts there at most as many characters as it has bytes, which the token table
checks is within every region's bound (``longest_token_fits``); so only the region a token starts
in can refuse it, and the states outside regions keep their rows as they are.

Only numpy is imported here: the runtime uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from moonmaskc.automata.counted import Regions

COUNT_DTYPE = np.int16


def role_table(
    transitions: np.ndarray, byte_class: np.ndarray, regions: Regions, region: int = 0
) -> np.ndarray:
    """int32[roles, 256]: the role each byte leads to from each role of ``region``, -1 where it
    leaves the region (to the dead state or out of it)."""
    members = np.nonzero(regions.region == region)[0]
    roles = regions.role[members]
    state_of_role = np.empty(int(roles.max()) + 1, dtype=np.int64)
    state_of_role[roles] = members
    dense = transitions[state_of_role][:, byte_class]
    inside = regions.region[dense] == region
    return np.where(inside, regions.role[dense], -1).astype(np.int32)


def character_counts(roles: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> np.ndarray:
    """``COUNT_DTYPE[roles, vocab]``: the characters each token starts from each role (a byte read
    at role 0 that stays in the region starts one), until it leaves the region or ends; ``roles``
    from ``role_table``. Vectorised by byte position over the tokens still inside."""
    lengths = np.asarray(lengths, dtype=np.int64)
    data = np.asarray(data, dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    num_roles, vocab = roles.shape[0], lengths.shape[0]
    counts = np.zeros((num_roles, vocab), dtype=np.int64)
    for role in range(num_roles):
        current = np.full(vocab, role, dtype=np.int64)
        count = counts[role]
        active = np.nonzero(lengths > 0)[0]
        position = 0
        while len(active):
            here = current[active]
            byte = data[starts[active] + position]
            following = roles[here, byte]
            count[active] += (here == 0) & (following >= 0)
            current[active] = following
            position += 1
            active = active[(following >= 0) & (lengths[active] > position)]
    return np.minimum(counts, np.iinfo(COUNT_DTYPE).max).astype(COUNT_DTYPE)


def over_mask(counts: np.ndarray, room: int, words: int) -> np.ndarray:
    """uint32[words]: the packed mask (token i is bit i % 32 of word i // 32) of the tokens whose
    count in ``counts`` (one role's row) is above ``room``."""
    bits = np.zeros(words * 32, dtype=bool)
    bits[: counts.shape[0]] = counts > room
    return np.packbits(bits, bitorder="little").view(np.uint32)


def longest_token_fits(lengths: np.ndarray, special: np.ndarray, regions: Regions) -> tuple[bool, int]:
    """Whether every token (special tokens aside) has at most as many bytes as the smallest upper
    bound of a region, so that no token can hold a whole counted string that is too long; and the
    longest token's length."""
    plain = np.asarray(lengths, dtype=np.int64).copy()
    plain[np.asarray(special, dtype=np.int64)] = 0
    longest = int(plain.max(initial=0))
    return longest <= int(regions.high.min()), longest
