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

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

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
        if not _active_limits:
            _saved_limit.append(sys.getrecursionlimit())
        _active_limits.append(frames)
        sys.setrecursionlimit(max(_saved_limit[-1], *_active_limits))


def _restore_limit(frames: int) -> None:
    with _limit_lock:
        _active_limits.remove(frames)
        if _active_limits:
            sys.setrecursionlimit(max(_saved_limit[-1], *_active_limits))
        else:
            sys.setrecursionlimit(_saved_limit.pop())


def run_deep(function: Callable[[], T], limits: Limits) -> T:
    """``function()`` on a stack sized for ``limits.max_nesting`` (inline when already on one)."""
    if getattr(_state, "frames", 0) >= recursion_budget(limits):
        return function()
    frames = recursion_budget(limits)
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        _state.frames = frames
        try:
            outcome.append(function())
        except BaseException as error:  # handed to the caller's thread, raised there
            failure.append(error)

    _raise_limit(frames)
    try:
        with _limit_lock:  # stack_size is process-wide: set it and start the thread together
            previous = threading.stack_size(max(SMALLEST_STACK, frames * STACK_BYTES_PER_FRAME))
            try:
                worker = threading.Thread(target=target, name="moonmaskc-deep", daemon=True)
                worker.start()
            finally:
                threading.stack_size(previous)
        while worker.is_alive():
            worker.join(0.05)  # a short wait, so that the caller's thread still sees signals
    finally:
        _restore_limit(frames)
    if failure:
        raise failure[0].with_traceback(failure[0].__traceback__)
    return outcome[0]
