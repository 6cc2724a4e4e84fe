"""Mask fill latency inside free JSON values, where a bracket stack decides some tokens.

Takes: the GPT-2 and Llama-3 tokenizers of the shared data folder (``$MOONMASKC_DATA``, default
``../shared/data``; ``--tokenizers``). Hands on: a rich table per tokenizer with the fill latency
(``Guide.fill_bitmask``, microseconds) of the steps whose state lies in a nest region or has
tokens the stack decides (``NestGuide``), and of the other steps, over a set of random documents
that nest free values 2 to ``--depth`` levels deep, encoded by the real tokenizer as a model would
see them. Two passes over the same documents: ``first`` (a fresh guide after ``warm()``, as a
server meets them) and ``again`` (what the guide keeps from the first pass); then the same two
passes of a second guide with a budget at every fill (``tokens_left``: the tokens the document
has left plus ``--slack``), as the integrations fill masks that make every output finish.

Why: a state outside free values fills by copying one mask row (natively, about a microsecond);
inside them the mask is the row plus the tokens the stack lets through (docs/bracket-stack.md),
so its cost depends on how the guide finds those.

    PYTHONPATH=. python benchmarks/nest_fills.py [--documents 40] [--depth 12] [--seed 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import moonmaskc
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary

SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}, "extra": {}},
    "required": ["id"],
}


def random_value(rng: random.Random, depth: int) -> Any:
    """A JSON value nesting at most ``depth`` levels, containers more likely while depth is left."""
    if depth <= 0 or rng.random() < 0.25:
        return rng.choice([0, -17, 3.25, True, False, None, "a", 'q"x', "long words here"])
    if rng.random() < 0.5:
        return [random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {f"k{index}": random_value(rng, depth - 1) for index in range(rng.randint(0, 3))}


def documents(count: int, depth: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        value = {
            "id": rng.randint(0, 99),
            "tags": [random_value(rng, depth)],
            "extra": random_value(rng, depth),
        }
        texts.append(json.dumps(value, separators=(",", ":")))
    return texts


def fills(
    guide: Guide, encoded: list[list[int]], slack: int | None = None
) -> tuple[list[float], list[float]]:
    """Microseconds per fill along every document, (steps with the stack, the other steps); the
    cyclic garbage collector off, as in ``benchmarks/peers.py``. With ``slack``, every fill has a
    budget (``tokens_left``): the document's tokens left, eos included, plus ``slack``."""
    gc.disable()
    try:
        return _fills(guide, encoded, slack)
    finally:
        gc.enable()


def _fills(guide: Guide, encoded: list[list[int]], slack: int | None) -> tuple[list[float], list[float]]:
    inside: list[float] = []
    outside: list[float] = []
    bitmask = np.zeros((1, guide.bitmask_words), dtype=np.int32)
    plain = getattr(guide, "_plain", None)
    split = getattr(guide, "_split", None)
    for tokens in encoded:
        state = guide.start()
        steps = [*tokens, guide.eos]
        for index, token in enumerate(steps):
            left = None if slack is None else len(steps) - index + slack
            started = time.perf_counter_ns()
            guide.fill_bitmask(state, bitmask, 0, tokens_left=left)
            elapsed = (time.perf_counter_ns() - started) / 1000
            stacked = plain is not None and split is not None and not plain(split(state)[0])
            (inside if stacked else outside).append(elapsed)
            following = guide.advance(state, token)
            if following is None:
                raise RuntimeError("a document of the schema was refused")
            state = following
    return inside, outside


def figures(latencies: list[float]) -> list[str]:
    if not latencies:
        return ["0", "-", "-", "-", "-"]
    values = np.asarray(latencies)
    return [
        f"{values.size:,}",
        *(f"{np.percentile(values, p):.1f}" for p in (50, 90, 99)),
        f"{values.max():.1f}",
    ]


def main() -> None:
    default_data = Path(
        os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--tokenizers", default="gpt2,llama3")
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--slack", type=int, default=8, help="budget passes: tokens beyond the document's")
    args = parser.parse_args()
    from tokenizers import Tokenizer

    texts = documents(args.documents, args.depth, args.seed)
    table = Table(
        title=f"fill_bitmask inside free values, us ({args.documents} documents, depth <= {args.depth})"
    )
    for column in (
        "tokenizer",
        "pass",
        "steps",
        "fills",
        "p50",
        "p90",
        "p99",
        "max",
        "other fills: p50, max",
    ):
        table.add_column(column, justify="right")
    for name in args.tokenizers.split(","):
        path = args.data / "tokenizers" / f"{name}.json"
        vocabulary = load_vocabulary(path)
        tokenizer = Tokenizer.from_file(str(path))
        encoded = [tokenizer.encode(text, add_special_tokens=False).ids for text in texts]
        artifact = moonmaskc.compile_schema(SCHEMA, tokenizer=vocabulary)
        if artifact.dfa.nests is None:
            raise SystemExit(f"{name}: the free values were written out: {artifact.metadata['notes']}")
        guide = Guide.from_artifact(artifact).warm()
        budgeted = Guide.from_artifact(artifact).warm()
        for label, used, slack in (
            ("first", guide, None),
            ("again", guide, None),
            ("budget, first", budgeted, args.slack),
            ("budget, again", budgeted, args.slack),
        ):
            inside, outside = fills(used, encoded, slack)
            other = figures(outside)
            table.add_row(name, label, "with the stack", *figures(inside), f"{other[1]}, {other[4]}")
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
