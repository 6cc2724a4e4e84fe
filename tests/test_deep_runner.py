"""The deep runner (``moonmaskc.frontends.deep.run_deep``): results, exceptions, depth, reuse of its
worker threads, a forked child that finds none of its parent's workers, and a signal that reaches a
waiting caller."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

import pytest

import moonmaskc
from moonmaskc.frontends import deep
from moonmaskc.frontends.deep import recursion_budget, run_deep
from moonmaskc.limits import LARGEST_MAX_NESTING, Limits


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_result_and_exception_reach_the_caller() -> None:
    limits = Limits()
    assert run_deep(lambda: 41 + 1, limits) == 42
    with pytest.raises(ZeroDivisionError):
        run_deep(lambda: 1 // 0, limits)
    assert run_deep(lambda: "after a failure", limits) == "after a failure"


def test_recursion_far_past_the_callers_limit() -> None:
    limits = Limits()
    depth = sys.getrecursionlimit() * 4
    assert depth < recursion_budget(limits)
    assert run_deep(lambda: _depth(depth), limits) == depth
    assert sys.getrecursionlimit() < depth  # the caller's limit is restored


def test_workers_are_reused_between_runs() -> None:
    limits = Limits()
    names = {run_deep(lambda: threading.get_ident(), limits) for _ in range(20)}
    assert len(names) == 1
    assert run_deep(lambda: threading.current_thread().name, limits) == "moonmaskc-deep"


def test_nested_run_stays_on_the_same_thread() -> None:
    limits = Limits()
    outer, inner = run_deep(lambda: (threading.get_ident(), run_deep(threading.get_ident, limits)), limits)
    assert outer == inner


def test_a_bigger_stack_is_not_kept() -> None:
    big = Limits(max_nesting=LARGEST_MAX_NESTING)
    assert run_deep(lambda: 7, big) == 7
    assert all(worker.frames < recursion_budget(big) for worker in deep._idle)


def test_concurrent_callers_get_their_own_results() -> None:
    limits = Limits()
    results: dict[int, int] = {}

    def call(i: int) -> None:
        results[i] = run_deep(lambda: _depth(200 + i), limits)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: 200 + i for i in range(8)}


def _compile_in_child(queue: multiprocessing.Queue[int]) -> None:
    artifact = moonmaskc.compile_regex("[ab]{2,3}")
    queue.put(artifact.dfa.num_states)


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_forked_child_compiles() -> None:
    run_deep(lambda: None, Limits())  # the parent has an idle worker
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[int] = context.Queue()
    child = context.Process(target=_compile_in_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == moonmaskc.compile_regex("[ab]{2,3}").dfa.num_states


def test_a_shallow_job_runs_inline_on_the_callers_thread() -> None:
    limits = Limits()
    caller = threading.get_ident()
    assert run_deep(threading.get_ident, limits, levels=3) == caller
    assert run_deep(lambda: _depth(3 * deep.FRAMES_PER_LEVEL), limits, levels=3) == 3 * deep.FRAMES_PER_LEVEL


def test_a_job_deeper_than_the_callers_stack_allows_goes_to_the_worker() -> None:
    limits = Limits()
    caller = threading.get_ident()
    too_many = sys.getrecursionlimit() // deep.FRAMES_PER_LEVEL + 1
    assert not deep.fits_inline(too_many)
    assert run_deep(threading.get_ident, limits, levels=too_many) != caller


def _at_depth(n: int, job: Callable[[], int]) -> int:
    return job() if n == 0 else _at_depth(n - 1, job)


def test_a_caller_already_deep_in_its_stack_hands_even_a_shallow_job_over() -> None:
    limits = Limits()
    caller = threading.get_ident()
    near_the_limit = sys.getrecursionlimit() - deep.INLINE_MARGIN
    ran_on = _at_depth(near_the_limit - 50, lambda: run_deep(threading.get_ident, limits, levels=1))
    assert ran_on != caller


def test_a_short_regex_compiles_inline_and_a_deeply_nested_one_still_compiles() -> None:
    calls: list[int] = []
    original = deep._Worker.hand

    def counted(worker: deep._Worker, job: deep._Job) -> None:
        calls.append(1)
        original(worker, job)

    deep._Worker.hand = counted  # type: ignore[method-assign]
    try:
        moonmaskc.compile_regex(r"[a-z]+(\.[a-z]+)*@[a-z]+", tokenizer=None)
        assert calls == []
        nested = "(" * 400 + "a" + ")" * 400
        assert moonmaskc.compile_regex(nested, tokenizer=None).match("a").accepted
        assert calls == [1]
    finally:
        deep._Worker.hand = original  # type: ignore[method-assign]


@pytest.mark.skipif(os.name != "posix", reason="a lock wait sees signals on POSIX only")
def test_a_signal_reaches_the_caller_while_the_worker_runs() -> None:
    """The caller waits on a plain lock: a signal's handler runs in its thread at once, and what it
    raises ends the wait (Ctrl-C during a long compile), while the worker finishes its job."""

    class Stop(Exception):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    previous = signal.signal(signal.SIGUSR1, stop)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1))
    started = time.perf_counter()
    try:
        timer.start()
        with pytest.raises(Stop):
            run_deep(lambda: time.sleep(1.5), Limits())
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert time.perf_counter() - started < 1.0
    assert run_deep(lambda: 42, Limits()) == 42
