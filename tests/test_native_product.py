"""The native product walk (``moonmaskc.automata._native.product``) against the pure one.

Every product is built twice, natively and with ``MOONMASKC_PURE=1``, and the minimal DFAs must be
identical arrays; limits and malformed DFAs must fail alike on both paths, with moonmaskc's errors.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from moonmaskc import ir
from moonmaskc.automata import product as dfa_ops
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import LimitError, MoonmaskError
from moonmaskc.frontends.regex import parse
from moonmaskc.frontends.schema.canonical import STRING_BODY
from moonmaskc.frontends.schema.formats import format_node
from moonmaskc.limits import Limits
from tests.test_automata import ir_nodes


def _native_module() -> ModuleType | None:
    try:
        return importlib.import_module("moonmaskc.automata._native.product")
    except ImportError:
        return None


NATIVE = _native_module()
needs_native = pytest.mark.skipif(
    NATIVE is None,
    reason="moonmaskc.automata._native.product is not built (no C compiler at install, or not "
    "cythonized): nothing native to compare with the pure walk",
)

Rule = Callable[[Sequence[bool]], bool]


@contextmanager
def _core(pure: bool) -> Iterator[list[int]]:
    """Run products on one core; yields a list that counts the calls of the native walk."""
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        if pure:
            patch.setenv("MOONMASKC_PURE", "1")
        else:
            patch.delenv("MOONMASKC_PURE", raising=False)
            if NATIVE is not None:
                walk = NATIVE.product_table

                def counted(*args: Any) -> Any:
                    calls.append(1)
                    return walk(*args)

                patch.setattr(NATIVE, "product_table", counted)
        yield calls


def both_ways(build: Callable[[], DFA]) -> tuple[DFA, DFA]:
    """``build()`` natively (checking that the native walk ran) and on the pure path."""
    with _core(pure=False) as calls:
        native = build()
    assert calls, "the native walk did not run"
    with _core(pure=True) as calls:
        pure = build()
    assert not calls
    return native, pure


def assert_same_dfa(left: DFA, right: DFA) -> None:
    assert left.start == right.start
    assert np.array_equal(left.transitions, right.transitions)
    assert np.array_equal(left.byte_class, right.byte_class)
    assert np.array_equal(left.accepting, right.accepting)


def _pair_operations(a: DFA, b: DFA) -> dict[str, Callable[[], DFA]]:
    return {
        "intersect": lambda: dfa_ops.intersect(a, b),
        "union": lambda: dfa_ops.union(a, b),
        "difference": lambda: dfa_ops.difference(a, b),
        "exactly_one": lambda: dfa_ops.exactly_one([a, b]),
    }


def _three_way_operations(a: DFA, b: DFA, c: DFA) -> dict[str, Callable[[], DFA]]:
    return {
        "exactly_one": lambda: dfa_ops.exactly_one([a, b, c]),
        "a and b, not c": lambda: dfa_ops.product([a, b, c], lambda f: f[0] and f[1] and not f[2]),
        "oneOf shape": lambda: dfa_ops.product([a, b, c], lambda f: bool(f[0]) and sum(f[1:]) == 1),
        "at least two": lambda: dfa_ops.product([a, b, c], lambda f: sum(f) >= 2),
    }


@needs_native
@settings(max_examples=80, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes())
def test_native_pair_products_equal_pure(left: ir.Node, right: ir.Node) -> None:
    a, b = compile_ir(left), compile_ir(right)
    for name, build in _pair_operations(a, b).items():
        native, pure = both_ways(build)
        assert_same_dfa(native, pure), name


@needs_native
@settings(max_examples=50, deadline=None, derandomize=True)
@given(ir_nodes(), ir_nodes(), ir_nodes())
def test_native_three_way_products_equal_pure(first: ir.Node, second: ir.Node, third: ir.Node) -> None:
    a, b, c = compile_ir(first), compile_ir(second), compile_ir(third)
    for name, build in _three_way_operations(a, b, c).items():
        native, pure = both_ways(build)
        assert_same_dfa(native, pure), name
        for s in (b"", b"a", b"ab", b"abc", b"ba", b"cc"):
            flags = [a.accepts(s), b.accepts(s), c.accepts(s)]
            if name == "exactly_one":
                assert native.accepts(s) == (sum(flags) == 1), (name, s)


REGEX_PAIRS = [
    (r"[a-z]+@[a-z]+\.(com|org)", r"[a-z]{1,5}@.*"),
    (r"\d{4}-\d{2}-\d{2}", r"[0-9]{4}-(0[1-9]|1[0-2])-.*"),
    (r"(ab|cd)*e?", r"a.*"),
    (r"[^\"\\]{0,40}", r"[ -~]*x[ -~]*"),
    (r"(foo|bar|baz)+", r"(ba|fo)[a-z]*"),
    (r"-?(0|[1-9][0-9]*)(\.[0-9]+)?", r"-?[0-9]{1,3}(\.[0-9]{0,2})?"),
    (r".{3,12}", r"[a-f0-9]+"),
    (r"x*", r"y+"),
]


@needs_native
@pytest.mark.parametrize(("left", "right"), REGEX_PAIRS)
def test_native_products_of_regexes_equal_pure(left: str, right: str) -> None:
    a, b = compile_ir(parse(left).node), compile_ir(parse(right).node)
    for name, build in _pair_operations(a, b).items():
        native, pure = both_ways(build)
        assert_same_dfa(native, pure), name
    c = compile_ir(parse(r"[ -~]{0,20}").node)
    for name, build in _three_way_operations(a, b, c).items():
        native, pure = both_ways(build)
        assert_same_dfa(native, pure), name


@needs_native
@pytest.mark.parametrize("name", ["date", "ipv4", "hostname", "uuid"])
def test_native_products_of_formats_equal_pure(name: str) -> None:
    body, fmt = compile_ir(STRING_BODY), compile_ir(format_node(name))
    for operation in (dfa_ops.intersect, dfa_ops.difference):
        native, pure = both_ways(lambda operation=operation: operation(body, fmt))
        assert_same_dfa(native, pure)


@needs_native
def test_empty_members_and_rules_that_accept_nothing_agree() -> None:
    empty = compile_ir(ir.alt())
    letters = compile_ir(parse("[a-c]+").node)
    rules: list[Rule] = [all, any, lambda f: not f[0], lambda f: f[1] and not f[0]]
    for members in ([empty, letters], [letters, empty], [empty, letters, letters]):
        for rule in rules:
            native, pure = both_ways(lambda members=members, rule=rule: dfa_ops.product(members, rule))
            assert_same_dfa(native, pure)


def test_rule_tables_follow_the_hopeless_rule() -> None:
    rules: list[Rule] = [
        all,
        any,
        lambda f: f[0] and not f[1],
        lambda f: sum(f) == 1,
        lambda f: bool(f[0]) and sum(f[1:]) == 1,
        lambda f: sum(f) % 2 == 0,
    ]
    for count in range(2, 6):
        for rule in rules:
            accepts, hopeless = dfa_ops._rule_tables(rule, count)
            reference = dfa_ops._hopeless_rule(rule)
            for pattern in range(1 << count):
                flags = tuple(bool(pattern >> i & 1) for i in range(count))
                assert accepts[pattern] == bool(rule(list(flags)))
                assert hopeless[pattern] == reference(flags), (count, pattern)
    # past a dozen live members nothing is decided: never hopeless
    accepts, hopeless = dfa_ops._rule_tables(lambda f: False, 13)
    assert hopeless[(1 << 13) - 1] == 0 and hopeless[(1 << 12) - 1] == 1


def test_many_automata_fall_back_to_the_pure_walk() -> None:
    members = [
        compile_ir(ir.text(chr(ord("a") + i % 3) * (1 + i % 2))) for i in range(dfa_ops.NATIVE_MAX_DFAS + 1)
    ]
    with _core(pure=False) as calls:
        result = dfa_ops.exactly_one(members)
    assert not calls
    assert result.accepts(b"ccc") is False and result.accepts(b"aa") is False


def _raised(build: Callable[[], DFA]) -> BaseException:
    try:
        build()
    except Exception as error:
        return error
    raise AssertionError("expected an error")


@pytest.mark.parametrize("pure", [False, True])
def test_max_states_raises_the_limit_error(pure: bool) -> None:
    if not pure and NATIVE is None:
        pytest.skip("moonmaskc.automata._native.product is not built")
    a = compile_ir(parse("[a-z]*q[a-z]{6}").node)
    b = compile_ir(parse("[a-z]*z[a-z]{5}").node)
    for build in (
        lambda: dfa_ops.intersect(a, b, Limits(max_states=50)),
        lambda: dfa_ops.product([a, b, a], all, Limits(max_states=50)),
    ):
        with _core(pure=pure):
            error = _raised(build)
        assert isinstance(error, LimitError)
        assert error.bound == "max_states" and error.limit == 50 and "--max-states" in str(error)


@needs_native
def test_max_states_bound_is_the_same_number_on_both_paths() -> None:
    """The product may number states up to ``max_states`` (dead state 0 included), no further."""
    assert NATIVE is not None
    a = compile_ir(parse("[a-d]*c[a-d]{3}").node)
    b = compile_ir(parse("[a-d]*(ab|ba)[a-d]").node)
    for members in ([a, b], [a, b, b]):
        walked = NATIVE.product_table(*_walk_arguments(members), 10**6)
        states = walked[0].shape[0]
        assert states > 10
        for pure in (False, True):
            with _core(pure=pure):
                dfa_ops.product(members, all, Limits(max_states=states - 1))
                error = _raised(
                    lambda members=members, states=states: dfa_ops.product(
                        members, all, Limits(max_states=states - 2)
                    )
                )
            assert isinstance(error, LimitError)
        assert NATIVE.product_table(*_walk_arguments(members), states - 2) is None


def _walk_arguments(members: list[DFA]) -> tuple[np.ndarray, ...]:
    _, columns = dfa_ops._joint_classes(members)
    accepts, hopeless = dfa_ops._rule_tables(all, len(members))
    return (
        np.ascontiguousarray(
            np.concatenate([d.transitions[:, columns[:, i]] for i, d in enumerate(members)])
        ),
        np.concatenate([[0], np.cumsum([d.num_states for d in members])]).astype(np.int64),
        np.concatenate([d.accepting for d in members]).view(np.uint8),
        np.array([d.start for d in members], dtype=np.int32),
        accepts,
        hopeless,
    )


def _malformed() -> Iterator[tuple[str, DFA]]:
    """Broken copies of a good DFA, each with one thing wrong."""
    good = compile_ir(parse("[a-c]+x?").node)

    def copy() -> DFA:
        return DFA(good.transitions.copy(), good.byte_class.copy(), good.accepting.copy(), good.start)

    dfa = copy()
    dfa.transitions[1, 0] = dfa.num_states
    yield "target past the last state", dfa
    dfa = copy()
    dfa.transitions[1, 0] = -1
    yield "negative target", dfa
    dfa = copy()
    dfa.byte_class[ord("b")] = dfa.num_classes
    yield "byte class past the last column", dfa
    dfa = copy()
    dfa.byte_class[0] = -2
    yield "negative byte class", dfa
    dfa = copy()
    dfa.transitions = dfa.transitions.astype(np.int64)
    yield "int64 transitions", dfa
    dfa = copy()
    dfa.transitions = np.asfortranarray(np.concatenate([dfa.transitions, dfa.transitions[:, :1]], axis=1))
    yield "Fortran-ordered transitions", dfa
    dfa = copy()
    dfa.transitions = dfa.transitions[:, ::-1]
    yield "strided transitions", dfa
    dfa = copy()
    dfa.byte_class = dfa.byte_class[:255]
    yield "short byte_class", dfa
    dfa = copy()
    dfa.accepting = dfa.accepting[:-1]
    yield "short accepting", dfa
    dfa = copy()
    dfa.accepting = dfa.accepting.astype(np.uint8)
    yield "uint8 accepting", dfa
    dfa = copy()
    dfa.start = dfa.num_states + 3
    yield "start out of range", dfa
    dfa = copy()
    dfa.transitions = np.zeros((0, good.num_classes), dtype=np.int32)
    dfa.accepting = np.zeros(0, dtype=bool)
    yield "no states", dfa
    dfa = copy()
    dfa.transitions[0, 0] = 1
    yield "live state 0", dfa


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("case", [name for name, _ in _malformed()])
def test_malformed_dfas_raise_moonmask_errors(case: str, pure: bool) -> None:
    if not pure and NATIVE is None:
        pytest.skip("moonmaskc.automata._native.product is not built")
    broken = dict(_malformed())[case]
    other = compile_ir(parse("[a-z]*").node)
    for build in (
        lambda: dfa_ops.intersect(broken, other),
        lambda: dfa_ops.difference(other, broken),
        lambda: dfa_ops.exactly_one([other, broken, other]),
    ):
        with _core(pure=pure):
            error = _raised(build)
        assert isinstance(error, MoonmaskError) and isinstance(error, dfa_ops.MalformedDFAError), case


@needs_native
def test_native_walk_checks_its_own_arrays() -> None:
    """Called directly with arrays that do not fit, the extension raises instead of reading astray."""
    assert NATIVE is not None
    members = [compile_ir(parse("[a-c]+").node), compile_ir(parse("b*").node)]
    good = _walk_arguments(members)
    assert NATIVE.product_table(*good, 1000) is not None

    def altered(index: int, value: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(value if i == index else array for i, array in enumerate(good))

    tables, offsets, accepting, _, accepts, _ = good
    too_far = tables.copy()
    too_far[-1, 0] = members[1].num_states
    bad_cases = [
        altered(0, too_far),
        altered(1, offsets + np.array([0, 1, 0], dtype=np.int64)),
        altered(1, offsets[:-1].copy()),
        altered(2, accepting[:-1].copy()),
        altered(3, np.array([0, 99], dtype=np.int32)),
        altered(4, accepts[:-1].copy()),
        altered(5, np.zeros(8, dtype=np.uint8)),
    ]
    for arguments in bad_cases:
        with pytest.raises(ValueError):
            NATIVE.product_table(*arguments, 1000)


@needs_native
def test_native_walk_grows_its_tables() -> None:
    """Enough states to grow the hash table and the rows several times over."""
    a = compile_ir(parse("[a-h]*a[a-h]{7}").node)
    b = compile_ir(parse("[a-h]*b[a-h]{5}").node)
    assert NATIVE is not None
    walked = NATIVE.product_table(*_walk_arguments([a, b]), 10**6)
    assert walked[0].shape[0] > 2000  # tuples met before minimisation
    both = dfa_ops.intersect(a, b)
    for build in (lambda: dfa_ops.intersect(a, b), lambda: dfa_ops.exactly_one([a, b, both])):
        native, pure = both_ways(build)
        assert_same_dfa(native, pure)
    for word in itertools.islice(itertools.product(b"abh", repeat=9), 0, None, 37):
        data = bytes(word)
        assert native.accepts(data) == (a.accepts(data) != b.accepts(data)), data


def test_joint_classes_are_the_sorted_distinct_rows() -> None:
    """``_joint_classes`` packs each byte's classes into one integer (up to eight DFAs): the same
    joint classes, numbered in the same order, as ``np.unique(axis=0)`` of the stacked columns,
    which it falls back to past eight."""

    class Columns:
        def __init__(self, byte_class: np.ndarray) -> None:
            self.byte_class = byte_class

    rng = np.random.default_rng(7)
    for count in range(1, 11):
        for classes in (1, 2, 17, 256):
            dfas = [Columns(rng.integers(0, classes, 256).astype(np.int32)) for _ in range(count)]
            stacked = np.stack([dfa.byte_class for dfa in dfas], axis=1)
            rows, inverse = np.unique(stacked, axis=0, return_inverse=True)
            joint, columns = dfa_ops._joint_classes(dfas)  # type: ignore[arg-type]
            assert np.array_equal(joint, inverse.reshape(-1)) and joint.dtype == np.int32
            assert np.array_equal(columns, rows) and columns.dtype == rows.dtype
