"""The pure core of this checkout against an older checkout's, compile by compile, in one run.

Takes: ``--baseline DIR``, another checkout of moonmaskc (made for instance with
``git worktree add /tmp/baseline b5d4997``, the last commit before the native core, when the pure
core was the only one; nothing is built there, its Python code is imported through ``PYTHONPATH``),
and from ``$MOONMASKC_DATA`` the GPT-2 tokenizer and JSONSchemaBench schemas. Hands on: a rich table
per kind of input with each compile's fastest time on both sides and their ratio (this checkout
over the baseline), and per kind the median ratio and the range. The inputs: the patterns of
``regex_compile.py`` (``compile_regex``, no tokenizer), the example schemas and ``--per-subset``
JSONSchemaBench schemas of each ``--subset`` (``compile_schema`` with the GPT-2 table). An input
that either side refuses is listed as such. The two sides run in child processes, alternately,
``--rounds`` times each (this checkout with ``MOONMASKC_PURE=1``), and each times every input
``--repeat`` times; the fastest of all is kept.

    python benchmarks/pure_path.py --baseline /tmp/baseline [--rounds 3] [--repeat 3]
        [--subset Kubernetes --subset JsonSchemaStore] [--per-subset 8] [--json out.json]

With the defaults about 9 minutes: the baseline's pure core takes 33 s on one Kubernetes schema.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
DATA = Path(os.environ.get("MOONMASKC_DATA", CHECKOUT.parent / "shared" / "data"))
SUBSETS = ("Github_trivial", "Kubernetes", "JsonSchemaStore")


def inputs(subsets: list[str], per_subset: int) -> list[tuple[str, str, str]]:
    """(kind, name, text) of every input: the regex patterns, the examples, the schemas."""
    sys.path.insert(0, str(HERE))
    from regex_compile import PATTERNS

    found = [("regex", name, pattern) for name, pattern in PATTERNS.items()]
    for path in sorted((CHECKOUT / "examples" / "schemas").glob("*.json")):
        found.append(("example", path.name, path.read_text(encoding="utf-8")))
    for subset in subsets:
        files = sorted((DATA / "schemas" / "jsonschemabench" / subset).glob("*.json"))
        step = max(1, len(files) // per_subset) if per_subset else len(files) + 1
        for path in files[::step][:per_subset]:
            found.append(("schema", f"{subset}/{path.name}", path.read_text(encoding="utf-8")))
    return found


def child(inputs_path: Path, out_path: Path, repeat: int) -> None:
    """In a child process: time every input ``repeat`` times with the moonmaskc on ``sys.path``."""
    import moonmaskc
    from moonmaskc.vocabulary import load_vocabulary

    vocabulary = load_vocabulary(DATA / "tokenizers" / "gpt2.json")
    moonmaskc.compile_regex("a", tokenizer=None)
    moonmaskc.compile_schema('{"type": "integer"}', tokenizer=vocabulary)
    times: dict[str, float | None] = {}
    for kind, name, text in json.loads(inputs_path.read_text(encoding="utf-8")):
        best: float | None = None
        for _ in range(repeat):
            started = time.perf_counter()
            try:
                if kind == "regex":
                    moonmaskc.compile_regex(text, tokenizer=None)
                else:
                    moonmaskc.compile_schema(text, tokenizer=vocabulary)
            except moonmaskc.MoonmaskError:
                best = None
                break
            spent = time.perf_counter() - started
            best = spent if best is None else min(best, spent)
        times[f"{kind}:{name}"] = best
    out_path.write_text(json.dumps(times), encoding="utf-8")


def run_side(checkout: Path, pure: bool, inputs_path: Path, repeat: int) -> dict[str, float | None]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "MOONMASKC_DATA": str(DATA)}
    env.pop("MOONMASKC_PURE", None)
    if pure:
        env["MOONMASKC_PURE"] = "1"
    with tempfile.TemporaryDirectory() as folder:
        out_path = Path(folder) / "times.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--child", str(inputs_path), str(out_path)]
        subprocess.run([*command, "--repeat", str(repeat)], env=env, cwd=folder, check=True)
        times: dict[str, float | None] = json.loads(out_path.read_text(encoding="utf-8"))
        return times


def fastest(runs: list[dict[str, float | None]], key: str) -> float | None:
    """The fastest time of ``key`` over ``runs``; None where any run refused it."""
    found = [run.get(key) for run in runs]
    times = [value for value in found if value is not None]
    return min(times) if len(times) == len(found) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="another checkout of moonmaskc")
    parser.add_argument("--rounds", type=int, default=3, help="child processes per side, alternately")
    parser.add_argument("--repeat", type=int, default=3, help="compiles of each input per child")
    parser.add_argument("--subset", action="append", help=f"JSONSchemaBench subsets (default {SUBSETS})")
    parser.add_argument("--per-subset", type=int, default=8, help="schemas per subset, evenly spread")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.repeat)
        return
    if args.baseline is None or not (args.baseline / "moonmaskc" / "__init__.py").is_file():
        raise SystemExit("--baseline must be a checkout of moonmaskc (git worktree add DIR COMMIT)")
    if not (DATA / "tokenizers" / "gpt2.json").is_file():
        raise SystemExit(f"{DATA} has no tokenizers/gpt2.json: set MOONMASKC_DATA to the shared data folder")
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    found = inputs(list(args.subset or SUBSETS), args.per_subset)
    with tempfile.TemporaryDirectory() as folder:
        inputs_path = Path(folder) / "inputs.json"
        inputs_path.write_text(json.dumps(found), encoding="utf-8")
        baseline_runs, head_runs = [], []
        for _ in range(args.rounds):
            baseline_runs.append(run_side(args.baseline.resolve(), False, inputs_path, args.repeat))
            head_runs.append(run_side(CHECKOUT, True, inputs_path, args.repeat))
    console = Console()
    rows: list[dict[str, Any]] = []
    for kind in ("regex", "example", "schema"):
        table = Table(title=f"{kind}: pure core, this checkout against {args.baseline} (fastest of all runs)")
        for column in ("input", "baseline", "this checkout", "ratio"):
            table.add_column(column, justify="left" if column == "input" else "right")
        ratios = []
        for input_kind, name, _ in found:
            if input_kind != kind:
                continue
            old = fastest(baseline_runs, f"{kind}:{name}")
            new = fastest(head_runs, f"{kind}:{name}")
            ratio = new / old if old and new else None
            rows.append({"kind": kind, "input": name, "baseline_s": old, "head_s": new, "ratio": ratio})
            if ratio is not None:
                ratios.append(ratio)
            shown = [f"{value * 1e3:.2f} ms" if value else "refused" for value in (old, new)]
            table.add_row(escape(name), *shown, f"{ratio:.2f}x" if ratio else "-")
        console.print(table)
        if ratios:
            console.print(
                f"{kind}: {len(ratios)} compared, median {statistics.median(ratios):.2f}x, "
                f"{min(ratios):.2f}x-{max(ratios):.2f}x"
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
