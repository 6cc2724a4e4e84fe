"""The nest regions' arrays of an artifact (format version 5): written, checked, read back.

Takes: a DFA's ``NestRegions`` and a token table's dynamic tokens, or an artifact's arrays.
Hands on: ``nest_arrays`` / ``dynamic_arrays`` (the arrays to write) and ``checked_nests`` /
``checked_dynamic`` (the objects read back, after every check that keeps the runtime from reading
out of bounds or looping: dtypes, shapes and ranges; the three per-state arrays agree on which
states are in regions; the pops' return states and the exits live states; the distances those
``automata.nested`` computes; the dynamic tokens' offsets rising from 0 and their ids tokens).

- ``dfa_nest_region``, ``dfa_nest_copy``, ``dfa_nest_role``: int32[states], -1 outside regions;
- ``dfa_nest_exit``: int32[regions]; ``dfa_nest_returns``: int32[regions, copies, copies];
- ``dfa_nest_pops``, ``dfa_nest_calls``: bool[roles, 256]; ``dfa_nest_callee``: int32[roles];
- ``dfa_nest_level_distance``: int32[roles];
- ``tokens_nest_offsets``: int32[states + 1], ``tokens_nest_ids``: int32[n].

Only numpy and the standard library are imported (and ``moonmaskc.format``, the automata's data).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from moonmaskc.automata.nested import NestRegions
from moonmaskc.errors import ArtifactError
from moonmaskc.format import ArrayChecker

NEST_FORMAT_VERSION = 5
NEST_ARRAYS = (
    "dfa_nest_region",
    "dfa_nest_copy",
    "dfa_nest_role",
    "dfa_nest_exit",
    "dfa_nest_returns",
    "dfa_nest_pops",
    "dfa_nest_calls",
    "dfa_nest_callee",
    "dfa_nest_level_distance",
)
NEST_TOKEN_ARRAYS = ("tokens_nest_offsets", "tokens_nest_ids")


def nest_arrays(nests: NestRegions) -> dict[str, np.ndarray]:
    return {
        "dfa_nest_region": nests.region.astype(np.int32),
        "dfa_nest_copy": nests.copy.astype(np.int32),
        "dfa_nest_role": nests.role.astype(np.int32),
        "dfa_nest_exit": nests.exit.astype(np.int32),
        "dfa_nest_returns": nests.returns.astype(np.int32),
        "dfa_nest_pops": nests.pops.astype(bool),
        "dfa_nest_calls": nests.calls.astype(bool),
        "dfa_nest_callee": nests.callee.astype(np.int32),
        "dfa_nest_level_distance": nests.level_distance.astype(np.int32),
    }


def dynamic_arrays(dynamic: tuple[np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:
    offsets, ids = dynamic
    return {"tokens_nest_offsets": offsets.astype(np.int32), "tokens_nest_ids": ids.astype(np.int32)}


def checked_nests(arrays: Mapping[str, Any], where: str) -> NestRegions:
    """The nest regions of checked DFA arrays (``dfa_transitions`` and the others already checked)."""
    missing = [name for name in NEST_ARRAYS if name not in arrays]
    if missing:
        raise ArtifactError(f"{where} lacks the nest-region arrays {', '.join(missing)}")
    check = ArrayChecker(where)
    transitions = np.asarray(arrays["dfa_transitions"])
    byte_class = np.asarray(arrays["dfa_byte_class"]).astype(np.int64)
    accepting = np.asarray(arrays["dfa_accepting"], dtype=bool)
    distance = np.asarray(arrays["dfa_distance"]).astype(np.int64)
    n = transitions.shape[0]
    exits = check.array("dfa_nest_exit", arrays["dfa_nest_exit"], "i", (None,), 1, n)
    count = exits.shape[0]
    if count < 1:
        raise check.fail("dfa_nest_exit", "lists no region")
    returns = check.array("dfa_nest_returns", arrays["dfa_nest_returns"], "i", (count, 2, None), 0, n)
    copies, kinds = 2, returns.shape[2]
    if kinds < 1 or np.any(returns < 1):
        raise check.fail("dfa_nest_returns", "returns to the dead state, or names no kind of container")
    callee = check.array("dfa_nest_callee", arrays["dfa_nest_callee"], "i", (None,), 0, kinds + 1)
    roles = callee.shape[0]
    pops = check.array("dfa_nest_pops", arrays["dfa_nest_pops"], "b", (roles, 256))
    calls = check.array("dfa_nest_calls", arrays["dfa_nest_calls"], "b", (roles, 256))
    level = check.array(
        "dfa_nest_level_distance", arrays["dfa_nest_level_distance"], "i", (roles,), -1, 1 << 30
    )
    region = check.array("dfa_nest_region", arrays["dfa_nest_region"], "i", (n,), -1, count)
    copy = check.array("dfa_nest_copy", arrays["dfa_nest_copy"], "i", (n,), -1, copies)
    role = check.array("dfa_nest_role", arrays["dfa_nest_role"], "i", (n,), -1, roles)
    outside = region < 0
    if not (np.array_equal(outside, copy < 0) and np.array_equal(outside, role < 0)) or not outside[0]:
        raise check.fail("dfa_nest_region", "does not agree with dfa_nest_copy and dfa_nest_role")
    nested = np.nonzero(copy >= 1)[0]
    if np.any(accepting[nested]) or np.any(region[exits] >= 0):
        raise check.fail(
            "dfa_nest_region", "puts an accepting state in a nested container or an exit in a region"
        )
    if np.any(calls & pops) or np.any(calls.any(axis=1) != (callee > 0)):
        raise check.fail("dfa_nest_calls", "disagrees with dfa_nest_pops or dfa_nest_callee")
    # Distances: outside nested containers the plain equations over the edges that stay out of
    # them; inside, the level's distance plus the exit's.
    table = transitions[:, byte_class].astype(np.int64)
    inside = copy >= 1
    following = np.where((table != 0) & ~inside[table], distance[table], np.iinfo(np.int64).max // 4)
    expected = np.where(accepting, 0, following.min(axis=1) + 1)
    expected[inside] = level[role[inside]].astype(np.int64) + distance[exits[region[inside]]]
    if not np.array_equal(expected[1:], distance[1:]):
        raise check.fail("dfa_distance", "disagrees with the transitions and the nest regions")
    return NestRegions(
        region=region.astype(np.int32),
        copy=copy.astype(np.int32),
        role=role.astype(np.int32),
        exit=exits.astype(np.int32),
        returns=returns.astype(np.int32),
        pops=pops.astype(bool),
        calls=calls.astype(bool),
        callee=callee.astype(np.int32),
        level_distance=level.astype(np.int32),
    )


def checked_dynamic(
    arrays: Mapping[str, Any], states: int, vocab_size: int, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """The dynamic tokens per state (``TokenTable.nest_dynamic``), checked."""
    missing = [name for name in NEST_TOKEN_ARRAYS if name not in arrays]
    if missing:
        raise ArtifactError(f"{where} lacks the arrays {', '.join(missing)}")
    check = ArrayChecker(where)
    ids = check.array("tokens_nest_ids", arrays["tokens_nest_ids"], "i", (None,), 0, vocab_size)
    offsets = check.array(
        "tokens_nest_offsets", arrays["tokens_nest_offsets"], "i", (states + 1,), 0, ids.shape[0] + 1
    )
    if offsets[0] != 0 or offsets[-1] != ids.shape[0] or np.any(np.diff(offsets) < 0):
        raise check.fail("tokens_nest_offsets", "does not rise from 0 to the number of ids")
    return np.ascontiguousarray(offsets, dtype=np.int32), np.ascontiguousarray(ids, dtype=np.int32)
