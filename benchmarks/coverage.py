"""JSONSchemaBench coverage: how many schemas compile, how fast, how many DFA states.

Takes: ``../shared/data/schemas/jsonschemabench/<subset>/*.json`` (or ``--data DIR``). Hands on: a
table per subset: compiled / total in strict and ``--lenient`` mode, median and p90 compile time
(schema to minimal DFA) and states, and the same coverage for outlines-core, xgrammar and
llguidance when they are importable (the ``bench`` extra), else "not installed".

    PYTHONPATH=. python benchmarks/coverage.py [--subset NAME] [--limit N] [--timeout S] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any

from moonmaskc.dfa import compile_ir
from moonmaskc.errors import MoonmaskError
from moonmaskc.frontends.schema import compile_schema_ir

PEERS = {"outlines-core": "outlines_core", "xgrammar": "xgrammar", "llguidance": "llguidance"}


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _compile(schema: Any, lenient: bool, timeout: float) -> tuple[bool, float, int, str]:
    started = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = compile_schema_ir(schema, lenient=lenient)
        dfa = compile_ir(result.node)
        return True, time.perf_counter() - started, dfa.num_states, ""
    except MoonmaskError as error:
        return False, time.perf_counter() - started, 0, str(error).split("\n")[0][:120]
    except (_Timeout, RecursionError) as error:
        return False, time.perf_counter() - started, 0, type(error).__name__
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _peer_compiles(peer: str, schema: Any) -> bool:  # pragma: no cover - needs the bench extra
    text = json.dumps(schema)
    if peer == "outlines-core":
        from outlines_core.json_schema import build_regex_from_schema

        build_regex_from_schema(text)
        return True
    if peer == "llguidance":
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_json_schema(text)
        # (is_error, messages); "Unimplemented keys" warnings mean the schema was not honoured fully.
        is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
        return not is_error and not any("Unimplemented" in m for m in messages)
    if peer == "xgrammar":
        import xgrammar

        xgrammar.Grammar.from_json_schema(text)
        return True
    raise ValueError(peer)


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    default_data = Path(
        os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "schemas" / "jsonschemabench")
    parser.add_argument("--subset", action="append")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data} is absent: set MOONMASKC_DATA to the shared data folder")
    subsets = args.subset or sorted(p.name for p in args.data.iterdir() if p.is_dir())
    available = {name: importlib.util.find_spec(module) is not None for name, module in PEERS.items()}
    rows: list[dict[str, Any]] = []
    header = (
        "| subset | strict | lenient | median s | p90 s | median states | p90 states | "
        + " | ".join(PEERS)
        + " |"
    )
    print(header)
    print("|" + "---|" * (7 + len(PEERS)))
    for subset in subsets:
        files = sorted((args.data / subset).glob("*.json"))[: args.limit]
        strict = lenient = 0
        times: list[float] = []
        states: list[float] = []
        reasons: dict[str, int] = {}
        peer_ok = dict.fromkeys(PEERS, 0)
        for path in files:
            schema = json.loads(path.read_text(encoding="utf-8"))
            ok, seconds, n_states, why = _compile(schema, False, args.timeout)
            if ok:
                strict += 1
                times.append(seconds)
                states.append(n_states)
            else:
                reasons[why.split(":")[0]] = reasons.get(why.split(":")[0], 0) + 1
                ok_lenient, *_ = _compile(schema, True, args.timeout)
                ok = ok_lenient
            lenient += ok
            for peer, installed in available.items():
                if installed:
                    try:
                        peer_ok[peer] += _peer_compiles(peer, schema)
                    except Exception:
                        pass
        total = len(files)
        peers = [f"{peer_ok[p]}/{total}" if available[p] else "not installed" for p in PEERS]
        print(
            f"| {subset} | {strict}/{total} | {lenient}/{total} | {_quantile(times, 0.5):.2f} | "
            f"{_quantile(times, 0.9):.2f} | {_quantile(states, 0.5):.0f} | {_quantile(states, 0.9):.0f} | "
            + " | ".join(peers)
            + " |",
            flush=True,
        )
        rows.append(
            {
                "subset": subset,
                "total": total,
                "strict": strict,
                "lenient": lenient,
                "median_seconds": statistics.median(times) if times else None,
                "p90_seconds": _quantile(times, 0.9) if times else None,
                "median_states": statistics.median(states) if states else None,
                "p90_states": _quantile(states, 0.9) if states else None,
                "peers": {p: (peer_ok[p] if available[p] else None) for p in PEERS},
                "strict_failures": dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:10]),
            }
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
