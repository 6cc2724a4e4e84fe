"""The deep runner (``moonmaskc.frontends.deep.run_deep``): results, exceptions, depth, reuse of its
worker threads, a forked child that finds none of its parent's workers, a signal that reaches a
waiting caller, and inline attempts (a shallow schema compiled on the main thread, to the same
artifact; a deeper walk or a recursion error handed over to the worker)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import moonmaskc
from moonmaskc.frontends import deep
from moonmaskc.frontends.deep import recursion_budget, run_deep
from moonmaskc.limits import LARGEST_MAX_NESTING, Limits
from tests.conftest import data_path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "schemas"


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


# -- inline attempts (``shallow``) ------------------------------------------------------------------


class HandCounter:
    """Counts the jobs handed to a deep worker while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.hands = 0
        original = deep._Worker.hand

        def counted(worker: deep._Worker, job: deep._Job) -> None:
            self.hands += 1
            original(worker, job)

        monkeypatch.setattr(deep._Worker, "hand", counted)


def nested_properties(levels: int) -> str:
    """A schema of ``levels`` objects, each the one property of the one above."""
    schema: dict[str, object] = {"type": "integer"}
    for _ in range(levels):
        schema = {
            "type": "object",
            "properties": {"a": schema},
            "required": ["a"],
            "additionalProperties": False,
        }
    return json.dumps(schema)


def same_artifact(first: moonmaskc.Artifact, second: moonmaskc.Artifact) -> bool:
    def without_timings(metadata: dict[str, object]) -> dict[str, object]:
        return {key: value for key, value in metadata.items() if key != "timings"}

    return (
        np.array_equal(first.dfa.transitions, second.dfa.transitions)
        and np.array_equal(first.dfa.byte_class, second.dfa.byte_class)
        and np.array_equal(first.dfa.accepting, second.dfa.accepting)
        and without_timings(first.metadata) == without_timings(second.metadata)
    )


def on_the_worker(monkeypatch: pytest.MonkeyPatch, text: str) -> moonmaskc.Artifact:
    """``compile_schema(text)`` with inline attempts off: the stages run on the worker."""
    with monkeypatch.context() as patch:
        patch.setattr(deep, "_may_attempt_inline", lambda: False)
        return moonmaskc.compile_schema(text)


def test_a_shallow_schema_compiles_on_the_main_thread_as_on_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = HandCounter(monkeypatch)
    limit = sys.getrecursionlimit()
    for name in ("order.json", "user.json", "tree.json"):
        text = (EXAMPLES / name).read_text()
        inline = moonmaskc.compile_schema(text)
        assert counter.hands == 0, name
        assert same_artifact(inline, on_the_worker(monkeypatch, text))
        assert counter.hands == 1
        counter.hands = 0
    parsed = json.loads((EXAMPLES / "tool_call.json").read_text())
    assert same_artifact(moonmaskc.compile_schema(parsed), moonmaskc.compile_schema(json.dumps(parsed)))
    assert counter.hands == 0  # a parsed schema too
    assert sys.getrecursionlimit() == limit and deep.inline_walk_levels() is None


def test_a_walk_deeper_than_an_inline_attempt_allows_runs_again_on_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Few brackets, but more nested subschemas than ``INLINE_WALK_LEVELS``: the attempt stops,
    the worker compiles it from the start, to the same artifact; a walk just within compiles
    inline."""
    counter = HandCounter(monkeypatch)
    limit = sys.getrecursionlimit()
    deep_text = nested_properties(deep.INLINE_WALK_LEVELS + 5)
    assert deep.shallow_text(deep_text)
    artifact = moonmaskc.compile_schema(deep_text)
    assert counter.hands == 1
    levels = deep.INLINE_WALK_LEVELS + 5
    assert artifact.match('{"a":' * levels + "7" + "}" * levels).accepted
    assert same_artifact(artifact, on_the_worker(monkeypatch, deep_text))
    counter.hands = 0
    moonmaskc.compile_schema(nested_properties(deep.INLINE_WALK_LEVELS // 2 - 1))
    assert counter.hands == 0
    assert sys.getrecursionlimit() == limit and deep.inline_walk_levels() is None


def test_max_nesting_still_names_itself_within_an_inline_attempt() -> None:
    """``--max-nesting`` below the attempt's levels: the same ``LimitError`` as on the worker."""
    from moonmaskc.errors import LimitError

    with pytest.raises(LimitError) as caught:
        moonmaskc.compile_schema(nested_properties(8), max_nesting=5)
    assert caught.value.bound == "max_nesting"


def test_a_recursion_error_in_an_attempt_sends_the_compile_to_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``RecursionError`` where the walk would make it the schema's error (the enum candidates'
    check catches any exception as a broken candidate; the walk's own ``except RecursionError``
    names the nesting) is the attempt's, not the schema's: the worker runs the compile again."""
    from moonmaskc.frontends.schema import constants
    from moonmaskc.frontends.schema.context import ScopedValidator

    counter = HandCounter(monkeypatch)
    evolve = ScopedValidator.evolve

    class FailingInline:
        def __init__(self, checker: object) -> None:
            self.checker = checker

        def is_valid(self, value: object) -> bool:
            if deep.inline_walk_levels() is not None:
                raise RecursionError("maximum recursion depth exceeded")
            return bool(self.checker.is_valid(value))  # type: ignore[attr-defined]

    monkeypatch.setattr(ScopedValidator, "evolve", lambda self, schema: FailingInline(evolve(self, schema)))
    artifact = moonmaskc.compile_schema('{"enum": ["a", "bc", 3], "minLength": 2}')
    assert counter.hands == 1
    assert artifact.match('"bc"').accepted and not artifact.match('"a"').accepted

    counter.hands = 0
    original = constants.constant

    def constant_failing_inline(*args: object, **kwargs: object) -> object:
        if deep.inline_walk_levels() is not None:
            raise RecursionError("maximum recursion depth exceeded")
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(constants, "constant", constant_failing_inline)
    assert moonmaskc.compile_schema('{"const": "a"}').match('"a"').accepted
    assert counter.hands == 1


def test_only_the_main_thread_attempts_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another thread's stack may be smaller than the main thread's: its compiles use the worker."""
    counter = HandCounter(monkeypatch)
    text = (EXAMPLES / "tool_call.json").read_text()
    thread = threading.Thread(target=moonmaskc.compile_schema, args=(text,))
    thread.start()
    thread.join()
    assert counter.hands == 1


def test_a_text_of_many_brackets_is_not_shallow() -> None:
    assert deep.shallow_text("{" * deep.SHALLOW_TEXT_BRACKETS)
    assert not deep.shallow_text("[" * deep.SHALLOW_TEXT_BRACKETS + "(")
    assert not deep.shallow_text('{"pattern": "' + "(" * 200 + '"}')


def test_json_text_of_many_brackets_that_nests_little_is_shallow() -> None:
    """For JSON text the brackets that count are the structure's open ones and one string's
    ``(``: thousands of shallow brackets pass, a deep structure or one pattern of many groups
    does not, and brackets inside strings (escaped quotes and backslashes around them) do not
    open anything."""
    limit = deep.SHALLOW_TEXT_BRACKETS
    wide = json.dumps({"properties": {f"p{i}": {"enum": [[i], {"a": "(x)"}]} for i in range(200)}})
    assert not deep.shallow_text(wide) and deep.shallow_text(wide, json_text=True)
    assert deep.json_nesting_bound(wide) == (5, 1)
    deep_list = "[" * (limit + 1) + "]" * (limit + 1)
    assert not deep.shallow_text(deep_list, json_text=True)
    assert deep.shallow_text("[" * limit + "]" * limit, json_text=True)
    many_groups = json.dumps({"pattern": "(" * (limit + 1) + ")" * (limit + 1)})
    assert not deep.shallow_text(many_groups, json_text=True)
    split_groups = json.dumps([{"pattern": "(a)" * limit} for _ in range(3)])
    assert deep.shallow_text(split_groups, json_text=True)
    escapes = r'["\\", "\"[[", ["]]]\\"], {"k\\\"{": []}]'
    assert deep.json_nesting_bound(escapes) == _nesting(json.loads(escapes)) == (3, 0)
    assert deep.json_nesting_bound("") == (0, 0)


def _nesting(value: object) -> tuple[int, int]:
    """The structure's depth and the most ``(`` in one string (keys too), read from the value."""
    if isinstance(value, str):
        return 0, value.count("(")
    if isinstance(value, dict):
        children = [_nesting(key) for key in value] + [_nesting(item) for item in value.values()]
    elif isinstance(value, list):
        children = [_nesting(item) for item in value]
    else:
        return 0, 0
    depths, mosts = zip(*children, strict=True) if children else ((0,), (0,))
    return 1 + max(depths), max(mosts)


_TRICKY_TEXT = st.text(alphabet=st.sampled_from('ab({[]})\\"/\n\u00e9\U0001f600'), max_size=12)
_JSON_VALUES = st.recursive(
    st.none() | st.integers() | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY_TEXT, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 2]))
def test_json_nesting_bound_is_the_values_nesting(
    value: object, ascii_only: bool, indent: int | None
) -> None:
    """Against the parsed value, on JSON text with brackets, quotes, backslashes and non-ASCII
    characters inside its strings."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    assert deep.json_nesting_bound(text) == _nesting(value)


def test_a_wide_real_schema_compiles_inline_as_on_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A JsonSchemaStore schema of 159 brackets, 8 levels deep: on the main thread,
    to the worker's artifact."""
    counter = HandCounter(monkeypatch)
    text = data_path("schemas", "jsonschemabench", "JsonSchemaStore", "bitrise.json").read_text()
    assert not deep.shallow_text(text) and deep.shallow_text(text, json_text=True)
    inline = moonmaskc.compile_schema(text)
    assert counter.hands == 0
    assert same_artifact(inline, on_the_worker(monkeypatch, text))
    assert counter.hands == 1


def test_a_grammar_compiles_inline_and_a_deeply_grouped_one_on_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GBNF too: a shared grammar compiles on the main thread, to the worker's artifact; groups
    nested past ``INLINE_WALK_LEVELS`` (few brackets still) send the expansion to the worker."""
    counter = HandCounter(monkeypatch)
    grammar = data_path("gbnf", "chess.gbnf").read_text()
    inline = moonmaskc.compile_gbnf(grammar)
    assert counter.hands == 0
    with monkeypatch.context() as patch:
        patch.setattr(deep, "_may_attempt_inline", lambda: False)
        assert same_artifact(inline, moonmaskc.compile_gbnf(grammar))
    assert counter.hands == 1
    counter.hands = 0
    levels = deep.INLINE_WALK_LEVELS + 4
    nested = "root ::= " + '("a" ' * levels + ")" * levels + "\n"
    assert deep.shallow_text(nested)
    artifact = moonmaskc.compile_gbnf(nested)
    assert counter.hands == 1
    assert artifact.match("a" * levels).accepted and not artifact.match("a" * (levels - 1)).accepted


def test_a_regex_of_many_groups_but_few_enough_compiles_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the groups that ``levels`` lets run inline from here, a pattern of few brackets is
    still tried inline (a shallow text), to the worker's artifact."""
    counter = HandCounter(monkeypatch)
    pattern = "(" * 60 + "a" + ")" * 60
    assert not deep.fits_inline(60 + 3) and deep.shallow_text(pattern)
    inline = moonmaskc.compile_regex(pattern, tokenizer=None)
    assert counter.hands == 0
    with monkeypatch.context() as patch:
        patch.setattr(deep, "_may_attempt_inline", lambda: False)
        assert same_artifact(inline, moonmaskc.compile_regex(pattern, tokenizer=None))
    assert counter.hands == 1
