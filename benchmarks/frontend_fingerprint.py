"""Fingerprints of what the front ends make, to prove a refactor changes nothing.

Takes: nothing but the data directory (``$MOONMASKC_DATA``, default ``/work/shared/data``).
Compiles, without a token table:
- every example schema (``examples/schemas/*.json``, strict);
- every shared GBNF grammar (``$MOONMASKC_DATA/gbnf/*.gbnf``, ``max_depth=3``);
- 100 JSONSchemaBench schemas: 10 per subset of ``$MOONMASKC_DATA/schemas/jsonschemabench/*``,
  evenly spaced in name order, ``lenient=True``.
Hands on (stdout): one line per input, ``<kind> <name> <sha256>``; the hash covers the DFA's arrays
(transitions, byte classes, accepting states, start) and the printed grammar (``metadata["grammar"]``),
and a second hash covers the notes and warnings. A refused input prints its error class and message
instead. Diff two runs to see whether anything changed:

    python benchmarks/frontend_fingerprint.py > /tmp/fingerprint_before.txt
    ... refactor ...
    python benchmarks/frontend_fingerprint.py | diff /tmp/fingerprint_before.txt -

``--only KIND`` (examples, gbnf, jsonschemabench) runs one group; timings go to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import moonmaskc
from moonmaskc.artifact import Artifact
from moonmaskc.errors import MoonmaskError

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("MOONMASKC_DATA", "/work/shared/data"))
PER_SUBSET = 10
GBNF_MAX_DEPTH = 3

Input = tuple[str, str, Callable[[], Artifact]]


def dfa_digest(artifact: Artifact) -> str:
    """SHA-256 over the DFA's arrays and the printed grammar."""
    dfa = artifact.dfa
    digest = hashlib.sha256()
    for array in (dfa.transitions, dfa.byte_class, dfa.accepting):
        digest.update(str(array.shape).encode())
        digest.update(array.tobytes())
    digest.update(str(dfa.start).encode())
    digest.update(artifact.metadata["grammar"].encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def notes_digest(artifact: Artifact) -> str:
    """SHA-256 over the front end's notes and warnings (JSON, keys sorted)."""
    record = {"notes": artifact.metadata["notes"], "warnings": artifact.metadata["warnings"]}
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def evenly_spaced(files: list[Path], count: int) -> list[Path]:
    """``count`` of ``files`` (sorted) at evenly spaced positions, the first included."""
    if len(files) <= count:
        return files
    return [files[i * len(files) // count] for i in range(count)]


def inputs(only: str | None) -> Iterator[Input]:
    if only in (None, "examples"):
        for path in sorted((ROOT / "examples" / "schemas").glob("*.json")):
            text = path.read_text()
            yield "example", path.name, lambda text=text: moonmaskc.compile_schema(text, tokenizer=None)
    if only in (None, "gbnf"):
        for path in sorted((DATA / "gbnf").glob("*.gbnf")):
            text = path.read_text()
            yield (
                "gbnf",
                path.name,
                lambda text=text: moonmaskc.compile_gbnf(text, max_depth=GBNF_MAX_DEPTH, tokenizer=None),
            )
    if only in (None, "jsonschemabench"):
        for subset in sorted(p for p in (DATA / "schemas" / "jsonschemabench").iterdir() if p.is_dir()):
            for path in evenly_spaced(sorted(subset.glob("*.json")), PER_SUBSET):
                text = path.read_text()
                yield (
                    "jsonschemabench",
                    f"{subset.name}/{path.name}",
                    lambda text=text: moonmaskc.compile_schema(text, lenient=True, tokenizer=None),
                )


def fingerprint(build: Callable[[], Artifact]) -> str:
    try:
        artifact = build()
    except MoonmaskError as error:
        return f"refused {type(error).__name__}: {' '.join(str(error).split())}"
    return f"{dfa_digest(artifact)} notes={notes_digest(artifact)[:16]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("examples", "gbnf", "jsonschemabench"))
    args = parser.parse_args(argv)
    count = 0
    total = time.perf_counter()
    for kind, name, build in inputs(args.only):
        started = time.perf_counter()
        print(f"{kind} {name} {fingerprint(build)}", flush=True)
        print(f"{time.perf_counter() - started:8.2f}s {kind} {name}", file=sys.stderr, flush=True)
        count += 1
    print(f"{count} inputs in {time.perf_counter() - total:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
