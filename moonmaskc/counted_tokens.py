"""Tokens in counted regions: how many characters each token starts, and the masks that keep a
region's counter within its bound.

Takes: a DFA with counted regions (``moonmaskc.automata.counted``: every region a copy of one
character automaton, its lower bound 0) and a vocabulary's token bytes (``vocab_token_lengths``,
``vocab_token_bytes``). Hands on:
- ``character_counts``: int16[roles, vocab_size], the characters token ``t`` starts when read from
  a state of role ``r``, up to where it leaves the region (or ends, or dies). It depends on the
  role and the bytes only, never on the region: every region copies the same automaton;
- ``room_masks``: for each room below a role's largest count, the packed mask of the tokens that
  start at most that many characters from the role: a state with that room left allows its row
  AND this mask.

A region state ``q`` with counter ``c`` (characters started so far, at most ``high``) allows the
tokens of its mask row that start at most ``high - c`` characters: the row AND one of these
masks, a fixed number of word operations. A token that opens a string (and may close it again)
starts there at most ``most_entered`` characters, which the token table checks is within every
region's bound; so only the region a token starts in can refuse it, and the states outside regions
keep their rows as they are.

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


def room_masks(counts: np.ndarray, rooms: int, words: int) -> np.ndarray:
    """uint32[rooms, words], read-only: row ``m`` is the packed mask (token i is bit i % 32 of word
    i // 32) of the tokens whose count in ``counts`` (one role's row) is at most ``m``: what a
    state with ``m`` characters left may allow, ANDed with its row."""
    bits = np.zeros((rooms, words * 32), dtype=bool)
    bits[:, : counts.shape[0]] = counts[None, :] <= np.arange(rooms)[:, None]
    table = np.packbits(bits, axis=1, bitorder="little").view(np.uint32)
    table.flags.writeable = False
    return table


def entry_bytes(transitions: np.ndarray, byte_class: np.ndarray, regions: Regions) -> np.ndarray:
    """The bytes of the edges that enter a region from outside it (the opening quote)."""
    region = regions.region
    entering = (region[transitions] >= 0) & (region[transitions] != region[:, None])
    columns = np.nonzero(entering.any(axis=0))[0]
    return np.nonzero(np.isin(byte_class, columns))[0]


def most_entered(
    roles: np.ndarray, lengths: np.ndarray, data: np.ndarray, special: np.ndarray, entries: np.ndarray
) -> int:
    """The most characters a token can start in a region it enters (special tokens aside): over
    every occurrence of an entry byte in a token, the characters the rest of the token starts from
    the boundary. A token may start only one region, so no other region can refuse a token when
    this is at most every region's upper bound; the rows of the states outside regions then need
    no change."""
    lengths = np.asarray(lengths, dtype=np.int64)
    data = np.asarray(data, dtype=np.uint8)
    ends = np.cumsum(lengths)
    positions = np.nonzero(np.isin(data, entries))[0]
    tokens = np.searchsorted(ends, positions, side="right")
    skipped = set(np.asarray(special, dtype=np.int64).tolist())
    table = roles.tolist()
    most = 0
    for position, token in zip(positions.tolist(), tokens.tolist(), strict=True):
        if token in skipped:
            continue
        role, count = 0, 0
        for byte in data[position + 1 : int(ends[token])].tolist():
            following = table[role][byte]
            if following < 0:
                break
            count += role == 0
            role = following
        most = max(most, count)
    return most
