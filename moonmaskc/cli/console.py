"""All terminal output of the CLI and the single place where errors become exit codes.

Takes: messages, rich renderables and ``MoonmaskError``s raised below the CLI. Hands on: text on
stdout / stderr; ``fail`` prints one clear paragraph (never a traceback) and exits with status 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click
from rich.console import Console

from moonmaskc.errors import MoonmaskError

EXIT_ERROR = 2

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str) -> NoReturn:
    stderr.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    sys.exit(EXIT_ERROR)


def warn(message: str) -> None:
    stderr.print(f"[yellow]warning:[/] {_escape(message)}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


@contextmanager
def errors_as_exit() -> Iterator[None]:
    """Turn MoonmaskError (and a few OS errors) into one paragraph and exit status 2."""
    try:
        yield
    except MoonmaskError as error:
        fail(_escape(str(error)))
    except OSError as error:
        fail(_escape(f"{error.strerror or error}: {error.filename}" if error.filename else str(error)))
    except MemoryError:
        fail("out of memory; lower the bounds (--max-states, --max-repeat, --max-depth)")
    except RecursionError:
        fail("the input nests too deeply for this compiler; lower --max-depth or simplify the input")


def command(function: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a click callback so that library errors never show a traceback."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with errors_as_exit():
            return function(*args, **kwargs)

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))
