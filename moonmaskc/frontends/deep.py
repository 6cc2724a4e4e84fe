"""A stack sized from ``--max-nesting`` for the walks that recurse on the user's nesting.

Takes: a function and ``Limits``. Hands on: the function's result (or its exception), computed on
a thread whose stack and Python recursion limit are sized for ``limits.max_nesting`` levels of
``FRAMES_PER_LEVEL`` frames each.

The schema walk, the GBNF expansion and the Thompson builder recurse once (or a few times) per
level of nesting of their input. Each of those walks counts its own levels and raises
``LimitError`` naming ``max_nesting`` (``--max-nesting``) past the bound, so Python's recursion
limit is never what stops them: raising ``--max-nesting`` really lets deeper inputs through,
because this runner gives them the stack for it. A call made while one deep run is already under
way runs inline (it is on the big stack already).

A caller whose input's text nests little (``shallow``) has the function tried on its own thread
first, when that is the main thread: the walks that count levels stop past a small number of them
(``NeedsDeepStack``, as does a ``RecursionError``), and the function then runs again on the
worker. Most schemas compile inline that way, without two thread hand-overs.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar, cast

from moonmaskc.limits import Limits

T = TypeVar("T")

FRAMES_PER_LEVEL = 60
"""Python frames that one level of nesting may cost, the most costly walk (the schema walk through
allOf / anyOf / objects) with a wide margin."""
FRAMES_BASE = 5_000
STACK_BYTES_PER_FRAME = 512
"""C stack per Python frame, with margin: Python 3.11 keeps Python-to-Python calls off the C stack,
only calls through C (generators, ``with``, builtins calling back) use it."""
SMALLEST_STACK = 64 << 20

_state = threading.local()
_limit_lock = threading.Lock()
_active_limits: list[int] = []
_saved_limit: list[int] = []


def recursion_budget(limits: Limits) -> int:
    """The Python recursion limit that ``limits.max_nesting`` levels need."""
    return FRAMES_BASE + limits.max_nesting * FRAMES_PER_LEVEL


def _raise_limit(frames: int) -> None:
    with _limit_lock:
        first = not _active_limits
        if first:
            _saved_limit.append(sys.getrecursionlimit())
        try:
            sys.setrecursionlimit(max(_saved_limit[-1], frames, *_active_limits))
        except BaseException:  # nothing is kept of a limit that could not be set
            if first:
                _saved_limit.pop()
            raise
        _active_limits.append(frames)


def _restore_limit(frames: int) -> None:
    with _limit_lock:
        _active_limits.remove(frames)
        if _active_limits:
            sys.setrecursionlimit(max(_saved_limit[-1], *_active_limits))
        else:
            sys.setrecursionlimit(_saved_limit.pop())


def run_deep(
    function: Callable[[], T], limits: Limits, levels: int | None = None, shallow: bool = False
) -> T:
    """``function()`` on a stack sized for ``limits.max_nesting`` (inline when already on one).

    ``levels``: when the caller knows that the input nests at most this deep (a short regex, say),
    and that many levels fit below Python's recursion limit from where the caller stands, the
    function runs inline: handing a small job to the worker thread and back costs more than the
    job itself.

    ``shallow``: the caller knows that the input's text nests little (a schema of few brackets)
    but not how deep its walk goes (``$ref`` chains). On the main thread the function is then
    tried inline first, as an *inline attempt* (``_attempt_inline``): the walks that count their
    levels stop past ``INLINE_WALK_LEVELS`` with ``NeedsDeepStack``, and so does a
    ``RecursionError``; the function then runs again from the start on the worker, as without
    ``shallow``. (Measured: the hand-over to the worker and back, with the caches of another
    core, cost 15-22% of a small schema's whole compile on a 2-core VM.)"""
    frames = recursion_budget(limits)
    if getattr(_state, "frames", 0) >= frames:
        return function()
    if levels is not None and fits_inline(levels):
        return function()
    if shallow and _may_attempt_inline():
        try:
            return _attempt_inline(function, frames)
        except NeedsDeepStack:
            pass  # deeper than the caller's stack is trusted with: the worker runs it again
    job = _Job(function)
    _raise_limit(frames)
    try:
        worker = _idle_worker(frames)
        worker.hand(job)
        _wait_for(job, worker)
    finally:
        _restore_limit(frames)
    if job.failure is not None:
        raise job.failure.with_traceback(job.failure.__traceback__)
    return cast(T, job.outcome)


class NeedsDeepStack(BaseException):
    """An inline attempt went deeper than it may on the caller's stack: its ``run_deep`` runs the
    function again on a deep worker. A ``BaseException``, so that no ``except Exception`` on the
    way (a keyword dropped under lenient, a fallback strategy) takes it for the input's fault."""


INLINE_WALK_LEVELS = 32
"""Levels a walk that counts them (the schema walk's nested subschemas and ``$ref`` targets) may
go during an inline attempt: 90% of the Kubernetes schemas and all of the small subsets' walk at
most 24 levels deep (measured 2026-12-06)."""
INLINE_FRAMES = 10_000
"""Python's recursion limit during an inline attempt (raised to it, never lowered): the walk's
levels (``INLINE_WALK_LEVELS`` x ``FRAMES_PER_LEVEL``) and the recursions on the text's own
nesting (a few frames, a few dozen through ``jsonschema``, per bracket of a ``shallow`` text: see
``SHALLOW_TEXT_BRACKETS``) stay below it, and the main thread's stack (8 MiB by default) holds it:
Python-to-Python calls do not use it, a call through C takes a few hundred bytes."""
SHALLOW_TEXT_BRACKETS = 128
"""A text with at most this many ``{ [ (`` together nests at most this deep, its JSON and its
regex patterns alike: what makes it ``shallow`` (``shallow_text``)."""


def shallow_text(text: str, json_text: bool = False) -> bool:
    """Whether ``text`` nests little enough to be tried inline (``SHALLOW_TEXT_BRACKETS``): it holds
    few brackets (brackets inside strings count too, so the count bounds the nesting from above),
    or, for JSON text (``json_text``), its structure nests no deeper than that and none of its
    strings (a ``pattern``) holds more ``(`` than that (``json_nesting_bound``)."""
    if text.count("{") + text.count("[") + text.count("(") <= SHALLOW_TEXT_BRACKETS:
        return True
    return json_text and max(json_nesting_bound(text)) <= SHALLOW_TEXT_BRACKETS


_JSON_NESTING_BYTES = b'"{}[]('
_OTHER_BYTES = bytes(sorted(set(range(256)) - set(_JSON_NESTING_BYTES)))


def json_nesting_bound(text: str) -> tuple[int, int]:
    """How deep the JSON text ``text`` nests: the most ``{`` and ``[`` open at once outside its
    strings, and the most ``(`` in one string (a bound on a regex pattern's groups). Read as
    ``json.loads`` reads, up to where it would fail: escaped backslashes and quotes are dropped
    first, then every quote opens or closes a string. Large schemas hold thousands of brackets
    but nest 10-30 deep; this takes about 0.2 ms on 50 kB of text (numpy, a few passes)."""
    import numpy as np

    unescaped = text.replace("\\\\", "").replace('\\"', "")
    kept = unescaped.encode("utf-8", "surrogatepass").translate(None, _OTHER_BYTES)
    codes = np.frombuffer(kept, dtype=np.uint8)
    strings = np.cumsum(codes == ord('"'))
    inside = (strings & 1).astype(bool)
    steps = (codes == ord("{")).view(np.int8) + (codes == ord("[")).view(np.int8)
    steps -= (codes == ord("}")).view(np.int8) + (codes == ord("]")).view(np.int8)
    steps[inside] = 0
    structure = int(np.cumsum(steps, dtype=np.int64).max(initial=0))
    parens_by_string = strings[(codes == ord("(")) & inside]
    most_parens = int(np.bincount(parens_by_string).max()) if parens_by_string.size else 0
    return structure, most_parens


INLINE_CALLER_FRAMES = 500
"""An inline attempt only starts with fewer frames than this below the caller."""


def _may_attempt_inline() -> bool:
    """Whether an inline attempt may start here: on the main thread (whose stack size the process
    was started with, not a thread's chosen one), not within another attempt, not deep already."""
    if threading.current_thread() is not threading.main_thread() or inline_walk_levels() is not None:
        return False
    try:
        sys._getframe(INLINE_CALLER_FRAMES)
    except ValueError:
        return True
    return False


def _attempt_inline(function: Callable[[], T], frames: int) -> T:
    """``function()`` on the caller's thread as an inline attempt (see ``run_deep``): nested
    ``run_deep`` calls run inline too, the counted walks stop past ``INLINE_WALK_LEVELS``."""
    saved_frames = getattr(_state, "frames", 0)
    _raise_limit(INLINE_FRAMES)
    try:
        _state.frames = frames
        _state.inline_levels = INLINE_WALK_LEVELS
        return function()
    except RecursionError:
        raise NeedsDeepStack from None
    finally:
        _restore_limit(INLINE_FRAMES)
        _state.frames = saved_frames
        _state.inline_levels = None


def inline_walk_levels() -> int | None:
    """The levels a counted walk may go in the inline attempt under way on this thread, None
    outside one (the walk then counts against ``--max-nesting`` alone)."""
    return getattr(_state, "inline_levels", None)


def escalate_if_inline(error: BaseException) -> None:
    """Within an inline attempt, raise ``NeedsDeepStack`` when ``error``, caught where it would
    otherwise become the input's error, is a ``RecursionError`` (an inline attempt's stack is not
    the one ``--max-nesting`` sized); else nothing."""
    if isinstance(error, RecursionError) and inline_walk_levels() is not None:
        raise NeedsDeepStack


INLINE_MARGIN = 200
"""Frames kept free beyond ``levels * FRAMES_PER_LEVEL`` when a job runs on the caller's stack."""


def fits_inline(levels: int) -> bool:
    """Whether ``levels`` levels of nesting (``FRAMES_PER_LEVEL`` frames each, plus
    ``INLINE_MARGIN``) fit below Python's recursion limit from the current depth."""
    needed = INLINE_MARGIN + max(levels, 0) * FRAMES_PER_LEVEL
    headroom = sys.getrecursionlimit() - needed
    if headroom <= 0:
        return False
    try:
        sys._getframe(headroom)  # a frame that far down means the stack is too deep already
    except ValueError:
        return True
    return False


WAIT_SLICE = 0.05
"""Seconds a caller waits at a time where a plain lock wait does not see signals (not POSIX)."""


def _wait_for(job: _Job, worker: _Worker) -> None:
    """Until ``job`` is done. A plain lock: the handoff and the wait cost about 10 us, where an
    ``Event`` or a timed wait costs 60-90 us, more than a small schema's whole walk takes a tenth
    of. On POSIX a lock wait is interrupted by a signal (Ctrl-C raises in the caller's thread);
    elsewhere the caller waits in slices, checking that the worker still runs."""
    if os.name == "posix":
        job.done.acquire()
        return
    while not job.done.acquire(timeout=WAIT_SLICE):
        if not worker.alive():
            raise RuntimeError("moonmaskc's deep worker thread ended before its job")


class _Job:
    """One call to run on a deep worker: its function, and its result or exception once done
    (``done``, a lock held until then)."""

    def __init__(self, function: Callable[[], object]) -> None:
        self.function = function
        self.outcome: object = None
        self.failure: BaseException | None = None
        self.done = threading.Lock()
        self.done.acquire()

    def run(self) -> None:
        try:
            self.outcome = self.function()
        except BaseException as error:  # handed to the caller's thread, raised there
            self.failure = error
        finally:
            self.function = _nothing  # drop what the closure holds as soon as the job ends


def _nothing() -> None:
    return None


class _Worker:
    """A daemon thread with a big stack that runs one job at a time and then waits, idle, for the
    next: starting a thread (and mapping its stack) costs a third of a millisecond, more than many
    compiles' whole front end. A worker whose caller stopped waiting (an interrupt) finishes its
    job before it counts as idle again."""

    def __init__(self, frames: int) -> None:
        self.frames = frames
        self._jobs: list[_Job] = []
        self._ready = threading.Lock()  # held while there is no job (a plain lock: see _wait_for)
        self._ready.acquire()
        stack_bytes = max(SMALLEST_STACK, frames * STACK_BYTES_PER_FRAME)
        # A bigger stack keeps the pages a deep job touched: such a worker serves one job and ends.
        self._kept = stack_bytes <= SMALLEST_STACK
        previous = threading.stack_size(stack_bytes)
        try:
            self._thread = threading.Thread(target=self._serve, name="moonmaskc-deep", daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(previous)

    def hand(self, job: _Job) -> None:
        """Run ``job`` (the worker is idle: it was taken off the idle list for it)."""
        self._jobs.append(job)
        self._ready.release()

    def _serve(self) -> None:
        _state.frames = self.frames
        while True:
            self._ready.acquire()
            job = self._jobs.pop()
            stays = False
            try:
                job.run()
                # Idle again before the caller hears of it, so that its next call finds this worker.
                stays = self._kept and _back_to_idle(self)
            finally:
                job.done.release()
            if not stays:
                return

    def alive(self) -> bool:
        return self._thread.is_alive()


_idle: list[_Worker] = []
MOST_IDLE_WORKERS = 4


def _back_to_idle(worker: _Worker) -> bool:
    with _limit_lock:
        if len(_idle) >= MOST_IDLE_WORKERS:
            return False
        _idle.append(worker)
        return True


def _forget_workers() -> None:
    """In a forked child the workers' threads do not exist: start afresh."""
    global _limit_lock
    _limit_lock = threading.Lock()
    _idle.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def _idle_worker(frames: int) -> _Worker:
    """An idle worker whose stack holds ``frames`` frames (taken off the idle list), or a new one."""
    with _limit_lock:  # stack_size is process-wide: the new worker sets it and starts under the lock
        for i, worker in enumerate(_idle):
            if worker.frames >= frames:
                return _idle.pop(i)
        return _Worker(frames)
