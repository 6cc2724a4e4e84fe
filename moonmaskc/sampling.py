"""The sampling experiment: masked monkey decoding against unmasked random tokens.

Takes: a runtime ``Guide`` (an artifact with a token table) and its metadata. Hands on: a
``SamplingReport`` per strategy (valid / finished counts, mean tokens, mean DFA states visited, and
every sample), where "valid" means the text validates against the source JSON Schema (jsonschema,
formats checked, numbers read as exact decimals) for schema artifacts, and is accepted by the
artifact's DFA otherwise.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from moonmaskc.artifact import Artifact
from moonmaskc.runtime import Guide

UNMASKED_TOKEN_CAP = 64


@dataclass
class Sample:
    text: str
    tokens: list[int]
    finished: bool
    valid: bool
    states_visited: int

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "tokens": self.tokens, "finished": self.finished, "valid": self.valid}


@dataclass
class SamplingReport:
    strategy: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def valid(self) -> int:
        return sum(sample.valid for sample in self.samples)

    @property
    def finished(self) -> int:
        return sum(sample.finished for sample in self.samples)

    @property
    def mean_tokens(self) -> float:
        return float(np.mean([len(s.tokens) for s in self.samples])) if self.samples else 0.0

    @property
    def mean_states(self) -> float:
        return float(np.mean([s.states_visited for s in self.samples])) if self.samples else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "finished": self.finished,
            "mean_tokens": self.mean_tokens,
            "samples": [sample.as_dict() for sample in self.samples],
        }


_NAMED_GROUP = re.compile(r"(\\.)|\(\?<([A-Za-z_][A-Za-z0-9_]*)>")
_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples"})


def python_pattern(pattern: str) -> str:
    """A pattern of our dialect (``docs/regex.md``) in the syntax of Python's ``re``, which
    jsonschema uses to check ``pattern`` and ``patternProperties``. The one syntax our dialect
    accepts and ``re`` reads otherwise is the ECMAScript named group ``(?<name>...)``; ``re`` wants
    ``(?P<name>...)``. Escapes are skipped (``\\(?<a>`` is a literal parenthesis)."""

    def replace(match: re.Match[str]) -> str:
        return match.group(1) or f"(?P<{match.group(2)}>"

    return _NAMED_GROUP.sub(replace, pattern)


def python_patterns(schema: Any) -> Any:
    """``schema`` with every ``pattern`` and ``patternProperties`` key in Python's syntax (see
    ``python_pattern``); values under const, enum, default and examples are data, left alone.
    Iterative: a copy is made on the way down."""
    root: list[Any] = [schema]
    work: list[tuple[Any, list[Any] | dict[Any, Any], Any]] = [(schema, root, 0)]
    while work:
        value, parent, slot = work.pop()
        if isinstance(value, dict):
            copy: dict[Any, Any] = {}
            for key, item in value.items():
                if key == "pattern" and isinstance(item, str):
                    copy[key] = python_pattern(item)
                elif key == "patternProperties" and isinstance(item, dict):
                    renamed = {python_pattern(k) if isinstance(k, str) else k: v for k, v in item.items()}
                    copy[key] = None
                    work.append((renamed, copy, key))
                elif key in _NOT_SCHEMAS:
                    copy[key] = item
                else:
                    copy[key] = None
                    work.append((item, copy, key))
            parent[slot] = copy
        elif isinstance(value, list):
            items: list[Any] = [None] * len(value)
            parent[slot] = items
            work.extend((item, items, i) for i, item in enumerate(value))
        else:
            parent[slot] = value
    return root[0]


def validity_checker(artifact: Artifact) -> tuple[str, Callable[[str], bool]]:
    """How outputs of ``artifact`` are judged: ``("jsonschema", check)`` or ``("dfa", check)``."""
    metadata = artifact.metadata
    if metadata.get("kind") == "schema":
        import jsonschema

        # Decimals on both sides: jsonschema checks multipleOf in floating point otherwise, and
        # 565.16 / 0.01 is not a whole number in binary floating point.
        schema = python_patterns(json.loads(metadata["source"], parse_float=Decimal))
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)

        def check_schema(text: str) -> bool:
            try:
                value = json.loads(text, parse_float=Decimal)
            except ValueError:
                return False
            return bool(validator.is_valid(value))

        return "jsonschema", check_schema

    def check_dfa(text: str) -> bool:
        return artifact.dfa.accepts(text.encode("utf-8", "surrogatepass"))

    return "dfa", check_dfa


def _states_visited(artifact: Artifact, data: bytes) -> int:
    dfa = artifact.dfa
    state = dfa.start
    seen = {state}
    for byte in data:
        state = dfa.step(state, byte)
        seen.add(state)
        if state == 0:
            break
    return len(seen)


def run_experiment(artifact: Artifact, count: int, seed: int, max_tokens: int) -> dict[str, SamplingReport]:
    """``count`` masked and ``count`` unmasked samples, each from its own seeded generator."""
    guide = Guide.from_artifact(artifact)
    _, check = validity_checker(artifact)
    masked = SamplingReport("masked")
    rng = random.Random(seed)
    for _ in range(count):
        result = guide.monkey(rng, max_tokens)
        data = guide.decode(result.tokens)
        masked.samples.append(
            Sample(
                result.text,
                result.tokens,
                result.finished,
                check(result.text),
                _states_visited(artifact, data),
            )
        )
    unmasked = SamplingReport("unmasked")
    candidates = np.union1d(artifact.token_table.vocabulary().maskable_ids(), [guide.eos]).astype(np.int64)  # type: ignore[union-attr]
    rng = random.Random(seed + 1)
    for _ in range(count):
        tokens: list[int] = []
        finished = False
        while len(tokens) < UNMASKED_TOKEN_CAP:
            token = int(candidates[rng.randrange(len(candidates))])
            tokens.append(token)
            if token == guide.eos:
                finished = True
                break
        data = guide.decode(tokens)
        text = data.decode("utf-8", "replace")
        unmasked.samples.append(Sample(text, tokens, finished, check(text), _states_visited(artifact, data)))
    return {"masked": masked, "unmasked": unmasked}
