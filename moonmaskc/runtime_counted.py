"""The runtime of an artifact with counted regions: a ``Guide`` whose states carry the counter.

Takes: what a ``Guide`` takes, plus the DFA's counted regions (``moonmaskc.automata.counted``),
its transitions (to step a token's bytes with the counter) and the table's character counts
(``moonmaskc.counted_tokens``). Hands on: a ``CountedGuide``, the ``Guide`` API unchanged, where a
state is one int, ``q + (c << 32)``: the DFA state ``q`` and, inside a region, the characters
``c`` started so far. Outside regions ``c`` is 0, so the state is ``q`` as in any guide.

- A mask (``allowed``, ``mask``, ``fill_bitmask``) is the row of ``q``, and within the largest
  token count of the region's upper bound also AND the tokens that start no more characters
  than are left (``counted_tokens.room_masks``: every room of a role built at once, on the role's
  first use or by ``warm``).
- ``advance`` takes the table's next state and, where a region is involved, steps the token's
  bytes with the counter to set the new count (a token's bytes, not a table lookup: a token may
  leave one region and enter another).
- The budget, ``decreasing`` and ``finishing`` are those of ``q``: the token table checked, when
  it was built, that from every region state a fewest-token ending starts no character, so the
  fewest tokens to the end do not depend on the counter (``token_table._counted_regions``).

Only numpy and the standard library are imported.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from moonmaskc.automata.counted import Regions
from moonmaskc.counted_tokens import character_counts, role_table, room_masks
from moonmaskc.errors import ArtifactError, RuntimeInputError
from moonmaskc.runtime import Guide, _native_filler, method_of_weak

if TYPE_CHECKING:
    from moonmaskc.runtime_table import ServingTable
    from moonmaskc.token_table import TokenTable

_WORD_TYPES = (np.dtype(np.int32), np.dtype(np.uint32))
STATE_BITS = 32
STATE_MASK = (1 << STATE_BITS) - 1


class CountedGuide(Guide):
    """A ``Guide`` over a DFA with counted regions (see the module docstring)."""

    def __init__(
        self,
        table: TokenTable | ServingTable,
        accepting: np.ndarray,
        distance: np.ndarray,
        start: int,
        metadata: dict[str, Any] | None,
        regions: Regions,
        transitions: np.ndarray,
        byte_class: np.ndarray,
    ) -> None:
        super().__init__(table, accepting, distance, start, metadata)
        counts = getattr(table, "region_counts", None)
        if counts is None and regions.num_regions == 0:  # a nest guide's DFA without counted ones
            counts = np.zeros((0, len(table.token_class)), dtype=np.int16)
        if counts is None:
            raise ArtifactError("the artifact has counted regions but its token table no character counts")
        if counts.shape[0] != regions.num_roles or transitions.shape[0] != self.num_states:
            raise ArtifactError("the character counts or the transitions do not match the counted regions")
        self._regions = regions
        self._counts = counts
        self._region_of: list[int] = regions.region.tolist()
        self._role_of: list[int] = regions.role.tolist()
        self._high: list[int] = regions.high.tolist()
        self._transitions, self._byte_classes = transitions, byte_class
        self._byte_class: list[int] = byte_class.tolist()
        self._rooms: dict[int, np.ndarray] = {}  # role -> uint32[largest count, words]
        # (DFA state, room) -> its row within the room; at most roles x largest count per region
        self._near: dict[tuple[int, int], np.ndarray] = {}
        # Far from every bound a fill is the row of ``q``: the native filler serves it, as for
        # any guide (the base class leaves it out for a subclass with its own fill_bitmask).
        self._plain_fill: Callable[..., None] = method_of_weak(self, Guide.fill_bitmask)
        filler = _native_filler()
        if filler is not None:
            filler_class, self._fill_source = filler
            self._plain_fill = filler_class(
                self._num_states, self._words, self._state_masks, self._state_fill_source, self._plain_fill
            ).fill

    def verify_counts(self) -> None:
        """``ArtifactError`` unless every region copies region 0's character automaton and the
        stored character counts are those of the stored tokens (a verified load)."""
        regions, transitions, byte_class = self._regions, self._transitions, self._byte_classes
        first = role_table(transitions, byte_class, regions)
        for index in range(1, regions.num_regions):
            if not np.array_equal(role_table(transitions, byte_class, regions, index), first):
                raise ArtifactError(f"counted region {index} does not copy region 0's character automaton")
        arrays = self.table.vocab_arrays
        expected = character_counts(first, arrays["vocab_token_lengths"], arrays["vocab_token_bytes"])
        if not np.array_equal(expected, self._counts):
            raise ArtifactError("tokens_region_counts disagrees with the tokens and the counted regions")

    @cached_property
    def _rows(self) -> list[list[int]]:
        """The DFA's transitions as lists, for stepping a token's bytes (made on first use)."""
        return self._transitions.tolist()

    @cached_property
    def _largest_count(self) -> list[int]:
        """The most characters any token starts from each role."""
        return [int(row.max(initial=0)) for row in self._counts]

    @cached_property
    def _token_bytes(self) -> list[bytes]:
        ends = self._token_ends.tolist()
        data = self._token_data
        return [data[(ends[i - 1] if i else 0) : ends[i]] for i in range(len(ends))]

    # states --------------------------------------------------------------------------------------

    def _split(self, state: Any) -> tuple[int, int]:
        """``state`` as (DFA state, register), or ``RuntimeInputError``; the register is checked by
        ``_register_problem``."""
        if isinstance(state, bool | np.bool_) or not isinstance(state, int | np.integer):
            raise RuntimeInputError(f"a state must be an int, not {type(state).__name__}")
        value = int(state)
        q, register = value & STATE_MASK, value >> STATE_BITS
        if value < 0 or q >= self._num_states:
            raise RuntimeInputError(f"state {state} is not a state of this guide")
        problem = self._register_problem(q, register)
        if problem:
            raise RuntimeInputError(f"state {state} carries {problem} its DFA state cannot have")
        return q, register

    def _register_problem(self, q: int, count: int) -> str:
        """What is wrong with ``count`` as the register of ``q`` ("" when nothing): a character
        count, 0 outside counted regions and at most the region's upper bound."""
        region = self._region_of[q]
        high = self._high[region] if region >= 0 else 0
        return "a character count" if count and (region < 0 or count > high) else ""

    def _dfa_state(self, state: Any) -> int:
        return self._split(state)[0]

    def _room(self, q: int, count: int) -> int | None:
        """The characters left in ``q``'s region when some token could start more; else None."""
        region = self._region_of[q]
        if region < 0:
            return None
        room = self._high[region] - count
        return room if room < self._largest_count[self._role_of[q]] else None

    def _room_mask(self, q: int, room: int) -> np.ndarray:
        """The packed mask of the tokens within ``room`` from ``q``'s role: a row of the role's
        table of every room below its largest count, built whole on the role's first use (one
        numpy pass; ``warm`` builds every role's)."""
        role = self._role_of[q]
        table = self._rooms.get(role)
        if table is None:
            table = self._rooms[role] = room_masks(self._counts[role], self._largest_count[role], self._words)
        return table[room]

    def warm(self) -> CountedGuide:
        """``Guide.warm``, and the counted regions' parts: every role's masks of the tokens within
        each room, and the tokens' bytes that ``advance`` steps."""
        super().warm()
        for role in range(self._counts.shape[0]):
            if role not in self._rooms:
                self._rooms[role] = room_masks(self._counts[role], self._largest_count[role], self._words)
        _ = self._token_bytes
        return self

    def _within_room(self, q: int, count: int, ids: np.ndarray) -> np.ndarray:
        room = self._room(q, count)
        if room is None:
            return ids
        kept = ids[self._counts[self._role_of[q]][ids] <= room]
        kept.flags.writeable = False
        return kept

    def mask_key(self, state: int) -> object:
        q, count = self._split(state)
        return (q, self._room(q, count))

    # masks ---------------------------------------------------------------------------------------

    def allowed(self, state: int, *, tokens_left: int | None = None) -> np.ndarray:
        q, count = self._split(state)
        return self._within_room(q, count, super().allowed(q, tokens_left=tokens_left))

    def mask(self, state: int, *, tokens_left: int | None = None) -> np.ndarray:
        q, count = self._split(state)
        packed = super().mask(q, tokens_left=tokens_left)
        room = self._room(q, count)
        if room is None:
            return packed
        result = packed & self._room_mask(q, room)
        result.flags.writeable = False
        return result

    def fill_bitmask(self, state: int, out: Any, row: int = 0, *, tokens_left: int | None = None) -> None:
        q, count = self._split(state)
        room = self._room(q, count)
        if room is None:
            self._plain_fill(q, out, row, tokens_left=tokens_left)
            return
        if tokens_left is None:  # the row within the room, kept per (state, room): a copy
            key = (q, room)
            words = self._near.get(key)
            if words is None:
                words = self._near[key] = self.mask(state)
            if (
                type(out) is np.ndarray
                and out.ndim == 2
                and out.shape[1] == self._words
                and out.dtype in _WORD_TYPES
                and type(row) is int
                and 0 <= row < out.shape[0]
                and out.flags.writeable
            ):
                out[row] = words.view(out.dtype)
                return
        self._check_bitmask(out, row)
        self._copy_row(self.mask(state, tokens_left=tokens_left), out, row)

    # transitions ---------------------------------------------------------------------------------

    def advance(self, state: int, token: int) -> int | None:
        q, count = self._split(state)
        following = super().advance(q, token)
        if following is None:
            return None
        inside, entered = self._region_of[q], self._region_of[following]
        if inside < 0 and entered < 0:
            return following
        token = int(token)
        room = self._room(q, count)
        if room is not None and int(self._counts[self._role_of[q]][token]) > room:
            return None
        if entered < 0:
            return following
        current, counter = q, count
        rows, classes, regions = self._rows, self._byte_class, self._regions
        for byte in self._token_bytes[token]:
            target = rows[current][classes[byte]]
            stepped = regions.counter_step(current, target, counter) if target else None
            if stepped is None:
                raise ArtifactError(f"token {token} from state {state}: the artifact's tables disagree")
            current, counter = target, stepped
        if current != following:
            raise ArtifactError(f"token {token} from state {state}: the artifact's tables disagree")
        return current | (counter << STATE_BITS)

    def decreasing(self, state: int) -> np.ndarray:
        q, count = self._split(state)
        return self._within_room(q, count, super().decreasing(q))

    def finishing(self, state: int) -> np.ndarray:
        q, count = self._split(state)
        return self._within_room(q, count, super().finishing(q))
