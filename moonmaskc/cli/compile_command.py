"""``moonmaskc compile``: a source file, ``--regex PATTERN``, or an artifact to relink, to ``.npz``.

Takes: the source (its kind from the extension or ``--kind``), bounds and vocabulary options.
Hands on: an artifact written atomically to ``-o`` and a one-screen summary.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click

from moonmaskc.cli import console
from moonmaskc.errors import MoonmaskError, SourceError
from moonmaskc.frontends.deep import run_deep
from moonmaskc.limits import LARGEST_BOUND, LARGEST_MAX_NESTING, Limits
from moonmaskc.pipeline import Kind, compile_source, link, make_options

EXTENSION_KINDS = {
    ".regex": "regex",
    ".re": "regex",
    ".gbnf": "gbnf",
    ".json": "schema",
    ".npz": "artifact",
}


def _kind_of(path: Path, kind: str | None) -> str:
    if kind:
        return kind
    found = EXTENSION_KINDS.get(path.suffix.lower())
    if found is None:
        raise MoonmaskError(
            f"cannot tell the kind of {path} from its extension; pass --kind regex|gbnf|schema "
            f"(known extensions: {', '.join(sorted(EXTENSION_KINDS))})"
        )
    return found


def _same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file, through any spelling, symlink or hard link."""
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


def _refuse_overwriting_source(source: Path, output: Path) -> None:
    """Refuse an output that is the source itself (checked before any work, so nothing is lost)."""
    if _same_file(source, output) or source.resolve() == output.resolve():
        raise MoonmaskError(
            f"the output {output} is the source file {source} itself: writing the artifact would "
            "overwrite it; choose another -o/--output"
        )


def _read_source(path: Path, kind: str, limits: Limits) -> Any:
    """The source in ``path``: text, or for a schema the parsed JSON (read on a stack sized for
    ``--max-nesting``: ``json.loads`` recurses once per level of nesting)."""
    try:
        return run_deep(lambda: _read_source_text(path, kind), limits)
    except RecursionError:
        raise MoonmaskError(
            f"{path} nests deeper than Python's JSON reader allows within --max-nesting "
            f"{limits.max_nesting}; raise --max-nesting or simplify the schema"
        ) from None


def _read_source_text(path: Path, kind: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise MoonmaskError(f"{path} is not UTF-8 text (byte {error.start}: {error.reason})") from None
    if kind == "regex":
        return text[:-1] if text.endswith("\n") else text
    if kind == "schema":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise SourceError(f"{path} is not valid JSON: {error.msg}", text, error.pos) from None
        if not isinstance(value, (dict, bool)):
            raise SourceError(
                f"{path} holds a JSON {_json_kind(value)}, not a JSON Schema: a schema is an object "
                '(such as {"type": "string"}) or a boolean',
                text,
                len(text) - len(text.lstrip()),
            )
        return value
    return text


def _ref_roots(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """``--ref-root PREFIX=DIR`` values as URI prefix -> folder (split at the first ``=``)."""
    roots: dict[str, str] = {}
    for value in values:
        prefix, equals, folder = value.partition("=")
        if not equals or not prefix or not folder:
            raise click.BadParameter(
                f"{value!r}: give a URI prefix, '=' and a local folder, such as "
                "http://example.com/schemas/=schemas",
                ctx,
                param,
            )
        if not Path(folder).is_dir():
            raise click.BadParameter(f"{value!r}: {folder} is not a folder", ctx, param)
        if roots.get(prefix, folder) != folder:
            raise click.BadParameter(f"{prefix} is given two folders ({roots[prefix]}, {folder})", ctx, param)
        roots[prefix] = folder
    return roots


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "number"


@click.command("compile")
@click.argument("source", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--regex", "pattern", help="Compile this regex instead of a file.")
@click.option(
    "--kind", type=click.Choice(["regex", "gbnf", "schema"]), help="Kind of SOURCE (default: by extension)."
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Artifact to write.")
@click.option(
    "--max-states", type=click.IntRange(1, LARGEST_BOUND), help="Bound on DFA states (default 200000)."
)
@click.option(
    "--max-repeat",
    type=click.IntRange(1, LARGEST_BOUND),
    help="Bound on counted repetitions (default 100000).",
)
@click.option("--max-depth", type=click.IntRange(0, LARGEST_BOUND), help="Unroll recursion to this depth.")
@click.option(
    "--max-table-cells",
    type=click.IntRange(1, LARGEST_BOUND),
    help="Bound on token-table cells: states x distinct token behaviours (default 2^30).",
)
@click.option(
    "--max-work",
    type=click.IntRange(1, LARGEST_BOUND),
    help="Bound on the estimated subset-construction work, checked before any automaton is built "
    "(default 20000000).",
)
@click.option(
    "--max-nesting",
    type=click.IntRange(min=1, max=LARGEST_MAX_NESTING),
    help="Bound on how deep schemas, GBNF expansions and regex groups nest (default 1000).",
)
@click.option("--start", default="root", show_default=True, help="GBNF start rule.")
@click.option(
    "--whitespace",
    type=click.Choice(["compact", "flexible", "any"]),
    default="compact",
    show_default=True,
    help="JSON whitespace policy.",
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Schema: drop validation keywords that cannot be compiled exactly, with a warning each.",
)
@click.option(
    "--length-counters/--no-length-counters",
    default=True,
    show_default=True,
    help="Schema: count the characters of strings with long length bounds beside the automaton "
    "instead of writing every count out as states (docs/length-counters.md).",
)
@click.option(
    "--free-value-stacks/--no-free-value-stacks",
    default=True,
    show_default=True,
    help="Schema: run the values that {} or true accepts (and open objects' other members) with a "
    "bracket stack beside the automaton, of any depth (at least 31 levels), instead of writing "
    "them out to --max-depth (docs/bracket-stack.md).",
)
@click.option(
    "--refuse-unknown",
    is_flag=True,
    help="Schema: unknown keywords and format names are errors (default: annotations, warned).",
)
@click.option(
    "--ref-root",
    "ref_roots",
    multiple=True,
    metavar="PREFIX=DIR",
    callback=_ref_roots,
    help="Schema: read a $ref to another document whose URI starts with PREFIX from the local folder "
    "DIR (the rest of the URI a path under it); repeatable, the longest prefix wins. Nothing is "
    "downloaded; the official meta-schemas need no option.",
)
@click.option(
    "--tokenizer",
    default="bytes",
    show_default=True,
    help="tokenizer.json, its folder, a model name, 'bytes', or 'none' (DFA only).",
)
@click.option("--eos", help="The eos token (default: from tokenizer_config.json or the usual names).")
@console.command
def compile_command(
    source: Path | None,
    pattern: str | None,
    kind: str | None,
    output: Path | None,
    max_states: int | None,
    max_repeat: int | None,
    max_depth: int | None,
    max_table_cells: int | None,
    max_work: int | None,
    max_nesting: int | None,
    start: str,
    whitespace: str,
    lenient: bool,
    length_counters: bool,
    free_value_stacks: bool,
    refuse_unknown: bool,
    ref_roots: dict[str, str],
    tokenizer: str,
    eos: str | None,
) -> None:
    """Compile SOURCE (or --regex PATTERN) into an .npz artifact.

    SOURCE may also be an existing artifact: its token table is then rebuilt for --tokenizer
    without recompiling the source.
    """
    if (source is None) == (pattern is None):
        raise MoonmaskError("give exactly one of SOURCE or --regex PATTERN")
    options = make_options(
        max_states=max_states,
        max_repeat=max_repeat,
        max_depth=max_depth,
        max_table_cells=max_table_cells,
        max_work=max_work,
        max_nesting=max_nesting,
        start=start,
        whitespace=whitespace,
        lenient=lenient,
        length_counters=length_counters,
        free_value_stacks=free_value_stacks,
        refuse_unknown=refuse_unknown,
        ref_roots=ref_roots,
        tokenizer=None if tokenizer.lower() == "none" else tokenizer,
        eos=eos,
    )
    if pattern is not None:
        console.check_text(pattern, "--regex")
    if output is None:
        if source is None:
            raise MoonmaskError("--regex needs -o/--output")
        output = Path(source.stem + ".npz") if source.suffix != ".npz" else source.with_suffix(".linked.npz")
    if source is not None and source.suffix != ".npz":  # relinking an artifact in place is safe
        _refuse_overwriting_source(source, output)
    started = time.perf_counter()
    with _progress() as report:
        if pattern is not None:
            artifact = compile_source("regex", pattern, options, source_name="--regex", progress=report)
        else:
            assert source is not None
            if not source.is_file():
                raise MoonmaskError(f"{source}: no such file")
            source_kind = _kind_of(source, kind)
            if source_kind == "artifact":
                from moonmaskc.artifact import Artifact

                artifact = link(
                    Artifact.load(source), tokenizer, eos=eos, progress=report, limits=options.limits
                )
            else:
                value = _read_source(source, source_kind, options.limits)
                artifact = compile_source(
                    cast(Kind, source_kind), value, options, source_name=str(source), progress=report
                )
    artifact.save(output)
    elapsed = time.perf_counter() - started
    for message in artifact.metadata.get("warnings", []):
        console.warn(message)
    dfa = artifact.dfa
    summary = (
        f"wrote {output}: {dfa.num_states} states, {int(dfa.accepting.sum())} accepting, "
        f"{dfa.num_classes} byte classes"
    )
    vocabulary = artifact.metadata.get("vocabulary")
    if vocabulary:
        summary += f", vocabulary {vocabulary['name']} ({vocabulary['size']} tokens)"
    console.stdout.print(f"{summary} in {elapsed:.2f} s", markup=False)


class _progress:
    """A rich progress display that appears once the compile has taken more than a moment: a
    pulsing bar while the front end and the DFA are built, then the token table's progress."""

    DELAY_SECONDS = 0.5

    def __enter__(self) -> Callable[[int, int], None]:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=console.stderr,
            transient=True,
        )
        self._task = self._progress.add_task("compiling the DFA", total=None)
        self._lock = threading.Lock()
        self._stopped = False
        self._timer = threading.Timer(self.DELAY_SECONDS, self._show)
        self._timer.daemon = True
        self._timer.start()

        def report(done: int, total: int) -> None:
            self._progress.update(self._task, description="token table", completed=done, total=total)

        return report

    def _show(self) -> None:
        with self._lock:
            if not self._stopped:
                self._progress.start()

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            self._stopped = True
            self._progress.stop()
