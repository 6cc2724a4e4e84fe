"""JSONSchemaBench coverage: how many schemas compile, how fast, how many DFA states; beside the peers.

Takes: ``$MOONMASKC_DATA/schemas/jsonschemabench/<subset>/*.json`` (``MOONMASKC_DATA`` defaults to
``../shared/data``; ``--data DIR`` names another schema folder) and, unless ``--tokenizer none``,
the tokenizer ``$MOONMASKC_DATA/tokenizers/<name>.json`` (``gpt2``, the default, or ``llama3``).
Peers (outlines-core, xgrammar, llguidance, with transformers: the ``bench`` extra) run when
importable, else their cells say "not installed".

Hands on: a table per run, one row per subset: moonmaskc's compiled / total in strict mode
without any warning ("strict, no warning") and with warnings ("strict, warned": annotations the
language does not depend on, such as unknown keywords, unknown formats, OpenAPI keywords, keywords
switched off by an underscore; both are exact) and in ``--lenient`` mode (strict compiles
included), median and p90 compile time and DFA states (strict successes only); for each peer its
compiled / total with median and p90 compile time (its own successes); and the ratios moonmaskc /
xgrammar of the medians and of the p90s (each engine's figure over its own successes, so the two
sides may cover different schemas). The title names the timing mode. After it, the moonmaskc
totals over all subsets and the strict refusals grouped by reason (``refusal_reason``: the keyword
or the bound the error names, with what stopped it, e.g. ``oneOf: branches could not be proven
disjoint``, ``uniqueItems: ...``, ``format 'regex'``, ``pattern: lookaround``, ``limit max-states
(DFA)``, ``timeout``), most frequent first, the ``REASONS_SHOWN`` first: the total, how many of
them compile with ``--lenient``, and the count per subset. ``--json FILE`` also writes one object
per subset (seconds; ``strict_exact``, ``strict_warned``, ``warning_kinds``, ``refusals`` and
``refusals_lenient_ok`` by reason, ``median_stage_seconds``; per-schema outcomes with their
``warnings`` by kind and ``stages`` (front end, DFA and token table seconds, as the artifact's
metadata times them), or their ``reason``, ``refusal`` and, when the lenient compile failed too,
``lenient_refusal``). A second table gives the median of each of moonmaskc's stages per subset.

Timing modes (``--tokenizer``):

- ``gpt2`` / ``llama3``: every engine as a user meets it. The vocabulary and each engine's
  tokenizer object are built once per worker, outside the timing (moonmaskc's ``Vocabulary`` and
  byte trie; xgrammar's ``TokenizerInfo`` and ``GrammarCompiler`` with its cache off; llguidance's
  ``LLTokenizer``; outlines-core's ``Vocabulary``, as ``benchmarks/peers.py`` builds them). The
  timed part is the compile with that vocabulary, the tokenizer-dependent work included, and the
  first mask filled: moonmaskc ``compile_schema(text, tokenizer=vocabulary)`` (schema, DFA, token
  table), a runtime ``Guide`` and ``fill_bitmask`` of the start state; xgrammar
  ``compile_json_schema`` (default ``strict_mode``), a ``GrammarMatcher`` and its first
  ``fill_next_token_bitmask``; llguidance an ``LLMatcher`` and its first mask; outlines-core
  ``build_regex_from_schema``, an ``Index`` over the vocabulary, a ``Guide`` and ``write_mask_into``.
- ``none``: quick runs without a vocabulary, not comparable across engines: moonmaskc
  ``compile_schema(text, tokenizer=None)`` (schema to minimal DFA, with the work bound and, under
  ``lenient``, the rounds that drop costly length bounds, as a user gets them); peers their grammar
  (or regex) construction only.

Counting: moonmaskc refuses with a ``MoonmaskError`` (strict) and is retried with ``lenient=True``;
a peer refuses by raising; llguidance also when its grammar does not validate or its warnings say
"Unimplemented" (checked before the timed compile, outside the timing) or its matcher is in error.

Every compile runs in a worker process (one per engine, kept alive between schemas) with a
per-schema time limit: a compile that hangs is killed and a library that crashes the process loses
that one schema, never the run; the restarted worker loads its vocabulary again outside any limit.
A schema whose strict compile timed out is not retried leniently (the lenient walk does the same
work up to that point) and counts as a failure in both columns. The first schema with a string
``format`` in a worker also builds moonmaskc's format automata (once per process).

    PYTHONPATH=. python benchmarks/coverage.py [--subset NAME]... [--limit N] [--timeout S]
        [--tokenizer gpt2|llama3|none] [--peers all|none|NAME,...] [--json out.json] [--verbose]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import re
import statistics
import time
import warnings
from collections import Counter
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

PEERS = {"outlines-core": "outlines_core", "xgrammar": "xgrammar", "llguidance": "llguidance"}
ENGINES = ("moonmaskc", *PEERS)
TOKENIZERS = ("gpt2", "llama3", "none")
WARM_UP_SECONDS = 300.0  # a worker's imports and vocabulary (llama3: several seconds per engine)

REASONS_SHOWN = 25  # rows of the refusal-reason table (the JSON keeps them all)

# A job's outcome: (status, seconds, states, reason, info). status is "ok", "refused", "timeout" or
# "crash"; info is moonmaskc's ``{"why": refusal_reason}`` or ``{"warnings": {kind: count}}``.
Outcome = tuple[str, float, int, str, dict[str, Any]]
# Inside a worker: (schema text, lenient) -> (DFA states, 0 for a peer, or -1 if refused; reason; info).
Compile = Callable[[str, bool], tuple[int, str, dict[str, Any]]]
# Inside a worker, before the timing: schema text -> a refusal reason, or "" to go on and compile.
Precheck = Callable[[str], str]


# ---------------------------------------------------------------------------------------------
# What runs inside a worker
# ---------------------------------------------------------------------------------------------


def _reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".split("\n")[0][:160]


def _words(construct: str, keep_quoted: bool = False) -> str:
    """A construct's fixed words: ``"lookaround '(?!'"`` -> ``lookaround``, ``"$ref '#/a'"`` ->
    ``$ref``, ``"multipleOf value 0.01"`` -> ``multipleOf value``."""
    if not keep_quoted:
        construct = re.sub(r"'[^']*'", " ", construct)
    return " ".join(w for w in construct.split() if re.fullmatch(r"\$?[A-Za-z][A-Za-z_-]*|'[^']*'", w))


def _clause(text: str) -> str:
    """The first clause of a message, numbers as N: what stays the same from schema to schema."""
    text = re.split(r": |; |, | \(", text.split("\n")[0], maxsplit=1)[0]
    return re.sub(r"\d+", "N", text).strip()[:70]


def _message(error: BaseException) -> str:
    """An error's own message, without the source line and caret a ``SourceError`` appends."""
    return str(getattr(error, "message", None) or error)


# What a LimitError's message says hit the bound (the first one named counts).
LIMIT_SUBJECTS = ("maxLength", "minLength", "multipleOf", "patternProperties", "product", "NFA", "DFA")


def refusal_reason(error: BaseException) -> str:
    """Why moonmaskc refused a schema, one short name to count refusals by.

    A ``LimitError``: its ``bound``, with what hit it when its message names one of
    ``LIMIT_SUBJECTS`` (``limit max-states (maxLength)``, ``limit max-states (DFA)``).
    An ``UnsupportedError``: the keyword its ``construct`` names, with what stopped it: the error
    of the keyword's builder when the policy raised the keyword's error while handling it (a regex
    construct for ``pattern``, the format for ``format``: ``pattern: lookaround``,
    ``format 'regex'``), else the first clause of the last part of its reason (``oneOf: branches
    could not be proven disjoint``). Anything else: the first clause of its message. JSON pointers,
    the quoted values of a construct (not a format's name) and numbers (written N) are left out,
    so that one cause is one name."""
    from moonmaskc.errors import LimitError, UnsupportedError

    if isinstance(error, RecursionError):
        return "recursion limit"
    if isinstance(error, LimitError):
        bound = f"limit {error.bound.replace('_', '-')}"
        first = re.split(r"; |\. ", error.message)[0]  # not the costly strings listed after "; "
        found = sorted((m.start(), s) for s in LIMIT_SUBJECTS if (m := re.search(rf"\b{s}\b", first)))
        return f"{bound} ({found[0][1]})" if found else bound
    if not isinstance(error, UnsupportedError):
        return _clause(_message(error)) or type(error).__name__
    quoted = re.fullmatch(r"keyword '(.+)'", error.construct)
    keyword = quoted.group(1) if quoted else _words(error.construct)
    # Context.refuse raises the keyword's error while the builder's (a moonmaskc one) is handled.
    inner = error.__context__
    if isinstance(inner, UnsupportedError):
        detail = _words(inner.construct, keep_quoted=inner.construct.startswith(keyword))
        if detail.startswith(keyword):
            return detail
    elif inner is not None and type(inner).__module__.startswith("moonmaskc"):
        detail = _clause(_message(inner)) or type(inner).__name__
    else:
        prefix = f"unsupported {error.construct}" + (f" at {error.where}" if error.where else "") + ": "
        detail = _clause(error.message.removeprefix(prefix).rsplit(": ", 1)[-1])
    return f"{keyword}: {detail}" if detail else keyword


_WARNING_KINDS = ("unknown keyword", "unknown format", "OpenAPI keyword", "disabled keyword")


def warning_kinds(warnings: list[str]) -> dict[str, int]:
    """A strict compile's warnings counted by kind (unknown keyword, unknown format, OpenAPI
    keyword, disabled keyword, ...): annotations the language does not depend on."""
    kinds: Counter[str] = Counter()
    for warning in warnings:
        kinds[next((k for k in _WARNING_KINDS if warning.startswith(k)), _clause(warning))] += 1
    return dict(kinds)


def _moonmaskc_dfa_only() -> Compile:
    """``--tokenizer none``: the public compile to the minimal DFA, no token table
    (``compile_schema(text, tokenizer=None)``: the work bound and the lenient rounds included)."""
    import moonmaskc
    from moonmaskc.errors import MoonmaskError

    def compile_one(text: str, lenient: bool) -> tuple[int, str, dict[str, Any]]:
        try:
            artifact = moonmaskc.compile_schema(text, tokenizer=None, lenient=lenient)
        except (MoonmaskError, RecursionError) as error:
            return -1, str(error).split("\n")[0][:160] or type(error).__name__, {"why": refusal_reason(error)}
        return artifact.dfa.num_states, "", {"warnings": warning_kinds(artifact.metadata["warnings"])}

    return compile_one


def _moonmaskc_with_vocabulary(vocabulary: Any) -> Compile:
    """The public compile with the loaded vocabulary (token table included), then a runtime
    ``Guide`` and the start state's mask into a preallocated bitmask."""
    import numpy as np

    import moonmaskc
    from moonmaskc.errors import MoonmaskError
    from moonmaskc.runtime import Guide

    bitmask = np.zeros((1, (vocabulary.size + 31) // 32), dtype=np.int32)

    def compile_one(text: str, lenient: bool) -> tuple[int, str, dict[str, Any]]:
        try:
            artifact = moonmaskc.compile_schema(text, tokenizer=vocabulary, lenient=lenient)
            guide = Guide.from_artifact(artifact)
            guide.fill_bitmask(guide.start(), bitmask, 0)
        except (MoonmaskError, RecursionError) as error:
            return -1, str(error).split("\n")[0][:160] or type(error).__name__, {"why": refusal_reason(error)}
        return (
            artifact.dfa.num_states,
            "",
            {
                "warnings": warning_kinds(artifact.metadata["warnings"]),
                "stages": stage_seconds(artifact.metadata),
            },
        )

    return compile_one


STAGES = ("frontend_s", "dfa_s", "token_table_s")
"""The stages of a compile that ``metadata["timings"]`` times (front end, DFA, token table)."""


def stage_seconds(metadata: dict[str, Any]) -> dict[str, float]:
    """The seconds of each of ``STAGES`` that the artifact's metadata records."""
    timings = metadata.get("timings", {})
    return {stage: float(timings[stage]) for stage in STAGES if stage in timings}


def _peer_grammar_only(peer: str) -> tuple[Compile, Precheck | None]:  # pragma: no cover - bench extra
    """``--tokenizer none``: each peer's grammar (or regex) from the schema, no vocabulary."""

    def compile_one(text: str, lenient: bool) -> tuple[int, str, dict[str, Any]]:
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
                    return -1, "; ".join(messages)[:160], {}
            elif peer == "xgrammar":
                import xgrammar

                xgrammar.Grammar.from_json_schema(text)
            else:
                raise ValueError(peer)
        except Exception as error:
            return -1, _reason(error), {}
        return 0, "", {}

    return compile_one, None


def _peer_with_tokenizer(
    peer: str, vocabulary: Any, tokenizer_file: Path
) -> tuple[Compile, Precheck | None]:  # pragma: no cover - needs the bench extra
    """Each peer's tokenizer object built once (as ``benchmarks/peers.py`` builds it); the
    returned compile is the schema compiled against it and the first mask filled."""
    import numpy as np

    size = vocabulary.size
    if peer == "outlines-core":
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema

        tokens: dict[bytes, list[int]] = {}
        for token_id, data in enumerate(vocabulary.token_bytes):
            if data and token_id != vocabulary.eos_id:
                tokens.setdefault(data, []).append(token_id)
        oc_vocabulary = outlines_core.Vocabulary(vocabulary.eos_id, tokens)
        words = (size + 31) // 32
        mask = np.zeros(words, dtype=np.int32)

        def compile_outlines(text: str, lenient: bool) -> tuple[int, str, dict[str, Any]]:
            try:
                index = outlines_core.Index(build_regex_from_schema(text), oc_vocabulary)
                outlines_core.Guide(index).write_mask_into(mask.ctypes.data, words, 4)
            except Exception as error:
                return -1, _reason(error), {}
            return 0, "", {}

        return compile_outlines, None

    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_file))
    if peer == "xgrammar":
        import xgrammar

        with warnings.catch_warnings():  # "stop_token_ids ... will be automatically detected"
            warnings.filterwarnings("ignore", message=".*stop_token_ids", category=UserWarning)
            info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=size)
        compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
        xg_bitmask = xgrammar.allocate_token_bitmask(1, size)

        def compile_xgrammar(text: str, lenient: bool) -> tuple[int, str, dict[str, Any]]:
            try:
                compiled = compiler.compile_json_schema(text)
                xgrammar.GrammarMatcher(compiled).fill_next_token_bitmask(xg_bitmask)
            except Exception as error:
                return -1, _reason(error), {}
            return 0, "", {}

        return compile_xgrammar, None
    if peer == "llguidance":
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        ll_tokenizer = llguidance.hf.from_tokenizer(hf, n_vocab=size)
        ll_bitmask = llguidance.numpy.allocate_token_bitmask(1, size)

        def precheck(text: str) -> str:
            try:
                grammar = llguidance.LLMatcher.grammar_from_json_schema(text)
                # (is_error, messages); "Unimplemented keys" warnings mean the schema was not honoured.
                is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
            except Exception as error:
                return _reason(error)
            if is_error or any("Unimplemented" in m for m in messages):
                return "; ".join(messages)[:160] or "invalid grammar"
            return ""

        def compile_llguidance(text: str, lenient: bool) -> tuple[int, str, dict[str, Any]]:
            try:
                grammar = llguidance.LLMatcher.grammar_from_json_schema(text)
                matcher = llguidance.LLMatcher(ll_tokenizer, grammar)
                llguidance.numpy.fill_next_token_bitmask(matcher, ll_bitmask)
            except Exception as error:
                return -1, _reason(error), {}
            if matcher.is_error():  # grammar errors and resource limits, never raised
                return -1, matcher.get_error().split("\n")[0][:160] or "matcher error", {}
            return 0, "", {}

        return compile_llguidance, precheck
    raise ValueError(peer)


def _engine(engine: str, tokenizer_file: Path | None) -> tuple[Compile, Precheck | None]:
    """The worker's compile function (and precheck), with everything per-vocabulary built here."""
    if tokenizer_file is None:
        if engine in PEERS:
            importlib.import_module(PEERS[engine])
            return _peer_grammar_only(engine)
        import moonmaskc.frontends.schema  # noqa: F401  (import cost out of the first timing)

        return _moonmaskc_dfa_only(), None
    from moonmaskc.vocabulary import load_vocabulary

    vocabulary = load_vocabulary(tokenizer_file)
    if engine in PEERS:
        return _peer_with_tokenizer(engine, vocabulary, tokenizer_file)
    return _moonmaskc_with_vocabulary(vocabulary), None


def _serve(connection: Connection, engine: str, tokenizer_file: Path | None) -> None:
    """Worker loop: receive (schema text, lenient), compile, send back (states, seconds, reason, info)."""
    compile_one, precheck = _engine(engine, tokenizer_file)
    while True:
        try:
            text, lenient = connection.recv()
        except EOFError:
            return
        refusal = precheck(text) if precheck is not None else ""
        if refusal:
            connection.send((-1, 0.0, refusal, {}))
            continue
        started = time.perf_counter()
        states, reason, info = compile_one(text, lenient)
        connection.send((states, time.perf_counter() - started, reason, info))


# ---------------------------------------------------------------------------------------------
# The parent side
# ---------------------------------------------------------------------------------------------


class Worker:
    """One engine in its own process, restarted after a crash or a time-out."""

    def __init__(self, engine: str, tokenizer_file: Path | None = None) -> None:
        self.engine = engine
        self.tokenizer_file = tokenizer_file
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._connection: Connection | None = None

    def _start(self) -> Connection:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(
            target=_serve, args=(child, self.engine, self.tokenizer_file), daemon=True
        )
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
            self.warm_up()  # a restarted worker's imports and vocabulary count in no time limit
        connection = self._connection or self._start()
        started = time.perf_counter()
        connection.send((text, lenient))
        if not connection.poll(timeout):
            self.stop()
            return "timeout", timeout, 0, "timeout", {"why": "timeout"}
        try:
            states, seconds, reason, info = connection.recv()
        except (EOFError, ConnectionResetError):
            code = self._process.exitcode if self._process is not None else None
            self.stop()
            died = f"worker died (exit code {code})"
            return "crash", time.perf_counter() - started, 0, died, {"why": "crash"}
        if states < 0:
            return "refused", seconds, 0, reason, info
        return "ok", seconds, states, "", info

    def warm_up(self) -> None:
        """Start the process and wait for its imports, its vocabulary and tokenizer objects and a
        first compile (moonmaskc's byte trie), so that they count in no time limit."""
        connection = self._connection or self._start()
        connection.send(("true", False))
        if not connection.poll(WARM_UP_SECONDS):
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


def timing_mode(tokenizer: str) -> str:
    """What the times measure, for the table title and the JSON rows."""
    if tokenizer == "none":
        return (
            "no tokenizer: moonmaskc schema to minimal DFA, peers grammar/regex construction only "
            "(quick run, not comparable across engines)"
        )
    return (
        f"{tokenizer} vocabulary loaded once per worker (outside the timing); "
        "timed: compile with the vocabulary (token table / tokenizer-dependent work) + first mask filled"
    )


def main() -> None:
    default_data = Path(
        os.environ.get("MOONMASKC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=default_data / "schemas" / "jsonschemabench")
    parser.add_argument("--subset", action="append", help="a subset folder (repeatable); default: all")
    parser.add_argument("--limit", type=int, default=None, help="the first N schemas of each subset")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per schema and engine")
    parser.add_argument("--peers", default="all", help="all, none, or a comma-separated list")
    parser.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        default="gpt2",
        help="vocabulary loaded once per worker; compile times include the token table and the first "
        "mask (default gpt2); none: schema to DFA only, peers grammar only (quick, not comparable)",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--verbose", action="store_true", help="one line per schema")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data} is absent: set MOONMASKC_DATA to the shared data folder")
    tokenizer_file: Path | None = None
    if args.tokenizer != "none":
        tokenizer_file = default_data / "tokenizers" / f"{args.tokenizer}.json"
        if not tokenizer_file.is_file():
            raise SystemExit(f"{tokenizer_file} is absent: set MOONMASKC_DATA to the shared data folder")
    subsets = args.subset or sorted(p.name for p in args.data.iterdir() if p.is_dir())
    wanted = _peer_names(args.peers)
    available = {name: importlib.util.find_spec(PEERS[name]) is not None for name in PEERS}
    if tokenizer_file is not None and importlib.util.find_spec("transformers") is None:
        for name in ("xgrammar", "llguidance"):  # their tokenizer objects come from a transformers one
            available[name] = False
    peers = [name for name in wanted if available[name]]
    workers = {engine: Worker(engine, tokenizer_file) for engine in ("moonmaskc", *peers)}
    for worker in workers.values():
        worker.warm_up()
    rows: list[dict[str, Any]] = []
    print(f"JSONSchemaBench coverage; timing: {timing_mode(args.tokenizer)}")
    print(f"time limit {args.timeout:g} s per schema and engine; peers: {', '.join(peers) or 'none'}")
    ratio_header = " moonmaskc / xgrammar (median, p90, per schema) |" if "xgrammar" in wanted else ""
    print(
        "| subset | strict, no warning | strict, warned | lenient | median s | p90 s | median states "
        "| p90 states |" + "".join(f" {p} (median, p90 s) |" for p in wanted) + ratio_header
    )
    print("|" + "---|" * (8 + len(wanted) + bool(ratio_header)))
    started_run = time.perf_counter()
    try:
        for subset in subsets:
            rows.append(_subset_row(args, subset, wanted, available, workers))
    finally:
        for worker in workers.values():
            worker.stop()
    print(f"total wall time {time.perf_counter() - started_run:.0f} s")
    print_stages(rows)
    print_refusals(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


def print_stages(rows: list[dict[str, Any]]) -> None:
    """Where moonmaskc's time goes: per subset, the median seconds of each stage of its strict
    compiles (each stage's median on its own, so they need not add up to the median compile)."""
    if not any(row.get("median_stage_seconds") for row in rows):
        return
    print("\nmoonmaskc's stages, median ms per subset (strict compiles)")
    print("| subset | front end | DFA | token table | compile |")
    print("|---|---|---|---|---|")
    for row in rows:
        medians = row.get("median_stage_seconds", {})
        cells = [f"{medians[stage] * 1e3:.1f}" if stage in medians else "-" for stage in STAGES]
        total = row["median_seconds"]
        print(f"| {row['subset']} | {' | '.join(cells)} | {'-' if total is None else f'{total * 1e3:.1f}'} |")


def print_refusals(rows: list[dict[str, Any]]) -> None:
    """The totals of the main table's moonmaskc columns, then the strict refusals (time-outs and
    crashes included) by reason, most frequent first: in total, how many of them ``--lenient``
    compiled, and per subset."""
    total: Counter[str] = Counter()
    rescued: Counter[str] = Counter()
    for row in rows:
        total.update(row["refusals"])
        rescued.update(row["refusals_lenient_ok"])
    count = sum(row["total"] for row in rows)
    exact, warned = sum(row["strict_exact"] for row in rows), sum(row["strict_warned"] for row in rows)
    lenient = sum(row["lenient"] for row in rows)
    print(
        f"\nall subsets: strict, no warning {exact}/{count}; strict, warned {warned}/{count}; "
        f"lenient {lenient}/{count}; not compiled in strict mode {sum(total.values())}/{count}"
    )
    if not total:
        return
    print("\nStrict refusals, time-outs and crashes by reason (lenient: how many compile with --lenient)")
    print("| reason | total | lenient |" + "".join(f" {row['subset']} |" for row in rows))
    print("|" + "---|" * (3 + len(rows)))
    shown = total.most_common(REASONS_SHOWN)
    rest = [why for why in total if why not in dict(shown)]
    for why, n in shown:
        cells = "".join(f" {row['refusals'].get(why, '')} |" for row in rows)
        print(f"| {why} | {n} | {rescued[why]} |" + cells)
    if rest:
        cells = "".join(f" {sum(row['refusals'].get(w, 0) for w in rest) or ''} |" for row in rows)
        print(
            f"| other ({len(rest)} reasons) | {sum(total[w] for w in rest)} | "
            f"{sum(rescued[w] for w in rest)} |" + cells
        )
    print_lenient_refusals(rows)


def print_lenient_refusals(rows: list[dict[str, Any]]) -> None:
    """What the schemas that ``--lenient`` does not compile either stop at, by reason and subset."""
    per_subset = {
        row["subset"]: Counter(s["lenient_refusal"] for s in row["schemas"] if s.get("lenient_refusal"))
        for row in rows
    }
    total: Counter[str] = sum(per_subset.values(), Counter())
    if not total:
        return
    print("\nLenient refusals and time-outs by reason (schemas no mode compiles)")
    print("| reason | total |" + "".join(f" {row['subset']} |" for row in rows))
    print("|" + "---|" * (2 + len(rows)))
    for why, n in total.most_common():
        print(f"| {why} | {n} |" + "".join(f" {per_subset[row['subset']].get(why, '')} |" for row in rows))


def _ratio(ours: list[float], theirs: list[float], q: float) -> float | None:
    """moonmaskc's quantile ``q`` over xgrammar's (each over its own successful compiles)."""
    if not ours or not theirs or _quantile(theirs, q) <= 0:
        return None
    return _quantile(ours, q) / _quantile(theirs, q)


def _paired_ratio(per_schema: list[dict[str, Any]]) -> float | None:
    """The median over the schemas that both moonmaskc (strict) and xgrammar compiled of
    moonmaskc's time over xgrammar's: schema by schema, so less moved by which schemas either
    engine refuses and by drift between the engines' medians."""
    ratios = [
        record["seconds"] / record["xgrammar_seconds"]
        for record in per_schema
        if record.get("strict") == "ok" and record.get("xgrammar") == "ok" and record.get("xgrammar_seconds")
    ]
    return statistics.median(ratios) if ratios else None


def _subset_row(
    args: argparse.Namespace,
    subset: str,
    wanted: list[str],
    available: dict[str, bool],
    workers: dict[str, Worker],
) -> dict[str, Any]:
    files = sorted((args.data / subset).glob("*.json"))[: args.limit]
    exact = warned = lenient = 0
    times: list[float] = []
    states: list[float] = []
    stage_times: dict[str, list[float]] = {stage: [] for stage in STAGES}
    refusals: Counter[str] = Counter()  # normalised reason -> schemas refused in strict mode
    rescued: Counter[str] = Counter()  # of those, compiled under --lenient
    kinds: Counter[str] = Counter()  # warning kind -> strict compiles warned of it
    peer_ok = dict.fromkeys(wanted, 0)
    peer_times: dict[str, list[float]] = {p: [] for p in wanted}
    peer_failures: dict[str, dict[str, int]] = {p: {} for p in wanted}
    per_schema: list[dict[str, Any]] = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        status, seconds, n_states, why, info = workers["moonmaskc"].run(text, False, args.timeout)
        record: dict[str, Any] = {"file": path.name, "strict": status, "seconds": round(seconds, 4)}
        if status == "ok":
            warnings = info.get("warnings", {})
            exact += not warnings
            warned += bool(warnings)
            kinds.update(warnings.keys())
            lenient += 1
            times.append(seconds)
            states.append(n_states)
            record.update(states=n_states, warnings=warnings)
            stages = info.get("stages", {})
            for stage, spent in stages.items():
                stage_times[stage].append(spent)
            if stages:
                record["stages"] = {stage: round(spent, 4) for stage, spent in stages.items()}
        else:
            refusals[info["why"]] += 1
            record.update(reason=why, refusal=info["why"])
            if status == "refused":
                lenient_status, *_, lenient_info = workers["moonmaskc"].run(text, True, args.timeout)
                lenient += lenient_status == "ok"
                rescued[info["why"]] += lenient_status == "ok"
                record["lenient"] = lenient_status
                if lenient_status != "ok":
                    record["lenient_refusal"] = lenient_info["why"]
        for peer in wanted:
            if peer not in workers:
                continue
            peer_status, peer_seconds, _, peer_why, _ = workers[peer].run(text, False, args.timeout)
            record[peer] = peer_status
            if peer_status == "ok":
                peer_ok[peer] += 1
                peer_times[peer].append(peer_seconds)
                record[f"{peer}_seconds"] = round(peer_seconds, 4)
            else:
                key = peer_status if peer_status != "refused" else peer_why.split(":")[0][:60]
                peer_failures[peer][key] = peer_failures[peer].get(key, 0) + 1
        per_schema.append(record)
        if args.verbose:
            print(f"  {subset}/{path.name}: {record}", flush=True)
    total = len(files)
    peer_cells = [
        (
            f"{peer_ok[p]}/{total} ({_quantile(peer_times[p], 0.5):.3f}, {_quantile(peer_times[p], 0.9):.3f})"
            if available[p]
            else "not installed"
        )
        for p in wanted
    ]
    xgrammar_times = peer_times.get("xgrammar", [])
    ratios = {
        "median": _ratio(times, xgrammar_times, 0.5),
        "p90": _ratio(times, xgrammar_times, 0.9),
        "per_schema_median": _paired_ratio(per_schema),
    }
    if "xgrammar" in wanted:
        peer_cells.append(
            ", ".join(f"{value:.2f}x" if value is not None else "-" for value in ratios.values())
        )
    print(
        f"| {subset} | {exact}/{total} | {warned}/{total} | {lenient}/{total} | "
        f"{_quantile(times, 0.5):.3f} | {_quantile(times, 0.9):.3f} | "
        f"{_quantile(states, 0.5):.0f} | {_quantile(states, 0.9):.0f} |"
        + "".join(f" {cell} |" for cell in peer_cells),
        flush=True,
    )
    return {
        "subset": subset,
        "tokenizer": args.tokenizer,
        "timing": timing_mode(args.tokenizer),
        "total": total,
        "strict": exact + warned,
        "strict_exact": exact,
        "strict_warned": warned,
        "lenient": lenient,
        "median_seconds": statistics.median(times) if times else None,
        "p90_seconds": _quantile(times, 0.9) if times else None,
        "median_states": statistics.median(states) if states else None,
        "median_stage_seconds": {
            stage: statistics.median(spent) for stage, spent in stage_times.items() if spent
        },
        "p90_states": _quantile(states, 0.9) if states else None,
        "peers": {p: (peer_ok[p] if available[p] else None) for p in wanted},
        "peer_median_seconds": {p: (statistics.median(t) if t else None) for p, t in peer_times.items()},
        "peer_p90_seconds": {p: (_quantile(t, 0.9) if t else None) for p, t in peer_times.items()},
        "moonmaskc_over_xgrammar": ratios if "xgrammar" in wanted else None,
        "warning_kinds": dict(kinds.most_common()),
        "refusals": dict(refusals.most_common()),
        "refusals_lenient_ok": {why: rescued[why] for why in refusals},
        "peer_failures": {
            p: dict(sorted(f.items(), key=lambda kv: -kv[1])[:5]) for p, f in peer_failures.items()
        },
        "schemas": per_schema,
    }


if __name__ == "__main__":
    main()
