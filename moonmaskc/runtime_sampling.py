"""Random choice helpers of the runtime's monkey sampling (standard library and numpy only).

Takes: a random source (``numpy.random.Generator``, ``random.Random``, or anything with
``integers(n)`` or ``randrange(n)``). Hands on: uniform indices and the ``MonkeyResult`` tuple.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from moonmaskc.errors import RuntimeInputError


class MonkeyResult(NamedTuple):
    """One monkey sample: token ids (ending with eos when finished), their text, and whether
    the sample ended with eos in an accepting state."""

    tokens: list[int]
    text: str
    finished: bool


def choose_uniform(rng: Any, count: int) -> int:
    """A uniform index in ``range(count)`` drawn from ``rng``."""
    if hasattr(rng, "integers"):
        return int(rng.integers(count))
    if hasattr(rng, "randrange"):
        return int(rng.randrange(count))
    raise RuntimeInputError(f"rng must be a numpy Generator or a random.Random, not {type(rng).__name__}")
