"""JSONSchemaBench coverage: how many schemas compile, how fast, how many DFA states.

Takes: ``../shared/data/schemas/jsonschemabench/<subset>/*.json`` (or ``--data DIR``). Hands on: a
table per subset: compiled / total in strict and ``--lenient`` mode, median and p90 compile time
(schema to minimal DFA, successful compiles only) and states, and the same coverage (with the
median compile time) for outlines-core, xgrammar and llguidance when they are importable (the
``bench`` extra), else "not installed".

Every compile runs in a worker process (one per engine, kept alive between schemas) with a
per-schema time limit: a compile that hangs is killed and a library that crashes the process loses
that one schema, never the run. A schema whose strict compile timed out is not retried leniently
(the lenient walk does the same work up to that point) and counts as a failure in both columns.

    PYTHONPATH=. python benchmarks/coverage.py [--subset NAME] [--limit N] [--timeout S]
        [--peers all|none|NAME,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import statistics
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

PEERS = {"outlines-core": "outlines_core", "xgrammar": "xgrammar", "llguidance": "llguidance"}
ENGINES = ("moonmaskc", *PEERS)

# A job's outcome: (status, seconds, states, reason). status is "ok", "refused", "timeout" or "crash".
Outcome = tuple[str, float, int, str]


# ---------------------------------------------------------------------------------------------
# What runs inside a worker
# ---------------------------------------------------------------------------------------------


def _moonmaskc_compile(text: str, lenient: bool) -> tuple[int, str]:
    from moonmaskc.automata.build import compile_ir
    from moonmaskc.errors import MoonmaskError
    from moonmaskc.frontends.schema import compile_schema_ir

    try:
        dfa = compile_ir(compile_schema_ir(text, lenient=lenient).node)
    except MoonmaskError as error:
        return -1, str(error).split("\n")[0][:160]
    except RecursionError:
        return -1, "RecursionError"
    return dfa.num_states, ""


def _peer_compile(peer: str, text: str) -> tuple[int, str]:  # pragma: no cover - needs the bench extra
    try:
        if peer == "outlines-core":
            from outlines_core.json_schema import build_regex_from_schema

            build_regex_from_schema(text)
        elif peer == "llguidance":
            import llguidance

            grammar = llguidance.LLMatcher.grammar_from_json_schema(text)
            # (is_error, messages); "Unimplemented keys" warnings mean the schema was not honoured.
            is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
            if is_error or any("Unimplemented" in m for m in messages):
                return -1, "; ".join(messages)[:160]
        elif peer == "xgrammar":
            import xgrammar

            xgrammar.Grammar.from_json_schema(text)
        else:
            raise ValueError(peer)
    except Exception as error:
        return -1, f"{type(error).__name__}: {error}".split("\n")[0][:160]
    return 0, ""


def _serve(connection: Connection, engine: str) -> None:
    """Worker loop: receive (schema text, lenient), compile, send back (states, seconds, reason)."""
    if engine in PEERS:
        importlib.import_module(PEERS[engine])
    else:
        import moonmaskc.frontends.schema  # noqa: F401  (import cost out of the first timing)
    while True:
        try:
            text, lenient = connection.recv()
        except EOFError:
            return
        started = time.perf_counter()
        if engine == "moonmaskc":
            states, reason = _moonmaskc_compile(text, lenient)
        else:
            states, reason = _peer_compile(engine, text)
        connection.send((states, time.perf_counter() - started, reason))


# ---------------------------------------------------------------------------------------------
# The parent side
# ---------------------------------------------------------------------------------------------


class Worker:
    """One engine in its own process, restarted after a crash or a time-out."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._connection: Connection | None = None

    def _start(self) -> Connection:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child, self.engine), daemon=True)
        self._process.start()
        child.close()
        self._connection = parent
        return parent

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        if self._connection is not None:
            self._connection.close()
        self._process = self._connection = None

    def run(self, text: str, lenient: bool, timeout: float) -> Outcome:
        if self._connection is None:
            self.warm_up()  # a restarted worker's imports count in no time limit
        connection = self._connection or self._start()
        started = time.perf_counter()
        connection.send((text, lenient))
        if not connection.poll(timeout):
            self.stop()
            return "timeout", timeout, 0, "timeout"
        try:
            states, seconds, reason = connection.recv()
        except (EOFError, ConnectionResetError):
            code = self._process.exitcode if self._process is not None else None
            self.stop()
            return "crash", time.perf_counter() - started, 0, f"worker died (exit code {code})"
        if states < 0:
            return "refused", seconds, 0, reason
        return "ok", seconds, states, ""

    def warm_up(self) -> None:
        """Start the process and wait for its imports, so that they count in no time limit."""
        connection = self._connection or self._start()
        connection.send(("true", False))
        if not connection.poll(120.0):
            self.stop()
            return
        try:
            connection.recv()
        except (EOFError, ConnectionResetError):
            self.stop()


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _peer_names(choice: str) -> list[str]:
    if choice == "all":
        return list(PEERS)
    if choice == "none":
        return []
    names = [name.strip() for name in choice.split(",") if name.strip()]
    unknown = [name for name in names if name not in PEERS]
    if unknown:
        raise SystemExit(f"unknown peers {unknown}; choose among {list(PEERS)}")
    return names


def main() -> None:
    default_data = Path(
        os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "schemas" / "jsonschemabench")
    parser.add_argument("--subset", action="append")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per schema and engine")
    parser.add_argument("--peers", default="all", help="all, none, or a comma-separated list")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--verbose", action="store_true", help="one line per schema")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data} is absent: set MOONMASKC_DATA to the shared data folder")
    subsets = args.subset or sorted(p.name for p in args.data.iterdir() if p.is_dir())
    wanted = _peer_names(args.peers)
    available = {name: importlib.util.find_spec(PEERS[name]) is not None for name in PEERS}
    peers = [name for name in wanted if available[name]]
    workers = {engine: Worker(engine) for engine in ("moonmaskc", *peers)}
    for worker in workers.values():
        worker.warm_up()
    rows: list[dict[str, Any]] = []
    print(f"time limit {args.timeout:g} s per schema and engine; peers: {', '.join(peers) or 'none'}")
    print(
        "| subset | strict | lenient | median s | p90 s | median states | p90 states |"
        + "".join(f" {p} (median s) |" for p in wanted)
    )
    print("|" + "---|" * (7 + len(wanted)))
    started_run = time.perf_counter()
    try:
        for subset in subsets:
            rows.append(_subset_row(args, subset, wanted, available, workers))
    finally:
        for worker in workers.values():
            worker.stop()
    print(f"total wall time {time.perf_counter() - started_run:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


def _subset_row(
    args: argparse.Namespace,
    subset: str,
    wanted: list[str],
    available: dict[str, bool],
    workers: dict[str, Worker],
) -> dict[str, Any]:
    files = sorted((args.data / subset).glob("*.json"))[: args.limit]
    strict = lenient = 0
    times: list[float] = []
    states: list[float] = []
    reasons: dict[str, int] = {}
    peer_ok = dict.fromkeys(wanted, 0)
    peer_times: dict[str, list[float]] = {p: [] for p in wanted}
    peer_failures: dict[str, dict[str, int]] = {p: {} for p in wanted}
    per_schema: list[dict[str, Any]] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        status, seconds, n_states, why = workers["moonmaskc"].run(text, False, args.timeout)
        record: dict[str, Any] = {"file": path.name, "strict": status, "seconds": round(seconds, 3)}
        if status == "ok":
            strict += 1
            lenient += 1
            times.append(seconds)
            states.append(n_states)
            record["states"] = n_states
        else:
            key = why.split(":")[0] if status == "refused" else status
            reasons[key] = reasons.get(key, 0) + 1
            record["reason"] = why
            if status == "refused":
                lenient_status, *_ = workers["moonmaskc"].run(text, True, args.timeout)
                lenient += lenient_status == "ok"
                record["lenient"] = lenient_status
        for peer in wanted:
            if peer not in workers:
                continue
            peer_status, peer_seconds, _, peer_why = workers[peer].run(text, False, args.timeout)
            record[peer] = peer_status
            if peer_status == "ok":
                peer_ok[peer] += 1
                peer_times[peer].append(peer_seconds)
            else:
                key = peer_status if peer_status != "refused" else peer_why.split(":")[0][:60]
                peer_failures[peer][key] = peer_failures[peer].get(key, 0) + 1
        per_schema.append(record)
        if args.verbose:
            print(f"  {subset}/{path.name}: {record}", flush=True)
    total = len(files)
    peer_cells = [
        f"{peer_ok[p]}/{total} ({_quantile(peer_times[p], 0.5):.3f})" if available[p] else "not installed"
        for p in wanted
    ]
    print(
        f"| {subset} | {strict}/{total} | {lenient}/{total} | {_quantile(times, 0.5):.2f} | "
        f"{_quantile(times, 0.9):.2f} | {_quantile(states, 0.5):.0f} | {_quantile(states, 0.9):.0f} |"
        + "".join(f" {cell} |" for cell in peer_cells),
        flush=True,
    )
    return {
        "subset": subset,
        "total": total,
        "strict": strict,
        "lenient": lenient,
        "median_seconds": statistics.median(times) if times else None,
        "p90_seconds": _quantile(times, 0.9) if times else None,
        "median_states": statistics.median(states) if states else None,
        "p90_states": _quantile(states, 0.9) if states else None,
        "peers": {p: (peer_ok[p] if available[p] else None) for p in wanted},
        "peer_median_seconds": {p: (statistics.median(t) if t else None) for p, t in peer_times.items()},
        "strict_failures": dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:10]),
        "peer_failures": {
            p: dict(sorted(f.items(), key=lambda kv: -kv[1])[:5]) for p, f in peer_failures.items()
        },
        "schemas": per_schema,
    }


if __name__ == "__main__":
    main()
