"""``moonmaskc playground``: a local web page to write a constraint, watch its automaton and play the
decoder.

Takes: ``--port``, ``--host``, ``--tokenizer``, ``--open`` and the Playground's bounds. Hands on: a
uvicorn server of ``moonmaskc.playground.app`` on 127.0.0.1 (another ``--host`` is served with a
warning), the URL on stdout, and a clean stop on Ctrl-C. Without the optional ``playground`` extra
(starlette, uvicorn) it says how to install it and exits with status 2.
"""

from __future__ import annotations

import socket
import threading
import time
import webbrowser

import click

from moonmaskc import playground
from moonmaskc.cli import console
from moonmaskc.errors import MoonmaskError
from moonmaskc.limits import LARGEST_BOUND
from moonmaskc.playground.config import (
    DEFAULT_PORT,
    LOOPBACK_HOSTS,
    PLAYGROUND_MAX_STATES,
    PLAYGROUND_TIME_LIMIT_S,
)


@click.command("playground")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="0: any free port."
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (other than loopback: a warning)."
)
@click.option(
    "--tokenizer", help="A vocabulary offered besides bytes and GPT-2: tokenizer.json, folder, model name."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option(
    "--max-states",
    type=click.IntRange(1, LARGEST_BOUND),
    default=PLAYGROUND_MAX_STATES,
    show_default=True,
    help="Bound on DFA states per compile (the page may ask for less).",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0.1),
    default=PLAYGROUND_TIME_LIMIT_S,
    show_default=True,
    help="Seconds per compile before its worker process is killed.",
)
@console.command
def playground_command(
    port: int, host: str, tokenizer: str | None, open_browser: bool, max_states: int, time_limit: float
) -> None:
    """Serve the Playground: edit a constraint, see its automaton, step the decoder."""
    missing = playground.missing_requirements()
    if missing:
        console.fail(
            f"the playground needs {', '.join(missing)}, which are not installed: {playground.EXTRA_HINT}"
        )
    import uvicorn

    from moonmaskc.playground.app import create_app
    from moonmaskc.playground.config import PlaygroundSettings
    from moonmaskc.vocabulary import load_vocabulary

    if tokenizer:
        load_vocabulary(tokenizer)  # a bad --tokenizer fails here, once, not at every compile
    loopback = host in LOOPBACK_HOSTS
    if not loopback:
        console.warn(
            f"serving on {host}: anyone who can reach this address can use the Playground and make "
            "this machine compile; it has no authentication"
        )
    listener = _bind(host, port)
    bound_port = listener.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{bound_port}/"
    settings = PlaygroundSettings(
        time_limit=time_limit,
        max_states=max_states,
        tokenizer=tokenizer,
        allowed_hosts=(*LOOPBACK_HOSTS, host) if loopback else None,
    )
    config = uvicorn.Config(create_app(settings), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    console.stdout.print(f"moonmaskc playground: {url}  (Ctrl-C stops it)", markup=False)
    if open_browser:
        threading.Thread(target=_open_when_started, args=(server, url), daemon=True).start()
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()
    console.stdout.print("moonmaskc playground stopped", markup=False)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise MoonmaskError(
            f"cannot listen on {host}:{port} ({error.strerror or error}); pick another --port"
        ) from None
    listener.listen(128)
    listener.set_inheritable(True)
    return listener


def _open_when_started(server: object, url: str) -> None:
    for _ in range(200):
        if getattr(server, "started", False):
            webbrowser.open(url)
            return
        time.sleep(0.05)
