"""The Playground: a local web page to write a constraint, watch its automaton and play the decoder.

Takes: ``PlaygroundSettings`` (bounds, vocabularies, where the presets' data lives). Hands on: an
ASGI application (``moonmaskc.playground.app.create_app``) that serves a static page and a small
JSON API; ``moonmaskc playground`` runs it with uvicorn on 127.0.0.1.

Layout:
- ``config``: the settings and the vocabularies offered to the page;
- ``catalog``: the presets (example schemas, a date-time regex, a GBNF grammar);
- ``worker``: compiles in worker processes, each killed past the time limit;
- ``explore``: what the page shows of a compiled artifact (states, allowed tokens, the automaton's
  neighbourhood, stepping), computed with the runtime ``Guide`` and the DFA;
- ``errors``: every failure as one JSON shape, with a position in the source where there is one;
- ``app``: the Starlette routes, request bounds and error handlers;
- ``static/``: the page (plain HTML, CSS and ES modules; no build step, nothing from the network);
- ``presets/``: the preset sources, shipped as package data.

Only ``app`` (and the CLI command that starts it) needs the optional ``playground`` extra
(starlette, uvicorn); the other modules use the library alone.
"""

from __future__ import annotations

EXTRA_HINT = "pip install 'moonmaskc[playground]'  (from a checkout: pip install -e '.[playground]')"


def missing_requirements() -> list[str]:
    """The packages of the ``playground`` extra that cannot be imported here (empty when all can)."""
    from importlib.util import find_spec

    return [name for name in ("starlette", "uvicorn") if find_spec(name) is None]
