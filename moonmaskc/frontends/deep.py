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


def run_deep(function: Callable[[], T], limits: Limits, levels: int | None = None) -> T:
    """``function()`` on a stack sized for ``limits.max_nesting`` (inline when already on one).

    ``levels``: when the caller knows that the input nests at most this deep (a short regex, say),
    and that many levels fit below Python's recursion limit from where the caller stands, the
    function runs inline: handing a small job to the worker thread and back costs more than the
    job itself."""
    frames = recursion_budget(limits)
    if getattr(_state, "frames", 0) >= frames:
        return function()
    if levels is not None and fits_inline(levels):
        return function()
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
