"""Options that several commands share, declared once.

Takes: a click command function. Hands on: the function with the option attached.
"""

from __future__ import annotations

import click

from moonmaskc.format import DEFAULT_MAX_BYTES

max_artifact_bytes_option = click.option(
    "--max-artifact-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    help="Refuse an artifact with an array larger than this (uncompressed).",
)
