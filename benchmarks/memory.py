"""Peak memory of compiling a whole JSONSchemaBench subset with a large vocabulary, in one process.

Takes: ``$MOONMASKC_DATA/schemas/jsonschemabench/<subset>/*.json`` (default subset Github_medium)
and a tokenizer of the shared data folder (default llama3, 128,256 tokens). Hands on: one line per
schema (outcome, seconds, DFA states, token classes, the process's peak RSS so far) and a summary:
how many compiled, the largest table, and the peak RSS of the whole sweep with the schema that
raised it last. Schemas the front end refuses (unsupported keywords, bounds) count as refused; a
compile over ``--timeout`` seconds is stopped and counted as such. The goal this measures: a Llama-3
table for any Github_medium schema in under 2 GB.

    PYTHONPATH=. python benchmarks/memory.py [--subset Github_medium] [--tokenizer llama3]
        [--lenient] [--timeout 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

import moonmaskc
from moonmaskc.errors import MoonmaskError
from moonmaskc.vocabulary import load_vocabulary

DATA = Path(os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


class _TimedOut(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _TimedOut


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--subset", default="Github_medium")
    parser.add_argument("--tokenizer", default="llama3")
    parser.add_argument("--lenient", action="store_true")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per schema")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    folder = DATA / "schemas" / "jsonschemabench" / args.subset
    if not folder.exists():
        raise SystemExit(f"{folder} is absent: set MOONMASKC_DATA to the shared data folder")
    vocabulary = load_vocabulary(DATA / "tokenizers" / f"{args.tokenizer}.json")
    signal.signal(signal.SIGALRM, _alarm)
    rows: list[dict[str, Any]] = []
    peak_before = peak_rss_mb()
    print(f"{args.subset} with {args.tokenizer} ({vocabulary.size} tokens); peak RSS {peak_before:.0f} MB")
    started_sweep = time.perf_counter()
    for path in sorted(folder.glob("*.json")):
        row: dict[str, Any] = {"file": path.name}
        started = time.perf_counter()
        signal.alarm(args.timeout)
        try:
            artifact = moonmaskc.compile_schema(
                json.loads(path.read_text(encoding="utf-8")), tokenizer=vocabulary, lenient=args.lenient
            )
            table = artifact.token_table
            assert table is not None
            row.update(outcome="ok", states=artifact.dfa.num_states, classes=table.num_classes)
        except MoonmaskError as error:
            row.update(outcome="refused", reason=str(error).splitlines()[0][:80])
        except _TimedOut:
            row.update(outcome="timeout")
        finally:
            signal.alarm(0)
        row.update(seconds=round(time.perf_counter() - started, 3), peak_rss_mb=round(peak_rss_mb(), 1))
        rows.append(row)
        detail = (
            f"{row['states']} states, {row['classes']} classes"
            if row["outcome"] == "ok"
            else row.get("reason", "")
        )
        print(
            f"  {path.name}: {row['outcome']} {row['seconds']:.2f} s, {row['peak_rss_mb']:.0f} MB  {detail}"
        )
    compiled = [r for r in rows if r["outcome"] == "ok"]
    peak = max(rows, key=lambda r: r["peak_rss_mb"])
    raised_by = next(r for r in rows if r["peak_rss_mb"] == peak["peak_rss_mb"])
    largest = max(compiled, key=lambda r: r["states"] * r["classes"], default=None)
    refused = sum(r["outcome"] == "refused" for r in rows)
    timed_out = sum(r["outcome"] == "timeout" for r in rows)
    elapsed = time.perf_counter() - started_sweep
    print(
        f"compiled {len(compiled)}/{len(rows)} (refused {refused}, timed out {timed_out}) in {elapsed:.0f} s"
    )
    if largest is not None:
        print(f"largest table: {largest['file']}, {largest['states']} states x {largest['classes']} classes")
    print(f"peak RSS of the sweep: {peak['peak_rss_mb']:.0f} MB, first reached at {raised_by['file']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
