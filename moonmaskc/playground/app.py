"""The Playground's ASGI application: the static page and a small JSON API (Starlette).

Takes: ``PlaygroundSettings``. Hands on: ``create_app(settings)``, a Starlette application.

The API (every body and answer is JSON; every error is ``{"error": {...}}``, see
``moonmaskc.playground.errors``; POST bodies must be ``application/json`` and at most
``max_body_bytes`` long):

``GET /api/info``
    Version, presets, vocabularies, bounds (``max_states``, ``time_limit_s``, ...).
``POST /api/compile`` ``{kind, source, vocabulary, options: {max_states, max_depth, whitespace}}``
    Compiles in a worker process (killed past the time limit). Answers the summary: ``id``,
    ``states``, ``accepting_states``, ``byte_classes``, ``start``, ``compile_ms``, ``timings_ms``,
    ``grammar`` (the IR printed back), ``options``, ``warnings``, ``vocabulary``, ``cached``.
``POST /api/state`` ``{id, state, query?, limit?}``
    ``accepting``, ``distance``, ``allowed_count``, the allowed ``tokens`` whose text contains
    ``query`` (at most ``limit``), ``shortest_completion`` and the ``neighbourhood`` (``ahead`` and
    ``behind`` states with byte labels).
``POST /api/step`` ``{id, state, mode: "masked"|"unmasked", seed, step, max_tokens, token?}``
    One decoding step: the token (the given one, or a random one of the mode), the new ``state``
    (0 = dead), ``finished`` (eos in an accepting state), ``dead``.
``POST /api/sample`` ``{id, count=30, seed=42, max_tokens=256}``
    The sampling experiment of ``moonmaskc sample``: per strategy ``valid``, ``finished``,
    ``mean_tokens``, ``mean_states`` and the first samples.
``GET /api/artifact/{id}``
    The compiled ``.npz`` (``moonmaskc.load`` reads it).

The compiler runs only in the worker processes; the server reads the artifact back and answers
with the runtime ``Guide``. Compiled artifacts are kept (the last ``cached_artifacts``) by a key of
the request, so recompiling an unchanged source costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from moonmaskc.playground.catalog import presets
from moonmaskc.playground.config import PlaygroundSettings, VocabularyChoice
from moonmaskc.playground.errors import PlaygroundError
from moonmaskc.playground.explore import MODES, Compiled
from moonmaskc.playground.worker import CompileRequest, WorkerPool
from moonmaskc.sampling import UNMASKED_TOKEN_CAP
from moonmaskc.version import __version__

STATIC_DIR = Path(__file__).resolve().parent / "static"
KINDS = ("schema", "regex", "gbnf")
WHITESPACE_MODES = ("compact", "flexible", "any")
MAX_DEPTH_CEILING = 12
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Playground:
    """The server's state: settings, presets, the worker pool and the compiled artifacts."""

    def __init__(self, settings: PlaygroundSettings) -> None:
        self.settings = settings
        self.presets = presets(settings.data_dir)
        self.vocabularies: dict[str, VocabularyChoice] = {v.key: v for v in settings.vocabularies()}
        self.pool = WorkerPool(settings.workers, settings.time_limit)
        self._compiled: OrderedDict[str, Compiled] = OrderedDict()
        self._lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        settings = self.settings
        return {
            "version": __version__,
            "kinds": list(KINDS),
            "whitespace_modes": list(WHITESPACE_MODES),
            "presets": [preset.as_dict() for preset in self.presets],
            "vocabularies": [choice.as_dict() for choice in self.vocabularies.values()],
            "default_vocabulary": settings.default_vocabulary(),
            "limits": {
                "max_states": settings.max_states,
                "max_depth": MAX_DEPTH_CEILING,
                "time_limit_s": settings.time_limit,
                "max_body_bytes": settings.max_body_bytes,
                "max_samples": settings.max_samples,
                "max_sample_tokens": settings.max_sample_tokens,
                "unmasked_cap": UNMASKED_TOKEN_CAP,
            },
        }

    def compiled(self, artifact_id: str) -> Compiled:
        with self._lock:
            found = self._compiled.get(artifact_id)
            if found is not None:
                self._compiled.move_to_end(artifact_id)
        if found is None:
            raise PlaygroundError(
                404,
                "not_found",
                f"no compiled artifact {artifact_id!r} here (the server keeps the last "
                f"{self.settings.cached_artifacts}); compile the source again",
            )
        return found

    def compile(self, body: dict[str, Any]) -> dict[str, Any]:
        settings = self.settings
        kind = _choice(body, "kind", KINDS)
        source = body.get("source")
        if not isinstance(source, str):
            raise PlaygroundError(400, "request", "'source' must be a string")
        vocabulary = _choice(body, "vocabulary", tuple(self.vocabularies), settings.default_vocabulary())
        raw_options = body.get("options") or {}
        if not isinstance(raw_options, dict):
            raise PlaygroundError(400, "request", "'options' must be an object")
        options: dict[str, Any] = {
            "max_states": _integer(raw_options, "max_states", settings.max_states, 1, settings.max_states),
            "max_table_cells": settings.max_table_cells,
        }
        if kind in ("schema", "gbnf"):
            depth = raw_options.get("max_depth")
            if depth is not None:
                options["max_depth"] = _integer(raw_options, "max_depth", 3, 0, MAX_DEPTH_CEILING)
        if kind == "schema":
            options["whitespace"] = _choice(raw_options, "whitespace", WHITESPACE_MODES, "compact")
        key = json.dumps([kind, source, vocabulary, options], sort_keys=True, ensure_ascii=False)
        artifact_id = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        with self._lock:
            found = self._compiled.get(artifact_id)
        if found is not None:
            return {**found.summary(), "cached": True}
        request = CompileRequest(kind, source, self.vocabularies[vocabulary].spec, options)
        result = self.pool.compile(request)
        compiled = Compiled.from_npz(artifact_id, result.npz, result.wall_seconds)
        with self._lock:
            self._compiled[artifact_id] = compiled
            while len(self._compiled) > settings.cached_artifacts:
                self._compiled.popitem(last=False)
        return {**compiled.summary(), "cached": False}

    def state(self, body: dict[str, Any]) -> dict[str, Any]:
        compiled = self.compiled(_string(body, "id"))
        state = _integer(body, "state", compiled.guide.start(), 0, compiled.guide.num_states - 1)
        query = body.get("query") or ""
        if not isinstance(query, str) or len(query) > 200:
            raise PlaygroundError(400, "request", "'query' must be a string of at most 200 characters")
        limit = _integer(body, "limit", 200, 0, 200_000)
        return compiled.describe_state(state, query, limit)

    def step(self, body: dict[str, Any]) -> dict[str, Any]:
        compiled = self.compiled(_string(body, "id"))
        guide = compiled.guide
        state = _integer(body, "state", guide.start(), 0, guide.num_states - 1)
        mode = _choice(body, "mode", MODES, "masked")
        seed = _integer(body, "seed", 42, -(2**62), 2**62)
        step = _integer(body, "step", 0, 0, 1_000_000)
        max_tokens = _integer(body, "max_tokens", 256, 1, self.settings.max_sample_tokens)
        token = None if body.get("token") is None else _integer(body, "token", 0, 0, guide.vocab_size - 1)
        return compiled.step(state, mode, seed, step, max_tokens, token)

    def sample(self, body: dict[str, Any]) -> dict[str, Any]:
        compiled = self.compiled(_string(body, "id"))
        count = _integer(body, "count", 30, 1, self.settings.max_samples)
        seed = _integer(body, "seed", 42, -(2**62), 2**62)
        max_tokens = _integer(body, "max_tokens", 256, 1, self.settings.max_sample_tokens)
        return compiled.experiment(count, seed, max_tokens)


# request fields -----------------------------------------------------------------------------------


def _integer(body: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = body.get(name, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlaygroundError(400, "request", f"'{name}' must be an integer")
    if not low <= value <= high:
        raise PlaygroundError(400, "request", f"'{name}' must be between {low} and {high}, not {value}")
    return value


def _string(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise PlaygroundError(400, "request", f"'{name}' must be a non-empty string")
    return value


def _choice(body: dict[str, Any], name: str, choices: tuple[str, ...], default: str | None = None) -> str:
    value = body.get(name, default)
    if value not in choices:
        raise PlaygroundError(400, "request", f"'{name}' must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


async def _json_body(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise PlaygroundError(415, "content_type", "send the request body as application/json")
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise PlaygroundError(400, "request", f"the body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise PlaygroundError(400, "request", "the body must be a JSON object")
    return body


# routes -------------------------------------------------------------------------------------------


def _playground(request: Request) -> Playground:
    playground: Playground = request.app.state.playground
    return playground


async def index(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")


async def info(request: Request) -> Response:
    return JSONResponse(_playground(request).info())


def _post(
    method: Callable[[Playground, dict[str, Any]], dict[str, Any]],
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        body = await _json_body(request)
        result = await run_in_threadpool(method, _playground(request), body)
        return JSONResponse(result)

    return endpoint


async def artifact(request: Request) -> Response:
    compiled = _playground(request).compiled(request.path_params["artifact_id"])
    kind = compiled.artifact.metadata.get("kind", "artifact")
    filename = f"moonmaskc-{kind}-{compiled.id[:8]}.npz"
    return Response(
        compiled.npz,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


async def _playground_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, PlaygroundError)
    return JSONResponse(error.as_dict(), status_code=error.status)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    kind = {404: "not_found", 405: "method"}.get(error.status_code, "http")
    message = {404: f"no such page or API route: {request.url.path}", 405: "method not allowed here"}.get(
        error.status_code, str(error.detail)
    )
    return JSONResponse(
        PlaygroundError(error.status_code, kind, message).as_dict(),
        status_code=error.status_code,
        headers=getattr(error, "headers", None),
    )


async def _internal_error(request: Request, error: Exception) -> Response:
    message = f"internal error: {type(error).__name__}: {error}"
    return JSONResponse(PlaygroundError(500, "internal", message).as_dict(), status_code=500)


class Guard:
    """ASGI middleware: the ``Host`` check (when ``allowed_hosts`` is set), the body size bound
    (by ``Content-Length`` and by counting what arrives), and security headers on every answer."""

    def __init__(self, app: ASGIApp, settings: PlaygroundSettings) -> None:
        self.app = app
        self.limit = settings.max_body_bytes
        self.allowed_hosts = None if settings.allowed_hosts is None else set(settings.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        if self.allowed_hosts is not None and _host_name(headers.get("host", "")) not in self.allowed_hosts:
            error = PlaygroundError(400, "host", "this Host header is not served here")
            await JSONResponse(error.as_dict(), status_code=400)(scope, receive, send)
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await JSONResponse(self._too_large().as_dict(), status_code=413)(scope, receive, send)
            return
        received = 0

        async def bounded_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise self._too_large()
            return message

        async def secured_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"cache-control", b"no-store"),
                ]
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        await self.app(scope, bounded_receive, secured_send)

    def _too_large(self) -> PlaygroundError:
        return PlaygroundError(
            413, "too_large", f"the request body is larger than {self.limit} bytes", limit=self.limit
        )


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def create_app(settings: PlaygroundSettings | None = None) -> Starlette:
    """The Playground application; its worker pool starts with the application's lifespan (or at
    the first compile) and stops with it."""
    settings = settings or PlaygroundSettings()
    playground = Playground(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        threading.Thread(target=playground.pool.start, daemon=True, name="moonmaskc-pool-start").start()
        try:
            yield
        finally:
            playground.pool.close()

    routes = [
        Route("/", index),
        Route("/api/info", info),
        Route("/api/compile", _post(Playground.compile), methods=["POST"]),
        Route("/api/state", _post(Playground.state), methods=["POST"]),
        Route("/api/step", _post(Playground.step), methods=["POST"]),
        Route("/api/sample", _post(Playground.sample), methods=["POST"]),
        Route("/api/artifact/{artifact_id}", artifact),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            PlaygroundError: _playground_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
    app.state.playground = playground
    app.add_middleware(Guard, settings=settings)
    return app
