"""moonmaskc against its peers (xgrammar, llguidance, outlines-core) on real JSON schemas, in one run.

Takes: the example schemas (``examples/schemas``, or ``--schemas`` paths) and tokenizers from the
shared data folder (``$MOONMASKC_DATA``, default ``../shared/data``); needs the optional ``bench``
packages (outlines-core, xgrammar, llguidance, transformers). Hands on: a rich table per
tokenizer and schema with, for each engine, the compile time with the vocabulary already loaded
(best of ``--repeat``, caches off; moonmaskc builds the automaton of each string ``format`` once
per process, and ``compile_formats_unbuilt_ms`` in the JSON is its compile without them), the
per-step mask fill latency along a real token trace (the first step on its own, then p50, p99 and
max over the other steps, in microseconds), the serialized size and the load time where the
engine has an artifact, and the ratios moonmaskc / xgrammar and moonmaskc / outlines-core.
``xgrammar-nonstrict`` is xgrammar with ``strict_mode=False``: by default xgrammar refuses
properties and items that the schema does not name even where the schema allows them (a smaller
language than the schema's); with ``strict_mode=False`` it compiles the schema's language, as
moonmaskc does.
The fills along the trace are timed after ``Guide.warm()`` (every mask row built, about a
millisecond, off the critical path);
``load_fill_ms`` is what a serving process pays at start-up: the median of loading the artifact
file and filling the start state's mask; beside it, for llguidance, the median of compiling the
schema from its text and filling its first mask.
``--json FILE`` also writes the raw figures.

The trace: a valid instance sampled from the moonmaskc guide (masked monkey sampling, fixed seed),
encoded by the real tokenizer as a model would see it, then eos. Every engine is stepped along the
same ids; an engine that rejects a token stops there (the table shows how many steps it took).

``--cold 64`` writes over 64 MB before every fill (outside the timing), as the model's forward pass
does between two decoding steps: the fills as a decoding loop sees them, tables and code cold.

Run: ``PYTHONPATH=. python benchmarks/peers.py [--tokenizers gpt2 llama3] [--schemas a.json ...]``
Timings on a shared machine are noisy (maxima especially: a 4 ms spike is a scheduler time slice).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import pickle
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import moonmaskc
from moonmaskc.errors import MoonmaskError
from moonmaskc.runtime import Guide, load
from moonmaskc.vocabulary import Vocabulary, load_vocabulary

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MOONMASKC_DATA", ROOT.parent / "shared" / "data"))
DEFAULT_SCHEMAS = [ROOT / "examples" / "schemas" / f"{name}.json" for name in ("user", "order", "tool_call")]
Figures = dict[str, Any]


@contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic collector off while a trace is timed. No ``gc.collect()`` first: the pass right
    after a full collection runs about twice as slow for every call that allocates (measured on a
    moonmaskc fill: 1.5-1.7 us against 0.8 us, back to 0.8 us from the second pass on)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def best_of(repeat: int, action: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs, in milliseconds, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - started)
    return best * 1000, result


def median_of(repeat: int, action: Callable[[], Any]) -> float:
    """The median of ``max(repeat, 11)`` runs, in milliseconds."""
    times = []
    for _ in range(max(repeat, 11)):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return float(np.median(times)) * 1000


def first_fill(guide: Guide) -> None:
    """What a serving process does first with a loaded artifact: fill the start state's mask."""
    bitmask = np.zeros((1, guide.bitmask_words), dtype=np.int32)
    guide.fill_bitmask(guide.start(), bitmask, 0)


def latency_figures(latencies: list[float], steps: int, trace_length: int) -> Figures:
    """p50, p99 and max over the steps after the first; the first step (cold: the first call after
    compiling and loading, with caches and branch predictors primed by other work) on its own."""
    if not latencies:
        return {"steps": f"0/{trace_length}"}
    later = latencies[1:] or latencies
    return {
        "fill_first_us": float(latencies[0]),
        "fill_p50_us": float(np.percentile(later, 50)),
        "fill_p99_us": float(np.percentile(later, 99)),
        "fill_max_us": float(np.max(later)),
        "steps": f"{steps}/{trace_length}",
    }


Evict = Callable[[], None] | None


def cache_evictor(megabytes: int) -> Callable[[], None]:
    """Writes over a buffer larger than the last-level cache, as a model's forward pass would
    between two decoding steps, so that every fill finds its tables and code cold."""
    buffer = np.ones(megabytes << 20, dtype=np.uint8)

    def evict() -> None:
        buffer[::64] += 1  # one byte per cache line is enough to take the line

    return evict


def step_along(
    trace: list[int], fill: Callable[[], object], accept: Callable[[int], bool], evict: Evict = None
) -> Figures:
    """Fill the mask before each token of ``trace`` and accept it; microseconds per fill (with
    ``evict`` run before each fill, outside the timing)."""
    latencies: list[float] = []
    steps = 0
    with no_gc():
        for token in trace:
            if evict is not None:
                evict()
            started = time.perf_counter_ns()
            fill()
            latencies.append((time.perf_counter_ns() - started) / 1000)
            if not accept(token):
                break
            steps += 1
    return latency_figures(latencies, steps, len(trace))


def valid_trace(guide: Guide, hf_tokenizer: Any, seed: int) -> tuple[str, list[int]]:
    """A valid instance (masked monkey sample) and its ids under the real tokenizer, then eos."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        _, text, finished = guide.monkey(rng, 48)
        if finished:
            ids = hf_tokenizer.encode(text, add_special_tokens=False)
            return text, [*ids, guide.eos]
    raise RuntimeError("no finished sample to trace")


def compile_with_formats_unbuilt(schema: Any, vocabulary: Vocabulary, lenient: bool) -> Any:
    """A compile that first forgets the string-format automata that moonmaskc builds once per
    process (as the first schema with a ``format`` in a fresh process would see it)."""
    from moonmaskc.frontends.schema.formats import format_string_dfa

    format_string_dfa.cache_clear()
    return moonmaskc.compile_schema(schema, tokenizer=vocabulary, lenient=lenient)


def run_moonmaskc(
    schema: Any, vocabulary: Vocabulary, hf: Any, repeat: int, evict: Evict = None, lenient: bool = False
) -> tuple[Figures, list[int]]:
    compile_ms, artifact = best_of(
        repeat, lambda: moonmaskc.compile_schema(schema, tokenizer=vocabulary, lenient=lenient)
    )
    fresh_formats_ms, _ = best_of(repeat, lambda: compile_with_formats_unbuilt(schema, vocabulary, lenient))
    with tempfile.TemporaryDirectory() as folder:
        path = artifact.save(Path(folder) / "guide.npz")
        size = path.stat().st_size
        load_ms, guide = best_of(repeat, lambda: load(path))
        load_fill_ms = median_of(repeat, lambda: first_fill(load(path)))
    _, trace = valid_trace(guide, hf, seed=7)
    guide.warm()  # as a server would once its first mask is out: every later fill is one row copy
    bitmask = np.zeros((1, guide.bitmask_words), dtype=np.int32)
    state = [guide.start()]

    def accept(token: int) -> bool:
        following = guide.advance(state[0], token)
        if following is None:
            return False
        state[0] = following
        return True

    figures = step_along(trace, lambda: guide.fill_bitmask(state[0], bitmask, 0), accept, evict)
    timings = artifact.metadata["timings"]  # of the last compile: where the time goes
    breakdown = {f"{name.removesuffix('_s')}_ms": seconds * 1000 for name, seconds in timings.items()}
    return {
        "compile_ms": compile_ms,
        "compile_formats_unbuilt_ms": fresh_formats_ms,
        "size_kb": size / 1024,
        "load_ms": load_ms,
        "load_fill_ms": load_fill_ms,
        "load_fill_us": load_fill_ms * 1000,
        **figures,
        **breakdown,
    }, trace


def run_xgrammar(
    schema: Any,
    hf: Any,
    vocab_size: int,
    trace: list[int],
    repeat: int,
    evict: Evict = None,
    strict_mode: bool = True,
) -> Figures:
    """xgrammar as configured by default (``strict_mode=True``: no properties or items beyond those
    the schema names, even where the schema allows them), or with ``strict_mode=False``, the
    language the schema defines, the one moonmaskc compiles."""
    import xgrammar

    info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=vocab_size)
    compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
    text = json.dumps(schema)
    compile_ms, compiled = best_of(
        repeat, lambda: compiler.compile_json_schema(text, strict_mode=strict_mode)
    )
    serialized = compiled.serialize_json()
    load_ms, _ = best_of(repeat, lambda: xgrammar.CompiledGrammar.deserialize_json(serialized, info))
    matcher = xgrammar.GrammarMatcher(compiled)
    bitmask = xgrammar.allocate_token_bitmask(1, vocab_size)
    figures = step_along(trace, lambda: matcher.fill_next_token_bitmask(bitmask), matcher.accept_token, evict)
    return {
        "compile_ms": compile_ms,
        "size_kb": len(serialized.encode()) / 1024,
        "load_ms": load_ms,
        **figures,
    }


def run_llguidance(
    schema: Any, hf: Any, vocab_size: int, trace: list[int], repeat: int, evict: Evict = None
) -> Figures:
    import llguidance
    import llguidance.hf
    import llguidance.numpy

    tokenizer = llguidance.hf.from_tokenizer(hf, n_vocab=vocab_size)
    grammar = llguidance.LLMatcher.grammar_from_json_schema(schema)
    bitmask = llguidance.numpy.allocate_token_bitmask(1, vocab_size)

    def compile_and_first_mask() -> Any:
        matcher = llguidance.LLMatcher(tokenizer, grammar)
        llguidance.numpy.fill_next_token_bitmask(matcher, bitmask)
        return matcher

    compile_ms, _ = best_of(repeat, compile_and_first_mask)

    def from_text_to_first_mask() -> None:  # what moonmaskc's load + first fill stands beside
        matcher = llguidance.LLMatcher(tokenizer, llguidance.LLMatcher.grammar_from_json_schema(schema))
        llguidance.numpy.fill_next_token_bitmask(matcher, bitmask)

    load_fill_ms = median_of(repeat, from_text_to_first_mask)
    matcher = llguidance.LLMatcher(tokenizer, grammar)
    figures = step_along(
        trace,
        lambda: llguidance.numpy.fill_next_token_bitmask(matcher, bitmask),
        lambda token: bool(matcher.consume_token(token)),
        evict,
    )
    return {"compile_ms": compile_ms, "load_fill_ms": load_fill_ms, **figures}


def run_outlines(
    schema: Any, vocabulary: Vocabulary, trace: list[int], repeat: int, evict: Evict = None
) -> Figures:
    import outlines_core
    from outlines_core.json_schema import build_regex_from_schema

    tokens: dict[bytes, list[int]] = {}
    for token_id, data in enumerate(vocabulary.token_bytes):
        if data and token_id != vocabulary.eos_id:
            tokens.setdefault(data, []).append(token_id)
    oc_vocabulary = outlines_core.Vocabulary(vocabulary.eos_id, tokens)
    regex = build_regex_from_schema(json.dumps(schema))
    compile_ms, index = best_of(min(repeat, 2), lambda: outlines_core.Index(regex, oc_vocabulary))
    serialized = pickle.dumps(index)
    load_ms, _ = best_of(repeat, lambda: pickle.loads(serialized))
    guide = outlines_core.Guide(index)
    words = (vocabulary.size + 31) // 32
    bitmask = np.zeros(words, dtype=np.int32)
    pointer = bitmask.ctypes.data

    def accept(token: int) -> bool:
        if token == vocabulary.eos_id:
            return bool(guide.is_finished() or token in guide.get_tokens())
        try:
            guide.advance(token, return_tokens=False)
        except (ValueError, RuntimeError):
            return False
        return True

    figures = step_along(trace, lambda: guide.write_mask_into(pointer, words, 4), accept, evict)
    return {"compile_ms": compile_ms, "size_kb": len(serialized) / 1024, "load_ms": load_ms, **figures}


ENGINES = ("moonmaskc", "xgrammar", "xgrammar-nonstrict", "llguidance", "outlines-core")


def schema_label(path: Path) -> str:
    """``user.json`` for an example, ``Github_medium/o1.json`` for a JSONSchemaBench schema."""
    return path.name if path.parent.parent.name != "jsonschemabench" else f"{path.parent.name}/{path.name}"


def natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def benchmark_schemas(choices: list[str]) -> list[Path]:
    """``SUBSET:N`` -> the first N schemas of that JSONSchemaBench subset, in natural file order."""
    paths: list[Path] = []
    for choice in choices:
        subset, _, count = choice.partition(":")
        folder = DATA / "schemas" / "jsonschemabench" / subset
        if not folder.is_dir():
            raise SystemExit(f"no JSONSchemaBench subset {subset!r} in {folder.parent}")
        paths += sorted(folder.glob("*.json"), key=natural_key)[: int(count or 5)]
    return paths


def run(
    tokenizer_names: list[str],
    schema_paths: list[Path],
    repeat: int,
    engines: list[str],
    evict: Evict = None,
    lenient: bool = False,
) -> list[Figures]:
    from transformers import PreTrainedTokenizerFast

    rows: list[Figures] = []
    for name in tokenizer_names:
        path = DATA / "tokenizers" / f"{name}.json"
        vocabulary = load_vocabulary(path)
        hf = PreTrainedTokenizerFast(tokenizer_file=str(path))
        moonmaskc.compile_schema(True, tokenizer=vocabulary)  # warm the trie and vocabulary caches
        for schema_path in schema_paths:
            schema = json.loads(schema_path.read_text())
            base = {"tokenizer": name, "schema": schema_label(schema_path)}
            try:
                ours, trace = run_moonmaskc(schema, vocabulary, hf, repeat, evict, lenient)
            except MoonmaskError as error:  # refused (exact or a clear error): no trace to step along
                rows.append({**base, "engine": "moonmaskc", "error": f"{type(error).__name__}: {error}"[:80]})
                continue
            rows.append({**base, "engine": "moonmaskc", **ours})
            peers: dict[str, Callable[[], Figures]] = {
                "xgrammar": functools.partial(
                    run_xgrammar, schema, hf, vocabulary.size, trace, repeat, evict
                ),
                "xgrammar-nonstrict": functools.partial(
                    run_xgrammar, schema, hf, vocabulary.size, trace, repeat, evict, strict_mode=False
                ),
                "llguidance": functools.partial(
                    run_llguidance, schema, hf, vocabulary.size, trace, repeat, evict
                ),
                "outlines-core": functools.partial(run_outlines, schema, vocabulary, trace, repeat, evict),
            }
            for engine, action in peers.items():
                if engine not in engines:
                    continue
                try:
                    rows.append({**base, "engine": engine, **action()})
                except Exception as error:  # a peer that fails on a schema is reported, not fatal
                    rows.append({**base, "engine": engine, "error": f"{type(error).__name__}: {error}"[:80]})
    return rows


def peer_row(rows: list[Figures], engine: str, ours: Figures) -> Figures | None:
    """The row of ``engine`` for the tokenizer and schema of ``ours``, unless that engine failed."""
    return next(
        (
            r
            for r in rows
            if r["engine"] == engine
            and r["tokenizer"] == ours["tokenizer"]
            and r["schema"] == ours["schema"]
            and "error" not in r
        ),
        None,
    )


def ratio(ours: Figures, theirs: Figures | None, key: str) -> str:
    if theirs is None or key not in ours or key not in theirs or not theirs[key]:
        return "-"
    return f"{ours[key] / theirs[key]:.2f}x"


def print_tables(rows: list[Figures]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=200)
    columns = (
        "compile_ms",
        "fill_first_us",
        "fill_p50_us",
        "fill_p99_us",
        "fill_max_us",
        "size_kb",
        "load_ms",
        "load_fill_ms",
    )
    table = Table(title="moonmaskc and peers (compile with the vocabulary loaded; fill per step)")
    for column in ("tokenizer", "schema", "engine", *columns, "steps", "note"):
        table.add_column(column, justify="right" if column in columns else "left")
    for row in rows:
        cells = [f"{row[c]:.1f}" if isinstance(row.get(c), float) else "-" for c in columns]
        table.add_row(
            row["tokenizer"],
            row["schema"],
            row["engine"],
            *cells,
            row.get("steps", "-"),
            row.get("error", ""),
        )
    console.print(table)
    ratios = Table(
        title="ratios: moonmaskc / peer (goals: compile <= 1.0x xgrammar and <= 0.1x outlines-core; "
        "fill p50 <= 0.5x xgrammar, fill max < 20 us)"
    )
    for column in (
        "tokenizer",
        "schema",
        "compile / xgrammar",
        "compile / xgrammar-nonstrict",
        "compile / outlines-core",
        "fill p50 / xgrammar",
        "fill max / xgrammar",
        "moonmaskc fill max",
        "moonmaskc first fill",
    ):
        ratios.add_column(column)
    for ours in (row for row in rows if row["engine"] == "moonmaskc"):
        ratios.add_row(
            ours["tokenizer"],
            ours["schema"],
            ratio(ours, peer_row(rows, "xgrammar", ours), "compile_ms"),
            ratio(ours, peer_row(rows, "xgrammar-nonstrict", ours), "compile_ms"),
            ratio(ours, peer_row(rows, "outlines-core", ours), "compile_ms"),
            ratio(ours, peer_row(rows, "xgrammar", ours), "fill_p50_us"),
            ratio(ours, peer_row(rows, "xgrammar", ours), "fill_max_us"),
            f"{ours.get('fill_max_us', float('nan')):.1f} us",
            f"{ours.get('fill_first_us', float('nan')):.1f} us",
        )
    console.print(ratios)
    console.print(goal_summary(rows))


GOALS: list[tuple[str, str, str | None, float]] = [
    # (label, moonmaskc figure, peer or None for an absolute bound, bound)
    ("compile <= 0.5x xgrammar", "compile_ms", "xgrammar", 0.5),
    ("compile <= 1.0x xgrammar", "compile_ms", "xgrammar", 1.0),
    ("compile <= 1.0x xgrammar with strict_mode=False", "compile_ms", "xgrammar-nonstrict", 1.0),
    ("compile <= 0.1x outlines-core", "compile_ms", "outlines-core", 0.1),
    ("fill p50 <= 0.5x xgrammar", "fill_p50_us", "xgrammar", 0.5),
    ("fill max < 20 us (after the first step)", "fill_max_us", None, 20.0),
    ("first fill < 20 us", "fill_first_us", None, 20.0),
    ("load + first fill (median) < llguidance from text + first mask", "load_fill_ms", "llguidance", 1.0),
    ("load + first fill (median) <= 1 ms (the GPT-2 goal)", "load_fill_us", None, 1000.0),
    ("load + first fill (median) <= 2 ms (the Llama-3 goal)", "load_fill_us", None, 2000.0),
]


def markdown_rows(rows: list[Figures]) -> str:
    """Every row as a Markdown table (the form docs/runtime.md quotes)."""
    header = (
        "| tokenizer | schema | engine | compile ms | first fill µs | fill p50 µs | fill p99 µs "
        "| fill max µs | size KB | load ms | steps |"
    )
    lines = [header, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]

    def cell(row: Figures, key: str, digits: int) -> str:
        value = row.get(key)
        return f"{value:.{digits}f}" if isinstance(value, float) else "-"

    for row in rows:
        if "error" in row:
            note = row["error"].replace("|", "/")
            lines.append(f"| {row['tokenizer']} | {row['schema']} | {row['engine']} | {note} |||||||| - |")
            continue
        lines.append(
            f"| {row['tokenizer']} | {row['schema']} | {row['engine']} | {cell(row, 'compile_ms', 1)} "
            f"| {cell(row, 'fill_first_us', 1)} | {cell(row, 'fill_p50_us', 2)} "
            f"| {cell(row, 'fill_p99_us', 1)} "
            f"| {cell(row, 'fill_max_us', 1)} | {cell(row, 'size_kb', 0)} | {cell(row, 'load_ms', 1)} "
            f"| {row.get('steps', '-')} |"
        )
    return "\n".join(lines) + "\n"


def subset_of(schema: str) -> str:
    """``Github_medium`` for ``Github_medium/o1.json``; ``examples`` for the example schemas."""
    return schema.split("/", 1)[0] if "/" in schema else "examples"


def markdown_subsets(rows: list[Figures]) -> str:
    """Medians per tokenizer and subset, over the schemas that moonmaskc and the peer both compiled
    (fills: both stepped through the same steps), as a Markdown table."""
    lines = [
        "| tokenizer | subset | moonmaskc compiled | compile ms: moonmaskc | xgrammar "
        "| xgrammar strict_mode=False | moonmaskc / xgrammar | moonmaskc / xgrammar strict_mode=False "
        "| fill p50 µs: moonmaskc | xgrammar |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def median(values: list[float], digits: int, unit: str = "") -> str:
        return f"{float(np.median(values)):.{digits}f}{unit}" if values else "-"

    groups = dict.fromkeys((row["tokenizer"], subset_of(row["schema"])) for row in rows)
    for tokenizer, subset in groups:
        ours = [
            r
            for r in rows
            if r["engine"] == "moonmaskc" and r["tokenizer"] == tokenizer and subset_of(r["schema"]) == subset
        ]
        compiled = [r for r in ours if "error" not in r and "compile_ms" in r]
        cells = [f"{len(compiled)}/{len(ours)}", median([r["compile_ms"] for r in compiled], 0)]
        ratios = []
        for engine in ("xgrammar", "xgrammar-nonstrict"):
            pairs = [(r, peer_row(rows, engine, r)) for r in compiled]
            both = [(r, t) for r, t in pairs if t is not None and t.get("compile_ms")]
            cells.append(median([t["compile_ms"] for _, t in both], 1))
            ratios.append(median([r["compile_ms"] / t["compile_ms"] for r, t in both], 2, "x"))
        fills = [
            (r["fill_p50_us"], t["fill_p50_us"])
            for r in compiled
            if (t := peer_row(rows, "xgrammar", r)) is not None
            and "fill_p50_us" in r
            and t.get("fill_p50_us")
            and t.get("steps") == r.get("steps")
        ]
        cells += ratios
        cells += [median([a for a, _ in fills], 2), median([b for _, b in fills], 2)]
        lines.append(f"| {tokenizer} | {subset} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def goal_summary(rows: list[Figures]) -> Any:
    """Per tokenizer and goal: on how many schemas moonmaskc meets it, and the median figure."""
    from rich.table import Table

    table = Table(
        title="goals: schemas where moonmaskc meets each, of those both engines compiled (fills: of those "
        "both engines stepped through the whole trace), and the median"
    )
    for column in ("tokenizer", "goal", "met", "median"):
        table.add_column(column)
    for tokenizer in dict.fromkeys(row["tokenizer"] for row in rows):
        ours = [r for r in rows if r["tokenizer"] == tokenizer and r["engine"] == "moonmaskc"]
        refused = sum("error" in r for r in ours)
        for label, key, engine, bound in GOALS:
            values: list[float] = []
            for row in ours:
                if key not in row:
                    continue
                if engine is None:
                    values.append(row[key])
                    continue
                theirs = peer_row(rows, engine, row)
                if theirs is None or not theirs.get(key):
                    continue
                if key.startswith("fill") and theirs.get("steps") != row.get("steps"):
                    continue  # the peer refused part of the trace: its fills are not of the same steps
                values.append(row[key] / theirs[key])
            met = sum(value <= bound if engine else value < bound for value in values)
            unit = "x" if engine else " us"
            median = f"{float(np.median(values)):.2f}{unit}" if values else "-"
            table.add_row(tokenizer, label, f"{met}/{len(values)}", median)
        table.add_row(tokenizer, "refused by moonmaskc", str(refused), "")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tokenizers", nargs="+", default=["gpt2", "llama3"])
    parser.add_argument("--schemas", nargs="*", type=Path, default=DEFAULT_SCHEMAS)
    parser.add_argument(
        "--jsonschemabench",
        nargs="+",
        default=[],
        metavar="SUBSET:N",
        help="also the first N schemas (natural order) of these JSONSchemaBench subsets, e.g. Github_easy:5",
    )
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--repeat", type=int, default=3, help="compile/load runs; the best counts")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--markdown", type=Path, help="also write every row as a Markdown table")
    parser.add_argument(
        "--cold",
        type=int,
        metavar="MB",
        help="before every fill, write over a buffer of MB megabytes (more than the last-level "
        "cache), as a model's forward pass would: fills as a decoding loop sees them",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="PATH",
        help="print (and with --markdown write) the tables of an earlier run's --json file, not running",
    )
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="moonmaskc ignores, with a warning, the keywords it cannot compile (as the peers do silently)",
    )
    args = parser.parse_args()
    if args.from_json:
        rows = json.loads(args.from_json.read_text())
    else:
        evict = cache_evictor(args.cold) if args.cold else None
        schemas = [*args.schemas, *benchmark_schemas(args.jsonschemabench)]
        rows = run(args.tokenizers, schemas, args.repeat, args.engines, evict, args.lenient)
    print_tables(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    if args.markdown:
        args.markdown.write_text(markdown_rows(rows) + "\n" + markdown_subsets(rows))


if __name__ == "__main__":
    main()
