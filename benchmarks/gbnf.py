"""States and compile time of every GBNF grammar in the data folder, per recursion depth.

Takes: ``--data DIR`` (default ``$MOONMASKC_DATA/gbnf`` or ``../shared/data/gbnf``), ``--depths``
(default 1-5), ``--max-states N``, ``--json PATH``. Hands on: a rich table with, per grammar and
depth, the recursive rules, the front-end time (parse + expansion), the back-end time
(``compile_ir``: NFA, DFA, minimisation) and the minimal DFA's state count. Non-recursive grammars
get one row (depth "-"); a bound that is hit is shown as the LimitError, not hidden.

    PYTHONPATH=. python benchmarks/gbnf.py --json gbnf-bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from moonmaskc.automata.build import compile_ir
from moonmaskc.errors import LimitError
from moonmaskc.frontends import gbnf
from moonmaskc.limits import Limits


def default_data_dir() -> Path:
    root = Path(__file__).resolve().parent.parent
    return Path(os.environ.get("MOONMASKC_DATA", root.parent / "shared" / "data")) / "gbnf"


def measure(text: str, depth: int | None, limits: Limits) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        result = gbnf.parse(text, limits=limits, max_depth=depth)
        parsed = time.perf_counter()
        dfa = compile_ir(result.node, limits)
    except LimitError as error:
        return {"error": str(error), "seconds": time.perf_counter() - started}
    done = time.perf_counter()
    return {
        "states": dfa.num_states,
        "front_end_seconds": parsed - started,
        "back_end_seconds": done - parsed,
        "seconds": done - started,
        "recursive_rules": result.notes["recursive_rules"],
        "embedded_rules": result.notes["embedded_rules"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--depths", default="1-5", help="a range such as 1-5, or a list such as 1,3")
    parser.add_argument("--max-states", type=int, default=Limits().max_states)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this path")
    args = parser.parse_args()
    if "-" in args.depths:
        low, high = map(int, args.depths.split("-"))
        depths = list(range(low, high + 1))
    else:
        depths = [int(part) for part in args.depths.split(",")]
    limits = Limits(max_states=args.max_states)
    gbnf.parse('root ::= "warm up the Lark parser"')

    console = Console()
    table = Table(title=f"GBNF grammars in {args.data} (max_states={limits.max_states})")
    for column in ("grammar", "depth", "recursive rules", "front end", "back end", "states"):
        table.add_column(column, justify="right" if column in ("depth", "states") else "left")
    rows: list[dict[str, Any]] = []
    for path in sorted(args.data.glob("*.gbnf")):
        text = path.read_text(encoding="utf-8")
        recursive = bool(gbnf.parse(text, max_depth=0).notes["recursive_rules"])
        for depth in depths if recursive else [None]:
            row = {"grammar": path.name, "depth": depth, **measure(text, depth, limits)}
            rows.append(row)
            if "error" in row:
                cells = ["", "", f"[red]{row['error']}[/] after {row['seconds']:.1f} s", ""]
            else:
                cells = [
                    ", ".join(row["recursive_rules"]) or "-",
                    f"{row['front_end_seconds'] * 1000:.0f} ms",
                    f"{row['back_end_seconds'] * 1000:.0f} ms",
                    str(row["states"]),
                ]
            table.add_row(path.name, "-" if depth is None else str(depth), *cells)
            console.print(f"[dim]{path.name} depth {depth}: done[/]")
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
        console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
