"""Compiles for the Playground in worker processes, each killed once a compile outlasts its limit.

Takes: a ``CompileRequest`` (kind, source text, options, vocabulary spec). Hands on: a
``CompileResult``: the artifact as ``.npz`` bytes (what ``Artifact.save`` writes) and the wall time,
or raises ``PlaygroundError`` (the source's error with its position, a bound hit, the time limit, a
worker that died).

Workers are long-lived processes started from a ``forkserver`` that has imported the compiler once,
so a compile pays neither the interpreter's start nor the imports, and each worker keeps the
vocabularies it has loaded. A worker runs one compile at a time; past ``time_limit`` seconds the
server kills it (SIGKILL) and starts a fresh one, so a pathological regex costs at most the limit.
The compiler runs only here; the server process reads the finished artifact back and serves it with
the runtime.
"""

from __future__ import annotations

import io
import multiprocessing
import queue
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from moonmaskc.errors import MoonmaskError
from moonmaskc.playground.errors import PlaygroundError, compile_error


@dataclass(frozen=True)
class CompileRequest:
    """What to compile. ``options``: ``max_states``, ``max_depth``, ``whitespace``,
    ``max_table_cells`` (already bounded by the server); ``vocabulary``: a ``load_vocabulary`` spec."""

    kind: str
    source: str
    vocabulary: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CompileResult:
    npz: bytes
    wall_seconds: float


# The worker side ------------------------------------------------------------------------------


def compile_to_npz(request: CompileRequest, vocabularies: dict[str, Any]) -> bytes:
    """Compile ``request`` in this process; ``vocabularies`` caches loaded vocabularies by spec."""
    from moonmaskc.pipeline import compile_source, make_options
    from moonmaskc.vocabulary import load_vocabulary

    vocabulary = vocabularies.get(request.vocabulary)
    if vocabulary is None:
        vocabulary = load_vocabulary(request.vocabulary)
        vocabularies[request.vocabulary] = vocabulary
    source = request.source
    if request.kind == "regex" and source.endswith("\n"):
        source = source[:-1]
    # The explorer shows DFA states one by one, so string length bounds are written out as states
    # rather than counted beside them (``automata.counted``).
    options = make_options(
        tokenizer=vocabulary, length_counters=False, free_value_stacks=False, **request.options
    )
    artifact = compile_source(request.kind, source, options, source_name="playground")  # type: ignore[arg-type]
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **artifact.to_arrays())  # type: ignore[arg-type]
    return buffer.getvalue()


def _serve(connection: Connection) -> None:
    """A worker's loop: one request in, one reply out, until the pipe closes."""
    vocabularies: dict[str, Any] = {}
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        started = time.perf_counter()
        try:
            reply: dict[str, Any] = {
                "npz": compile_to_npz(request, vocabularies),
                "wall_seconds": time.perf_counter() - started,
            }
        except MoonmaskError as error:
            reply = {"error": compile_error(error, request.kind, request.source).as_dict()}
        except RecursionError:
            reply = {"error": PlaygroundError(422, "limit", "the source nests too deeply").as_dict()}
        except MemoryError:
            reply = {"error": PlaygroundError(422, "limit", "out of memory; lower the bounds").as_dict()}
        except Exception as error:  # anything else: a message, never a traceback
            message = f"internal error while compiling: {type(error).__name__}: {error}"
            reply = {"error": PlaygroundError(500, "internal", message).as_dict()}
        try:
            connection.send(reply)
        except (BrokenPipeError, OSError):
            return


# The server side ------------------------------------------------------------------------------


def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["moonmaskc.playground.worker", "moonmaskc.pipeline"])
    return context


class Worker:
    """One worker process and the server's end of its pipe."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True, name="moonmaskc-compile")
        self.process.start()
        child.close()

    def run(self, request: CompileRequest, time_limit: float) -> CompileResult:
        """Send ``request`` and wait at most ``time_limit`` seconds; kill the process past that."""
        try:
            self.connection.send(request)
            ready = self.connection.poll(time_limit)
            reply = self.connection.recv() if ready else None
        except (EOFError, OSError):
            code = self.stop()
            raise PlaygroundError(
                500, "worker", f"the compile worker died (exit code {code}); try again or lower the bounds"
            ) from None
        if reply is None:
            self.stop()
            raise PlaygroundError(
                422,
                "timeout",
                f"the compile took longer than {time_limit:g} s and was stopped; simplify the source "
                "or lower --max-states / --max-depth",
                limit=time_limit,
            )
        if "error" in reply:
            raise PlaygroundError.from_dict(reply["error"])
        return CompileResult(reply["npz"], float(reply["wall_seconds"]))

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> int | None:
        """Kill the process (if it still runs) and return its exit code."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.connection.close()
        return self.process.exitcode


class WorkerPool:
    """``size`` workers; ``compile`` borrows one, and replaces it when it was killed or died."""

    def __init__(self, size: int, time_limit: float) -> None:
        self.size = max(1, size)
        self.time_limit = time_limit
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._started = False
        self._closed = False
        self._workers: set[Worker] = set()
        self._context: Any = None

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            self._context = _context()
            for _ in range(self.size):
                self._idle.put(self._spawn())

    def _spawn(self) -> Worker:
        worker = Worker(self._context)
        self._workers.add(worker)
        return worker

    def compile(self, request: CompileRequest) -> CompileResult:
        """Compile ``request`` in a worker (blocking; call it from a thread)."""
        self.start()
        if self._closed:
            raise PlaygroundError(503, "busy", "the server is shutting down")
        try:
            worker = self._idle.get(timeout=self.time_limit * 2 + 5)
        except queue.Empty:
            raise PlaygroundError(503, "busy", "every compile worker is busy; try again") from None
        try:
            return worker.run(request, self.time_limit)
        finally:
            if not worker.alive:
                with self._lock:
                    self._workers.discard(worker)
                    if not self._closed:
                        worker = self._spawn()
            if not self._closed:
                self._idle.put(worker)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._workers)
            self._workers.clear()
        for worker in workers:
            worker.stop()
