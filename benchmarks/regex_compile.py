"""Time from regex pattern to minimal DFA, moonmaskc beside interegular, in one run.

Takes: nothing (or ``--repeat N``, ``--json PATH``). Hands on: a rich table per pattern with the
median time of moonmaskc (parse + NFA + DFA + minimisation, and the parse alone) and of
interegular (parse + FSM construction + reduce), their ratio, and state counts. interegular comes
with the ``bench`` extra; without it only moonmaskc's columns are filled.

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

from moonmaskc.dfa import compile_ir
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


def time_call(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def moonmaskc_compile(pattern: str) -> int:
    return compile_ir(regex.parse(pattern).node).num_states


def interegular_compile(pattern: str) -> int:
    import interegular

    fsm = interegular.parse_pattern(pattern).to_fsm().reduce()
    return len(fsm.states)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()
    try:
        import interegular  # noqa: F401

        have_interegular = True
    except ImportError:
        have_interegular = False
    regex.parse("warm(up)?")  # build the Lark parser once, outside the timings
    rows = []
    for name, pattern in PATTERNS.items():
        ours, our_states = time_call(lambda p=pattern: moonmaskc_compile(p), args.repeat)
        parse_only, _ = time_call(lambda p=pattern: regex.parse(p), args.repeat)
        row: dict[str, Any] = {
            "pattern": name,
            "moonmaskc_s": ours,
            "moonmaskc_parse_s": parse_only,
            "moonmaskc_states": our_states,
        }
        if have_interegular:
            theirs, their_states = time_call(lambda p=pattern: interegular_compile(p), args.repeat)
            row.update(interegular_s=theirs, interegular_states=their_states, speedup=theirs / ours)
        rows.append(row)
    table = Table(title=f"regex to minimal DFA (median of {args.repeat})")
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
