"""The decoding runtime: a ``Guide`` over a compiled artifact, with numpy and the standard library only.

Takes: an artifact file (``load(path)``), its arrays (``Guide.from_arrays``) or an in-memory
``Artifact`` (``Guide.from_artifact``). Hands on: a ``Guide`` that answers, for a state (an ``int``),
which tokens may come next (as ids, a packed bitmask or masked logits), where each leads, and
whether the text may end; plus greedy choice and "monkey" random sampling under the mask.

Nothing here imports lark, tokenizers, click or rich: a serving process loads artifacts with
numpy alone. Passing ``tokenizer=`` as a path is the one exception: it parses that tokenizer
(through ``moonmaskc.vocabulary``) to check its fingerprint against the artifact.

States: ``start()`` is where decoding begins; state 0 is the dead state (nothing allowed).
eos is allowed exactly in accepting states and leads to the same state: after eos, stop.
"""

from __future__ import annotations

import json
import os
import random
import weakref
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from moonmaskc.errors import ArtifactError, RuntimeInputError, VocabularyError
from moonmaskc.format import DEFAULT_MAX_BYTES, ArrayChecker, ArtifactFile
from moonmaskc.next_table import NextTable
from moonmaskc.runtime_budget import BudgetRule
from moonmaskc.runtime_sampling import MonkeyResult, choose_uniform
from moonmaskc.runtime_table import ServingTable

if TYPE_CHECKING:
    from moonmaskc.artifact import Artifact
    from moonmaskc.automata.counted import Regions
    from moonmaskc.token_table import TokenTable
    from moonmaskc.vocabulary import Vocabulary

__all__ = ["Guide", "MonkeyResult", "load"]


def load(path: str | os.PathLike[str], tokenizer: Any = None) -> Guide:
    """The ``Guide`` of the artifact at ``path`` (see ``Guide.load``)."""
    return Guide.load(path, tokenizer=tokenizer)


class Guide:
    """Masks and transitions of one artifact for one vocabulary, served in constant time per step."""

    def __init__(
        self,
        table: TokenTable | ServingTable,
        accepting: np.ndarray,
        distance: np.ndarray,
        start: int,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if len(accepting) != table.num_states or len(distance) != table.num_states:
            raise ArtifactError(
                f"the token table has {table.num_states} states but the DFA has {len(accepting)}"
            )
        if not 0 <= start < table.num_states:
            raise ArtifactError(f"start state {start} is not a state of the DFA")
        self.table = table
        self.metadata = metadata or {}
        self._accepting = np.asarray(accepting, dtype=bool)
        self._distance = np.asarray(distance, dtype=np.int64)
        self._start = int(start)
        self._eos = table.eos_id
        self._vocab_size = table.vocab_size
        self._words = table.mask_rows.shape[1]
        self._num_states = table.num_states
        # Per dtype, a view of each mask row (made on first use), so a fill is one row assignment.
        self._row_views: dict[np.dtype[Any], _RowViews] = {
            np.dtype(dtype): _RowViews(table.mask_rows, dtype) for dtype in (np.uint32, np.int32)
        }
        self._state_rows: list[int] = table.state_row.tolist()
        # With the native core, a fill is one C call (the common case; everything else goes to the
        # method below): what it copies from for each state (its mask row, or the row as a
        # constant word and the words that differ), kept on first use and shared by the states of
        # one row. A subclass's own fill_bitmask is left alone.
        self._state_masks: list[object | None] = [None] * self._num_states
        self._row_sources: list[object | None] = [None] * table.mask_rows.shape[0]
        filler = _native_filler()
        self._filler = None
        self._fill_source: Callable[[np.ndarray], object] | None = None
        if filler is not None and type(self).fill_bitmask is Guide.fill_bitmask:
            filler_class, self._fill_source = filler
            self._filler = filler_class(
                self._num_states,
                self._words,
                self._state_masks,
                self._state_fill_source,
                method_of_weak(self, Guide.fill_bitmask),
            )
            self.fill_bitmask = self._filler.fill  # type: ignore[method-assign]

    @cached_property
    def _token_class(self) -> np.ndarray:
        return _read_only(self.table.token_class)

    @cached_property
    def _next(self) -> NextTable:
        return self.table.next_table

    @cached_property
    def _following(self) -> Callable[[int, int], int]:
        return self._next.following  # bound once: ``advance`` calls it every step

    @cached_property
    def _token_ends(self) -> np.ndarray:
        return np.cumsum(np.asarray(self.table.vocab_arrays["vocab_token_lengths"], dtype=np.int64))

    @cached_property
    def _token_data(self) -> bytes:
        return np.asarray(self.table.vocab_arrays["vocab_token_bytes"], dtype=np.uint8).tobytes()

    # construction -------------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        tokenizer: Any = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        verify: bool = False,
    ) -> Guide:
        """Open an artifact file for serving: the arrays a first mask needs are memory-mapped and
        checked, the rest is read on first use (see ``moonmaskc.runtime_table``). ``tokenizer``
        (a ``Vocabulary`` or a spec for ``load_vocabulary``), when given, must have the artifact's
        vocabulary fingerprint (``VocabularyError`` otherwise). ``max_bytes`` bounds the declared
        size of every array (``ArtifactError`` past it).

        The checks of a plain load make sure that nothing the file holds can crash, hang or mislead
        the process into reading out of bounds; ``verify=True`` also checks every array against its
        checksum and every mask row against the next-state table, so that a file that loads serves
        exactly what was compiled (``moonmaskc inspect --verify``)."""
        arrays = ArtifactFile(path, max_bytes)
        if verify:
            arrays.verify_checksums()
        if arrays.version == 1:
            from moonmaskc.artifact import read_arrays

            return cls.from_arrays(read_arrays(path, max_bytes), tokenizer=tokenizer, source=str(path))
        if not any(name.startswith("tokens_") for name in arrays):
            raise ArtifactError(f"{path} holds no token table: compile it with a tokenizer (--tokenizer)")
        missing = [name for name in ("dfa_accepting", "dfa_distance", "dfa_start") if name not in arrays]
        if missing:
            raise ArtifactError(f"{path} lacks the arrays {', '.join(missing)}")
        table = ServingTable(arrays)
        check = ArrayChecker(str(path))
        n = table.num_states
        accepting = check.array("dfa_accepting", arrays["dfa_accepting"], "b", (n,))
        distance = check.array("dfa_distance", arrays["dfa_distance"], "i", (n,), -1, None)
        start = check.start(arrays["dfa_start"], n)
        if n and (bool(accepting[0]) or int(distance[0]) != -1 or bool(np.any(distance[1:] < 0))):
            raise check.fail("dfa_distance", "does not mark state 0, and only it, as dead")
        if not np.array_equal(distance == 0, accepting):
            raise check.fail("dfa_accepting", "disagrees with dfa_distance (0 exactly where accepting)")
        if "dfa_nest_region" in arrays:
            guide = _nest_guide(table, accepting, distance, start, arrays.metadata, arrays, path)
            if verify:
                guide.verify_dynamic()  # type: ignore[attr-defined]
        elif "dfa_region" in arrays:
            guide = _counted_guide(
                table, accepting, distance, start, arrays.metadata, _regions_of(arrays, path)
            )
            if verify:
                guide.verify_counts()  # type: ignore[attr-defined]
        else:
            guide = cls(table, accepting, distance, start, arrays.metadata)
        if verify:
            table.verify()
        guide.check_tokenizer(tokenizer)
        return guide

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], tokenizer: Any = None, source: str = "<memory>"
    ) -> Guide:
        """A guide from an artifact's arrays (``dfa_*``, ``tokens_*``, ``vocab_*``, ``metadata``)."""
        from moonmaskc.token_table import TokenTable

        if not any(name.startswith("tokens_") for name in arrays):
            raise ArtifactError(f"{source} holds no token table: compile it with a tokenizer (--tokenizer)")
        try:
            table = TokenTable.from_arrays(arrays)
            accepting = np.asarray(arrays["dfa_accepting"], dtype=bool)
            distance = np.asarray(arrays["dfa_distance"])
            start = int(arrays["dfa_start"])
            metadata = json.loads(str(arrays["metadata"])) if "metadata" in arrays else {}
        except (KeyError, ValueError, IndexError, TypeError) as error:
            raise ArtifactError(f"{source}: the token table is corrupted ({error})") from None
        if "dfa_nest_region" in arrays:
            guide = _nest_guide(table, accepting, distance, start, metadata, arrays, source)
        elif "dfa_region" in arrays:
            guide = _counted_guide(table, accepting, distance, start, metadata, _regions_of(arrays, source))
        else:
            guide = cls(table, accepting, distance, start, metadata)
        guide.check_tokenizer(tokenizer)
        return guide

    @classmethod
    def from_artifact(cls, artifact: Artifact, tokenizer: Any = None) -> Guide:
        """A guide over an in-memory ``Artifact`` that has a token table."""
        if artifact.token_table is None:
            raise ArtifactError("the artifact holds no token table: compile it with a tokenizer")
        dfa = artifact.dfa
        if dfa.nests is not None:
            from moonmaskc.runtime_nested import NestGuide

            nested = NestGuide(
                artifact.token_table,
                dfa.accepting,
                dfa.distance,
                dfa.start,
                artifact.metadata,
                dfa.regions,
                dfa.nests,
                artifact.token_table.nest_dynamic,
                dfa.transitions,
                dfa.byte_class,
            )
            nested.check_tokenizer(tokenizer)
            return nested
        if dfa.regions is not None:
            counted = (dfa.regions, dfa.transitions, dfa.byte_class)
            guide = _counted_guide(
                artifact.token_table, dfa.accepting, dfa.distance, dfa.start, artifact.metadata, counted
            )
        else:
            guide = cls(artifact.token_table, dfa.accepting, dfa.distance, dfa.start, artifact.metadata)
        guide.check_tokenizer(tokenizer)
        return guide

    def check_tokenizer(self, tokenizer: Vocabulary | str | os.PathLike[str] | None) -> None:
        """Raise ``VocabularyError`` unless ``tokenizer`` is the vocabulary the table was built for."""
        if tokenizer is None:
            return
        from moonmaskc.vocabulary import load_vocabulary

        vocabulary = load_vocabulary(tokenizer)
        if vocabulary.fingerprint != self.table.fingerprint:
            raise VocabularyError(
                f"tokenizer {vocabulary.name!r} (fingerprint {vocabulary.fingerprint[:16]}...) is not the "
                f"vocabulary this artifact was compiled for ({self.vocabulary_name!r}, fingerprint "
                f"{self.table.fingerprint[:16]}...); recompile or link it with this tokenizer"
            )

    # properties ---------------------------------------------------------------------------------

    @property
    def eos(self) -> int:
        return self._eos

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def num_states(self) -> int:
        return self._num_states

    @property
    def bitmask_words(self) -> int:
        """Words of a packed mask row: ``ceil(vocab_size / 32)``."""
        return self._words

    @property
    def fingerprint(self) -> str:
        return self.table.fingerprint

    @property
    def vocabulary_name(self) -> str:
        return str(self.table.vocab_arrays["vocab_name"])

    def warm(self) -> Guide:
        """Build now what steps would otherwise build on first use (every mask row, the next
        states and each row's class ranks, within ``moonmaskc.next_table.RANK_CELLS``), so that
        every later fill is one row copy and every step a few lookups. A load serves its first
        mask without it; call it once the first mask is out, off the critical path (7 ms for
        ``user.json``'s GPT-2 table, 16 ms for its Llama-3 one, measured 2026-12-06). Returns the
        guide."""
        warm = getattr(self.table, "warm", None)
        if warm is not None:
            warm()
        _ = self._token_class
        self._next.warm()
        if self._filler is not None:  # (the list is shared with the filler)
            self._state_masks[:] = [self._state_fill_source(state) for state in range(self._num_states)]
        return self

    @cached_property
    def _state_fill_source(self) -> Callable[[int], object]:
        """What the native filler copies from for a state (in range): ``fill_source`` of its mask
        row, made once per row. Reads the guide's lists and table, not the guide: the filler
        keeps it, and the guide keeps the filler (see ``method_of_weak``)."""
        assert self._fill_source is not None
        return _RowSources(self._state_rows, self._row_sources, self._fill_source, self.table)

    def start(self) -> int:
        return self._start

    def mask_key(self, state: int) -> object:
        """A key that two states share when they allow the same tokens (without a budget): the
        state itself here; a counted guide's states share keys across counts (so a cache of rows
        by this key stays within a few per DFA state)."""
        return self._state(state)

    # masks --------------------------------------------------------------------------------------

    def _state(self, state: Any) -> int:
        if isinstance(state, bool | np.bool_) or not isinstance(state, int | np.integer):
            raise RuntimeInputError(f"a state must be an int, not {type(state).__name__}")
        if not 0 <= state < self._num_states:
            raise RuntimeInputError(f"state {state} is not a state of this guide (0..{self._num_states - 1})")
        return int(state)

    # The DFA state of a guide state, checked: the state itself here (a counted guide's states
    # also carry a counter, and it overrides this). An alias, not a method calling ``_state``:
    # ``is_accept`` and the budget calls pay no extra frame.
    _dfa_state = _state

    # The budget rule, made on the first budgeted call (see ``budget_rule``).
    _budget: BudgetRule | None = None

    def budget_rule(self) -> BudgetRule:
        """The token-budget rule of this guide (``moonmaskc.runtime_budget``), made on first use:
        the fewest tokens to eos per state come from the artifact (``eos_steps``) when it holds
        them, else are computed over the token table."""
        rule = self._budget
        if rule is None:
            try:
                rule = BudgetRule(
                    self._next,
                    self._token_class,
                    self._accepting,
                    self._eos,
                    steps=getattr(self.table, "eos_steps", None),
                )
            except ValueError as error:
                raise ArtifactError(f"the token table's eos steps are unusable ({error})") from None
            self._budget = rule
        return rule

    def fewest_tokens(self, state: int) -> int:
        """The fewest tokens, eos included, that end a valid text from ``state``: 1 in an accepting
        state; -1 when no token sequence of the vocabulary ends it; 0 for the dead state."""
        return self.budget_rule().fewest(self._dfa_state(state))

    def loose_budget(self, state: int) -> int:
        """The least ``tokens_left`` from which the budgeted mask of ``state`` is its unbudgeted
        mask (``moonmaskc.runtime_budget.NEVER`` where some allowed token can never end)."""
        return self.budget_rule().loose_budget(self._dfa_state(state))

    def allowed(self, state: int, *, tokens_left: int | None = None) -> np.ndarray:
        """Sorted int32 ids of the tokens allowed in ``state`` (read-only).

        With ``tokens_left`` (tokens that may still be generated, this one and eos included), only
        tokens after which a valid end still fits: ``fewest_tokens(next) + 1 <= tokens_left``, eos
        where accepting. ``RuntimeInputError`` if it is not a positive int or ``state`` cannot end
        within it."""
        state = self._state(state)
        if tokens_left is not None:
            budgeted = self.budget_rule().row(state, tokens_left)
            if budgeted is not None:
                return budgeted.ids
        return self.table.allowed(state)

    def mask(self, state: int, *, tokens_left: int | None = None) -> np.ndarray:
        """The packed uint32 mask row of ``state`` (read-only): token i is bit i % 32 of word i // 32.
        ``tokens_left``: as in ``allowed``."""
        state = self._state(state)
        if tokens_left is not None:
            budgeted = self.budget_rule().row(state, tokens_left)
            if budgeted is not None:
                return budgeted.packed
        return self.table.mask_rows[self.table.state_row[state]]

    def fill_bitmask(self, state: int, out: Any, row: int = 0, *, tokens_left: int | None = None) -> None:
        """Copy the mask of ``state`` into row ``row`` of ``out`` (numpy or torch, int32 or uint32,
        1-D or 2-D, at least ``bitmask_words`` words; extra words are set to 0). ``tokens_left``:
        as in ``allowed``; while it is at least ``loose_budget(state)`` the fill is the unbudgeted one.
        (With the native core, the common case never gets here: see ``_native/fill.pyx``.)"""
        if (
            type(out) is np.ndarray
            and type(state) is int
            and type(row) is int
            and out.ndim == 2
            and out.shape[1] == self._words
            and 0 <= state < self._num_states
            and 0 <= row < out.shape[0]
            and out.flags.writeable
        ):
            views = self._row_views.get(out.dtype)
            if views is not None:  # the fast path: an int32 or uint32 row of exactly the mask's width
                if tokens_left is None or (
                    type(tokens_left) is int
                    and self._budget is not None
                    and tokens_left >= self._budget.loose[state]
                ):
                    out[row] = views[self._state_rows[state]]
                    return
        self._check_bitmask(out, row)
        self._copy_row(self.mask(state, tokens_left=tokens_left), out, row)

    def _copy_row(self, mask: np.ndarray, out: Any, row: Any) -> None:
        """Copy the packed ``mask`` into row ``row`` of ``out`` (checked by ``_check_bitmask``)."""
        if _is_torch(out):
            target = out[row] if out.dim() == 2 else out
            source = _torch_from_numpy(mask.view(np.int32), out)
            target[: self._words].copy_(source)
            target[self._words :].zero_()
            return
        target = out[row] if np.ndim(out) == 2 else out
        target[: self._words] = mask.view(target.dtype)
        target[self._words :] = 0

    def _check_bitmask(self, out: Any, row: Any) -> None:
        """``RuntimeInputError`` unless ``out`` is a writable int32 / uint32 numpy array or an int32
        torch tensor, 1-D or 2-D, of at least ``bitmask_words`` words, and ``row`` one of its rows."""
        if _is_torch(out):
            dtype, ndim, shape = str(out.dtype).removeprefix("torch."), out.dim(), tuple(out.shape)
            writable = True
        elif isinstance(out, np.ndarray):
            words = out.dtype
            dtype = "int32" if words == np.int32 else "uint32" if words == np.uint32 else str(words)
            ndim, shape, writable = out.ndim, out.shape, bool(out.flags.writeable)
        else:
            raise RuntimeInputError(
                f"the bitmask must be a numpy array or a torch tensor, not {type(out).__name__}"
            )
        if dtype not in ("int32", "uint32"):
            raise RuntimeInputError(f"the bitmask must hold int32 or uint32 words, not {dtype}")
        if ndim not in (1, 2):
            raise RuntimeInputError(f"the bitmask must be 1-D or 2-D, not {ndim}-D")
        if not writable:
            raise RuntimeInputError("the bitmask is read-only")
        self._check_words(int(shape[-1]))
        if ndim == 2 and (isinstance(row, bool) or not isinstance(row, int | np.integer)):
            raise RuntimeInputError(f"row must be an int, not {type(row).__name__}")
        if ndim == 2 and not 0 <= int(row) < shape[0]:
            raise RuntimeInputError(f"row {row} is not a row of the bitmask (0..{shape[0] - 1})")

    def _check_words(self, words: int) -> None:
        if words < self._words:
            raise RuntimeInputError(f"the bitmask has {words} words; {self._words} are needed")

    def apply_mask(self, logits: Any, state: int, *, tokens_left: int | None = None) -> Any:
        """Set, in place, every logit of a token not allowed in ``state`` to -inf; returns ``logits``.

        ``logits`` is 1-D, numpy or torch, of at least ``vocab_size`` entries (entries past the
        vocabulary, padding, are never allowed). ``tokens_left``: as in ``allowed``."""
        _check_float_logits(logits, self._vocab_size)
        ids = self.allowed(state, tokens_left=tokens_left)
        if _is_torch(logits):
            index = _torch_from_numpy(ids.astype(np.int64), logits, keep_dtype=True)
            kept = logits.index_select(0, index)
            logits.fill_(float("-inf"))
            logits.index_copy_(0, index, kept)
            return logits
        kept_values = logits[ids]
        logits.fill(-np.inf)
        logits[ids] = kept_values
        return logits

    # transitions --------------------------------------------------------------------------------

    def advance(self, state: int, token: int) -> int | None:
        """The state after ``token``, or ``None`` when ``token`` is not allowed in ``state``.
        eos (in an accepting state) leads to the same state."""
        state = self._state(state)
        if isinstance(token, bool | np.bool_) or not isinstance(token, int | np.integer):
            raise RuntimeInputError(f"a token must be an int id, not {type(token).__name__}")
        if not 0 <= token < self._vocab_size:
            raise RuntimeInputError(f"token {token} is outside the vocabulary (0..{self._vocab_size - 1})")
        following = self._following(state, self._token_class.item(token))
        return following if following else None

    def is_accept(self, state: int) -> bool:
        return bool(self._accepting[self._dfa_state(state)])

    def distance(self, state: int) -> int:
        """The fewest bytes from ``state`` to an accepting state (-1 for the dead state)."""
        return int(self._distance[self._dfa_state(state)])

    def decreasing(self, state: int) -> np.ndarray:
        """Allowed tokens (never eos) whose next state is strictly closer to acceptance."""
        state = self._state(state)
        following = self._next.dense_row(state)
        closer = (following != 0) & (self._distance[following] < self._distance[state])
        ids = np.flatnonzero(closer[self._token_class]).astype(np.int32)
        return ids[ids != self._eos]

    def finishing(self, state: int) -> np.ndarray:
        """The candidates of ``finish`` mode: the tokens allowed with the tightest budget,
        ``tokens_left = fewest_tokens(state)``, so eos alone when ``state`` accepts, else the tokens
        that start a shortest ending. Where no token sequence ends the text (the vocabulary cannot
        spell it), ``decreasing``."""
        state = self._state(state)
        if self.budget_rule().fewest(state) > 0:
            return self.budget_rule().tightest(state)
        return self.decreasing(state)

    # choosing -----------------------------------------------------------------------------------

    def greedy(
        self, state: int, logits: Any, finish: bool = False, *, tokens_left: int | None = None
    ) -> int | None:
        """The allowed token with the highest logit, ties to the smallest id; ``None`` if none.

        NaN or +inf anywhere, or a length other than ``vocab_size``, raise ``RuntimeInputError``;
        -inf marks a token disabled upstream. ``tokens_left``: only tokens after which a valid end
        still fits (as in ``allowed``). ``finish=True`` keeps only the tokens allowed with the
        tightest budget (``finishing``: in an accepting state only eos, else a token that starts a
        shortest ending), so a run of ``finish`` steps ends in exactly ``fewest_tokens(state)``."""
        if not (_is_torch(logits) or isinstance(logits, np.ndarray)):
            raise RuntimeInputError(
                f"logits must be a numpy array or a torch tensor, not {type(logits).__name__}"
            )
        scores = _as_numpy(logits)
        if scores.dtype.kind not in "fiu":
            raise RuntimeInputError(f"logits must be real numbers, not {scores.dtype}")
        if scores.ndim != 1 or scores.shape[0] != self._vocab_size:
            raise RuntimeInputError(
                f"logits must be 1-D with exactly {self._vocab_size} entries, got shape {scores.shape}"
            )
        if np.isnan(scores).any() or np.isposinf(scores).any():
            raise RuntimeInputError("logits contain NaN or +inf")
        candidates = self.finishing(state) if finish else self.allowed(state, tokens_left=tokens_left)
        if len(candidates) == 0:
            return None
        values = scores[candidates]
        best = int(np.argmax(values))
        if values[best] == -np.inf:
            return None
        return int(candidates[best])

    def monkey_step(self, state: int, rng: Any, steps_left: int) -> int | None:
        """One random token, uniform over the tokens allowed with a budget of
        ``max(steps_left, fewest_tokens(state))`` (eos included where accepting): the whole mask
        while the budget is loose, only tokens that still end in time as it runs out, and once it
        is spent the tightest budget (``finishing``). Where no token sequence ends the text, the
        whole mask while ``steps_left > 0``, then ``decreasing``. ``None`` when there is no candidate."""
        fewest = self.budget_rule().fewest(self._dfa_state(state))
        if fewest > 0:
            candidates = self.allowed(state, tokens_left=max(int(steps_left), fewest))
        elif steps_left > 0:
            candidates = self.allowed(state)
        else:
            candidates = self.finishing(state)
        if len(candidates) == 0:
            return None
        return int(candidates[choose_uniform(rng, len(candidates))])

    def monkey(self, rng: Any, max_tokens: int) -> MonkeyResult:
        """Random masked decoding from the start state: ``(tokens, text, finished)``.

        ``max_tokens`` is the token budget, eos included (see ``monkey_step``): the sample ends with
        eos within ``max(max_tokens, fewest_tokens(start()))`` tokens whenever the start state can
        end at all; at most ``max_tokens * 4 + 64`` steps are taken. ``tokens`` ends with eos when
        ``finished``; ``text`` is the decoded bytes of the tokens (UTF-8, invalid sequences
        replaced). ``finished`` is false when the hard cap is reached or no candidate is left."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int | np.integer) or max_tokens < 0:
            raise RuntimeInputError(f"max_tokens must be an int of at least 0, not {max_tokens!r}")
        max_tokens = int(max_tokens)
        if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
            rng = random.Random(int(rng))
        elif not callable(getattr(rng, "random", None)):
            raise RuntimeInputError(f"rng must be a seed (int) or a random.Random, not {type(rng).__name__}")
        state = self._start
        tokens: list[int] = []
        finished = False
        for step in range(max_tokens * 4 + 64):
            token = self.monkey_step(state, rng, max_tokens - step)
            if token is None:
                break
            tokens.append(token)
            if token == self._eos:
                finished = True
                break
            next_state = self.advance(state, token)
            if next_state is None:  # only a corrupted artifact's masks and next states disagree
                raise ArtifactError(
                    f"the artifact's mask of state {state} allows token {token}, which its next-state "
                    "table does not: the artifact is corrupted"
                )
            state = next_state
        return MonkeyResult(tokens, self.decode(tokens).decode("utf-8", "replace"), finished)

    def decode(self, tokens: list[int] | np.ndarray) -> bytes:
        """The bytes of ``tokens`` (eos and special tokens add none)."""
        ends = self._token_ends
        data = self._token_data
        pieces = []
        if isinstance(tokens, np.ndarray) and (tokens.ndim != 1 or tokens.dtype.kind not in "iu"):
            raise RuntimeInputError(
                f"tokens must be a 1-D array of ints, not {tokens.dtype}{list(tokens.shape)}"
            )
        if not isinstance(tokens, list | tuple | np.ndarray):
            raise RuntimeInputError(f"tokens must be a list of ints, not {type(tokens).__name__}")
        for token in tokens:
            if isinstance(token, bool | np.bool_) or not isinstance(token, int | np.integer):
                raise RuntimeInputError(f"a token must be an int id, not {type(token).__name__}")
            token = int(token)
            if not 0 <= token < self._vocab_size:
                raise RuntimeInputError(f"token {token} is outside the vocabulary")
            start = int(ends[token - 1]) if token else 0
            pieces.append(data[start : int(ends[token])])
        return b"".join(pieces)


def _regions_of(
    arrays: Mapping[str, np.ndarray] | ArtifactFile, source: str | os.PathLike[str]
) -> tuple[Regions, np.ndarray, np.ndarray]:
    """The checked counted regions, transitions and byte classes of a file's ``dfa_*`` arrays
    (``artifact.checked_regions``)."""
    from moonmaskc.artifact import checked_regions

    return checked_regions({name: arrays[name] for name in arrays if name.startswith("dfa_")}, source)


def _nest_guide(
    table: TokenTable | ServingTable,
    accepting: np.ndarray,
    distance: np.ndarray,
    start: int,
    metadata: dict[str, Any] | None,
    arrays: Mapping[str, np.ndarray] | ArtifactFile,
    source: str | os.PathLike[str],
) -> Guide:
    """A ``runtime_nested.NestGuide`` from a file's checked arrays (its counted regions, if any,
    checked as ``_regions_of`` checks them)."""
    from moonmaskc.artifact import check_dfa_arrays
    from moonmaskc.nest_format import NEST_FORMAT_VERSION, checked_dynamic, checked_nests
    from moonmaskc.runtime_nested import NestGuide

    version = getattr(arrays, "version", None)
    if version is None and "format_version" in arrays:
        version = int(np.asarray(arrays["format_version"]))
    if version is not None and version < NEST_FORMAT_VERSION:
        raise ArtifactError(f"{source} is corrupted: format version {version} with nest-region arrays")
    dfa_arrays = {name: arrays[name] for name in arrays if name.startswith("dfa_")}
    regions = None
    if "dfa_region" in dfa_arrays:
        regions = _regions_of(arrays, source)[0]
    else:
        check_dfa_arrays(dfa_arrays, source)
    nests = checked_nests(dfa_arrays, str(source))
    transitions = np.ascontiguousarray(dfa_arrays["dfa_transitions"], dtype=np.int32)
    byte_class = np.asarray(dfa_arrays["dfa_byte_class"], dtype=np.int32)
    names = ("tokens_nest_offsets", "tokens_nest_ids")
    dynamic = checked_dynamic(
        {name: arrays[name] for name in names if name in arrays},
        transitions.shape[0],
        len(table.token_class),
        str(source),
    )
    return NestGuide(
        table, accepting, distance, start, metadata, regions, nests, dynamic, transitions, byte_class
    )


def _counted_guide(
    table: TokenTable | ServingTable,
    accepting: np.ndarray,
    distance: np.ndarray,
    start: int,
    metadata: dict[str, Any] | None,
    counted: tuple[Regions, np.ndarray, np.ndarray],
) -> Guide:
    """A ``runtime_counted.CountedGuide``: the regions, transitions and byte classes of a DFA
    with counted regions beside the usual parts."""
    from moonmaskc.runtime_counted import CountedGuide

    regions, transitions, byte_class = counted
    return CountedGuide(table, accepting, distance, start, metadata, regions, transitions, byte_class)


def _is_torch(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "torch"


def _torch_from_numpy(array: np.ndarray, like: Any, keep_dtype: bool = False) -> Any:
    import torch  # only reached with a torch tensor in hand, so torch is already imported

    if not array.flags.writeable:  # mapped from the artifact: torch wants memory it may write
        array = array.copy()
    tensor = torch.from_numpy(np.ascontiguousarray(array)).to(like.device)
    return tensor if keep_dtype else tensor.to(like.dtype)


def _as_numpy(logits: Any) -> np.ndarray:
    if _is_torch(logits):
        return logits.detach().float().cpu().numpy()
    return np.asarray(logits)


def _native_filler() -> tuple[Callable[..., Any], Callable[[np.ndarray], object]] | None:
    """The native core's ``StateRowFiller`` class and its ``fill_source`` (``_native/fill.pyx``),
    or None when it was not built or ``MOONMASKC_PURE=1``: then fills take the numpy path."""
    from moonmaskc.automata.native import native

    module = native("fill")
    if module is None or not hasattr(module, "StateRowFiller") or not hasattr(module, "fill_source"):
        return None
    return module.StateRowFiller, module.fill_source


def method_of_weak(guide: Guide, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` bound to ``guide`` through a weak reference: what the native filler falls back
    on. The guide keeps its filler (``fill_bitmask`` is the filler's), so a strong reference back
    would make a cycle, and every guide, with its tables, would wait for the cyclic collector
    instead of going when its last reference does. Called after the guide is gone (its
    ``fill_bitmask`` kept on its own), a ``RuntimeInputError`` says so. Pickles as the method of
    the pickled guide."""
    return _WeakBound(guide, method)


_GONE = "the guide of this fill_bitmask is gone: keep the guide while you use its methods"


class _WeakBound:
    __slots__ = ("_method", "_reference")

    def __init__(self, guide: Guide, method: Callable[..., Any]) -> None:
        self._reference = weakref.ref(guide)
        self._method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = self._reference()
        if target is None:
            raise RuntimeInputError(_GONE)
        return self._method(target, *args, **kwargs)

    def __reduce__(self) -> tuple[type[_WeakBound], tuple[Guide, Callable[..., Any]]]:
        target = self._reference()
        if target is None:
            raise RuntimeInputError(_GONE)
        return _WeakBound, (target, self._method)


class _RowSources:
    """``Guide._state_fill_source``: each state's fill source, made from its row's mask once per
    row (``row_sources``, shared with the guide)."""

    __slots__ = ("_fill_source", "_row_sources", "_state_rows", "_table")

    def __init__(
        self,
        state_rows: list[int],
        row_sources: list[object | None],
        fill_source: Callable[[np.ndarray], object],
        table: Any,
    ) -> None:
        self._state_rows = state_rows
        self._row_sources = row_sources
        self._fill_source = fill_source
        self._table = table

    def __call__(self, state: int) -> object:
        row = self._state_rows[state]
        found = self._row_sources[row]
        if found is None:
            found = self._row_sources[row] = self._fill_source(self._table.mask_rows[row])
        return found


class _RowViews:
    """The mask rows seen as ``dtype`` words, each view made on first use and kept."""

    def __init__(self, rows: Any, dtype: type[np.integer[Any]]) -> None:
        self._rows = rows
        self._dtype = dtype
        self._views: list[np.ndarray | None] = [None] * len(rows)

    def __getitem__(self, row: int) -> np.ndarray:
        found = self._views[row]
        if found is None:
            found = self._views[row] = self._rows[row].view(self._dtype)
        return found


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _check_float_logits(logits: Any, vocab_size: int) -> None:
    """``RuntimeInputError`` unless ``logits`` is a writable 1-D float array (numpy or torch) of at
    least ``vocab_size`` entries: masking writes -inf into it in place."""
    if _is_torch(logits):
        kind_ok, shape, writable = bool(logits.dtype.is_floating_point), tuple(logits.shape), True
    elif isinstance(logits, np.ndarray):
        kind_ok, shape, writable = logits.dtype.kind == "f", logits.shape, bool(logits.flags.writeable)
    else:
        raise RuntimeInputError(
            f"logits must be a numpy array or a torch tensor, not {type(logits).__name__}"
        )
    if not kind_ok:
        raise RuntimeInputError(f"logits must be floating point to take -inf, not {logits.dtype}")
    if len(shape) != 1 or shape[0] < vocab_size:
        raise RuntimeInputError(f"logits must be 1-D with at least {vocab_size} entries, got shape {shape}")
    if not writable:
        raise RuntimeInputError("logits are read-only; masking writes into them")
