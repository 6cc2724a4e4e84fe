"""Token-table benchmark: build time, size and per-step mask latency on real vocabularies.

Takes: the tokenizers in the shared data folder (``$MOONMASKC_DATA``, default ``../shared/data``)
JSON-like DFAs built from IR (``benchmarks/json_like.py``) and the example schemas
(``examples/schemas``). Hands on: a printed table (and, with ``--json FILE``, the same figures as
JSON): DFA states, token-table build time with the vocabulary and trie already loaded (best of 3;
``masks_ms``: the part of it that packs the mask rows),
distinct mask rows, token classes, artifact size (compressed .npz), load time, ``fill_bitmask``
and ``advance`` latency along monkey traces (p50, p99, max).

Run: ``PYTHONPATH=. python benchmarks/token_table.py [--tokenizers gpt2 llama3] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from json_like import tool_call_like, user_like

from moonmaskc import compile_schema
from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.runtime import load
from moonmaskc.token_masks import packed_masks
from moonmaskc.token_table import TokenTable, build_token_table
from moonmaskc.trie import trie_for
from moonmaskc.vocabulary import load_vocabulary

DATA = Path(os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def step_latencies(path: Path, samples: int = 20) -> tuple[list[float], list[float]]:
    """Microseconds of each ``fill_bitmask`` and each ``advance`` along monkey traces."""
    guide = load(path)
    out = np.zeros((1, guide.bitmask_words), dtype=np.int32)
    rng = np.random.default_rng(0)
    fills: list[float] = []
    advances: list[float] = []
    for _ in range(samples):
        state = guide.start()
        tokens, _, _ = guide.monkey(rng, 64)
        for token in tokens:
            started = time.perf_counter_ns()
            guide.fill_bitmask(state, out, 0)
            fills.append((time.perf_counter_ns() - started) / 1000)
            started = time.perf_counter_ns()
            next_state = guide.advance(state, token)
            advances.append((time.perf_counter_ns() - started) / 1000)
            if next_state is None:
                break
            state = next_state
    return fills, advances


def example_schema(name: str) -> Callable[[], DFA]:
    def compile_it() -> DFA:
        path = Path(__file__).resolve().parents[1] / "examples" / "schemas" / f"{name}.json"
        return compile_schema(json.loads(path.read_text()), tokenizer=None).dfa

    return compile_it


LANGUAGES: dict[str, Callable[[], DFA]] = {
    "user_like": lambda: compile_ir(user_like()),
    "tool_call_like": lambda: compile_ir(tool_call_like()),
    **{f"{name}.json": example_schema(name) for name in ("user", "order", "tool_call")},
}


def packing_seconds(table: TokenTable) -> float:
    """Best of 3: packing the mask rows from the classes each row allows (part of ``build_ms``)."""
    allowed_classes = table.row_classes()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        packed = packed_masks(allowed_classes, table.token_class)
        best = min(best, time.perf_counter() - started)
    assert np.array_equal(packed, table.mask_rows)
    return best


def run(tokenizer_names: list[str]) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    for name in tokenizer_names:
        vocabulary = load_vocabulary(DATA / "tokenizers" / f"{name}.json")
        trie = trie_for(vocabulary)
        for language, make in LANGUAGES.items():
            dfa = make()
            build_seconds = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                table = build_token_table(dfa, vocabulary, trie=trie)
                build_seconds = min(build_seconds, time.perf_counter() - started)
            masks_seconds = packing_seconds(table)
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "guide.npz"
                Artifact(dfa, {}, table).save(path)
                size = path.stat().st_size
                started = time.perf_counter()
                load(path)
                load_seconds = time.perf_counter() - started
                fills, advances = step_latencies(path)
            results.append(
                {
                    "tokenizer": name,
                    "language": language,
                    "states": dfa.num_states,
                    "build_ms": round(build_seconds * 1000, 1),
                    "masks_ms": round(masks_seconds * 1000, 1),
                    "rows": table.num_rows,
                    "classes": table.num_classes,
                    "artifact_kb": round(size / 1024, 1),
                    "load_ms": round(load_seconds * 1000, 1),
                    "fill_p50_us": round(float(np.percentile(fills, 50)), 2),
                    "fill_p99_us": round(float(np.percentile(fills, 99)), 2),
                    "fill_max_us": round(float(np.max(fills)), 2),
                    "advance_p50_us": round(float(np.percentile(advances, 50)), 2),
                    "advance_max_us": round(float(np.max(advances)), 2),
                }
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizers", nargs="+", default=["gpt2", "llama3"])
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    results = run(args.tokenizers)
    columns = list(results[0])
    widths = [max(len(c), *(len(str(r[c])) for r in results)) for c in columns]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for result in results:
        print("  ".join(str(result[c]).rjust(w) for c, w in zip(columns, widths, strict=True)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
