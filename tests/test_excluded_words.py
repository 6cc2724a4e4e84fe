"""``automata.excluded.without_words`` against ``product.difference`` with the words' DFA.

The direct construction must give the very DFA (canonical numbering, arrays equal) that the
product gives, on both cores: for canonical JSON strings (the "other keys" of an object schema)
and for small regular languages, with words in and out of the language. The native trie
(``excluded.pyx`` ``trie_in_front``) must equal the numpy one and name the same state bound, and
refuse malformed arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.automata.excluded import without_words
from moonmaskc.automata.product import difference
from moonmaskc.errors import LimitError
from moonmaskc.frontends.regex import parse
from moonmaskc.frontends.schema import canonical
from moonmaskc.frontends.schema.automata import quoted_string_dfa
from moonmaskc.limits import Limits


def by_product(dfa: DFA, words: list[bytes]) -> DFA:
    if not words:
        return dfa
    return difference(dfa, compile_ir(ir.alt(*map(ir.literal, words))))


def assert_same(left: DFA, right: DFA) -> None:
    assert left.start == right.start
    for name in ("transitions", "byte_class", "accepting"):
        assert np.array_equal(getattr(left, name), getattr(right, name)), name


@pytest.fixture(params=[False, True], ids=["native", "pure"])
def core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param:
        monkeypatch.setenv("MOONMASKC_PURE", "1")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=8))
def test_other_keys_equal_the_product(keys: list[str]) -> None:
    any_key = quoted_string_dfa(Limits())
    words = [canonical.serialize(key).encode("utf-8") for key in keys]
    got = without_words(any_key, words)
    assert_same(got, by_product(any_key, words))
    for word in words:
        assert not got.accepts(word)
    assert got.accepts(b'"' + b"x" * 7 + b'"')  # longer than every key


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["[ab]{0,3}c?", "(ab|ba)*", "a+b*", "[a-c]{2}"]),
    st.lists(st.binary(max_size=4).map(lambda b: bytes(b"abcx"[x % 4] for x in b)), max_size=6),
)
def test_small_languages_equal_the_product(pattern: str, words: list[bytes]) -> None:
    dfa = compile_ir(parse(pattern).node)
    assert_same(without_words(dfa, words), by_product(dfa, words))


def test_both_cores_build_the_same(core: None) -> None:
    any_key = quoted_string_dfa(Limits())
    words = [b'"id"', b'"name"', b'"na\\"me"', b'"\xc3\xa9t\xc3\xa9"']
    assert_same(without_words(any_key, words), by_product(any_key, words))


def test_every_word_taken_out_leaves_the_empty_language() -> None:
    dfa = compile_ir(parse("a|bc").node)
    assert without_words(dfa, [b"a", b"bc", b"zz"]).start == 0


def test_the_trie_counts_against_the_state_bound() -> None:
    any_key = quoted_string_dfa(Limits())
    words = [canonical.serialize(f"key{i}").encode() for i in range(20)]
    with pytest.raises(LimitError) as caught:
        without_words(any_key, words, Limits(max_states=any_key.num_states + 10))
    assert caught.value.bound == "max_states"


def pure_without(dfa: DFA, words: list[bytes], limits: Limits | None = None) -> DFA:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOONMASKC_PURE", "1")
        return without_words(dfa, words, limits)


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["[ab]{0,3}c?", "(ab|ba)*", "a+b*", "", "[a-c]{2}|x"]),
    st.lists(st.binary(max_size=5).map(lambda b: bytes(b"abcx"[x % 4] for x in b)), max_size=8),
)
def test_the_native_trie_equals_the_pure_one(pattern: str, words: list[bytes]) -> None:
    """``excluded.pyx`` ``trie_in_front`` against the numpy path (words repeated, prefixes of one
    another, outside the language, the empty word)."""
    dfa = compile_ir(parse(pattern).node)
    assert_same(without_words(dfa, words + words[:2]), pure_without(dfa, words))


def test_both_cores_name_the_same_state_bound() -> None:
    any_key = quoted_string_dfa(Limits())
    words = [canonical.serialize(f"key{i}").encode() for i in range(20)] + [b"not a key"]
    limits = Limits(max_states=any_key.num_states + 10)
    messages = []
    for run in (without_words, pure_without):
        with pytest.raises(LimitError) as caught:
            run(any_key, words, limits)
        messages.append(caught.value.message)
    assert messages[0] == messages[1]
    assert "without 20 words" in messages[0]


def test_malformed_arrays_are_refused_by_the_native_trie() -> None:
    from moonmaskc.automata.native import native

    module = native("excluded")
    if module is None:
        pytest.skip("the native excluded module is not built (or MOONMASKC_PURE is set)")
    dfa = compile_ir(parse("[ab]{0,3}c?").node)
    words = np.frombuffer(b"abcab", dtype=np.uint8)

    def arguments(**changes: object) -> list[object]:
        given = {
            "table": dfa.transitions,
            "byte_class": dfa.byte_class,
            "accepting": dfa.accepting.view(np.uint8),
            "start": dfa.start,
            "words": words,
            "offsets": np.array([0, 3, 5], dtype=np.int64),
            "max_states": 1000,
        }
        given.update(changes)
        return list(given.values())

    assert module.trie_in_front(*arguments())[0] == module.OK
    table = dfa.transitions.copy()
    table[1, 0] = dfa.num_states
    classes = dfa.byte_class.copy()
    classes[7] = dfa.num_classes
    for changes in (
        {"table": table},
        {"byte_class": classes},
        {"start": dfa.num_states},
        {"start": -1},
        {"accepting": dfa.accepting.view(np.uint8)[:-1].copy()},
        {"offsets": np.array([0, 4, 3], dtype=np.int64)},
        {"offsets": np.array([0, 3, 6], dtype=np.int64)},
        {"offsets": np.array([1, 3, 5], dtype=np.int64)},
    ):
        assert module.trie_in_front(*arguments(**changes))[0] == module.BAD_INPUT, changes
