"""All terminal output of the CLI and the single place where errors become exit codes.

Takes: messages, rich renderables and ``MoonmaskError``s raised below the CLI. Hands on: text on
stdout / stderr; ``fail`` prints one clear paragraph (never a traceback) and exits with status 2.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
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
    stderr.print(f"[bold red]error:[/] {printable(message)}", markup=True, highlight=False)
    sys.exit(EXIT_ERROR)


def printable(text: str) -> str:
    """``text`` with lone surrogates (from undecodable arguments or ``\\ud800`` escapes) written as
    backslash escapes, so that printing it can never fail."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_text(text: str, what: str) -> None:
    """Raise ``MoonmaskError`` when ``text`` (an argument, say) is not UTF-8 text: the shell handed
    over bytes that do not decode (Python keeps them as surrogates U+DC80..U+DCFF), or it holds a
    lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        char = ord(text[error.start])
        if 0xDC80 <= char <= 0xDCFF:
            raise MoonmaskError(
                f"{what} is not UTF-8 text: byte 0x{char - 0xDC00:02X} at character {error.start} does "
                "not decode (check the terminal's or the file's encoding)"
            ) from None
        raise MoonmaskError(
            f"{what} holds a lone surrogate U+{char:04X} at character {error.start}, which UTF-8 "
            "cannot encode"
        ) from None


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
        fail(
            "the input nests too deeply for this compiler (Python's recursion limit was reached); "
            "simplify the nesting, and please report the input"
        )


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it unwinds the way Ctrl-C does: ``finally``
    blocks and ``except BaseException`` clean-ups run (the temporary file of an artifact being
    saved is removed)."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM raises ``Terminated``; the previous
    handler comes back afterwards. The process then exits with status 128 + SIGTERM, as an
    unhandled SIGTERM would have it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    except Terminated:
        stderr.print("[bold red]terminated[/] (SIGTERM)", markup=True)
        sys.exit(128 + signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)


def command(function: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a click callback so that library errors never show a traceback, and SIGTERM unwinds
    like Ctrl-C (see ``sigterm_as_interrupt``)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with sigterm_as_interrupt(), errors_as_exit():
            return function(*args, **kwargs)

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    return wrapper


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))
