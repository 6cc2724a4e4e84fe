"""``moonmaskc inspect``: what an artifact holds.

Takes: an artifact path. Hands on: a summary (kind, source, options, states, accepting states, byte
classes, the regex printed back from the IR, bounds applied) and a table of states (id, accepting,
distance to acceptance, out-degree, a shortest completion); ``--json`` for programs and ``--dot``
for Graphviz.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.markup import escape
from rich.table import Table

from moonmaskc.artifact import Artifact
from moonmaskc.automata.counted import bounds_text
from moonmaskc.automata.dfa import DFA
from moonmaskc.cli import console
from moonmaskc.cli.options import max_artifact_bytes_option


def describe_states(dfa: DFA, limit: int | None) -> list[dict[str, Any]]:
    count = dfa.num_states if limit is None else min(limit, dfa.num_states)
    rows = []
    for state in range(count):
        # A state inside a nested container is shown with its shallowest stack (one entry).
        register = 0
        if dfa.nests is not None and int(dfa.nests.copy[state]) >= 1:
            register = 1 << dfa.nests.entry_bits  # one entry, of the first kind
        completion = dfa.shortest_completion(state, register)
        row: dict[str, Any] = {}
        rows.append(row)
        row.update(
            {
                "id": state,
                "accepting": bool(dfa.accepting[state]),
                "start": state == dfa.start,
                "distance": int(dfa.distance[state]),
                "out_degree": dfa.out_degree(state),
                "shortest_completion": None
                if completion is None
                else completion.decode("utf-8", "backslashreplace"),
            }
        )
        if dfa.regions is not None or dfa.nests is not None:
            row["region"] = _region_text(dfa, state)
            row["distance"] = dfa.cost(state, register)
    return rows


def _region_text(dfa: DFA, state: int) -> str | None:
    """A counted region's bounds and the state's place in it (``automata.counted``), a nest
    region's copy (``automata.nested``), or None. The distance and completion of a region state
    are shown from counter 0, or from a stack of one entry inside a nested container."""
    nests = dfa.nests
    if nests is not None and int(nests.region[state]) >= 0:
        copy = int(nests.copy[state])
        place = "the value" if copy == 0 else f"a nested container (copy {copy})"
        return f"free value {int(nests.region[state])}: {place}"
    regions = dfa.regions
    if regions is None or int(regions.region[state]) < 0:
        return None
    index = int(regions.region[state])
    low, high = int(regions.low[index]), int(regions.high[index])
    bounds = bounds_text(low, high)
    place = "boundary" if int(regions.role[state]) == 0 else f"inside (role {int(regions.role[state])})"
    return f"{bounds} {place}"


def summarize(artifact: Artifact, path: Path) -> dict[str, Any]:
    dfa = artifact.dfa
    meta = artifact.metadata
    summary: dict[str, Any] = {
        "path": str(path),
        "kind": meta.get("kind"),
        "source_name": meta.get("source_name"),
        "source": meta.get("source"),
        "options": meta.get("options", {}),
        "notes": meta.get("notes", {}),
        "warnings": meta.get("warnings", []),
        "states": dfa.num_states,
        "accepting_states": int(dfa.accepting.sum()),
        "start": dfa.start,
        "byte_classes": dfa.num_classes,
        "grammar": meta.get("grammar"),
        "grammar_truncated": meta.get("grammar_truncated", False),
        "compiler": meta.get("compiler"),
        "core": meta.get("core", "unrecorded"),
        "token_table_core": meta.get("token_table_core"),
        "timings": meta.get("timings", {}),
        "vocabulary": meta.get("vocabulary"),
    }
    table = artifact.token_table
    if table is not None:
        row_sizes = np.unpackbits(table.mask_rows.view(np.uint8), axis=1).sum(axis=1)
        allowed_counts = row_sizes[table.state_row[1:]].tolist()
        summary["token_table"] = {
            "distinct_mask_rows": table.num_rows,
            "vocab_size": table.vocab_size,
            "eos_id": table.eos_id,
            "max_allowed": max(allowed_counts, default=0),
            "min_allowed": min(allowed_counts, default=0),
        }
    return summary


def to_dot(dfa: DFA) -> str:
    lines = ["digraph moonmaskc {", "  rankdir=LR;", "  node [shape=circle];", "  start [shape=point];"]
    lines.append(f"  start -> s{dfa.start};")
    class_ranges = dfa.class_ranges()
    for state in range(1, dfa.num_states):
        shape = "doublecircle" if dfa.accepting[state] else "circle"
        lines.append(f'  s{state} [shape={shape}, label="{state}\\nd={dfa.distance[state]}"];')
    for state in range(1, dfa.num_states):
        by_target: dict[int, list[tuple[int, int]]] = {}
        for cls, target in enumerate(dfa.transitions[state].tolist()):
            if target != 0:
                by_target.setdefault(target, []).extend(class_ranges[cls])
        for target, ranges in by_target.items():
            label = _ranges_label(sorted(ranges))
            lines.append(f'  s{state} -> s{target} [label="{label}"];')
    lines.append("}")
    return "\n".join(lines)


def _byte_label(b: int) -> str:
    if 0x21 <= b < 0x7F and chr(b) not in '"\\':
        return chr(b)
    return f"\\\\x{b:02x}"


def _ranges_label(ranges: list[tuple[int, int]]) -> str:
    parts = []
    for lo, hi in ranges:
        parts.append(_byte_label(lo) if lo == hi else f"{_byte_label(lo)}-{_byte_label(hi)}")
    text = ",".join(parts)
    return text if len(text) <= 40 else text[:37] + "..."


_TIMING_NAMES = (("frontend_s", "front end"), ("dfa_s", "DFA"), ("token_table_s", "token table"))


@click.command("inspect")
@click.argument("artifact_path", metavar="ARTIFACT", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
@click.option("--dot", "as_dot", is_flag=True, help="Print the DFA as Graphviz dot.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True, help="States to list.")
@click.option("--all", "all_states", is_flag=True, help="List every state.")
@click.option("--full", is_flag=True, help="Print the whole source and grammar, not the first lines.")
@click.option(
    "--verify",
    is_flag=True,
    help="Also check every array's checksum and every mask row against the next-state table.",
)
@max_artifact_bytes_option
@console.command
def inspect_command(
    artifact_path: Path,
    as_json: bool,
    as_dot: bool,
    limit: int,
    all_states: bool,
    full: bool,
    verify: bool,
    max_artifact_bytes: int,
) -> None:
    """Show what ARTIFACT holds: summary, grammar really built, and its states."""
    artifact = Artifact.load(artifact_path, max_artifact_bytes)
    if verify:
        verify_artifact(artifact_path, max_artifact_bytes)
    dfa = artifact.dfa
    if as_dot:
        click.echo(to_dot(dfa))
        return
    row_limit = None if all_states else limit
    summary = summarize(artifact, artifact_path)
    states = describe_states(dfa, row_limit)
    if as_json:
        console.print_json({**summary, "state_table": states})
        return
    out = console.stdout
    out.print(
        f"[bold]{escape(str(artifact_path))}[/]  ({escape(str(summary['compiler']))}, {summary['core']} core)"
    )
    if verify:
        out.print("  verified: every checksum, and every mask row against the next-state table", markup=False)
    if summary["token_table_core"] and summary["token_table_core"] != summary["core"]:
        out.print(f"  token table linked by the {summary['token_table_core']} core", markup=False)
    for key in ("kind", "source_name"):
        if summary[key]:
            out.print(f"  {key}: {summary[key]}", markup=False)
    out.print(f"  source: {_clip(str(summary['source']), full)}", markup=False)
    out.print(f"  options: {summary['options']}", markup=False)
    if summary["notes"]:
        out.print(f"  bounds and notes: {summary['notes']}", markup=False)
    for message in summary["warnings"]:
        out.print(f"  warning: {message}", markup=False)
    out.print(
        f"  states: {summary['states']} (start {summary['start']}, dead 0), "
        f"accepting: {summary['accepting_states']}, "
        f"byte classes: {summary['byte_classes']}",
        markup=False,
    )
    if summary["vocabulary"]:
        vocab = summary["vocabulary"]
        out.print(
            f"  vocabulary: {vocab['name']} ({vocab['size']} tokens, eos {vocab['eos_id']})", markup=False
        )
    if summary.get("token_table"):
        out.print(f"  token table: {summary['token_table']}", markup=False)
    if summary["timings"]:
        timings = summary["timings"]
        spent = [f"{name} {timings[key] * 1000:.0f} ms" for key, name in _TIMING_NAMES if key in timings]
        out.print(f"  compile time: {', '.join(spent)}", markup=False)
    grammar = str(summary["grammar"])
    truncated = " (truncated in the artifact)" if summary["grammar_truncated"] else ""
    out.print(f"  grammar{truncated}: {_clip(grammar, full)}", markup=False)
    table = Table(title=f"states ({len(states)} of {dfa.num_states})")
    counted = dfa.regions is not None or dfa.nests is not None
    columns = (
        "id",
        "accepting",
        "distance",
        "out-degree",
        "shortest completion",
        *((("region" if dfa.nests is not None else "counted region"),) if counted else ()),
    )
    for column in columns:
        table.add_column(column, justify="right" if column in ("id", "distance", "out-degree") else "left")
    for row in states:
        label = str(row["id"]) + (" (start)" if row["start"] else "") + (" (dead)" if row["id"] == 0 else "")
        completion = row["shortest_completion"]
        table.add_row(
            label,
            "yes" if row["accepting"] else "",
            str(row["distance"]),
            str(row["out_degree"]),
            "" if completion is None else repr(completion),
            *((row.get("region") or "",) if counted else ()),
        )
    out.print(table)


def _clip(text: str, full: bool, width: int = 400) -> str:
    if full or len(text) <= width:
        return text
    return text[:width] + f"... ({len(text)} characters; --full shows all)"


def verify_artifact(path: Path, max_bytes: int) -> None:
    """The deep check of ``--verify`` (``ArtifactError`` when it fails)."""
    from moonmaskc.format import ArtifactFile

    archive = ArtifactFile(path, max_bytes)
    archive.verify_checksums()
    if any(name.startswith("tokens_") for name in archive) and archive.version >= 2:
        from moonmaskc.runtime_table import ServingTable

        ServingTable(archive).verify()
        if "dfa_region" in archive or "dfa_nest_region" in archive:
            from moonmaskc.runtime import Guide

            # The counted regions' character counts and the nest regions' dynamic tokens, again.
            Guide.load(path, max_bytes=max_bytes, verify=True)
