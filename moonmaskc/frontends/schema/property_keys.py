"""The keys of an object beyond its declared ones, cut by ``patternProperties``.

Takes: DFAs over quoted canonical JSON strings (every key is written in that one form, see
``canonical``): the keys an object may hold besides its declared properties, and the keys that
each pattern of ``patternProperties`` matches. Hands on:
- ``key_regions``: those keys split into regions of keys that exactly the same patterns match,
  each a DFA with the indexes of its patterns (none for the keys that no pattern matches, which
  ``additionalProperties`` governs). Only non-empty regions are kept, so patterns that never
  overlap make one region each, and the split stays far below its ``2 ** patterns`` worst case;
- ``matching_patterns``: the patterns that one declared key matches.

A key's value must then satisfy the schema of every pattern of its region (and, for a declared
key, its ``properties`` schema too), as JSON Schema says.
"""

from __future__ import annotations

from collections.abc import Sequence

from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.product import difference, intersect, is_empty
from moonmaskc.errors import LimitError
from moonmaskc.limits import Limits

Region = tuple[tuple[int, ...], DFA]


def key_regions(keys: DFA, patterns: Sequence[DFA], limits: Limits, where: str) -> list[Region]:
    """The non-empty parts of ``keys`` that exactly the same patterns match, each with the indexes
    of those patterns (ascending). ``LimitError`` when the parts together need more than
    ``max_states`` states (every part becomes a copy in the object's automaton)."""
    regions: list[Region] = [((), keys)]
    for index, pattern in enumerate(patterns):
        split: list[Region] = []
        for members, region in regions:
            inside = intersect(region, pattern, limits)
            if not is_empty(inside):
                split.append(((*members, index), inside))
            outside = difference(region, pattern, limits)
            if not is_empty(outside):
                split.append((members, outside))
        regions = split
        states = sum(region.num_states for _, region in regions)
        if states > limits.max_states:
            raise LimitError(
                "max_states",
                limits.max_states,
                f"the keys that the patternProperties at {where} tell apart need {states} automaton "
                f"states ({len(regions)} sets of keys matched by different patterns)",
                flag="--max-states",
            )
    return regions


def matching_patterns(quoted_key: bytes, patterns: Sequence[DFA]) -> list[int]:
    """The indexes of the patterns whose keys include ``quoted_key`` (its canonical form)."""
    return [index for index, pattern in enumerate(patterns) if pattern.accepts(quoted_key)]
