"""The ``moonmaskc`` command line: one module per command, thin over the library.

Takes: argv. Hands on: the ``main`` click group (entry point ``moonmaskc``) with ``compile``,
``inspect``, ``match`` and ``sample``.
"""

from __future__ import annotations

import click

from moonmaskc.automata.native import core_description
from moonmaskc.cli.compile_command import compile_command
from moonmaskc.cli.inspect_command import inspect_command
from moonmaskc.cli.match_command import match_command
from moonmaskc.cli.playground_command import playground_command
from moonmaskc.cli.sample_command import sample_command
from moonmaskc.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, prog_name="moonmaskc", message=f"%(prog)s %(version)s, {core_description()}"
)
def main() -> None:
    """Compile regexes, GBNF grammars and JSON Schemas into token-mask artifacts."""


main.add_command(compile_command)
main.add_command(inspect_command)
main.add_command(match_command)
main.add_command(sample_command)
main.add_command(playground_command)
