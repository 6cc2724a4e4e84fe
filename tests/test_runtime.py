"""The numpy-only runtime: import isolation, masks and bitmask layout, greedy choice, monkey sampling."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moonmaskc import ir
from moonmaskc.artifact import Artifact
from moonmaskc.automata.build import compile_ir
from moonmaskc.automata.dfa import DFA
from moonmaskc.errors import ArtifactError, RuntimeInputError, VocabularyError
from moonmaskc.runtime import Guide, _native_filler, load
from moonmaskc.token_table import build_token_table
from moonmaskc.vocabulary import Vocabulary, bytes_vocabulary, load_vocabulary
from tests.conftest import PROJECT_ROOT, data_path
from tests.test_token_table import brute_force, json_like_dfa, json_string


@pytest.fixture(autouse=True, scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOONMASKC_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield Path()


def guide_for(dfa: DFA, vocabulary: Vocabulary) -> Guide:
    return Guide.from_artifact(Artifact(dfa, {}, build_token_table(dfa, vocabulary)))


@pytest.fixture(scope="module")
def gpt2() -> Vocabulary:
    return load_vocabulary(data_path("tokenizers", "gpt2.json"))


BLOCKER = """
import sys
BLOCKED = {"lark", "tokenizers", "click", "rich"}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Blocker())
import moonmaskc.runtime as runtime
guide = runtime.load(sys.argv[1])
state = guide.advance(guide.start(), ord("a"))
print(guide.vocab_size, state is not None, guide.is_accept(state))
print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
"""


def test_runtime_imports_with_lark_tokenizers_click_and_rich_blocked(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    Artifact(
        compile_ir(ir.text("a")), {}, build_token_table(compile_ir(ir.text("a")), bytes_vocabulary())
    ).save(path)
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, str(path)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["257 True True", "[]"]


def test_advance_and_masks_match_a_brute_force_walk(gpt2: Vocabulary) -> None:
    dfa = json_like_dfa()
    guide = guide_for(dfa, gpt2)
    state = guide.start()
    pieces = [b'{"', b"name", b'":', b' "', b"ab", b'",', b' "', b"age", b'":', b" ", b"12", b",", b' "']
    for chunk in [*pieces, b"role", b'":', b' "', b"admin"]:
        ids, nexts = brute_force(dfa, gpt2, state)
        assert guide.allowed(state).tolist() == ids
        token = gpt2.token_bytes.index(chunk)
        expected = dict(zip(ids, nexts, strict=True)).get(token)
        assert guide.advance(state, token) == expected == dfa.walk(chunk, state)[0]
        state = expected
    assert guide.advance(state, gpt2.token_bytes.index(b"}")) is None
    assert guide.advance(state, gpt2.eos_id) is None
    with pytest.raises(RuntimeInputError):
        guide.advance(state, gpt2.size)
    with pytest.raises(RuntimeInputError):
        guide.advance(dfa.num_states, 0)


def test_eos_only_in_accepting_states_and_leads_to_the_same_state() -> None:
    dfa = compile_ir(ir.seq(ir.text("ab"), ir.optional(ir.text("c"))))
    guide = guide_for(dfa, bytes_vocabulary())
    after_a = guide.advance(guide.start(), ord("a"))
    assert after_a is not None and guide.eos not in guide.allowed(after_a)
    after_ab = guide.advance(after_a, ord("b"))
    assert after_ab is not None and guide.is_accept(after_ab) and guide.distance(after_ab) == 0
    assert guide.advance(after_ab, guide.eos) == after_ab
    assert guide.distance(guide.start()) == 2


def reference_bitmask(allowed: np.ndarray, vocab_size: int) -> np.ndarray:
    words = (vocab_size + 31) // 32
    bits = np.zeros(words * 32, dtype=bool)
    bits[allowed] = True
    return np.packbits(bits, bitorder="little").view(np.uint32)


def test_fill_bitmask_layout_equals_packbits_little(gpt2: Vocabulary) -> None:
    guide = guide_for(json_like_dfa(), gpt2)
    for state in range(guide.num_states):
        expected = reference_bitmask(guide.allowed(state), gpt2.size)
        assert np.array_equal(guide.mask(state), expected)
        out = np.full((3, guide.bitmask_words + 2), -1, dtype=np.int32)
        guide.fill_bitmask(state, out, row=1)
        assert np.array_equal(out[1, : guide.bitmask_words].view(np.uint32), expected)
        assert (out[1, guide.bitmask_words :] == 0).all() and (out[0] == -1).all() and (out[2] == -1).all()
        for dtype in (np.int32, np.uint32):
            exact = np.full((2, guide.bitmask_words), -1, dtype=np.int32).view(dtype)
            guide.fill_bitmask(state, exact, row=0)
            assert (
                np.array_equal(exact[0].view(np.uint32), expected) and (exact[1].view(np.int32) == -1).all()
            )
    single = np.zeros(guide.bitmask_words, dtype=np.uint32)
    guide.fill_bitmask(guide.start(), single)
    assert np.array_equal(single, reference_bitmask(guide.allowed(guide.start()), gpt2.size))
    with pytest.raises(RuntimeInputError):
        guide.fill_bitmask(guide.start(), np.zeros((1, guide.bitmask_words - 1), dtype=np.int32))
    for bad_state in (-1, guide.num_states):  # -1 must not wrap around to the last state
        with pytest.raises(RuntimeInputError):
            guide.fill_bitmask(bad_state, np.zeros((1, guide.bitmask_words), dtype=np.int32))


FILL_LANGUAGES = {
    "digits": ir.repeat(ir.byte_range(0x30, 0x39), 1, 3),  # rows mostly zeros
    "any bytes": ir.star(ir.byte_range(0, 255)),  # rows mostly ones
    "a-m": ir.seq(ir.plus(ir.byte_range(0x61, 0x6D)), ir.optional(ir.literal(b" "))),
    "json-like": json_like_dfa(),
}


@pytest.mark.parametrize("name", FILL_LANGUAGES)
def test_fills_write_exactly_the_mask(gpt2: Vocabulary, name: str) -> None:
    """Starting from garbage, every state's row comes out bit for bit, in int32 and uint32, in a
    bitmask of exactly the mask's width (the fast path) and in a wider one (padding words zeroed),
    and the other rows are left alone."""
    language = FILL_LANGUAGES[name]
    guide = guide_for(language if isinstance(language, DFA) else compile_ir(language), gpt2)
    words = guide.bitmask_words
    for state in range(guide.num_states):
        expected = reference_bitmask(guide.allowed(state), gpt2.size)
        for dtype, width in itertools.product((np.int32, np.uint32), (words, words + 3)):
            out = np.random.default_rng(state).integers(0, 2**32, size=(2, width), dtype=np.uint32)
            before = out[0].copy()
            guide.fill_bitmask(state, out.view(dtype), row=1)
            assert np.array_equal(out[1, :words], expected), (name, state, width)
            assert not out[1, words:].any() and np.array_equal(out[0], before), (name, state, width)


def test_apply_mask_sets_exactly_the_disallowed_logits_to_minus_inf(gpt2: Vocabulary) -> None:
    guide = guide_for(json_like_dfa(), gpt2)
    rng = np.random.default_rng(0)
    state = guide.start()
    logits = rng.normal(size=gpt2.size + 7).astype(np.float32)
    original = logits.copy()
    assert guide.apply_mask(logits, state) is logits
    allowed = np.zeros(gpt2.size + 7, dtype=bool)
    allowed[guide.allowed(state)] = True
    assert np.array_equal(logits[allowed], original[allowed])
    assert np.isneginf(logits[~allowed]).all()
    with pytest.raises(RuntimeInputError):
        guide.apply_mask(np.zeros(gpt2.size - 1), state)


def test_apply_mask_on_torch_tensors(gpt2: Vocabulary) -> None:
    torch = pytest.importorskip("torch")
    guide = guide_for(json_like_dfa(), gpt2)
    logits = torch.randn(gpt2.size)
    guide.apply_mask(logits, guide.start())
    assert torch.isfinite(logits).nonzero().flatten().tolist() == guide.allowed(guide.start()).tolist()


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_greedy_is_the_smallest_id_among_the_best_allowed(data: st.DataObject) -> None:
    guide = GREEDY_GUIDE
    state = data.draw(st.integers(1, guide.num_states - 1))
    scores = np.array(
        data.draw(st.lists(st.sampled_from([-np.inf, 0.0, 1.0, 2.0]), min_size=257, max_size=257))
    )
    allowed = guide.allowed(state).tolist()
    finite = [t for t in allowed if scores[t] > -np.inf]
    expected = min((t for t in finite if scores[t] == max(scores[u] for u in finite)), default=None)
    assert guide.greedy(state, scores) == expected


GREEDY_GUIDE = guide_for(compile_ir(ir.seq(json_string(3), ir.optional(ir.text("x")))), bytes_vocabulary())


def test_greedy_rejects_nan_inf_and_wrong_lengths() -> None:
    guide = GREEDY_GUIDE
    for bad in (np.full(257, np.nan), np.r_[np.zeros(256), np.inf], np.zeros(256), np.zeros(258)):
        with pytest.raises(RuntimeInputError):
            guide.greedy(guide.start(), bad)
    assert guide.greedy(guide.start(), np.full(257, -np.inf)) is None


def test_greedy_finish_mode() -> None:
    dfa = compile_ir(ir.seq(ir.text("a"), ir.star(ir.byte_range(0x61, 0x7A)), ir.optional(ir.text("!"))))
    guide = guide_for(dfa, bytes_vocabulary())
    scores = np.zeros(257)
    scores[ord("z")] = 5.0
    after_a = guide.advance(guide.start(), ord("a"))
    assert after_a is not None and guide.is_accept(after_a)
    assert guide.greedy(after_a, scores) == ord("z")
    assert guide.greedy(after_a, scores, finish=True) == guide.eos
    scores[guide.eos] = -np.inf
    assert guide.greedy(after_a, scores, finish=True) is None
    assert guide.greedy(guide.start(), scores, finish=True) == ord("a")  # the only decreasing token


def test_monkey_finishes_valid_json_like_texts_with_gpt2(gpt2: Vocabulary) -> None:
    dfa = json_like_dfa()
    guide = guide_for(dfa, gpt2)
    rng = np.random.default_rng(42)
    for max_tokens in (0, 1, 8, 64):
        for _ in range(10):
            tokens, text, finished = guide.monkey(rng, max_tokens)
            assert len(tokens) <= max_tokens * 4 + 64
            assert finished and tokens[-1] == gpt2.eos_id
            assert dfa.accepts(text.encode("utf-8"))
            assert guide.decode(tokens).decode("utf-8") == text


def test_monkey_stops_at_the_hard_cap_and_when_no_token_decreases() -> None:
    long_word = compile_ir(ir.text("a" * 100))
    tokens, text, finished = guide_for(long_word, bytes_vocabulary()).monkey(np.random.default_rng(0), 0)
    assert not finished and len(tokens) == 64 and text == "a" * 64
    stuck = compile_ir(ir.seq(ir.text("aaa"), ir.text("b")))
    vocabulary = Vocabulary.from_tokens([b"a", b"aa", b""], eos_id=2)
    tokens, text, finished = guide_for(stuck, vocabulary).monkey(np.random.default_rng(0), 10)
    assert not finished and text == "aaa"


def test_load_checks_the_tokenizer_fingerprint(tmp_path: Path, gpt2: Vocabulary) -> None:
    dfa = json_like_dfa()
    path = tmp_path / "guide.npz"
    Artifact(dfa, {"kind": "test"}, build_token_table(dfa, gpt2)).save(path)
    guide = load(path, tokenizer=gpt2)
    assert guide.vocab_size == gpt2.size and guide.eos == gpt2.eos_id
    assert Guide.load(path, tokenizer=data_path("tokenizers", "gpt2.json")).fingerprint == gpt2.fingerprint
    with pytest.raises(VocabularyError, match="fingerprint"):
        Guide.load(path, tokenizer="bytes")
    Artifact(dfa, {}).save(tmp_path / "bare.npz")
    with pytest.raises(ArtifactError, match="token table"):
        load(tmp_path / "bare.npz")


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_advance_and_decreasing_equal_brute_force_on_every_state_and_token(data: st.DataObject) -> None:
    from tests.test_token_table import random_dfas

    dfa = data.draw(random_dfas())
    tokens = data.draw(st.lists(st.binary(min_size=0, max_size=4), min_size=2, max_size=20))
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=data.draw(st.integers(0, len(tokens) - 1)))
    guide = guide_for(dfa, vocabulary)
    for state in range(dfa.num_states):
        ids, nexts = brute_force(dfa, vocabulary, state)
        expected = dict(zip(ids, nexts, strict=True))
        assert [guide.advance(state, t) for t in range(vocabulary.size)] == [
            expected.get(t) for t in range(vocabulary.size)
        ]
        distance = dfa.distance
        closer = [t for t in ids if t != vocabulary.eos_id and distance[expected[t]] < distance[state]]
        assert guide.decreasing(state).tolist() == closer


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        ('{"type": "array", "items": {"type": "integer"}, "maxItems": 3}', "Guide"),
        ('{"type": "string", "maxLength": 300}', "CountedGuide"),
        ('{"type": "object"}', "NestGuide"),
    ],
)
def test_a_guide_goes_with_its_last_reference(schema: str, kind: str) -> None:
    """No reference cycle holds a guide (its native filler falls back on it through a weak
    reference): with the cyclic collector off, the guide and its token table are freed as soon as
    the last reference goes, after fills with and without a budget and a warm-up."""
    import gc
    import weakref

    import moonmaskc

    artifact = moonmaskc.compile_schema(schema, tokenizer=str(data_path("tokenizers", "gpt2.json")))
    guide = Guide.from_artifact(artifact)
    assert type(guide).__name__ == kind
    out = np.zeros((1, guide.bitmask_words), np.int32)
    guide.fill_bitmask(guide.start(), out)
    guide.warm().fill_bitmask(guide.start(), out, tokens_left=50)
    gone, table_gone = weakref.ref(guide), weakref.ref(guide.table)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del guide, artifact
        assert gone() is None and table_gone() is None
    finally:
        if was_enabled:
            gc.enable()


def test_a_fill_kept_past_its_guide_copies_rows_and_says_when_it_needs_the_guide(gpt2: Vocabulary) -> None:
    """``fill_bitmask`` kept on its own (the native filler's): it still copies rows; what needs
    the guide (a budget) says that the guide is gone."""
    import moonmaskc

    if _native_filler() is None:
        pytest.skip("the native filler is not built (or MOONMASKC_PURE is set)")
    artifact = moonmaskc.compile_schema('{"enum": ["a", "bc"]}', tokenizer=gpt2)
    guide = Guide.from_artifact(artifact)
    expected = np.zeros((1, guide.bitmask_words), np.int32)
    guide.fill_bitmask(guide.start(), expected)
    fill, start = guide.fill_bitmask, guide.start()
    del guide
    out = np.zeros_like(expected)
    fill(start, out)
    assert np.array_equal(out, expected) and out.any()
    with pytest.raises(RuntimeInputError, match="guide of this fill_bitmask is gone"):
        fill(start, out, tokens_left=5)
