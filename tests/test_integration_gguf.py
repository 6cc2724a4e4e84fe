"""GGUF vocabularies: the metadata reader against the ``gguf`` package, and GGUF vocabularies against
the equivalent ``tokenizer.json`` ones (SmolLM2's real model file; Mistral's tokens written to GGUF)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from moonmaskc.errors import VocabularyError
from moonmaskc.integrations.hf_models import SMOLLM2_INSTALL, smollm2_gguf_path
from moonmaskc.vocabulary import load_vocabulary, read_gguf_metadata, read_gguf_vocabulary
from tests.conftest import data_path


def gguf_package() -> Any:
    """The ``gguf`` package (writer and reference reader), or a skip: only some tests need it."""
    return pytest.importorskip("gguf")


def same_vocabulary(left: Any, right: Any) -> None:
    assert left.size == right.size
    differing = [i for i in range(left.size) if left.token_bytes[i] != right.token_bytes[i]]
    assert differing == []
    assert (left.eos_id, left.special_ids) == (right.eos_id, right.special_ids)
    assert left.fingerprint == right.fingerprint


def test_smollm2_gguf_vocabulary_equals_its_tokenizer_json() -> None:
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"SmolLM2 is not installed: {SMOLLM2_INSTALL}")
    from_gguf = read_gguf_vocabulary(path)
    assert from_gguf.eos_token == "<|im_end|>"
    from_json = load_vocabulary(data_path("tokenizers", "smollm2.json"), eos="<|im_end|>")
    same_vocabulary(from_gguf, from_json)
    assert read_gguf_vocabulary(path, eos="<|endoftext|>").eos_id == 0


def write_gguf(path: Path, fields: dict[str, tuple[str, Any]], big_endian: bool = False) -> None:
    """A GGUF file holding ``fields`` (name -> (GGUFWriter add_* method, value)) and no tensors."""
    gguf = gguf_package()
    endian = gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE
    writer = gguf.GGUFWriter(str(path), arch="llama", endianess=endian)
    for name, (method, value) in fields.items():
        getattr(writer, method)(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


SAMPLE_FIELDS: dict[str, tuple[str, Any]] = {
    "test.u8": ("add_uint8", 200),
    "test.i8": ("add_int8", -100),
    "test.u16": ("add_uint16", 60_000),
    "test.i16": ("add_int16", -30_000),
    "test.u32": ("add_uint32", 4_000_000_000),
    "test.i32": ("add_int32", -2_000_000_000),
    "test.f32": ("add_float32", 0.5),
    "test.bool": ("add_bool", True),
    "test.string": ("add_string", "naïve ▁ text"),
    "test.u64": ("add_uint64", 2**63 + 5),
    "test.i64": ("add_int64", -(2**62)),
    "test.f64": ("add_float64", 1e-300),
    "test.ints": ("add_array", [1, -2, 3]),
    "test.strings": ("add_array", ["a", "", "▁b", "<0x0A>"]),
    "test.nested": ("add_array", [[1, 2], [3]]),
}


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
def test_metadata_reader_agrees_with_the_gguf_package(tmp_path: Path, big_endian: bool) -> None:
    path = tmp_path / "sample.gguf"
    write_gguf(path, SAMPLE_FIELDS, big_endian=big_endian)
    ours = read_gguf_metadata(path)
    reader = gguf_package().GGUFReader(str(path), "r")
    theirs = {name: field.contents() for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    # gguf's contents() flattens arrays of arrays; the written values below are the oracle for those.
    assert {k: v for k, v in ours.items() if k != "test.nested"} == {
        k: v for k, v in theirs.items() if k != "test.nested"
    }
    assert {k: v for k, v in ours.items() if k.startswith("test.")} == {
        name: value for name, (_, value) in SAMPLE_FIELDS.items()
    }
    assert read_gguf_metadata(path, ["test.u8", "absent"]) == {"test.u8": 200}


def mistral_as_gguf(path: Path) -> None:
    """Mistral's tokens with llama.cpp's token types (control, unknown, byte, normal) in a GGUF file."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(data_path("tokenizers", "mistral.json")))
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    tokens = [""] * size
    for text, token_id in tokenizer.get_vocab(with_added_tokens=True).items():
        tokens[token_id] = text
    specials = {i for i, added in tokenizer.get_added_tokens_decoder().items() if added.special}
    types = [
        3 if i in specials else 6 if (t.startswith("<0x") and len(t) == 6) else 1
        for i, t in enumerate(tokens)
    ]
    types[tokens.index("<unk>")] = 2
    write_gguf(
        path,
        {
            "tokenizer.ggml.model": ("add_string", "llama"),
            "tokenizer.ggml.tokens": ("add_array", tokens),
            "tokenizer.ggml.token_type": ("add_array", types),
            "tokenizer.ggml.eos_token_id": ("add_uint32", tokens.index("</s>")),
        },
    )


def test_sentencepiece_gguf_vocabulary_equals_its_tokenizer_json(tmp_path: Path) -> None:
    path = tmp_path / "mistral.gguf"
    mistral_as_gguf(path)
    same_vocabulary(read_gguf_vocabulary(path), load_vocabulary(data_path("tokenizers", "mistral.json")))


def test_truncated_foreign_and_unsupported_files_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "mistral.gguf"
    mistral_as_gguf(path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(VocabularyError, match="truncated"):
        read_gguf_vocabulary(truncated)
    foreign = tmp_path / "foreign.gguf"
    foreign.write_bytes(b"PK\x03\x04" + data[4:100])
    with pytest.raises(VocabularyError, match="not a GGUF file"):
        read_gguf_vocabulary(foreign)
    with pytest.raises(VocabularyError, match="does not exist"):
        read_gguf_vocabulary(tmp_path / "absent.gguf")
    bert = tmp_path / "bert.gguf"
    write_gguf(
        bert,
        {
            "tokenizer.ggml.model": ("add_string", "bert"),
            "tokenizer.ggml.tokens": ("add_array", ["[CLS]", "a"]),
        },
    )
    with pytest.raises(VocabularyError, match="'bert' is not supported"):
        read_gguf_vocabulary(bert)
    no_tokenizer = tmp_path / "none.gguf"
    write_gguf(no_tokenizer, {"general.name": ("add_string", "x")})
    with pytest.raises(VocabularyError, match="holds no tokenizer"):
        read_gguf_vocabulary(no_tokenizer)
    with pytest.raises(VocabularyError, match="not in the vocabulary"):
        read_gguf_vocabulary(path, eos="<nope>")
