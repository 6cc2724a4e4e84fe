"""The runtime of an artifact with nest regions: a guide whose states carry a bracket stack.

Takes: what a ``CountedGuide`` takes (its counted regions may be none), plus the DFA's nest
regions (``moonmaskc.automata.nested``) and the table's dynamic tokens
(``TokenTable.nest_dynamic``: per state, the tokens whose walk reaches a pop). Hands on: a
``NestGuide``, the ``Guide`` API unchanged, where a state is one int, ``q + (s << 32)``: the DFA
state ``q`` and, inside a nested container of a region, its stack ``s`` (0 elsewhere, so the state
is ``q`` as in any guide; a counted region's states carry their counter there instead).

- A mask is the row of ``q`` (the tokens that need no pop, with their next states) and the
  dynamic tokens of ``q`` that the stack lets through, kept per ``(q, s)``. Inside a nested
  container they are read off the state's stack patterns (``nest_patterns``: its tokens walked
  once with the stack unknown, then a few vector operations per stack); elsewhere the stack is
  empty and they are walked.
- ``advance`` walks the bytes of a token with the stack (and a counted region's counter) whenever
  ``q``, the next state or the token involves a nest region: a static token may push.
- Budgets: the fewest tokens to the end, eos included, are bounded by a count that is reachable
  and falls by one along a shortest ending: inside a nested container the fewest *bytes*,
  ``distance[q] + entries(s)``, plus eos (a fewest-bytes ending is spelled one byte per
  token: the table build checks it, ``nest_tokens.unspelled_endings``);
  elsewhere the table's fewest tokens. A token is allowed under ``tokens_left`` when that bound
  after it fits in ``tokens_left - 1``; pushes of a static token are bounded by its opening
  brackets. Near the end of a budget a guide may so refuse a token that could still have ended.

Only numpy and the standard library are imported.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from moonmaskc.automata.counted import Regions
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.nested import MAX_NEST_ENTRIES, NestRegions
from moonmaskc.errors import ArtifactError, RuntimeInputError
from moonmaskc.nest_patterns import PatternTables, RoleWays, StackPatterns, kept_role_ways, stack_patterns
from moonmaskc.runtime import Guide
from moonmaskc.runtime_counted import STATE_BITS, CountedGuide

if TYPE_CHECKING:
    from moonmaskc.runtime_table import ServingTable
    from moonmaskc.token_table import TokenTable

_CACHED = 4096
_NEVER = np.iinfo(np.int64).max // 4  # a bound no budget reaches


def _merged(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """int32: two arrays of token ids with none in common (the first ascending, the second in any
    order), as one ascending array."""
    if second.size == 0:
        return first.astype(np.int32)
    return np.sort(np.concatenate([first, second]).astype(np.int32), kind="stable")


class NestGuide(CountedGuide):
    """A guide over a DFA with nest regions (see the module docstring)."""

    def __init__(
        self,
        table: TokenTable | ServingTable,
        accepting: np.ndarray,
        distance: np.ndarray,
        start: int,
        metadata: dict[str, Any] | None,
        regions: Regions | None,
        nests: NestRegions,
        dynamic: tuple[np.ndarray, np.ndarray] | None,
        transitions: np.ndarray,
        byte_class: np.ndarray,
    ) -> None:
        states = transitions.shape[0]
        if regions is None:
            empty = np.zeros(0, dtype=np.int32)
            regions = Regions(
                np.full(states, -1, np.int32), np.full(states, -1, np.int32), empty, empty, empty
            )
        super().__init__(table, accepting, distance, start, metadata, regions, transitions, byte_class)
        if dynamic is None:
            raise ArtifactError("the artifact has nest regions but its token table no dynamic tokens")
        offsets, ids = dynamic
        if offsets.shape != (states + 1,) or nests.region.shape != (states,):
            raise ArtifactError("the dynamic tokens or the nest regions do not match the DFA")
        self._nests = nests
        self._offsets: list[int] = offsets.tolist()
        self._dynamic_ids = ids
        self._nest_region: list[int] = nests.region.tolist()
        self._nest_copy: list[int] = nests.copy.tolist()
        self._nested = nests.copy >= 1  # bool[states]: inside a nested container
        self._masks: dict[tuple[int, int], tuple[np.ndarray, list[tuple[int, int]]]] = {}
        self._loose: dict[tuple[int, int], int] = {}
        self._packed: dict[tuple[int, int], np.ndarray] = {}
        self._entering_states: dict[int, bool] = {}
        self._patterns: dict[int, StackPatterns | None] = {}
        self._role_ways: dict[int, RoleWays | None] = {}
        self._static: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._kept: dict[tuple[int, int, int], np.ndarray] = {}

    def verify_dynamic(self) -> None:
        """``ArtifactError`` unless the stored dynamic tokens are those of the stored DFA and
        vocabulary (a verified load: ``nest_tokens.dynamic_tokens_of`` again)."""
        from moonmaskc.nest_tokens import dynamic_tokens_of
        from moonmaskc.vocabulary import Vocabulary

        vocabulary = Vocabulary.from_arrays(dict(self.table.vocab_arrays))
        offsets, ids = dynamic_tokens_of(self._dfa, vocabulary)
        if offsets.tolist() != self._offsets or not np.array_equal(ids, self._dynamic_ids):
            raise ArtifactError("tokens_nest_ids disagrees with the DFA's nest regions and the vocabulary")

    # states --------------------------------------------------------------------------------------

    def _register_problem(self, q: int, register: int) -> str:
        """In a nest region the register is its stack: 0 in copy 0, one entry or more (at most
        ``MAX_NEST_ENTRIES``) in copy 1; elsewhere a counted region's counter."""
        if self._nest_region[q] < 0:
            return super()._register_problem(q, register)
        copy = self._nest_copy[q]
        entries = self._nests.entries(register)
        if (copy == 0) != (register == 0) or (copy and entries < 1) or entries > MAX_NEST_ENTRIES:
            return "a stack"
        return ""

    def mask_key(self, state: int) -> object:
        q, register = self._split(state)
        if self._nest_region[q] >= 0 or self._involved(q):
            return ("nest", q, register)
        return super().mask_key(state)

    def _plain(self, q: int) -> bool:
        """Whether a ``CountedGuide`` serves ``q`` as it is: outside nest regions, no dynamic
        token, no token into a nested container."""
        return self._nest_region[q] < 0 and not self._involved(q) and not self._entering(q)

    def _involved(self, q: int) -> bool:
        """Whether the row of ``q`` alone may not be the whole mask: ``q`` has dynamic tokens."""
        return self._offsets[q] != self._offsets[q + 1]

    # the stack ---------------------------------------------------------------------------------

    @cached_property
    def _dfa(self) -> DFA:
        """The DFA with its counted and nest regions: what steps a token's bytes with the register
        (``DFA.walk_counted``) and what a verified load computes the dynamic tokens of."""
        dfa = DFA(self._transitions, self._byte_classes, self._accepting, self._start, self._distance)
        dfa.regions = self._regions if self._regions.num_regions else None
        dfa.nests = self._nests
        return dfa

    def _walk(self, q: int, register: int, data: bytes) -> tuple[int, int] | None:
        """The DFA state and register after ``data`` from ``(q, register)``; None when refused."""
        state, register, died = self._dfa.walk_counted(data, q, register)
        return None if died is not None or not state else (state, register)

    def _dynamic(self, q: int, register: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The dynamic tokens of ``q`` that ``register`` lets through, and where each leads."""
        key = (q, register)
        found = self._masks.get(key)
        if found is None:
            ids: list[int] = []
            following: list[tuple[int, int]] = []
            token_bytes = self._token_bytes
            for token in self._dynamic_ids[self._offsets[q] : self._offsets[q + 1]].tolist():
                moved = self._walk(q, register, token_bytes[token])
                if moved is not None:
                    ids.append(token)
                    following.append(moved)
            array = np.asarray(ids, dtype=np.int32)
            array.flags.writeable = False
            if len(self._masks) >= _CACHED:
                self._masks.clear()
            found = self._masks[key] = (array, following)
        return found

    def warm(self) -> NestGuide:
        """``CountedGuide.warm``, and the nest regions' parts: the stack patterns of every state
        in a nested container with dynamic tokens (its role's ways found once for every region),
        and the dynamic tokens of every other state that has some (its stack is empty)."""
        super().warm()
        _ = self._pattern_tables, self._brackets, self._fewest_steps
        offsets = np.asarray(self._offsets)
        for q in np.nonzero(offsets[1:] > offsets[:-1])[0].tolist():
            if self._nested[q]:
                self._patterns_of(q)
            else:
                self._dynamic(q, 0)
        return self

    def _let_through(self, q: int, register: int) -> np.ndarray:
        """The dynamic tokens of ``q`` that ``register`` lets through (``_dynamic``'s ids, though
        not always in order); inside a nested container read off the stack patterns of ``q``."""
        if not self._nested[q]:
            return self._dynamic(q, register)[0]
        patterns = self._patterns_of(q)
        if patterns is None:  # too many ways: walked per stack
            return self._dynamic(q, register)[0]
        return patterns.allowed(register, self._nests.entries(register))

    def _patterns_of(self, q: int) -> StackPatterns | None:
        """The stack patterns of ``q``, in a nested container (``nest_patterns``), from the ways
        of its role (the same in every region, and kept per process for the level and the
        tokens: ``kept_role_ways``); None past their bound."""
        if q not in self._patterns:
            role = int(self._nests.role[q])
            if role not in self._role_ways:
                token_bytes = self._token_bytes
                ids = self._dynamic_ids[self._offsets[q] : self._offsets[q + 1]].tolist()
                tokens = [(token, token_bytes[token]) for token in ids]
                self._role_ways[role] = kept_role_ways(self._dfa, self._pattern_tables, q, tokens)
            found = self._role_ways[role]
            self._patterns[q] = (
                None if found is None else stack_patterns(self._dfa, self._pattern_tables, q, found)
            )
        return self._patterns[q]

    @cached_property
    def _fewest_steps(self) -> np.ndarray:
        """int64[states]: the budget rule's fewest tokens per state (``fewest``), for bounds."""
        return self.budget_rule().steps.astype(np.int64)

    @cached_property
    def _pattern_tables(self) -> PatternTables:
        return PatternTables.of(self._dfa)

    @cached_property
    def _brackets(self) -> np.ndarray:
        """int64[vocab]: the opening brackets of each token (a bound on the pushes it makes)."""
        data = np.frombuffer(self._token_data, dtype=np.uint8)
        opening = np.concatenate([[0], np.cumsum((data == ord("{")) | (data == ord("[")), dtype=np.int64)])
        ends = np.asarray(self._token_ends, dtype=np.int64)
        return opening[ends] - opening[np.concatenate([[0], ends[:-1]])]

    def _bound(self, q: int, register: int) -> int:
        """Tokens, eos included, that surely end the text from ``(q, register)`` (see the module
        docstring); -1 where none does."""
        if self._nested[q]:
            return int(self._distance[q]) + self._nests.entries(register) + 1
        return self.budget_rule().fewest(q)

    # masks ---------------------------------------------------------------------------------------

    def _unbudgeted(self, q: int, register: int) -> np.ndarray:
        static = self.table.allowed(q)
        if not self._involved(q):
            return static
        dynamic = self._let_through(q, register)
        if dynamic.size == 0:
            return static
        ids = _merged(static, dynamic)
        ids.flags.writeable = False
        return ids

    def _dynamic_bounds(self, q: int, register: int, entries: int) -> tuple[np.ndarray, np.ndarray]:
        """The dynamic tokens of ``q`` that ``register`` lets through, and the bound after each
        (``_bound`` of where it leads; ``_NEVER`` where none); read off the stack patterns inside
        a nested container, else walked."""
        if not self._involved(q):
            return np.zeros(0, np.int32), np.zeros(0, np.int64)
        patterns = self._patterns_of(q) if self._nested[q] else None
        if patterns is None:
            dynamic, moved = self._dynamic(q, register)
            bound = np.asarray([self._bound(n, r) for n, r in moved], dtype=np.int64)
        else:
            dynamic, states, after = patterns.through(register, entries)
            steps = self._fewest_steps
            bound = np.where(self._nested[states], self._distance[states] + after + 1, steps[states])
        bound[bound <= 0] = _NEVER
        return dynamic, bound

    def _static_bounds(self, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The row of ``q`` with, per token, the bound after it without the stack's entries, and
        whether the stack's entries add to it (the token leads into a nested container); kept
        per state."""
        found = self._static.get(q)
        if found is None:
            static = self.table.allowed(q)
            following = self._next.dense_row(q)[self._token_class[static]]
            steps = self._fewest_steps
            nested = self._nested[following]
            bound = np.where(
                nested,
                self._distance[following].astype(np.int64) + self._brackets[static] + 1,
                np.where(steps[following] > 0, steps[following], _NEVER),
            )
            is_eos = static == self._eos
            bound[is_eos] = 1 if self._accepting[q] else _NEVER
            bound[is_eos] -= 1  # eos needs no token after it
            nested[is_eos] = False
            if len(self._static) >= _CACHED:
                self._static.clear()
            found = self._static[q] = (static, bound, nested)
        return found

    def _budgeted(self, q: int, register: int, tokens_left: Any) -> np.ndarray | None:
        """The ids allowed within ``tokens_left`` (None: the unbudgeted ones)."""
        if isinstance(tokens_left, bool) or not isinstance(tokens_left, int | np.integer) or tokens_left < 1:
            raise RuntimeInputError(f"tokens_left must be a positive int, not {tokens_left!r}")
        left = int(tokens_left)
        entries = self._nests.entries(register)
        key = (q, register if self._involved(q) else entries)
        loose = self._loose.get(key)
        if loose is not None and left >= loose:
            return None
        kept = self._kept.get((*key, left))
        if kept is not None:
            return kept
        static, base, nested = self._static_bounds(q)
        # The tokens' bounds after them, eos's one less (it needs no token after it).
        bound = base + np.where(nested, entries, 0)
        dynamic, dynamic_bound = self._dynamic_bounds(q, register, entries)
        if loose is None:
            largest = int(max((bound + (static == self._eos)).max(initial=0), dynamic_bound.max(initial=0)))
            loose = self._loose[key] = largest + 1 if largest < _NEVER else 1 << 62
            if left >= loose:
                return None
        ids = _merged(static[bound + 1 <= left], dynamic[dynamic_bound + 1 <= left])
        if ids.size == 0:
            raise RuntimeInputError(
                f"state {q} cannot end within {left} tokens (it needs {self._bound(q, register)})"
            )
        ids.flags.writeable = False
        if len(self._kept) >= _CACHED:
            self._kept.clear()
        self._kept[(*key, left)] = ids
        return ids

    def allowed(self, state: int, *, tokens_left: int | None = None) -> np.ndarray:
        q, register = self._split(state)
        if self._plain(q):
            return super().allowed(state, tokens_left=tokens_left)
        if tokens_left is not None:
            budgeted = self._budgeted(q, register, tokens_left)
            if budgeted is not None:
                return budgeted
        return self._unbudgeted(q, register)

    def _entering(self, q: int) -> bool:
        """Whether ``q``, outside nest regions, has a token into a nested container (the table's
        fewest tokens do not hold there: the nest budget decides); kept per state."""
        found = self._entering_states.get(q)
        if found is None:
            table = self._next
            following = table.next_states[table.next_offsets[q] : table.next_offsets[q + 1]]
            found = self._entering_states[q] = bool(self._nested[following].any())
        return found

    def mask(self, state: int, *, tokens_left: int | None = None) -> np.ndarray:
        q, register = self._split(state)
        if self._plain(q):
            return super().mask(state, tokens_left=tokens_left)
        return self._nest_mask(state, q, register, tokens_left)

    def _nest_mask(self, state: int, q: int, register: int, tokens_left: int | None) -> np.ndarray:
        """``mask`` of ``state`` (``q`` and ``register``, checked) where ``q`` is not plain."""
        if tokens_left is None or self._budgeted(q, register, tokens_left) is None:
            if not self._involved(q):
                return Guide.mask(self, q)  # the row of q
            key = (q, register)  # the unbudgeted mask, kept per state and stack
            packed = self._packed.get(key)
            if packed is None:
                if len(self._packed) >= _CACHED:
                    self._packed.clear()
                packed = Guide.mask(self, q).copy()  # the row of q, and the dynamic tokens let through
                dynamic = self._let_through(q, register)
                np.bitwise_or.at(packed, dynamic >> 5, np.left_shift(1, dynamic & 31).astype(np.uint32))
                packed.flags.writeable = False
                self._packed[key] = packed
            return packed
        return self._pack(self.allowed(state, tokens_left=tokens_left))

    def _pack(self, ids: np.ndarray) -> np.ndarray:
        bits = np.zeros(self._words * 32, dtype=np.uint8)
        bits[ids] = 1
        packed = np.packbits(bits.reshape(-1, 32)[:, ::-1], axis=1).view(">u4").reshape(-1).astype(np.uint32)
        packed.flags.writeable = False
        return packed

    def fill_bitmask(self, state: int, out: Any, row: int = 0, *, tokens_left: int | None = None) -> None:
        q, register = self._split(state)
        if self._plain(q):
            super().fill_bitmask(state, out, row, tokens_left=tokens_left)
            return
        if not self._involved(q) and (
            tokens_left is None or self._budgeted(q, register, tokens_left) is None
        ):
            self._plain_fill(q, out, row)  # no token of q needs the stack: the row of q (native)
            return
        self._check_bitmask(out, row)
        self._copy_row(self._nest_mask(state, q, register, tokens_left), out, row)

    # transitions ---------------------------------------------------------------------------------

    def advance(self, state: int, token: int) -> int | None:
        q, register = self._split(state)
        if isinstance(token, bool | np.bool_) or not isinstance(token, int | np.integer):
            raise RuntimeInputError(f"a token must be an int id, not {type(token).__name__}")
        if not 0 <= token < self._vocab_size:
            raise RuntimeInputError(f"token {token} is outside the vocabulary (0..{self._vocab_size - 1})")
        token = int(token)
        following = Guide.advance(self, q, token)
        if token == self._eos:
            return state if following is not None and register == 0 else None
        touches = self._nest_region[q] >= 0 or (following is not None and self._nest_region[following] >= 0)
        if not touches and not self._involved(q):
            return super().advance(state, token)
        moved = self._walk(q, register, self._token_bytes[token])
        if moved is None:
            return None
        current, stack = moved
        if following is not None and current != following:
            raise ArtifactError(f"token {token} from state {state}: the artifact's tables disagree")
        return current | (stack << STATE_BITS)

    def is_accept(self, state: int) -> bool:
        q, register = self._split(state)
        return bool(self._accepting[q]) and (self._nest_region[q] < 0 or register == 0)

    def distance(self, state: int) -> int:
        q, register = self._split(state)
        if self._nest_region[q] >= 0:
            return self._nests.completion(self._distance, q, register)
        return int(self._distance[q])

    def fewest_tokens(self, state: int) -> int:
        q, register = self._split(state)
        return self._bound(q, register)

    def loose_budget(self, state: int) -> int:
        q, register = self._split(state)
        if self._plain(q):
            return super().loose_budget(state)
        self._budgeted(q, register, 1 << 40)
        entries = self._nests.entries(register)
        return self._loose[(q, register if self._involved(q) else entries)]

    def decreasing(self, state: int) -> np.ndarray:
        q, register = self._split(state)
        if self._plain(q):
            return super().decreasing(state)
        here = self.distance(state)
        ids = [
            token
            for token in self._unbudgeted(q, register).tolist()
            if token != self._eos
            and (moved := self._walk(q, register, self._token_bytes[token])) is not None
            and self.distance(moved[0] | (moved[1] << STATE_BITS)) < here
        ]
        return np.asarray(ids, dtype=np.int32)

    def finishing(self, state: int) -> np.ndarray:
        q, register = self._split(state)
        if self._plain(q):
            return super().finishing(state)
        return self.allowed(state, tokens_left=max(1, self._bound(q, register)))

    def monkey_step(self, state: int, rng: Any, steps_left: int) -> int | None:
        q, register = self._split(state)
        if self._plain(q):
            return super().monkey_step(state, rng, steps_left)
        from moonmaskc.runtime_sampling import choose_uniform

        fewest = self._bound(q, register)
        candidates = self.allowed(state, tokens_left=max(int(steps_left), fewest, 1))
        if len(candidates) == 0:
            return None
        return int(candidates[choose_uniform(rng, len(candidates))])
