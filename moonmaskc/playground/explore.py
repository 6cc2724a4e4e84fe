"""What the Playground shows of a compiled artifact, computed with the runtime and the DFA.

Takes: the ``.npz`` bytes a worker compiled. Hands on: a ``Compiled`` entry (the ``Artifact``, its
runtime ``Guide`` and the bytes to download) and JSON-ready answers:
- ``summary``: states, accepting states, byte classes, compile time, the grammar really built
  (the IR printed back), the options and the vocabulary;
- ``describe_state``: accepting or not, the distance to acceptance, how many tokens are allowed and
  the allowed tokens (filtered by a search text), and the automaton's neighbourhood: the live
  transitions out of the state and into it, each labelled with its bytes;
- ``step``: one decoding step, masked (a uniform choice among the allowed tokens, the runtime's
  ``monkey_step``) or unmasked (a uniform choice among every token, as ``moonmaskc sample`` does), or
  with the token the user clicked; a token that is not allowed leads to the dead state 0;
- ``experiment``: ``moonmaskc.sampling.run_experiment``, the very function behind
  ``moonmaskc sample``, so the same seed gives the same numbers.

There is no second copy of the compiler or the runtime here: masks, transitions and samples come
from ``Guide`` and ``run_experiment``.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from moonmaskc.artifact import Artifact, artifact_from_arrays
from moonmaskc.automata.dfa import DFA
from moonmaskc.playground.errors import PlaygroundError
from moonmaskc.runtime import Guide
from moonmaskc.sampling import UNMASKED_TOKEN_CAP, run_experiment, validity_checker

GRAMMAR_CHARS_SHOWN = 20_000
NEIGHBOURS_SHOWN = 8
EDGE_LABEL_CHARS = 22
SAMPLES_SHOWN = 5
MODES = ("masked", "unmasked")

_token_texts_cache: dict[str, list[str]] = {}


@dataclass
class Compiled:
    """One compiled artifact held by the server (``id`` names it in the API)."""

    id: str
    artifact: Artifact
    guide: Guide
    npz: bytes
    wall_seconds: float

    @classmethod
    def from_npz(cls, artifact_id: str, npz: bytes, wall_seconds: float) -> Compiled:
        with np.load(io.BytesIO(npz), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        artifact = artifact_from_arrays(arrays, source="playground")
        return cls(artifact_id, artifact, Guide.from_artifact(artifact), npz, wall_seconds)

    @property
    def token_texts(self) -> list[str]:
        """Each token's text as the page shows it (eos by its name; bytes that are not UTF-8 as
        ``\\xNN``), computed once per vocabulary."""
        fingerprint = self.guide.fingerprint
        texts = _token_texts_cache.get(fingerprint)
        if texts is None:
            guide = self.guide
            texts = [
                guide.decode([token]).decode("utf-8", "backslashreplace") for token in range(guide.vocab_size)
            ]
            texts[guide.eos] = str(guide.table.vocab_arrays["vocab_eos_token"])
            if len(_token_texts_cache) >= 4:
                _token_texts_cache.clear()
            _token_texts_cache[fingerprint] = texts
        return texts

    def summary(self) -> dict[str, Any]:
        dfa = self.artifact.dfa
        meta = self.artifact.metadata
        grammar = str(meta.get("grammar", ""))
        timings = {key: round(value * 1000, 2) for key, value in meta.get("timings", {}).items()}
        return {
            "id": self.id,
            "kind": meta.get("kind"),
            "states": dfa.num_states,
            "accepting_states": int(dfa.accepting.sum()),
            "byte_classes": dfa.num_classes,
            "start": dfa.start,
            "empty": dfa.is_empty,
            "compile_ms": round(self.wall_seconds * 1000, 2),
            "timings_ms": timings,
            "grammar": grammar[:GRAMMAR_CHARS_SHOWN],
            "grammar_truncated": bool(meta.get("grammar_truncated")) or len(grammar) > GRAMMAR_CHARS_SHOWN,
            "options": meta.get("options", {}),
            "notes": meta.get("notes", {}),
            "warnings": meta.get("warnings", []),
            "vocabulary": meta.get("vocabulary"),
            "judge": validity_checker(self.artifact)[0],
            "artifact_bytes": len(self.npz),
            "core": meta.get("core"),
        }

    # states ------------------------------------------------------------------------------------

    def checked_state(self, state: int) -> int:
        if not 0 <= state < self.guide.num_states:
            raise PlaygroundError(
                400,
                "request",
                f"state {state} is not a state of this artifact (0..{self.guide.num_states - 1})",
            )
        return state

    def describe_state(self, state: int, query: str = "", limit: int = 200) -> dict[str, Any]:
        guide = self.guide
        dfa = self.artifact.dfa
        state = self.checked_state(state)
        allowed = guide.allowed(state)
        texts = self.token_texts
        matching = allowed
        if query:
            needle = query.casefold()
            matching = np.array(
                [t for t in allowed.tolist() if needle in texts[t].casefold()], dtype=np.int64
            )
        shown = [int(t) for t in matching[: max(0, limit)]]
        completion = dfa.shortest_completion(state)
        return {
            "state": state,
            "dead": state == 0,
            "start": state == dfa.start,
            "accepting": guide.is_accept(state),
            "distance": guide.distance(state),
            "allowed_count": len(allowed),
            "eos_allowed": bool(state != 0 and guide.is_accept(state)),
            "matching_count": len(matching),
            "tokens": [{"id": t, "text": texts[t], "eos": t == guide.eos} for t in shown],
            "shortest_completion": None
            if completion is None
            else completion.decode("utf-8", "backslashreplace"),
            "neighbourhood": neighbourhood(dfa, state),
        }

    # stepping ----------------------------------------------------------------------------------

    def step(
        self, state: int, mode: str, seed: int, step: int, max_tokens: int, token: int | None = None
    ) -> dict[str, Any]:
        """One step from ``state``: ``token`` when given, else a random token of ``mode``. The
        generator is seeded from (seed, mode, step), so a replay gives the same tokens."""
        guide = self.guide
        state = self.checked_state(state)
        if token is not None and not 0 <= token < guide.vocab_size:
            raise PlaygroundError(
                400, "request", f"token {token} is outside the vocabulary (0..{guide.vocab_size - 1})"
            )
        if token is None:
            rng = random.Random(f"{seed}/{mode}/{step}")
            if mode == "masked":
                token = guide.monkey_step(state, rng, max_tokens - step) if state else None
            else:
                candidates = self._unmasked_candidates()
                token = int(candidates[rng.randrange(len(candidates))])
        if token is None:
            return {"token": None, "text": "", "state": 0, "dead": True, "finished": False, "eos": False}
        following = guide.advance(state, token) if state else None
        eos = token == guide.eos
        next_state = following or 0
        return {
            "token": int(token),
            "text": self.token_texts[int(token)],
            "eos": eos,
            "state": next_state,
            "dead": next_state == 0,
            "finished": eos and next_state != 0,
            "accepting": bool(next_state and guide.is_accept(next_state)),
            "distance": guide.distance(next_state),
        }

    def _unmasked_candidates(self) -> np.ndarray:
        vocabulary = self.artifact.token_table.vocabulary()  # type: ignore[union-attr]
        return np.union1d(vocabulary.maskable_ids(), [self.guide.eos]).astype(np.int64)

    # the experiment ----------------------------------------------------------------------------

    def experiment(self, count: int, seed: int, max_tokens: int) -> dict[str, Any]:
        reports = run_experiment(self.artifact, count, seed, max_tokens)
        result: dict[str, Any] = {
            "count": count,
            "seed": seed,
            "max_tokens": max_tokens,
            "unmasked_cap": UNMASKED_TOKEN_CAP,
            "judge": validity_checker(self.artifact)[0],
        }
        for name, report in reports.items():
            result[name] = {
                "valid": report.valid,
                "finished": report.finished,
                "mean_tokens": report.mean_tokens,
                "mean_states": report.mean_states,
                "samples": [
                    {
                        "text": sample.text,
                        "valid": sample.valid,
                        "finished": sample.finished,
                        "tokens": len(sample.tokens),
                    }
                    for sample in report.samples[:SAMPLES_SHOWN]
                ],
            }
        return result


# the neighbourhood ------------------------------------------------------------------------------


def _node(dfa: DFA, state: int) -> dict[str, Any]:
    return {
        "state": state,
        "accepting": bool(dfa.accepting[state]),
        "distance": int(dfa.distance[state]),
        "start": state == dfa.start,
    }


def neighbourhood(dfa: DFA, state: int, limit: int = NEIGHBOURS_SHOWN) -> dict[str, Any]:
    """The states one byte ahead of ``state`` and one byte behind it, each edge labelled with the
    bytes that take it (merged over byte classes), at most ``limit`` on each side."""
    if state == 0:
        return {"center": _node(dfa, 0), "ahead": [], "behind": [], "more_ahead": 0, "more_behind": 0}
    ahead = [
        {**_node(dfa, target), **edge_label(mask)} for mask, target in dfa.mask_edges()[state] if target != 0
    ]
    into = dfa.transitions == state
    into[0] = False
    sources = np.flatnonzero(into.any(axis=1)).tolist()
    class_masks = dfa.class_masks()
    behind = []
    for source in sources[:limit]:
        mask = 0
        for cls in np.flatnonzero(into[source]).tolist():
            mask |= class_masks[cls]
        behind.append({**_node(dfa, source), **edge_label(mask)})
    return {
        "center": _node(dfa, state),
        "ahead": ahead[:limit],
        "behind": behind,
        "more_ahead": max(0, len(ahead) - limit),
        "more_behind": max(0, len(sources) - limit),
    }


def _byte_text(byte: int) -> str:
    if byte == 0x20:
        return "␣"
    if 0x21 <= byte < 0x7F:
        return chr(byte)
    return f"\\x{byte:02x}"


def byte_ranges(mask: int) -> list[tuple[int, int]]:
    """The byte ranges of a 256-bit byte set."""
    ranges: list[tuple[int, int]] = []
    byte = 0
    while byte < 256:
        if mask >> byte & 1:
            start = byte
            while byte + 1 < 256 and mask >> (byte + 1) & 1:
                byte += 1
            ranges.append((start, byte))
        byte += 1
    return ranges


def edge_label(mask: int) -> dict[str, Any]:
    """``label`` (short, for the drawing), ``full_label`` and ``bytes`` (how many) of a byte set."""
    parts = []
    for low, high in byte_ranges(mask):
        if low == high:
            parts.append(_byte_text(low))
        elif high == low + 1:
            parts.append(_byte_text(low) + _byte_text(high))
        else:
            parts.append(f"{_byte_text(low)}-{_byte_text(high)}")
    full = "".join(parts) if all(len(part) == 1 for part in parts) else " ".join(parts)
    if mask == (1 << 256) - 1:
        full = "any byte"
    short = full if len(full) <= EDGE_LABEL_CHARS else full[: EDGE_LABEL_CHARS - 1] + "…"
    return {"label": short, "full_label": full, "bytes": bin(mask).count("1")}
