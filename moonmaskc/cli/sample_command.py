"""``moonmaskc sample``: masked monkey sampling against unmasked random tokens.

Takes: an artifact with a token table, ``-n``, ``--seed``, ``--max-tokens``. Hands on: a table of
valid / finished / mean tokens / mean states visited per strategy, or the samples as JSON.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from moonmaskc.artifact import Artifact
from moonmaskc.cli import console
from moonmaskc.cli.options import max_artifact_bytes_option
from moonmaskc.errors import ArtifactError
from moonmaskc.sampling import UNMASKED_TOKEN_CAP, run_experiment, validity_checker


@click.command("sample")
@click.argument("artifact_path", metavar="ARTIFACT", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-n", "count", type=click.IntRange(min=1), default=100, show_default=True, help="Samples per strategy."
)
@click.option("--seed", type=int, default=42, show_default=True)
@click.option(
    "--max-tokens", type=click.IntRange(min=1), default=256, show_default=True, help="Soft token budget."
)
@click.option("--json", "as_json", is_flag=True, help="Print the samples as JSON.")
@max_artifact_bytes_option
@console.command
def sample_command(
    artifact_path: Path, count: int, seed: int, max_tokens: int, as_json: bool, max_artifact_bytes: int
) -> None:
    """Sample ARTIFACT at random, masked (monkey) and unmasked, and check every output."""
    artifact = Artifact.load(artifact_path, max_artifact_bytes)
    if artifact.token_table is None:
        raise ArtifactError(f"{artifact_path} holds no token table: compile it with --tokenizer")
    reports = run_experiment(artifact, count, seed, max_tokens)
    if as_json:
        console.print_json({name: report.as_dict() for name, report in reports.items()})
        return
    judge, _ = validity_checker(artifact)
    vocabulary = artifact.metadata.get("vocabulary", {}).get("name", "?")
    table = Table(
        title=f"{artifact_path}: {count} samples per strategy, vocabulary {vocabulary}, "
        f"{artifact.dfa.num_states} DFA states, checked with {judge}"
    )
    for column in ("strategy", "valid", "finished", "mean tokens", "mean states visited"):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for name, report in reports.items():
        label = name if name == "masked" else f"{name} (cap {UNMASKED_TOKEN_CAP} tokens)"
        table.add_row(
            label,
            f"{report.valid}/{count}",
            f"{report.finished}/{count}",
            f"{report.mean_tokens:.1f}",
            f"{report.mean_states:.1f}",
        )
    console.stdout.print(table)
