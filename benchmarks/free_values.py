"""What the free JSON values (``{}``, ``true``, open objects' extra members) cost, per subset.

Takes: ``$MOONMASKC_DATA/schemas/jsonschemabench/<subset>/*.json`` (``--limit N`` schemas of each
subset, in name order) and the GPT-2 tokenizer. Hands on: a table per subset with the median DFA
states and the median compile time (``compile_schema`` with the vocabulary: schema, DFA, token
table, a runtime guide and the first mask filled; one process, no peers) in four builds of the same
schemas:

- ``written out``: free values nest as deep as ``--max-depth`` lets them (3 by default), written
  out as states (``free_value_stacks=False``, ``--no-free-value-stacks``);
- ``stacks``: free values as nest regions with a bracket stack (the default,
  docs/bracket-stack.md), the table's dynamic tokens and the first mask included;
- ``free depth 1`` and ``free depth 0``: every free value capped at that depth, through a
  patch of the front end's any-value automaton (``Automata.universe_leaf``) made by this
  script alone. These languages are narrower than the schema's: the figures only size a design,
  they are not a mode of the compiler.

Why: the minimal DFA of a JSON value that nests ``d`` deep must remember the kind of every open
bracket, so its size doubles with each level (about 1,200 states at depth 3), and every place a
free value may stand gets its own copy (its continuation differs). A bracket stack beside the DFA
(docs/bracket-stack.md) replaces each copy with one small automaton of about the size of the
depth-1 one, and lifts the depth bound. ``free depth 1`` estimates the states and time that design
leaves; ``free depth 0`` is a floor.

A second table sizes the design's runtime side per tokenizer (``--tokenizers``): how many tokens a
nest region's stack must decide (``moonmaskc.nest_tokens.dynamic_tokens``: per role of one level
of a free value, the tokens that close a container), the most and the median over the roles, and
the time to find them (once per vocabulary).

    PYTHONPATH=. python benchmarks/free_values.py --limit 30 [--subset NAME]...
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import moonmaskc
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends.schema import automata as schema_automata
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary

BUILDS = ("written out", "stacks", "free depth 1", "free depth 0")
TIMEOUT_SECONDS = 20.0


@contextmanager
def free_depth_cap(cap: int | None) -> Iterator[None]:
    """Within the block, every free value of the front end nests at most ``cap`` deep."""
    original = schema_automata.Automata.universe_leaf
    if cap is None:
        yield
        return

    def capped(self: Any, depth: int) -> Any:
        return original(self, min(depth, cap))

    schema_automata.Automata.universe_leaf = capped  # type: ignore[method-assign]
    try:
        yield
    finally:
        schema_automata.Automata.universe_leaf = original  # type: ignore[method-assign]


class _Timeout(Exception):
    pass


def _compile(text: str, vocabulary: Any, stacks: bool = False) -> tuple[int, float] | None:
    def on_alarm(signum: int, frame: Any) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_SECONDS)
    started = time.perf_counter()
    try:
        artifact = moonmaskc.compile_schema(text, tokenizer=vocabulary, free_value_stacks=stacks)
        guide = Guide.from_artifact(artifact)
        guide.fill_bitmask(guide.start(), np.zeros((1, guide.bitmask_words), dtype=np.int32), 0)
        return artifact.dfa.num_states, time.perf_counter() - started
    except (MoonmaskError, RecursionError, _Timeout):
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def dynamic_table(data: Path, tokenizers: list[str]) -> None:
    from moonmaskc.frontends.schema.automata import NEST_CALL, Automata
    from moonmaskc.frontends.schema.layout import Layout
    from moonmaskc.limits import Limits
    from moonmaskc.nest_tokens import dynamic_tokens

    level = Automata(Layout.of("compact"), Limits()).nest_level()
    table = Table(
        title=f"tokens a nest region's stack decides, per role of one level ({level.num_states} roles)"
    )
    for column in (
        "tokenizer",
        "vocabulary",
        "roles with any",
        "most per role",
        "median per role",
        "found in",
    ):
        table.add_column(column, justify="right")
    for name in tokenizers:
        vocabulary = load_vocabulary(data / "tokenizers" / f"{name}.json")
        started = time.perf_counter()
        found = dynamic_tokens(level, NEST_CALL, b"{[", vocabulary)
        seconds = time.perf_counter() - started
        sizes = [len(ids) for ids in found.values()]
        roles = 2 * level.num_states  # copy 0 and the nested copies
        every = sizes + [0] * (roles - len(sizes))
        table.add_row(
            name,
            f"{vocabulary.size:,}",
            f"{len(sizes)} of {roles}",
            str(max(sizes, default=0)),
            f"{statistics.median(every):.0f}",
            f"{seconds * 1000:.0f} ms",
        )
    Console(width=220).print(table)


def main() -> None:
    default_data = Path(
        os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--subset", action="append")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--tokenizers", default="gpt2,llama3", help="for the dynamic-token table")
    args = parser.parse_args()
    dynamic_table(args.data, args.tokenizers.split(","))
    vocabulary = load_vocabulary(args.data / "tokenizers" / "gpt2.json")
    caps = {"written out": None, "stacks": None, "free depth 1": 1, "free depth 0": 0}
    base = args.data / "schemas" / "jsonschemabench"
    subsets = args.subset or sorted(p.name for p in base.iterdir() if p.is_dir())
    table = Table(title=f"free JSON values: median DFA states and compile ms (GPT-2), first {args.limit}")
    table.add_column("subset")
    table.add_column("schemas")
    for build in BUILDS:
        table.add_column(f"{build}: states", justify="right")
        table.add_column(f"{build}: ms", justify="right")
    table.add_column("stacks / written out (ms)", justify="right")
    table.add_column("depth 1 / written out (ms)", justify="right")
    warm_up = sorted((base / subsets[0]).glob("*.json"))[:1] if subsets else []
    for path in warm_up:  # imports and the first automata of each build, outside the timing
        for build in BUILDS:
            with free_depth_cap(caps[build]):
                _compile(path.read_text(encoding="utf-8"), vocabulary, build == "stacks")
    for subset in subsets:
        texts = [p.read_text(encoding="utf-8") for p in sorted((base / subset).glob("*.json"))[: args.limit]]
        results: dict[str, list[tuple[int, float]]] = {build: [] for build in BUILDS}
        for text in texts:
            # Only schemas that compile in every build count, so that the medians cover the same set.
            outcome = {}
            for build in BUILDS:
                with free_depth_cap(caps[build]):
                    outcome[build] = _compile(text, vocabulary, build == "stacks")
            if all(outcome[build] is not None for build in BUILDS):
                for build in BUILDS:
                    found = outcome[build]
                    assert found is not None
                    results[build].append(found)
        row = [subset, str(len(results["written out"]))]
        medians = {}
        for build in BUILDS:
            states = [s for s, _ in results[build]] or [0]
            seconds = [t for _, t in results[build]] or [0.0]
            medians[build] = statistics.median(seconds)
            row += [f"{statistics.median(states):,.0f}", f"{medians[build] * 1000:.1f}"]
        for build in ("stacks", "free depth 1"):
            ratio = medians[build] / medians["written out"] if medians["written out"] else 0.0
            row.append(f"{ratio:.2f}x")
        table.add_row(*row)
    Console(width=220).print(table)


if __name__ == "__main__":
    main()
