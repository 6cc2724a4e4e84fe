"""Token-table benchmark: build time, size and per-step mask latency on real vocabularies.

Takes: the tokenizers in the shared data folder (``$MOONMASKC_DATA``, default ``../shared/data``)
and JSON-like DFAs built from IR (``benchmarks/json_like.py``). Hands on: a printed table (and, with
``--json FILE``, the same figures as JSON): DFA states, token-table build time with the vocabulary
and trie already loaded, distinct mask rows, next-state entries, artifact size (compressed .npz),
load time, and ``fill_bitmask`` latency along monkey traces (p50, p99, max).

Run: ``PYTHONPATH=. python benchmarks/token_table.py [--tokenizers gpt2 llama3] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from json_like import tool_call_like, user_like

from moonmaskc.artifact import Artifact
from moonmaskc.dfa import compile_ir
from moonmaskc.runtime import load
from moonmaskc.token_table import build_token_table
from moonmaskc.trie import trie_for
from moonmaskc.vocabulary import load_vocabulary

DATA = Path(os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
LANGUAGES = {"user_like": user_like, "tool_call_like": tool_call_like}


def fill_latencies(path: Path, samples: int = 20) -> list[float]:
    guide = load(path)
    out = np.zeros((1, guide.bitmask_words), dtype=np.int32)
    rng = np.random.default_rng(0)
    latencies: list[float] = []
    for _ in range(samples):
        state = guide.start()
        tokens, _, _ = guide.monkey(rng, 64)
        for token in tokens:
            started = time.perf_counter_ns()
            guide.fill_bitmask(state, out, 0)
            latencies.append((time.perf_counter_ns() - started) / 1000)
            next_state = guide.advance(state, token)
            if next_state is None:
                break
            state = next_state
    return latencies


def run(tokenizer_names: list[str]) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    for name in tokenizer_names:
        vocabulary = load_vocabulary(DATA / "tokenizers" / f"{name}.json")
        trie = trie_for(vocabulary)
        for language, make in LANGUAGES.items():
            dfa = compile_ir(make())
            started = time.perf_counter()
            table = build_token_table(dfa, vocabulary, trie=trie)
            build_seconds = time.perf_counter() - started
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "guide.npz"
                Artifact(dfa, {}, table).save(path)
                size = path.stat().st_size
                started = time.perf_counter()
                load(path)
                load_seconds = time.perf_counter() - started
                latencies = fill_latencies(path)
            results.append(
                {
                    "tokenizer": name,
                    "language": language,
                    "states": dfa.num_states,
                    "build_ms": round(build_seconds * 1000, 1),
                    "rows": table.num_rows,
                    "next_entries": len(table.next_states),
                    "artifact_kb": round(size / 1024, 1),
                    "load_ms": round(load_seconds * 1000, 1),
                    "fill_p50_us": round(float(np.percentile(latencies, 50)), 2),
                    "fill_p99_us": round(float(np.percentile(latencies, 99)), 2),
                    "fill_max_us": round(float(np.max(latencies)), 2),
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
