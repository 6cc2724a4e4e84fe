"""Loop groups in the native token walk, on and off, on the same schemas in one run.

Takes: ``--subset`` (JSONSchemaBench folders, repeatable; default Kubernetes and Github_ultra),
``--limit`` (schemas per subset, the largest DFAs first among the first ``--pool``), ``--repeat``
and ``--tokenizer``. Hands on: a rich table per schema, the median time of the public compile with
the vocabulary (``compile_schema(text, tokenizer=vocabulary)``, a ``Guide`` and its first mask, as
``coverage.py`` times it) with the loop groups on (the default) and off, their ratio, and the
token-table stage of each (``metadata["timings"]``); then the median ratio per subset. The two
settings run in turns (one compile of each per round). "Off" raises
``token_classes.MIN_GROUPED_STATES`` past every DFA, the switch the module reads at each call:
the same maps, classes and tables either way (``tests/test_native_loop_groups.py``), so only the
time differs.

    python benchmarks/loop_groups.py --limit 8 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import moonmaskc
from moonmaskc import token_classes
from moonmaskc.errors import MoonmaskError
from moonmaskc.runtime import Guide
from moonmaskc.vocabulary import load_vocabulary

DATA = Path(os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
OFF = 1 << 62


def timed_compile(text: str, vocabulary: Any, bitmask: np.ndarray) -> tuple[float, float, int]:
    """Seconds of the public compile, a guide and its first mask; the token-table stage; states."""
    started = time.perf_counter()
    artifact = moonmaskc.compile_schema(text, tokenizer=vocabulary)
    guide = Guide.from_artifact(artifact)
    guide.fill_bitmask(guide.start(), bitmask, 0)
    return (
        time.perf_counter() - started,
        float(artifact.metadata["timings"]["token_table_s"]),
        artifact.dfa.num_states,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subset", action="append", default=None)
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--pool", type=int, default=60, help="schemas read per subset, in name order")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tokenizer", default="gpt2")
    arguments = parser.parse_args()
    subsets = arguments.subset or ["Kubernetes", "Github_ultra"]
    vocabulary = load_vocabulary(DATA / "tokenizers" / f"{arguments.tokenizer}.json")
    bitmask = np.zeros((1, (vocabulary.size + 31) // 32), dtype=np.int32)
    default = token_classes.MIN_GROUPED_STATES
    console = Console()
    for subset in subsets:
        folder = DATA / "schemas" / "jsonschemabench" / subset
        sized: list[tuple[int, Path, str]] = []
        for path in sorted(folder.glob("*.json"))[: arguments.pool]:
            text = path.read_text()
            try:
                _, _, states = timed_compile(text, vocabulary, bitmask)
            except (MoonmaskError, RecursionError):
                continue
            sized.append((states, path, text))
        sized.sort(key=lambda item: -item[0])
        table = Table(
            title=f"{subset}: loop groups on / off ({arguments.tokenizer}, median of {arguments.repeat})"
        )
        for column in ("schema", "states", "off ms", "on ms", "on / off", "table off ms", "table on ms"):
            table.add_column(column, justify="left" if column == "schema" else "right")
        ratios = []
        for states, path, text in sized[: arguments.limit]:
            runs: dict[str, list[tuple[float, float, int]]] = {"on": [], "off": []}
            for _ in range(arguments.repeat):
                for setting, bound in (("on", default), ("off", OFF)):
                    token_classes.MIN_GROUPED_STATES = bound
                    try:
                        runs[setting].append(timed_compile(text, vocabulary, bitmask))
                    finally:
                        token_classes.MIN_GROUPED_STATES = default
            on = statistics.median(run[0] for run in runs["on"])
            off = statistics.median(run[0] for run in runs["off"])
            ratios.append(on / off)
            table.add_row(
                path.name,
                f"{states:,}",
                f"{off * 1e3:.1f}",
                f"{on * 1e3:.1f}",
                f"{on / off:.2f}x",
                f"{statistics.median(run[1] for run in runs['off']) * 1e3:.1f}",
                f"{statistics.median(run[1] for run in runs['on']) * 1e3:.1f}",
            )
        console.print(table)
        if ratios:
            console.print(
                f"{subset}: median on / off {statistics.median(ratios):.2f}x over {len(ratios)} schemas"
            )


if __name__ == "__main__":
    main()
