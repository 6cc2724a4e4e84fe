"""Vocabulary loading: token bytes against the tokenizers library's own decoder, specials, eos,
fingerprints, the disk cache of vocabularies and tries."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from moonmaskc.cache import cache_path, write_cached_arrays
from moonmaskc.errors import VocabularyError
from moonmaskc.trie import build_trie, trie_for, trie_matches
from moonmaskc.vocabulary import Vocabulary, bytes_vocabulary, gpt2_unicode_to_byte, load_vocabulary
from moonmaskc.vocabulary import tokenizer_json as vocabulary_module
from tests.conftest import data_path

SENTENCES = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    '{"name": "Zoë", "age": 42, "tags": ["a", "b"]}\n',
    "  leading spaces,\ttabs and\r\nnewlines   \n\n",
    "naïve café 日本語のテキスト 🎉🦀 Ελληνικά русский עברית",
    "def f(x):\n    return x ** 2  # comment\n",
    "\x07 control \x1b[0m and rare 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ",
]
TOKENIZERS = ["gpt2.json", "mistral.json", "llama3.json", "smollm2.json"]


@pytest.fixture(autouse=True, scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache folder for this module, so that each tokenizer is parsed once."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOONMASKC_CACHE", str(cache))
        yield cache


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("MOONMASKC_CACHE", str(cache))
    return cache


@pytest.mark.parametrize("name", TOKENIZERS)
def test_token_bytes_concatenate_to_the_libraries_decoding(name: str) -> None:
    from tokenizers import Tokenizer

    path = data_path("tokenizers", name)
    tokenizer = Tokenizer.from_file(str(path))
    vocabulary = load_vocabulary(path)
    strips_leading_space = name == "mistral.json"
    for sentence in SENTENCES:
        ids = tokenizer.encode(sentence, add_special_tokens=False).ids
        ours = b"".join(vocabulary.token_bytes[i] for i in ids).decode("utf-8")
        if strips_leading_space:
            assert ours.startswith(" ")
            ours = ours[1:]
        assert ours == tokenizer.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_every_single_token_decodes_like_the_library_where_it_is_valid_utf8(name: str) -> None:
    from tokenizers import Tokenizer

    path = data_path("tokenizers", name)
    tokenizer = Tokenizer.from_file(str(path))
    vocabulary = load_vocabulary(path)
    checked = 0
    sampled = range(0, vocabulary.size, max(1, vocabulary.size // 5000))
    for token_id in sampled:
        data = vocabulary.token_bytes[token_id]
        if not data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        # Decode after a fixed prefix token so that start-of-text rules (Strip) do not apply.
        prefix = tokenizer.encode("x", add_special_tokens=False).ids
        expected = tokenizer.decode([*prefix, token_id])
        assert expected == tokenizer.decode(prefix) + text, (token_id, data)
        checked += 1
    assert checked > len(sampled) * 0.8


def test_sentencepiece_space_and_byte_fallback_tokens() -> None:
    from tokenizers import Tokenizer

    path = data_path("tokenizers", "mistral.json")
    tokenizer = Tokenizer.from_file(str(path))
    vocabulary = load_vocabulary(path)
    for byte in (0x00, 0x0A, 0x41, 0x80, 0xF0, 0xFF):
        assert vocabulary.token_bytes[tokenizer.token_to_id(f"<0x{byte:02X}>")] == bytes([byte])
    assert vocabulary.token_bytes[tokenizer.token_to_id("▁")] == b" "
    assert vocabulary.token_bytes[tokenizer.token_to_id("▁the")] == b" the"
    ids = tokenizer.encode("ꙮ𝔘", add_special_tokens=False).ids
    fallback = [i for i in ids if tokenizer.id_to_token(i).startswith("<0x")]
    assert fallback, "the sentence must exercise byte fallback"
    assert b"".join(vocabulary.token_bytes[i] for i in ids) == " ꙮ𝔘".encode()


def test_byte_level_table_is_a_bijection_with_known_letters() -> None:
    table = gpt2_unicode_to_byte()
    assert sorted(table.values()) == list(range(256))
    assert table["Ġ"] == 0x20 and table["Ċ"] == 0x0A and table["A"] == 0x41 and table["ā"] == 0x01
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    singles = {t for t in vocabulary.token_bytes if len(t) == 1}
    assert singles == {bytes([b]) for b in range(256)}


@pytest.mark.parametrize(
    ("name", "eos", "specials"),
    [("gpt2.json", 50256, 0), ("mistral.json", 2, 2), ("llama3.json", 128001, 255), ("smollm2.json", 0, 16)],
)
def test_eos_and_specials_hold_no_bytes(name: str, eos: int, specials: int) -> None:
    vocabulary = load_vocabulary(data_path("tokenizers", name))
    assert vocabulary.eos_id == eos
    assert len(vocabulary.special_ids) == specials
    for token_id in (eos, *vocabulary.special_ids):
        assert vocabulary.token_bytes[token_id] == b""
    maskable = set(vocabulary.maskable_ids().tolist())
    assert eos not in maskable and not maskable & set(vocabulary.special_ids)


def test_eos_from_argument_config_and_usual_names(tmp_path: Path) -> None:
    smollm = data_path("tokenizers", "smollm2.json")
    assert load_vocabulary(smollm, eos="<|im_end|>").eos_id == 2
    with pytest.raises(VocabularyError, match="not in the vocabulary"):
        load_vocabulary(smollm, eos="<|nope|>")
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(data_path("tokenizers", "gpt2.json"), folder / "tokenizer.json")
    assert load_vocabulary(folder).eos_id == 50256  # usual name, no config
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "<|endoftext|>"}}))
    assert load_vocabulary(folder / "tokenizer.json").eos_id == 50256
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|no such token|>"}))
    with pytest.raises(VocabularyError, match="--eos"):
        load_vocabulary(folder)


def test_bytes_vocabulary_and_vocabulary_passthrough() -> None:
    vocabulary = load_vocabulary("bytes")
    assert vocabulary.size == 257 and vocabulary.eos_id == 256
    assert vocabulary.token_bytes[:256] == tuple(bytes([b]) for b in range(256))
    assert load_vocabulary(vocabulary) is vocabulary
    with pytest.raises(VocabularyError):
        load_vocabulary("bytes", eos="</s>")


def test_fingerprint_is_stable_and_sensitive() -> None:
    tokens = [b"a", b"b", b"ab", b""]
    base = Vocabulary.from_tokens(tokens, eos_id=3)
    assert base.fingerprint == Vocabulary.from_tokens(tokens, eos_id=3, name="other").fingerprint
    assert bytes_vocabulary().fingerprint == bytes_vocabulary().fingerprint
    variants = [
        Vocabulary.from_tokens([b"a", b"b", b"ac", b""], eos_id=3),
        Vocabulary.from_tokens([b"a", b"b", b"ab", b"", b""], eos_id=3),
        Vocabulary.from_tokens([b"a", b"b", b"ab", b"c"], eos_id=0),
        Vocabulary.from_tokens(tokens, eos_id=3, special_ids=[1]),
        Vocabulary.from_tokens([b"ab", b"b", b"a", b""], eos_id=3),
    ]
    assert len({v.fingerprint for v in [base, *variants]}) == 6


def test_arrays_round_trip_and_detect_tampering() -> None:
    vocabulary = load_vocabulary(data_path("tokenizers", "mistral.json"))
    arrays = vocabulary.to_arrays()
    again = Vocabulary.from_arrays(arrays)
    assert again.token_bytes == vocabulary.token_bytes and again.fingerprint == vocabulary.fingerprint
    tampered = dict(arrays, vocab_token_bytes=arrays["vocab_token_bytes"].copy())
    tampered["vocab_token_bytes"][100] ^= 1
    with pytest.raises(VocabularyError, match="fingerprint"):
        Vocabulary.from_arrays(tampered)


def test_vocabulary_cache_hit_and_corruption(private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = data_path("tokenizers", "gpt2.json")
    first = load_vocabulary(path)
    files = list(private_cache.glob("vocabulary-*.npz"))
    assert len(files) == 1

    def refuse(*_: object) -> Vocabulary:
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(vocabulary_module, "read_tokenizer_file", refuse)
    assert load_vocabulary(path).fingerprint == first.fingerprint
    monkeypatch.undo()
    monkeypatch.setenv("MOONMASKC_CACHE", str(private_cache))
    raw = bytearray(files[0].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    files[0].write_bytes(bytes(raw))
    calls = []
    original = vocabulary_module.read_tokenizer_file

    def counting(*args: object) -> Vocabulary:
        calls.append(args)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(vocabulary_module, "read_tokenizer_file", counting)
    assert load_vocabulary(path).fingerprint == first.fingerprint
    assert len(calls) == 1
    files[0].write_bytes(b"")  # truncated
    assert load_vocabulary(path).fingerprint == first.fingerprint
    assert len(calls) == 2


def test_trie_cache_hit_and_rebuild_of_a_wrong_trie(private_cache: Path) -> None:
    vocabulary = load_vocabulary(data_path("tokenizers", "gpt2.json"))
    trie = trie_for(vocabulary)
    assert trie_matches(trie, vocabulary)
    cached = trie_for(vocabulary)
    assert np.array_equal(cached.node_token_ids, trie.node_token_ids)
    other = build_trie(Vocabulary.from_tokens([b"x", b"y", b""], eos_id=2))
    wrong = dict(other.to_arrays(), fingerprint=np.array(vocabulary.fingerprint))
    assert write_cached_arrays(
        cache_path("trie", vocabulary.fingerprint), wrong
    )  # valid checksum, wrong trie
    rebuilt = trie_for(vocabulary)
    assert rebuilt.num_nodes == trie.num_nodes and trie_matches(rebuilt, vocabulary)


def test_trie_spells_every_token_of_a_hand_vocabulary() -> None:
    tokens = [b"a", b"ab", b"abc", b"b", b"ab", b"", b"\xff\x00", b"special"]
    vocabulary = Vocabulary.from_tokens(tokens, eos_id=5, special_ids=[7])
    trie = build_trie(vocabulary)
    assert trie_matches(trie, vocabulary)
    spelled: dict[int, bytes] = {}
    for node in range(trie.num_nodes):
        path = b""
        walk = node
        while walk > 0:
            path = bytes([trie.node_byte[walk]]) + path
            walk = int(trie.node_parent[walk])
        start, end = trie.node_token_offsets[node], trie.node_token_offsets[node + 1]
        for token_id in trie.node_token_ids[start:end].tolist():
            spelled[token_id] = path
    assert spelled == {i: t for i, t in enumerate(tokens) if t and i not in (5, 7)}


def test_unreadable_and_missing_tokenizers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    garbage = tmp_path / "tokenizer.json"
    garbage.write_text("{not json")
    with pytest.raises(VocabularyError, match="cannot read"):
        load_vocabulary(garbage)
    with pytest.raises(VocabularyError, match="holds no tokenizer"):
        load_vocabulary(tmp_path / "..")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(VocabularyError, match="pass a path"):
        load_vocabulary("someorg/somemodel")


def test_model_name_from_the_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hub" / "models--openai-community--gpt2" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    shutil.copy(data_path("tokenizers", "gpt2.json"), snapshot / "tokenizer.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert load_vocabulary("openai-community/gpt2").eos_id == 50256


def test_unsupported_decoder_is_a_clear_error(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models

    tokenizer = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2, "</s>": 3}, unk_token="[UNK]"))
    tokenizer.decoder = decoders.WordPiece()
    path = tmp_path / "wordpiece.json"
    tokenizer.save(str(path))
    with pytest.raises(VocabularyError, match="WordPiece"):
        load_vocabulary(path)
