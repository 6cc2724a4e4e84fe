"""Time from regex pattern to minimal DFA, moonmaskc beside interegular, in one run.

Takes: nothing (or ``--repeat N``, ``--json PATH``, ``--in-blocks``). Hands on: a rich table per
pattern with the median time of moonmaskc's public call ``compile_regex(pattern, tokenizer=None)``
(parse, work bound, NFA, DFA, minimisation, distances, the printed grammar and the metadata; no
token table), of its parse alone, and of interegular (parse + FSM construction + reduce), their
ratio, and state counts. The engines
run in turns (see ``time_engines``; ``--in-blocks`` for one engine after the other). interegular
comes with the ``bench`` extra; without it only moonmaskc's columns are filled.

    python benchmarks/regex_compile.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import moonmaskc
from moonmaskc.frontends import regex

WORDS_1000 = "|".join(
    f"{a}{b}{c}{n}"
    for n, (a, b, c) in enumerate((a, b, c) for a in "bcdfghjklm" for b in "aeiou" for c in "nprstvwxyz")
    if n < 1000
)

PATTERNS: dict[str, str] = {
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}",
    "iso-datetime": (
        r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
        r"T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)"
    ),
    "[a-z]{1,64}": r"[a-z]{1,64}",
    "1000 words": WORDS_1000,
    "json string": r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
    "ipv4": r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)",
}


def time_engines(
    functions: dict[str, Callable[[], Any]], repeat: int, in_blocks: bool = False
) -> dict[str, tuple[float, Any]]:
    """Median time and last result of each function. By default the functions run in turns (one
    call of each per round), so that every engine sees the same machine: on a shared VM the speed
    of plain Python code drifts by a third or more over seconds, which timing one engine after the
    other charges to whichever ran in the slow stretch. Each call then also starts with caches
    that the other engine's call has just used, as a compile in a real program would.
    ``in_blocks``: all calls of one function, then all of the next (warm caches from the
    identical call before; the method of the earlier figures in docs/regex.md)."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    results: dict[str, Any] = {}
    rounds = [list(functions.items())] * repeat
    if in_blocks:
        rounds = [[item] * repeat for item in functions.items()]
    for calls in rounds:
        for name, function in calls:
            started = time.perf_counter()
            results[name] = function()
            times[name].append(time.perf_counter() - started)
    return {name: (statistics.median(times[name]), results[name]) for name in functions}


def moonmaskc_compile(pattern: str) -> int:
    """The public call, without a token table (interegular builds none either)."""
    return moonmaskc.compile_regex(pattern, tokenizer=None).dfa.num_states


def interegular_compile(pattern: str) -> int:
    import interegular

    fsm = interegular.parse_pattern(pattern).to_fsm().reduce()
    return len(fsm.states)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument(
        "--in-blocks",
        action="store_true",
        help="time all runs of one engine, then the next, instead of in turns",
    )
    args = parser.parse_args()
    try:
        import interegular  # noqa: F401

        have_interegular = True
    except ImportError:
        have_interegular = False
    regex.parse("warm(up)?")  # build the Lark parser once, outside the timings
    rows = []
    for name, pattern in PATTERNS.items():
        engines: dict[str, Callable[[], Any]] = {
            "moonmaskc": lambda p=pattern: moonmaskc_compile(p),
            "parse": lambda p=pattern: regex.parse(p),
        }
        if have_interegular:
            engines["interegular"] = lambda p=pattern: interegular_compile(p)
        timed = time_engines(engines, args.repeat, args.in_blocks)
        (ours, our_states), (parse_only, _) = timed["moonmaskc"], timed["parse"]
        row: dict[str, Any] = {
            "pattern": name,
            "moonmaskc_s": ours,
            "moonmaskc_parse_s": parse_only,
            "moonmaskc_states": our_states,
        }
        if have_interegular:
            theirs, their_states = timed["interegular"]
            row.update(interegular_s=theirs, interegular_states=their_states, speedup=theirs / ours)
        rows.append(row)
    order = "in blocks" if args.in_blocks else "in turns"
    table = Table(title=f"regex to minimal DFA (median of {args.repeat}, engines {order})")
    columns = (
        "pattern",
        "moonmaskc",
        "of which parse",
        "states",
        "interegular",
        "states ",
        "interegular / moonmaskc",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "pattern" else "right")
    for row in rows:
        table.add_row(
            escape(row["pattern"]),
            f"{row['moonmaskc_s'] * 1000:.2f} ms",
            f"{row['moonmaskc_parse_s'] * 1000:.2f} ms",
            str(row["moonmaskc_states"]),
            f"{row['interegular_s'] * 1000:.2f} ms" if have_interegular else "not installed",
            str(row.get("interegular_states", "")),
            f"{row['speedup']:.1f}x" if have_interegular else "",
        )
    Console(width=120).print(table)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as stream:
            json.dump(rows, stream, indent=2)


if __name__ == "__main__":
    main()
