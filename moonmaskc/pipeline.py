"""The one place that chains the stages: source -> front end -> IR -> minimal DFA -> token table.

Takes: a source (regex pattern, GBNF text, JSON Schema) and ``CompileOptions``. Hands on: an
in-memory ``Artifact`` (``.save(path)`` writes it; ``.match(text)`` answers at once). The CLI and the
public API call only this module, never the stages one by one.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from moonmaskc import ir
from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.counted import CountedRegionError, bounds_text, expand_markers
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.native import CoreFixed, core_name
from moonmaskc.automata.nested import (
    MAX_NEST_ENTRIES,
    NEST_CALL,
    NEST_OPEN_BYTES,
    NestRegionError,
    expand_nests,
)
from moonmaskc.errors import LimitError, MoonmaskError, SourceError
from moonmaskc.frontends import FrontendResult
from moonmaskc.frontends.deep import run_deep, shallow_text
from moonmaskc.gc_pause import collector_paused
from moonmaskc.limits import Limits
from moonmaskc.version import __version__

if TYPE_CHECKING:
    from moonmaskc.vocabulary import Vocabulary

Kind = Literal["regex", "gbnf", "schema"]
KINDS: tuple[Kind, ...] = ("regex", "gbnf", "schema")
GRAMMAR_TEXT_LIMIT = 200_000
ProgressCallback = Callable[[int, int], None]


@dataclass
class CompileOptions:
    """Everything that shapes a compile. ``tokenizer``: a spec for ``load_vocabulary`` or a
    ``Vocabulary``; the default ``"bytes"`` is the built-in 256-byte vocabulary; ``None`` builds
    the DFA only (no token table).

    ``--max-depth`` means two things, kept apart here: ``unroll_depth`` is how far a GBNF grammar's
    recursive rules unroll (None: recursion is refused); ``limits.max_depth`` (``ref_depth``) is how
    often a schema's ``$ref`` target may be re-entered and how deep values accepted by ``{}`` nest
    (default 3). ``make_options(max_depth=N)`` sets both.

    ``ref_roots`` (schema): URI prefix -> local folder, where references to other documents are
    read (the rest of the URI a path under the folder; see ``frontends/schema/refs.py``)."""

    limits: Limits = field(default_factory=Limits)
    unroll_depth: int | None = None
    start: str = "root"
    whitespace: str = "compact"
    lenient: bool = False
    refuse_unknown: bool = False
    ref_roots: dict[str, str] = field(default_factory=dict)
    # Lenient schema compiles: string length keywords (by pointer) dropped because the automaton
    # was past max_states and they cost the most; filled by the compile itself (``_lenient_rounds``).
    dropped_lengths: frozenset[str] = frozenset()
    tokenizer: Any = "bytes"
    eos: str | None = None
    # Schemas: plain strings with long length bounds as counted regions (``automata.counted``);
    # off again (with the reason) where the counter cannot run a region, or the token table cannot
    # serve it, and the bounds are written out instead.
    length_counters: bool = True
    counters_off: str | None = None
    uncounted: frozenset[tuple[int, int]] = frozenset()  # bounds a counter could not run
    # Schemas: free values (``{}``, open objects' other members) as nest regions of any depth
    # (``automata.nested``); off again, with the reason, where a stack cannot run one.
    free_value_stacks: bool = True
    stacks_off: str | None = None

    @property
    def ref_depth(self) -> int:
        """The schema's ``$ref`` depth (``Limits.max_depth``)."""
        return self.limits.max_depth

    @property
    def max_depth(self) -> int | None:
        """The GBNF unrolling depth under its option name (``unroll_depth``)."""
        return self.unroll_depth

    def describe(self, kind: Kind) -> dict[str, Any]:
        described: dict[str, Any] = {
            "max_states": self.limits.max_states,
            "max_repeat": self.limits.max_repeat,
            "max_table_cells": self.limits.max_table_cells,
            "max_work": self.limits.max_work,
            "max_nesting": self.limits.max_nesting,
        }
        if kind == "gbnf":
            described.update(start=self.start, max_depth=self.unroll_depth)
        if kind == "schema":
            described.update(whitespace=self.whitespace, lenient=self.lenient, max_depth=self.ref_depth)
            if self.refuse_unknown:
                described["refuse_unknown"] = True
            if not self.length_counters:
                described["length_counters"] = False
            if not self.free_value_stacks:
                described["free_value_stacks"] = False
            if self.ref_roots:
                described["ref_roots"] = dict(self.ref_roots)
        return described


DEFAULT_LIMITS = Limits()
"""The bounds of a compile that sets none (``Limits`` is frozen: one instance serves them all)."""


def make_options(**options: Any) -> CompileOptions:
    """``CompileOptions`` from keyword arguments (``max_states``, ``max_repeat``, ``max_depth``,
    ``max_table_cells``, ``max_work``, ``max_nesting``, ``start``, ``whitespace``, ``lenient``,
    ``refuse_unknown``, ``ref_roots``, ``tokenizer``, ``eos``, ``length_counters``,
    ``free_value_stacks``). ``max_depth``
    sets both depths (see ``CompileOptions``)."""
    known = {
        "max_work",
        "max_nesting",
        "max_states",
        "max_repeat",
        "max_depth",
        "max_table_cells",
        "start",
        "whitespace",
        "lenient",
        "refuse_unknown",
        "ref_roots",
        "tokenizer",
        "eos",
        "length_counters",
        "free_value_stacks",
    }
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown compile options: {', '.join(sorted(unknown))}")
    limit_args = {
        key: options[key]
        for key in ("max_states", "max_repeat", "max_table_cells", "max_work", "max_nesting")
        if options.get(key) is not None
    }
    for name in ("start", "whitespace", "eos"):
        if options.get(name) is not None and not isinstance(options[name], str):
            raise TypeError(f"{name} must be a string, not {options[name]!r}")
    max_depth = options.get("max_depth")
    if max_depth is not None:
        limit_args["max_depth"] = max_depth  # the schema's $ref depth
    return CompileOptions(
        limits=Limits(**limit_args) if limit_args else DEFAULT_LIMITS,
        unroll_depth=max_depth,  # GBNF recursion
        start=options.get("start") or "root",
        whitespace=options.get("whitespace") or "compact",
        lenient=bool(options.get("lenient", False)),
        refuse_unknown=bool(options.get("refuse_unknown", False)),
        ref_roots=_ref_roots(options.get("ref_roots")),
        tokenizer=options.get("tokenizer", "bytes"),
        eos=options.get("eos"),
        length_counters=bool(options.get("length_counters", True)),
        free_value_stacks=bool(options.get("free_value_stacks", True)),
    )


def _ref_roots(value: Any) -> dict[str, str]:
    """``ref_roots`` as URI prefix -> folder (a path-like turned into its text)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError("ref_roots must map URI prefixes to local folders, such as {PREFIX: DIR}")
    roots: dict[str, str] = {}
    for prefix, folder in value.items():
        if not isinstance(prefix, str) or not isinstance(folder, str | os.PathLike):
            raise TypeError(f"ref_roots maps URI prefixes (strings) to folders, not {prefix!r}: {folder!r}")
        roots[prefix] = os.fspath(folder)
    return roots


# Each front end is imported only when a source of its kind is compiled.
Frontend = Callable[[Any, CompileOptions], FrontendResult]


def _regex_frontend(source: Any, options: CompileOptions) -> FrontendResult:
    from moonmaskc.frontends import regex

    return regex.parse(_text(source, "regex"), options.limits)


def _gbnf_frontend(source: Any, options: CompileOptions) -> FrontendResult:
    from moonmaskc.frontends import gbnf

    text = _text(source, "GBNF grammar")
    return gbnf.parse(text, start=options.start, limits=options.limits, max_depth=options.unroll_depth)


def _text(source: Any, kind: str) -> str:
    """``source`` when it is text: a regex or a grammar is never made from another object's
    ``str()`` (``compile_regex(None)`` would match the text ``None``)."""
    if not isinstance(source, str):
        raise SourceError(f"a {kind} must be text (str), not {type(source).__name__}")
    return source


def _schema_frontend(source: Any, options: CompileOptions) -> FrontendResult:
    from moonmaskc.frontends.schema import compile_schema_ir

    return compile_schema_ir(
        source,
        whitespace=options.whitespace,
        lenient=options.lenient,
        refuse_unknown=options.refuse_unknown,
        limits=options.limits,
        ref_roots=options.ref_roots or None,
        dropped_lengths=options.dropped_lengths,
        length_counters=options.length_counters,
        uncounted=options.uncounted,
        nest_values=options.free_value_stacks,
    )


FRONTENDS: dict[Kind, Frontend] = {
    "regex": _regex_frontend,
    "gbnf": _gbnf_frontend,
    "schema": _schema_frontend,
}


def run_frontend(kind: Kind, source: Any, options: CompileOptions) -> FrontendResult:
    """The front end of ``kind`` (from ``FRONTENDS``) run on ``source``."""
    frontend = FRONTENDS.get(kind)
    if frontend is None:
        raise MoonmaskError(f"unknown source kind {kind!r}; choose one of {', '.join(KINDS)}")
    return frontend(source, options)


def compile_source(
    kind: Kind,
    source: Any,
    options: CompileOptions | None = None,
    *,
    source_name: str | None = None,
    progress: ProgressCallback | None = None,
) -> Artifact:
    """Compile ``source`` of ``kind`` into an artifact (with a token table for ``options.tokenizer``)."""
    with collector_paused(), CoreFixed():
        return _compile_source(kind, source, options or CompileOptions(), source_name, progress)


def _nesting_bound(kind: Kind, source: Any) -> int | None:
    """An upper bound on how deep the compile of ``source`` recurses, in nesting levels, where it
    is cheap to know: a regex nests no deeper than its parentheses (plus the few levels of a
    character's UTF-8 and of the pattern itself); None elsewhere (the deep worker's stack serves)."""
    if kind == "regex" and isinstance(source, str):
        return source.count("(") + 3
    return None


def _compile_source(
    kind: Kind,
    source: Any,
    options: CompileOptions,
    source_name: str | None,
    progress: ProgressCallback | None,
) -> Artifact:
    started = time.perf_counter()
    timings: dict[str, float] = {}
    known_text = _text_on_this_stack(kind, source)

    def stages() -> tuple[FrontendResult, DFA, str, str]:
        result, dfa = _lenient_rounds(kind, source, options, timings, started)
        source_text = known_text if known_text is not None else _source_text(source)  # deep JSON too
        names = {
            marker: f"(?#string character){bounds_text(lo, hi)}"
            for marker, (lo, hi) in result.markers.items()
            if dfa.regions is not None
        }
        if result.nest_marker is not None and dfa.nests is not None:
            names[result.nest_marker] = "(?#any JSON value)"
        return result, dfa, ir.to_regex(result.node, names or None), source_text

    try:
        result, dfa, grammar, source_text = run_deep(
            stages,
            options.limits,
            _nesting_bound(kind, source),
            shallow=known_text is not None and shallow_text(known_text, json_text=kind == "schema"),
        )
    except RecursionError:
        # Every walk counts its nesting against --max-nesting, on a stack sized for it: reaching
        # Python's limit anyway is a walk that does not count, which no flag can help.
        raise MoonmaskError(
            f"the {kind} nests too deeply for this compiler (Python's recursion limit was reached "
            f"within --max-nesting {options.limits.max_nesting}); simplify the nesting, and please "
            "report the input"
        ) from None
    frontend_seconds, dfa_seconds = timings["frontend_s"], timings["dfa_s"]
    metadata: dict[str, Any] = {
        "kind": kind,
        "source": source_text,
        "source_name": source_name,
        "options": options.describe(kind),
        "notes": result.notes,
        "warnings": result.warnings,
        "grammar": grammar[:GRAMMAR_TEXT_LIMIT],
        "grammar_truncated": len(grammar) > GRAMMAR_TEXT_LIMIT,
        "compiler": f"moonmaskc {__version__}",
        "core": core_name(),
        "timings": {"frontend_s": round(frontend_seconds, 6), "dfa_s": round(dfa_seconds, 6)},
    }
    artifact = Artifact(dfa, metadata)
    if options.tokenizer is not None:
        try:
            _link(artifact, options.tokenizer, options.eos, progress, options.limits)
        except CountedRegionError as error:  # the table cannot serve a region: write it out
            if dfa.regions is None:
                raise
            return _compile_source(kind, source, _without_counting(options, error), source_name, progress)
        except NestRegionError as error:  # the table cannot serve a free value's stack
            if dfa.nests is None:
                raise
            return _compile_source(kind, source, _without_stacks(options, error), source_name, progress)
    return artifact


LENIENT_LENGTH_ROUNDS = 4
"""A lenient schema compile past max_states is tried again this many times at most, each time
without the string length bounds that the failed one named as the most costly."""


def _lenient_rounds(
    kind: Kind, source: Any, options: CompileOptions, timings: dict[str, float], started: float
) -> tuple[FrontendResult, DFA]:
    """The front end's result and its DFA. A lenient schema compile whose automaton is past
    ``max_states`` drops the string length bounds that need the most states (``maxLength`` 32767
    is 458,000 states) with a warning each, and tries again: the language gets wider, as
    ``--lenient`` promises for what cannot be compiled within the bounds. When the bounds the front
    end kept already need more states than ``max_states`` together (their states add up along a
    document), the costliest are dropped before any automaton is built (``lenient_length_drops``).
    When no length bound is left to drop, the recursion depth (``--max-depth``: ``$ref`` re-entries,
    and how deep ``{}`` nests) is lowered one level a round, down to 1, with a warning: the language
    gets narrower (``_depth_lowered``)."""
    rounds = 0
    requested_depth = options.limits.max_depth
    costs: dict[str, int] = {}  # the length bounds of the last front end run that got through
    while True:
        try:
            result = run_frontend(kind, source, options)
            costs = result.length_costs
            early = lenient_length_drops(costs, options) if kind == "schema" else frozenset()
            if early and rounds < LENIENT_LENGTH_ROUNDS:
                options = dataclasses.replace(options, dropped_lengths=options.dropped_lengths | early)
                rounds += 1
                continue
            timings["frontend_s"] = time.perf_counter() - started
            dfa = _compile_dfa(result, options.limits)
            timings["dfa_s"] = time.perf_counter() - started - timings["frontend_s"]
            if options.limits.max_depth < requested_depth:
                _depth_lowered(result, requested_depth, options.limits)
            if dfa.regions is not None:
                result.notes["length_counters"] = _counted_note(result.markers)
                if options.counters_off is not None:
                    result.notes["length_counters"] += f"; some written out: {options.counters_off}"
            elif options.counters_off is not None:
                result.notes["length_counters"] = f"not used: {options.counters_off}"
            if dfa.nests is not None:
                result.notes["free_value_stacks"] = (
                    "values that {} or true accepts (and open objects' other members) nest at least "
                    f"{MAX_NEST_ENTRIES + 1} levels deep, with a bracket stack beside the automaton"
                )
            elif options.stacks_off is not None:
                result.notes["free_value_stacks"] = f"not used: {options.stacks_off}"
            return result, dfa
        except CountedRegionError as uncountable:
            # Those bounds are written out instead; past --max-states the error says why.
            options = _without_counting(options, uncountable)
        except NestRegionError as unstackable:  # the free values written out to the depth bound
            options = _without_stacks(options, unstackable)
        except LimitError as caught:
            error = _with_counter_reason(caught, options)
            if kind != "schema" or not options.lenient or error.bound not in ("max_states", "max_work"):
                raise error from None
            # The costliest of the bounds the error names (or, past the front end, that it kept):
            # 5, then 10, 20, 40 a round.
            named = {**costs, **error.costly} if error.costly else {}
            more = set(_costliest(named, options.dropped_lengths, LENIENT_ROUND_DROPS << rounds))
            if more and rounds < LENIENT_LENGTH_ROUNDS:
                options = dataclasses.replace(options, dropped_lengths=options.dropped_lengths | more)
                rounds += 1
            elif options.limits.max_depth > LENIENT_MIN_DEPTH:
                lowered = dataclasses.replace(options.limits, max_depth=options.limits.max_depth - 1)
                options = dataclasses.replace(options, limits=lowered)
            else:
                raise error from None


def _with_counter_reason(error: LimitError, options: CompileOptions) -> LimitError:
    """``error``, past ``--max-states`` after some string bounds were written out because no
    length counter could run them, with that reason added."""
    if options.counters_off is None or error.bound != "max_states":
        return error
    message = f"{error.message}; a length counter could not be used: {options.counters_off}"
    return LimitError(error.bound, error.limit, message, error.flag, error.costly)


def _without_counting(options: CompileOptions, error: CountedRegionError) -> CompileOptions:
    """``options`` for the next attempt after ``error``: the bounds it names written out (all of
    them when it names none, or names only bounds already written out), and its reason noted."""
    reason = str(error) if options.counters_off is None else f"{options.counters_off}; {error}"
    if error.bounds and not error.bounds <= options.uncounted:
        return dataclasses.replace(options, uncounted=options.uncounted | error.bounds, counters_off=reason)
    return dataclasses.replace(options, length_counters=False, counters_off=reason)


def _without_stacks(options: CompileOptions, error: NestRegionError) -> CompileOptions:
    """``options`` for a compile again with the free values written out, saying why."""
    return dataclasses.replace(options, free_value_stacks=False, stacks_off=str(error))


def _counted_note(markers: dict[int, tuple[int, int]]) -> str:
    """The notes' line on the counted string lengths of a compile."""
    spans = sorted(bounds_text(lo, hi) for lo, hi in markers.values())
    return "string lengths counted beside the automaton (not written out as states): " + ", ".join(spans)


LENIENT_MIN_DEPTH = 1
"""Lenient schema compiles past the state bound lower ``--max-depth`` a level a round, to this."""


def _depth_lowered(result: FrontendResult, requested: int, limits: Limits) -> None:
    """Record in ``result`` that a lenient compile cut recursion at ``limits.max_depth`` instead of
    the ``requested`` depth to fit the state bound: a warning, and a narrower language."""
    result.warnings.append(
        f"recursion cut at depth {limits.max_depth} instead of --max-depth {requested}: at depth "
        f"{limits.max_depth + 1} the automaton needed more than --max-states {limits.max_states} "
        f"states; values whose $ref recursion or {{}} nesting goes deeper are rejected (narrower)"
    )
    earlier = result.notes.get("language")
    if earlier is None:
        language = "narrower than the schema's: recursion was cut below --max-depth to fit --max-states"
    elif earlier.startswith("narrower"):
        language = (
            "narrower than the schema's: keywords dropped inside not / if, and recursion cut below "
            "--max-depth"
        )
    else:
        language = (
            "not the schema's: keywords were dropped where they widen it, and recursion was cut "
            "below --max-depth"
        )
    result.notes["language"] = f"{language} (see ignored_keywords and warnings)"


LENIENT_ROUND_DROPS = 5


def _costliest(costs: dict[str, int], dropped: frozenset[str], count: int) -> list[str]:
    """The ``count`` costliest length bounds not dropped yet, among those the schema front end
    calls costly (``diagnostics.COSTLY_STRING_STATES`` states or more; only schemas have costs)."""
    from moonmaskc.frontends.schema.diagnostics import COSTLY_STRING_STATES

    ranked = sorted(costs.items(), key=lambda item: (-item[1], item[0]))
    return [p for p, states in ranked if states >= COSTLY_STRING_STATES and p not in dropped][:count]


def lenient_length_drops(costs: dict[str, int], options: CompileOptions) -> frozenset[str]:
    """Under ``lenient``: the string length bounds (by pointer) to drop before building the DFA,
    when those kept need more than ``max_states`` states together: the costliest first, until
    the rest need at most half of it (the other half for the rest of the document). Nothing
    when they fit, or in strict mode."""
    limit = options.limits.max_states
    total = sum(costs.values())
    if not options.lenient or total <= limit:
        return frozenset()
    dropped: set[str] = set()
    for pointer, states in sorted(costs.items(), key=lambda item: (-item[1], item[0])):
        if total <= limit // 2:
            break
        if pointer not in options.dropped_lengths:
            dropped.add(pointer)
            total -= states
    return frozenset(dropped)


def _compile_dfa(result: FrontendResult, limits: Limits) -> DFA:
    """``compile_ir`` of the front end's node, after the work bound (``check_work=True``); past
    ``--max-states``, the error also names the string length bounds that a schema's front end
    noted as the most costly."""
    try:
        dfa = compile_ir(result.node, limits, check_work=True)
        if result.markers and result.counted_char is not None:
            dfa = expand_markers(dfa, result.markers, result.counted_char)
        if result.nest_marker is not None and result.nest_level is not None:
            dfa = expand_nests(dfa, result.nest_marker, result.nest_level, NEST_CALL, NEST_OPEN_BYTES)
        return dfa
    except LimitError as error:
        costly = result.notes.get("string_length_states") or {}
        if not costly:  # only a schema notes them: other kinds never import its compiler
            raise
        from moonmaskc.frontends.schema.diagnostics import with_costly_strings

        raise with_costly_strings(error, costly) from None


def link(
    artifact: Artifact,
    tokenizer: str | Vocabulary,
    *,
    eos: str | None = None,
    progress: ProgressCallback | None = None,
    limits: Limits | None = None,
) -> Artifact:
    """Attach (or replace) the token table for ``tokenizer`` without recompiling the source."""
    with collector_paused(), CoreFixed():
        return _link(artifact, tokenizer, eos, progress, limits)


def _link(
    artifact: Artifact,
    tokenizer: str | Vocabulary,
    eos: str | None,
    progress: ProgressCallback | None,
    limits: Limits | None,
) -> Artifact:
    """``link`` within a compile's block (the collector paused, the core fixed), which it shares
    with the stages before it, so that the table's core is the one the DFA's was built on."""
    from moonmaskc.token_table import build_token_table
    from moonmaskc.vocabulary import load_vocabulary

    started = time.perf_counter()
    vocabulary = load_vocabulary(tokenizer, eos=eos)
    max_cells = (limits or Limits()).max_table_cells
    artifact.token_table = build_token_table(artifact.dfa, vocabulary, progress=progress, max_cells=max_cells)
    artifact.metadata["vocabulary"] = {
        "name": vocabulary.name,
        "size": vocabulary.size,
        "eos_id": vocabulary.eos_id,
        "fingerprint": vocabulary.fingerprint,
    }
    artifact.metadata["token_table_core"] = core_name()
    artifact.metadata.setdefault("timings", {})["token_table_s"] = round(time.perf_counter() - started, 6)
    return artifact


def _source_text(source: Any) -> str:
    """The text of ``source`` kept in the metadata: itself, or JSON text of a parsed value."""
    return source if isinstance(source, str) else _json_text(source)


def _text_on_this_stack(kind: Kind, source: Any) -> str | None:
    """``_source_text(source)`` when the caller's stack can make it: what decides whether the
    stages are tried inline (``deep.shallow_text``). None where it cannot (a source of another kind
    that is no text; JSON text of a schema value that nests past Python's recursion limit, or that
    is no JSON value): the stages then make it as before, after the front end has said what is
    wrong with the source."""
    if isinstance(source, str) or kind != "schema":
        return source if isinstance(source, str) else None
    try:
        return _json_text(source)
    except (RecursionError, TypeError, ValueError):
        return None


def _json_text(value: Any) -> str:
    """``value`` as JSON text that UTF-8 can hold: non-ASCII characters as they are, unless the
    value holds a lone surrogate (a ``\\ud800`` escape in an annotation, say), which only a
    ``\\uXXXX`` escape can carry; then every non-ASCII character is escaped."""
    import json

    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True)
    return text
