"""``moonmaskc match``: is each text accepted, a live prefix, or rejected (and where)?

Takes: an artifact and texts (arguments, or lines of ``--file``). Hands on: one line per text, or
``{"results": [...]}`` with ``--json``; exit status 0 when every text is accepted, 1 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from moonmaskc.artifact import Artifact, MatchResult
from moonmaskc.cli import console
from moonmaskc.cli.options import max_artifact_bytes_option
from moonmaskc.errors import MoonmaskError


def _describe(result: MatchResult) -> str:
    if result.accepted:
        return "accepted"
    if result.live:
        return "live prefix (not complete)"
    return f"rejected at byte {result.offset}"


@click.command("match")
@click.argument("artifact_path", metavar="ARTIFACT", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("texts", nargs=-1)
@click.option(
    "--file",
    "text_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Match each line of this file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON results.")
@max_artifact_bytes_option
@console.command
def match_command(
    artifact_path: Path,
    texts: tuple[str, ...],
    text_file: Path | None,
    as_json: bool,
    max_artifact_bytes: int,
) -> None:
    """Match TEXTS against ARTIFACT (texts starting with '-' go after '--')."""
    for number, text in enumerate(texts, 1):
        console.check_text(text, f"text {number} ({console.printable(text)[:40]!r})")
    artifact = Artifact.load(artifact_path, max_artifact_bytes)
    inputs = list(texts)
    if text_file is not None:
        try:
            inputs.extend(text_file.read_text(encoding="utf-8").splitlines())
        except UnicodeDecodeError as error:
            raise MoonmaskError(f"{text_file} is not UTF-8 text (byte {error.start})") from None
    if not inputs:
        raise MoonmaskError("nothing to match: give TEXTS or --file")
    results = [artifact.match(text) for text in inputs]
    if as_json:
        console.print_json({"results": [result.as_dict() for result in results]})
    else:
        for result in results:
            click.echo(f"{result.text!r}: {_describe(result)}")
    sys.exit(0 if all(result.accepted for result in results) else 1)
